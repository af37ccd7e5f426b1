// RUN: ein-opt %s --ein-split-einsums --split-input-file | FileCheck %s

// Tests a three-operand chain: with a = 1000, b = 10, c = 1000, d = 10,
// y z first costs 2*b*c*d + 2*a*b*d = 400000 against 40000000 for x y
// first, so y and z are contracted first, keeping b d (a later operand needs
// b, the output d), then x with that product.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: !ein.tensor<"a b", f32>, %[[Y:.*]]: !ein.tensor<"b c", f32>, %[[Z:.*]]: !ein.tensor<"c d", f32>)
// CHECK-NEXT: %[[YZ:.*]] = ein.einsum %[[Y]], %[[Z]] "b c, c d -> b d" : !ein.tensor<"b c", f32>, !ein.tensor<"c d", f32> -> !ein.tensor<"b d", f32>
// CHECK-NEXT: %[[R:.*]] = ein.einsum %[[X]], %[[YZ]] "a b, b d -> a d" : !ein.tensor<"a b", f32>, !ein.tensor<"b d", f32> -> !ein.tensor<"a d", f32>
// CHECK-NEXT: return %[[R]]
module attributes {ein.dims = {a = 1000 : i64, b = 10 : i64, c = 1000 : i64, d = 10 : i64}} {
  func.func @chain(%x: !ein.tensor<"a b", f32>, %y: !ein.tensor<"b c", f32>, %z: !ein.tensor<"c d", f32>) -> !ein.tensor<"a d", f32> {
    %0 = ein.einsum %x, %y, %z "a b, b c, c d -> a d" : !ein.tensor<"a b", f32>, !ein.tensor<"b c", f32>, !ein.tensor<"c d", f32> -> !ein.tensor<"a d", f32>
    return %0 : !ein.tensor<"a d", f32>
  }
}

// -----

// Tests that the order follows the sizes: with a = 10, b = 1000, c = 10,
// d = 1000, x y first (2*a*b*c + 2*a*c*d = 400000) is the cheaper one.
// CHECK-LABEL: func.func @chain_swapped
// CHECK-SAME: (%[[X:.*]]: !ein.tensor<"a b", f32>, %[[Y:.*]]: !ein.tensor<"b c", f32>, %[[Z:.*]]: !ein.tensor<"c d", f32>)
// CHECK-NEXT: %[[XY:.*]] = ein.einsum %[[X]], %[[Y]] "a b, b c -> a c"
// CHECK-NEXT: %[[R:.*]] = ein.einsum %[[Z]], %[[XY]] "c d, a c -> a d"
// CHECK-NEXT: return %[[R]]
module attributes {ein.dims = {a = 10 : i64, b = 1000 : i64, c = 10 : i64, d = 1000 : i64}} {
  func.func @chain_swapped(%x: !ein.tensor<"a b", f32>, %y: !ein.tensor<"b c", f32>, %z: !ein.tensor<"c d", f32>) -> !ein.tensor<"a d", f32> {
    %0 = ein.einsum %x, %y, %z "a b, b c, c d -> a d" : !ein.tensor<"a b", f32>, !ein.tensor<"b c", f32>, !ein.tensor<"c d", f32> -> !ein.tensor<"a d", f32>
    return %0 : !ein.tensor<"a d", f32>
  }
}

// -----

// Tests four operands (i=2 j=3 k=4 l=5 m=6), contracted from the vector
// inwards, each product keeping only the index the next operand needs:
// y z sums m (2*5*6 = 60), x with that sums l (2*4*5 = 40), w with that sums
// i and k (2*2*3*4 = 48): 148 FLOPs. No order is cheaper: a step with y
// costs at least 60, one with x at least 40, one with w at least 48.
// CHECK-LABEL: func.func @four
// CHECK-SAME: (%[[W:.*]]: !ein.tensor<"2 3 4", f32>, %[[X:.*]]: !ein.tensor<"4 5", f32>, %[[Y:.*]]: !ein.tensor<"5 6", f32>, %[[Z:.*]]: !ein.tensor<"6", f32>)
// CHECK-NEXT: %[[YZ:.*]] = ein.einsum %[[Y]], %[[Z]] "l m, m -> l" : !ein.tensor<"5 6", f32>, !ein.tensor<"6", f32> -> !ein.tensor<"5", f32>
// CHECK-NEXT: %[[XYZ:.*]] = ein.einsum %[[X]], %[[YZ]] "k l, l -> k" : !ein.tensor<"4 5", f32>, !ein.tensor<"5", f32> -> !ein.tensor<"4", f32>
// CHECK-NEXT: %[[R:.*]] = ein.einsum %[[W]], %[[XYZ]] "i j k, k -> j" : !ein.tensor<"2 3 4", f32>, !ein.tensor<"4", f32> -> !ein.tensor<"3", f32>
// CHECK-NEXT: return %[[R]]
func.func @four(%w: !ein.tensor<"2 3 4", f32>, %x: !ein.tensor<"4 5", f32>, %y: !ein.tensor<"5 6", f32>, %z: !ein.tensor<"6", f32>) -> !ein.tensor<"3", f32> {
  %0 = ein.einsum %w, %x, %y, %z "i j k, k l, l m, m -> j" : !ein.tensor<"2 3 4", f32>, !ein.tensor<"4 5", f32>, !ein.tensor<"5 6", f32>, !ein.tensor<"6", f32> -> !ein.tensor<"3", f32>
  return %0 : !ein.tensor<"3", f32>
}

// -----

// Tests that bf16 operands without acc accumulate in f32, as one einsum
// would: every step has acc f32, an operand that meets an f32 product is
// cast to f32 first, and the result is rounded to bf16 once, at the end.
// (a=2 b=3 c=4 d=5: x y first, 2*2*3*4 + 2*2*4*5 = 128 FLOPs, against 180.)
// CHECK-LABEL: func.func @bf16_chain
// CHECK-SAME: (%[[X:.*]]: !ein.tensor<"2 3", bf16>, %[[Y:.*]]: !ein.tensor<"3 4", bf16>, %[[Z:.*]]: !ein.tensor<"4 5", bf16>)
// CHECK-NEXT: %[[XY:.*]] = ein.einsum %[[X]], %[[Y]] "a b, b c -> a c" acc f32 : !ein.tensor<"2 3", bf16>, !ein.tensor<"3 4", bf16> -> !ein.tensor<"2 4", f32>
// CHECK-NEXT: %[[ZF:.*]] = ein.cast %[[Z]] : !ein.tensor<"4 5", bf16> -> !ein.tensor<"4 5", f32>
// CHECK-NEXT: %[[P:.*]] = ein.einsum %[[ZF]], %[[XY]] "c d, a c -> a d" acc f32 : !ein.tensor<"4 5", f32>, !ein.tensor<"2 4", f32> -> !ein.tensor<"2 5", f32>
// CHECK-NEXT: %[[R:.*]] = ein.cast %[[P]] : !ein.tensor<"2 5", f32> -> !ein.tensor<"2 5", bf16>
// CHECK-NEXT: return %[[R]]
func.func @bf16_chain(%x: !ein.tensor<"2 3", bf16>, %y: !ein.tensor<"3 4", bf16>, %z: !ein.tensor<"4 5", bf16>) -> !ein.tensor<"2 5", bf16> {
  %0 = ein.einsum %x, %y, %z "a b, b c, c d -> a d" : !ein.tensor<"2 3", bf16>, !ein.tensor<"3 4", bf16>, !ein.tensor<"4 5", bf16> -> !ein.tensor<"2 5", bf16>
  return %0 : !ein.tensor<"2 5", bf16>
}

// -----

// Tests that an explicit acc is kept on every step, also a narrow one
// (acc bf16 on f32 rounds each operand to bf16 and accumulates in bf16), and
// that the last step gives the result type.
// CHECK-LABEL: func.func @acc_bf16
// CHECK-SAME: (%[[X:.*]]: !ein.tensor<"2 3", f32>, %[[Y:.*]]: !ein.tensor<"3 4", f32>, %[[Z:.*]]: !ein.tensor<"4 5", f32>)
// CHECK-NEXT: %[[XY:.*]] = ein.einsum %[[X]], %[[Y]] "a b, b c -> a c" acc bf16 : !ein.tensor<"2 3", f32>, !ein.tensor<"3 4", f32> -> !ein.tensor<"2 4", bf16>
// CHECK-NEXT: %[[ZB:.*]] = ein.cast %[[Z]] : !ein.tensor<"4 5", f32> -> !ein.tensor<"4 5", bf16>
// CHECK-NEXT: %[[R:.*]] = ein.einsum %[[ZB]], %[[XY]] "c d, a c -> a d" acc bf16 : !ein.tensor<"4 5", bf16>, !ein.tensor<"2 4", bf16> -> !ein.tensor<"2 5", bf16>
// CHECK-NEXT: return %[[R]]
func.func @acc_bf16(%x: !ein.tensor<"2 3", f32>, %y: !ein.tensor<"3 4", f32>, %z: !ein.tensor<"4 5", f32>) -> !ein.tensor<"2 5", bf16> {
  %0 = ein.einsum %x, %y, %z "a b, b c, c d -> a d" acc bf16 : !ein.tensor<"2 3", f32>, !ein.tensor<"3 4", f32>, !ein.tensor<"4 5", f32> -> !ein.tensor<"2 5", bf16>
  return %0 : !ein.tensor<"2 5", bf16>
}

// -----

// Tests i32 operands with acc i64: products in i64, the third operand
// widened before it meets one.
// CHECK-LABEL: func.func @acc_i64
// CHECK: ein.einsum %{{.*}}, %{{.*}} "a b, b c -> a c" acc i64 : !ein.tensor<"2 3", i32>, !ein.tensor<"3 4", i32> -> !ein.tensor<"2 4", i64>
// CHECK-NEXT: ein.cast %{{.*}} : !ein.tensor<"4 5", i32> -> !ein.tensor<"4 5", i64>
// CHECK-NEXT: ein.einsum %{{.*}}, %{{.*}} "c d, a c -> a d" acc i64 : !ein.tensor<"4 5", i64>, !ein.tensor<"2 4", i64> -> !ein.tensor<"2 5", i64>
// CHECK-NEXT: return
func.func @acc_i64(%x: !ein.tensor<"2 3", i32>, %y: !ein.tensor<"3 4", i32>, %z: !ein.tensor<"4 5", i32>) -> !ein.tensor<"2 5", i64> {
  %0 = ein.einsum %x, %y, %z "a b, b c, c d -> a d" acc i64 : !ein.tensor<"2 3", i32>, !ein.tensor<"3 4", i32>, !ein.tensor<"4 5", i32> -> !ein.tensor<"2 5", i64>
  return %0 : !ein.tensor<"2 5", i64>
}

// -----

// Tests the ellipsis (broadcast: "3 2" against "2") and a composition with
// its keyword size: each product keeps "..." for the ellipsis dims, and a
// step names only the sizes of its own axes. (x y first: 2*6*3*4*5 +
// 2*6*5*7 = 1140 FLOPs, against 2*2*3*4*5*7 + ... for y z.)
// CHECK-LABEL: func.func @ellipsis_and_composition
// CHECK-NEXT: %[[P:.*]] = ein.einsum %{{.*}}, %{{.*}} "... (h d), ... h d e -> ... e" {h = "3"} : !ein.tensor<"3 2 12", f32>, !ein.tensor<"2 3 4 5", f32> -> !ein.tensor<"3 2 5", f32>
// CHECK-NEXT: %[[R:.*]] = ein.einsum %{{.*}}, %[[P]] "e f, ... e -> ... f" : !ein.tensor<"5 7", f32>, !ein.tensor<"3 2 5", f32> -> !ein.tensor<"3 2 7", f32>
// CHECK-NEXT: return %[[R]]
func.func @ellipsis_and_composition(%x: !ein.tensor<"3 2 12", f32>, %y: !ein.tensor<"2 3 4 5", f32>, %z: !ein.tensor<"5 7", f32>) -> !ein.tensor<"3 2 7", f32> {
  %0 = ein.einsum %x, %y, %z "... (h d), ... h d e, e f -> ... f" {h = 3} : !ein.tensor<"3 2 12", f32>, !ein.tensor<"2 3 4 5", f32>, !ein.tensor<"5 7", f32> -> !ein.tensor<"3 2 7", f32>
  return %0 : !ein.tensor<"3 2 7", f32>
}

// -----

// Tests an ellipsis dim of size 1 broadcast against 5: x y's product keeps
// "..." (here the 1), and the last step broadcasts it against z's 5.
// CHECK-LABEL: func.func @ellipsis_broadcast
// CHECK-NEXT: %[[P:.*]] = ein.einsum %{{.*}}, %{{.*}} "... i j, j k -> ... i k" : !ein.tensor<"1 2 3", f32>, !ein.tensor<"3 4", f32> -> !ein.tensor<"1 2 4", f32>
// CHECK-NEXT: %[[R:.*]] = ein.einsum %{{.*}}, %[[P]] "... k l, ... i k -> ... i l" : !ein.tensor<"5 4 6", f32>, !ein.tensor<"1 2 4", f32> -> !ein.tensor<"5 2 6", f32>
// CHECK-NEXT: return %[[R]]
func.func @ellipsis_broadcast(%x: !ein.tensor<"1 2 3", f32>, %y: !ein.tensor<"3 4", f32>, %z: !ein.tensor<"5 4 6", f32>) -> !ein.tensor<"5 2 6", f32> {
  %0 = ein.einsum %x, %y, %z "... i j, j k, ... k l -> ... i l" : !ein.tensor<"1 2 3", f32>, !ein.tensor<"3 4", f32>, !ein.tensor<"5 4 6", f32> -> !ein.tensor<"5 2 6", f32>
  return %0 : !ein.tensor<"5 2 6", f32>
}

// -----

// Tests that unbound dims count as 512 when ordering: with m and p unbound
// and n = 2, x y first costs 2*512*2*512 + 2*512*512*4 = 3145728, y z first
// 2*2*512*4 + 2*512*2*4 = 16384.
// CHECK-LABEL: func.func @symbolic
// CHECK-NEXT: ein.einsum %{{.*}}, %{{.*}} "j k, k l -> j l" : !ein.tensor<"n p", f32>, !ein.tensor<"p 4", f32> -> !ein.tensor<"n 4", f32>
// CHECK-NEXT: ein.einsum %{{.*}}, %{{.*}} "i j, j l -> i l" : !ein.tensor<"m n", f32>, !ein.tensor<"n 4", f32> -> !ein.tensor<"m 4", f32>
module attributes {ein.dims = {n = 2 : i64}} {
  func.func @symbolic(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"n p", f32>, %z: !ein.tensor<"p 4", f32>) -> !ein.tensor<"m 4", f32> {
    %0 = ein.einsum %x, %y, %z "i j, j k, k l -> i l" : !ein.tensor<"m n", f32>, !ein.tensor<"n p", f32>, !ein.tensor<"p 4", f32> -> !ein.tensor<"m 4", f32>
    return %0 : !ein.tensor<"m 4", f32>
  }
}

// -----

// Tests a one-operand step first: a = 100 is only in x. Summing it out of x
// alone costs 2*100*2 = 400, then y and z 8 each: 416, against 808 for the
// best pairwise order (x y first, 2*100*2*2). The summed x moves to the end
// of the live operands: [y, z, x'], and y x' is the pair (0,2).
// CHECK-LABEL: func.func @one_operand_first
// CHECK-SAME: (%[[X:.*]]: !ein.tensor<"100 2", f32>, %[[Y:.*]]: !ein.tensor<"2 2", f32>, %[[Z:.*]]: !ein.tensor<"2 2", f32>)
// CHECK-NEXT: %[[XS:.*]] = ein.einsum %[[X]] "a b -> b" : !ein.tensor<"100 2", f32> -> !ein.tensor<"2", f32>
// CHECK-NEXT: %[[P:.*]] = ein.einsum %[[Y]], %[[XS]] "b c, b -> c" : !ein.tensor<"2 2", f32>, !ein.tensor<"2", f32> -> !ein.tensor<"2", f32>
// CHECK-NEXT: %[[R:.*]] = ein.einsum %[[Z]], %[[P]] "c d, c -> d" : !ein.tensor<"2 2", f32>, !ein.tensor<"2", f32> -> !ein.tensor<"2", f32>
// CHECK-NEXT: return %[[R]]
func.func @one_operand_first(%x: !ein.tensor<"100 2", f32>, %y: !ein.tensor<"2 2", f32>, %z: !ein.tensor<"2 2", f32>) -> !ein.tensor<"2", f32> {
  %0 = ein.einsum %x, %y, %z "a b, b c, c d -> d" : !ein.tensor<"100 2", f32>, !ein.tensor<"2 2", f32>, !ein.tensor<"2 2", f32> -> !ein.tensor<"2", f32>
  return %0 : !ein.tensor<"2", f32>
}

// -----

// Tests a one-operand step to a scalar (the trace of y) and a step whose
// first operand is that scalar (its side of the pattern is empty): trace
// 2*3 = 6, x z 2*2*8 = 32, the scalar times the result 2: 40, against 44
// pairwise and 46 or 54 with the scalar met earlier.
// CHECK-LABEL: func.func @scalar_first
// CHECK-SAME: (%[[X:.*]]: !ein.tensor<"2 8", f32>, %[[Y:.*]]: !ein.tensor<"3 3", f32>, %[[Z:.*]]: !ein.tensor<"8", f32>)
// CHECK-NEXT: %[[T:.*]] = ein.einsum %[[Y]] "f f -> " : !ein.tensor<"3 3", f32> -> !ein.tensor<"", f32>
// CHECK-NEXT: %[[P:.*]] = ein.einsum %[[X]], %[[Z]] "b c, c -> b" : !ein.tensor<"2 8", f32>, !ein.tensor<"8", f32> -> !ein.tensor<"2", f32>
// CHECK-NEXT: %[[R:.*]] = ein.einsum %[[T]], %[[P]] ", b -> b" : !ein.tensor<"", f32>, !ein.tensor<"2", f32> -> !ein.tensor<"2", f32>
// CHECK-NEXT: return %[[R]]
func.func @scalar_first(%x: !ein.tensor<"2 8", f32>, %y: !ein.tensor<"3 3", f32>, %z: !ein.tensor<"8", f32>) -> !ein.tensor<"2", f32> {
  %0 = ein.einsum %x, %y, %z "b c, f f, c -> b" : !ein.tensor<"2 8", f32>, !ein.tensor<"3 3", f32>, !ein.tensor<"8", f32> -> !ein.tensor<"2", f32>
  return %0 : !ein.tensor<"2", f32>
}

// -----

// Tests that an einsum with an empty operand (j = 0) is left whole: its
// lowering fills the result with zeros and builds no product.
// CHECK-LABEL: func.func @empty_operand
// CHECK-NEXT: ein.einsum %{{.*}}, %{{.*}}, %{{.*}} "i j, j k, k l -> i l"
// CHECK-NEXT: return
module attributes {ein.dims = {i = 2 : i64, j = 0 : i64, k = 3 : i64, l = 4 : i64}} {
  func.func @empty_operand(%x: !ein.tensor<"i j", f32>, %y: !ein.tensor<"j k", f32>, %z: !ein.tensor<"k l", f32>) -> !ein.tensor<"i l", f32> {
    %0 = ein.einsum %x, %y, %z "i j, j k, k l -> i l" : !ein.tensor<"i j", f32>, !ein.tensor<"j k", f32>, !ein.tensor<"k l", f32> -> !ein.tensor<"i l", f32>
    return %0 : !ein.tensor<"i l", f32>
  }
}

// -----

// Tests that einsums of one and two operands are left as they are.
// CHECK-LABEL: func.func @few_operands
// CHECK-NEXT: ein.einsum %{{.*}} "i j -> i"
// CHECK-NEXT: ein.einsum %{{.*}}, %{{.*}} "i, i -> "
// CHECK-NEXT: return
func.func @few_operands(%x: !ein.tensor<"2 3", f32>, %y: !ein.tensor<"2", f32>) -> !ein.tensor<"", f32> {
  %0 = ein.einsum %x "i j -> i" : !ein.tensor<"2 3", f32> -> !ein.tensor<"2", f32>
  %1 = ein.einsum %0, %y "i, i -> " : !ein.tensor<"2", f32>, !ein.tensor<"2", f32> -> !ein.tensor<"", f32>
  return %1 : !ein.tensor<"", f32>
}
