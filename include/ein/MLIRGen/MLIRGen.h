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
/// Builds and verifies it; an error carries the verifier's messages as its
/// context.
ErrorOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedEinModule(mlir::MLIRContext &context, const CheckedModule &module);
} // namespace ein
