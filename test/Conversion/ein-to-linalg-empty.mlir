// RUN: ein-opt %s --ein-to-linalg --split-input-file -verify-diagnostics | FileCheck %s

// Tests that a sum over an empty axis is its identity: the zero fill of the
// output and a generic whose reduced loop has no trips.
// CHECK-LABEL: func.func @sum_over_empty
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<0x3xf32>) outs(%[[INIT]] : tensor<3xf32>)
func.func @sum_over_empty(%x: !ein.tensor<"0 3", f32>) -> !ein.tensor<"3", f32> {
  %0 = ein.reduce sum %x "a b -> b" : !ein.tensor<"0 3", f32> -> !ein.tensor<"3", f32>
  return %0 : !ein.tensor<"3", f32>
}

// -----

// Tests that a mean over an empty axis divides by 0 (NaN, numpy's answer).
// CHECK-LABEL: func.func @mean_over_empty
// CHECK: arith.addf
// CHECK: %[[N:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: arith.divf %{{.*}}, %[[N]] : f64
func.func @mean_over_empty(%x: !ein.tensor<"2 0", f64>) -> !ein.tensor<"2", f64> {
  %0 = ein.reduce mean %x "a b -> a" : !ein.tensor<"2 0", f64> -> !ein.tensor<"2", f64>
  return %0 : !ein.tensor<"2", f64>
}

// -----

// Tests that a max over a non-empty axis of an empty tensor lowers (its
// result is empty too).
// CHECK-LABEL: func.func @max_of_empty_rows
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<0x3xf32>) outs(%{{.*}} : tensor<0xf32>)
func.func @max_of_empty_rows(%x: !ein.tensor<"0 3", f32>) -> !ein.tensor<"0", f32> {
  %0 = ein.reduce max %x "a b -> a" : !ein.tensor<"0 3", f32> -> !ein.tensor<"0", f32>
  return %0 : !ein.tensor<"0", f32>
}

// -----

// Tests that a max over an empty axis, which has no identity, is refused at
// the op instead of filling the result with -inf.
func.func @max_over_empty(%x: !ein.tensor<"0 3", f32>) -> !ein.tensor<"3", f32> {
  // expected-error @+2 {{'ein.reduce' op max over the empty axis 'a' has no identity}}
  // expected-error @+1 {{cannot lower this op to linalg}}
  %0 = ein.reduce max %x "a b -> b" : !ein.tensor<"0 3", f32> -> !ein.tensor<"3", f32>
  return %0 : !ein.tensor<"3", f32>
}

// -----

// Tests that a min over an empty integer axis is refused the same way.
func.func @min_over_empty(%x: !ein.tensor<"2 0 4", i32>) -> !ein.tensor<"4", i32> {
  // expected-error @+2 {{'ein.reduce' op min over the empty axis 'b' has no identity}}
  // expected-error @+1 {{cannot lower this op to linalg}}
  %0 = ein.reduce min %x "a b c -> c" : !ein.tensor<"2 0 4", i32> -> !ein.tensor<"4", i32>
  return %0 : !ein.tensor<"4", i32>
}

// -----

// Tests that an einsum with an empty contracted axis is a zero fill and a
// generic over no trips: all zeros, as numpy.
// CHECK-LABEL: func.func @contract_empty
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x0xf32>, tensor<0x5xf32>) outs(%{{.*}} : tensor<4x5xf32>)
func.func @contract_empty(%x: !ein.tensor<"4 0", f32>, %y: !ein.tensor<"0 5", f32>) -> !ein.tensor<"4 5", f32> {
  %0 = ein.einsum %x, %y "m k, k n -> m n" : !ein.tensor<"4 0", f32>, !ein.tensor<"0 5", f32> -> !ein.tensor<"4 5", f32>
  return %0 : !ein.tensor<"4 5", f32>
}
