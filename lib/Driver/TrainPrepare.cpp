// `einc train`'s preparation: the roles of the loss's parameters, the data,
// the initial state (seeded rules, --init, or a checkpoint) and the compiled
// gradient, forward and update.
#include "TrainState.h"

#include "ein/Report/Report.h"
#include "ein/Runtime/SafeTensors.h"
#include "ein/Sema/Autodiff.h"
#include "ein/Sema/ProgramBuilder.h"
#include "ein/Support/Hash.h"
#include "ein/Support/Process.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

namespace ein {

namespace {

using runtime::HostTensor;
using runtime::StorageType;

Error usage(std::string message) { return Error::usage(std::move(message)); }

/// The optimizers `einc train` runs: ein.optim's functions, their state
/// tensors (named as torch.optim's state_dict names them) and their
/// hyper-parameters in argument order.
struct OptimizerRule {
  const char *name;
  std::vector<const char *> states;
  std::vector<const char *> hypers;
};

const std::vector<OptimizerRule> &optimizerRules() {
  static const std::vector<OptimizerRule> rules = {
      {"sgd", {}, {"lr"}},
      {"momentum", {"momentum_buffer"}, {"lr", "mu"}},
      {"adam",
       {"exp_avg", "exp_avg_sq"},
       {"lr", "beta1", "beta2", "eps", "step"}},
      {"adamw",
       {"exp_avg", "exp_avg_sq"},
       {"lr", "beta1", "beta2", "eps", "weight_decay", "step"}},
  };
  return rules;
}

const OptimizerRule *findRule(const std::string &name) {
  for (const OptimizerRule &rule : optimizerRules())
    if (name == rule.name)
      return &rule;
  return nullptr;
}

/// A `*`/`?` glob match of the whole name.
bool globMatch(const char *pattern, const char *name) {
  if (!*pattern)
    return !*name;
  if (*pattern == '*')
    return globMatch(pattern + 1, name) ||
           (*name && globMatch(pattern, name + 1));
  return *name && (*pattern == '?' || *pattern == *name) &&
         globMatch(pattern + 1, name + 1);
}

/// FNV-1a, 64 bits, of a parameter's name: its stream of the seeded
/// initialisation.
uint64_t nameHash(const std::string &name) { return fnv1a(name); }

/// The documented uniform in (0, 1) of counter `i` of stream `key`.
double unitUniform(uint64_t key, uint64_t i) {
  return (double(runtime::sampleHash(key, i) >> 11) + 0.5) * 0x1p-53;
}

/// Fills `t` (f32 or f64) by `rule` from `seed` and the parameter's name
/// (docs/training.md, "Initialisation").
void initialise(HostTensor &t, const InitRule &rule, uint64_t seed,
                const std::string &name) {
  uint64_t key = seed ^ nameHash(name);
  int64_t n = t.numElements();
  auto value = [&](int64_t i) -> double {
    switch (rule.kind) {
    case InitRule::Kind::Zeros:
      return 0;
    case InitRule::Kind::Ones:
      return 1;
    case InitRule::Kind::Constant:
      return rule.value;
    case InitRule::Kind::Uniform:
      return rule.value * (2 * unitUniform(key, uint64_t(i)) - 1);
    case InitRule::Kind::Normal: {
      double u1 = unitUniform(key, 2 * uint64_t(i));
      double u2 = unitUniform(key, 2 * uint64_t(i) + 1);
      return rule.value * std::sqrt(-2 * std::log(u1)) *
             std::cos(2 * M_PI * u2);
    }
    }
    return 0;
  };
  for (int64_t i = 0; i < n; ++i) {
    if (t.type == StorageType::F64)
      t.dataAs<double>()[i] = value(i);
    else
      t.dataAs<float>()[i] = static_cast<float>(value(i));
  }
}

/// The shape of `type` when `dim` declarations and --dim bind every size;
/// otherwise the first size they leave free.
ErrorOr<std::vector<int64_t>> shapeFromType(const CheckedFunction &fn,
                                            const TensorType &type,
                                            const std::string &param,
                                            const std::string &how) {
  std::vector<int64_t> shape;
  for (const Dim &dim : fn.ctx.expand(type.shape)) {
    std::optional<Int> size;
    if (!dim.isPack())
      size = dim.size.evaluate(fn.ctx.env);
    if (!size || *size < 0 || *size > Int(INT64_MAX))
      return usage(fmt::format(
          "the shape of '{}' ({}) has {} that no `dim` declaration or --dim "
          "binds: {}",
          param, type.str(),
          dim.isPack() ? fmt::format("the variadic *{}", dim.pack)
                       : fmt::format("the dim '{}'", dim.str()),
          how));
    shape.push_back(static_cast<int64_t>(*size));
  }
  return shape;
}

} // namespace

// ---------------------------------------------------------------------------
// Preparation.

namespace {

/// The update of one parameter by `rule`, as a module of ein source over
/// ein.optim (the f64 variant for f64 parameters).
std::string updateSource(const OptimizerRule &rule, DType dtype) {
  std::string t = dtypeName(dtype);
  std::string fn = std::string(rule.name) + (dtype == DType::F64 ? "_f64" : "");
  std::string tensor = fmt::format("{}[\"*p\"]", t);
  std::vector<std::string> params = {"w: " + tensor, "g: " + tensor};
  std::vector<std::string> args = {"w", "g"}, results = {tensor};
  for (const char *s : rule.states) {
    params.push_back(fmt::format("{}: {}", s, tensor));
    args.push_back(s);
    results.push_back(tensor);
  }
  for (const char *h : rule.hypers) {
    params.push_back(fmt::format("{}: f64[\"\"]", h));
    args.push_back(h);
  }
  return fmt::format("from ein.optim import {}\n\ndef update({}) -> ({}):\n    "
                     "return {}({})\n",
                     fn, fmt::join(params, ", "), fmt::join(results, ", "), fn,
                     fmt::join(args, ", "));
}

} // namespace

ErrorOr<std::unique_ptr<TrainingState>>
prepareTraining(const SourceFile &file, const Module &module,
                const CheckOptions &check, const TrainRunOptions &options,
                const MeshRank *mesh) {
  auto state = std::make_unique<TrainingState>();
  TrainingState &s = *state;
  s.options = options;
  s.engine = Engine(options.cpu, options.jit);
  s.engine.useDiskCache(options.diskCache);
  auto compileStart = std::chrono::steady_clock::now();
  s.function = options.function;
  s.path = file.path;
  auto target = lookupTarget(options.target, TargetUse::Run);
  if (!target)
    return target.error();
  TargetOptions targetOptions;
  targetOptions.cpu = options.cpu;
  targetOptions.perfListener = options.jit.perfListener;
  targetOptions.gdbListener = options.jit.gdbListener;
  // The state stays where the code runs (a CUDA device's memory, built
  // into this process), copied to the host only for checkpoints.
  auto memory = (*target)->memory();
  if (!memory)
    return memory.error();
  s.memory = *memory;
  targetOptions.inProcess = !s.memory->isHost();

  // 1. The loss and the roles of its parameters.
  auto checked = mesh ? checkOnUnitMesh(file, module, check, options.function)
                      : s.engine.check(file, module, check, options.function);
  if (!checked)
    return checked.error();
  const CheckedFunction &fn = *checked->find(options.function);
  auto programError = [&](std::string message) {
    return Error::at(ErrorKind::Program, file.path, fn.loc.line, fn.loc.col,
                     std::move(message));
  };
  if (fn.returns.empty() || !isFloat(fn.values[fn.returns[0]].type.dtype) ||
      !fn.ctx.expand(fn.values[fn.returns[0]].type.shape).empty())
    return programError(fmt::format(
        "einc train needs '{}' to return a scalar float loss first (f32[\"\"])",
        fn.name));
  if (!fn.gradWrt.empty())
    return programError(fmt::format(
        "'{}' calls grad(); einc train differentiates the loss itself: give "
        "it the loss function (its first result the loss), without grad()",
        fn.name));
  std::vector<std::string> names;
  for (unsigned v : fn.params)
    names.push_back(fn.values[v].name);
  s.paramCount = names.size();
  auto indexOf = [&](const std::string &name) -> std::optional<size_t> {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      return std::nullopt;
    return size_t(it - names.begin());
  };
  auto notAParam = [&](const std::string &flag, const std::string &name) {
    return usage(fmt::format("{} {}: '{}' has no parameter '{}' (its "
                             "parameters: {})",
                             flag, name, fn.name, name,
                             fmt::join(names, ", ")));
  };
  std::vector<int> role(names.size(), 0); // 1 data, 2 trained, 3 fed
  for (const TrainData &d : options.data) {
    auto i = indexOf(d.param);
    if (!i)
      return notAParam("--data", d.param);
    if (role[*i])
      return usage(fmt::format("--data {}: given twice", d.param));
    role[*i] = 1;
  }
  if (options.data.empty())
    return usage("einc train needs --data PARAM=FILE for the loss's data "
                 "parameter(s)");
  for (const TrainData &d : options.valData) {
    auto i = indexOf(d.param);
    if (!i || role[*i] != 1)
      return usage(fmt::format("--val-data {}: not a parameter given by "
                               "--data",
                               d.param));
  }
  if (!options.valData.empty() && options.valFraction > 0)
    return usage("--val-data and --val-fraction both choose the validation "
                 "data: give one");
  // Keys and scalars: 0-d inputs the loop fills.
  auto addFed = [&](const std::string &flag, const std::string &name,
                    bool key) -> ErrorOr<FedInput *> {
    auto i = indexOf(name);
    if (!i)
      return notAParam(flag, name);
    if (role[*i])
      return usage(
          fmt::format("{} {}: '{}' is given another role", flag, name, name));
    const TensorType &type = fn.values[fn.params[*i]].type;
    bool integer = type.dtype == DType::I64 || type.dtype == DType::I32;
    bool real = type.dtype == DType::F64 || type.dtype == DType::F32;
    if (!fn.ctx.expand(type.shape).empty() || (key ? !integer : !real))
      return usage(fmt::format("{} {}: '{}' is {}, not {}", flag, name, name,
                               type.str(),
                               key ? "an i64[\"\"] or i32[\"\"] key"
                                   : "an f64[\"\"] or f32[\"\"] scalar"));
    role[*i] = 3;
    FedInput input;
    input.param = *i;
    input.name = name;
    input.key = key;
    input.value = *HostTensor::create(runtime::toStorage(type.dtype), {});
    s.fed.push_back(std::move(input));
    return &s.fed.back();
  };
  for (size_t j = 0; j < options.keys.size(); ++j) {
    auto added = addFed("--key", options.keys[j], true);
    if (!added)
      return added.error();
    (*added)->keyIndex = j;
  }
  for (const TrainScalar &scalar : options.scalars) {
    auto added = addFed("--scalar", scalar.param, false);
    if (!added)
      return added.error();
    (*added)->train = scalar.train;
    (*added)->eval = scalar.eval;
  }
  const OptimizerRule *rule = findRule(options.optimizer);
  if (!rule)
    return usage(fmt::format("--optimizer {}: einc train runs sgd, momentum, "
                             "adam and adamw",
                             options.optimizer));
  for (const char *h : rule->hypers)
    s.hyperNames.push_back(h);
  for (const char *st : rule->states)
    s.stateNames.push_back(st);
  std::vector<std::string> trainedNames = options.params;
  if (trainedNames.empty())
    for (size_t i = 0; i < names.size(); ++i)
      if (!role[i] && isFloat(fn.values[fn.params[i]].type.dtype))
        trainedNames.push_back(names[i]);
  for (const std::string &name : trainedNames) {
    auto i = indexOf(name);
    if (!i)
      return notAParam("--params", name);
    if (role[*i] == 1)
      return usage(
          fmt::format("--params {}: '{}' is data (--data)", name, name));
    if (role[*i] == 2)
      return usage(fmt::format("--params {}: given twice", name));
    DType dtype = fn.values[fn.params[*i]].type.dtype;
    if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::BF16 &&
        dtype != DType::F16)
      return usage(fmt::format(
          "parameter '{}' is {}: einc train trains f32 and f64 parameters, "
          "and bf16 and f16 ones over f32 master weights",
          name, dtypeName(dtype)));
    role[*i] = 2;
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (!role[i])
      return usage(fmt::format(
          "parameter '{}' of '{}' is neither data (--data {}=FILE), nor "
          "trained (--params; by default every float parameter that is not "
          "data is trained), nor fed (--key, --scalar)",
          names[i], fn.name, names[i]));

  // 2. The data: each data parameter's dataset and batch.
  std::vector<std::vector<int64_t>> shapes(names.size());
  for (const TrainData &d : options.data) {
    size_t i = *indexOf(d.param);
    const TensorType &type = fn.values[fn.params[i]].type;
    auto shape = shapeFromType(fn, type, d.param,
                               "a batch's shape must be known: give it with "
                               "--dim NAME=SIZE");
    if (!shape)
      return shape.error();
    if (dtypeInfo(type.dtype).kind != DTypeKind::Int &&
        type.dtype != DType::F32 && type.dtype != DType::F64)
      return usage(fmt::format("--data {}: a {} parameter cannot be read from "
                               "data (integers, f32 and f64 can)",
                               d.param, dtypeName(type.dtype)));
    DataInput input;
    input.param = i;
    input.name = d.param;
    auto dataset = runtime::Dataset::open(d.path, d.rawType);
    if (!dataset)
      return dataset.error();
    input.dataset = std::make_shared<runtime::Dataset>(std::move(*dataset));
    auto batch = HostTensor::create(runtime::toStorage(type.dtype), *shape);
    if (!batch)
      return usage(
          fmt::format("--data {}: {}", d.param, batch.error().message));
    input.batch = std::move(*batch);
    int64_t n = input.dataset->shape()[0];
    input.begin = 0;
    input.end = n;
    if (options.valFraction > 0) {
      int64_t held = static_cast<int64_t>(double(n) * options.valFraction);
      input.end = n - held;
      input.valDataset = input.dataset;
      input.valBegin = n - held;
      input.valEnd = n;
    }
    for (const TrainData &v : options.valData)
      if (v.param == d.param) {
        auto val = runtime::Dataset::open(v.path, v.rawType);
        if (!val)
          return val.error();
        input.valDataset = std::make_shared<runtime::Dataset>(std::move(*val));
        input.valBegin = 0;
        input.valEnd = input.valDataset->shape()[0];
      }
    auto count =
        input.dataset->sampleCount(input.batch, input.begin, input.end);
    if (!count)
      return count.error();
    if (input.valDataset) {
      auto valCount = input.valDataset->sampleCount(input.batch, input.valBegin,
                                                    input.valEnd);
      if (!valCount)
        return usage(
            fmt::format("the validation split: {}", valCount.error().message));
    }
    shapes[i] = *shape;
    s.data.push_back(std::move(input));
  }
  // Row datasets given together are paired by row: they must have as many.
  for (size_t a = 1; a < s.data.size(); ++a)
    if (!s.data[0].dataset->isStream() && !s.data[a].dataset->isStream() &&
        s.data[a].dataset->shape()[0] != s.data[0].dataset->shape()[0])
      return usage(fmt::format(
          "--data {} has {} rows and --data {} has {}: data given together "
          "is read row by row, and needs as many rows in each",
          s.data[0].name, s.data[0].dataset->shape()[0], s.data[a].name,
          s.data[a].dataset->shape()[0]));
  if (options.evalEvery > 0 && !s.hasValidation())
    return usage("--eval-every needs validation data: --val-data PARAM=FILE "
                 "or --val-fraction F");
  {
    const DataInput &first = s.data.front();
    int64_t rows = first.batch.shape.empty() ? 1 : first.batch.shape[0];
    if (first.dataset->isStream()) {
      int64_t window = first.batch.rank() >= 2 ? first.batch.shape[1] : 1;
      s.stepTokens =
          rows * std::max<int64_t>(window - 1, 1) * options.accumulate;
      s.tokenUnitName = "tokens";
    } else {
      s.stepTokens = rows * options.accumulate;
      s.tokenUnitName = "samples";
    }
  }

  // 3. The state: from a checkpoint, an --init file, or the seeded rules.
  std::optional<runtime::SafeTensors> source;
  std::string sourceFlag;
  if (!options.resume.empty()) {
    auto read = runtime::readSafeTensors(options.resume);
    if (!read)
      return usage(fmt::format("--resume {}", read.error().message));
    source = std::move(*read);
    sourceFlag = "--resume " + options.resume;
    std::map<std::string, std::string> meta(source->metadata.begin(),
                                            source->metadata.end());
    if (meta["format"] != kCheckpointFormat)
      return usage(fmt::format(
          "--resume {}: not a checkpoint of einc train (its metadata has no "
          "format \"{}\"); to start from its tensors, use --init",
          options.resume, kCheckpointFormat));
    if (meta["function"] != options.function)
      return usage(fmt::format("--resume {}: the checkpoint trains '{}', not "
                               "'{}'",
                               options.resume, meta["function"],
                               options.function));
    if (meta["optimizer"] != options.optimizer)
      return usage(fmt::format("--resume {}: the checkpoint's optimizer is "
                               "{}, not --optimizer {}",
                               options.resume, meta["optimizer"],
                               options.optimizer));
    char *end = nullptr;
    long long step = std::strtoll(meta["step"].c_str(), &end, 10);
    if (meta["step"].empty() || *end || step < 0)
      return usage(fmt::format("--resume {}: its step '{}' is not a count",
                               options.resume, meta["step"]));
    s.step = step;
    // The optimizer's steps and the loss scale's state go on as saved
    // (older fields absent: no step was skipped, no scaling).
    auto count = [&](const char *key, int64_t fallback) {
      auto it = meta.find(key);
      return it == meta.end() ? fallback
                              : std::strtoll(it->second.c_str(), nullptr, 10);
    };
    s.updates = count("updates", step);
    s.growthTracker = count("loss_scale_growth_tracker", 0);
    if (auto it = meta.find("loss_scale"); it != meta.end())
      s.lossScale = std::strtod(it->second.c_str(), nullptr);
    s.initFrom = fmt::format("checkpoint {} (step {})", options.resume, step);
  } else if (!options.init.empty()) {
    auto read = runtime::readSafeTensors(options.init);
    if (!read)
      return usage(fmt::format("--init {}", read.error().message));
    source = std::move(*read);
    sourceFlag = "--init " + options.init;
    s.initFrom = "--init " + options.init;
  } else {
    s.initFrom = fmt::format("seed {}", options.seed);
  }
  bool resuming = !options.resume.empty();
  std::set<std::string> known;
  for (size_t i = 0; i < names.size(); ++i) {
    if (role[i] != 2)
      continue;
    TrainedParam p;
    p.param = i;
    p.name = names[i];
    // A bf16 or f16 parameter is computed in its dtype from an f32 master
    // copy, which the optimizer updates and the checkpoint holds.
    StorageType modelType =
        runtime::toStorage(fn.values[fn.params[i]].type.dtype);
    bool master =
        modelType == StorageType::BF16 || modelType == StorageType::F16;
    StorageType type = master ? StorageType::F32 : modelType;
    known.insert(p.name);
    if (source) {
      const runtime::SafeTensorsEntry *entry = source->find(p.name);
      if (!entry)
        return usage(fmt::format("{}: no tensor '{}' (a trained parameter "
                                 "of '{}')",
                                 sourceFlag, p.name, fn.name));
      if (resuming && entry->type != type)
        return usage(fmt::format("{}: tensor '{}' is {}, but the parameter is "
                                 "{}: the checkpoint is of another model",
                                 sourceFlag, p.name, entry->dtype,
                                 runtime::storageName(type)));
      auto value = source->tensor(p.name, type);
      if (!value)
        return usage(fmt::format("{}: {}", sourceFlag, value.error().message));
      p.value = value->isCOrder() ? std::move(*value) : value->toCOrder();
    } else {
      auto shape = shapeFromType(
          fn, fn.values[fn.params[i]].type, p.name,
          "give the parameters' values with --init FILE.safetensors, or the "
          "size with --dim NAME=SIZE");
      if (!shape)
        return shape.error();
      auto value = HostTensor::create(type, *shape);
      if (!value)
        return usage(
            fmt::format("parameter '{}': {}", p.name, value.error().message));
      p.value = std::move(*value);
      InitRule chosen{"",
                      p.value.rank() >= 2 ? InitRule::Kind::Normal
                                          : InitRule::Kind::Zeros,
                      0.02};
      for (const InitRule &r : options.initRules)
        if (globMatch(r.pattern.c_str(), p.name.c_str())) {
          chosen = r;
          break;
        }
      initialise(p.value, chosen, options.seed, p.name);
    }
    for (const std::string &st : s.stateNames) {
      std::string name = stateTensorName(st, p.name);
      known.insert(name);
      if (resuming) {
        const runtime::SafeTensorsEntry *entry = source->find(name);
        if (!entry || entry->type != type || entry->shape != p.value.shape)
          return usage(fmt::format("{}: {} tensor '{}' ({} {} wanted)",
                                   sourceFlag, entry ? "a mismatched" : "no",
                                   name, runtime::storageName(type),
                                   runtime::shapeTupleStr(p.value.shape)));
        auto value = source->tensor(name, type);
        if (!value)
          return usage(
              fmt::format("{}: {}", sourceFlag, value.error().message));
        p.states.push_back(value->isCOrder() ? std::move(*value)
                                             : value->toCOrder());
      } else {
        auto zeros = HostTensor::create(type, p.value.shape);
        if (!zeros)
          return usage(zeros.error().message);
        p.states.push_back(std::move(*zeros));
      }
    }
    auto grad = HostTensor::create(type, p.value.shape);
    if (!grad)
      return usage(grad.error().message);
    p.grad = std::move(*grad);
    if (options.accumulate > 1 || master)
      p.micro = *HostTensor::create(modelType, p.value.shape);
    if (master)
      p.model = *HostTensor::create(modelType, p.value.shape);
    p.master = master;
    shapes[i] = p.value.shape;
    s.trained.push_back(std::move(p));
  }
  if (source) {
    std::vector<std::string> strangers;
    for (const runtime::SafeTensorsEntry &e : source->entries)
      if (!known.count(e.name) &&
          (resuming || e.name.rfind("optimizer.", 0) != 0))
        strangers.push_back("'" + e.name + "'");
    if (!strangers.empty())
      return usage(fmt::format(
          "{}: {} {} no trained parameter of '{}' (its trained parameters: "
          "{}){}",
          sourceFlag, fmt::join(strangers, ", "),
          strangers.size() == 1 ? "names" : "name", fn.name,
          fmt::join(trainedNames, ", "),
          resuming ? "" : "; optimizer.* tensors of a checkpoint are skipped"));
  }

  // 4. The loss bound to these shapes: mismatched data or weights are
  // reported here, by parameter and dim.
  auto bound = s.engine.bind(file, module, check, *checked, options.function,
                             shapes, Specialisation::Sizes);
  if (!bound)
    return bound.error();
  s.lossCall = std::move(*bound);
  if (resuming && s.step >= options.steps)
    return usage(fmt::format("--resume {}: the checkpoint is at step {}; "
                             "--steps {} leaves nothing to train",
                             options.resume, s.step, options.steps));
  // Loss scaling (TrainRunOptions::lossScaling), decided before the mesh's
  // gradient is prepared: a scaled gradient takes the scale.
  using Scaling = TrainRunOptions::LossScaling;
  bool anyF16 = false;
  for (const TrainedParam &p : s.trained)
    anyF16 |= p.master && p.model.type == StorageType::F16;
  s.lossScaled = options.lossScaling == Scaling::Static ||
                 options.lossScaling == Scaling::Dynamic ||
                 (options.lossScaling == Scaling::Default && anyF16);
  s.lossScaleDynamic = s.lossScaled && options.lossScaling != Scaling::Static;
  if (s.lossScaled)
    s.lossScaleValue = *HostTensor::create(StorageType::F32, {});
  // Tensor parallel: the state cut into this rank's blocks, to which the
  // update is bound below; the gradient is the mesh's sharded program.
  if (mesh)
    if (auto ok = s.useMesh(*mesh); !ok)
      return ok.error();

  // 5. The gradient: the loss's function with its gradient appended (as
  // `report --train --params` builds it), returning (loss, grads...).
  CheckedModule gradModule = s.lossCall.concrete;
  const CheckedFunction *concrete = gradModule.find(options.function);
  CheckedFunction gradFn = *concrete;
  std::vector<unsigned> wrt;
  for (const TrainedParam &p : s.trained)
    wrt.push_back(gradFn.params[p.param]);
  // With loss scaling, the gradient is of loss * scale, the scale a last
  // parameter (the loss it returns is not scaled).
  unsigned differentiated = gradFn.returns[0];
  if (s.lossScaled) {
    ProgramBuilder builder(gradFn);
    BuildOrigin origin;
    origin.loc = gradFn.loc;
    builder.setOrigin(origin);
    unsigned scale = builder.param(TensorType{{}, DType::F32}, "loss_scale");
    auto scaled =
        builder.elementwise(ElementwiseFn::Mul, {gradFn.returns[0], scale});
    if (!scaled)
      return programError(fmt::format("cannot scale the loss of '{}': {}",
                                      fn.name, scaled.error().str()));
    differentiated = *scaled;
    if (!resuming)
      s.lossScale = options.lossScaleInit;
  }
  GradientResult grads =
      appendGradient(gradFn, differentiated, wrt, gradFn.loc);
  if (grads.error) {
    SourceLoc at = grads.error->loc;
    return Error::at(ErrorKind::Program, gradModule.pathOf(at), at.line, at.col,
                     fmt::format("cannot differentiate '{}': {}", fn.name,
                                 grads.error->message));
  }
  gradFn.gradWrt = wrt;
  gradFn.gradLosses = {differentiated};
  gradFn.returns.resize(1);
  gradFn.results.resize(1);
  for (unsigned g : grads.grads) {
    gradFn.returns.push_back(g);
    gradFn.results.push_back(gradFn.values[g].type);
  }
  gradModule.functions = {gradFn};
  std::string key =
      fmt::format("einc train gradient of {} wrt {}{}\n", options.function,
                  fmt::join(trainedNames, ","), s.lossScaled ? " scaled" : "");
  for (auto &shape : shapes)
    key += runtime::shapeTupleStr(shape) + "\n";
  // The disk cache's key holds every text the program came from.
  key += "module " + file.path + "\n" + file.text + "\n";
  for (size_t i = 1; i < gradModule.files.size(); ++i)
    key += "import " + gradModule.files[i] + "\n" +
           readFileText(gradModule.files[i]) + "\n";
  auto lossValue = HostTensor::create(
      runtime::toStorage(fn.values[fn.returns[0]].type.dtype), {});
  s.lossValue = std::move(*lossValue);

  // The account `einc report --train` gives of this step.
  ReportOptions reportOptions;
  reportOptions.function = options.function;
  TrainOptions account;
  account.optimizer = options.optimizer;
  TrainFigures figures =
      trainFigures(gradModule.functions.front(), reportOptions, account);
  if (figures.forwardBackwardFlops && figures.optimizerFlops)
    s.stepFlops =
        toDouble(*figures.forwardBackwardFlops) * double(options.accumulate) +
        toDouble(*figures.optimizerFlops);
  if (figures.peakBytes)
    s.peakBytes = toDouble(*figures.peakBytes);

  // 6. The update: ein.optim's function over any shape (size-generic), one
  // compilation per rank and dtype; each parameter bound to its shape.
  struct UpdateSource {
    SourceFile file;
    Module module;
    CheckedModule checked;
  };
  std::map<DType, std::unique_ptr<UpdateSource>> updateSources;
  // The update to compile for each (dtype, rank), and who uses it.
  std::map<std::pair<DType, size_t>, std::vector<TrainedParam *>> updateUsers;
  CheckOptions none;
  // ZeRO-2/3 update each rank's shard of a parameter, a 1-d tensor.
  int64_t ranks = options.comm ? options.comm->size() : 1;
  bool sharded = options.zero >= 2 && ranks > 1;
  for (TrainedParam &p : s.trained) {
    DType dtype = runtime::toDType(p.value.type).value_or(DType::F32);
    std::vector<int64_t> shape =
        sharded ? zeroShardShape(p.value.numElements(), ranks) : p.value.shape;
    std::unique_ptr<UpdateSource> &source = updateSources[dtype];
    if (!source) {
      source = std::make_unique<UpdateSource>();
      source->file = {fmt::format("<einc train: {} update, {}>",
                                  options.optimizer, dtypeName(dtype)),
                      updateSource(*rule, dtype)};
      DiagnosticEngine diags(source->file);
      source->module = parseModule(source->file, diags);
      if (!diags.hadError())
        resolveImports(source->module, source->file, diags);
      if (diags.hadError())
        return errorFromDiagnostics(diags);
      auto checkedUpdate =
          s.engine.check(source->file, source->module, none, "update");
      if (!checkedUpdate)
        return checkedUpdate.error();
      source->checked = std::move(*checkedUpdate);
    }
    std::vector<std::vector<int64_t>> updateShapes = {shape, shape};
    for (size_t k = 0; k < s.stateNames.size(); ++k)
      updateShapes.push_back(shape);
    for (size_t k = 0; k < s.hyperNames.size(); ++k)
      updateShapes.push_back({});
    auto update =
        s.engine.bind(source->file, source->module, none, source->checked,
                      "update", updateShapes, Specialisation::Generic);
    if (!update)
      return update.error();
    p.update = std::move(*update);
    updateUsers[{dtype, shape.size()}].push_back(&p);
    auto key = std::make_pair(int(p.value.type), shape);
    auto &spare = s.spares[key];
    if (spare.empty())
      for (size_t k = 0; k <= s.stateNames.size(); ++k)
        spare.push_back(*HostTensor::create(p.value.type, shape));
  }
  for (const std::string &h : s.hyperNames)
    s.hypers[h] = *HostTensor::create(StorageType::F64, {});

  // 7. Compilation: the gradient (the largest) on a thread of its own, the
  // updates beside it, then the forward; each side with its own engine (the
  // disk cache is shared: it is written by rename). The forward (the loss
  // alone) serves only evaluation (TrainingState::evaluate): it is not
  // compiled for a run that evaluates nothing (no --eval-every), and
  // otherwise after the updates, which every step needs.
  Engine gradientEngine(options.cpu, options.jit);
  gradientEngine.useDiskCache(options.diskCache);
  ErrorOr<std::shared_ptr<Callable>> gradient =
      Error::program("the gradient was not compiled");
  std::thread gradientThread([&] {
    if (s.meshProgram)
      return;
    gradient = gradientEngine.compile(**target, key, gradModule,
                                      options.function, targetOptions);
  });
  auto compileRest = [&]() -> ErrorOr<void> {
    for (auto &[key, users] : updateUsers) {
      BoundCall &first = users.front()->update;
      auto update = s.engine.compile(**target, updateSources[key.first]->file,
                                     first.source, "update", targetOptions);
      if (!update)
        return update.error();
      for (TrainedParam *p : users)
        p->update.callable = *update;
    }
    if (options.evalEvery > 0 && !s.meshProgram) {
      auto forward = s.engine.compile(**target, file, s.lossCall.source,
                                      options.function, targetOptions);
      if (!forward)
        return forward.error();
      s.forward = *forward;
    }
    return {};
  };
  ErrorOr<void> rest = compileRest();
  gradientThread.join();
  if (!s.meshProgram && !gradient)
    return gradient.error();
  if (!rest)
    return rest.error();
  if (!s.meshProgram)
    s.gradient = *gradient;
  if (auto placed = s.placeOnDevice(); !placed)
    return placed.error();
  s.compiled = s.engine.compilations() + gradientEngine.compilations();
  s.loaded = s.engine.loads() + gradientEngine.loads();
  s.compileSeconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - compileStart)
                         .count();
  return state;
}

} // namespace ein
