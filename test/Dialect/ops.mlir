// RUN: ein-opt %s --split-input-file | ein-opt --split-input-file | FileCheck %s
// RUN: ein-opt %s --split-input-file --mlir-print-op-generic | ein-opt --split-input-file | FileCheck %s
// RUN: ein-opt %s --split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// Tests that tensor types with symbolic shapes print canonically: a
// composition becomes a product, sums fold, `...` and `_` get fresh names.
// CHECK-LABEL: func.func private @types
// CHECK-SAME: !ein.tensor<"batch seq d*heads", bf16>
// CHECK-SAME: !ein.tensor<"", f32>
// CHECK-SAME: !ein.tensor<"*batch n+1 2*n", f16>
// CHECK-SAME: !ein.tensor<"*_anon0 hidden/8", f64>
// CHECK-SAME: !ein.tensor<"#b _anon0 3", i64>
// CHECK-SAME: !ein.tensor<"n-1", i32>
// CHECK-SAME: !ein.tensor<"x", f8E4M3FN>
// CHECK-SAME: !ein.tensor<"x", f8E5M2>
func.func private @types(!ein.tensor<"batch seq (heads d)", bf16>,
                         !ein.tensor<"", f32>,
                         !ein.tensor<"*batch n+1 n+n", f16>,
                         !ein.tensor<"... hidden/8", f64>,
                         !ein.tensor<"#b _ 3", i64>,
                         !ein.tensor<"n-1", i32>,
                         !ein.tensor<"x", f8E4M3FN>,
                         !ein.tensor<"x", f8E5M2>)

// -----

// Tests that pattern and reduce-kind attributes round-trip on their own, with
// the pattern text canonicalised to single spaces.
// CHECK-LABEL: func.func private @attrs
// CHECK-SAME: ein.kind = #ein.reduce_kind<max>
// CHECK-SAME: ein.pattern = #ein.pattern<"b s (h d) -> b h s d">
func.func private @attrs() attributes {
  ein.pattern = #ein.pattern<"b   s (h  d)->b h s d">,
  ein.kind = #ein.reduce_kind<max>
}

// -----

// Tests rearrange with a size bound to a symbol and to a module dim.
// CHECK: module attributes {ein.dims = {heads = 8 : i64}}
// CHECK-LABEL: func.func @rearrange
// CHECK: ein.rearrange %{{.*}} "b s (h d) -> b h s d" {h = "heads"} : !ein.tensor<"batch seq d*heads", bf16> -> !ein.tensor<"batch heads seq d", bf16>
// CHECK: ein.rearrange %{{.*}} "b s (h d) -> b s h d" {h = 8 : i64} : !ein.tensor<"batch seq 64", f32> -> !ein.tensor<"batch seq heads 8", f32>
// CHECK: ein.rearrange %{{.*}} "... d -> d ..." : !ein.tensor<"*batch d", f32> -> !ein.tensor<"d *batch", f32>
module attributes {ein.dims = {heads = 8 : i64}} {
  func.func @rearrange(%x: !ein.tensor<"batch seq heads*d", bf16>,
                       %y: !ein.tensor<"batch seq 64", f32>,
                       %z: !ein.tensor<"*batch d", f32>) {
    %0 = ein.rearrange %x "b s (h d) -> b h s d" {h = "heads"}
        : !ein.tensor<"batch seq heads*d", bf16> -> !ein.tensor<"batch heads seq d", bf16>
    %1 = ein.rearrange %y "b s (h d) -> b s h d" {h = 8}
        : !ein.tensor<"batch seq 64", f32> -> !ein.tensor<"batch seq heads 8", f32>
    %2 = ein.rearrange %z "... d -> d ..." : !ein.tensor<"*batch d", f32> -> !ein.tensor<"d *batch", f32>
    return
  }
}

// -----

// Tests every reduction kind.
// CHECK-LABEL: func.func @reduce
// CHECK: ein.reduce sum %{{.*}} "b s d -> b d" : !ein.tensor<"batch seq d", f32> -> !ein.tensor<"batch d", f32>
// CHECK: ein.reduce mean %{{.*}} "b s d -> b"
// CHECK: ein.reduce max %{{.*}} "b s d -> b s 1"
// CHECK: ein.reduce min %{{.*}} "b s d -> "
// CHECK: ein.reduce prod %{{.*}} "b (s p) d -> b s d" {p = "2"}
func.func @reduce(%x: !ein.tensor<"batch seq d", f32>, %y: !ein.tensor<"batch 2*seq d", f32>) {
  %0 = ein.reduce sum %x "b s d -> b d" : !ein.tensor<"batch seq d", f32> -> !ein.tensor<"batch d", f32>
  %1 = ein.reduce mean %x "b s d -> b" : !ein.tensor<"batch seq d", f32> -> !ein.tensor<"batch", f32>
  %2 = ein.reduce max %x "b s d -> b s 1" : !ein.tensor<"batch seq d", f32> -> !ein.tensor<"batch seq 1", f32>
  %3 = ein.reduce min %x "b s d -> " : !ein.tensor<"batch seq d", f32> -> !ein.tensor<"", f32>
  %4 = ein.reduce prod %y "b (s p) d -> b s d" {p = "2"} : !ein.tensor<"batch 2*seq d", f32> -> !ein.tensor<"batch seq d", f32>
  return
}

// -----

// Tests repeat with a new axis sized by a number and by a symbol.
// CHECK-LABEL: func.func @repeat
// CHECK: ein.repeat %{{.*}} "h w -> h w c" {c = "3"} : !ein.tensor<"h w", f32> -> !ein.tensor<"h w 3", f32>
// CHECK: ein.repeat %{{.*}} "h w -> (h r) w" {r = "k"} : !ein.tensor<"h w", f32> -> !ein.tensor<"h*k w", f32>
func.func @repeat(%x: !ein.tensor<"h w", f32>) {
  %0 = ein.repeat %x "h w -> h w c" {c = "3"} : !ein.tensor<"h w", f32> -> !ein.tensor<"h w 3", f32>
  %1 = ein.repeat %x "h w -> (h r) w" {r = "k"} : !ein.tensor<"h w", f32> -> !ein.tensor<"k*h w", f32>
  return
}

// -----

// Tests einsum with two operands, an accumulation type, one operand and three.
// CHECK-LABEL: func.func @einsum
// CHECK: ein.einsum %{{.*}}, %{{.*}} "b i d, b j d -> b i j" acc f32 : !ein.tensor<"batch seq d", bf16>, !ein.tensor<"batch seq d", bf16> -> !ein.tensor<"batch seq seq", f32>
// CHECK: ein.einsum %{{.*}} "i j -> j i" : !ein.tensor<"m n", f32> -> !ein.tensor<"n m", f32>
// CHECK: ein.einsum %{{.*}}, %{{.*}}, %{{.*}} "i j, j k, k l -> i l" : !ein.tensor<"m n", f32>, !ein.tensor<"n m", f32>, !ein.tensor<"m n", f32> -> !ein.tensor<"m n", f32>
func.func @einsum(%q: !ein.tensor<"batch seq d", bf16>, %k: !ein.tensor<"batch seq d", bf16>,
                  %a: !ein.tensor<"m n", f32>) {
  %0 = ein.einsum %q, %k "b i d, b j d -> b i j" acc f32
      : !ein.tensor<"batch seq d", bf16>, !ein.tensor<"batch seq d", bf16> -> !ein.tensor<"batch seq seq", f32>
  %1 = ein.einsum %a "i j -> j i" : !ein.tensor<"m n", f32> -> !ein.tensor<"n m", f32>
  %2 = ein.einsum %a, %1, %a "i j, j k, k l -> i l"
      : !ein.tensor<"m n", f32>, !ein.tensor<"n m", f32>, !ein.tensor<"m n", f32> -> !ein.tensor<"m n", f32>
  return
}

// -----

// Tests pack and unpack along the `*` axes.
// CHECK-LABEL: func.func @pack_unpack
// CHECK: %[[P:.*]] = ein.pack %{{.*}}, %{{.*}} "b * c" : !ein.tensor<"b h w c", f32>, !ein.tensor<"b c", f32> -> !ein.tensor<"b h*w+1 c", f32>
// CHECK: ein.unpack %[[P]] "b * c" ["h w", ""] : !ein.tensor<"b h*w+1 c", f32> -> !ein.tensor<"b h w c", f32>, !ein.tensor<"b c", f32>
func.func @pack_unpack(%x: !ein.tensor<"b h w c", f32>, %y: !ein.tensor<"b c", f32>) {
  %0 = ein.pack %x, %y "b * c" : !ein.tensor<"b h w c", f32>, !ein.tensor<"b c", f32> -> !ein.tensor<"b h*w+1 c", f32>
  %1:2 = ein.unpack %0 "b * c" ["h w", ""] : !ein.tensor<"b h*w+1 c", f32> -> !ein.tensor<"b h w c", f32>, !ein.tensor<"b c", f32>
  return
}

// -----

// Tests the binary ops, with equal shapes and broadcasting by name.
// CHECK-LABEL: func.func @binary
// CHECK: ein.elementwise "add" %{{.*}}, %{{.*}} : !ein.tensor<"b s d", f32>, !ein.tensor<"b s d", f32> -> !ein.tensor<"b s d", f32>
// CHECK: ein.elementwise "sub" %{{.*}}, %{{.*}} : !ein.tensor<"b s d", f32>, !ein.tensor<"d", f32> -> !ein.tensor<"b s d", f32>
// CHECK: ein.elementwise "mul" %{{.*}}, %{{.*}} : !ein.tensor<"", f32>, !ein.tensor<"b s d", f32> -> !ein.tensor<"b s d", f32>
// CHECK: ein.elementwise "div" %{{.*}}, %{{.*}} : !ein.tensor<"b s d", f32>, !ein.tensor<"b 1 d", f32> -> !ein.tensor<"b s d", f32>
// CHECK: ein.elementwise "pow" %{{.*}}, %{{.*}} : !ein.tensor<"b s d", f32>, !ein.tensor<"", f32> -> !ein.tensor<"b s d", f32>
func.func @binary(%x: !ein.tensor<"b s d", f32>, %v: !ein.tensor<"d", f32>,
                  %m: !ein.tensor<"b 1 d", f32>, %c: !ein.tensor<"", f32>) {
  %0 = ein.elementwise "add" %x, %x : !ein.tensor<"b s d", f32>, !ein.tensor<"b s d", f32> -> !ein.tensor<"b s d", f32>
  %1 = ein.elementwise "sub" %x, %v : !ein.tensor<"b s d", f32>, !ein.tensor<"d", f32> -> !ein.tensor<"b s d", f32>
  %2 = ein.elementwise "mul" %c, %x : !ein.tensor<"", f32>, !ein.tensor<"b s d", f32> -> !ein.tensor<"b s d", f32>
  %3 = ein.elementwise "div" %x, %m : !ein.tensor<"b s d", f32>, !ein.tensor<"b 1 d", f32> -> !ein.tensor<"b s d", f32>
  %4 = ein.elementwise "pow" %x, %c : !ein.tensor<"b s d", f32>, !ein.tensor<"", f32> -> !ein.tensor<"b s d", f32>
  return
}

// -----

// Tests the unary ops.
// CHECK-LABEL: func.func @unary
// CHECK: ein.elementwise "exp" %{{.*}} : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
// CHECK: ein.elementwise "log"
// CHECK: ein.elementwise "sqrt"
// CHECK: ein.elementwise "rsqrt"
// CHECK: ein.elementwise "relu"
// CHECK: ein.elementwise "tanh"
// CHECK: ein.elementwise "neg" %{{.*}} : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
func.func @unary(%x: !ein.tensor<"b d", f32>) {
  %0 = ein.elementwise "exp" %x : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
  %1 = ein.elementwise "log" %0 : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
  %2 = ein.elementwise "sqrt" %1 : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
  %3 = ein.elementwise "rsqrt" %2 : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
  %4 = ein.elementwise "relu" %3 : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
  %5 = ein.elementwise "tanh" %4 : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
  %6 = ein.elementwise "neg" %5 : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", f32>
  return
}

// -----

// Tests cast and constants of float and integer element types.
// CHECK-LABEL: func.func @cast_constant
// CHECK: ein.cast %{{.*}} : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", bf16>
// CHECK: ein.constant 2.500000e+00 : f32
// CHECK: ein.constant 7 : i64
// CHECK: ein.constant 1.000000e+00 : bf16
func.func @cast_constant(%x: !ein.tensor<"b d", f32>) -> !ein.tensor<"", f32> {
  %0 = ein.cast %x : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", bf16>
  %1 = ein.constant 2.5 : f32
  %2 = ein.constant 7 : i64
  %3 = ein.constant 1.0 : bf16
  return %1 : !ein.tensor<"", f32>
}

// -----

// Tests that .ein source locations are kept and printed with the op.
// CHECK-LABEL: func.func @locations
// CHECK: ein.elementwise "exp"
// LOC: ein.elementwise "exp" %{{.*}} : !ein.tensor<"n", f32> -> !ein.tensor<"n", f32> loc([[LOC:#loc[0-9]*]])
// LOC: [[LOC]] = loc("model.ein":3:7)
func.func @locations(%x: !ein.tensor<"n", f32>) {
  %0 = ein.elementwise "exp" %x : !ein.tensor<"n", f32> -> !ein.tensor<"n", f32> loc("model.ein":3:7)
  return
}
