// RUN: ein-opt %s --ein-approximate-math --split-input-file | FileCheck %s

// Tests that f32 exp, tanh, erf, log1p and expm1 become polynomial code:
// no math call is left (math.fma, roundeven, absf and copysign become
// LLVM intrinsics that vectorize), for scalars and vectors alike.
// CHECK-LABEL: func.func @f32_ops
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.log1p
// CHECK: math.fma
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.log1p
// CHECK: return
func.func @f32_ops(%x: f32, %v: vector<8xf32>)
    -> (f32, f32, f32, f32, f32, vector<8xf32>) {
  %e = math.exp %x : f32
  %t = math.tanh %x : f32
  %r = math.erf %x : f32
  %l = math.log1p %x : f32
  %m = math.expm1 %x : f32
  %ev = math.exp %v : vector<8xf32>
  return %e, %t, %r, %l, %m, %ev : f32, f32, f32, f32, f32, vector<8xf32>
}

// -----

// Tests the subnormal scaling of log: an argument below 2^-126 is scaled
// by 2^23 and 23 ln 2 = 15.942385 subtracted from the log after; the log
// itself is approximated (no math.log left).
// CHECK-LABEL: func.func @log_f32
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-DAG: %[[MIN:.*]] = arith.constant 1.17549435E-38 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 0x4B000000 : f32
// CHECK-DAG: %[[SHIFT:.*]] = arith.constant 15.9423847 : f32
// CHECK: %[[SMALL:.*]] = arith.cmpf olt, %[[X]], %[[MIN]] : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[X]], %[[SCALE]] : f32
// CHECK: %[[ARG:.*]] = arith.select %[[SMALL]], %[[SCALED]], %[[X]] : f32
// CHECK-NOT: math.log
// CHECK: %[[UNSCALED:.*]] = arith.subf %[[LOG:.*]], %[[SHIFT]] : f32
// CHECK: %[[R:.*]] = arith.select %[[SMALL]], %[[UNSCALED]], %[[LOG]] : f32
// CHECK: return %[[R]]
func.func @log_f32(%x: f32) -> f32 {
  %y = math.log %x : f32
  return %y : f32
}

// -----

// Tests that f16 and bf16 compute in f32: extended, approximated, rounded
// once.
// CHECK-LABEL: func.func @half
// CHECK-SAME: (%[[H:.*]]: f16, %[[B:.*]]: vector<4xbf16>)
// CHECK: arith.extf %[[H]] : f16 to f32
// CHECK-NOT: math.tanh
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %[[B]] : vector<4xbf16> to vector<4xf32>
// CHECK-NOT: math.exp
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
func.func @half(%h: f16, %b: vector<4xbf16>) -> (f16, vector<4xbf16>) {
  %t = math.tanh %h : f16
  %e = math.exp %b : vector<4xbf16>
  return %t, %e : f16, vector<4xbf16>
}

// -----

// Tests what stays a libm call: f64 exp, log, tanh, erf, and sin, cos and
// pow of every type.
// CHECK-LABEL: func.func @kept
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.log %{{.*}} : f64
// CHECK: math.tanh %{{.*}} : f64
// CHECK: math.erf %{{.*}} : f64
// CHECK: math.sin %{{.*}} : f32
// CHECK: math.cos %{{.*}} : f32
// CHECK: math.powf %{{.*}} : f32
func.func @kept(%d: f64, %x: f32) -> (f64, f64, f64, f64, f32, f32, f32) {
  %e = math.exp %d : f64
  %l = math.log %d : f64
  %t = math.tanh %d : f64
  %r = math.erf %d : f64
  %s = math.sin %x : f32
  %c = math.cos %x : f32
  %p = math.powf %x, %x : f32
  return %e, %l, %t, %r, %s, %c, %p : f64, f64, f64, f64, f32, f32, f32
}

// -----

// Tests f64 log1p by Goldberg's formula: x where 1 + x rounds to 1, log(u)
// where u = 1 + x is inf, else log(u) * (x / (u - 1)).
// CHECK-LABEL: func.func @log1p_f64
// CHECK-SAME: (%[[X:.*]]: f64)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7FF0000000000000 : f64
// CHECK: %[[U:.*]] = arith.addf %[[X]], %[[ONE]] : f64
// CHECK: %[[LOG:.*]] = math.log %[[U]] : f64
// CHECK: %[[D:.*]] = arith.subf %[[U]], %[[ONE]] : f64
// CHECK: %[[Q:.*]] = arith.divf %[[X]], %[[D]] : f64
// CHECK: %[[P:.*]] = arith.mulf %[[LOG]], %[[Q]] : f64
// CHECK: %[[EXACT:.*]] = arith.cmpf oeq, %[[U]], %[[ONE]] : f64
// CHECK: %[[ISINF:.*]] = arith.cmpf oeq, %[[U]], %[[INF]] : f64
// CHECK: %[[G:.*]] = arith.select %[[ISINF]], %[[LOG]], %[[P]] : f64
// CHECK: %[[R:.*]] = arith.select %[[EXACT]], %[[X]], %[[G]] : f64
// CHECK: return %[[R]]
func.func @log1p_f64(%x: f64) -> f64 {
  %y = math.log1p %x : f64
  return %y : f64
}

// -----

// Tests f32 exp at the edges of its range: below log(2^-126) (subnormal
// results, which MLIR's exp flushes to zero) and above 88 (its last
// binade) the result is exp(x/2) squared. One exp is approximated, of x
// scaled by 1/2 at the edges and by 1 elsewhere (one polynomial per vector,
// not two).
// CHECK-LABEL: func.func @exp_f32
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-DAG: %[[LOW:.*]] = arith.constant -87.3365402 : f32
// CHECK-DAG: %[[HIGH:.*]] = arith.constant 8.800000e+01 : f32
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[SMALL:.*]] = arith.cmpf olt, %[[X]], %[[LOW]] : f32
// CHECK: %[[LARGE:.*]] = arith.cmpf ogt, %[[X]], %[[HIGH]] : f32
// CHECK: %[[EDGE:.*]] = arith.ori %[[SMALL]], %[[LARGE]] : i1
// CHECK: %[[S:.*]] = arith.select %[[EDGE]], %[[HALF]], %[[ONE]] : f32
// CHECK: %[[H:.*]] = arith.mulf %[[X]], %[[S]] : f32
// CHECK: arith.cmpf uge, %[[H]]
// CHECK-NOT: math.exp
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT: %[[ROOT:.*]] = arith.mulf
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[ROOT]], %[[ROOT]] : f32
// CHECK-NOT: math.exp
// CHECK-NOT: arith.bitcast
// CHECK: %[[R:.*]] = arith.select %[[EDGE]], %[[SQ]], %[[ROOT]] : f32
// CHECK: return %[[R]]
func.func @exp_f32(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}

// -----

// Tests that f32 erf takes the sign of its argument (erf(-0) = -0).
// CHECK-LABEL: func.func @erf_f32
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-NOT: math.erf
// CHECK: %[[R:.*]] = math.copysign %{{.*}}, %[[X]] : f32
// CHECK: return %[[R]]
func.func @erf_f32(%x: f32) -> f32 {
  %y = math.erf %x : f32
  return %y : f32
}
