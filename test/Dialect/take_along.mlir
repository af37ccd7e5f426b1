// ein.take_along: round trip, and the verifier's errors (the builder's rule:
// the ids have the input's shape without the axis, dim for dim).
// RUN: ein-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: ein-opt %s -split-input-file -verify-diagnostics | ein-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: ein.take_along %arg0[%arg1] axis 2 : !ein.tensor<"b s v", f32>, !ein.tensor<"b s", i64> -> !ein.tensor<"b s", f32>
// CHECK: ein.take_along %arg2[%arg3] axis 1 : !ein.tensor<"a v c", i1>, !ein.tensor<"a c", i32> -> !ein.tensor<"a c", i1>
func.func @ok(%x: !ein.tensor<"b s v", f32>, %i: !ein.tensor<"b s", i64>,
              %u: !ein.tensor<"a v c", i1>, %j: !ein.tensor<"a c", i32>)
    -> (!ein.tensor<"b s", f32>, !ein.tensor<"a c", i1>) {
  %0 = ein.take_along %x[%i] axis 2 : !ein.tensor<"b s v", f32>, !ein.tensor<"b s", i64> -> !ein.tensor<"b s", f32>
  %1 = ein.take_along %u[%j] axis 1 : !ein.tensor<"a v c", i1>, !ein.tensor<"a c", i32> -> !ein.tensor<"a c", i1>
  return %0, %1 : !ein.tensor<"b s", f32>, !ein.tensor<"a c", i1>
}

// -----

func.func @axis(%x: !ein.tensor<"b v", f32>, %i: !ein.tensor<"b", i64>) -> !ein.tensor<"b", f32> {
  // expected-error @+1 {{axis 2 is not an axis of the input "b v"}}
  %0 = ein.take_along %x[%i] axis 2 : !ein.tensor<"b v", f32>, !ein.tensor<"b", i64> -> !ein.tensor<"b", f32>
  return %0 : !ein.tensor<"b", f32>
}

// -----

func.func @float_ids(%x: !ein.tensor<"b v", f32>, %i: !ein.tensor<"b", f32>) -> !ein.tensor<"b", f32> {
  // expected-error @+1 {{take_along's ids must be integers (i32 or i64), not f32}}
  %0 = ein.take_along %x[%i] axis 1 : !ein.tensor<"b v", f32>, !ein.tensor<"b", f32> -> !ein.tensor<"b", f32>
  return %0 : !ein.tensor<"b", f32>
}

// -----

func.func @ids_shape(%x: !ein.tensor<"b s v", f32>, %i: !ein.tensor<"b s 1", i64>) -> !ein.tensor<"b s", f32> {
  // expected-error @+1 {{take_along's ids (shape "b s 1") must have the input's shape without its axis v: "b s"; the ids have the extra dim 1}}
  %0 = ein.take_along %x[%i] axis 2 : !ein.tensor<"b s v", f32>, !ein.tensor<"b s 1", i64> -> !ein.tensor<"b s", f32>
  return %0 : !ein.tensor<"b s", f32>
}

// -----

func.func @shape(%x: !ein.tensor<"b s v", f32>, %i: !ein.tensor<"b s", i64>) -> !ein.tensor<"s b", f32> {
  // expected-error @+1 {{result shape "s b" does not match the inferred "b s"}}
  %0 = ein.take_along %x[%i] axis 2 : !ein.tensor<"b s v", f32>, !ein.tensor<"b s", i64> -> !ein.tensor<"s b", f32>
  return %0 : !ein.tensor<"s b", f32>
}

// -----

func.func @element(%x: !ein.tensor<"b v", f32>, %i: !ein.tensor<"b", i64>) -> !ein.tensor<"b", f16> {
  // expected-error @+1 {{result element type 'f16' does not match the expected 'f32'}}
  %0 = ein.take_along %x[%i] axis 1 : !ein.tensor<"b v", f32>, !ein.tensor<"b", i64> -> !ein.tensor<"b", f16>
  return %0 : !ein.tensor<"b", f16>
}
