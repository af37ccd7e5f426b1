/* Calls the einc build entry point of a function named 转置 (C name
   ein__u8f6c_u7f6e) from test/run/unicode-names.ein and prints its result. */
#include "u.h"

#include <stdio.h>

int main(void) {
  float x[6] = {0, 1, 2, 3, 4, 5}, out[6];
  const int64_t xSizes[2] = {2, 3}, xStrides[2] = {3, 1};
  const int64_t outSizes[2] = {3, 2}, outStrides[2] = {2, 1};
  int rc = ein__u8f6c_u7f6e(x, 2, xSizes, xStrides, out, 2, outSizes,
                            outStrides);
  if (rc != EIN_OK) {
    fprintf(stderr, "rc=%d\n", rc);
    return 1;
  }
  for (int i = 0; i < 6; ++i)
    printf("%g\n", out[i]);
  return 0;
}
