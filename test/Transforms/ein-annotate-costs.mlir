// RUN: ein-opt %s --ein-annotate-costs --split-input-file | FileCheck %s

// Tests that a matmul-shaped einsum costs 2*m*n*k FLOPs, with values when the
// module binds every dim.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: ein.total_flops = "2*k*m*n", ein.total_flops_value = 2097152 : i128
// CHECK: ein.einsum
// CHECK-SAME: bytes_read = "4*k*m + 4*k*n", bytes_read_value = 65536 : i128
// CHECK-SAME: bytes_written = "4*m*n", bytes_written_value = 65536 : i128
// CHECK-SAME: flops = "2*k*m*n", flops_value = 2097152 : i128
// CHECK-SAME: view = false
module attributes {ein.dims = {k = 64 : i64, m = 128 : i64, n = 128 : i64}} {
  func.func @matmul(%a: !ein.tensor<"m k", f32>, %b: !ein.tensor<"k n", f32>) -> !ein.tensor<"m n", f32> {
    %0 = ein.einsum %a, %b "i k, k j -> i j" : !ein.tensor<"m k", f32>, !ein.tensor<"k n", f32> -> !ein.tensor<"m n", f32>
    return %0 : !ein.tensor<"m n", f32>
  }
}

// -----

// Tests that unbound dims leave formulas without values, and that merging
// adjacent axes is a view that moves no bytes while a permutation copies.
// CHECK-LABEL: func.func @views
// CHECK: ein.rearrange
// CHECK-SAME: bytes_read = "0", bytes_read_value = 0 : i128, bytes_written = "0", bytes_written_value = 0 : i128, flops = "0", flops_value = 0 : i128, view = true
// CHECK: ein.rearrange
// CHECK-SAME: bytes_read = "2*b*d*h*s", bytes_written = "2*b*d*h*s", flops = "0", flops_value = 0 : i128, view = false
func.func @views(%x: !ein.tensor<"b s h d", bf16>) -> (!ein.tensor<"b s h*d", bf16>, !ein.tensor<"b h s d", bf16>) {
  %0 = ein.rearrange %x "b s h d -> b s (h d)" : !ein.tensor<"b s h d", bf16> -> !ein.tensor<"b s h*d", bf16>
  %1 = ein.rearrange %x "b s h d -> b h s d" : !ein.tensor<"b s h d", bf16> -> !ein.tensor<"b h s d", bf16>
  return %0, %1 : !ein.tensor<"b s h*d", bf16>, !ein.tensor<"b h s d", bf16>
}

// -----

// Tests reduction costs: n-1 operations per output for sum, one more
// division per output for mean.
// CHECK-LABEL: func.func @reductions
// CHECK: ein.reduce sum
// CHECK-SAME: bytes_read = "4*c*r", bytes_written = "4*r", flops = "c*r - r", view = false
// CHECK: ein.reduce mean
// CHECK-SAME: bytes_read = "4*c*r", bytes_written = "4*r", flops = "c*r", view = false
func.func @reductions(%x: !ein.tensor<"r c", f32>) -> (!ein.tensor<"r", f32>, !ein.tensor<"r", f32>) {
  %0 = ein.reduce sum %x "r c -> r" : !ein.tensor<"r c", f32> -> !ein.tensor<"r", f32>
  %1 = ein.reduce mean %x "r c -> r" : !ein.tensor<"r c", f32> -> !ein.tensor<"r", f32>
  return %0, %1 : !ein.tensor<"r", f32>, !ein.tensor<"r", f32>
}

// -----

// Tests the cost of var, two passes: 4 FLOPs per input element (the mean's
// add and divide, then subtract, square, add, divide) and the input read
// twice.
// CHECK-LABEL: func.func @variance
// CHECK: ein.reduce var
// CHECK-SAME: bytes_read = "8*c*r", bytes_written = "4*r", flops = "4*c*r", view = false
func.func @variance(%x: !ein.tensor<"r c", f32>) -> !ein.tensor<"r", f32> {
  %0 = ein.reduce var %x "r c -> r" : !ein.tensor<"r c", f32> -> !ein.tensor<"r", f32>
  return %0 : !ein.tensor<"r", f32>
}

// -----

// Tests that a three-operand chain reports the naive count and the count
// along the cheapest pairwise order: (A B) then C costs 2*a*b*c + 2*a*c*d
// = 8388608 + 33554432; (B C) first would cost 2*b*c*d + 2*a*b*d = 1073741824.
// CHECK-LABEL: func.func @chain
// CHECK: ein.einsum
// CHECK-SAME: flops = "2*a*b*c + 2*a*c*d", flops_value = 41943040 : i128
// CHECK-SAME: naive_flops = "3*a*b*c*d", naive_flops_value = 51539607552 : i128
module attributes {ein.dims = {a = 64 : i64, b = 1024 : i64, c = 64 : i64, d = 4096 : i64}} {
  func.func @chain(%x: !ein.tensor<"a b", f32>, %y: !ein.tensor<"b c", f32>, %z: !ein.tensor<"c d", f32>) -> !ein.tensor<"a d", f32> {
    %0 = ein.einsum %x, %y, %z "i j, j k, k l -> i l" : !ein.tensor<"a b", f32>, !ein.tensor<"b c", f32>, !ein.tensor<"c d", f32> -> !ein.tensor<"a d", f32>
    return %0 : !ein.tensor<"a d", f32>
  }
}

// -----

// Tests elementwise costs (one FLOP per output element, broadcasting by name)
// and that a repeat adding a standalone axis is a stride-0 view.
// CHECK-LABEL: func.func @elementwise
// CHECK: ein.elementwise "add"
// CHECK-SAME: bytes_read = "4*c*n + 4*c", bytes_written = "4*c*n", flops = "c*n"
// CHECK: ein.repeat
// CHECK-SAME: view = true
func.func @elementwise(%x: !ein.tensor<"n c", f32>, %b: !ein.tensor<"c", f32>) -> (!ein.tensor<"n c", f32>, !ein.tensor<"3 n c", f32>) {
  %0 = ein.elementwise "add" %x, %b : !ein.tensor<"n c", f32>, !ein.tensor<"c", f32> -> !ein.tensor<"n c", f32>
  %1 = ein.repeat %x "n c -> r n c" {r = "3"} : !ein.tensor<"n c", f32> -> !ein.tensor<"3 n c", f32>
  return %0, %1 : !ein.tensor<"n c", f32>, !ein.tensor<"3 n c", f32>
}

// -----

// Tests that arange reads nothing, does no arithmetic and writes n numbers.
// CHECK-LABEL: func.func @arange
// CHECK: ein.arange
// CHECK-SAME: bytes_read = "0", bytes_read_value = 0 : i128, bytes_written = "8*s", bytes_written_value = 80 : i128, flops = "0", flops_value = 0 : i128
module attributes {ein.dims = {s = 10 : i64}} {
  func.func @arange() -> !ein.tensor<"s", i64> {
    %0 = ein.arange : !ein.tensor<"s", i64>
    return %0 : !ein.tensor<"s", i64>
  }
}

// -----

// Tests that dropout counts one FLOP per element (the scale; Philox's integer
// rounds are not FLOPs) and reads x and the 8-byte key, as an elementwise op.
// CHECK-LABEL: func.func @dropout
// CHECK: ein.dropout
// CHECK-SAME: bytes_read = "4*b*s + 8", bytes_read_value = 88 : i128, bytes_written = "4*b*s", bytes_written_value = 80 : i128, flops = "b*s", flops_value = 20 : i128
module attributes {ein.dims = {b = 4 : i64, s = 5 : i64}} {
  func.func @dropout(%x: !ein.tensor<"b s", f32>, %k: !ein.tensor<"", i64>) -> !ein.tensor<"b s", f32> {
    %0 = ein.dropout %x key %k p 0.1 : !ein.tensor<"b s", f32>, !ein.tensor<"", i64> -> !ein.tensor<"b s", f32>
    return %0 : !ein.tensor<"b s", f32>
  }
}

// -----

// Tests that take_along does no arithmetic and reads the ids and one element
// of the input per position (b*s elements), not the whole b*s*v input.
// CHECK-LABEL: func.func @take_along
// CHECK: ein.take_along
// CHECK-SAME: bytes_read = "12*b*s", bytes_read_value = 240 : i128, bytes_written = "4*b*s", bytes_written_value = 80 : i128, flops = "0", flops_value = 0 : i128
module attributes {ein.dims = {v = 1000 : i64, b = 4 : i64, s = 5 : i64}} {
  func.func @take_along(%x: !ein.tensor<"b s v", f32>, %i: !ein.tensor<"b s", i64>) -> !ein.tensor<"b s", f32> {
    %0 = ein.take_along %x[%i] axis 2 : !ein.tensor<"b s v", f32>, !ein.tensor<"b s", i64> -> !ein.tensor<"b s", f32>
    return %0 : !ein.tensor<"b s", f32>
  }
}

// -----

// Tests that take does no arithmetic and reads the ids and only the rows it
// gathers (n*d elements), not the whole table.
// CHECK-LABEL: func.func @take
// CHECK: ein.take
// CHECK-SAME: bytes_read = "4*d*n + 8*n", bytes_read_value = 200 : i128, bytes_written = "4*d*n", bytes_written_value = 120 : i128, flops = "0", flops_value = 0 : i128
module attributes {ein.dims = {vocab = 1000 : i64, d = 3 : i64, n = 10 : i64}} {
  func.func @take(%t: !ein.tensor<"vocab d", f32>, %i: !ein.tensor<"n", i64>) -> !ein.tensor<"n d", f32> {
    %0 = ein.take %t[%i] axis 0 : !ein.tensor<"vocab d", f32>, !ein.tensor<"n", i64> -> !ein.tensor<"n d", f32>
    return %0 : !ein.tensor<"n d", f32>
  }
}

// -----

// Tests that a slice of the leading dim is a view (nothing moves) and that
// one of another dim reads and writes the selected elements only (not the
// whole operand), with no FLOPs.
// CHECK-LABEL: func.func @slices
// CHECK: ein.slice
// CHECK-SAME: bytes_read = "0", bytes_read_value = 0 : i128, bytes_written = "0", bytes_written_value = 0 : i128, flops = "0", flops_value = 0 : i128, view = true
// CHECK: ein.slice
// CHECK-SAME: bytes_read = "8*s", bytes_read_value = 80 : i128, bytes_written = "8*s", bytes_written_value = 80 : i128, flops = "0", flops_value = 0 : i128, view = false
module attributes {ein.dims = {s = 10 : i64, d = 6 : i64}} {
  func.func @slices(%x: !ein.tensor<"s d", f32>) -> (!ein.tensor<"2 d", f32>, !ein.tensor<"s 2", f32>) {
    %0 = ein.slice %x axis 0 from "1" to "3" : !ein.tensor<"s d", f32> -> !ein.tensor<"2 d", f32>
    %1 = ein.slice %x axis 1 from "d - 2" to "d" : !ein.tensor<"s d", f32> -> !ein.tensor<"s 2", f32>
    return %0, %1 : !ein.tensor<"2 d", f32>, !ein.tensor<"s 2", f32>
  }
}
