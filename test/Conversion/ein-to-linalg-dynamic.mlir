// RUN: ein-opt %s --ein-to-linalg --split-input-file | FileCheck %s

// Tests size-generic lowering: dims not in ein.dims are dynamic, read from
// the arguments at the entry (tensor.dim), and every size built from them
// is the same value, so the result needs no reshape.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<?x?xf32>, %[[B:.*]]: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-DAG: %[[M:.*]] = tensor.dim %[[A]], %c0
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[B]], %c1
// CHECK: %[[E:.*]] = tensor.empty(%[[M]], %[[N]]) : tensor<?x?xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x?xf32>)
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<?x?xf32>, tensor<?x?xf32>) outs(%[[F]] : tensor<?x?xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK: return %[[R]]
func.func @matmul(%a: !ein.tensor<"m k", f32>, %b: !ein.tensor<"k n", f32>) -> !ein.tensor<"m n", f32> {
  %0 = ein.einsum %a, %b "m k, k n -> m n" : !ein.tensor<"m k", f32>, !ein.tensor<"k n", f32> -> !ein.tensor<"m n", f32>
  return %0 : !ein.tensor<"m n", f32>
}

// -----

// Tests that a name known only as a multiple (8*d) is solved for (a
// division), that a split by a keyword size is a view of the argument with
// the computed size, and that a merge names its grouping explicitly (with
// dynamic sizes MLIR cannot infer it).
// CHECK-LABEL: func.func @split_merge
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-DAG: %[[D8:.*]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[D:.*]] = arith.divsi %[[D8]], %c8
// CHECK: %[[V:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 8, %[[D]]] : tensor<?x?xf32> into tensor<?x8x?xf32>
// CHECK: %[[T:.*]] = linalg.generic
// CHECK-SAME: ins(%[[V]] : tensor<?x8x?xf32>)
// CHECK: tensor.collapse_shape %[[T]] {{\[\[}}0, 1], [2]] : tensor<8x?x?xf32> into tensor<?x?xf32>
module attributes {ein.dims = {}} {
  func.func @split_merge(%x: !ein.tensor<"n 8*d", f32>) -> !ein.tensor<"8*n d", f32> {
    %0 = ein.rearrange %x "n (h d) -> (h n) d" {h = "8"} : !ein.tensor<"n 8*d", f32> -> !ein.tensor<"8*n d", f32>
    return %0 : !ein.tensor<"8*n d", f32>
  }
}

// -----

// Tests that a dim bound by ein.dims stays static beside dynamic ones.
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: (%{{.*}}: tensor<?x4xf32>) -> tensor<?x4xf32>
module attributes {ein.dims = {c = 4 : i64}} {
  func.func @mixed(%x: !ein.tensor<"b c", f32>) -> !ein.tensor<"b c", f32> {
    %0 = ein.elementwise "exp" %x : !ein.tensor<"b c", f32> -> !ein.tensor<"b c", f32>
    return %0 : !ein.tensor<"b c", f32>
  }
}
