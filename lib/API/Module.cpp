// The C++ API's modules: a .ein file checked once, each function bound,
// compiled size-generic and cached by the engine (as `einc run
// --size-generic`), and its cost report (as `einc report`).
#include "CUDA/Device.h"
#include "Internal.h"

#include "ein/Analysis/Cost.h"
#include "ein/Analysis/Training.h"
#include "ein/Engine/Engine.h"
#include "ein/Report/Report.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <cmath>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>

namespace ein::api {
namespace detail {

struct ModuleState {
  std::shared_ptr<SourceFile> file;
  ein::Module module;
  CheckOptions options;
  CheckedModule checked;
  /// The engine's cache is not thread-safe: binds (which compile) take
  /// turns; the calls themselves run concurrently.
  std::mutex engineMutex;
  /// Compiles for set_cpu's target as it was when the module was loaded.
  Engine engine{detail::compileOptions()};
  /// Bound calls by function and input shapes: a call with shapes seen
  /// before skips binding and checking (its entry checks held for them).
  std::shared_mutex boundMutex;
  std::unordered_map<std::string, std::shared_ptr<const BoundCall>> bound;
  /// Sharded programs (call_sharded) by function, mesh and block shapes:
  /// prepared by one rank's thread while the others wait, then shared.
  std::mutex shardedMutex;
  std::unordered_map<std::string, std::shared_ptr<const ShardedProgram>>
      sharded;
};

namespace {

Result<std::shared_ptr<ModuleState>> loadState(SourceFile file,
                                               const Sizes &dims) {
  auto state = std::make_shared<ModuleState>();
  state->engine.useDiskCache(true);
  // CUDA calls run on device tensors: the target's in-process library.
  state->engine.buildInProcess(true);
  state->file = std::make_shared<SourceFile>(std::move(file));
  DiagnosticEngine diags(*state->file);
  state->module = parseModule(*state->file, diags);
  if (!diags.hadError())
    resolveImports(state->module, *state->file, diags);
  if (diags.hadError())
    return toInfo(errorFromDiagnostics(diags));
  for (auto &[name, value] : dims) {
    if (value < 0)
      return usageError(
          fmt::format("dim {}={}: a size must be >= 0", name, value));
    state->options.dimOverrides[name] = Int(value);
  }
  CheckOptions symbolic = state->options;
  symbolic.loopsMayStaySymbolic = true; // unrolled when a call binds sizes
  state->checked = checkModule(state->module, symbolic, diags);
  if (diags.hadError())
    return toInfo(errorFromDiagnostics(diags));
  return state;
}

} // namespace

ModuleSource moduleSource(const ModuleState &state) {
  return {*state.file, state.module, state.options};
}

const CheckedModule &checkedModule(const ModuleState &state) {
  return state.checked;
}

ErrorOr<std::shared_ptr<const ShardedProgram>> shardedProgram(
    ModuleState &state, const std::string &key,
    const std::function<ErrorOr<std::shared_ptr<const ShardedProgram>>()>
        &prepare) {
  std::lock_guard<std::mutex> lock(state.shardedMutex);
  if (auto it = state.sharded.find(key); it != state.sharded.end())
    return it->second;
  auto made = prepare();
  if (!made)
    return made.error();
  // Bounded, as the bound calls are.
  if (state.sharded.size() >= 64)
    state.sharded.clear();
  state.sharded.emplace(key, *made);
  return *made;
}

} // namespace detail

using namespace detail;

ErrorInfo Module::resultCountError(const std::string &function, size_t got,
                                   size_t expected) {
  return usageError(fmt::format("'{}' returns {} result(s), not {}", function,
                                got, expected));
}

std::vector<std::string> Module::functions() const {
  std::vector<std::string> names;
  if (state_)
    for (const CheckedFunction &fn : state_->checked.functions)
      names.push_back(fn.name);
  return names;
}

namespace nothrow {

Result<Module> load_module(const std::string &path, const Sizes &dims) {
  auto file = readSource(path);
  if (!file)
    return toInfo(file.error());
  auto state = loadState(std::move(*file), dims);
  if (!state)
    return state.error();
  return Module(*state);
}

Result<Module> module_from_source(const std::string &source,
                                  const std::string &path, const Sizes &dims) {
  auto state = loadState(SourceFile{path, source}, dims);
  if (!state)
    return state.error();
  return Module(*state);
}

Result<std::vector<Tensor>> call(const Module &module,
                                 const std::string &function,
                                 const std::vector<Tensor> &inputs) {
  ModuleState *state = module.state().get();
  if (!state)
    return usageError("call on an empty module");
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor &t : inputs) {
    if (!t.defined())
      return usageError(
          fmt::format("'{}': an input is an undefined tensor", function));
    shapes.push_back(t.shape());
  }
  auto device = deviceOf(fmt::format("'{}'", function), inputs);
  if (!device)
    return device.error();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].device() != *device)
      return usageError(fmt::format("'{}': the inputs are on different "
                                    "devices (input {} is on {}, the others "
                                    "on {}); move them to one with .to()",
                                    function, i, name(inputs[i].device()),
                                    name(*device)));
  const CheckedFunction *fn = state->checked.find(function);
  if (!fn)
    return toInfo(noFunctionError(state->file->path, function,
                                  state->module.functionNames()));
  // Never the unsharded program in place of the sharded one.
  if (!state->checked.meshAxes.empty())
    return toInfo(ein::Error::inFile(
        ErrorKind::Usage, state->file->path,
        fmt::format("'{}' is in a file that declares a mesh: call it on each "
                    "rank's blocks with call_sharded (ein/API/Distributed.h), "
                    "or run it with einc run --ranks N [--simulate]",
                    function)));
  for (size_t i = 0; i < inputs.size() && i < fn->params.size(); ++i) {
    const TensorType &type = fn->values[fn->params[i]].type;
    if (internal(inputs[i].dtype()) != type.dtype)
      return usageError(fmt::format("'{}': input {} ('{}') is {}, the "
                                    "parameter is {}",
                                    function, i, fn->values[fn->params[i]].name,
                                    name(inputs[i].dtype()),
                                    dtypeName(type.dtype)));
  }
  // Calls compile for the registry's cpu target, or for the API's CUDA
  // target (cuda, or cuda-emulated) on device tensors.
  std::string key = (*device == cuda ? "cuda|" : "") + function;
  for (const auto &shape : shapes) {
    key += '|';
    for (int64_t d : shape)
      key += std::to_string(d) + ",";
  }
  std::shared_ptr<const BoundCall> bound;
  {
    std::shared_lock<std::shared_mutex> lock(state->boundMutex);
    if (auto it = state->bound.find(key); it != state->bound.end())
      bound = it->second;
  }
  if (!bound) {
    const Target *cudaTarget = nullptr;
    if (*device == cuda) {
      auto found = cudaDevice::target();
      if (!found)
        return found.error();
      cudaTarget = *found;
    }
    ErrorOr<BoundCall> fresh = [&] {
      std::lock_guard<std::mutex> lock(state->engineMutex);
      size_t compiled = state->engine.compilations();
      size_t loaded = state->engine.loads();
      const Target *target = nullptr;
      if (*device == cpu) {
        // The API's cpu device is the registry's cpu target.
        auto found = lookupTarget("cpu", TargetUse::Run);
        if (!found)
          return ErrorOr<BoundCall>(found.error());
        target = *found;
      } else {
        target = cudaTarget;
      }
      auto result = state->engine.bind(
          *state->file, state->module, state->options, state->checked, function,
          shapes, Specialisation::GenericUnlessLoops, target);
      countModuleCompilations(state->engine.compilations() - compiled,
                              state->engine.loads() - loaded);
      return result;
    }();
    if (!fresh)
      return toInfo(fresh.error());
    bound = std::make_shared<const BoundCall>(std::move(*fresh));
    std::unique_lock<std::shared_mutex> lock(state->boundMutex);
    // Bounded: a server seeing ever new shapes keeps the latest ones.
    if (state->bound.size() >= 1024)
      state->bound.clear();
    state->bound.emplace(key, bound);
  }
  const CheckedFunction *cfn = bound->concrete.find(function);
  std::vector<Tensor> results;
  for (size_t i = 0; i < bound->resultShapes.size(); ++i) {
    DType dtype = external(cfn->values[cfn->returns[i]].type.dtype);
    auto out = allocate(dtype, bound->resultShapes[i], false, *device);
    if (!out)
      return out.error();
    results.push_back(*out);
  }
  std::vector<const Tensor *> tensors;
  for (const Tensor &t : inputs)
    tensors.push_back(&t);
  for (const Tensor &t : results)
    tensors.push_back(&t);
  std::vector<StridedArgument> args;
  for (const Tensor *t : tensors)
    args.push_back(
        {t->data(), t->shape().data(), t->strides().data(), t->shape().size()});
  int64_t status = 0;
  auto called = bound->callable->callStrided(args.data(), args.size(),
                                             &bound->dims, &status);
  if (called)
    return results;
  // The probe that explains an id out of range reads the inputs on the
  // CPU: on CUDA the entry point's error stands.
  if (status == 0 || *device == cuda)
    return toInfo(called.error());
  // An id out of range: which take, which id, where (a probe compiled on
  // this error path only).
  args.resize(inputs.size());
  std::lock_guard<std::mutex> lock(state->engineMutex);
  return toInfo(state->engine.explainIndexError(*bound, function, args, status,
                                                called.error()));
}

namespace {

/// The module checked with `sizes` bound, `function` alone (as `einc report
/// --fn F --dim ...`), or the error.
Result<CheckedModule> checkedWithSizes(const Module &module,
                                       const std::string &function,
                                       const Sizes &sizes) {
  ModuleState *state = module.state().get();
  if (!state)
    return usageError("report on an empty module");
  CheckOptions options = state->options;
  for (auto &[name, value] : sizes) {
    if (value < 0)
      return usageError(
          fmt::format("size {}={}: a size must be >= 0", name, value));
    options.dimOverrides[name] = Int(value);
  }
  options.onlyFunction = function;
  DiagnosticEngine diags(*state->file);
  CheckedModule checked = checkModule(state->module, options, diags);
  if (diags.hadError())
    return toInfo(errorFromDiagnostics(diags));
  if (!checked.find(function))
    return toInfo(noFunctionError(state->file->path, function,
                                  state->module.functionNames()));
  return checked;
}

/// A count of the account as a double; NaN when a size is not bound.
double countOf(const std::optional<Int> &count) {
  return count ? toDouble(*count) : std::nan("");
}

} // namespace

Result<CostReport> report(const Module &module, const std::string &function,
                          const Sizes &sizes) {
  auto checked = checkedWithSizes(module, function, sizes);
  if (!checked)
    return checked.error();
  ReportOptions report;
  report.function = function;
  report.device = &defaultDevice();
  CostReport cost;
  cost.text = reportTable(*checked, report);
  cost.json = reportJSON(*checked, report);
  for (const OpReport &row : reportOps(*checked->find(function), report)) {
    if (row.cost.flops.value)
      cost.flops += double(*row.cost.flops.value);
    if (row.cost.bytesRead.value)
      cost.bytes += double(*row.cost.bytesRead.value);
    if (row.cost.bytesWritten.value)
      cost.bytes += double(*row.cost.bytesWritten.value);
  }
  return cost;
}

Result<TrainReport> train_report(const Module &module,
                                 const std::string &function,
                                 const Sizes &sizes,
                                 const TrainReportOptions &options) {
  auto checked = checkedWithSizes(module, function, sizes);
  if (!checked)
    return checked.error();
  // The flags' checks, with einc report's messages.
  TrainOptions train;
  if (!findOptimizer(options.optimizer))
    return usageError(fmt::format("optimizer '{}': expected one of sgd, "
                                  "momentum, adagrad, rmsprop, adam, adamw",
                                  options.optimizer));
  train.optimizer = options.optimizer;
  for (auto [dtype, what, into] :
       {std::tuple{options.param_dtype, "param_dtype", &train.paramDType},
        std::tuple{options.act_dtype, "act_dtype", &train.actDType}}) {
    if (!dtype)
      continue;
    if (!isFloat(internal(*dtype)))
      return usageError(fmt::format("{} is {}: it must be a float dtype", what,
                                    name(*dtype)));
    *into = internal(*dtype);
  }
  if (!options.tokens.empty()) {
    auto tokens = parseSizeExpr(options.tokens);
    if (!tokens)
      return usageError(fmt::format("tokens '{}': expected a count or a "
                                    "formula of dims (b*s)",
                                    options.tokens));
    train.tokens = *tokens;
  }
  ReportOptions report;
  report.function = function;
  report.device = &defaultDevice();
  if (!options.device.empty() && !(report.device = findDevice(options.device)))
    return usageError(fmt::format("device '{}': expected one of {}",
                                  options.device, deviceNames(", ")));
  auto step = trainingStep(*checked, function, options.params);
  if (!step)
    return toInfo(step.error());
  TrainReport out;
  for (bool json : {false, true}) {
    auto text = trainReportOutput(*step, report, train, json);
    if (!text)
      return toInfo(text.error());
    (json ? out.json : out.text) = std::move(*text);
  }
  TrainFigures figures =
      trainFigures(step->functions.front(), report, train, step->meshAxes);
  out.forward_flops = countOf(figures.forwardFlops);
  out.backward_flops = countOf(figures.backwardFlops);
  out.recompute_flops = countOf(figures.recomputeFlops);
  out.optimizer_flops = countOf(figures.optimizerFlops);
  out.total_flops = countOf(figures.totalFlops);
  out.parameter_bytes = countOf(figures.parameterBytes);
  out.gradient_bytes = countOf(figures.gradientBytes);
  out.optimizer_state_bytes = countOf(figures.stateBytes);
  out.activation_bytes = countOf(figures.activationBytes);
  out.peak_bytes = countOf(figures.peakBytes);
  out.forward_seconds = figures.forwardSeconds;
  out.backward_seconds = figures.backwardSeconds;
  out.optimizer_seconds = figures.optimizerSeconds;
  out.peak_flops = figures.peakFlops;
  return out;
}

Result<Signature> signature(const Module &module, const std::string &function) {
  ModuleState *state = module.state().get();
  if (!state)
    return usageError("signature of an empty module");
  const CheckedFunction *fn = state->checked.find(function);
  if (!fn)
    return toInfo(noFunctionError(state->file->path, function,
                                  state->module.functionNames()));
  auto valueOf = [&](unsigned v) {
    const ein::Value &value = fn->values[v];
    return Signature::Value{value.name, external(value.type.dtype),
                            shapeStr(value.type.shape)};
  };
  // The op that made each value: a gradient is made by a backward op.
  std::vector<const CheckedOp *> producer(fn->values.size());
  for (const CheckedOp &op : fn->ops)
    for (unsigned r : op.results)
      producer[r] = &op;
  Signature sig;
  for (unsigned p : fn->params)
    sig.params.push_back(valueOf(p));
  for (unsigned r : fn->returns) {
    sig.results.push_back(valueOf(r));
    // grad() names each gradient d_<wrt> (CheckGrad.cpp).
    int of = -1;
    const CheckedOp *op = producer[r];
    if (op && op->phase != GradPhase::Forward)
      for (size_t i = 0; i < fn->params.size(); ++i)
        if (std::count(fn->gradWrt.begin(), fn->gradWrt.end(), fn->params[i]) &&
            fn->values[r].name == "d_" + fn->values[fn->params[i]].name)
          of = int(i);
    sig.gradient_of.push_back(of);
    sig.is_loss.push_back(
        std::count(fn->gradLosses.begin(), fn->gradLosses.end(), r) != 0);
  }
  return sig;
}

} // namespace nothrow
} // namespace ein::api
