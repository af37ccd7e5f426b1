// `einc emit`: a checked program's `ein` IR, built by MLIRGen and lowered by
// the CPU pipeline to the stage asked for, as text.
#include "ein/Compile/Compile.h"
#include "ein/MLIRGen/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_os_ostream.h"

namespace ein {

ErrorOr<void> emitIR(const CheckedModule &module, IRStage stage,
                     std::ostream &os, const CPUOptions &options) {
  mlir::MLIRContext context;
  auto ir = buildVerifiedEinModule(context, module);
  if (!ir)
    return ir.error();
  if (stage != IRStage::Ein) {
    CPUStage cpu = stage == IRStage::Linalg  ? CPUStage::Linalg
                   : stage == IRStage::Loops ? CPUStage::Loops
                                             : CPUStage::LLVM;
    if (auto lowered = lowerToStage(**ir, cpu, options); !lowered)
      return lowered.error();
  }
  llvm::raw_os_ostream out(os);
  (*ir)->print(out, mlir::OpPrintingFlags());
  out << "\n";
  return {};
}

ErrorOr<void> emitShardedIR(const CheckedModule &local, const MeshProgram &mesh,
                            std::ostream &os) {
  mlir::MLIRContext context;
  auto ir = buildVerifiedShardedEinModule(context, local, mesh);
  if (!ir)
    return ir.error();
  llvm::raw_os_ostream out(os);
  (*ir)->print(out, mlir::OpPrintingFlags());
  out << "\n";
  return {};
}

} // namespace ein
