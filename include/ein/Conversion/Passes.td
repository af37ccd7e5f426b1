// Declarations of the ein conversion passes.
#ifndef EIN_CONVERSION_PASSES_TD
#define EIN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def EinToLinalg : Pass<"ein-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower ein ops to linalg on tensors, static or dynamic sizes";
  let description = [{
    Rewrites every function over `!ein.tensor` into one over builtin ranked
    tensors. A dim bound to a number by the module's `ein.dims` (`einc
    --dim`, `dim` declarations) is static; any other is dynamic (`?`), its
    names read from the arguments' sizes at the entry (`tensor.dim`, solved
    for `8*d` or `n + 1`). A name that cannot be read (it appears only in a
    product of free names, `h*d`) is an error naming it; so is a variadic
    whose rank is unknown, and an op without a lowering. It is a dialect
    conversion: `ein` is illegal, `!ein.tensor` converts to a builtin
    ranked tensor, a function's signature converts in place (its attributes
    stay) with the size reads at the top of its entry block, and each op
    family has one pattern. A function marked `ein.index_status` (it has a
    `take`) gets one more result, a `tensor<1xi64>` counting the ids out of
    range (each take's clamped gather comes with a counting generic).

    Each op becomes a `linalg.generic` over its elementary axes (size-1 axes
    dropped): operands' dims are first split into their elementary axes
    (`tensor.expand_shape`, a view whatever the strides; a dim of size 1 is
    read at index 0), the
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
      %init = tensor.empty() : tensor<4x2xf32>
      %zero = arith.constant 0.0 : f32
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
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"
  ];
}

def MeshToCalls : Pass<"ein-mesh-to-calls", "::mlir::ModuleOp"> {
  let summary = "Lower the mesh dialect's collectives to runtime calls";
  let description = [{
    A sharded function's local program (docs/distributed.md §4) holds its
    collectives as `mesh` ops on builtin tensors. Each becomes a call of a
    C entry point of ein/Runtime/CollectiveCalls.h on contiguous buffers,
    which runs the collective on the calling rank's group of the op's mesh
    axis (a thread-local rank context the sharded run sets around the call,
    so one compiled function serves simulated and MPI ranks). It runs on
    tensors, before bufferization: the operand is copied into a fresh buffer
    (`bufferization.materialize_in_destination`), the call works on that
    buffer's address, and the result is the buffer as a tensor again
    (`bufferization.to_tensor restrict writable`), so one-shot bufferization
    sees an ordinary copy into a new allocation.

    - `all_reduce` (sum, max, min, average): `ein_comm_all_reduce` in place.
    - `reduce_scatter` along dim 0: `ein_comm_reduce_scatter` into a buffer
      of the result's size; along another dim: an all-reduce, then the
      rank's block (`tensor.extract_slice` at `ein_comm_axis_rank` times the
      block's size).
    - `all_gather`: `ein_comm_all_gather` of the ranks' blocks one after
      another; along dim 0 into a buffer of the result, along dim g > 0 into
      a buffer [n, block] then transposed to [.., n, d_g, ..] and merged.
    - `all_to_all`: the split dim cut into n chunks moved to the front
      (a transpose into a contiguous buffer), `ein_comm_all_to_all` (chunk r
      to rank r), and the received [n, piece] placed along the concat dim
      as an all-gather's blocks.

    Refused by name, at the op: any other `mesh` op, a gather along a
    non-leading dim or an all-to-all of dynamic sizes, an all-to-all whose
    split and concat dims are one, an op
    over several mesh axes, a result element type that differs from the
    operand's, an element type the communicator does not reduce, and an
    average of a type other than f32 or f64. The `mesh.mesh` declarations
    are erased.

    Before:
    ```mlir
    mesh.mesh @mesh(shape = 2)
    func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %0 = mesh.all_reduce %x on @mesh mesh_axes = [0] : tensor<2x3xf32> -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    }
    ```
    After:
    ```mlir
    func.func private @ein_comm_all_reduce(i64, i64, i32, i32, i32)
    func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %buf = memref.alloc() : memref<2x3xf32>
      bufferization.materialize_in_destination %x in restrict writable %buf
      %p = memref.extract_aligned_pointer_as_index %buf
      %a = arith.index_cast %p : index to i64
      call @ein_comm_all_reduce(%a, %c6, %f32, %sum, %axis0)
      %0 = bufferization.to_tensor %buf restrict writable
      return %0 : tensor<2x3xf32>
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect"
  ];
}

#endif // EIN_CONVERSION_PASSES_TD
