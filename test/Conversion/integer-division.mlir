// RUN: ein-opt %s --ein-to-linalg --split-input-file | FileCheck %s

// Tests that integer division never traps: the divisor is replaced by 1 where
// it is 0 or where the quotient overflows (INT_MIN / -1, which then gives
// INT_MIN), and a zero divisor gives 0 (language.md §6). Selects, no branch.
// CHECK-LABEL: func.func @div_i32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:.*]]: i32, %[[Y:.*]]: i32, %{{.*}}: i32):
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[MINUS_ONE:.*]] = arith.constant -1 : i32
// CHECK-DAG: %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK: %[[BY_ZERO:.*]] = arith.cmpi eq, %[[Y]], %[[ZERO]] : i32
// CHECK: %[[X_MIN:.*]] = arith.cmpi eq, %[[X]], %[[MIN]] : i32
// CHECK: %[[Y_M1:.*]] = arith.cmpi eq, %[[Y]], %[[MINUS_ONE]] : i32
// CHECK: %[[OVERFLOW:.*]] = arith.andi %[[X_MIN]], %[[Y_M1]] : i1
// CHECK: %[[UNSAFE:.*]] = arith.ori %[[BY_ZERO]], %[[OVERFLOW]] : i1
// CHECK: %[[DIVISOR:.*]] = arith.select %[[UNSAFE]], %[[ONE]], %[[Y]] : i32
// CHECK: %[[Q:.*]] = arith.divsi %[[X]], %[[DIVISOR]] : i32
// CHECK: %[[R:.*]] = arith.select %[[BY_ZERO]], %[[ZERO]], %[[Q]] : i32
// CHECK: linalg.yield %[[R]] : i32
module attributes {ein.dims = {}} {
  func.func @div_i32(%x: !ein.tensor<"4", i32>, %y: !ein.tensor<"4", i32>) -> !ein.tensor<"4", i32> {
    %0 = ein.elementwise "div" %x, %y : !ein.tensor<"4", i32>, !ein.tensor<"4", i32> -> !ein.tensor<"4", i32>
    return %0 : !ein.tensor<"4", i32>
  }
}

// -----

// Tests the same on i64, with i64's minimum.
// CHECK-LABEL: func.func @div_i64
// CHECK-DAG: arith.constant -9223372036854775808 : i64
// CHECK: arith.select
// CHECK: arith.divsi
// CHECK: arith.select
module attributes {ein.dims = {}} {
  func.func @div_i64(%x: !ein.tensor<"4", i64>, %y: !ein.tensor<"", i64>) -> !ein.tensor<"4", i64> {
    %0 = ein.elementwise "div" %x, %y : !ein.tensor<"4", i64>, !ein.tensor<"", i64> -> !ein.tensor<"4", i64>
    return %0 : !ein.tensor<"4", i64>
  }
}

// -----

// Tests that float division stays one arith.divf (IEEE: x / 0 is +-inf or NaN).
// CHECK-LABEL: func.func @div_f32
// CHECK: arith.divf
// CHECK-NOT: arith.select
module attributes {ein.dims = {}} {
  func.func @div_f32(%x: !ein.tensor<"4", f32>, %y: !ein.tensor<"4", f32>) -> !ein.tensor<"4", f32> {
    %0 = ein.elementwise "div" %x, %y : !ein.tensor<"4", f32>, !ein.tensor<"4", f32> -> !ein.tensor<"4", f32>
    return %0 : !ein.tensor<"4", f32>
  }
}

// -----

// Tests that an integer power never divides by zero: math.ipowi computes
// 1 / 0 on purpose for 0 ** negative, so a base of 2 (whose negative powers
// are 0 in integer division, as 1 / 0 is in ein) stands in for 0 there.
// CHECK-LABEL: func.func @pow_i32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:.*]]: i32, %[[Y:.*]]: i32, %{{.*}}: i32):
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK: %[[X0:.*]] = arith.cmpi eq, %[[X]], %[[ZERO]] : i32
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[Y]], %[[ZERO]] : i32
// CHECK: %[[UNSAFE:.*]] = arith.andi %[[X0]], %[[NEG]] : i1
// CHECK: %[[BASE:.*]] = arith.select %[[UNSAFE]], %[[TWO]], %[[X]] : i32
// CHECK: %[[R:.*]] = math.ipowi %[[BASE]], %[[Y]] : i32
// CHECK: linalg.yield %[[R]] : i32
module attributes {ein.dims = {}} {
  func.func @pow_i32(%x: !ein.tensor<"4", i32>, %y: !ein.tensor<"4", i32>) -> !ein.tensor<"4", i32> {
    %0 = ein.elementwise "pow" %x, %y : !ein.tensor<"4", i32>, !ein.tensor<"4", i32> -> !ein.tensor<"4", i32>
    return %0 : !ein.tensor<"4", i32>
  }
}
