/* Calls the C entry of take/model.ein's `embed` built by `einc build`:
 * good ids gather the table's rows (checked against direct indexing), ids
 * out of range (too large, negative) return EIN_ERR_INDEX. */
#include <stdio.h>

#include "take.h"

static int call(const float *table, const int64_t *ids, float *out) {
  const int64_t tsizes[2] = {5, 3}, tstrides[2] = {3, 1};
  const int64_t isizes[2] = {2, 2}, istrides[2] = {2, 1};
  const int64_t osizes[3] = {2, 2, 3}, ostrides[3] = {6, 3, 1};
  return ein_embed(table, 2, tsizes, tstrides, ids, 2, isizes, istrides, out,
                   3, osizes, ostrides);
}

int main(void) {
  float table[15], out[12];
  int i, j, bad = 0;
  for (i = 0; i < 15; ++i)
    table[i] = (float)(i * i) - 7.5f;
  const int64_t good[4] = {4, 0, 2, 4}, large[4] = {0, 5, 1, 2},
                negative[4] = {0, 1, -1, 2};
  int rc = call(table, good, out);
  for (i = 0; i < 4; ++i)
    for (j = 0; j < 3; ++j)
      bad += out[i * 3 + j] != table[good[i] * 3 + j];
  printf("good: rc=%d mismatches=%d\n", rc, bad);
  printf("too large: rc=%d\n", call(table, large, out));
  printf("negative: rc=%d\n", call(table, negative, out));
  printf("EIN_ERR_INDEX=%d\n", EIN_ERR_INDEX);
  return 0;
}
