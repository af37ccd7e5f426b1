// `einc emit`: a checked program's `ein` IR, built by MLIRGen and lowered by
// the CPU pipeline to the stage asked for, as text.
#include "ein/Compile/Compile.h"
#include "ein/MLIRGen/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_os_ostream.h"

namespace ein {

const char *irStageName(IRStage stage) {
  switch (stage) {
  case IRStage::Ein:
    return "ein";
  case IRStage::Linalg:
    return "linalg";
  case IRStage::Loops:
    return "loops";
  case IRStage::LLVM:
    return "llvm";
  }
  return "?";
}

std::optional<IRStage> irStageOf(const std::string &name) {
  for (IRStage stage :
       {IRStage::Ein, IRStage::Linalg, IRStage::Loops, IRStage::LLVM})
    if (name == irStageName(stage))
      return stage;
  return std::nullopt;
}

namespace {
/// Lowers verified `ein` IR to `stage` and prints it.
ErrorOr<void> lowerAndPrint(mlir::ModuleOp ir, IRStage stage, std::ostream &os,
                            const CPUOptions &options) {
  if (stage != IRStage::Ein) {
    CPUStage cpu = stage == IRStage::Linalg  ? CPUStage::Linalg
                   : stage == IRStage::Loops ? CPUStage::Loops
                                             : CPUStage::LLVM;
    if (auto lowered = lowerToStage(ir, cpu, options); !lowered)
      return lowered.error();
  }
  llvm::raw_os_ostream out(os);
  ir->print(out, mlir::OpPrintingFlags());
  out << "\n";
  return {};
}
} // namespace

ErrorOr<void> emitIR(const CheckedModule &module, IRStage stage,
                     std::ostream &os, const CPUOptions &options) {
  mlir::MLIRContext context;
  auto ir = buildVerifiedEinModule(context, module);
  if (!ir)
    return ir.error();
  return lowerAndPrint(**ir, stage, os, options);
}

ErrorOr<void> emitShardedIR(const CheckedModule &local, const MeshProgram &mesh,
                            IRStage stage, std::ostream &os,
                            const CPUOptions &options) {
  mlir::MLIRContext context;
  auto ir = buildVerifiedShardedEinModule(context, local, mesh);
  if (!ir)
    return ir.error();
  return lowerAndPrint(**ir, stage, os, options);
}

} // namespace ein
