/* Calls the entry point `einc build` made from slice/model.ein's first_k
 * (x[:k] of x: seq d, k the size of y): k = 2 <= seq = 5 copies the rows;
 * k = 7 > seq fails the entry check k <= seq: EIN_ERR_SIZE, and the output
 * is left untouched (no read past x). */
#include "slice.h"

#include <stdio.h>

int main(void) {
  float x[15], y[7] = {0}, out[21];
  const int64_t xs[2] = {5, 3}, xst[2] = {3, 1};
  const int64_t ys2[1] = {2}, ys7[1] = {7}, yst[1] = {1};
  const int64_t os2[2] = {2, 3}, os7[2] = {7, 3}, ost[2] = {3, 1};
  int i, rc, same = 1, untouched = 1;
  for (i = 0; i < 15; ++i)
    x[i] = (float)i;
  rc = ein_first_k(x, 2, xs, xst, y, 1, ys2, yst, out, 2, os2, ost);
  for (i = 0; i < 6; ++i)
    same &= out[i] == x[i];
  printf("k=2: rc=%d same=%s\n", rc, same ? "yes" : "no");
  for (i = 0; i < 21; ++i)
    out[i] = -7.0f;
  rc = ein_first_k(x, 2, xs, xst, y, 1, ys7, yst, out, 2, os7, ost);
  for (i = 0; i < 21; ++i)
    untouched &= out[i] == -7.0f;
  printf("k=7: rc=%d untouched=%s\n", rc, untouched ? "yes" : "no");
  return 0;
}
