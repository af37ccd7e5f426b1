// RUN: ein-opt %s -split-input-file -verify-diagnostics

// Tests that a malformed shape string is rejected by the type parser.
// expected-error @+1 {{invalid shape "batch (seq": unbalanced '(' in shape}}
func.func private @bad_shape(!ein.tensor<"batch (seq", f32>)

// -----

// Tests that only the supported element types are accepted.
// expected-error @+1 {{unsupported element type 'i16' (expected f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i1 or i8)}}
func.func private @bad_element_type(!ein.tensor<"batch", i16>)

// -----

// Tests that a malformed pattern is rejected when the op is parsed.
func.func @bad_pattern(%x: !ein.tensor<"a b", f32>) {
  // expected-error @+1 {{invalid pattern "a (b -> b a": unbalanced '(': missing ')'}}
  %0 = ein.rearrange %x "a (b -> b a" : !ein.tensor<"a b", f32> -> !ein.tensor<"b a", f32>
  return
}

// -----

// Tests that a pattern attribute is checked on its own too.
// expected-error @+1 {{invalid pattern "a ) b": unbalanced ')': no matching '('}}
func.func private @bad_pattern_attr() attributes {p = #ein.pattern<"a ) b">}

// -----

// Tests that a pattern with two ellipses on one side is rejected.
func.func @two_ellipses(%x: !ein.tensor<"a", f32>) {
  // expected-error @+1 {{two ellipses on one side of the pattern}}
  %0 = ein.rearrange %x "... ... -> a" : !ein.tensor<"a", f32> -> !ein.tensor<"a", f32>
  return
}

// -----

// Tests that a rearrange axis present on one side only is rejected.
func.func @rearrange_one_side(%x: !ein.tensor<"a b", f32>) {
  // expected-error @+1 {{'ein.rearrange' op axis 'b' appears only on the left side of rearrange}}
  %0 = ein.rearrange %x "a b -> a" : !ein.tensor<"a b", f32> -> !ein.tensor<"a", f32>
  return
}

// -----

// Tests that the rules of the op's own use apply: no diagonal in rearrange.
func.func @rearrange_diagonal(%x: !ein.tensor<"a a", f32>) {
  // expected-error @+1 {{'ein.rearrange' op duplicate axis 'i' on one side of the pattern}}
  %0 = ein.rearrange %x "i i -> i" : !ein.tensor<"a a", f32> -> !ein.tensor<"a", f32>
  return
}

// -----

// Tests that the declared result shape must equal the inferred one.
func.func @rearrange_result_mismatch(%x: !ein.tensor<"a b", f32>) {
  // expected-error-re @+1 {{'ein.rearrange' op result shape "a b" does not match the inferred "b a": cannot prove {{(a == b|b == a)}}}}
  %0 = ein.rearrange %x "a b -> b a" : !ein.tensor<"a b", f32> -> !ein.tensor<"a b", f32>
  return
}

// -----

// Tests that the pattern's rank must match the operand's.
func.func @rearrange_rank(%x: !ein.tensor<"a b", f32>) {
  // expected-error @+1 {{'ein.rearrange' op the pattern 'a b c' expects 3 dims, but the operand has 2 ("a b")}}
  %0 = ein.rearrange %x "a b c -> c b a" : !ein.tensor<"a b", f32> -> !ein.tensor<"a b", f32>
  return
}

// -----

// Tests that rearrange keeps the element type.
func.func @rearrange_element_type(%x: !ein.tensor<"a b", f32>) {
  // expected-error @+1 {{'ein.rearrange' op result element type 'f16' does not match the expected 'f32'}}
  %0 = ein.rearrange %x "a b -> b a" : !ein.tensor<"a b", f32> -> !ein.tensor<"b a", f16>
  return
}

// -----

// Tests that a size argument must be a valid size expression.
func.func @size_malformed(%x: !ein.tensor<"a", f32>) {
  // expected-error @+1 {{'ein.rearrange' op size of 'h' ("(("): expected a size}}
  %0 = ein.rearrange %x "(h d) -> h d" {h = "(("} : !ein.tensor<"a", f32> -> !ein.tensor<"a", f32>
  return
}

// -----

// Tests that a size argument must name an axis of the pattern.
func.func @size_unused(%x: !ein.tensor<"a", f32>) {
  // expected-error @+1 {{'ein.rearrange' op size 'q' is not an axis of the pattern 'h -> h'}}
  %0 = ein.rearrange %x "h -> h" {q = "2"} : !ein.tensor<"a", f32> -> !ein.tensor<"a", f32>
  return
}

// -----

// Tests that a size argument is a string or an integer.
func.func @size_type(%x: !ein.tensor<"a", f32>) {
  // expected-error @+1 {{'ein.rearrange' op size of 'h' must be a string size expression or an integer}}
  %0 = ein.rearrange %x "h -> h" {h = 2.0} : !ein.tensor<"a", f32> -> !ein.tensor<"a", f32>
  return
}

// -----

// Tests that the module's `ein.dims` sizes are used: 6 is not divisible by 4.
module attributes {ein.dims = {a = 6 : i64}} {
  func.func @dims_not_divisible(%x: !ein.tensor<"a", f32>) {
    // expected-error @+1 {{'ein.rearrange' op composition (h d): size a (= 6) is not divisible by 4}}
    %0 = ein.rearrange %x "(h d) -> h d" {h = 4} : !ein.tensor<"a", f32> -> !ein.tensor<"4 1", f32>
    return
  }
}

// -----

// Tests that `ein.dims` holds integer sizes.
// expected-error @+1 {{'ein.dims': size of 'a' must be a non-negative 64-bit integer}}
module attributes {ein.dims = {a = "x"}} {
}

// -----

// Tests that `ein.dims` is only accepted on a module.
// expected-error @+1 {{'ein.dims' is only valid on a module}}
func.func private @dims_on_func() attributes {ein.dims = {a = 3}}

// -----

// Tests that the einsum pattern has one input per operand.
func.func @einsum_operand_count(%x: !ein.tensor<"a b", f32>) {
  // expected-error @+1 {{'ein.einsum' op pattern "i j, j k -> i k" has 2 input(s) but the op has 1 operand(s)}}
  %0 = ein.einsum %x "i j, j k -> i k" : !ein.tensor<"a b", f32> -> !ein.tensor<"a a", f32>
  return
}

// -----

// Tests that an einsum axis has one size in every operand (symbolic sizes).
func.func @einsum_symbolic_size_mismatch(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"k n", f32>) {
  // expected-error-re @+1 {{'ein.einsum' op cannot prove {{(k == n|n == k)}} (axis 'j')}}
  %0 = ein.einsum %x, %y "i j, j k -> i k" : !ein.tensor<"m n", f32>, !ein.tensor<"k n", f32> -> !ein.tensor<"m n", f32>
  return
}

// -----

// Tests that an einsum axis has one size in every operand (numeric sizes).
func.func @einsum_size_mismatch(%x: !ein.tensor<"3 n", f32>, %y: !ein.tensor<"4 n", f32>) {
  // expected-error-re @+1 {{'ein.einsum' op axis 'i': {{.*(3.*4|4.*3)}}}}
  %0 = ein.einsum %x, %y "i j, i k -> j k" : !ein.tensor<"3 n", f32>, !ein.tensor<"4 n", f32> -> !ein.tensor<"n n", f32>
  return
}

// -----

// Tests that an einsum output axis must appear in some input.
func.func @einsum_output_axis_absent(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{'ein.einsum' op output axis 'z' appears in no input of einsum}}
  %0 = ein.einsum %x, %x "i j, i j -> z" : !ein.tensor<"m n", f32>, !ein.tensor<"m n", f32> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that einsum operands share one element type.
func.func @einsum_mixed_element_types(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"m n", bf16>) {
  // expected-error @+1 {{'ein.einsum' op operands must share one element type, but operand #1 has 'bf16' and operand #0 has 'f32'}}
  %0 = ein.einsum %x, %y "i j, i j -> i" : !ein.tensor<"m n", f32>, !ein.tensor<"m n", bf16> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that the einsum result element type is the accumulation type.
func.func @einsum_acc(%x: !ein.tensor<"m n", bf16>) {
  // expected-error @+1 {{'ein.einsum' op result element type 'bf16' does not match the expected 'f32'}}
  %0 = ein.einsum %x, %x "i j, i j -> i" acc f32 : !ein.tensor<"m n", bf16>, !ein.tensor<"m n", bf16> -> !ein.tensor<"m", bf16>
  return
}

// -----

// Tests that the dtype rules of the front end (lib/Shape/DTypeRules.cpp) are
// the verifier's: exp needs a float tensor (it would fail in math.exp's
// verifier during lowering otherwise).
func.func @exp_of_int(%x: !ein.tensor<"n", i32>) {
  // expected-error @+1 {{'ein.elementwise' op exp needs a float tensor, got i32; use astype}}
  %0 = ein.elementwise "exp" %x : !ein.tensor<"n", i32> -> !ein.tensor<"n", i32>
  return
}

// -----

// Tests the rule for the other float-only unary ops, one of them per dtype.
func.func @rsqrt_of_int(%x: !ein.tensor<"n", i64>) {
  // expected-error @+1 {{'ein.elementwise' op rsqrt needs a float tensor, got i64; use astype}}
  %0 = ein.elementwise "rsqrt" %x : !ein.tensor<"n", i64> -> !ein.tensor<"n", i64>
  return
}

// -----

func.func @log_of_int(%x: !ein.tensor<"n", i32>) {
  // expected-error @+1 {{'ein.elementwise' op log needs a float tensor, got i32; use astype}}
  %0 = ein.elementwise "log" %x : !ein.tensor<"n", i32> -> !ein.tensor<"n", i32>
  return
}

// -----

func.func @sqrt_of_int(%x: !ein.tensor<"n", i64>) {
  // expected-error @+1 {{'ein.elementwise' op sqrt needs a float tensor, got i64; use astype}}
  %0 = ein.elementwise "sqrt" %x : !ein.tensor<"n", i64> -> !ein.tensor<"n", i64>
  return
}

// -----

func.func @tanh_of_int(%x: !ein.tensor<"n", i32>) {
  // expected-error @+1 {{'ein.elementwise' op tanh needs a float tensor, got i32; use astype}}
  %0 = ein.elementwise "tanh" %x : !ein.tensor<"n", i32> -> !ein.tensor<"n", i32>
  return
}

// -----

// Tests that mean needs a float operand even with a float `acc` (as
// `einc check` rules).
func.func @mean_of_int_acc_f32(%x: !ein.tensor<"m n", i32>) {
  // expected-error @+1 {{'ein.reduce' op mean needs a float tensor, got i32; use astype}}
  %0 = ein.reduce mean %x "i j -> i" acc f32 : !ein.tensor<"m n", i32> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that mean accumulates (and divides) in a float type.
func.func @mean_acc_int(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{'ein.reduce' op mean accumulates in a float dtype, got acc=i64}}
  %0 = ein.reduce mean %x "i j -> i" acc i64 : !ein.tensor<"m n", f32> -> !ein.tensor<"m", i64>
  return
}

// -----

// Tests that a reduce `acc` must be an element type of the language.
func.func @reduce_acc_unsupported(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{'ein.reduce' op acc must be a supported element type, got 'i16'}}
  %0 = ein.reduce sum %x "i j -> i" acc i16 : !ein.tensor<"m n", f32> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that an einsum `acc` must be an element type of the language.
func.func @einsum_acc_unsupported(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{'ein.einsum' op acc must be a supported element type, got 'index'}}
  %0 = ein.einsum %x, %x "i j, i j -> i" acc index : !ein.tensor<"m n", f32>, !ein.tensor<"m n", f32> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that an integer constant must fit its type: MLIR's integer attributes
// hold exactly the type's width, and the parser rejects a wider value.
func.func @constant_too_wide() {
  // expected-error @+1 {{integer constant out of range for attribute}}
  %0 = ein.constant 4294967297 : i32
  return
}

// -----

// Tests that a constant's type is an element type of the language.
func.func @constant_unsupported_type() {
  // expected-error @+1 {{'ein.constant' op unsupported element type 'i16'}}
  %0 = ein.constant 7 : i16
  return
}

// -----

// Tests that a reduce output axis must come from the input.
func.func @reduce_output_axis_missing(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{'ein.reduce' op output axis 'k' is missing from the input of reduce}}
  %0 = ein.reduce sum %x "i j -> i k" : !ein.tensor<"m n", f32> -> !ein.tensor<"m n", f32>
  return
}

// -----

// Tests that only the known reductions parse.
func.func @reduce_unknown_kind(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{unknown reduction 'avg' (expected sum, mean, max, min or prod)}}
  %0 = ein.reduce avg %x "i j -> i" : !ein.tensor<"m n", f32> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that the reduce pattern's rank must match the operand's.
func.func @reduce_rank(%x: !ein.tensor<"a", f32>) {
  // expected-error @+1 {{'ein.reduce' op the pattern 'i j' expects 2 dims, but the operand has 1 ("a")}}
  %0 = ein.reduce sum %x "i j -> i" : !ein.tensor<"a", f32> -> !ein.tensor<"a", f32>
  return
}

// -----

// Tests that a new repeat axis needs a size.
func.func @repeat_new_axis_without_size(%x: !ein.tensor<"m", f32>) {
  // expected-error @+1 {{'ein.repeat' op new axis 'c' needs a size}}
  %0 = ein.repeat %x "i -> i c" : !ein.tensor<"m", f32> -> !ein.tensor<"m c", f32>
  return
}

// -----

// Tests that binary operands share one element type.
func.func @binary_mixed_element_types(%x: !ein.tensor<"m", f32>, %y: !ein.tensor<"m", f16>) {
  // expected-error @+1 {{'ein.elementwise' op operands must share one element type, but operand #1 has 'f16' and operand #0 has 'f32'}}
  %0 = ein.elementwise "add" %x, %y : !ein.tensor<"m", f32>, !ein.tensor<"m", f16> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that broadcasting matches dims by name.
func.func @broadcast_unknown_dim(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"k", f32>) {
  // expected-error @+1 {{'ein.elementwise' op cannot broadcast "k" against "m n": dim k is not in the larger shape}}
  %0 = ein.elementwise "mul" %x, %y : !ein.tensor<"m n", f32>, !ein.tensor<"k", f32> -> !ein.tensor<"m n", f32>
  return
}

// -----

// Tests that broadcasting of equal ranks needs equal dims in order.
func.func @broadcast_order(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"n m", f32>) {
  // expected-error @+1 {{'ein.elementwise' op cannot prove m == n (broadcast dim 0)}}
  %0 = ein.elementwise "sub" %x, %y : !ein.tensor<"m n", f32>, !ein.tensor<"n m", f32> -> !ein.tensor<"m n", f32>
  return
}

// -----

// Tests that a binary op's result has the broadcast shape.
func.func @broadcast_result(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"n", f32>) {
  // expected-error @+1 {{'ein.elementwise' op result shape "n" does not match the inferred "m n": rank mismatch}}
  %0 = ein.elementwise "div" %x, %y : !ein.tensor<"m n", f32>, !ein.tensor<"n", f32> -> !ein.tensor<"n", f32>
  return
}

// -----

// Tests that a unary function keeps its operand's element type.
func.func @unary_type(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{'ein.elementwise' op result element type 'f16' does not match the expected 'f32'}}
  %0 = "ein.elementwise"(%x) {fn = "exp"} : (!ein.tensor<"m n", f32>) -> !ein.tensor<"m n", f16>
  return
}

// -----

// Tests that cast keeps the shape.
func.func @cast_shape(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{'ein.cast' op result shape "n m" does not match the inferred "m n"}}
  %0 = ein.cast %x : !ein.tensor<"m n", f32> -> !ein.tensor<"n m", f16>
  return
}

// -----

// Tests that a constant is a scalar.
func.func @constant_not_scalar() {
  // expected-error @+1 {{'ein.constant' op result must be a scalar (shape ""), not "n"}}
  %0 = "ein.constant"() {value = 1.0 : f32} : () -> !ein.tensor<"n", f32>
  return
}

// -----

// Tests that a constant's result element type is the value's.
func.func @constant_element_type() {
  // expected-error @+1 {{'ein.constant' op result element type 'f16' does not match the value's 'f32'}}
  %0 = "ein.constant"() {value = 1.0 : f32} : () -> !ein.tensor<"", f16>
  return
}

// -----

// Tests that an unsigned integer is not an element type of a constant.
func.func @constant_unsupported_type() {
  // expected-error @+1 {{'ein.constant' op unsupported element type 'ui8'}}
  %0 = ein.constant 1 : ui8
  return
}

// -----

// Tests that a constant is a number.
func.func @constant_not_number() {
  // expected-error @+1 {{'ein.constant' op value must be a float or integer attribute}}
  %0 = "ein.constant"() {value = "x"} : () -> !ein.tensor<"", f32>
  return
}

// -----

// Tests that a pack pattern needs a `*` axis.
func.func @pack_without_star(%x: !ein.tensor<"m n", f32>) {
  // expected-error @+1 {{a pack pattern needs one '*' axis}}
  %0 = ein.pack %x "m n" : !ein.tensor<"m n", f32> -> !ein.tensor<"m n", f32>
  return
}

// -----

// Tests that the packed result has the concatenated `*` size.
func.func @pack_result_mismatch(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"k n", f32>) {
  // expected-error-re @+1 {{'ein.pack' op result shape "m n" does not match the inferred "k+m n": cannot prove {{(m == k \+ m|k \+ m == m)}}}}
  %0 = ein.pack %x, %y "* n" : !ein.tensor<"m n", f32>, !ein.tensor<"k n", f32> -> !ein.tensor<"m n", f32>
  return
}

// -----

// Tests that pack operands share one element type.
func.func @pack_mixed_element_types(%x: !ein.tensor<"m n", f32>, %y: !ein.tensor<"k n", f16>) {
  // expected-error @+1 {{'ein.pack' op operands must share one element type, but operand #1 has 'f16' and operand #0 has 'f32'}}
  %0 = ein.pack %x, %y "* n" : !ein.tensor<"m n", f32>, !ein.tensor<"k n", f16> -> !ein.tensor<"k+m n", f32>
  return
}

// -----

// Tests that every packed operand has the pattern's explicit axes.
func.func @pack_rank(%x: !ein.tensor<"m", f32>) {
  // expected-error @+1 {{'ein.pack' op pack pattern 'a * n' needs at least 2 dims, but the tensor has 1}}
  %0 = ein.pack %x "a * n" : !ein.tensor<"m", f32> -> !ein.tensor<"m", f32>
  return
}

// -----

// Tests that unpack has one part shape per result.
func.func @unpack_part_count(%x: !ein.tensor<"m+k n", f32>) {
  // expected-error @+1 {{'ein.unpack' op has 1 part shape(s) but 2 result(s)}}
  %0:2 = ein.unpack %x "* n" ["m"] : !ein.tensor<"m+k n", f32> -> !ein.tensor<"m n", f32>, !ein.tensor<"k n", f32>
  return
}

// -----

// Tests that the parts must add up to the packed `*` size.
func.func @unpack_parts_sum(%x: !ein.tensor<"m+k n", f32>) {
  // expected-error-re @+1 {{'ein.unpack' op cannot prove {{(k \+ m == j \+ m|j \+ m == k \+ m)}} (the '*' dim of unpack)}}
  %0:2 = ein.unpack %x "* n" ["m", "j"] : !ein.tensor<"m+k n", f32> -> !ein.tensor<"m n", f32>, !ein.tensor<"j n", f32>
  return
}

// -----

// Tests that each unpack result has its inferred shape.
func.func @unpack_result_mismatch(%x: !ein.tensor<"m+k n", f32>) {
  // expected-error @+1 {{'ein.unpack' op result #1 shape "n k" does not match the inferred "k n"}}
  %0:2 = ein.unpack %x "* n" ["m", "k"] : !ein.tensor<"m+k n", f32> -> !ein.tensor<"m n", f32>, !ein.tensor<"n k", f32>
  return
}

// -----

// Tests that a part shape must be well formed.
func.func @unpack_malformed_part(%x: !ein.tensor<"m+k n", f32>) {
  // expected-error @+1 {{'ein.unpack' op invalid shape "(k" of part #1: unbalanced '(' in shape}}
  %0:2 = ein.unpack %x "* n" ["m", "(k"] : !ein.tensor<"m+k n", f32> -> !ein.tensor<"m n", f32>, !ein.tensor<"k n", f32>
  return
}

// -----

// Tests that einsum needs at least one operand.
func.func @einsum_no_operand() {
  // expected-error @+1 {{'ein.einsum' op needs at least one operand}}
  %0 = "ein.einsum"() {pattern = #ein.pattern<"-> i">} : () -> !ein.tensor<"n", f32>
  return
}

// -----

// Tests that a size argument bound to a negative integer is rejected.
func.func @size_negative(%x: !ein.tensor<"a", f32>) {
  // expected-error @+1 {{'ein.repeat' op size of 'c' must be a non-negative 64-bit integer}}
  %0 = ein.repeat %x "h -> h c" {c = -2} : !ein.tensor<"a", f32> -> !ein.tensor<"a 2", f32>
  return
}

// -----

// Tests that `ein.dims` names are identifiers.
// expected-error @+1 {{'ein.dims': invalid name 'a-b': not an identifier}}
module attributes {ein.dims = {"a-b" = 3}} {
}

// -----

// Tests that `ein.dims` sizes are not negative (0 is an empty axis).
// expected-error @+1 {{'ein.dims': size of 'z' must be a non-negative 64-bit integer}}
module attributes {ein.dims = {z = -1}} {
}

// -----

// Tests that a max over an empty axis, which has no identity, is rejected by
// the verifier (the same rule as the checker), not filled with -inf.
func.func @max_over_empty(%x: !ein.tensor<"0 3", f32>) -> !ein.tensor<"3", f32> {
  // expected-error @+1 {{'ein.reduce' op max over an empty axis: 'a' has size 0, and max has no identity}}
  %0 = ein.reduce max %x "a b -> b" : !ein.tensor<"0 3", f32> -> !ein.tensor<"3", f32>
  return %0 : !ein.tensor<"3", f32>
}

// -----

// Tests that a min over an empty integer axis is rejected the same way.
func.func @min_over_empty(%x: !ein.tensor<"2 0 4", i32>) -> !ein.tensor<"4", i32> {
  // expected-error @+1 {{'ein.reduce' op min over an empty axis: 'b' has size 0, and min has no identity}}
  %0 = ein.reduce min %x "a b c -> c" : !ein.tensor<"2 0 4", i32> -> !ein.tensor<"4", i32>
  return %0 : !ein.tensor<"4", i32>
}
