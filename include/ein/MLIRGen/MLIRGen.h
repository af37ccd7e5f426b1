// The one bridge from the checked AST to the `ein` dialect: it builds IR and
// lowers nothing (lowering: Compile/Compile.h, Execution/). No MLIR header
// here.
#pragma once

#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"

namespace mlir {
class MLIRContext;
class ModuleOp;
template <typename OpTy> class OwningOpRef;
} // namespace mlir

namespace ein {
/// Loads the dialects that `ein` IR uses into `context`.
void registerEinDialects(mlir::MLIRContext &context);
/// Builds (without verifying) the `ein` module of a checked program.
mlir::OwningOpRef<mlir::ModuleOp> buildEinModule(mlir::MLIRContext &context,
                                                 const CheckedModule &module);
/// A sharded function's local program (docs/distributed.md §4): its mesh
/// and the collectives between its ops. The function is checked on its
/// local blocks (each split dim name bound to its block's size).
struct MeshProgram {
  std::vector<std::string> axes; // `mesh dp, tp`: axis i is the i-th name
  std::vector<int64_t> sizes;    // per axis; -1 where --mesh leaves it open
  /// The whole program's fn.collectives, and after which op each runs
  /// (collectivePoints).
  std::vector<InferredCollective> collectives;
  std::vector<size_t> points;
  /// Per collective: the dim a reduce-scatter splits or an all-gather of a
  /// result grows (-1 for others).
  std::vector<int64_t> scatterDims;
  /// Per collective: the dim an all-to-all of a result cuts (its split
  /// moves there from scatterDims[k], which grows); -1, or absent, for
  /// the others.
  std::vector<int64_t> splitDims;
};
/// The dim of a reduce-scatter's block along its scatter dim `whole`, over
/// a mesh axis of `n` ranks (-1: unknown): the quotient, a number where
/// `dims` gives the size and n is known.
Dim scatteredBlock(const Dim &whole, int64_t n, const std::string &axis,
                   const Bindings &dims);
/// The types `fn` (a local program) returns once compiled with `mesh`'s
/// collectives: a reduce-scattered result is its block (scatteredBlock), an
/// all-gathered one n blocks along its gathered dim, an all-to-all's both.
std::vector<TensorType> meshResultTypes(const CheckedFunction &fn,
                                        const MeshProgram &mesh);
/// Builds and verifies the module of `local` (one function: the local
/// program) with `mesh.mesh @mesh` and, after each op a collective follows,
/// its `mesh` op, whose result the later ops read. The `ein` tensors meet
/// the builtin tensors the mesh ops take through
/// `builtin.unrealized_conversion_cast`.
ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedShardedEinModule(mlir::MLIRContext &context,
                              const CheckedModule &local,
                              const MeshProgram &mesh);
/// Builds and verifies it; an error carries the verifier's messages as its
/// context.
ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedEinModule(mlir::MLIRContext &context, const CheckedModule &module);
} // namespace ein
