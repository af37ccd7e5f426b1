// JIT: lowers one function to LLVM, compiles it with MLIR's ExecutionEngine,
// and calls its C interface with memref descriptors over host tensors.
#include "ein/Execution/JIT.h"
#include "ein/Conversion/Pipelines.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/MLIRGen/MLIRGen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
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
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string name;
  std::vector<TensorType> params, results;
  Bindings env;
};

JITFunction::JITFunction(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
JITFunction::~JITFunction() = default;

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

bool typeMatches(const runtime::HostTensor &t, const TensorType &type,
                 const Bindings &env, std::string &why) {
  if (t.type != runtime::toStorage(type.dtype)) {
    why = std::string("has storage ") + runtime::storageName(t.type) +
          ", expected " + dtypeName(type.dtype);
    return false;
  }
  if (t.shape.size() != type.shape.size()) {
    why = "has rank " + std::to_string(t.shape.size()) + ", expected " +
          std::to_string(type.shape.size());
    return false;
  }
  for (size_t i = 0; i < t.shape.size(); ++i) {
    auto v = type.shape[i].size.evaluate(env);
    if (!v || *v != Int(t.shape[i])) {
      why = "has shape " + runtime::shapeTupleStr(t.shape) + ", expected \"" +
            shapeStr(type.shape) + "\"";
      return false;
    }
  }
  return true;
}

/// A ranked memref descriptor: allocated and aligned pointers, offset,
/// sizes and strides, laid out as MLIR's C interface expects.
std::vector<int64_t> descriptor(const runtime::HostTensor &t) {
  std::vector<int64_t> d;
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

} // namespace

std::unique_ptr<JITFunction> JITFunction::compile(const CheckedModule &module,
                                                  const std::string &function,
                                                  std::string &error,
                                                  const CPUOptions &options,
                                                  const JITOptions &jit) {
  const CheckedFunction *fn = module.find(function);
  if (!fn) {
    error = "no function named '" + function + "'";
    return nullptr;
  }
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;

  auto impl = std::make_unique<Impl>();
  impl->name = function;
  impl->env = fn->ctx.env;
  // Packs whose rank the body fixed are expanded, as in the lowered code.
  auto expanded = [&](unsigned id) {
    const TensorType &t = fn->values[id].type;
    return TensorType{fn->ctx.expand(t.shape), t.dtype};
  };
  for (unsigned id : fn->params)
    impl->params.push_back(expanded(id));
  for (unsigned id : fn->returns)
    impl->results.push_back(expanded(id));

  auto ir = buildVerifiedEinModule(impl->context, module, error);
  if (!ir)
    return nullptr;
  // Only the requested function is compiled, renamed to kEntryName.
  for (auto f : llvm::make_early_inc_range(ir->getOps<mlir::func::FuncOp>())) {
    if (f.getName() != function)
      f.erase();
    else
      f.setSymName(kEntryName);
  }
  if (!lowerToStage(*ir, CPUStage::LLVM, error, options))
    return nullptr;

  // The host's target machine: LLVM's optimizer needs it to know the vector
  // width (AVX-512 where present), or it does not vectorize at all.
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    error = "cannot detect the host CPU: " + llvm::toString(builder.takeError());
    return nullptr;
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine) {
    error = "cannot create a target machine: " +
            llvm::toString(machine.takeError());
    return nullptr;
  }
  mlir::ExecutionEngineOptions engineOptions;
  // options.transformer is a function_ref: the function must outlive it.
  std::function<llvm::Error(llvm::Module *)> optimize =
      mlir::makeOptimizingTransformer(3, 0, machine->get());
  engineOptions.transformer = optimize;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  llvm::SmallVector<llvm::StringRef> libs{EIN_C_RUNNER_UTILS, EIN_OPENMP_RUNTIME};
  engineOptions.sharedLibPaths = libs;
  // MLIR turns both listeners on by default; they stay off unless asked for.
  engineOptions.enablePerfNotificationListener = jit.perfListener;
  engineOptions.enableGDBNotificationListener = jit.gdbListener;
  auto engine = mlir::ExecutionEngine::create(*ir, engineOptions, std::move(*machine));
  if (!engine) {
    llvm::raw_string_ostream os(error);
    os << "JIT compilation failed: " << llvm::toString(engine.takeError());
    return nullptr;
  }
  impl->engine = std::move(*engine);
  return std::unique_ptr<JITFunction>(new JITFunction(std::move(impl)));
}

bool JITFunction::call(const std::vector<const runtime::HostTensor *> &inputs,
                       const std::vector<runtime::HostTensor *> &outputs,
                       std::string &error) {
  if (inputs.size() != impl->params.size() ||
      outputs.size() != impl->results.size()) {
    error = "wrong number of inputs or outputs";
    return false;
  }
  std::vector<std::vector<int64_t>> descriptors;
  std::string why;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!typeMatches(*inputs[i], impl->params[i], impl->env, why)) {
      error = "input " + std::to_string(i) + " " + why;
      return false;
    }
    descriptors.push_back(descriptor(*inputs[i]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!typeMatches(*outputs[i], impl->results[i], impl->env, why)) {
      error = "output " + std::to_string(i) + " " + why;
      return false;
    }
    descriptors.push_back(descriptor(*outputs[i]));
  }
  // The packed interface takes a pointer to each argument; each argument of
  // the C interface is a pointer to a descriptor.
  std::vector<void *> pointers, args;
  pointers.reserve(descriptors.size());
  for (auto &d : descriptors)
    pointers.push_back(d.data());
  for (auto &p : pointers)
    args.push_back(&p);
  llvm::Error err = impl->engine->invokePacked(
      std::string("_mlir_ciface_") + kEntryName, args);
  if (err) {
    error = "call failed: " + llvm::toString(std::move(err));
    return false;
  }
  return true;
}

} // namespace ein
