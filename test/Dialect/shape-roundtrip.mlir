// RUN: ein-opt %s --split-input-file | ein-opt --split-input-file | FileCheck %s
// RUN: ein-opt %s --split-input-file --mlir-print-op-generic | ein-opt --split-input-file | FileCheck %s

// Regression (was a bug): the canonical text of `b-a` is `-a+b`, which the
// type parser refused, so such types did not survive printing. Every shape
// prints to text that parses back to the same type: leading minus signs,
// negative numbers inside quotients, quotients with coefficients, nested
// quotients and a dim named `_` (not an anonymous one).
// CHECK-LABEL: func.func private @signs
// CHECK-SAME: !ein.tensor<"-a+b", f32>
// CHECK-SAME: !ein.tensor<"-a", f32>
// CHECK-SAME: !ein.tensor<"-2*k+n+1", i64>
// CHECK-SAME: !ein.tensor<"-a/2+b", f16>
// CHECK-SAME: !ein.tensor<"(-a+b)/2 n/(-2) (-3)/n", f32>
func.func private @signs(!ein.tensor<"b-a", f32>,
                         !ein.tensor<"0-a", f32>,
                         !ein.tensor<"n+1-2*k", i64>,
                         !ein.tensor<"b-a/2", f16>,
                         !ein.tensor<"(b-a)/2 n/(0-2) (0-3)/n", f32>)

// -----

// CHECK-LABEL: func.func private @quotients
// CHECK-SAME: !ein.tensor<"2*(hidden/8) (a/2)*b (a/2)/3", f32>
// CHECK-SAME: !ein.tensor<"3*((a+b)/(c-d))", f32>
// CHECK-SAME: !ein.tensor<"(_) #(_) _anon0 *_anon1", f32>
func.func private @quotients(!ein.tensor<"hidden/8*2 b*(a/2) a/2/3", f32>,
                             !ein.tensor<"3*((a+b)/(c-d))", f32>,
                             !ein.tensor<"(_) #_ _ ...", f32>)

// -----

// The same types as results of an op: the canonical text parses back.
// CHECK-LABEL: func.func @mul
// CHECK: ein.elementwise "mul" %{{.*}}, %{{.*}} : !ein.tensor<"-a+b", f32>, !ein.tensor<"", f32> -> !ein.tensor<"-a+b", f32>
func.func @mul(%x: !ein.tensor<"b-a", f32>) -> !ein.tensor<"-a+b", f32> {
  %c = ein.constant 2.0 : f32
  %0 = ein.elementwise "mul" %x, %c : !ein.tensor<"-a+b", f32>, !ein.tensor<"", f32> -> !ein.tensor<"-a+b", f32>
  return %0 : !ein.tensor<"-a+b", f32>
}
