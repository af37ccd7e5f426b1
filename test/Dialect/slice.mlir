// ein.slice: round trip, and the verifier's errors.
// RUN: ein-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: ein.slice %arg0 axis 1 from "0" to "k" : !ein.tensor<"b s d", f32> -> !ein.tensor<"b k d", f32>
// CHECK: ein.slice %arg0 axis -1 from "1" to "d" : !ein.tensor<"b s d", f32> -> !ein.tensor<"b s d-1", f32>
func.func @ok(%arg0: !ein.tensor<"b s d", f32>) -> (!ein.tensor<"b k d", f32>, !ein.tensor<"b s d-1", f32>) {
  %0 = ein.slice %arg0 axis 1 from "0" to "k" : !ein.tensor<"b s d", f32> -> !ein.tensor<"b k d", f32>
  %1 = ein.slice %arg0 axis -1 from "1" to "d" : !ein.tensor<"b s d", f32> -> !ein.tensor<"b s d-1", f32>
  return %0, %1 : !ein.tensor<"b k d", f32>, !ein.tensor<"b s d-1", f32>
}

// Variadics beside the sliced dim, before it (the axis counted from the
// end) or after it.
// CHECK-LABEL: func.func @variadic
// CHECK: ein.slice %arg0 axis -1 from "1" to "d" : !ein.tensor<"*b s d", f32> -> !ein.tensor<"*b s d-1", f32>
// CHECK: ein.slice %arg1 axis 0 from "0" to "k" : !ein.tensor<"s *b d", f32> -> !ein.tensor<"k *b d", f32>
func.func @variadic(%x: !ein.tensor<"*b s d", f32>, %y: !ein.tensor<"s *b d", f32>) -> (!ein.tensor<"*b s d-1", f32>, !ein.tensor<"k *b d", f32>) {
  %0 = ein.slice %x axis -1 from "1" to "d" : !ein.tensor<"*b s d", f32> -> !ein.tensor<"*b s d-1", f32>
  %1 = ein.slice %y axis 0 from "0" to "k" : !ein.tensor<"s *b d", f32> -> !ein.tensor<"k *b d", f32>
  return %0, %1 : !ein.tensor<"*b s d-1", f32>, !ein.tensor<"k *b d", f32>
}

// -----

func.func @axis_range(%arg0: !ein.tensor<"s d", f32>) -> !ein.tensor<"s d", f32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = ein.slice %arg0 axis 2 from "0" to "1" : !ein.tensor<"s d", f32> -> !ein.tensor<"s d", f32>
  return %0 : !ein.tensor<"s d", f32>
}

// -----

func.func @bad_bound(%arg0: !ein.tensor<"s d", f32>) -> !ein.tensor<"s d", f32> {
  // expected-error @+1 {{invalid stop "k +"}}
  %0 = ein.slice %arg0 axis 0 from "0" to "k +" : !ein.tensor<"s d", f32> -> !ein.tensor<"s d", f32>
  return %0 : !ein.tensor<"s d", f32>
}

// -----

func.func @backwards(%arg0: !ein.tensor<"s d", f32>) -> !ein.tensor<"s d", f32> {
  // expected-error @+1 {{start is after stop}}
  %0 = ein.slice %arg0 axis 0 from "k + 1" to "k" : !ein.tensor<"s d", f32> -> !ein.tensor<"s d", f32>
  return %0 : !ein.tensor<"s d", f32>
}

// -----

func.func @beyond(%arg0: !ein.tensor<"4 d", f32>) -> !ein.tensor<"5 d", f32> {
  // expected-error @+1 {{stop is beyond the dim's size}}
  %0 = ein.slice %arg0 axis 0 from "0" to "5" : !ein.tensor<"4 d", f32> -> !ein.tensor<"5 d", f32>
  return %0 : !ein.tensor<"5 d", f32>
}

// -----

func.func @wrong_result(%arg0: !ein.tensor<"s d", f32>) -> !ein.tensor<"s d", f32> {
  // expected-error @+1 {{result shape "s d" does not match the inferred "k d"}}
  %0 = ein.slice %arg0 axis 0 from "0" to "k" : !ein.tensor<"s d", f32> -> !ein.tensor<"s d", f32>
  return %0 : !ein.tensor<"s d", f32>
}
