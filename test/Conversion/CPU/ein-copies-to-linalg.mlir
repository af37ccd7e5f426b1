// RUN: ein-opt %s --ein-copies-to-linalg --split-input-file | FileCheck %s

// Tests that a copy between strided buffers becomes a linalg.generic that
// yields its input (parallel loops later, no call of memrefCopy).
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.copy
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%arg0 : memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%arg1 : memref<?x?xf32, strided<[?, ?], offset: ?>>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
func.func @strided(%a: memref<?x?xf32, strided<[?, ?], offset: ?>>, %b: memref<?x?xf32, strided<[?, ?], offset: ?>>) {
  memref.copy %a, %b : memref<?x?xf32, strided<[?, ?], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  return
}

// -----

// Tests that a copy of a buffer onto itself is removed.
// CHECK-LABEL: func.func @self
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @self(%a: memref<4xf32>) {
  memref.copy %a, %a : memref<4xf32> to memref<4xf32>
  return
}
