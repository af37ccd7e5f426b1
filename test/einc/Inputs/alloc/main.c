/* Calls an einc build softmax twice and checks it against a softmax in
 * double. With -DOWN_ALLOCATOR the program defines the generic allocation
 * functions itself, and the object's temporaries must come from them (its
 * weak definitions over malloc give way); without, the weak ones link. */
#include "softmax.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef OWN_ALLOCATOR
static long allocs, frees;
void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  __atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
  return malloc(size);
}
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) {
  __atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
  return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
void _mlir_memref_to_llvm_free(void *p) {
  __atomic_add_fetch(&frees, 1, __ATOMIC_RELAXED);
  free(p);
}
#endif

int main(void) {
  enum { A = 5, B = 7 };
  float x[A * B], y[A * B];
  int64_t sizes[] = {A, B}, strides[] = {B, 1};
  for (int i = 0; i < A * B; ++i)
    x[i] = (float)((i * 7) % 11) * 0.3f - 1.0f;
  double maxError = 0;
  for (int call = 0; call < 2; ++call) {
    int rc = ein_softmax(x, 2, sizes, strides, y, 2, sizes, strides);
    if (rc != 0) {
      printf("rc=%d\n", rc);
      return 1;
    }
  }
  for (int r = 0; r < A; ++r) {
    double m = x[r * B], z = 0;
    for (int j = 0; j < B; ++j)
      m = fmax(m, x[r * B + j]);
    for (int j = 0; j < B; ++j)
      z += exp(x[r * B + j] - m);
    for (int j = 0; j < B; ++j)
      maxError = fmax(maxError, fabs(y[r * B + j] - exp(x[r * B + j] - m) / z));
  }
  printf("max_abs_error_ok=%d\n", maxError < 1e-6);
#ifdef OWN_ALLOCATOR
  printf("own allocator: allocations>0=%d balanced=%d\n", allocs > 0,
         allocs == frees);
#endif
  return 0;
}
