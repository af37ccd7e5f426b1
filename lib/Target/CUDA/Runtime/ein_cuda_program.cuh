// What the entry points `einc build --target=cuda` writes call: views of the
// C ABI's tensors, the view algebra of the einops patterns (split, pick,
// merge, slice), temporaries, scalars, elementwise maths and the cuBLASLt
// workspace. Every function here is host code run once per op.
#ifndef EIN_CUDA_PROGRAM_CUH
#define EIN_CUDA_PROGRAM_CUH

// ------------------------------------------------------------- maths
// Overloads by compute type (f32 or f64), so that a generated functor needs
// no dtype-specific spelling; CUDA's math library on the device, libm in
// emulation.
EIN_HD float ein_exp(float x) { return expf(x); }
EIN_HD double ein_exp(double x) { return exp(x); }
EIN_HD float ein_log(float x) { return logf(x); }
EIN_HD double ein_log(double x) { return log(x); }
EIN_HD float ein_sqrt(float x) { return sqrtf(x); }
EIN_HD double ein_sqrt(double x) { return sqrt(x); }
EIN_HD float ein_tanh(float x) { return tanhf(x); }
EIN_HD double ein_tanh(double x) { return tanh(x); }
EIN_HD float ein_sin(float x) { return sinf(x); }
EIN_HD double ein_sin(double x) { return sin(x); }
EIN_HD float ein_cos(float x) { return cosf(x); }
EIN_HD double ein_cos(double x) { return cos(x); }
EIN_HD float ein_erf(float x) { return erff(x); }
EIN_HD double ein_erf(double x) { return erf(x); }
EIN_HD float ein_floor(float x) { return floorf(x); }
EIN_HD double ein_floor(double x) { return floor(x); }
EIN_HD float ein_ceil(float x) { return ceilf(x); }
EIN_HD double ein_ceil(double x) { return ceil(x); }
/// Ties to even, as numpy's round (the default rounding mode).
EIN_HD float ein_round(float x) { return rintf(x); }
EIN_HD double ein_round(double x) { return rint(x); }
EIN_HD float ein_log1p(float x) { return log1pf(x); }
EIN_HD double ein_log1p(double x) { return log1p(x); }
EIN_HD float ein_copysign(float x, float y) { return copysignf(x, y); }
EIN_HD double ein_copysign(double x, double y) { return copysign(x, y); }
EIN_HD float ein_fmod(float x, float y) { return fmodf(x, y); }
EIN_HD double ein_fmod(double x, double y) { return fmod(x, y); }

// The activation functions, by the formulas of the table
// (lib/Shape/Elementwise.cpp) that the CPU lowering also computes.
template <typename F> EIN_HD F ein_sigmoid(F x) {
  return F(1) / (F(1) + ein_exp(-x));
}
template <typename F> EIN_HD F ein_silu(F x) { return x * ein_sigmoid(x); }
template <typename F> EIN_HD F ein_gelu(F x) {
  return F(0.5) * x * (F(1) + ein_erf(x * F(0.70710678118654752440)));
}
template <typename F> EIN_HD F ein_gelu_tanh(F x) {
  F inner = x + F(0.044715) * (x * x * x);
  return F(0.5) * x * (F(1) + ein_tanh(F(0.7978845608028654) * inner));
}
/// log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
template <typename F> EIN_HD F ein_softplus(F x) {
  F magnitude = x < F(0) ? -x : x;
  return ein_maximum(x, F(0)) + ein_log1p(ein_exp(-magnitude));
}

// Python's floor division and modulo (numpy's // and %): integers round
// the quotient toward minus infinity, a divisor of 0 gives 0; floats follow
// npy_divmod (from fmod, so 1 // 0.1 is 9).
template <typename I> EIN_HD I ein_floordiv_int(I x, I y) {
  if (y == 0)
    return 0;
  I q = ein_div_int(x, y);
  I r = ein_sub(x, ein_mul(q, y));
  return (r != 0 && ((r < 0) != (y < 0))) ? ein_sub(q, I(1)) : q;
}
template <typename I> EIN_HD I ein_mod_int(I x, I y) {
  if (y == 0)
    return 0;
  I r = ein_sub(x, ein_mul(ein_div_int(x, y), y));
  return (r != 0 && ((r < 0) != (y < 0))) ? ein_add(r, y) : r;
}
template <typename F> EIN_HD F ein_floordiv_float(F x, F y) {
  if (y == F(0))
    return x / y;
  F mod = ein_fmod(x, y);
  F div = (x - mod) / y;
  if (mod != F(0) && ((y < F(0)) != (mod < F(0))))
    div -= F(1);
  if (div == F(0))
    return ein_copysign(F(0), x / y);
  F floorDiv = ein_floor(div);
  return div - floorDiv > F(0.5) ? floorDiv + F(1) : floorDiv;
}
template <typename F> EIN_HD F ein_mod_float(F x, F y) {
  F mod = ein_fmod(x, y);
  if (mod == F(0))
    return ein_copysign(F(0), y);
  return ((y < F(0)) != (mod < F(0))) ? mod + y : mod;
}
EIN_HD float ein_floordiv(float x, float y) { return ein_floordiv_float(x, y); }
EIN_HD double ein_floordiv(double x, double y) {
  return ein_floordiv_float(x, y);
}
EIN_HD int32_t ein_floordiv(int32_t x, int32_t y) {
  return ein_floordiv_int(x, y);
}
EIN_HD int64_t ein_floordiv(int64_t x, int64_t y) {
  return ein_floordiv_int(x, y);
}
EIN_HD int8_t ein_floordiv(int8_t x, int8_t y) {
  return ein_floordiv_int(x, y);
}
EIN_HD float ein_mod(float x, float y) { return ein_mod_float(x, y); }
EIN_HD double ein_mod(double x, double y) { return ein_mod_float(x, y); }
EIN_HD int32_t ein_mod(int32_t x, int32_t y) { return ein_mod_int(x, y); }
EIN_HD int64_t ein_mod(int64_t x, int64_t y) { return ein_mod_int(x, y); }
EIN_HD int8_t ein_mod(int8_t x, int8_t y) { return ein_mod_int(x, y); }

template <typename T> EIN_HD T ein_min(T a, T b) { return ein_minimum(a, b); }
template <typename T> EIN_HD T ein_max(T a, T b) { return ein_maximum(a, b); }
template <typename T> EIN_HD T ein_clip(T x, T lo, T hi) {
  return ein_minimum(ein_maximum(x, lo), hi);
}
template <typename T> EIN_HD T ein_abs(T x) { return x < T(0) ? ein_neg(x) : x; }
EIN_HD float ein_abs(float x) { return fabsf(x); }
EIN_HD double ein_abs(double x) { return fabs(x); }
/// -1, 0 or 1; NaN stays NaN (numpy).
template <typename T> EIN_HD T ein_sign(T x) {
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
}
template <typename T> EIN_HD T ein_square(T x) { return ein_mul(x, x); }

// Comparisons (NaN compares unequal to everything, as numpy), logic on
// bool, and selection.
template <typename T> EIN_HD bool ein_lt(T a, T b) { return a < b; }
template <typename T> EIN_HD bool ein_le(T a, T b) { return a <= b; }
template <typename T> EIN_HD bool ein_gt(T a, T b) { return a > b; }
template <typename T> EIN_HD bool ein_ge(T a, T b) { return a >= b; }
template <typename T> EIN_HD bool ein_eq(T a, T b) { return a == b; }
template <typename T> EIN_HD bool ein_ne(T a, T b) { return a != b; }
EIN_HD bool ein_and(bool a, bool b) { return a && b; }
EIN_HD bool ein_or(bool a, bool b) { return a || b; }
EIN_HD bool ein_not(bool a) { return !a; }
template <typename T> EIN_HD T ein_where(bool c, T a, T b) { return c ? a : b; }

/// Storage value of dtype T from its compute value (one rounding for the
/// 16- and 8-bit floats).
template <typename T, typename C> EIN_HD T ein_store(C x) {
  return ein_cvt<T>(x);
}
/// The compute value of a storage value.
template <typename T> EIN_HD typename EinCompute<T>::type ein_load(T x) {
  return EinCompute<T>::load(x);
}

/// x converted to TO (ein's astype), as a functor for ein_map.
template <typename TO> struct EinCastTo {
  template <typename U> EIN_HD TO operator()(U x) const {
    return ein_cvt<TO>(x);
  }
};

// ------------------------------------------------------------- views
/// v's dims split into elementary axes (always a view): axis e lies in dim
/// dimOf[e] with size size[e]; the axes of one dim are listed together,
/// outermost first. A dim with no axis has size 1 and is dropped.
template <int RE, typename T, int R>
inline EinView<T, RE> ein_split(const EinView<T, R> &v, const int *dimOf,
                                const int64_t *size) {
  EinView<T, RE> e;
  e.data = v.data;
  int64_t inner[R > 0 ? R : 1];
  for (int d = 0; d < R; ++d)
    inner[d] = 1;
  for (int a = RE - 1; a >= 0; --a) {
    const int d = dimOf[a];
    e.size[a] = size[a];
    e.stride[a] = v.stride[d] * inner[d];
    inner[d] *= size[a];
  }
  return e;
}

/// A view of rank RO over the axes of e: axis o has size size[o] and the
/// stride sum over e's axes a with pick[o * RE + a] == '1' (one axis: a
/// permutation; several: a diagonal, as einsum's `i i`; none: a broadcast).
template <int RO, typename T, int RE>
inline EinView<T, RO> ein_pick(const EinView<T, RE> &e, const char *pick,
                               const int64_t *size) {
  EinView<T, RO> v;
  v.data = e.data;
  for (int o = 0; o < RO; ++o) {
    v.size[o] = size[o];
    int64_t s = 0;
    for (int a = 0; a < RE; ++a)
      if (pick[o * RE + a] == '1')
        s += e.stride[a];
    v.stride[o] = s;
  }
  return v;
}

/// Merges runs of e's axes into the dims of a view of rank RO: dim j is the
/// next count[j] axes of `axes` (outermost first; none: a dim of size 1).
/// False when some run is not one strided dimension (a copy is needed).
template <int RO, typename T, int RE>
inline bool ein_merge(const EinView<T, RE> &e, const int *count,
                      const int *axes, EinView<T, RO> *out) {
  out->data = e.data;
  bool empty = false;
  for (int a = 0; a < RE; ++a)
    empty = empty || e.size[a] == 0;
  int next = 0;
  for (int j = 0; j < RO; ++j) {
    int64_t size = 1, stride = 0;
    bool first = true;
    for (int i = count[j] - 1; i >= 0; --i) {
      const int a = axes[next + i];
      if (e.size[a] == 1)
        continue;
      if (first)
        stride = e.stride[a];
      else if (!empty && e.stride[a] != stride * size)
        return false;
      size *= e.size[a];
      first = false;
    }
    next += count[j];
    out->size[j] = size;
    out->stride[j] = stride;
  }
  return true;
}

/// Dim d of v restricted to [offset, offset + size).
template <typename T, int R>
inline EinView<T, R> ein_slice(EinView<T, R> v, int d, int64_t offset,
                               int64_t size) {
  if (size > 0)
    v.data += offset * v.stride[d];
  v.size[d] = size;
  return v;
}

// ------------------------------------------------------------- memory
/// A fresh row-major tensor of `sizes` in stream-ordered memory; *owner
/// receives the allocation, for ein_free.
template <typename T, int R>
inline EinView<T, R> ein_temp(cudaStream_t stream, const int64_t *sizes,
                              void **owner) {
  EinView<T, R> v;
  int64_t n = 1;
  for (int d = R - 1; d >= 0; --d) {
    v.size[d] = sizes[d];
    v.stride[d] = n;
    n *= sizes[d];
  }
  EIN_CUDA_CHECK(cudaMallocAsync(owner, size_t(n > 0 ? n : 1) * sizeof(T),
                                 stream));
  v.data = static_cast<T *>(*owner);
  return v;
}
inline void ein_free(cudaStream_t stream, void *owner) {
  if (owner)
    EIN_CUDA_CHECK(cudaFreeAsync(owner, stream));
}

/// One squared deviation from the mean, in the accumulator type: var's
/// second pass (ein_reduce_var).
template <typename Acc> struct EinSquaredDeviation {
  template <typename T> EIN_HD Acc operator()(T x, Acc mean) const {
    const Acc d = ein_cvt<Acc>(x) - mean;
    return d * d;
  }
};

/// out = the population variance (numpy's ddof=0) of `in` over the axes
/// where out has size 1 (as ein_reduce), in two numerically sound passes:
/// the mean into a temporary of out's sizes, then the mean of the squared
/// deviations from it (materialised at in's sizes), both in `Acc`.
template <typename Acc, typename TO, typename TI, int R>
inline void ein_reduce_var(cudaStream_t stream, EinView<TO, R> out,
                           EinView<const TI, R> in) {
  int64_t outSizes[R > 0 ? R : 1];
  for (int d = 0; d < R; ++d)
    outSizes[d] = out.size[d];
  void *meanOwner = nullptr, *squaresOwner = nullptr;
  EinView<Acc, R> mean = ein_temp<Acc, R>(stream, outSizes, &meanOwner);
  ein_reduce<EIN_REDUCE_MEAN, Acc>(stream, mean, in);
  // The mean read at in's sizes: stride 0 along the reduced axes.
  EinView<const Acc, R> spread = ein_const_view(mean);
  for (int d = 0; d < R; ++d) {
    const bool reduced = out.size[d] == 1 && in.size[d] != 1;
    spread.size[d] = in.size[d];
    spread.stride[d] = reduced ? 0 : mean.stride[d];
  }
  EinView<Acc, R> squares = ein_temp<Acc, R>(stream, in.size, &squaresOwner);
  ein_map(stream, EinSquaredDeviation<Acc>(), squares, in, spread);
  ein_reduce<EIN_REDUCE_MEAN, Acc>(stream, out, ein_const_view(squares));
  ein_free(stream, squaresOwner);
  ein_free(stream, meanOwner);
}

template <typename T>
__global__ void ein_set_scalar_kernel(T *out, T value) {
  *out = value;
}

/// A 0-d tensor holding `value` (a constant the program uses as a tensor).
template <typename T>
inline EinView<T, 0> ein_scalar(cudaStream_t stream, T value, void **owner) {
  EinView<T, 0> v = ein_temp<T, 0>(stream, nullptr, owner);
  // A kernel's argument, not a copy from the host's stack: a CUDA Graph
  // keeps a launch's arguments, but a copy reads its source at each replay.
  auto kernel = &ein_set_scalar_kernel<T>;
  EIN_LAUNCH(kernel, 1, 1, stream, v.data, value);
  return v;
}

/// dst = src elementwise, any strides, any rank.
template <typename T, int R>
inline void ein_move(cudaStream_t stream, EinView<T, R> dst,
                     EinView<const T, R> src) {
  if constexpr (R <= 8)
    ein_copy(stream, dst, src);
  else
    ein_map(stream, EinIdentity<T>(), dst, src);
}

/// arange: out[i] = i, converted to T (one thread per element, grid-stride).
template <typename T>
__global__ void ein_arange_kernel(T *__restrict__ out, int64_t stride,
                                  int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i * stride] = ein_cvt<T>(i);
}

/// out = 0, 1, ..., n-1 (n = out's size; nothing to launch when empty).
template <typename T>
inline void ein_arange(cudaStream_t stream, EinView<T, 1> out) {
  const int64_t n = out.size[0];
  if (n <= 0)
    return;
  const unsigned threads = 256;
  auto kernel = &ein_arange_kernel<T>;
  EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, out.data,
             out.stride[0], n);
}

// ------------------------------------------------------------- take
/// The offset of element `i` (row-major order over `size`) under `stride`.
template <int R>
__host__ __device__ inline int64_t
ein_offset_of(int64_t i, const int64_t *size, const int64_t *stride) {
  int64_t offset = 0;
  for (int d = R - 1; d >= 0; --d) {
    offset += (i % size[d]) * stride[d];
    i /= size[d];
  }
  return offset;
}

/// Counts the ids outside [0, bound) into *status.
template <typename I, int RI>
__global__ void ein_take_check_kernel(EinView<const I, RI> ids, int64_t n,
                                      int64_t bound,
                                      unsigned long long *status) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t id = int64_t(ids.data[ein_offset_of<RI>(i, ids.size, ids.stride)]);
    if (id < 0 || id >= bound)
      atomicAdd(status, 1ull);
  }
}

/// out = table with its dim `axis` indexed by the ids, clamped into
/// [0, bound) (a bad id, counted by the check, reads a row of the table);
/// zeros when the axis is empty (nothing may be read).
template <typename T, typename I, int R, int RT, int RI>
__global__ void ein_take_kernel(EinView<T, R> out, EinView<const T, RT> table,
                                EinView<const I, RI> ids, int axis,
                                int64_t n) {
  const int64_t last = table.size[axis] - 1;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    // The output's coordinates, last first: the table's after the axis, the
    // ids', the table's before it.
    int64_t rest = i, src = 0, idOffset = 0, dst = 0;
    for (int d = R - 1; d >= 0; --d) {
      int64_t c = rest % out.size[d];
      rest /= out.size[d];
      dst += c * out.stride[d];
      if (d >= axis + RI)
        src += c * table.stride[d - RI + 1];
      else if (d >= axis)
        idOffset += c * ids.stride[d - axis];
      else
        src += c * table.stride[d];
    }
    if (last < 0) {
      out.data[dst] = T{};
      continue;
    }
    int64_t id = int64_t(ids.data[idOffset]);
    id = id < 0 ? 0 : id > last ? last : id;
    out.data[dst] = table.data[src + id * table.stride[axis]];
  }
}

/// take(table, ids) along `axis`: the ids out of range counted into
/// *status, then the gather.
template <typename T, typename I, int R, int RT, int RI>
inline void ein_take(cudaStream_t stream, EinView<T, R> out,
                     EinView<const T, RT> table, EinView<const I, RI> ids,
                     int axis, unsigned long long *status) {
  const unsigned threads = 256;
  int64_t nIds = 1, n = 1;
  for (int d = 0; d < RI; ++d)
    nIds *= ids.size[d];
  for (int d = 0; d < R; ++d)
    n *= out.size[d];
  if (nIds > 0) {
    auto check = &ein_take_check_kernel<I, RI>;
    EIN_LAUNCH(check, ein_grid_for(nIds, threads), threads, stream, ids, nIds,
               table.size[axis], status);
  }
  if (n <= 0)
    return;
  auto kernel = &ein_take_kernel<T, I, R, RT, RI>;
  EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, out, table,
             ids, axis, n);
}

// ------------------------------------------------------------- take_along
/// out[i..., j...] = x[i..., id, j...] with id = ids[i..., j...] clamped
/// into [0, bound) (a bad id, counted by the check, reads an element of x);
/// the result and the ids have x's shape without the axis.
template <typename T, typename I, int R, int RI>
__global__ void ein_take_along_kernel(EinView<T, R> out,
                                      EinView<const T, R + 1> x,
                                      EinView<const I, RI> ids, int axis,
                                      int64_t n) {
  const int64_t last = x.size[axis] - 1;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = 0, idOffset = 0, dst = 0;
    for (int d = R - 1; d >= 0; --d) {
      int64_t c = rest % out.size[d];
      rest /= out.size[d];
      dst += c * out.stride[d];
      idOffset += c * ids.stride[d];
      src += c * x.stride[d < axis ? d : d + 1];
    }
    if (last < 0) {
      out.data[dst] = T{};
      continue;
    }
    int64_t id = int64_t(ids.data[idOffset]);
    id = id < 0 ? 0 : id > last ? last : id;
    out.data[dst] = x.data[src + id * x.stride[axis]];
  }
}

/// take_along(x, ids) along `axis`: the ids out of range counted into
/// *status (take's check kernel), then the gather.
template <typename T, typename I, int R, int RX, int RI>
inline void ein_take_along(cudaStream_t stream, EinView<T, R> out,
                           EinView<const T, RX> x, EinView<const I, RI> ids,
                           int axis, unsigned long long *status) {
  static_assert(RX == R + 1 && RI == R,
                "take_along: the ids and the result have x's rank - 1");
  const unsigned threads = 256;
  int64_t n = 1;
  for (int d = 0; d < R; ++d)
    n *= out.size[d];
  if (n <= 0)
    return;
  auto check = &ein_take_check_kernel<I, RI>;
  EIN_LAUNCH(check, ein_grid_for(n, threads), threads, stream, ids, n,
             x.size[axis], status);
  auto kernel = &ein_take_along_kernel<T, I, R, RI>;
  EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, out, x, ids,
             axis, n);
}

// ------------------------------------------------------------- dropout
/// Philox4x64-10 (Random123's philox4x64_R, 10 rounds) of the counter
/// (i, 0, 0, 0) and the key (key, 0): its first word. The CPU lowering
/// (EinToLinalg/Elementwise.cpp, philoxWord0) computes the same.
/// A device function: __umul64hi has no host version (the emulation
/// defines one with unsigned __int128).
__device__ __forceinline__ uint64_t ein_philox4x64_10_word0(uint64_t i,
                                                            uint64_t key) {
  uint64_t x0 = i, x1 = 0, x2 = 0, x3 = 0, k0 = key, k1 = 0;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B97F4A7C15ull;
      k1 += 0xBB67AE8584CAA73Bull;
    }
    const uint64_t m0 = 0xD2E7470EE14C6C93ull, m1 = 0xCA5A826395121157ull;
    uint64_t hi0 = __umul64hi(m0, x0), lo0 = m0 * x0;
    uint64_t hi1 = __umul64hi(m1, x2), lo1 = m1 * x2;
    uint64_t y0 = hi1 ^ x1 ^ k0, y2 = hi0 ^ x3 ^ k1;
    x0 = y0;
    x1 = lo1;
    x2 = y2;
    x3 = lo0;
  }
  return x0;
}

/// A dropout's compute type C: double for double and float otherwise
/// (narrower floats computed in f32, rounded once).
template <typename T>
using EinDropoutCompute =
    typename std::conditional<std::is_same<T, double>::value, double,
                              float>::type;

/// out[i] = keep(i) ? C(x[i]) * s : 0 over the C-order indices i this thread
/// takes (grid-stride), keep(i) when (word0 >> 11) >= threshold
/// (= ceil(p * 2^53)), `s` 1 / (1 - p) rounded to C; for both kernels below.
template <typename T, int R, typename C>
__device__ inline void ein_dropout_elements(EinView<T, R> out,
                                            EinView<const T, R> x, uint64_t k,
                                            uint64_t threshold, C s,
                                            int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = 0, dst = 0;
    for (int d = R - 1; d >= 0; --d) {
      int64_t c = rest % out.size[d];
      rest /= out.size[d];
      dst += c * out.stride[d];
      src += c * x.stride[d];
    }
    uint64_t bits = ein_philox4x64_10_word0(uint64_t(i), k) >> 11;
    out.data[dst] = bits >= threshold
                        ? ein_cvt<T>(ein_cvt<C>(x.data[src]) * s)
                        : ein_cvt<T>(C(0));
  }
}

template <typename T, int R>
__global__ void ein_dropout_kernel(EinView<T, R> out, EinView<const T, R> x,
                                   const int64_t *key, uint64_t threshold,
                                   double scale, int64_t n) {
  using C = EinDropoutCompute<T>;
  ein_dropout_elements(out, x, uint64_t(key[0]), threshold, C(scale), n);
}

/// dropout(x, p, key): the key read on the device, one thread per element.
template <typename T, int R>
inline void ein_dropout(cudaStream_t stream, EinView<T, R> out,
                        EinView<const T, R> x, EinView<const int64_t, 0> key,
                        uint64_t threshold, double scale) {
  const unsigned threads = 256;
  int64_t n = 1;
  for (int d = 0; d < R; ++d)
    n *= out.size[d];
  if (n <= 0)
    return;
  auto kernel = &ein_dropout_kernel<T, R>;
  EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, out, x,
             key.data, threshold, scale, n);
}

/// dropout's threshold and scale from a run-time p, computed as the CPU
/// lowering and the literal form compute them (in double: ceil(p * 2^53),
/// 1 / (1 - p)); a p outside [0, 1) is counted into *status by the first
/// thread and taken as 0, so the call fails with defined arithmetic.
template <typename P>
__device__ inline double ein_dropout_rate(const P *rate, uint64_t *threshold,
                                          unsigned long long *status,
                                          bool first) {
  double p = ein_cvt<double>(rate[0]);
  if (!(p >= 0.0 && p < 1.0)) {
    if (first)
      atomicAdd(status, 1ull);
    p = 0.0;
  }
  *threshold = uint64_t(ceil(ldexp(p, 53)));
  return 1.0 / (1.0 - p);
}

/// ein_dropout_kernel with p read on the device (ein_dropout_rate).
template <typename T, int R, typename P>
__global__ void ein_dropout_rate_kernel(EinView<T, R> out,
                                        EinView<const T, R> x,
                                        const int64_t *key, const P *rate,
                                        unsigned long long *status,
                                        int64_t n) {
  using C = EinDropoutCompute<T>;
  uint64_t threshold = 0;
  const C s = C(ein_dropout_rate(rate, &threshold, status,
                                 blockIdx.x == 0 && threadIdx.x == 0));
  ein_dropout_elements(out, x, uint64_t(key[0]), threshold, s, n);
}

/// dropout(x, p, key) with a run-time p: p and the key read on the device;
/// at least one block runs, so that an empty x still checks p.
template <typename T, int R, typename P>
inline void ein_dropout(cudaStream_t stream, EinView<T, R> out,
                        EinView<const T, R> x, EinView<const int64_t, 0> key,
                        EinView<const P, 0> rate, unsigned long long *status) {
  const unsigned threads = 256;
  int64_t n = 1;
  for (int d = 0; d < R; ++d)
    n *= out.size[d];
  auto kernel = &ein_dropout_rate_kernel<T, R, P>;
  EIN_LAUNCH(kernel, ein_grid_for(n > 0 ? n : 1, threads), threads, stream,
             out, x, key.data, rate.data, status, n);
}

// ------------------------------------------------------------- scatter_add
/// out = 0 over every element of the view (any strides).
template <typename T, int R>
__global__ void ein_zero_kernel(EinView<T, R> out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out.data[ein_offset_of<R>(i, out.size, out.stride)] = T{};
}

/// Adds each update into out at its id along `axis`, clamped into
/// [0, size) as take clamps it: an atomicAdd per update, since ids repeat
/// (several tokens of one word add into its row).
template <typename T, typename I, int R, int RU, int RI>
__global__ void ein_scatter_add_kernel(EinView<T, R> out,
                                       EinView<const T, RU> updates,
                                       EinView<const I, RI> ids, int axis,
                                       int64_t n) {
  const int64_t last = out.size[axis] - 1;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    // The update's coordinates, last first: the result's after the axis,
    // the ids', the result's before it.
    int64_t rest = i, src = 0, idOffset = 0, dst = 0;
    for (int d = RU - 1; d >= 0; --d) {
      int64_t c = rest % updates.size[d];
      rest /= updates.size[d];
      src += c * updates.stride[d];
      if (d >= axis + RI)
        dst += c * out.stride[d - RI + 1];
      else if (d >= axis)
        idOffset += c * ids.stride[d - axis];
      else
        dst += c * out.stride[d];
    }
    int64_t id = int64_t(ids.data[idOffset]);
    id = id < 0 ? 0 : id > last ? last : id;
    atomicAdd(&out.data[dst + id * out.stride[axis]], updates.data[src]);
  }
}

/// scatter_add (take's gradient): out = zeros, then the updates added at
/// their ids along `axis`. Nothing is added when the axis is empty (no row
/// to land on); the take it differentiates reported such ids.
template <typename T, typename I, int R, int RU, int RI>
inline void ein_scatter_add(cudaStream_t stream, EinView<T, R> out,
                            EinView<const T, RU> updates,
                            EinView<const I, RI> ids, int axis) {
  const unsigned threads = 256;
  int64_t n = 1, nOut = 1;
  for (int d = 0; d < RU; ++d)
    n *= updates.size[d];
  for (int d = 0; d < R; ++d)
    nOut *= out.size[d];
  if (nOut <= 0)
    return;
  auto zero = &ein_zero_kernel<T, R>;
  EIN_LAUNCH(zero, ein_grid_for(nOut, threads), threads, stream, out, nOut);
  if (n <= 0)
    return;
  auto kernel = &ein_scatter_add_kernel<T, I, R, RU, RI>;
  EIN_LAUNCH(kernel, ein_grid_for(n, threads), threads, stream, out, updates,
             ids, axis, n);
}

/// A function's call being captured into a CUDA Graph on this thread
/// (ein_cuda_graph.cuh): a graph cannot wait for its stream, so the index
/// status goes through memory the graph keeps, read after each launch.
struct EinGraphStatus {
  unsigned long long *device = nullptr; // the counter
  unsigned long long *host = nullptr;   // pinned; the graph copies it here
  bool used = false;                    // the captured call has a take
};
inline EinGraphStatus *&ein_graph_status() {
  static thread_local EinGraphStatus *status = nullptr;
  return status;
}

/// The index status of a function with a take: a device counter, zeroed.
inline unsigned long long *ein_status_begin(cudaStream_t stream) {
  if (EinGraphStatus *graph = ein_graph_status()) {
    graph->used = true;
    EIN_CUDA_CHECK(cudaMemsetAsync(graph->device, 0, sizeof(unsigned long long),
                                   stream));
    return graph->device;
  }
  void *p = nullptr;
  EIN_CUDA_CHECK(cudaMallocAsync(&p, sizeof(unsigned long long), stream));
  EIN_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(unsigned long long), stream));
  return static_cast<unsigned long long *>(p);
}
/// Waits for the stream and reads the count (freeing it): non-zero when an
/// id was out of range. While a graph is captured, the count is copied to
/// the graph's host word instead, which its caller reads after a launch.
inline unsigned long long ein_status_end(cudaStream_t stream,
                                         unsigned long long *status) {
  if (EinGraphStatus *graph = ein_graph_status()) {
    EIN_CUDA_CHECK(cudaMemcpyAsync(graph->host, status, sizeof *status,
                                   cudaMemcpyDeviceToHost, stream));
    return 0;
  }
  unsigned long long count = 0;
  EIN_CUDA_CHECK(cudaMemcpyAsync(&count, status, sizeof count,
                                 cudaMemcpyDeviceToHost, stream));
  EIN_CUDA_CHECK(cudaFreeAsync(status, stream));
  EIN_CUDA_CHECK(cudaStreamSynchronize(stream));
  return count;
}

/// The cuBLASLt workspace: one per process, allocated on first use (32 MiB,
/// what NVIDIA recommends for Hopper).
inline void *ein_workspace(size_t *bytes) {
  static void *workspace = nullptr;
  const size_t size = size_t(32) << 20;
  if (!workspace)
    EIN_CUDA_CHECK(cudaMalloc(&workspace, size));
  *bytes = size;
  return workspace;
}

#endif // EIN_CUDA_PROGRAM_CUH
