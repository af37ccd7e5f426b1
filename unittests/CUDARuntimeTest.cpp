// Tests of the CUDA runtime's kernels (map, copy, reduce, GEMM) executed by
// the emulation, each against plain loops over the same views.
#include "CUDARuntimeTestUtil.h"
// ein_reduce_var and the temporaries it uses (this file only: the header
// defines the program-level helpers).
#include "ein_cuda_program.cuh"

#include <gtest/gtest.h>

using namespace ein_cuda_test;

namespace {

template <int R>
void randomSizes(int64_t (&s)[R > 0 ? R : 1], std::mt19937 &rng) {
  // Odd sizes; high ranks stay small enough for the emulation.
  static const int64_t choices[] = {1, 2, 3, 5, 7, 33};
  for (int d = 0; d < R; ++d)
    s[d] = choices[rng() % (R >= 4 ? 4 : 6)];
}

//===--------------------------------------------------------------------===//
// map
//===--------------------------------------------------------------------===//

/// A generated-functor stand-in over mixed dtypes: f16 * f32 + bf16,
/// computed in f32 and rounded once to f16.
struct MixedFma {
  EIN_HD ein_f16_t operator()(ein_f16_t a, float b, ein_bf16_t c) const {
    return ein_cvt<ein_f16_t>(ein_to_f32(a) * b + ein_to_f32(c));
  }
};
/// Four inputs, integers: wrapping arithmetic and non-trapping division.
struct IntChain {
  EIN_HD int32_t operator()(int32_t a, int32_t b, int64_t c, int32_t d) const {
    return ein_add(ein_div(a, b), ein_cvt<int32_t>(c)) * d;
  }
};

template <int R>
void checkMixedMap(std::mt19937 &rng, bool permute, bool pad, bool broadcast) {
  int64_t sizes[R > 0 ? R : 1];
  randomSizes<R>(sizes, rng);
  Strided<ein_f16_t, R> a(sizes, rng, permute, pad, broadcast);
  Strided<float, R> b(sizes, rng, permute, pad, broadcast);
  Strided<ein_bf16_t, R> c(sizes, rng, permute, pad, broadcast);
  Strided<ein_f16_t, R> out(sizes, rng, permute, pad, false);
  std::uniform_real_distribution<float> u(-4, 4);
  for (auto &x : a.buffer)
    x = ein_cvt<ein_f16_t>(u(rng));
  for (auto &x : b.buffer)
    x = u(rng);
  for (auto &x : c.buffer)
    x = ein_cvt<ein_bf16_t>(u(rng));
  EinView<const ein_f16_t, R> va{a.view.data, {}, {}};
  EinView<const ein_bf16_t, R> vc{c.view.data, {}, {}};
  for (int d = 0; d < R; ++d) {
    va.size[d] = a.view.size[d], va.stride[d] = a.view.stride[d];
    vc.size[d] = c.view.size[d], vc.stride[d] = c.view.stride[d];
  }
  ein_map(nullptr, MixedFma(), out.view, va, b.view, vc);
  forEachIndex<R>(sizes, [&](const int64_t *i) {
    // In f32, each operation rounded (no contraction into an fma).
    volatile float product = ein_to_f32(a.at(i)) * b.at(i);
    float expect = product + ein_to_f32(c.at(i));
    ASSERT_EQ(out.at(i).bits, ein_cvt<ein_f16_t>(expect).bits) << "rank " << R;
  });
}

TEST(CUDAMapTest, MixedDtypesEveryRankAndLayout) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 6; ++trial)
    for (int layout = 0; layout < 4; ++layout) {
      bool permute = layout & 1, pad = layout & 2, broadcast = trial % 2;
      checkMixedMap<0>(rng, permute, pad, broadcast);
      checkMixedMap<1>(rng, permute, pad, broadcast);
      checkMixedMap<2>(rng, permute, pad, broadcast);
      checkMixedMap<3>(rng, permute, pad, broadcast);
      checkMixedMap<4>(rng, permute, pad, broadcast);
      checkMixedMap<5>(rng, permute, pad, broadcast);
      checkMixedMap<6>(rng, permute, pad, broadcast);
    }
}

TEST(CUDAMapTest, ContiguousVectorisedAndTails) {
  // Flat path: sizes around the vector width, aligned and misaligned
  // starts, a broadcast scalar input.
  for (int64_t n : {1, 3, 7, 8, 9, 33, 1000, 4099}) {
    for (int shift : {0, 1, 3}) {
      std::vector<int32_t> a(n + 8), b(n + 8), d(n + 8), out(n + 8, -1);
      std::vector<int64_t> c(n + 8);
      for (int64_t i = 0; i < n + 8; ++i) {
        a[i] = int32_t(i * 7919 % 2001) - 1000;
        b[i] = int32_t(i % 5) - 2; // zeros: x / 0 is 0
        c[i] = int64_t(i) << 33 | i;
        d[i] = 3;
      }
      const int64_t one = 1, zero = 0;
      EinView<int32_t, 1> vo{out.data() + shift, {n}, {one}};
      EinView<const int32_t, 1> va{a.data() + shift, {n}, {one}};
      EinView<const int32_t, 1> vb{b.data() + shift, {n}, {one}};
      EinView<const int64_t, 1> vc{c.data() + shift, {n}, {one}};
      EinView<const int32_t, 1> vd{d.data(), {n}, {zero}}; // a scalar
      ein_map(nullptr, IntChain(), vo, va, vb, vc, vd);
      for (int64_t i = 0; i < n; ++i) {
        int64_t j = i + shift;
        int32_t q = b[j] == 0 ? 0 : a[j] / b[j];
        ASSERT_EQ(out[j], int32_t(q + int32_t(uint32_t(c[j]))) * 3)
            << "n " << n << " shift " << shift << " i " << i;
      }
      ASSERT_EQ(out[shift + n], -1) << "wrote past the end";
    }
  }
}

/// x + y in bf16 (computed in f32, rounded once), y broadcast.
struct AddBf16 {
  EIN_HD ein_bf16_t operator()(ein_bf16_t x, ein_bf16_t y) const {
    return ein_cvt<ein_bf16_t>(ein_to_f32(x) + ein_to_f32(y));
  }
};

TEST(CUDAMapTest, RowsPathPermutedOuterDimsContiguousInner) {
  // b s (h d) -> b h s d (the heads split) plus a per-d bias: the outer
  // dims permuted, the innermost d contiguous in every view (the rows
  // path: 8 bf16 per vector access); then d = 12 (not a multiple of 8), a
  // misaligned start and a padded row stride (the element path).
  for (int variant = 0; variant < 4; ++variant) {
    const int64_t b = 2, sq = 5, h = 3, d = variant == 1 ? 12 : 16;
    const int64_t shift = variant == 2 ? 1 : 0, pad = variant == 3 ? 4 : 0;
    const int64_t row = h * d + pad;
    std::vector<ein_bf16_t> x(b * sq * row + 8), bias(d + 8),
        out(b * h * sq * d + 8);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = ein_f32_to_bf16(float(int(i % 97) - 48) / 8);
    for (size_t i = 0; i < bias.size(); ++i)
      bias[i] = ein_f32_to_bf16(float(i) / 4);
    EinView<ein_bf16_t, 4> vo{out.data() + shift,
                              {b, h, sq, d},
                              {h * sq * d, sq * d, d, 1}};
    EinView<const ein_bf16_t, 4> vx{x.data() + shift,
                                    {b, h, sq, d},
                                    {sq * row, d, row, 1}};
    EinView<const ein_bf16_t, 4> vb{bias.data(), {b, h, sq, d}, {0, 0, 0, 1}};
    ein_map(nullptr, AddBf16(), vo, vx, vb);
    for (int64_t i0 = 0; i0 < b; ++i0)
      for (int64_t i1 = 0; i1 < h; ++i1)
        for (int64_t i2 = 0; i2 < sq; ++i2)
          for (int64_t i3 = 0; i3 < d; ++i3) {
            float want = ein_to_f32(ein_f32_to_bf16(
                ein_to_f32(x[shift + i0 * sq * row + i2 * row + i1 * d + i3]) +
                ein_to_f32(bias[i3])));
            float got = ein_to_f32(
                out[shift + ((i0 * h + i1) * sq + i2) * d + i3]);
            ASSERT_EQ(got, want) << "variant " << variant;
          }
  }
}

//===--------------------------------------------------------------------===//
// copy
//===--------------------------------------------------------------------===//

template <typename T, int R> void checkCopy(std::mt19937 &rng, bool big) {
  int64_t sizes[R > 0 ? R : 1];
  randomSizes<R>(sizes, rng);
  if (big && R >= 2) { // long enough for the tiled transpose
    sizes[0] = 37 + rng() % 40;
    sizes[R - 1] = 40 + rng() % 30;
  }
  Strided<T, R> src(sizes, rng, true, rng() % 2, rng() % 2);
  Strided<T, R> dst(sizes, rng, true, rng() % 2, false);
  for (size_t i = 0; i < src.buffer.size(); ++i) {
    uint64_t bits = rng();
    memcpy(&src.buffer[i], &bits, sizeof(T));
  }
  for (auto &x : dst.buffer)
    memset(&x, 0xAB, sizeof(T));
  std::vector<T> before = dst.buffer;
  EinView<const T, R> vs{src.view.data, {}, {}};
  for (int d = 0; d < R; ++d)
    vs.size[d] = src.view.size[d], vs.stride[d] = src.view.stride[d];
  ein_copy(nullptr, dst.view, vs);
  // Every element of the view copied bit for bit; nothing else written.
  std::vector<bool> inView(dst.buffer.size());
  forEachIndex<R>(sizes, [&](const int64_t *i) {
    ASSERT_EQ(memcmp(&dst.at(i), &src.at(i), sizeof(T)), 0) << "rank " << R;
    inView[&dst.at(i) - dst.buffer.data()] = true;
  });
  for (size_t i = 0; i < dst.buffer.size(); ++i) {
    if (!inView[i]) {
      ASSERT_EQ(memcmp(&dst.buffer[i], &before[i], sizeof(T)), 0);
    }
  }
}

template <typename T> void checkCopies(std::mt19937 &rng) {
  for (int trial = 0; trial < 4; ++trial) {
    checkCopy<T, 0>(rng, false);
    checkCopy<T, 1>(rng, false);
    checkCopy<T, 2>(rng, trial % 2);
    checkCopy<T, 3>(rng, trial % 2);
    checkCopy<T, 4>(rng, trial % 2);
    checkCopy<T, 6>(rng, false);
  }
}

TEST(CUDACopyTest, AnyStridesEveryDtype) {
  std::mt19937 rng(5);
  checkCopies<double>(rng);
  checkCopies<float>(rng);
  checkCopies<ein_f16_t>(rng);
  checkCopies<ein_bf16_t>(rng);
  checkCopies<ein_f8e4m3_t>(rng);
  checkCopies<ein_f8e5m2_t>(rng);
  checkCopies<int32_t>(rng);
  checkCopies<int64_t>(rng);
}

TEST(CUDACopyTest, TransposeAndRepeat) {
  // b s (h d) -> b h s d, with odd sizes: the tiled path.
  const int64_t B = 2, S = 45, H = 3, D = 37;
  std::vector<float> src(B * S * H * D), dst(B * H * S * D);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = float(i);
  EinView<float, 4> vd{dst.data(), {B, H, S, D}, {H * S * D, S * D, D, 1}};
  EinView<const float, 4> vs{
      src.data(), {B, H, S, D}, {S * H * D, D, H * D, 1}};
  ein_copy(nullptr, vd, vs);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < D; ++d)
          ASSERT_EQ(dst[((b * H + h) * S + s) * D + d],
                    src[((b * S + s) * H + h) * D + d]);
  // A 2-d transpose 1000 x 33 and a repeat "h w -> c h w" (stride 0).
  std::vector<int64_t> m(1000 * 33), t(33 * 1000);
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = int64_t(i) * 3;
  EinView<int64_t, 2> vt{t.data(), {33, 1000}, {1000, 1}};
  EinView<const int64_t, 2> vm{m.data(), {33, 1000}, {1, 33}};
  ein_copy(nullptr, vt, vm);
  for (int64_t i = 0; i < 1000; ++i)
    for (int64_t j = 0; j < 33; ++j)
      ASSERT_EQ(t[j * 1000 + i], m[i * 33 + j]);
  std::vector<ein_bf16_t> img(5 * 7), rep(4 * 5 * 7);
  for (int i = 0; i < 35; ++i)
    img[i] = ein_bf16_t{uint16_t(i)};
  EinView<ein_bf16_t, 3> vr{rep.data(), {4, 5, 7}, {35, 7, 1}};
  EinView<const ein_bf16_t, 3> vi{img.data(), {4, 5, 7}, {0, 7, 1}};
  ein_copy(nullptr, vr, vi);
  for (int i = 0; i < 4 * 35; ++i)
    ASSERT_EQ(rep[i].bits, i % 35);
}

//===--------------------------------------------------------------------===//
// reduce
//===--------------------------------------------------------------------===//

/// Plain-loop oracle: every output's elements combined in double (ints in
/// their own type) in index order.
template <EinReduceKind K, typename Acc, typename TO, typename TI, int R>
void checkReduce(const int64_t (&sizes)[R > 0 ? R : 1], unsigned mask,
                 std::mt19937 &rng, bool permute, bool withNaN) {
  Strided<TI, R> in(sizes, rng, permute, rng() % 2, false);
  int64_t outSizes[R > 0 ? R : 1];
  for (int d = 0; d < R; ++d)
    outSizes[d] = (mask >> d) & 1 ? 1 : sizes[d];
  Strided<TO, R> out(outSizes, rng, permute, rng() % 2, false);
  std::uniform_real_distribution<float> u(-2, 2);
  for (auto &x : in.buffer) {
    if constexpr (EinIsInt<TI>::value)
      x = TI(int64_t(rng() % 2001) - 1000) *
          TI(K == EIN_REDUCE_SUM ? 3000000 : 1);
    else
      x = ein_cvt<TI>(K == EIN_REDUCE_PROD ? 1.0f + u(rng) / 8 : u(rng));
  }
  if (withNaN)
    forEachIndex<R>(sizes, [&](const int64_t *i) {
      if (rng() % 50 == 0)
        in.at(i) = ein_cvt<TI>(NAN);
    });
  EinView<const TI, R> vi{in.view.data, {}, {}};
  for (int d = 0; d < R; ++d)
    vi.size[d] = in.view.size[d], vi.stride[d] = in.view.stride[d];
  ein_reduce<K, Acc>(nullptr, out.view, vi);

  using Ref =
      typename std::conditional<EinIsInt<Acc>::value, Acc, double>::type;
  int64_t nRed = 1;
  for (int d = 0; d < R; ++d)
    if ((mask >> d) & 1)
      nRed *= sizes[d];
  forEachIndex<R>(outSizes, [&](const int64_t *o) {
    Ref acc = K == EIN_REDUCE_PROD  ? Ref(1)
              : K == EIN_REDUCE_MAX ? -Ref(INFINITY)
              : K == EIN_REDUCE_MIN ? Ref(INFINITY)
                                    : Ref(0);
    if (EinIsInt<Acc>::value && K == EIN_REDUCE_MAX)
      acc = Ref(EinLimits<Acc>::lowest());
    if (EinIsInt<Acc>::value && K == EIN_REDUCE_MIN)
      acc = Ref(EinLimits<Acc>::highest());
    bool nan = false;
    int64_t rsizes[R > 0 ? R : 1];
    for (int d = 0; d < R; ++d)
      rsizes[d] = (mask >> d) & 1 ? sizes[d] : 1;
    forEachIndex<R>(rsizes, [&](const int64_t *r) {
      int64_t i[R > 0 ? R : 1];
      for (int d = 0; d < R; ++d)
        i[d] = (mask >> d) & 1 ? r[d] : o[d];
      Ref x = Ref(ein_cvt<Acc>(in.at(i)));
      if constexpr (!EinIsInt<Acc>::value)
        nan = nan || std::isnan(x);
      switch (K) {
      case EIN_REDUCE_PROD:
        acc = ein_mul(acc, x);
        break;
      case EIN_REDUCE_MAX:
        acc = acc > x ? acc : x;
        break;
      case EIN_REDUCE_MIN:
        acc = acc < x ? acc : x;
        break;
      default:
        acc = ein_add(acc, x);
      }
    });
    if (K == EIN_REDUCE_MEAN)
      acc = acc / Ref(nRed);
    const TO got = out.at(o);
    if constexpr (EinIsInt<Acc>::value) {
      ASSERT_EQ(got, TO(acc));
    } else {
      double g = ein_cvt<double>(got);
      if (nan) {
        ASSERT_TRUE(std::isnan(g)) << "NaN must propagate";
      } else if (K == EIN_REDUCE_MAX || K == EIN_REDUCE_MIN) {
        ASSERT_TRUE(sameFloat(g, ein_cvt<double>(ein_cvt<TO>(acc))))
            << g << " vs " << acc; // exact: no rounding in max/min
      } else if (nRed == 0 && K == EIN_REDUCE_MEAN) {
        ASSERT_TRUE(std::isnan(g));
      } else {
        // f32 accumulation in another order, then one rounding to TO.
        double tol =
            1e-5 * (1 + std::fabs(double(acc))) * std::sqrt(double(nRed) + 1) +
            std::fabs(double(acc)) * (sizeof(TO) == 2 ? 1.0 / 128 : 1e-6);
        ASSERT_NEAR(g, double(acc), tol) << "nRed " << nRed;
      }
    }
  });
}

template <EinReduceKind K> void reduceKind(std::mt19937 &rng) {
  const int64_t shapes[][3] = {{3, 33, 5}, {1000, 1, 3}, {2, 3, 1500},
                               {1, 1, 1},  {7, 0, 3},    {2, 4100, 1}};
  for (auto &s : shapes) {
    const int64_t sizes[3] = {s[0], s[1], s[2]};
    // Three of the seven non-empty axis sets per shape (the emulation
    // switches fibers with a system call: keep the test quick).
    for (unsigned pick = 0; pick < 3; ++pick) {
      const unsigned mask = 1 + rng() % 7;
      if ((K == EIN_REDUCE_MAX || K == EIN_REDUCE_MIN) && s[1] == 0 &&
          (mask & 2))
        continue; // no identity: the front end refuses these
      bool permute = rng() % 2;
      checkReduce<K, float, ein_bf16_t, ein_f16_t, 3>(sizes, mask, rng, permute,
                                                      K >= EIN_REDUCE_MAX);
      if (K != EIN_REDUCE_MEAN) {
        if (pick % 2)
          checkReduce<K, int32_t, int32_t, int32_t, 3>(sizes, mask, rng,
                                                       permute, false);
        else
          checkReduce<K, int64_t, int64_t, int64_t, 3>(sizes, mask, rng,
                                                       permute, false);
      }
      checkReduce<K, float, ein_f16_t, ein_f8e4m3_t, 3>(sizes, mask, rng,
                                                        permute, false);
    }
  }
}

// var (ein_reduce_var): two passes against a double oracle, over the inner
// and the outer axis, on data far from zero, where the one-pass
// E[x^2] - E[x]^2 in f32 would lose every digit (x^2 ~ 1e8, ulp 8).
TEST(CUDAReduceTest, VarTwoPasses) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t A = 3, B = 300;
  std::vector<float> x(A * B);
  for (float &v : x)
    v = 1.0e4f + u(rng);
  auto oracle = [&](bool inner, int64_t k) {
    int64_t n = inner ? B : A;
    auto at = [&](int64_t j) {
      return double(inner ? x[k * B + j] : x[j * B + k]);
    };
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      mean += at(j);
    mean /= double(n);
    for (int64_t j = 0; j < n; ++j)
      var += (at(j) - mean) * (at(j) - mean);
    return var / double(n);
  };
  EinView<const float, 2> in{x.data(), {A, B}, {B, 1}};
  std::vector<float> rows(A), cols(B);
  ein_reduce_var<float>(nullptr, EinView<float, 2>{rows.data(), {A, 1}, {1, 1}},
                        in);
  ein_reduce_var<float>(nullptr, EinView<float, 2>{cols.data(), {1, B}, {B, 1}},
                        in);
  for (int64_t a = 0; a < A; ++a)
    EXPECT_NEAR(rows[a], oracle(true, a), 1e-3 * oracle(true, a)) << a;
  for (int64_t b = 0; b < B; ++b)
    EXPECT_NEAR(cols[b], oracle(false, b), 1e-3 * oracle(false, b) + 1e-6) << b;
}

TEST(CUDAReduceTest, Sum) {
  std::mt19937 rng(11);
  reduceKind<EIN_REDUCE_SUM>(rng);
}
TEST(CUDAReduceTest, Mean) {
  std::mt19937 rng(12);
  reduceKind<EIN_REDUCE_MEAN>(rng);
}
TEST(CUDAReduceTest, MaxPropagatesNaN) {
  std::mt19937 rng(13);
  reduceKind<EIN_REDUCE_MAX>(rng);
}
TEST(CUDAReduceTest, MinPropagatesNaN) {
  std::mt19937 rng(14);
  reduceKind<EIN_REDUCE_MIN>(rng);
}
TEST(CUDAReduceTest, Prod) {
  std::mt19937 rng(15);
  reduceKind<EIN_REDUCE_PROD>(rng);
}

TEST(CUDAReduceTest, HigherRanksAndSplitPass) {
  std::mt19937 rng(16);
  const int64_t s5[5] = {3, 2, 5, 1, 7};
  for (unsigned mask : {1u, 5u, 18u, 31u, 26u})
    checkReduce<EIN_REDUCE_SUM, double, double, double, 5>(s5, mask, rng, true,
                                                           false);
  // Few outputs, a long outer reduction: the two-pass split.
  const int64_t tall[2] = {5000, 3};
  checkReduce<EIN_REDUCE_SUM, float, float, float, 2>(tall, 1, rng, false,
                                                      false);
  checkReduce<EIN_REDUCE_MAX, float, ein_bf16_t, ein_bf16_t, 2>(tall, 1, rng,
                                                                false, true);
  // Rank 0 (nothing to reduce) and rank 6.
  const int64_t s0[1] = {1};
  checkReduce<EIN_REDUCE_SUM, float, float, float, 0>(s0, 0, rng, false, false);
  const int64_t s6[6] = {2, 3, 1, 4, 3, 2};
  checkReduce<EIN_REDUCE_PROD, double, double, double, 6>(s6, 0x2A, rng, true,
                                                          false);
}

//===--------------------------------------------------------------------===//
// GEMM
//===--------------------------------------------------------------------===//

template <typename T> T fromDouble(double v) { return ein_cvt<T>(v); }

/// Checks ein_gemm against loops written from the row-major meaning of a
/// batched matmul: C[b] (m x n) = A[b] (m x k) @ B[b] (k x n), the
/// operands' column-major storage derived by hand.
template <typename TA, typename TD>
void checkGemm(EinDType ta, EinDType td, bool transa, bool transb, int64_t m,
               int64_t n, int64_t k, int64_t batch, double beta,
               std::mt19937 &rng, float scaleA = 1, float scaleB = 1) {
  const int64_t padA = rng() % 3, padB = rng() % 3, padC = rng() % 3;
  const int64_t lda = (transa ? k : m) + padA, ldb = (transb ? n : k) + padB;
  const int64_t ldc = m + padC;
  const int64_t sa = lda * (transa ? m : k) + 5,
                sb = ldb * (transb ? k : n) + 3;
  const int64_t sc = ldc * n + 1;
  std::vector<TA> A(sa * batch), B(sb * batch);
  std::vector<float> C(sc * batch);
  std::vector<TD> D(sc * batch);
  std::uniform_real_distribution<double> u(-2, 2);
  for (auto &x : A)
    x = fromDouble<TA>(u(rng));
  for (auto &x : B)
    x = fromDouble<TA>(u(rng));
  for (auto &x : C)
    x = float(u(rng));
  EinGemm g{};
  g.a_type = ta, g.b_type = ta == EIN_DT_F8E5M2 ? EIN_DT_F8E4M3 : ta;
  g.c_type = EIN_DT_F32, g.d_type = td;
  if (g.b_type != ta) // e5m2 x e4m3: B is e4m3
    for (auto &x : B) {
      ein_f8e4m3_t e = ein_cvt<ein_f8e4m3_t>(u(rng));
      memcpy(&x, &e, 1);
    }
  g.compute_64f = false;
  g.transa = transa, g.transb = transb, g.m = m, g.n = n, g.k = k;
  g.a = A.data(), g.lda = lda, g.stride_a = sa;
  g.b = B.data(), g.ldb = ldb, g.stride_b = sb;
  g.c = C.data(), g.ldc = ldc, g.stride_c = sc;
  g.d = D.data(), g.ldd = ldc, g.stride_d = sc;
  g.batch = batch, g.alpha = 1.5, g.beta = beta;
  g.a_scale = scaleA != 1 ? &scaleA : nullptr;
  g.b_scale = scaleB != 1 ? &scaleB : nullptr;
  ASSERT_EQ(ein_gemm_check(g), nullptr);
  ein_gemm(g, nullptr, 0, nullptr);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          // row-major A[i][p]: stored column-major as m x k (ld lda), or
          // transposed as k x m.
          double a = ein_gemm_load(
              g.a, g.a_type, b * sa + (transa ? i * lda + p : p * lda + i));
          double bb = ein_gemm_load(
              g.b, g.b_type, b * sb + (transb ? p * ldb + j : j * ldb + p));
          acc += a * bb;
        }
        double expect =
            1.5 * scaleA * scaleB * acc + beta * C[b * sc + j * ldc + i];
        double got = ein_gemm_load(D.data(), td, b * sc + j * ldc + i);
        double tol = 1e-5 * (1 + std::fabs(expect)) * std::sqrt(double(k) + 1) +
                     (td == EIN_DT_F32 ? 0 : std::fabs(expect) / 128);
        ASSERT_NEAR(got, expect, tol) << "b " << b << " i " << i << " j " << j;
      }
}

TEST(CUDAGemmTest, EveryTransposeBatchStridesAndLeadingDims) {
  std::mt19937 rng(21);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkGemm<float, float>(EIN_DT_F32, EIN_DT_F32, ta, tb, 33, 7, 65, 3, 0.5,
                              rng);
      checkGemm<float, float>(EIN_DT_F32, EIN_DT_F32, ta, tb, 1, 1, 1, 1, 0,
                              rng);
      checkGemm<ein_f16_t, float>(EIN_DT_F16, EIN_DT_F32, ta, tb, 5, 33, 3, 2,
                                  0, rng);
      checkGemm<ein_bf16_t, ein_bf16_t>(EIN_DT_BF16, EIN_DT_BF16, ta, tb, 17, 3,
                                        40, 2, -1, rng);
    }
}

TEST(CUDAGemmTest, Fp8TNWithScales) {
  std::mt19937 rng(22);
  checkGemm<ein_f8e4m3_t, float>(EIN_DT_F8E4M3, EIN_DT_F32, true, false, 32, 16,
                                 48, 2, 0, rng, 0.5f, 4.0f);
  checkGemm<ein_f8e4m3_t, ein_bf16_t>(EIN_DT_F8E4M3, EIN_DT_BF16, true, false,
                                      16, 3, 16, 1, 1, rng);
  checkGemm<ein_f8e5m2_t, ein_f16_t>(EIN_DT_F8E5M2, EIN_DT_F16, true, false, 16,
                                     8, 32, 1, 0, rng);
}

TEST(CUDAGemmTest, F64AndEmptyK) {
  // f64 in f64, and k = 0: D = beta * C.
  std::vector<double> A(6, 1.0), B(6, 2.0), C(4, 3.0), D(4);
  EinGemm g{};
  g.a_type = g.b_type = g.c_type = g.d_type = EIN_DT_F64;
  g.compute_64f = true;
  g.m = 2, g.n = 2, g.k = 3, g.lda = 2, g.ldb = 3, g.ldc = 2, g.ldd = 2;
  g.a = A.data(), g.b = B.data(), g.c = C.data(), g.d = D.data();
  g.batch = 1, g.alpha = 1, g.beta = 1;
  ein_gemm(g, nullptr, 0, nullptr);
  for (double x : D)
    EXPECT_EQ(x, 9.0);
  g.k = 0;
  ein_gemm(g, nullptr, 0, nullptr);
  for (double x : D)
    EXPECT_EQ(x, 3.0);
}

TEST(CUDAGemmTest, CheckRefusesWhatCuBLASLtWould) {
  EinGemm g{};
  g.a_type = g.b_type = EIN_DT_F8E4M3;
  g.c_type = g.d_type = EIN_DT_F32;
  g.m = g.n = g.k = 16, g.lda = g.ldb = g.ldc = g.ldd = 16, g.batch = 1;
  g.transa = false; // NN: not TN
  EXPECT_STREQ(ein_gemm_check(g), "fp8 needs the TN form (transa, !transb)");
  g.transa = true;
  EXPECT_EQ(ein_gemm_check(g), nullptr);
  g.lda = 8;
  EXPECT_NE(ein_gemm_check(g), nullptr);
  g.lda = 16, g.a_type = g.b_type = EIN_DT_F8E5M2;
  EXPECT_NE(ein_gemm_check(g), nullptr);
  g.a_type = EIN_DT_F16, g.b_type = EIN_DT_BF16;
  EXPECT_NE(ein_gemm_check(g), nullptr);
  EXPECT_DEATH(ein_gemm(g, nullptr, 0, nullptr), "A and B need one dtype");
}

} // namespace

// ein_contract: a pairwise contraction over strided views through the plan
// (ein_gemm_plan.h), copies where the plan asks, and the reference GEMM
// standing in for cuBLASLt; compared with the sum computed from the views.
namespace {

/// `b m k, b k n -> b m n` style roles for rank-3 operands whose axes are
/// (batch, m, k), (batch, k, n), (batch, m, n) in memory order given by
/// the views' strides.
EinGemmRoles bmmRoles() {
  EinGemmRoles r{};
  r.batch = r.m = r.n = r.k = 1;
  r.aBatch[0] = 0, r.aM[0] = 1, r.aK[0] = 2;
  r.bBatch[0] = 0, r.bK[0] = 1, r.bN[0] = 2;
  r.cBatch[0] = 0, r.cM[0] = 1, r.cN[0] = 2;
  return r;
}

template <typename TA, typename TC>
void checkBmm(std::mt19937 &rng, int64_t B, int64_t M, int64_t N, int64_t K,
              bool permuteC, int expectCopies) {
  using namespace ein_cuda_test;
  const int64_t as[3] = {B, M, K}, bs[3] = {B, K, N}, cs[3] = {B, M, N};
  Strided<TA, 3> a(as, rng, true, true, false), b(bs, rng, true, true, false);
  Strided<TC, 3> c(cs, rng, permuteC, true, false);
  forEachIndex<3>(as, [&](const int64_t *i) {
    a.at(i) = ein_cvt<TA>(float(int(rng() % 7) - 3));
  });
  forEachIndex<3>(bs, [&](const int64_t *i) {
    b.at(i) = ein_cvt<TA>(float(int(rng() % 7) - 3));
  });
  EinContractStats stats = ein_contract(
      nullptr, bmmRoles(),
      EinView<const TA, 3>{a.view.data, {B, M, K},
                           {a.view.stride[0], a.view.stride[1],
                            a.view.stride[2]}},
      EinView<const TA, 3>{b.view.data, {B, K, N},
                           {b.view.stride[0], b.view.stride[1],
                            b.view.stride[2]}},
      c.view, false, nullptr, 0);
  if (expectCopies >= 0) {
    EXPECT_EQ(stats.copies, expectCopies);
  }
  forEachIndex<3>(cs, [&](const int64_t *i) {
    double want = 0;
    for (int64_t k = 0; k < K; ++k) {
      int64_t ia[3] = {i[0], i[1], k}, ib[3] = {i[0], k, i[2]};
      want += double(ein_cvt<float>(a.at(ia))) * ein_cvt<float>(b.at(ib));
    }
    ASSERT_EQ(double(ein_cvt<float>(c.at(i))), want)
        << "at " << i[0] << "," << i[1] << "," << i[2] << " B=" << B
        << " M=" << M << " N=" << N << " K=" << K;
  });
}

} // namespace

TEST(CUDAContractTest, PermutedAndPaddedViewsMatchTheSum) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 60; ++trial) {
    int64_t B = 1 + rng() % 3, M = 1 + rng() % 9, N = 1 + rng() % 9,
            K = rng() % 9;
    checkBmm<float, float>(rng, B, M, N, K, true, -1);
    checkBmm<ein_f16_t, float>(rng, B, M, N, K, true, -1);
  }
}

TEST(CUDAContractTest, IntegersThroughTheTiledKernel) {
  // cuBLASLt has no i32/i64 GEMM: the runtime's tiled kernel, at sizes
  // that cross its 16 x 16 tiles and with views that swap or copy.
  std::mt19937 rng(8);
  for (int trial = 0; trial < 12; ++trial) {
    int64_t B = 1 + rng() % 2, M = 1 + rng() % 37, N = 1 + rng() % 37,
            K = rng() % 40;
    checkBmm<int32_t, int32_t>(rng, B, M, N, K, true, -1);
    checkBmm<int64_t, int64_t>(rng, B, M, N, K, true, -1);
  }
}

TEST(CUDAContractTest, ContiguousOperandsNeedNoCopy) {
  // Row-major everything: C^T = B^T A^T reads both in place.
  std::mt19937 rng(6);
  using namespace ein_cuda_test;
  const int64_t B = 2, M = 5, N = 7, K = 3;
  std::vector<float> a(B * M * K), b(B * K * N), c(B * M * N, -1.0f);
  for (auto &x : a)
    x = float(int(rng() % 5) - 2);
  for (auto &x : b)
    x = float(int(rng() % 5) - 2);
  EinContractStats stats = ein_contract(
      nullptr, bmmRoles(),
      EinView<const float, 3>{a.data(), {B, M, K}, {M * K, K, 1}},
      EinView<const float, 3>{b.data(), {B, K, N}, {K * N, N, 1}},
      EinView<float, 3>{c.data(), {B, M, N}, {M * N, N, 1}}, false, nullptr,
      0);
  EXPECT_EQ(stats.copies, 0);
  EXPECT_EQ(stats.gemmCalls, 1);
  for (int64_t q = 0; q < B; ++q)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float want = 0;
        for (int64_t k = 0; k < K; ++k)
          want += a[q * M * K + i * K + k] * b[q * K * N + k * N + j];
        ASSERT_EQ(c[q * M * N + i * N + j], want);
      }
}

TEST(CUDAContractTest, EmptyKGivesZerosAndFp8IsCopiedToTN) {
  std::mt19937 rng(7);
  checkBmm<float, float>(rng, 2, 3, 4, 0, false, -1);
  // fp8 operands laid out row-major (B n-contiguous): B is copied so that
  // cuBLASLt's FP8 path gets the TN form, and the answer stays exact.
  using namespace ein_cuda_test;
  const int64_t M = 4, N = 6, K = 5;
  std::vector<ein_f8e4m3_t> a(M * K), b(K * N);
  std::vector<float> af(M * K), bf(K * N), c(M * N);
  for (int64_t i = 0; i < M * K; ++i)
    af[i] = float(int(rng() % 5) - 2), a[i] = ein_cvt<ein_f8e4m3_t>(af[i]);
  for (int64_t i = 0; i < K * N; ++i)
    bf[i] = float(int(rng() % 5) - 2), b[i] = ein_cvt<ein_f8e4m3_t>(bf[i]);
  EinGemmRoles r{};
  r.m = r.n = r.k = 1;
  r.aM[0] = 0, r.aK[0] = 1, r.bK[0] = 0, r.bN[0] = 1, r.cM[0] = 0,
  r.cN[0] = 1;
  EinContractStats stats = ein_contract(
      nullptr, r, EinView<const ein_f8e4m3_t, 2>{a.data(), {M, K}, {K, 1}},
      EinView<const ein_f8e4m3_t, 2>{b.data(), {K, N}, {N, 1}},
      EinView<float, 2>{c.data(), {M, N}, {N, 1}}, false, nullptr, 0);
  EXPECT_EQ(stats.copies, EIN_GEMM_COPY_B);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += af[i * K + k] * bf[k * N + j];
      ASSERT_EQ(c[i * N + j], want);
    }
}

TEST(CUDAContractTest, EpilogueInCuBLASLtOrAKernel) {
  // C = relu(alpha * A B + bias), the bias along C's rows or columns, C
  // row-major (the plan swaps: the GEMM's m is C's n) or column-major:
  // cuBLASLt's epilogue when the bias runs along the GEMM's m, the kernel
  // otherwise; the same numbers either way (small integers: exact).
  std::mt19937 rng(9);
  const int64_t M = 5, N = 7, K = 4;
  std::vector<float> a(M * K), b(K * N), bm(M), bn(N);
  for (auto *v : {&a, &b, &bm, &bn})
    for (auto &x : *v)
      x = float(int(rng() % 7) - 3);
  EinGemmRoles r{};
  r.m = r.n = r.k = 1;
  r.aM[0] = 0, r.aK[0] = 1, r.bK[0] = 0, r.bN[0] = 1, r.cM[0] = 0, r.cN[0] = 1;
  for (bool rowMajor : {true, false})
    for (bool alongN : {true, false})
      for (int bits : {int(EIN_EPI_BIAS | EIN_EPI_RELU), int(EIN_EPI_BIAS),
                       int(EIN_EPI_RELU), 0}) {
        std::vector<float> c(M * N, -100.0f);
        EinView<float, 2> cv{c.data(), {M, N}, {1, 1}};
        cv.stride[0] = rowMajor ? N : 1, cv.stride[1] = rowMajor ? 1 : M;
        EinEpilogue<float, 2> epi;
        epi.bits = bits;
        epi.alpha = 0.5;
        epi.bias = alongN ? EinView<const float, 2>{bn.data(), {M, N}, {0, 1}}
                          : EinView<const float, 2>{bm.data(), {M, N}, {1, 0}};
        EinContractStats stats = ein_contract(
            nullptr, r, EinView<const float, 2>{a.data(), {M, K}, {K, 1}},
            EinView<const float, 2>{b.data(), {K, N}, {N, 1}}, cv, false,
            nullptr, 0, epi);
        bool inGemm = bits && (!(bits & EIN_EPI_BIAS) || rowMajor == alongN);
        EXPECT_EQ(stats.epilogueInGemm, inGemm) << rowMajor << alongN << bits;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            float want = 0;
            for (int64_t k = 0; k < K; ++k)
              want += a[i * K + k] * b[k * N + j];
            want *= 0.5f;
            if (bits & EIN_EPI_BIAS)
              want += alongN ? bn[j] : bm[i];
            if (bits & EIN_EPI_RELU)
              want = want > 0 ? want : 0;
            ASSERT_EQ(c[i * cv.stride[0] + j * cv.stride[1]], want)
                << i << "," << j << " rowMajor=" << rowMajor
                << " alongN=" << alongN << " bits=" << bits;
          }
      }
}
