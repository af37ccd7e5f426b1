// RUN: ein-opt %s --ein-to-linalg --split-input-file | FileCheck %s

// Tests that a matmul einsum is a zero fill and one generic that multiplies
// and accumulates, with the loops ordered m, k, n: the innermost loop runs
// along the rows of B and C, which are contiguous (so it vectorizes). The
// calling convention (noalias, C entry points) is not this pass's business:
// ein-host-calling-convention adds it.
// CHECK-NOT: llvm.noalias
// CHECK-NOT: llvm.emit_c_interface
// CHECK-DAG: #[[$MM_A:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$MM_B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$MM_C:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x2xf32>) -> tensor<4x2xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4x2xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$MM_A]], #[[$MM_B]], #[[$MM_C]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x2xf32>) outs(%[[INIT]] : tensor<4x2xf32>)
// CHECK: arith.mulf {{.*}} fastmath<reassoc,contract>
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK: return %[[R]] : tensor<4x2xf32>
func.func @matmul(%a: !ein.tensor<"4 8", f32>, %b: !ein.tensor<"8 2", f32>) -> !ein.tensor<"4 2", f32> {
  %0 = ein.einsum %a, %b "m k, k n -> m n" : !ein.tensor<"4 8", f32>, !ein.tensor<"8 2", f32> -> !ein.tensor<"4 2", f32>
  return %0 : !ein.tensor<"4 2", f32>
}

// -----

// Tests that a permuting rearrange is one copying generic whose output map is
// the permutation (loops follow the input, read contiguously), sizes taken
// from the module's ein.dims.
// CHECK-DAG: #[[$PERM:.*]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$PERM]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<2x3x4xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// CHECK-NOT: ein.dims
module attributes {ein.dims = {a = 2 : i64, b = 3 : i64, c = 4 : i64}} {
  func.func @transpose(%x: !ein.tensor<"a b c", f32>) -> !ein.tensor<"c a b", f32> {
    %0 = ein.rearrange %x "a b c -> c a b" : !ein.tensor<"a b c", f32> -> !ein.tensor<"c a b", f32>
    return %0 : !ein.tensor<"c a b", f32>
  }
}

// -----

// Tests that a rearrange that only splits and merges axes is a view: a
// reshape with the explicit grouping of its axes (a split needs no merge, so
// it is a view whatever the argument's strides), and no generic.
// CHECK-LABEL: func.func @view
// CHECK-SAME: (%[[X:.*]]: tensor<2x12xf32>) -> tensor<2x3x4xf32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[V:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2]] output_shape [2, 3, 4] : tensor<2x12xf32> into tensor<2x3x4xf32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[V]]
func.func @view(%x: !ein.tensor<"2 12", f32>) -> !ein.tensor<"2 3 4", f32> {
  %0 = ein.rearrange %x "a (b c) -> a b c" {b = "3"} : !ein.tensor<"2 12", f32> -> !ein.tensor<"2 3 4", f32>
  return %0 : !ein.tensor<"2 3 4", f32>
}

// -----

// Tests that reduce sum fills with 0 and adds along a reduction iterator.
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @reduce_sum
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<2xf32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[V]] fastmath<reassoc,contract> : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
func.func @reduce_sum(%x: !ein.tensor<"2 3", f32>) -> !ein.tensor<"2", f32> {
  %0 = ein.reduce sum %x "a b -> a" : !ein.tensor<"2 3", f32> -> !ein.tensor<"2", f32>
  return %0 : !ein.tensor<"2", f32>
}

// -----

// Tests that reduce max on bf16 accumulates in f32 from -inf with maximumf
// (NaN-propagating) and rounds once to bf16 at the end.
// CHECK-LABEL: func.func @reduce_max_bf16
// CHECK-SAME: (%{{.*}}: tensor<2x3xbf16>) -> tensor<3xbf16>
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME: outs(%[[INIT]] : tensor<3xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @reduce_max_bf16(%x: !ein.tensor<"2 3", bf16>) -> !ein.tensor<"3", bf16> {
  %0 = ein.reduce max %x "a b -> b" : !ein.tensor<"2 3", bf16> -> !ein.tensor<"3", bf16>
  return %0 : !ein.tensor<"3", bf16>
}

// -----

// Tests that reduce mean divides the sum by the number of reduced elements.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]
// CHECK: arith.addf
// CHECK: %[[N:.*]] = arith.constant 1.200000e+01 : f64
// CHECK: arith.divf %{{.*}}, %[[N]] : f64
func.func @reduce_mean(%x: !ein.tensor<"3 4 5 1", f64>) -> !ein.tensor<"5", f64> {
  %0 = ein.reduce mean %x "a b c () -> c" : !ein.tensor<"3 4 5 1", f64> -> !ein.tensor<"5", f64>
  return %0 : !ein.tensor<"5", f64>
}

// -----

// Tests that repeat reads the input with fewer axes than it writes: the new
// axis is absent from the input map.
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @repeat
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>) -> tensor<2x4x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<2x3xf32>) outs(%{{.*}} : tensor<2x4x3xf32>)
func.func @repeat(%x: !ein.tensor<"2 3", f32>) -> !ein.tensor<"2 4 3", f32> {
  %0 = ein.repeat %x "a b -> a c b" {c = "4"} : !ein.tensor<"2 3", f32> -> !ein.tensor<"2 4 3", f32>
  return %0 : !ein.tensor<"2 4 3", f32>
}

// -----

// Tests that broadcasting by name indexes the smaller operand with the dims it
// shares with the result, and that a size-1 dim is read at index 0 (no
// reshape: a strided argument stays a view), so it broadcasts.
// CHECK-DAG: #[[$FULL:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[$LAST:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @broadcast_add
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<2x1x4xf32>, %[[Z:.*]]: tensor<4xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[$FULL]], #[[$ROW]], #[[$FULL]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<2x3x4xf32>, tensor<2x1x4xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#[[$FULL]], #[[$LAST]], #[[$FULL]]]
// CHECK-SAME: ins(%[[S]], %[[Z]] : tensor<2x3x4xf32>, tensor<4xf32>)
// CHECK: arith.mulf
func.func @broadcast_add(%x: !ein.tensor<"2 3 4", f32>, %y: !ein.tensor<"2 1 4", f32>, %z: !ein.tensor<"4", f32>) -> !ein.tensor<"2 3 4", f32> {
  %0 = ein.elementwise "add" %x, %y : !ein.tensor<"2 3 4", f32>, !ein.tensor<"2 1 4", f32> -> !ein.tensor<"2 3 4", f32>
  %1 = ein.elementwise "mul" %0, %z : !ein.tensor<"2 3 4", f32>, !ein.tensor<"4", f32> -> !ein.tensor<"2 3 4", f32>
  return %1 : !ein.tensor<"2 3 4", f32>
}

// -----

// Tests that a three-operand einsum is lowered pairwise: two generics, the
// second reading the first's result.
// CHECK-LABEL: func.func @chain
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-SAME: %[[P]]
// CHECK-NOT: linalg.generic
func.func @chain(%x: !ein.tensor<"2 3", f32>, %y: !ein.tensor<"3 4", f32>, %z: !ein.tensor<"4 5", f32>) -> !ein.tensor<"2 5", f32> {
  %0 = ein.einsum %x, %y, %z "a b, b c, c d -> a d" : !ein.tensor<"2 3", f32>, !ein.tensor<"3 4", f32>, !ein.tensor<"4 5", f32> -> !ein.tensor<"2 5", f32>
  return %0 : !ein.tensor<"2 5", f32>
}
