// The one bridge from the checked AST to the `ein` dialect (no MLIR in this
// header).
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Sema/Program.h"

#include <ostream>
#include <string>

namespace ein {

/// Compilation stages that can be printed (`einc emit --stage=`).
enum class IRStage { Ein, Linalg, Loops, LLVM };

/// Builds the `ein` IR of `module`, verifies it, lowers it to `stage`, and
/// prints it to `os`. An error carries MLIR's diagnostics as its context.
ErrorOr<void> emitIR(const CheckedModule &module, IRStage stage,
                     std::ostream &os, const CPUOptions &options = {});

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
