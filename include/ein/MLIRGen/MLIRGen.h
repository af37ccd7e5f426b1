// The one bridge from the checked AST to the `ein` dialect (no MLIR in this
// header).
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Sema/Program.h"

#include <ostream>
#include <string>
#include <vector>

namespace ein {

/// Compilation stages that can be printed (`einc emit --stage=`).
enum class IRStage { Ein, Linalg, Loops, LLVM };

/// Builds the `ein` IR of `module`, verifies it, lowers it to `stage`, and
/// prints it to `os`. An error carries MLIR's diagnostics as its context.
ErrorOr<void> emitIR(const CheckedModule &module, IRStage stage,
                     std::ostream &os, const CPUOptions &options = {});

/// A loop nest the CPU pipeline's fusion passes made (docs/lowering.md
/// §3.6): `kind` is "rows" (an `ein.row_tiles` loop: every op inside it) or
/// "elementwise" (an op on tensors whose location is an `ein.fused`
/// FusedLoc); `ops` are the indices in CheckedFunction::ops of the source
/// ops it computes (by source location and call sites), ascending.
struct FusedLoopNest {
  std::string kind;
  std::vector<size_t> ops;
};

/// Compiles `fn` alone (it has no calls left: they are inlined) through the
/// CPU pipeline up to its fusion passes (CPUStage::Fused) and reads their
/// loop nests back, in IR order. An error (MLIR's diagnostics as context)
/// when the function does not lower.
ErrorOr<std::vector<FusedLoopNest>> fusedLoopNests(const CheckedModule &module,
                                                   const CheckedFunction &fn,
                                                   const CPUOptions &options);

} // namespace ein

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
/// Builds and verifies it; an error carries the verifier's messages as its
/// context.
ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedEinModule(mlir::MLIRContext &context, const CheckedModule &module);
} // namespace ein
