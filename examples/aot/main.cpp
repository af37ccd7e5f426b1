// Links the object file `einc build` made from layer.ein and checks it
// against a plain loop nest at three sizes, with strided views (a transposed
// input, a broadcast input, an output written into a slice of a larger
// buffer), then checks the entry point's error codes.
#include "layer.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

/// A strided view of `storage`: element (i, j) is at i * rowStride + j *
/// colStride.
struct View {
  float *data;
  int64_t sizes[2], strides[2];
  float at(int64_t i, int64_t j) const {
    return data[i * strides[0] + j * strides[1]];
  }
};

float input(int64_t i) { return static_cast<float>((i * 7) % 11) - 5.0f; }

/// Runs relu(x w + b) for n x k by k x m with x transposed in memory (or a
/// broadcast of one row), w contiguous and the result written into every
/// other column of a wider buffer; returns the largest error against loops.
double runAt(int64_t n, int64_t k, int64_t m, bool broadcastX, int &rc) {
  std::vector<float> xStore(n * k), w(k * m), b(m);
  for (int64_t i = 0; i < n * k; ++i)
    xStore[i] = input(i);
  for (int64_t i = 0; i < k * m; ++i)
    w[i] = static_cast<float>((i * 5) % 9) * 0.25f - 1.0f;
  for (int64_t i = 0; i < m; ++i)
    b[i] = 0.5f * static_cast<float>(i) - 0.5f;
  // x: stored as k x n (column-major n x k), or one row repeated (stride 0).
  View x = broadcastX ? View{xStore.data(), {n, k}, {0, 1}}
                      : View{xStore.data(), {n, k}, {1, n}};
  // y: rows of 2 * m + 1 floats, the result in columns 0, 2, 4, ...
  std::vector<float> yStore(n * (2 * m + 1), -7.0f);
  View y{yStore.data(), {n, m}, {2 * m + 1, 2}};
  const int64_t ws[] = {k, m}, wst[] = {m, 1}, bs[] = {m}, bst[] = {1};
  rc = ein_layer(x.data, 2, x.sizes, x.strides, w.data(), 2, ws, wst, b.data(),
                 1, bs, bst, y.data, 2, y.sizes, y.strides);
  double maxError = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += x.at(i, p) * w[p * m + j];
      acc += b[j];
      float ref = acc > 0 ? acc : 0;
      maxError = std::fmax(maxError, std::fabs(y.at(i, j) - ref));
    }
  // The columns between the result's must be untouched.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 1; j < 2 * m + 1; j += 2)
      if (yStore[i * (2 * m + 1) + j] != -7.0f)
        maxError = INFINITY;
  return maxError;
}

} // namespace

int main() {
  bool ok = true;
  const int64_t sizes[][3] = {{4, 8, 3}, {37, 53, 29}, {1, 300, 70}};
  for (auto &s : sizes)
    for (bool broadcast : {false, true}) {
      int rc = -1;
      double error = runAt(s[0], s[1], s[2], broadcast, rc);
      std::printf("layer %lldx%lldx%lld%s: rc=%d max_abs_error=%g\n",
                  (long long)s[0], (long long)s[1], (long long)s[2],
                  broadcast ? " (broadcast x)" : "", rc, error);
      ok &= rc == EIN_OK && error <= 1e-4;
    }

  const int64_t n = 4, k = 8, m = 3;
  std::vector<float> x(n * k, 1.0f), w(k * m, 1.0f), b(m, 1.0f), y(n * m);
  const int64_t xs[] = {n, k}, xst[] = {k, 1};
  const int64_t ws[] = {k, m}, wst[] = {m, 1};
  const int64_t bs[] = {m}, bst[] = {1};
  const int64_t ys[] = {n, m}, yst[] = {m, 1};
  const int64_t wrongSizes[] = {k + 1, m}; // k disagrees with x's
  int sizeRc = ein_layer(x.data(), 2, xs, xst, w.data(), 2, wrongSizes, wst,
                         b.data(), 1, bs, bst, y.data(), 2, ys, yst);
  const int64_t negative[] = {-k, 1};
  int strideRc = ein_layer(x.data(), 2, xs, negative, w.data(), 2, ws, wst,
                           b.data(), 1, bs, bst, y.data(), 2, ys, yst);
  const int64_t selfOverlap[] = {0, 1}; // every row of y at one address
  int overlapRc = ein_layer(x.data(), 2, xs, xst, w.data(), 2, ws, wst,
                            b.data(), 1, bs, bst, y.data(), 2, ys, selfOverlap);
  int nullRc = ein_layer(nullptr, 2, xs, xst, w.data(), 2, ws, wst, b.data(), 1,
                         bs, bst, y.data(), 2, ys, yst);
  int aliasRc = ein_layer(x.data(), 2, xs, xst, w.data(), 2, ws, wst, b.data(),
                          1, bs, bst, x.data(), 2, ys, yst); // y over x
  // b passed as a 1 x m matrix: the rank is checked before any size is read.
  int rankRc = ein_layer(x.data(), 2, xs, xst, w.data(), 2, ws, wst, b.data(),
                         2, ys + 1, yst, y.data(), 2, ys, yst);
  std::printf(
      "errors: size=%d stride=%d self-overlap=%d null=%d alias=%d rank=%d\n",
      sizeRc, strideRc, overlapRc, nullRc, aliasRc, rankRc);
  ok &= sizeRc == EIN_ERR_SIZE && strideRc == EIN_ERR_STRIDE &&
        overlapRc == EIN_ERR_STRIDE && nullRc == EIN_ERR_NULL &&
        aliasRc == EIN_ERR_ALIAS && rankRc == EIN_ERR_RANK;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
