// ein.dropout: round trip (p a number, or the run-time operand rate), and
// the verifier's errors (the builder's rules: p in [0, 1), a rank-0 float
// rate, one of the two, a float input, an i64 scalar key, the input's type).
// RUN: ein-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: ein-opt %s -split-input-file -verify-diagnostics | ein-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: ein.dropout %arg0 key %arg1 p 1.000000e-01 : !ein.tensor<"b d", f32>, !ein.tensor<"", i64> -> !ein.tensor<"b d", f32>
// CHECK: ein.dropout %arg2 key %arg1 p 0.000000e+00 : !ein.tensor<"n", bf16>, !ein.tensor<"", i64> -> !ein.tensor<"n", bf16>
func.func @ok(%x: !ein.tensor<"b d", f32>, %k: !ein.tensor<"", i64>,
              %y: !ein.tensor<"n", bf16>)
    -> (!ein.tensor<"b d", f32>, !ein.tensor<"n", bf16>) {
  %0 = ein.dropout %x key %k p 0.1 : !ein.tensor<"b d", f32>, !ein.tensor<"", i64> -> !ein.tensor<"b d", f32>
  %1 = ein.dropout %y key %k p 0.0 : !ein.tensor<"n", bf16>, !ein.tensor<"", i64> -> !ein.tensor<"n", bf16>
  return %0, %1 : !ein.tensor<"b d", f32>, !ein.tensor<"n", bf16>
}

// -----

// A run-time p: the operand `rate`, a rank-0 float tensor.
// CHECK-LABEL: func.func @rate
// CHECK: ein.dropout %arg0 key %arg1 rate %arg2 : !ein.tensor<"b d", f32>, !ein.tensor<"", i64>, !ein.tensor<"", f32> -> !ein.tensor<"b d", f32>
func.func @rate(%x: !ein.tensor<"b d", f32>, %k: !ein.tensor<"", i64>,
                %p: !ein.tensor<"", f32>) -> !ein.tensor<"b d", f32> {
  %0 = ein.dropout %x key %k rate %p : !ein.tensor<"b d", f32>, !ein.tensor<"", i64>, !ein.tensor<"", f32> -> !ein.tensor<"b d", f32>
  return %0 : !ein.tensor<"b d", f32>
}

// -----

func.func @rate_vector(%x: !ein.tensor<"n", f32>, %k: !ein.tensor<"", i64>, %p: !ein.tensor<"n", f32>) -> !ein.tensor<"n", f32> {
  // expected-error @+1 {{dropout's p must be a number or a rank-0 float tensor (f32[""], f64[""]), not f32["n"]}}
  %0 = ein.dropout %x key %k rate %p : !ein.tensor<"n", f32>, !ein.tensor<"", i64>, !ein.tensor<"n", f32> -> !ein.tensor<"n", f32>
  return %0 : !ein.tensor<"n", f32>
}

// -----

func.func @p_and_rate(%x: !ein.tensor<"n", f32>, %k: !ein.tensor<"", i64>, %p: !ein.tensor<"", f32>) -> !ein.tensor<"n", f32> {
  // expected-error @+1 {{needs p (a number) or rate (a rank-0 float tensor), one of them}}
  %0 = ein.dropout %x key %k p 0.5 rate %p : !ein.tensor<"n", f32>, !ein.tensor<"", i64>, !ein.tensor<"", f32> -> !ein.tensor<"n", f32>
  return %0 : !ein.tensor<"n", f32>
}

// -----

func.func @neither(%x: !ein.tensor<"n", f32>, %k: !ein.tensor<"", i64>) -> !ein.tensor<"n", f32> {
  // expected-error @+1 {{needs p (a number) or rate (a rank-0 float tensor), one of them}}
  %0 = ein.dropout %x key %k : !ein.tensor<"n", f32>, !ein.tensor<"", i64> -> !ein.tensor<"n", f32>
  return %0 : !ein.tensor<"n", f32>
}

// -----

func.func @p_one(%x: !ein.tensor<"n", f32>, %k: !ein.tensor<"", i64>) -> !ein.tensor<"n", f32> {
  // expected-error @+1 {{dropout's p must be in [0, 1), not 1}}
  %0 = ein.dropout %x key %k p 1.0 : !ein.tensor<"n", f32>, !ein.tensor<"", i64> -> !ein.tensor<"n", f32>
  return %0 : !ein.tensor<"n", f32>
}

// -----

func.func @int_input(%x: !ein.tensor<"n", i32>, %k: !ein.tensor<"", i64>) -> !ein.tensor<"n", i32> {
  // expected-error @+1 {{dropout's input must be a float tensor, not i32; convert it with astype}}
  %0 = ein.dropout %x key %k p 0.5 : !ein.tensor<"n", i32>, !ein.tensor<"", i64> -> !ein.tensor<"n", i32>
  return %0 : !ein.tensor<"n", i32>
}

// -----

func.func @key(%x: !ein.tensor<"n", f32>, %k: !ein.tensor<"n", i64>) -> !ein.tensor<"n", f32> {
  // expected-error @+1 {{dropout's key must be an i64 scalar tensor (i64[""]), not i64["n"]}}
  %0 = ein.dropout %x key %k p 0.5 : !ein.tensor<"n", f32>, !ein.tensor<"n", i64> -> !ein.tensor<"n", f32>
  return %0 : !ein.tensor<"n", f32>
}

// -----

func.func @result(%x: !ein.tensor<"n", f32>, %k: !ein.tensor<"", i64>) -> !ein.tensor<"n", f64> {
  // expected-error @+1 {{result element type 'f64' does not match the expected 'f32'}}
  %0 = ein.dropout %x key %k p 0.5 : !ein.tensor<"n", f32>, !ein.tensor<"", i64> -> !ein.tensor<"n", f64>
  return %0 : !ein.tensor<"n", f64>
}
