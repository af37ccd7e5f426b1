// Declarations of the ein conversion passes.
#ifndef EIN_CONVERSION_PASSES_TD
#define EIN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def EinToLinalg : Pass<"ein-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower ein ops to linalg on tensors with static shapes";
  let description = [{
    Rewrites every function over `!ein.tensor` into one over builtin ranked
    tensors. Every dim must be bound to a number by the module's `ein.dims`
    (`einc --dim`, or the sizes of the inputs at `einc run`); a free dim is an
    error naming it.

    Each op becomes a `linalg.generic` over its elementary axes (size-1 axes
    dropped): operands are first reshaped to their elementary axes
    (`tensor.collapse_shape`/`expand_shape`, which bufferize to views), the
    generic's indexing maps do any permutation, broadcast, diagonal or
    contraction, and the result is reshaped to the op's output shape. A
    rearrange that keeps the order of its axes is only a reshape (a view).
    einsum and reduce accumulate in f32 for 16- and 8-bit floats (einsum's
    `acc` overrides) and round the result once; a multi-operand einsum runs
    pairwise along the order the cost model picks.

    Before:
    ```mlir
    module attributes {ein.dims = {m = 4 : i64, k = 8 : i64, n = 2 : i64}} {
      func.func @f(%a: !ein.tensor<"m k", f32>, %b: !ein.tensor<"k n", f32>)
          -> !ein.tensor<"m n", f32> {
        %0 = ein.einsum %a, %b "i k, k j -> i j" : ...
        return %0 : !ein.tensor<"m n", f32>
      }
    }
    ```
    After:
    ```mlir
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
      %zero = arith.constant 0.0 : f32
      %init = tensor.empty() : tensor<4x2xf32>
      %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<4x2xf32>)
      %0 = linalg.generic {indexing_maps = [(i, k, j) -> (i, k), (i, k, j) -> (k, j),
                                            (i, k, j) -> (i, j)],
                           iterator_types = ["parallel", "reduction", "parallel"]}
          ins(%a, %b) outs(%acc) { mulf, addf }
      return %0 : tensor<4x2xf32>
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::func::FuncDialect"
  ];
}

def ResultsFromAllocs : Pass<"ein-results-from-allocs", "::mlir::ModuleOp"> {
  let summary = "Make every returned buffer a distinct allocation";
  let description = [{
    Runs after bufferization, before `buffer-results-to-out-params
    {hoist-static-allocs}`, which then turns each returned allocation into
    the caller's output buffer so results are written in place. A returned
    value that is not its own `memref.alloc` (a parameter, a view of one, or
    a value returned twice) is copied into a fresh allocation first; MLIR
    19's hoisting crashes or aliases outputs otherwise.

    Before:
    ```mlir
    func.func @f(%x: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2x3xf32>) {
      return %x, %x : memref<2x3xf32>, memref<2x3xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2x3xf32>) {
      %0 = memref.alloc() : memref<2x3xf32>
      memref.copy %x, %0 : memref<2x3xf32> to memref<2x3xf32>
      %1 = memref.alloc() : memref<2x3xf32>
      memref.copy %x, %1 : memref<2x3xf32> to memref<2x3xf32>
      return %0, %1 : memref<2x3xf32>, memref<2x3xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // EIN_CONVERSION_PASSES_TD
