// The CUDA runtime's row kernel (ein_rows, Runtime/ein_cuda_rows.cuh) in
// emulation: softmax and LayerNorm functors, written as the emitter writes
// them, against plain double loops, over rows of 1 to 9000 elements (a
// warp per row, a block per row, registers or re-reads), strided and
// broadcast views.
#include "CUDARuntimeTestUtil.h"

#include <gtest/gtest.h>

namespace {

/// softmax along the row: max, then the sum of exp(x - max).
struct Softmax {
  using Acc = float;
  static constexpr int stages = 2;
  static constexpr EinReduceKind kinds[2] = {EIN_REDUCE_MAX, EIN_REDUCE_SUM};
  static constexpr int values = 0;
  EIN_HD void operator()(EinRowValues, float *) const {}
  EIN_HD float operator()(EinStage<0>, const float *, float x) const {
    return x;
  }
  EIN_HD float operator()(EinStage<1>, const float *r, float x) const {
    return expf(x - r[0]);
  }
  EIN_HD float operator()(const float *r, float x) const {
    return expf(x - r[0]) / r[1];
  }
};

/// LayerNorm with a gain along the row: the mean, then the mean of the
/// squared deviations from it; 1 / sqrt(var + eps) once per row.
struct LayerNorm {
  using Acc = float;
  static constexpr int stages = 2;
  static constexpr EinReduceKind kinds[2] = {EIN_REDUCE_MEAN, EIN_REDUCE_MEAN};
  static constexpr int values = 1;
  EIN_HD void operator()(EinRowValues, float *r) const {
    r[2] = 1.0f / sqrtf(r[1] + 1e-5f);
  }
  EIN_HD float operator()(EinStage<0>, const float *, float x, float) const {
    return x;
  }
  EIN_HD float operator()(EinStage<1>, const float *r, float x, float) const {
    return (x - r[0]) * (x - r[0]);
  }
  EIN_HD float operator()(const float *r, float x, float g) const {
    return (x - r[0]) * r[2] * g;
  }
};

/// Runs Softmax over `rows` rows of `n` elements, the input's rows
/// `gap` elements apart (a padded slice), and checks every element.
void checkSoftmax(int64_t rows, int64_t n, int64_t gap) {
  std::mt19937 rng(unsigned(rows * 31 + n));
  std::uniform_real_distribution<float> u(-8, 8);
  std::vector<float> x(size_t(rows * gap)), y(size_t(rows * n), -1.0f);
  for (float &v : x)
    v = u(rng);
  ein_rows(nullptr, Softmax(), EinView<float, 2>{y.data(), {rows, n}, {n, 1}},
           EinView<const float, 2>{x.data(), {rows, n}, {gap, 1}});
  for (int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; ++j)
      m = std::max(m, double(x[i * gap + j]));
    for (int64_t j = 0; j < n; ++j)
      s += std::exp(double(x[i * gap + j]) - m);
    for (int64_t j = 0; j < n; ++j)
      ASSERT_NEAR(y[i * n + j], std::exp(double(x[i * gap + j]) - m) / s, 1e-6)
          << rows << " rows of " << n << ": " << i << ", " << j;
  }
}

TEST(CUDARowsTest, SoftmaxWarpAndBlockRowsRegistersAndRereads) {
  // n <= 128: a warp per row; longer: a block; over 8 * 1024: re-read.
  for (int64_t n : {1, 7, 33, 128, 129, 1000, 9000})
    checkSoftmax(n > 1000 ? 2 : 11, n, n + 3);
}

TEST(CUDARowsTest, LayerNormBroadcastGainAndPermutedRows) {
  // x is [b, s, d] stored as [s, b, d]; the gain [d] broadcasts (stride 0).
  const int64_t B = 3, S = 5, D = 37;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(size_t(B * S * D)), g(static_cast<size_t>(D)),
      y(size_t(B * S * D));
  for (float &v : x)
    v = 100.0f + u(rng);
  for (float &v : g)
    v = u(rng);
  ein_rows(nullptr, LayerNorm(),
           EinView<float, 3>{y.data(), {B, S, D}, {S * D, D, 1}},
           EinView<const float, 3>{x.data(), {B, S, D}, {D, B * D, 1}},
           EinView<const float, 3>{g.data(), {B, S, D}, {0, 0, 1}});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const float *row = &x[size_t((s * B + b) * D)];
      double mean = 0, var = 0;
      for (int64_t d = 0; d < D; ++d)
        mean += row[d];
      mean /= D;
      for (int64_t d = 0; d < D; ++d)
        var += (row[d] - mean) * (row[d] - mean);
      var /= D;
      for (int64_t d = 0; d < D; ++d)
        ASSERT_NEAR(y[size_t((b * S + s) * D + d)],
                    (row[d] - mean) / std::sqrt(var + 1e-5) * g[size_t(d)],
                    2e-4)
            << b << ", " << s << ", " << d;
    }
}

TEST(CUDARowsTest, EmptyRowsAndRankOne) {
  std::vector<float> y(4, -1.0f), x = {1, 2, 3, 4};
  // No rows: nothing is written (and nothing is launched).
  ein_rows(nullptr, Softmax(), EinView<float, 2>{y.data(), {0, 4}, {4, 1}},
           EinView<const float, 2>{x.data(), {0, 4}, {4, 1}});
  EXPECT_EQ(y[0], -1.0f);
  // Rank 1: one row.
  ein_rows(nullptr, Softmax(), EinView<float, 1>{y.data(), {4}, {1}},
           EinView<const float, 1>{x.data(), {4}, {1}});
  double s = 0;
  for (float v : x)
    s += std::exp(v - 4.0);
  for (int j = 0; j < 4; ++j)
    EXPECT_NEAR(y[size_t(j)], std::exp(x[size_t(j)] - 4.0) / s, 1e-6);
}

} // namespace
