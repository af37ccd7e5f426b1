/* Calls the entry point `einc build --rank batch=2` made from
 * variadic-rank.ein, size-generic: y[b0, b1, m] = sum_n x[b0, b1, n] w[n, m]
 * at two sizes (x transposed in memory at the second), compared with a loop
 * nest; a call with x of rank 3 or 1 (another rank of *batch) returns
 * EIN_ERR_RANK and writes nothing. */
#include "variadic-rank.h"

#include <math.h>
#include <stdio.h>

static int run(int64_t b0, int64_t b1, int64_t n, int64_t m, int transposed) {
  float x[64], w[64], y[64], ref;
  int64_t xs[3], xst[3], ws[2], wst[2], ys[3], yst[3], i, j, k, p;
  int rc;
  double err = 0;
  xs[0] = b0, xs[1] = b1, xs[2] = n;
  /* Transposed: x's dims stored in the order n, b1, b0. */
  if (transposed)
    xst[0] = 1, xst[1] = b0, xst[2] = b0 * b1;
  else
    xst[0] = b1 * n, xst[1] = n, xst[2] = 1;
  ws[0] = n, ws[1] = m, wst[0] = m, wst[1] = 1;
  ys[0] = b0, ys[1] = b1, ys[2] = m, yst[0] = b1 * m, yst[1] = m, yst[2] = 1;
  for (i = 0; i < 64; ++i)
    x[i] = (float)((i * 7) % 11) - 5.0f, w[i] = (float)((i * 5) % 9) - 4.0f;
  rc = ein_f(x, 3, xs, xst, w, 2, ws, wst, y, 3, ys, yst);
  for (i = 0; i < b0; ++i)
    for (j = 0; j < b1; ++j)
      for (k = 0; k < m; ++k) {
        ref = 0;
        for (p = 0; p < n; ++p)
          ref += x[i * xst[0] + j * xst[1] + p * xst[2]] * w[p * m + k];
        err = fmax(err, fabs(y[i * yst[0] + j * yst[1] + k] - ref));
      }
  printf("%lldx%lldx%lldx%lld%s: rc=%d max_abs_error=%g\n", (long long)b0,
         (long long)b1, (long long)n, (long long)m,
         transposed ? " (x transposed)" : "", rc, err);
  return rc == EIN_OK && err == 0;
}

int main(void) {
  float x[8] = {0}, w[8] = {0}, y[8];
  const int64_t xs4[4] = {1, 1, 2, 2}, xst4[4] = {4, 4, 2, 1};
  const int64_t xs2[2] = {2, 2}, xst2[2] = {2, 1};
  const int64_t ws[2] = {2, 2}, wst[2] = {2, 1};
  const int64_t ys[3] = {1, 2, 2}, yst[3] = {4, 2, 1};
  int ok = run(2, 3, 4, 5, 0) & run(3, 1, 5, 2, 1), rc3, rc1, i;
  for (i = 0; i < 8; ++i)
    y[i] = -7.0f;
  /* x with *batch of rank 3, then rank 1 (x of rank 4 and 2). */
  rc3 = ein_f(x, 4, xs4, xst4, w, 2, ws, wst, y, 3, ys, yst);
  rc1 = ein_f(x, 2, xs2, xst2, w, 2, ws, wst, y, 3, ys, yst);
  for (i = 0; i < 8; ++i)
    ok &= y[i] == -7.0f;
  printf("other ranks: rc=%d rc=%d untouched=%s\n", rc3, rc1,
         ok ? "yes" : "no");
  return !(ok && rc3 == EIN_ERR_RANK && rc1 == EIN_ERR_RANK);
}
