// LLVM's optimization pipeline for lowered ein code, shared by the JIT and
// the object writer.
#include "ein/Execution/Optimize.h"

#include "llvm/IR/Module.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>
#include <string>

namespace ein {

namespace {

/// LLVM reads its full-unroll budget only from the `-unroll-threshold`
/// option (PassBuilder's tuning options have no field for it), so it is set
/// there, once per process, unless the process already set it.
void limitFullUnrolling() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &options = llvm::cl::getRegisteredOptions();
    auto found = options.find("unroll-threshold");
    if (found == options.end() || found->second->getNumOccurrences() > 0)
      return;
    std::string value = std::to_string(kFullUnrollThreshold);
    (void)found->second->addOccurrence(0, "unroll-threshold", value);
  });
}

} // namespace

llvm::Error optimizeLLVMModule(llvm::Module &module,
                               llvm::TargetMachine *machine) {
  limitFullUnrolling();
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  // Identical functions are merged before this, on the whole module
  // (generateObjects), not again in each part.
  llvm::ModulePassManager pipeline =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, modules);
  return llvm::Error::success();
}

} // namespace ein
