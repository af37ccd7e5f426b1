/* Calls ein_gated_mlp, built by `einc build examples/gated_mlp.ein` without
 * --rank (its variadic helpers rmsnorm and dense are skipped, inlined into
 * it), at batch 2, seq 3, hidden 4, ffn 5, and compares it with the block
 * computed here in double: h = x * rsqrt(mean(x^2) + 1e-6) * g, then
 * x + (silu(h w_gate) * (h w_up)) w_down. Prints rc and the largest
 * error relative to the largest output. */
#include "gated-mlp.h"

#include <math.h>
#include <stdio.h>

enum { B = 2, S = 3, H = 4, F = 5 };

int main(void) {
  float x[B * S * H], g[H], wg[H * F], wu[H * F], wd[F * H], y[B * S * H];
  const int64_t xs[3] = {B, S, H}, xst[3] = {S * H, H, 1};
  const int64_t gs[1] = {H}, gst[1] = {1};
  const int64_t hfs[2] = {H, F}, hfst[2] = {F, 1};
  const int64_t fhs[2] = {F, H}, fhst[2] = {H, 1};
  double err = 0, largest = 0;
  int i, j, k, t, rc;
  for (i = 0; i < B * S * H; ++i)
    x[i] = (float)((i * 7) % 13) / 6.0f - 1.0f;
  for (i = 0; i < H; ++i)
    g[i] = 0.5f + 0.25f * (float)i;
  for (i = 0; i < H * F; ++i) {
    wg[i] = (float)((i * 5) % 11) / 10.0f - 0.5f;
    wu[i] = (float)((i * 3) % 7) / 6.0f - 0.5f;
    wd[i] = (float)((i * 9) % 17) / 16.0f - 0.5f;
  }
  rc = ein_gated_mlp(x, 3, xs, xst, g, 1, gs, gst, wg, 2, hfs, hfst, wu, 2, hfs,
                     hfst, wd, 2, fhs, fhst, y, 3, xs, xst);
  for (t = 0; t < B * S; ++t) {
    const float *xt = x + t * H;
    double ms = 0, h[H], a[F];
    for (i = 0; i < H; ++i)
      ms += (double)xt[i] * xt[i];
    ms /= H;
    for (i = 0; i < H; ++i)
      h[i] = xt[i] / sqrt(ms + 1e-6) * g[i];
    for (j = 0; j < F; ++j) {
      double gate = 0, up = 0;
      for (i = 0; i < H; ++i)
        gate += h[i] * wg[i * F + j], up += h[i] * wu[i * F + j];
      a[j] = gate / (1 + exp(-gate)) * up;
    }
    for (i = 0; i < H; ++i) {
      double ref = xt[i];
      for (k = 0; k < F; ++k)
        ref += a[k] * wd[k * H + i];
      err = fmax(err, fabs(y[t * H + i] - ref));
      largest = fmax(largest, fabs(ref));
    }
  }
  printf("gated_mlp: rc=%d relative_error_ok=%s\n", rc,
         err <= 1e-5 * largest ? "yes" : "no");
  return rc != EIN_OK || err > 1e-5 * largest;
}
