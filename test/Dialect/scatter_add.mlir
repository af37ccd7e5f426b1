// ein.scatter_add (take's gradient): round trip, and the verifier's errors.
// RUN: ein-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: ein.scatter_add %arg0 into %arg1 axis 0 : !ein.tensor<"b s", i64>, !ein.tensor<"b s d", f32> -> !ein.tensor<"vocab d", f32>
// CHECK: ein.scatter_add %arg2 into %arg3 axis 1 : !ein.tensor<"n", i32>, !ein.tensor<"a n c", f64> -> !ein.tensor<"a v c", f64>
func.func @ok(%i: !ein.tensor<"b s", i64>, %u: !ein.tensor<"b s d", f32>,
              %j: !ein.tensor<"n", i32>, %w: !ein.tensor<"a n c", f64>)
    -> (!ein.tensor<"vocab d", f32>, !ein.tensor<"a v c", f64>) {
  %0 = ein.scatter_add %i into %u axis 0 : !ein.tensor<"b s", i64>, !ein.tensor<"b s d", f32> -> !ein.tensor<"vocab d", f32>
  %1 = ein.scatter_add %j into %w axis 1 : !ein.tensor<"n", i32>, !ein.tensor<"a n c", f64> -> !ein.tensor<"a v c", f64>
  return %0, %1 : !ein.tensor<"vocab d", f32>, !ein.tensor<"a v c", f64>
}

// -----

func.func @axis(%i: !ein.tensor<"n", i64>, %u: !ein.tensor<"n d", f32>) -> !ein.tensor<"vocab d", f32> {
  // expected-error @+1 {{axis 2 is not an axis of the result "vocab d"}}
  %0 = ein.scatter_add %i into %u axis 2 : !ein.tensor<"n", i64>, !ein.tensor<"n d", f32> -> !ein.tensor<"vocab d", f32>
  return %0 : !ein.tensor<"vocab d", f32>
}

// -----

func.func @negative_axis(%i: !ein.tensor<"n", i64>, %u: !ein.tensor<"n d", f32>) -> !ein.tensor<"vocab d", f32> {
  // expected-error @+1 {{axis -1 is not an axis of the result "vocab d"}}
  %0 = ein.scatter_add %i into %u axis -1 : !ein.tensor<"n", i64>, !ein.tensor<"n d", f32> -> !ein.tensor<"vocab d", f32>
  return %0 : !ein.tensor<"vocab d", f32>
}

// -----

func.func @float_ids(%i: !ein.tensor<"n", f32>, %u: !ein.tensor<"n d", f32>) -> !ein.tensor<"vocab d", f32> {
  // expected-error @+1 {{ids must be i32 or i64, not 'f32'}}
  %0 = ein.scatter_add %i into %u axis 0 : !ein.tensor<"n", f32>, !ein.tensor<"n d", f32> -> !ein.tensor<"vocab d", f32>
  return %0 : !ein.tensor<"vocab d", f32>
}

// -----

func.func @bool(%i: !ein.tensor<"n", i64>, %u: !ein.tensor<"n d", i1>) -> !ein.tensor<"vocab d", i1> {
  // expected-error @+1 {{adds numbers, not 'i1'}}
  %0 = ein.scatter_add %i into %u axis 0 : !ein.tensor<"n", i64>, !ein.tensor<"n d", i1> -> !ein.tensor<"vocab d", i1>
  return %0 : !ein.tensor<"vocab d", i1>
}

// -----

func.func @shape(%i: !ein.tensor<"n", i64>, %u: !ein.tensor<"d n", f32>) -> !ein.tensor<"vocab d", f32> {
  // expected-error @+1 {{updates shape "d n" does not match the inferred "n d"}}
  %0 = ein.scatter_add %i into %u axis 0 : !ein.tensor<"n", i64>, !ein.tensor<"d n", f32> -> !ein.tensor<"vocab d", f32>
  return %0 : !ein.tensor<"vocab d", f32>
}

// -----

func.func @ids_rank(%i: !ein.tensor<"b s", i64>, %u: !ein.tensor<"b d", f32>) -> !ein.tensor<"vocab d", f32> {
  // expected-error @+1 {{updates shape "b d" does not match the inferred "b s d"}}
  %0 = ein.scatter_add %i into %u axis 0 : !ein.tensor<"b s", i64>, !ein.tensor<"b d", f32> -> !ein.tensor<"vocab d", f32>
  return %0 : !ein.tensor<"vocab d", f32>
}

// -----

func.func @element(%i: !ein.tensor<"n", i64>, %u: !ein.tensor<"n d", f16>) -> !ein.tensor<"vocab d", f32> {
  // expected-error @+1 {{updates element type 'f16' does not match the expected 'f32'}}
  %0 = ein.scatter_add %i into %u axis 0 : !ein.tensor<"n", i64>, !ein.tensor<"n d", f16> -> !ein.tensor<"vocab d", f32>
  return %0 : !ein.tensor<"vocab d", f32>
}
