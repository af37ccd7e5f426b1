// ein.arange: round trip, and the verifier's errors.
// RUN: ein-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: ein.arange : !ein.tensor<"s", i64>
// CHECK: ein.arange : !ein.tensor<"s+1", f32>
func.func @ok() -> (!ein.tensor<"s", i64>, !ein.tensor<"s+1", f32>) {
  %0 = ein.arange : !ein.tensor<"s", i64>
  %1 = ein.arange : !ein.tensor<"s+1", f32>
  return %0, %1 : !ein.tensor<"s", i64>, !ein.tensor<"s+1", f32>
}

// -----

func.func @rank2() -> !ein.tensor<"s t", i64> {
  // expected-error @+1 {{result must have rank 1}}
  %0 = ein.arange : !ein.tensor<"s t", i64>
  return %0 : !ein.tensor<"s t", i64>
}

// -----

func.func @boolean() -> !ein.tensor<"s", i1> {
  // expected-error @+1 {{counts in a number type, not 'i1'}}
  %0 = ein.arange : !ein.tensor<"s", i1>
  return %0 : !ein.tensor<"s", i1>
}
