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

#endif // EIN_TRANSFORMS_PASSES_TD
