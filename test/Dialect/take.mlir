// ein.take: round trip, and the verifier's errors.
// RUN: ein-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: ein.take %arg0[%arg1] axis 0 : !ein.tensor<"vocab d", f32>, !ein.tensor<"b s", i64> -> !ein.tensor<"b s d", f32>
// CHECK: ein.take %arg2[%arg3] axis 1 : !ein.tensor<"a v c", i1>, !ein.tensor<"n", i32> -> !ein.tensor<"a n c", i1>
func.func @ok(%t: !ein.tensor<"vocab d", f32>, %i: !ein.tensor<"b s", i64>,
              %u: !ein.tensor<"a v c", i1>, %j: !ein.tensor<"n", i32>)
    -> (!ein.tensor<"b s d", f32>, !ein.tensor<"a n c", i1>) {
  %0 = ein.take %t[%i] axis 0 : !ein.tensor<"vocab d", f32>, !ein.tensor<"b s", i64> -> !ein.tensor<"b s d", f32>
  %1 = ein.take %u[%j] axis 1 : !ein.tensor<"a v c", i1>, !ein.tensor<"n", i32> -> !ein.tensor<"a n c", i1>
  return %0, %1 : !ein.tensor<"b s d", f32>, !ein.tensor<"a n c", i1>
}

// A variadic in the table or the ids verifies (its rank is the lowering's,
// --rank), though the builder refuses one.
// CHECK-LABEL: func.func @variadic
// CHECK: ein.take %arg0[%arg1] axis 0 : !ein.tensor<"v d *r", f32>, !ein.tensor<"n", i64> -> !ein.tensor<"n d *r", f32>
func.func @variadic(%t: !ein.tensor<"v d *r", f32>, %i: !ein.tensor<"n", i64>) -> !ein.tensor<"n d *r", f32> {
  %0 = ein.take %t[%i] axis 0 : !ein.tensor<"v d *r", f32>, !ein.tensor<"n", i64> -> !ein.tensor<"n d *r", f32>
  return %0 : !ein.tensor<"n d *r", f32>
}

// -----

func.func @axis(%t: !ein.tensor<"vocab d", f32>, %i: !ein.tensor<"n", i64>) -> !ein.tensor<"vocab n", f32> {
  // expected-error @+1 {{axis 2 is not an axis of the table "vocab d"}}
  %0 = ein.take %t[%i] axis 2 : !ein.tensor<"vocab d", f32>, !ein.tensor<"n", i64> -> !ein.tensor<"vocab n", f32>
  return %0 : !ein.tensor<"vocab n", f32>
}

// -----

func.func @float_ids(%t: !ein.tensor<"vocab d", f32>, %i: !ein.tensor<"n", f32>) -> !ein.tensor<"n d", f32> {
  // expected-error @+1 {{ids must be i32 or i64, not 'f32'}}
  %0 = ein.take %t[%i] axis 0 : !ein.tensor<"vocab d", f32>, !ein.tensor<"n", f32> -> !ein.tensor<"n d", f32>
  return %0 : !ein.tensor<"n d", f32>
}

// -----

func.func @shape(%t: !ein.tensor<"vocab d", f32>, %i: !ein.tensor<"n", i64>) -> !ein.tensor<"d n", f32> {
  // expected-error @+1 {{result shape "d n" does not match the inferred "n d"}}
  %0 = ein.take %t[%i] axis 0 : !ein.tensor<"vocab d", f32>, !ein.tensor<"n", i64> -> !ein.tensor<"d n", f32>
  return %0 : !ein.tensor<"d n", f32>
}

// -----

func.func @element(%t: !ein.tensor<"vocab d", f32>, %i: !ein.tensor<"n", i64>) -> !ein.tensor<"n d", f16> {
  // expected-error @+1 {{result element type 'f16' does not match the expected 'f32'}}
  %0 = ein.take %t[%i] axis 0 : !ein.tensor<"vocab d", f32>, !ein.tensor<"n", i64> -> !ein.tensor<"n d", f16>
  return %0 : !ein.tensor<"n d", f16>
}
