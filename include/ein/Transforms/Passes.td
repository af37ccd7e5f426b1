// Declarations of the ein passes (one .cpp per pass under lib/Transforms).
#ifndef EIN_TRANSFORMS_PASSES_TD
#define EIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateCosts : Pass<"ein-annotate-costs", "::mlir::ModuleOp"> {
  let summary = "Attach analytic FLOP and byte counts to every ein op";
  let description = [{
    Computes each op's cost with the cost model of `docs/cost-model.md`
    (`ein::computeCost`, the same code `einc report` uses) and attaches it as
    an `ein.cost` dictionary: the FLOP and byte formulas in the dims, their
    values as `i128` integers when the module's `ein.dims` bind every name,
    and whether the op is a view (moves no data).

    Before:
    ```mlir
    module attributes {ein.dims = {d = 64 : i64, n = 128 : i64}} {
      func.func @f(%a: !ein.tensor<"n d", f32>, %b: !ein.tensor<"d n", f32>)
          -> !ein.tensor<"n n", f32> {
        %0 = ein.einsum %a, %b "i k, k j -> i j"
            : !ein.tensor<"n d", f32>, !ein.tensor<"d n", f32>
            -> !ein.tensor<"n n", f32>
        return %0 : !ein.tensor<"n n", f32>
      }
    }
    ```
    After:
    ```mlir
        %0 = ein.einsum %a, %b "i k, k j -> i j"
            {ein.cost = {bytes_read = "8*d*n", bytes_read_value = 65536 : i128,
                         bytes_written = "4*n*n", bytes_written_value = 65536 : i128,
                         flops = "2*d*n*n", flops_value = 2097152 : i128,
                         view = false}} : ...
    ```
    A function gets `ein.total_flops` (and its value when bound) too.
  }];
}

def SplitEinsums : Pass<"ein-split-einsums", "::mlir::ModuleOp"> {
  let summary = "Split einsums of three or more operands into two-operand einsums";
  let description = [{
    Rewrites every `ein.einsum` with three or more operands into a chain of
    two-operand `ein.einsum`s along the cost model's contraction order
    (`ein::contractionOrder`, the order `einc report` prints, computed with
    the module's `ein.dims`; docs/cost-model.md), so that every back end
    contracts in that order. Where the order first sums an index that only
    one operand has, that step is a one-operand einsum (`"a b -> b"`). Each
    intermediate keeps only the axes the output or a later operand still
    needs (its elementary axes, `...` for the ellipsis dims). Intermediates are in the accumulator type, as the lowering
    of one einsum would accumulate: `acc` when given, else f32 for a
    low-precision float result (f16, bf16, fp8), else the result type. Every
    step then carries that `acc`; an original operand that meets an
    intermediate is first cast to it (`ein.cast`, the same conversion the
    einsum would apply to each element), and a low-precision result without
    `acc` is cast from f32 at the end. An einsum with an operand of size 0 is
    left alone (its lowering is a fill of zeros).

    Before (a = 1000, b = 10, c = 1000, d = 10: y z first is cheaper):
    ```mlir
    module attributes {ein.dims = {a = 1000 : i64, b = 10 : i64,
                                   c = 1000 : i64, d = 10 : i64}} {
      func.func @chain(%x: !ein.tensor<"a b", f32>, %y: !ein.tensor<"b c", f32>,
                       %z: !ein.tensor<"c d", f32>) -> !ein.tensor<"a d", f32> {
        %0 = ein.einsum %x, %y, %z "a b, b c, c d -> a d"
            : !ein.tensor<"a b", f32>, !ein.tensor<"b c", f32>,
              !ein.tensor<"c d", f32> -> !ein.tensor<"a d", f32>
        return %0 : !ein.tensor<"a d", f32>
      }
    }
    ```
    After:
    ```mlir
        %0 = ein.einsum %y, %z "b c, c d -> b d"
            : !ein.tensor<"b c", f32>, !ein.tensor<"c d", f32>
            -> !ein.tensor<"b d", f32>
        %1 = ein.einsum %x, %0 "a b, b d -> a d"
            : !ein.tensor<"a b", f32>, !ein.tensor<"b d", f32>
            -> !ein.tensor<"a d", f32>
    ```
    With bf16 operands and no `acc`, the steps accumulate in f32 and the
    result is rounded once:
    ```mlir
        %0 = ein.einsum %y, %z "b c, c d -> b d" acc f32
            : !ein.tensor<"b c", bf16>, !ein.tensor<"c d", bf16>
            -> !ein.tensor<"b d", f32>
        %1 = ein.cast %x : !ein.tensor<"a b", bf16> -> !ein.tensor<"a b", f32>
        %2 = ein.einsum %1, %0 "a b, b d -> a d" acc f32
            : !ein.tensor<"a b", f32>, !ein.tensor<"b d", f32>
            -> !ein.tensor<"a d", f32>
        %3 = ein.cast %2 : !ein.tensor<"a d", f32> -> !ein.tensor<"a d", bf16>
    ```
  }];
}

#endif // EIN_TRANSFORMS_PASSES_TD
