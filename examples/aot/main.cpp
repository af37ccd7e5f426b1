// Links the object file `einc build` made from layer.ein and checks it
// against a plain loop nest, then checks the entry point's error codes.
#include "layer.h"

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const int64_t n = 4, k = 8, m = 3;
  std::vector<float> x(n * k), w(k * m), b(m), y(n * m, -1.0f), ref(n * m);
  for (int64_t i = 0; i < n * k; ++i)
    x[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  for (int64_t i = 0; i < k * m; ++i)
    w[i] = static_cast<float>((i * 5) % 9) * 0.25f - 1.0f;
  for (int64_t i = 0; i < m; ++i)
    b[i] = 0.5f * static_cast<float>(i) - 0.5f;
  // The oracle: relu(x w + b) with loops.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += x[i * k + p] * w[p * m + j];
      acc += b[j];
      ref[i * m + j] = acc > 0 ? acc : 0;
    }
  const int64_t xs[] = {n, k}, xst[] = {k, 1};
  const int64_t ws[] = {k, m}, wst[] = {m, 1};
  const int64_t bs[] = {m}, bst[] = {1};
  const int64_t ys[] = {n, m}, yst[] = {m, 1};
  int rc = ein_layer(x.data(), xs, xst, w.data(), ws, wst, b.data(), bs, bst,
                     y.data(), ys, yst);
  double maxError = 0;
  for (int64_t i = 0; i < n * m; ++i)
    maxError = std::fmax(maxError, std::fabs(y[i] - ref[i]));
  std::printf("layer: rc=%d max_abs_error=%g\n", rc, maxError);

  const int64_t wrongSizes[] = {n + 1, k};
  int sizeRc = ein_layer(x.data(), wrongSizes, xst, w.data(), ws, wst,
                         b.data(), bs, bst, y.data(), ys, yst);
  const int64_t transposed[] = {1, n};
  int strideRc = ein_layer(x.data(), xs, transposed, w.data(), ws, wst,
                           b.data(), bs, bst, y.data(), ys, yst);
  int nullRc = ein_layer(nullptr, xs, xst, w.data(), ws, wst, b.data(), bs,
                         bst, y.data(), ys, yst);
  std::printf("errors: size=%d stride=%d null=%d\n", sizeRc, strideRc, nullRc);
  bool ok = rc == EIN_OK && maxError <= 1e-5 && sizeRc == EIN_ERR_SIZE &&
            strideRc == EIN_ERR_STRIDE && nullRc == EIN_ERR_NULL;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
