/* Calls the entry point `einc build` made from zero-size.ein (k = 0): empty
 * tensors may come as null pointers with any strides; the results are
 * numpy's (zeros for the empty contraction, ones for the empty product). */
#include "zero-size.h"

#include <stdio.h>

int main(void) {
  const int64_t xs[] = {4, 0}, ws[] = {0, 3}, ys[] = {4, 3}, ms[] = {0},
                ps[] = {4};
  const int64_t odd[] = {7, 7}, yst[] = {3, 1}, one[] = {1};
  float y[12], p[4];
  int i, rc, bad = 0;
  for (i = 0; i < 12; ++i)
    y[i] = -1.0f;
  for (i = 0; i < 4; ++i)
    p[i] = -1.0f;
  rc = ein_f(NULL, 2, xs, odd, NULL, 2, ws, odd, y, 2, ys, yst, NULL, 1, ms,
             one, p, 1, ps, one);
  for (i = 0; i < 12; ++i)
    bad |= y[i] != 0.0f;
  for (i = 0; i < 4; ++i)
    bad |= p[i] != 1.0f;
  printf("empty: rc=%d zeros-and-ones=%s\n", rc, bad ? "no" : "yes");
  /* A non-empty tensor still needs its data. */
  printf("null output: rc=%d\n",
         ein_f(NULL, 2, xs, odd, NULL, 2, ws, odd, NULL, 2, ys, yst, NULL, 1,
               ms, one, p, 1, ps, one));
  return 0;
}
