// Instantiates every kernel template of the CUDA runtime for every dtype,
// so that nvcc-compile.test proves the runtime compiles for the GPU.
// The runtime's documented concatenation order (docs/cuda.md).
// clang-format off
#include "ein_cuda_emu.h"
#include "ein_cuda_runtime.cuh"
#include "ein_cuda_types.cuh"
#include "ein_cuda_map.cuh"
#include "ein_cuda_reduce.cuh"
#include "ein_cuda_rows.cuh"
#include "ein_cuda_gemm.cuh"
#include "ein_gemm_plan.h"
#include "ein_cuda_contract.cuh"
// clang-format on

template <typename T> EIN_HD int64_t bitsOf(T x) {
  int64_t b = 0;
  memcpy(&b, &x, sizeof(T));
  return b;
}
/// astype from `From` to every dtype in one functor (one kernel per source
/// dtype keeps the compile short while still instantiating all 81 pairs).
template <typename From> struct CastToAll {
  EIN_HD int64_t operator()(From x) const {
    return bitsOf(ein_cvt<double>(x)) ^ bitsOf(ein_cvt<float>(x)) ^
           bitsOf(ein_cvt<ein_f16_t>(x)) ^ bitsOf(ein_cvt<ein_bf16_t>(x)) ^
           bitsOf(ein_cvt<ein_f8e4m3_t>(x)) ^ bitsOf(ein_cvt<ein_f8e5m2_t>(x)) ^
           bitsOf(ein_cvt<int32_t>(x)) ^ bitsOf(ein_cvt<int64_t>(x)) ^
           bitsOf(ein_cvt<int8_t>(x));
  }
};
/// A fused chain over mixed dtypes, computed in f32 and rounded once.
struct Fused {
  EIN_HD ein_bf16_t operator()(ein_f16_t a, float b, ein_f8e4m3_t c,
                               int32_t d) const {
    float x = ein_to_f32(a) * b + ein_to_f32(c);
    return ein_cvt<ein_bf16_t>(ein_relu(x) + ein_rsqrt(float(d)) +
                               ein_pow(x, 2.0f));
  }
};
struct IntOps {
  EIN_HD int64_t operator()(int64_t a, int64_t b) const {
    return ein_add(ein_div(a, b), ein_pow(a, b));
  }
};
struct Int8Ops {
  EIN_HD int8_t operator()(int8_t a, int8_t b) const {
    return ein_add(ein_div(a, b), ein_mul(ein_pow(a, b), ein_relu(a)));
  }
};

/// A row functor (ein_rows) as the emitter writes one: a bf16 softmax
/// reading a broadcast f32 bias, accumulated in Acc.
template <typename A> struct RowSoftmax {
  using Acc = A;
  static constexpr int stages = 2;
  static constexpr EinReduceKind kinds[2] = {EIN_REDUCE_MAX, EIN_REDUCE_SUM};
  static constexpr int values = 1;
  EIN_HD void operator()(EinRowValues, A *r) const { r[2] = A(1) / r[1]; }
  EIN_HD Acc operator()(EinStage<0>, const Acc *, ein_bf16_t x, float b) const {
    return ein_cvt<Acc>(ein_to_f32(x) + b);
  }
  EIN_HD Acc operator()(EinStage<1>, const Acc *r, ein_bf16_t x,
                        float b) const {
    return ein_cvt<Acc>(expf(ein_to_f32(x) + b - float(r[0])));
  }
  EIN_HD ein_bf16_t operator()(const Acc *r, ein_bf16_t x, float b) const {
    return ein_cvt<ein_bf16_t>(expf(ein_to_f32(x) + b - float(r[0])) *
                               float(r[2]));
  }
};

template <typename From> void castAll(cudaStream_t s) {
  EinView<int64_t, 3> o{nullptr, {1, 1, 1}, {1, 1, 1}};
  EinView<const From, 3> i{nullptr, {1, 1, 1}, {1, 1, 1}};
  ein_map(s, CastToAll<From>(), o, i);
}

template <typename T> void copyAll(cudaStream_t s) {
  EinView<T, 4> d{nullptr, {1, 1, 1, 1}, {1, 1, 1, 1}};
  EinView<const T, 4> src{nullptr, {1, 1, 1, 1}, {1, 1, 1, 1}};
  ein_copy(s, d, src);
}

template <EinReduceKind K, typename Acc, typename T>
void reduceOne(cudaStream_t s) {
  EinView<T, 3> o{nullptr, {1, 1, 1}, {1, 1, 1}};
  EinView<const T, 3> i{nullptr, {1, 1, 1}, {1, 1, 1}};
  ein_reduce<K, Acc>(s, o, i);
}
template <typename Acc, typename T> void reduceAll(cudaStream_t s) {
  reduceOne<EIN_REDUCE_SUM, Acc, T>(s);
  reduceOne<EIN_REDUCE_MAX, Acc, T>(s);
  reduceOne<EIN_REDUCE_MIN, Acc, T>(s);
  reduceOne<EIN_REDUCE_PROD, Acc, T>(s);
}

void instantiateEverything(cudaStream_t s) {
  castAll<double>(s);
  castAll<float>(s);
  castAll<ein_f16_t>(s);
  castAll<ein_bf16_t>(s);
  castAll<ein_f8e4m3_t>(s);
  castAll<ein_f8e5m2_t>(s);
  castAll<int32_t>(s);
  castAll<int64_t>(s);
  castAll<int8_t>(s);
  EinView<ein_bf16_t, 2> o{nullptr, {1, 1}, {1, 1}};
  EinView<const ein_f16_t, 2> a{nullptr, {1, 1}, {1, 1}};
  EinView<const float, 2> b{nullptr, {1, 1}, {1, 1}};
  EinView<const ein_f8e4m3_t, 2> c{nullptr, {1, 1}, {1, 1}};
  EinView<const int32_t, 2> d{nullptr, {1, 1}, {1, 1}};
  ein_map(s, Fused(), o, a, b, c, d);
  EinView<int64_t, 0> io{nullptr, {0}, {0}};
  EinView<const int64_t, 0> ia{nullptr, {0}, {0}};
  ein_map(s, IntOps(), io, ia, ia);
  EinView<int8_t, 1> bo1{nullptr, {1}, {1}};
  EinView<const int8_t, 1> bi1{nullptr, {1}, {1}};
  ein_map(s, Int8Ops(), bo1, bi1, bi1);
  copyAll<double>(s);
  copyAll<float>(s);
  copyAll<ein_f16_t>(s);
  copyAll<ein_bf16_t>(s);
  copyAll<ein_f8e4m3_t>(s);
  copyAll<ein_f8e5m2_t>(s);
  copyAll<int32_t>(s);
  copyAll<int64_t>(s);
  copyAll<int8_t>(s);
  reduceAll<double, double>(s);
  reduceAll<float, float>(s);
  reduceAll<float, ein_f16_t>(s);
  reduceAll<float, ein_bf16_t>(s);
  reduceAll<float, ein_f8e4m3_t>(s);
  reduceAll<float, ein_f8e5m2_t>(s);
  reduceAll<int32_t, int32_t>(s);
  reduceAll<int64_t, int64_t>(s);
  reduceAll<int8_t, int8_t>(s);
  reduceOne<EIN_REDUCE_MEAN, float, ein_bf16_t>(s);
  reduceOne<EIN_REDUCE_MEAN, double, double>(s);
  EinGemm g{};
  ein_gemm(g, nullptr, 0, s);
  // Contractions: f32, f64, f16/bf16 into f32, fp8 into bf16 (ranks 2-4).
  EinGemmRoles roles{};
  EinView<const float, 3> f3{nullptr, {1, 1, 1}, {1, 1, 1}};
  EinView<float, 4> f4{nullptr, {1, 1, 1, 1}, {1, 1, 1, 1}};
  ein_contract(s, roles, f3, f3, f4, false, nullptr, 0);
  // Epilogues (cuBLASLt's or the kernel): f32 and bf16 results.
  EinEpilogue<float, 4> epi4;
  epi4.bits = EIN_EPI_BIAS | EIN_EPI_RELU;
  ein_contract(s, roles, f3, f3, f4, false, nullptr, 0, epi4);
  EinView<const double, 2> d2{nullptr, {1, 1}, {1, 1}};
  EinView<double, 2> d2o{nullptr, {1, 1}, {1, 1}};
  ein_contract(s, roles, d2, d2, d2o, false, nullptr, 0);
  EinView<const ein_f16_t, 2> h2{nullptr, {1, 1}, {1, 1}};
  EinView<const ein_bf16_t, 2> b2{nullptr, {1, 1}, {1, 1}};
  EinView<float, 2> f2{nullptr, {1, 1}, {1, 1}};
  ein_contract(s, roles, h2, h2, f2, false, nullptr, 0);
  ein_contract(s, roles, b2, b2, f2, false, nullptr, 0);
  EinView<ein_bf16_t, 2> b2o{nullptr, {1, 1}, {1, 1}};
  EinEpilogue<ein_bf16_t, 2> epib;
  epib.bits = EIN_EPI_RELU;
  epib.alpha = 0.5;
  ein_contract(s, roles, b2, b2, b2o, false, nullptr, 0, epib);
  EinView<const ein_f8e4m3_t, 2> e2{nullptr, {1, 1}, {1, 1}};
  EinView<const ein_f8e5m2_t, 2> m2{nullptr, {1, 1}, {1, 1}};
  EinView<ein_bf16_t, 2> bo{nullptr, {1, 1}, {1, 1}};
  ein_contract(s, roles, e2, m2, bo, false, nullptr, 0);
  EinView<const int32_t, 2> i2{nullptr, {1, 1}, {1, 1}};
  EinView<int32_t, 2> i2o{nullptr, {1, 1}, {1, 1}};
  ein_contract(s, roles, i2, i2, i2o, false, nullptr, 0);
  EinView<const int64_t, 3> l3{nullptr, {1, 1, 1}, {1, 1, 1}};
  EinView<int64_t, 3> l3o{nullptr, {1, 1, 1}, {1, 1, 1}};
  ein_contract(s, roles, l3, l3, l3o, false, nullptr, 0);
  // Row kernels: rank 1 (one row) and rank 3, f32 and f64 accumulators.
  EinView<ein_bf16_t, 1> r1{nullptr, {1}, {1}};
  EinView<const ein_bf16_t, 1> x1{nullptr, {1}, {1}};
  EinView<const float, 1> c1{nullptr, {1}, {1}};
  ein_rows(s, RowSoftmax<float>(), r1, x1, c1);
  EinView<ein_bf16_t, 3> r3{nullptr, {1, 1, 1}, {1, 1, 1}};
  EinView<const ein_bf16_t, 3> x3{nullptr, {1, 1, 1}, {1, 1, 1}};
  EinView<const float, 3> c3{nullptr, {1, 1, 1}, {0, 0, 1}};
  ein_rows(s, RowSoftmax<double>(), r3, x3, c3);
}
