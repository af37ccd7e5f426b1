// JIT: lowers one function to LLVM, compiles it to objects (CodeGen.h) linked
// into an ORC JIT, and calls its C interface with memref descriptors over
// host tensors.
#include "ein/Execution/JIT.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Execution/CodeGen.h"
#include "ein/Execution/ObjectBundle.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Runtime/Allocator.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Support/Files.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <string_view>

#ifndef EIN_OPENMP_RUNTIME
#define EIN_OPENMP_RUNTIME "libomp.so"
#endif
#ifndef EIN_C_RUNNER_UTILS
#define EIN_C_RUNNER_UTILS "libmlir_c_runner_utils.so"
#endif

namespace ein {

/// The name the compiled function gets in the JIT module. The user's name is
/// not kept: a function called like a C library symbol that the lowered code
/// calls (`malloc`, `free`, `pow`, `tanh`, `expf`, ...) would clash with it
/// or take its calls.
static constexpr const char *kEntryName = "ein_jit_entry";

struct JITFunction::Impl {
  mlir::MLIRContext context;
  /// The JIT the function's objects are linked into.
  std::unique_ptr<llvm::orc::LLJIT> loaded;
  /// The packed C interface, looked up once: a lookup by name takes the
  /// JIT's session lock and costs microseconds.
  void (*entry)(void **) = nullptr;
  std::string name;
  std::vector<TensorType> params, results;
  Bindings env;
  /// The function's takes, when it has any: its C interface then has one
  /// more output, the count of ids out of range (kIndexStatusAttr).
  std::vector<TakeSite> takes;
  /// Compiled with its mesh's collectives (calls of CollectiveCalls.h):
  /// called only inside a CollectiveScope.
  bool collectives = false;
};

JITFunction::JITFunction(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
JITFunction::~JITFunction() = default;

std::vector<TakeSite> takeSites(const CheckedModule &module,
                                const CheckedFunction &fn) {
  std::vector<TakeSite> sites;
  for (const CheckedOp &op : fn.ops)
    if (op.checksDropoutRate())
      sites.push_back({"dropout", module.pathOf(op.loc), op.loc.line,
                       op.loc.col, SizeExpr()});
    else if (op.checksIds())
      sites.push_back({opKindName(op.kind), module.pathOf(op.loc), op.loc.line,
                       op.loc.col, op.sizeValue});
  return sites;
}

namespace {

/// "[0, vocab=5)": a take's bound, with its number when `env` has it.
std::string takeBound(const TakeSite &t, const Bindings &env) {
  std::string text = t.size.str();
  if (auto v = t.size.evaluate(env); v && text != toString(*v))
    text += "=" + toString(*v);
  return fmt::format("[0, {})", text);
}

// Like every error of the inputs (exit 2), the tool's error rather than
// one located in the file: the line is the take's, the ids the inputs'.
std::string takeAt(const TakeSite &t) {
  return fmt::format("{}:{}:{}", t.file, t.line, t.col);
}

/// "take at model.ein:7:12": the op and where it is.
std::string siteOf(const TakeSite &t) {
  return fmt::format("{} at {}", t.op, takeAt(t));
}

const char *kIdNote = "an id must be in [0, size): a negative id is an "
                      "error, not counted from the end";

const char *kRateNote = "dropout's p must be in [0, 1): p = 1 would drop "
                        "every element, and its scale 1 / (1 - p) is "
                        "infinite";

} // namespace

Error dropoutRateError(const TakeSite &dropout, double p) {
  return Error::usage(
             fmt::format("{}: p is {}, outside [0, 1)", siteOf(dropout), p))
      .withNote(kRateNote);
}

Error takeIdError(const TakeSite &take, int64_t id,
                  const std::vector<int64_t> &position, int64_t count,
                  const Bindings &env) {
  std::string message =
      fmt::format("{}: id {}{} is out of range {}", siteOf(take), id,
                  position.empty() ? ""
                                   : fmt::format(" (at [{}] of its ids)",
                                                 fmt::join(position, ", ")),
                  takeBound(take, env));
  if (count > 1)
    message += fmt::format("; {} ids are out of range in all", count);
  return Error::usage(std::move(message)).withNote(kIdNote);
}

Error indexError(const std::vector<TakeSite> &sites, int64_t count,
                 const Bindings &env) {
  // Dropouts with a run-time p count into the same status as the takes.
  std::vector<TakeSite> takes, dropouts;
  for (const TakeSite &t : sites)
    (t.isDropoutRate() ? dropouts : takes).push_back(t);
  if (!dropouts.empty()) {
    std::string message;
    if (takes.empty() && dropouts.size() == 1) {
      message = fmt::format("{}: p is outside [0, 1)", siteOf(dropouts[0]));
    } else {
      message = takes.empty() ? "a dropout's p is outside [0, 1) in one of:"
                              : "an id is out of range or a dropout's p is "
                                "outside [0, 1) in one of:";
      for (const TakeSite &t : sites)
        message +=
            fmt::format(" {}{};", siteOf(t),
                        t.isDropoutRate() ? "" : " " + takeBound(t, env));
      message.pop_back();
    }
    Error error = Error::usage(std::move(message)).withNote(kRateNote);
    return takes.empty() ? error : error.withNote(kIdNote);
  }
  auto bound = [&](const TakeSite &t) { return takeBound(t, env); };
  // The CUDA entry reports that some id was out of range, not how many.
  std::string what = count == 0   ? "ids"
                     : count == 1 ? "an id"
                                  : fmt::format("{} ids", count);
  std::string message;
  if (takes.size() == 1) {
    message = fmt::format("{}: {} out of range {}", siteOf(takes[0]), what,
                          bound(takes[0]));
  } else {
    // Takes only keep their words; a function that mixes take and
    // take_along names the op of each.
    bool mixed =
        std::any_of(takes.begin(), takes.end(),
                    [&](const TakeSite &t) { return t.op != takes[0].op; });
    message = fmt::format("{}: {} out of range in one of the function's "
                          "{}:",
                          mixed ? "take" : takes[0].op, what,
                          mixed ? "takes and take_alongs" : takes[0].op + "s");
    for (const TakeSite &t : takes)
      message +=
          fmt::format(" {} {};", mixed ? siteOf(t) : takeAt(t), bound(t));
    message.pop_back();
  }
  return Error::usage(std::move(message)).withNote(kIdNote);
}

namespace {

bool environmentFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::string_view(value) != "0";
}

} // namespace

JITOptions JITOptions::fromEnvironment() {
  JITOptions options;
  options.perfListener = environmentFlag("EIN_JIT_PERF");
  options.gdbListener = environmentFlag("EIN_JIT_GDB");
  return options;
}

namespace {

void initializeNativeTarget() {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
}

/// The signature of `fn` as calls check it.
std::unique_ptr<JITFunction::Impl> makeImpl(const CheckedModule &module,
                                            const CheckedFunction &fn) {
  auto impl = std::make_unique<JITFunction::Impl>();
  impl->name = fn.name;
  impl->env = fn.ctx.env;
  // Packs whose rank the body fixed are expanded, as in the lowered code.
  auto expanded = [&](unsigned id) {
    const TensorType &t = fn.values[id].type;
    return TensorType{fn.ctx.expand(t.shape), t.dtype};
  };
  for (unsigned id : fn.params)
    impl->params.push_back(expanded(id));
  for (unsigned id : fn.returns)
    impl->results.push_back(expanded(id));
  impl->takes = takeSites(module, fn);
  return impl;
}

bool typeMatches(const runtime::HostTensor &t, const TensorType &type,
                 const Bindings &env, std::string &why) {
  if (t.type != runtime::toStorage(type.dtype)) {
    why = fmt::format("has storage {}, expected {}",
                      runtime::storageName(t.type), dtypeName(type.dtype));
    return false;
  }
  if (t.shape.size() != type.shape.size()) {
    why = fmt::format("has rank {}, expected {}", t.shape.size(),
                      type.shape.size());
    return false;
  }
  for (size_t i = 0; i < t.shape.size(); ++i) {
    auto v = type.shape[i].size.evaluate(env);
    if (!v || *v != Int(t.shape[i])) {
      why = fmt::format("has shape {}, expected \"{}\"",
                        runtime::shapeTupleStr(t.shape), shapeStr(type.shape));
      return false;
    }
  }
  // Any dense layout is fine (the compiled code reads and writes through
  // the strides); data that does not fill it would be read out of bounds.
  if (!t.isConsistent()) {
    why = fmt::format("has {} bytes of data and strides {}, which do not "
                      "match its shape {}",
                      t.data.size(), runtime::shapeTupleStr(t.strides()),
                      runtime::shapeTupleStr(t.shape));
    return false;
  }
  return true;
}

/// A ranked memref descriptor: allocated and aligned pointers, offset,
/// sizes and strides, laid out as MLIR's C interface expects. The strides
/// are the tensor's own (C order, or a Fortran-order input's layout).
llvm::SmallVector<int64_t, 16> descriptor(const runtime::HostTensor &t) {
  llvm::SmallVector<int64_t, 16> d;
  auto ptr = reinterpret_cast<int64_t>(t.data.data());
  d.push_back(ptr);
  d.push_back(ptr);
  d.push_back(0);
  for (int64_t s : t.shape)
    d.push_back(s);
  for (int64_t s : t.strides())
    d.push_back(s);
  return d;
}

/// The packed interface `_mlir_NAME` of the C interface `NAME`, as MLIR's
/// ExecutionEngine generates it: one argument, an array of pointers to the
/// arguments, so that a caller needs no prototype. False when the module
/// has no function `NAME`.
bool addPackedInterface(llvm::Module &module, llvm::StringRef name) {
  llvm::Function *fn = module.getFunction(name);
  if (!fn || fn->isDeclaration())
    return false;
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *packed = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false),
      llvm::GlobalValue::ExternalLinkage, "_mlir_" + name, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
  llvm::SmallVector<llvm::Value *, 8> args;
  llvm::Value *list = packed->getArg(0);
  for (auto [i, arg] : llvm::enumerate(fn->args())) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptr, list, i);
    args.push_back(b.CreateLoad(arg.getType(), b.CreateLoad(ptr, slot)));
  }
  llvm::Value *result = b.CreateCall(fn, args);
  if (!result->getType()->isVoidTy()) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptr, list, args.size());
    b.CreateStore(result, b.CreateLoad(ptr, slot));
  }
  b.CreateRetVoid();
  return true;
}

/// The name of the packed interface of the compiled function.
std::string packedEntryName() {
  return std::string("_mlir__mlir_ciface_") + kEntryName;
}

/// Links `objects` (compile()'s, or the disk cache's) into a fresh JIT
/// with the libraries the code calls (the C library, libomp, MLIR's runner
/// utilities) and ein's allocator, and looks up the entry.
ErrorOr<void> link(JITFunction::Impl &impl,
                   const std::vector<std::string_view> &objects,
                   const JITOptions &options) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return Error::program(llvm::toString(builder.takeError()));
  // RuntimeDyld, as MLIR's ExecutionEngine links, with its listeners.
  auto linker = [&](llvm::orc::ExecutionSession &session,
                    const llvm::Triple &) {
    auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
        session, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
    if (options.gdbListener)
      if (auto *gdb = llvm::JITEventListener::createGDBRegistrationListener())
        layer->registerJITEventListener(*gdb);
    if (options.perfListener)
      if (auto *perf = llvm::JITEventListener::createPerfJITEventListener())
        layer->registerJITEventListener(*perf);
    return layer;
  };
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*builder))
                 .setObjectLinkingLayerCreator(linker)
                 .create();
  if (!jit)
    return Error::program(llvm::toString(jit.takeError()));
  llvm::orc::JITDylib &dylib = (*jit)->getMainJITDylib();
  char prefix = (*jit)->getDataLayout().getGlobalPrefix();
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process)
    return Error::program(llvm::toString(process.takeError()));
  dylib.addGenerator(std::move(*process));
  // Loaded RTLD_LOCAL, not as DynamicLibrarySearchGenerator::Load does
  // (RTLD_GLOBAL): libmlir_c_runner_utils brings libLLVM.so, whose symbols
  // made global crash a later LLVM-carrying library of the same process
  // (triton's, which torch imports after an ein call from Python).
  for (const char *lib : {EIN_C_RUNNER_UTILS, EIN_OPENMP_RUNTIME}) {
    void *handle = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return Error::program(
          fmt::format("cannot load {}: {}", lib, ::dlerror()));
    dylib.addGenerator(
        std::make_unique<llvm::orc::DynamicLibrarySearchGenerator>(
            llvm::sys::DynamicLibrary(handle), prefix));
  }
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char *name, auto *fn) {
    symbols[(*jit)->mangleAndIntern(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(fn), llvm::JITSymbolFlags::Exported};
  };
  // The code's allocations (generic allocation functions, §4 of
  // docs/lowering.md) go to ein's caching allocator.
  add("_mlir_memref_to_llvm_alloc", &ein_runtime_alloc);
  add("_mlir_memref_to_llvm_aligned_alloc", &ein_runtime_aligned_alloc);
  add("_mlir_memref_to_llvm_free", &ein_runtime_free);
  // A sharded function's collectives run on the calling rank's groups.
  add(kAllReduceCall, &ein_comm_all_reduce);
  add(kReduceScatterCall, &ein_comm_reduce_scatter);
  add(kAllGatherCall, &ein_comm_all_gather);
  add(kAllToAllCall, &ein_comm_all_to_all);
  add(kAxisRankCall, &ein_comm_axis_rank);
  if (auto err = dylib.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return Error::program(llvm::toString(std::move(err)));
  for (std::string_view object : objects)
    if (auto err = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
            llvm::StringRef(object.data(), object.size()), "ein-object")))
      return Error::program(llvm::toString(std::move(err)));
  auto entry = (*jit)->lookup(packedEntryName());
  if (!entry)
    return Error::program(llvm::toString(entry.takeError()));
  impl.entry = entry->toPtr<void (*)(void **)>();
  impl.loaded = std::move(*jit);
  return {};
}

} // namespace

ErrorOr<std::unique_ptr<JITFunction>>
JITFunction::compile(const CheckedModule &module, const std::string &function,
                     const CPUOptions &options, const JITOptions &jit,
                     const MeshProgram *mesh) {
  auto failure = [&](std::string reason) {
    return Error::program(fmt::format("cannot compile '{}':", function))
        .withContext(std::move(reason));
  };
  const CheckedFunction *fn = module.find(function);
  if (!fn)
    return Error::program(fmt::format("no function named '{}'", function));
  initializeNativeTarget();
  auto impl = makeImpl(module, *fn);
  impl->collectives = mesh != nullptr;
  if (mesh)
    impl->results = meshResultTypes(*fn, *mesh);

  auto verified =
      mesh ? buildVerifiedShardedEinModule(impl->context, module, *mesh)
           : buildVerifiedEinModule(impl->context, module);
  if (!verified)
    return failure(std::move(verified.error().context));
  mlir::OwningOpRef<mlir::ModuleOp> ir = std::move(*verified);
  // Only the requested function is compiled, renamed to kEntryName.
  for (auto f : llvm::make_early_inc_range(ir->getOps<mlir::func::FuncOp>())) {
    if (f.getName() != function)
      f.erase();
    else
      f.setSymName(kEntryName);
  }
  // Temporaries come from the caching allocator (registered by link).
  CPUOptions cpu = options;
  cpu.genericAllocation = true;
  if (auto lowered = lowerToStage(*ir, CPUStage::LLVM, cpu); !lowered)
    return failure(std::move(lowered.error().context));

  // The target machine of the CPU compiled for (the host unless --cpu):
  // LLVM's optimizer needs it to know the vector width (AVX-512 where
  // present), or it does not vectorize at all.
  auto target = resolveCPU(options.target);
  if (!target)
    return target.error();
  if (auto runnable = checkHostCanRun(*target); !runnable)
    return runnable.error();
  std::vector<std::string> objects;
  {
    llvm::LLVMContext llvmContext;
    auto llvmModule = mlir::translateModuleToLLVMIR(*ir, llvmContext);
    if (!llvmModule)
      return failure("translation to LLVM IR failed");
    ir = nullptr; // the MLIR module's memory, freed before code generation
    if (!addPackedInterface(*llvmModule,
                            std::string("_mlir_ciface_") + kEntryName))
      return failure("the lowered module has no C interface of the entry");
    auto generated =
        generateObjects(std::move(llvmModule), *target, kMaxPartitions);
    if (!generated)
      return failure(std::move(generated.error().message));
    objects = std::move(*generated);
  }
  std::vector<std::string_view> views(objects.begin(), objects.end());
  // For the disk cache: a file that cannot be written (a full disk) only
  // leaves the cache without the entry (ObjectCache finds no file to
  // commit), never fails the compilation.
  if (!jit.objectFile.empty())
    (void)writeFileAtomically(jit.objectFile, packObjects(objects));
  if (auto linked = link(*impl, views, jit); !linked)
    return failure(
        fmt::format("JIT compilation failed: {}", linked.error().message));
  return std::unique_ptr<JITFunction>(new JITFunction(std::move(impl)));
}

ErrorOr<std::unique_ptr<JITFunction>>
JITFunction::loadObject(const CheckedModule &module,
                        const std::string &function,
                        const std::string &objectFile) {
  auto failure = [&](std::string reason) {
    return Error::program(fmt::format("cannot load '{}' from {}: {}", function,
                                      objectFile, reason));
  };
  const CheckedFunction *fn = module.find(function);
  if (!fn)
    return Error::program(fmt::format("no function named '{}'", function));
  initializeNativeTarget();
  auto impl = makeImpl(module, *fn);
  auto buffer = llvm::MemoryBuffer::getFile(objectFile);
  if (!buffer)
    return failure(buffer.getError().message());
  auto objects = unpackObjects((*buffer)->getBuffer());
  if (!objects)
    return failure(std::move(objects.error().message));
  if (auto linked = link(*impl, *objects, JITOptions{}); !linked)
    return failure(std::move(linked.error().message));
  return std::unique_ptr<JITFunction>(new JITFunction(std::move(impl)));
}

ErrorOr<void>
JITFunction::call(const std::vector<const runtime::HostTensor *> &inputs,
                  const std::vector<runtime::HostTensor *> &outputs,
                  const Bindings &dims, int64_t *indexStatus) {
  if (indexStatus)
    *indexStatus = 0;
  if (impl->collectives)
    if (auto inScope = CollectiveScope::required(impl->name); !inScope)
      return inScope;
  Bindings env = impl->env;
  for (auto &[name, value] : dims)
    env[name] = value;
  if (inputs.size() != impl->params.size() ||
      outputs.size() != impl->results.size())
    return Error::usage(
        fmt::format("'{}' takes {} input(s) and {} output(s), got {} and {}",
                    impl->name, impl->params.size(), impl->results.size(),
                    inputs.size(), outputs.size()));
  llvm::SmallVector<llvm::SmallVector<int64_t, 16>, 8> descriptors;
  std::string why;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!typeMatches(*inputs[i], impl->params[i], env, why))
      return Error::usage(fmt::format("input {} {}", i, why));
    descriptors.push_back(descriptor(*inputs[i]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!typeMatches(*outputs[i], impl->results[i], env, why))
      return Error::usage(fmt::format("output {} {}", i, why));
    descriptors.push_back(descriptor(*outputs[i]));
  }
  // The index status: one i64, counting the ids out of range.
  int64_t status = 0;
  if (!impl->takes.empty()) {
    auto ptr = reinterpret_cast<int64_t>(&status);
    descriptors.push_back({ptr, ptr, 0, 1, 1});
  }
  // The packed interface takes a pointer to each argument; each argument of
  // the C interface is a pointer to a descriptor.
  llvm::SmallVector<void *, 8> pointers, args;
  pointers.reserve(descriptors.size());
  for (auto &d : descriptors)
    pointers.push_back(d.data());
  for (auto &p : pointers)
    args.push_back(&p);
  impl->entry(args.data());
  if (indexStatus)
    *indexStatus = status;
  if (status != 0)
    return indexError(impl->takes, status, env);
  return {};
}

ErrorOr<void> JITFunction::callStrided(const StridedArgument *args,
                                       size_t count, const Bindings *dims,
                                       int64_t *indexStatus) {
  if (indexStatus)
    *indexStatus = 0;
  if (impl->collectives)
    if (auto inScope = CollectiveScope::required(impl->name); !inScope)
      return inScope;
  size_t expected = impl->params.size() + impl->results.size();
  if (count != expected)
    return Error::usage(fmt::format("'{}' takes {} tensor(s), got {}",
                                    impl->name, expected, count));
  // One flat buffer of descriptors: pointers, offset, sizes, strides.
  llvm::SmallVector<int64_t, 128> flat;
  llvm::SmallVector<size_t, 16> starts;
  for (size_t i = 0; i < count; ++i) {
    const TensorType &type = i < impl->params.size()
                                 ? impl->params[i]
                                 : impl->results[i - impl->params.size()];
    if (args[i].rank != type.shape.size())
      return Error::usage(fmt::format("tensor {} has rank {}, expected {}", i,
                                      args[i].rank, type.shape.size()));
    starts.push_back(flat.size());
    auto ptr = reinterpret_cast<int64_t>(args[i].data);
    flat.append({ptr, ptr, 0});
    flat.append(args[i].sizes, args[i].sizes + args[i].rank);
    flat.append(args[i].strides, args[i].strides + args[i].rank);
  }
  int64_t status = 0;
  if (!impl->takes.empty()) {
    starts.push_back(flat.size());
    auto ptr = reinterpret_cast<int64_t>(&status);
    flat.append({ptr, ptr, 0, 1, 1});
  }
  llvm::SmallVector<void *, 16> pointers, pointerArgs;
  for (size_t start : starts)
    pointers.push_back(flat.data() + start);
  for (auto &p : pointers)
    pointerArgs.push_back(&p);
  impl->entry(pointerArgs.data());
  if (indexStatus)
    *indexStatus = status;
  if (status != 0) {
    Bindings env = impl->env;
    if (dims)
      for (auto &[name, value] : *dims)
        env[name] = value;
    return indexError(impl->takes, status, env);
  }
  return {};
}

} // namespace ein
