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

// Tests that an einsum with an empty operand is a zero fill of its result
// and nothing else (every sum is empty), as numpy's zeros.
// CHECK-LABEL: func.func @contract_empty
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x5xf32>
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4x5xf32>)
// CHECK-NEXT: return %[[F]]
func.func @contract_empty(%x: !ein.tensor<"4 0", f32>, %y: !ein.tensor<"0 5", f32>) -> !ein.tensor<"4 5", f32> {
  %0 = ein.einsum %x, %y "m k, k n -> m n" : !ein.tensor<"4 0", f32>, !ein.tensor<"0 5", f32> -> !ein.tensor<"4 5", f32>
  return %0 : !ein.tensor<"4 5", f32>
}

// -----

// Tests that a chain with empty operands builds no intermediate: contracting
// the first two operands pairwise would make 3 x 1000000 zeros. The zeros
// are f32 (the accumulator) rounded to f16 elementwise.
// CHECK-LABEL: func.func @chain_empty
// CHECK-NOT: reduction
// CHECK: linalg.fill {{.*}} -> tensor<3x0xf32>
// CHECK-NOT: reduction
// CHECK: arith.truncf
// CHECK-NOT: reduction
// CHECK: return
func.func @chain_empty(%a: !ein.tensor<"3 0", f16>, %b: !ein.tensor<"0 1000000", f16>, %c: !ein.tensor<"1000000 0", f16>) -> !ein.tensor<"3 0", f16> {
  %0 = ein.einsum %a, %b, %c "i j, j k, k l -> i l" : !ein.tensor<"3 0", f16>, !ein.tensor<"0 1000000", f16>, !ein.tensor<"1000000 0", f16> -> !ein.tensor<"3 0", f16>
  return %0 : !ein.tensor<"3 0", f16>
}
