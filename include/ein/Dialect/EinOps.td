//===- EinOps.td - ein dialect operations ------------------*- tablegen -*-===//
//
// Every op's verifier re-runs the matching `ein::infer*` rule on the operand
// types and attributes and checks the declared result type against it.
//
//===----------------------------------------------------------------------===//

#ifndef EIN_DIALECT_EINOPS_TD
#define EIN_DIALECT_EINOPS_TD

include "ein/Dialect/EinDialect.td"
include "ein/Dialect/EinTypes.td"
include "ein/Dialect/EinAttrs.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

defvar Ein_Tensor = Ein_TensorType;

//===----------------------------------------------------------------------===//
// einops operations
//===----------------------------------------------------------------------===//

class Ein_PatternOp<string mnemonic, list<Trait> traits = []>
    : Ein_Op<mnemonic, !listconcat(traits, [Pure])> {
  let hasVerifier = 1;
}

def Ein_RearrangeOp : Ein_PatternOp<"rearrange"> {
  let summary = "einops.rearrange: permute, split and merge axes";
  let description = [{
    ```mlir
    %1 = ein.rearrange %0 "b s (h d) -> b h s d" {h = "heads"}
        : !ein.tensor<"batch seq heads*d", bf16>
        -> !ein.tensor<"batch heads seq d", bf16>
    ```
    `sizes` binds pattern axes to size expressions (strings parsed by
    `ein::parseSizeExpr`, or integers). The element type is kept.
  }];
  let arguments = (ins Ein_Tensor:$input, Ein_PatternAttr:$pattern,
                       OptionalAttr<DictionaryAttr>:$sizes);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $input custom<PatternAndSizes>($pattern, $sizes) attr-dict-with-keyword
    `:` qualified(type($input)) `->` qualified(type($result))
  }];
}

def Ein_ReduceOp : Ein_PatternOp<"reduce"> {
  let summary = "einops.reduce: reduce the axes missing from the output";
  let description = [{
    ```mlir
    %1 = ein.reduce mean %0 "b s d -> b d"
        : !ein.tensor<"batch seq d", f32> -> !ein.tensor<"batch d", f32>
    %2 = ein.reduce sum %3 "b s -> b" acc f32
        : !ein.tensor<"batch seq", bf16> -> !ein.tensor<"batch", f32>
    ```
    The element type is kept, or is `acc` when given (the accumulation and
    result type).
  }];
  let arguments = (ins Ein_ReduceKindAttr:$kind, Ein_Tensor:$input,
                       Ein_PatternAttr:$pattern,
                       OptionalAttr<DictionaryAttr>:$sizes,
                       OptionalAttr<TypeAttr>:$acc);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    custom<ReduceKind>($kind) $input custom<PatternAndSizes>($pattern, $sizes)
    (`acc` $acc^)?
    attr-dict-with-keyword `:` qualified(type($input)) `->` qualified(type($result))
  }];
}

def Ein_RepeatOp : Ein_PatternOp<"repeat"> {
  let summary = "einops.repeat: add or tile axes";
  let description = [{
    ```mlir
    %1 = ein.repeat %0 "h w -> h w c" {c = "3"}
        : !ein.tensor<"h w", f32> -> !ein.tensor<"h w 3", f32>
    ```
  }];
  let arguments = (ins Ein_Tensor:$input, Ein_PatternAttr:$pattern,
                       OptionalAttr<DictionaryAttr>:$sizes);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $input custom<PatternAndSizes>($pattern, $sizes) attr-dict-with-keyword
    `:` qualified(type($input)) `->` qualified(type($result))
  }];
}

def Ein_EinsumOp : Ein_PatternOp<"einsum"> {
  let summary = "einsum over any number of operands";
  let description = [{
    ```mlir
    %2 = ein.einsum %0, %1 "b i d, b j d -> b i j" acc f32
        : !ein.tensor<"batch seq d", bf16>, !ein.tensor<"batch seq d", bf16>
        -> !ein.tensor<"batch seq seq", f32>
    ```
    All operands share one element type; the result's element type is `acc`
    when given (the accumulation type), else the operands'.
  }];
  let arguments = (ins Variadic<Ein_Tensor>:$inputs,
                       Ein_PatternAttr:$pattern,
                       OptionalAttr<DictionaryAttr>:$sizes,
                       OptionalAttr<TypeAttr>:$acc);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $inputs custom<PatternAndSizes>($pattern, $sizes) (`acc` $acc^)?
    attr-dict-with-keyword `:` qualified(type($inputs)) `->` qualified(type($result))
  }];
}

def Ein_PackOp : Ein_PatternOp<"pack"> {
  let summary = "einops.pack: concatenate along the `*` axes";
  let description = [{
    ```mlir
    %2 = ein.pack %0, %1 "b * c"
        : !ein.tensor<"b h w c", f32>, !ein.tensor<"b c", f32>
        -> !ein.tensor<"b h*w+1 c", f32>
    ```
  }];
  let arguments = (ins Variadic<Ein_Tensor>:$inputs,
                       Ein_PatternAttr:$pattern);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $inputs custom<PatternText>($pattern) attr-dict-with-keyword
    `:` qualified(type($inputs)) `->` qualified(type($result))
  }];
}

def Ein_UnpackOp : Ein_PatternOp<"unpack"> {
  let summary = "einops.unpack: split the `*` axis into parts";
  let description = [{
    ```mlir
    %1:2 = ein.unpack %0 "b * c" ["h w", ""]
        : !ein.tensor<"b h*w+1 c", f32>
        -> !ein.tensor<"b h w c", f32>, !ein.tensor<"b c", f32>
    ```
    `parts` holds, per result, the shape string of its `*` part (einops'
    packed shapes).
  }];
  let arguments = (ins Ein_Tensor:$input, Ein_PatternAttr:$pattern,
                       StrArrayAttr:$parts);
  let results = (outs Variadic<Ein_Tensor>:$results);
  let assemblyFormat = [{
    $input custom<PatternText>($pattern) $parts
    attr-dict-with-keyword `:` qualified(type($input)) `->` qualified(type($results))
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise operations
//===----------------------------------------------------------------------===//

def Ein_ElementwiseOp : Ein_Op<"elementwise", [Pure]> {
  let summary = "an elementwise function with broadcasting by name";
  let description = [{
    Applies the elementwise function `fn` of the language's table
    (`include/ein/Shape/Elementwise.h`: name, arity, dtype rule, result
    dtype, FLOPs) to its operands. Operands may have different shapes: each
    smaller one's dims (size-1 dims dropped) must appear in the result, in
    order (`ein::inferBroadcast`, applied left to right). The operands share
    one element type, except that `where`'s first operand is the bool
    condition; comparisons give bool (`i1`).
    ```mlir
    %2 = ein.elementwise "add" %0, %1 : !ein.tensor<"b s d", f32>,
        !ein.tensor<"d", f32> -> !ein.tensor<"b s d", f32>
    %3 = ein.elementwise "silu" %2 : !ein.tensor<"b s d", f32>
        -> !ein.tensor<"b s d", f32>
    %4 = ein.elementwise "lt" %2, %0 : !ein.tensor<"b s d", f32>,
        !ein.tensor<"b s d", f32> -> !ein.tensor<"b s d", i1>
    ```
  }];
  let arguments = (ins StrAttr:$fn, Variadic<Ein_Tensor>:$inputs);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $fn $inputs attr-dict `:` qualified(type($inputs)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The function's row of the table (verified to exist).
    const ::ein::ElementwiseInfo &getInfo();
  }];
}

def Ein_CastOp : Ein_Op<"cast", [Pure]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    ```mlir
    %1 = ein.cast %0 : !ein.tensor<"b d", f32> -> !ein.tensor<"b d", bf16>
    ```
    The shape is kept.
  }];
  let arguments = (ins Ein_Tensor:$input);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Ein_SizeOp : Ein_Op<"size", [Pure]> {
  let summary = "a size, read at run time, as a scalar";
  let description = [{
    A dim used as a value (`reduce(...) / (B * K)`): the size expression,
    in the function's dims, converted to the result's element type (a float
    or an integer).
    ```mlir
    %0 = ein.size "B*K" : !ein.tensor<"", f32>
    ```
  }];
  let arguments = (ins StrAttr:$size);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = "$size attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Ein_ArangeOp : Ein_Op<"arange", [Pure]> {
  let summary = "0, 1, ..., n-1 along the result's one dim";
  let description = [{
    `arange(n)`: a rank-1 tensor whose one dim is the size `n` (read at run
    time when it is not a constant), holding 0, 1, ..., n-1 in the result's
    number element type.
    ```mlir
    %0 = ein.arange : !ein.tensor<"s", i64>
    %1 = ein.arange : !ein.tensor<"s + 1", f32>
    ```
  }];
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Ein_TakeOp : Ein_Op<"take", [Pure]> {
  let summary = "gather: the table's axis `axis` indexed by integer ids";
  let description = [{
    `take(table, ids, "vocab")`: numpy's `np.take(table, ids, axis=axis)`.
    The result is the table's shape with the dim at `axis` replaced, in
    place, by the dims of `ids` (i32 or i64). An id outside `[0, size)` of
    that dim (a negative one included) is a run-time error: the lowered code
    clamps it for the load (no wild read) and counts it into the function's
    index status, which the caller turns into an error.
    ```mlir
    %2 = ein.take %0[%1] axis 0 : !ein.tensor<"vocab d", f32>,
        !ein.tensor<"b s", i64> -> !ein.tensor<"b s d", f32>
    ```
  }];
  let arguments = (ins Ein_Tensor:$table, Ein_Tensor:$ids,
                       I64Attr:$axis);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` `axis` $axis attr-dict `:` qualified(type($table)) `,`
    qualified(type($ids)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Ein_TakeAlongOp : Ein_Op<"take_along", [Pure]> {
  let summary = "per-position gather: one element of x's axis `axis` at each id";
  let description = [{
    `take_along(x, ids, "v")`: numpy's
    `np.take_along_axis(x, ids[..., None], axis)[..., 0]` with the axis
    anywhere. `ids` (i32 or i64) has x's shape without the dim at `axis`,
    and so has the result: `result[i..., j...] = x[i..., ids[i..., j...],
    j...]`. An id outside `[0, size)` of that dim (a negative one included)
    is a run-time error, as for `take`: the lowered code clamps it for the
    load and counts it into the function's index status.
    ```mlir
    %2 = ein.take_along %0[%1] axis 2 : !ein.tensor<"b s v", f32>,
        !ein.tensor<"b s", i64> -> !ein.tensor<"b s", f32>
    ```
  }];
  let arguments = (ins Ein_Tensor:$input, Ein_Tensor:$ids, I64Attr:$axis);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $ids `]` `axis` $axis attr-dict `:` qualified(type($input)) `,`
    qualified(type($ids)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Ein_DropoutOp : Ein_Op<"dropout", [Pure]> {
  let summary = "inverted dropout with a Philox4x64-10 mask from a key";
  let description = [{
    `dropout(x, p, key)`: element i of x (its C-order index) is kept iff
    u_i >= p, where u_i = (w0 >> 11) * 2^-53 and w0 is the first word of
    Philox4x64-10 with counter (i, 0, 0, 0) and key (key, 0); a kept
    element is x * (1 / (1 - p)) (the scale rounded to x's dtype, or to
    f32 for a narrower float), a dropped one 0. `p` is in [0, 1); `key` is
    an i64 scalar tensor. The same bits on every back end. `p` is a number
    (the attribute `p`), or a rank-0 float tensor (the operand `rate`),
    read when the function runs: the same threshold and scale computed from
    its value, and a value outside [0, 1) counted into the function's index
    status (the call fails; `einc run` names the dropout and the value).
    ```mlir
    %2 = ein.dropout %0 key %1 p 1.000000e-01 : !ein.tensor<"b d", f32>,
        !ein.tensor<"", i64> -> !ein.tensor<"b d", f32>
    %3 = ein.dropout %0 key %1 rate %r : !ein.tensor<"b d", f32>,
        !ein.tensor<"", i64>, !ein.tensor<"", f64> -> !ein.tensor<"b d", f32>
    ```
  }];
  let arguments = (ins Ein_Tensor:$input, Ein_Tensor:$key,
                       Optional<Ein_Tensor>:$rate, OptionalAttr<F64Attr>:$p);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $input `key` $key (`p` $p^)? (`rate` $rate^)? attr-dict `:`
    qualified(type($input)) `,` qualified(type($key))
    (`,` qualified(type($rate))^)? `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Ein_ScatterAddOp : Ein_Op<"scatter_add", [Pure]> {
  let summary = "take's adjoint: updates added into zeros at integer ids";
  let description = [{
    The gradient of `take` with respect to its table (grad(), autodiff.md):
    the result, of the table's shape, starts as zeros and each element of
    `updates` is added at the id it came from, as numpy's
    `np.add.at(out, (..., ids, ...), updates)` along `axis`. `updates` has
    take's result shape: the result's dims before `axis`, the dims of `ids`
    (i32 or i64), the result's dims after it. Several ids may name the same
    row: their updates add up. An id outside `[0, size)` is clamped into it,
    as take clamps it (the take it differentiates has reported it); nothing
    is written outside the result.
    ```mlir
    %2 = ein.scatter_add %1 into %0 axis 0 : !ein.tensor<"b s", i64>,
        !ein.tensor<"b s d", f32> -> !ein.tensor<"vocab d", f32>
    ```
  }];
  let arguments = (ins Ein_Tensor:$ids, Ein_Tensor:$updates,
                       I64Attr:$axis);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $ids `into` $updates `axis` $axis attr-dict `:` qualified(type($ids)) `,`
    qualified(type($updates)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Ein_SliceOp : Ein_Op<"slice", [Pure]> {
  let summary = "start <= i < stop along one dim";
  let description = [{
    `slice(x, "axis", start, stop)`: the elements of the input whose index
    along dim `axis` (counted from the end when negative: a variadic of
    unknown rank precedes it) lies in `[start, stop)`. The bounds are size
    expressions in the function's dims; the result's dim is `stop - start`,
    its other dims the input's. The entry checks `0 <= start <= stop <= size`
    where the sizes do not prove it.
    ```mlir
    %1 = ein.slice %0 axis 1 from "0" to "k" : !ein.tensor<"b s d", f32>
        -> !ein.tensor<"b k d", f32>
    ```
  }];
  let arguments = (ins Ein_Tensor:$input, I64Attr:$axis, StrAttr:$start,
                       StrAttr:$stop);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `from` $start `to` $stop attr-dict `:`
    qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The sliced dim's index, from 0 (the verifier checks it is in range).
    int64_t getDimIndex();
  }];
}

def Ein_ConstantOp : Ein_Op<"constant",
    [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a scalar constant";
  let description = [{
    ```mlir
    %0 = ein.constant 2.000000e+00 : f32
    ```
    The value is a FloatAttr or IntegerAttr of a supported element type; the
    result is the 0-d tensor `!ein.tensor<"", f32>` of that element type.
  }];
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs Ein_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasVerifier = 1;
}

#endif // EIN_DIALECT_EINOPS_TD
