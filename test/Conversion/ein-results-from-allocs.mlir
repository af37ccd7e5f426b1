// RUN: ein-opt %s --ein-results-from-allocs --split-input-file | FileCheck %s

// Tests that a returned parameter, returned twice, gets two fresh copies.
// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%[[X:.*]]: memref<2x3xf32>)
// CHECK: %[[A:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK: memref.copy %[[X]], %[[A]]
// CHECK: %[[B:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK: memref.copy %[[X]], %[[B]]
// CHECK: return %[[A]], %[[B]]
func.func @twice(%x: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2x3xf32>) {
  return %x, %x : memref<2x3xf32>, memref<2x3xf32>
}

// -----

// Tests that a returned allocation is left alone.
// CHECK-LABEL: func.func @fresh
// CHECK-NEXT: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: return %[[A]]
func.func @fresh() -> memref<4xf32> {
  %0 = memref.alloc() : memref<4xf32>
  return %0 : memref<4xf32>
}
