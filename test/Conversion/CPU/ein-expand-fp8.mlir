// RUN: ein-opt %s --ein-expand-fp8 --split-input-file | FileCheck %s

// Tests that arithmetic on fp8 runs in f32: the operands are widened (bits
// -> i16 -> f16 -> f32), the product is an f32 mulf, and the result is narrowed back
// through integer rounding to an i8 bit pattern. The fp8 constant becomes its
// bit pattern: 0.5 in e4m3fn is 0 0110 000 = 48.
// CHECK-LABEL: func.func @mul_e4m3
// CHECK-SAME: (%[[X:.*]]: f8E4M3FN) -> f8E4M3FN
// CHECK-DAG: %[[HALF:.*]] = arith.constant 48 : i8
// CHECK-DAG: %[[XB:.*]] = arith.bitcast %[[X]] : f8E4M3FN to i8
// CHECK-DAG: arith.extui %[[XB]] : i8 to i16
// CHECK-DAG: arith.bitcast %[[HALF]] : i8 to f8E4M3FN
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: f8E4M3FN
// CHECK: %[[PB:.*]] = arith.bitcast %[[P]] : f32 to i32
// CHECK: %[[CODE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK: %[[R:.*]] = arith.bitcast %[[CODE]] : i8 to f8E4M3FN
// CHECK: return %[[R]]
func.func @mul_e4m3(%x: f8E4M3FN) -> f8E4M3FN {
  %c = arith.constant 0.5 : f8E4M3FN
  %y = arith.mulf %x, %c : f8E4M3FN
  return %y : f8E4M3FN
}

// -----

// Tests the exact widening of e4m3fn through f16: the 7 exponent and
// mantissa bits move up by 7 into f16's fields, which reads as the value
// times 2^-8 (subnormals included) and is scaled back by 256 in f32; the one
// NaN pattern S.1111.111 (0x7F under the sign) becomes f32's quiet NaN
// 0x7FC00000; the sign moves from bit 7 to bit 31.
// CHECK-LABEL: func.func @widen_e4m3
// CHECK-DAG: %[[MAG:.*]] = arith.andi %{{.*}}, %c127_i16 : i16
// CHECK-DAG: arith.shli %[[MAG]], %c7_i16 : i16
// CHECK-DAG: arith.constant 2.560000e+02 : f32
// CHECK-DAG: arith.extf %{{.*}} : f16 to f32
// CHECK-DAG: arith.cmpi eq, %[[MAG]], %{{.*}} : i16
// CHECK-DAG: arith.constant 2143289344 : i32
// CHECK-DAG: arith.constant 31 : i32
// CHECK: %[[F:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT: return %[[F]] : f32
func.func @widen_e4m3(%x: f8E4M3FN) -> f32 {
  %y = arith.extf %x : f8E4M3FN to f32
  return %y : f32
}

// -----

// Tests that e5m2 widens as the top byte of an f16 (which keeps its
// infinities and NaNs), and that widening to f64 goes through the exact f32
// value.
// CHECK-LABEL: func.func @widen_e5m2_to_f64
// CHECK: %[[W:.*]] = arith.extui %{{.*}} : i8 to i16
// CHECK: %[[S:.*]] = arith.shli %[[W]], %c8_i16 : i16
// CHECK-NEXT: %[[H:.*]] = arith.bitcast %[[S]] : i16 to f16
// CHECK-NEXT: %[[F:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT: %[[D:.*]] = arith.extf %[[F]] : f32 to f64
// CHECK-NEXT: return %[[D]] : f64
func.func @widen_e5m2_to_f64(%x: f8E5M2) -> f64 {
  %y = arith.extf %x : f8E5M2 to f64
  return %y : f64
}

// -----

// Tests that f64 narrows to fp8 in one rounding on its 64-bit pattern (no
// truncation to f32 first, which would round twice): the exponent shifts
// out by 52, and e5m2's overflow code is infinity, 0x7C = 124.
// CHECK-LABEL: func.func @narrow_f64_to_e5m2
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast %{{.*}} : f64 to i64
// CHECK-DAG: arith.constant 52 : i64
// CHECK-DAG: arith.constant 124 : i64
// CHECK: arith.trunci %{{.*}} : i64 to i8
// CHECK-NOT: arith.truncf
func.func @narrow_f64_to_e5m2(%x: f64) -> f8E5M2 {
  %y = arith.truncf %x : f64 to f8E5M2
  return %y : f8E5M2
}

// -----

// Tests that f16 narrows through its exact f32 value, and that e4m3fn's
// overflow code is its NaN (0x7F = 127): it has no infinity.
// CHECK-LABEL: func.func @narrow_f16_to_e4m3
// CHECK: %[[F:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: arith.bitcast %[[F]] : f32 to i32
// CHECK: arith.constant 127 : i32
// CHECK: arith.trunci %{{.*}} : i32 to i8
func.func @narrow_f16_to_e4m3(%x: f16) -> f8E4M3FN {
  %y = arith.truncf %x : f16 to f8E4M3FN
  return %y : f8E4M3FN
}

// -----

// Tests vectors (as the contraction kernels pack them): the same code on
// vector<16xi32>, splatted constants, and a vector constant of fp8 becoming
// a dense i8 constant (1.0 in e5m2 is 0 01111 00 = 60).
// CHECK-LABEL: func.func @vectors
// CHECK-DAG: arith.constant dense<60> : vector<16xi8>
// CHECK-DAG: arith.extui %{{.*}} : vector<16xi8> to vector<16xi16>
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: arith.trunci %{{.*}} : vector<16xi32> to vector<16xi8>
// CHECK-NOT: arith.addf {{.*}}f8E5M2
func.func @vectors(%x: vector<16xf8E5M2>) -> vector<16xf8E5M2> {
  %one = arith.constant dense<1.0> : vector<16xf8E5M2>
  %y = arith.addf %x, %one : vector<16xf8E5M2>
  return %y : vector<16xf8E5M2>
}

// -----

// Tests that comparisons, math functions and casts to integers on fp8 run
// on the widened f32 values, and that selects (bit moves) stay on fp8.
// CHECK-LABEL: func.func @compare_math_cast
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f8E4M3FN
func.func @compare_math_cast(%x: f8E4M3FN, %y: f8E4M3FN) -> (f8E4M3FN, i32) {
  %lt = arith.cmpf olt, %x, %y : f8E4M3FN
  %e = math.exp %x : f8E4M3FN
  %i = arith.fptosi %y : f8E4M3FN to i32
  %s = arith.select %lt, %e, %y : f8E4M3FN
  return %s, %i : f8E4M3FN, i32
}

// -----

// Tests that everything else is left alone: f16 arithmetic and f32 -> f16
// truncation have LLVM lowerings of their own.
// CHECK-LABEL: func.func @not_fp8
// CHECK-NEXT: %[[A:.*]] = arith.addf %arg0, %arg0 : f16
// CHECK-NEXT: %[[T:.*]] = arith.truncf %arg1 : f32 to f16
// CHECK-NEXT: return %[[A]], %[[T]]
func.func @not_fp8(%x: f16, %y: f32) -> (f16, f16) {
  %a = arith.addf %x, %x : f16
  %t = arith.truncf %y : f32 to f16
  return %a, %t : f16, f16
}
