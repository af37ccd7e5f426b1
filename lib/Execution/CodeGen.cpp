// LLVM IR to object code in parallel partitions (include/ein/Execution/
// CodeGen.h), as llvm::splitCodeGen does for LTO.
#include "ein/Execution/CodeGen.h"
#include "ein/Conversion/CPU/HostCPU.h"
#include "ein/Execution/Optimize.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace ein {

namespace {

/// -O3 and code generation of one module with its own target machine.
ErrorOr<std::string> optimizeAndEmit(llvm::Module &module,
                                     llvm::TargetMachine &machine) {
  if (auto err = optimizeLLVMModule(module, &machine))
    return Error::program(fmt::format("LLVM optimization failed: {}",
                                      llvm::toString(std::move(err))));
  llvm::SmallVector<char, 0> bytes;
  {
    llvm::raw_svector_ostream out(bytes);
    llvm::legacy::PassManager pm;
    if (machine.addPassesToEmitFile(pm, out, nullptr,
                                    llvm::CodeGenFileType::ObjectFile))
      return Error::program("this target cannot emit object files");
    pm.run(module);
  }
  return std::string(bytes.data(), bytes.size());
}

/// Makes every local symbol a hidden global one, named, so that a part can
/// reference what another part defines (the objects link in one JIT).
void externalize(llvm::Module &module) {
  auto global = [](llvm::GlobalValue &value) {
    if (value.hasLocalLinkage()) {
      value.setLinkage(llvm::GlobalValue::ExternalLinkage);
      value.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
    if (!value.hasName())
      value.setName("ein_part_unnamed"); // made unique by LLVM
  };
  for (llvm::Function &f : module)
    if (!f.isDeclaration())
      global(f);
  for (llvm::GlobalVariable &g : module.globals())
    if (!g.isDeclaration() && !g.getName().starts_with("llvm."))
      global(g);
  for (llvm::GlobalAlias &a : module.aliases())
    global(a);
}

/// `module` in `count` parts, as bitcode: the functions dealt largest first
/// to the part with the fewest instructions so far (instructions stand for
/// compile time), the global variables and aliases to part 0. Deterministic:
/// ties go by the functions' order in the module. (llvm::SplitModule
/// spreads functions by the hash of their names: the gradient of
/// examples/gpt.ein had twice a fair share in one part.)
std::vector<llvm::SmallVector<char, 0>> splitByFunction(llvm::Module &module,
                                                        unsigned count) {
  externalize(module);
  std::vector<const llvm::Function *> functions;
  for (const llvm::Function &f : module)
    if (!f.isDeclaration())
      functions.push_back(&f);
  std::stable_sort(functions.begin(), functions.end(),
                   [](const llvm::Function *a, const llvm::Function *b) {
                     return a->getInstructionCount() > b->getInstructionCount();
                   });
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> owner;
  std::vector<size_t> load(count, 0);
  for (const llvm::Function *f : functions) {
    unsigned least =
        unsigned(std::min_element(load.begin(), load.end()) - load.begin());
    owner[f] = least;
    load[least] += f->getInstructionCount();
  }
  std::vector<llvm::SmallVector<char, 0>> parts(count);
  for (unsigned i = 0; i < count; ++i) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
          auto found = owner.find(value);
          return (found == owner.end() ? 0 : found->second) == i;
        });
    llvm::raw_svector_ostream out(parts[i]);
    llvm::WriteBitcodeToFile(*part, out);
  }
  return parts;
}

/// Whether `fn` is the body of a parallel region: outlined by the OpenMP
/// translation and started by __kmpc_fork_call.
bool isParallelBody(const llvm::Function &fn) {
  for (const llvm::User *user : fn.users())
    if (auto *call = llvm::dyn_cast<llvm::CallBase>(user))
      if (llvm::Function *callee = call->getCalledFunction())
        if (callee->getName() == "__kmpc_fork_call")
          return true;
  return false;
}

/// Marks the loops of the serial code (every function but the parallel
/// regions' bodies) not to be unrolled. A serial loop nest has little work
/// by construction (ein-serial-small-loops: more work runs in parallel),
/// and LLVM's partial unrolling, for the loop buffer of the CPU, copied
/// each of them: the serial code of examples/gpt.ein's gradient grew from
/// 12k to 65k lines of IR, and took 2.8 of the 4 s of its code generation.
/// The loops are still vectorized.
void keepSerialLoopsRolled(llvm::Module &module) {
  for (llvm::Function &fn : module) {
    if (fn.isDeclaration() || isParallelBody(fn))
      continue;
    llvm::DominatorTree dominators(fn);
    llvm::LoopInfo loops(dominators);
    // The attribute without a value (addStringMetadataToLoop's "i32 0"
    // would read as "not disabled").
    llvm::LLVMContext &ctx = fn.getContext();
    llvm::MDNode *disable = llvm::MDNode::get(
        ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
    for (llvm::Loop *loop : loops.getLoopsInPreorder())
      loop->setLoopID(llvm::makePostTransformationMetadata(
          ctx, loop->getLoopID(), {"llvm.loop.unroll."}, {disable}));
  }
}

size_t instructionCount(const llvm::Module &module) {
  size_t n = 0;
  for (const llvm::Function &f : module)
    n += f.getInstructionCount();
  return n;
}

} // namespace

ErrorOr<std::vector<std::string>>
generateObjects(std::unique_ptr<llvm::Module> module, const ResolvedCPU &cpu,
                unsigned maxPartitions) {
  auto mainMachine = createTargetMachine(cpu);
  if (!mainMachine)
    return mainMachine.error();
  module->setTargetTriple((*mainMachine)->getTargetTriple().str());
  module->setDataLayout((*mainMachine)->createDataLayout());
  // Identical functions merged first, once, before the split: the parallel
  // regions of a training step's gradient are outlined into many
  // byte-identical bodies (5 copies of one 105 KB region in
  // examples/gpt.ein's), which -O3 and code generation would otherwise each
  // compile, in whichever parts they fall. A merged body is reached through a
  // one-jump thunk, once per region entered.
  llvm::ModuleAnalysisManager none;
  (void)llvm::MergeFunctionsPass().run(*module, none);
  unsigned partitions = unsigned(std::clamp<size_t>(
      instructionCount(*module) / kInstructionsPerPartition, 1,
      std::max(1u, std::min(maxPartitions, kMaxPartitions))));
  keepSerialLoopsRolled(*module);
  if (partitions == 1) {
    auto object = optimizeAndEmit(*module, **mainMachine);
    if (!object)
      return object.error();
    return std::vector<std::string>{std::move(*object)};
  }
  // Each part as bitcode, read back in a context of its own: a context is
  // not shared between threads.
  std::vector<llvm::SmallVector<char, 0>> parts =
      splitByFunction(*module, partitions);
  module.reset();
  // A target machine per part (one is not shared between threads), made
  // here so that a failure returns before any thread starts.
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto machine = createTargetMachine(cpu);
    if (!machine)
      return machine.error();
    machines.push_back(std::move(*machine));
  }
  // The largest parts first, so that the threads finish together.
  std::vector<size_t> order(parts.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return parts[a].size() > parts[b].size();
  });
  std::vector<ErrorOr<std::string>> objects(
      parts.size(), Error::program("a part was not compiled"));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) {
      size_t i = order[k];
      llvm::LLVMContext context;
      auto part = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(
              llvm::StringRef(parts[i].data(), parts[i].size()), "part"),
          context);
      if (!part) {
        objects[i] = Error::program(fmt::format(
            "cannot read a part back: {}", llvm::toString(part.takeError())));
        continue;
      }
      objects[i] = optimizeAndEmit(**part, *machines[i]);
    }
  };
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(threads, parts.size()); ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  std::vector<std::string> result;
  for (ErrorOr<std::string> &object : objects) {
    if (!object)
      return object.error();
    result.push_back(std::move(*object));
  }
  return result;
}

} // namespace ein
