// The engine: check, bind, compile (cached by signature) and call.
#include "ein/Engine/Engine.h"
#include "ein/Execution/JIT.h"
#include "ein/Sema/Specialise.h"
#include "ein/Support/Process.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ein {

namespace {

/// What makes two compilations the same: the source, the function, every
/// number compiled in (module dims, the function's bound dims, variadic
/// ranks) and the code-generation options.
std::string signatureKey(const SourceFile &file, const CheckedModule &checked,
                         const std::string &function,
                         const CPUOptions &options) {
  std::string key = fmt::format("{}\n{}\n{}\n", file.path, file.text.size(),
                                std::hash<std::string>()(file.text));
  key += function + "\n" + options.tiles.str() + "\n";
  const CheckedFunction *fn = checked.find(function);
  if (!fn)
    return key;
  for (auto &[name, value] : fn->ctx.env)
    key += name + "=" + toString(value) + ";";
  key += "\n";
  for (unsigned id : fn->params) {
    const TensorType &t = fn->values[id].type;
    key += dtypeName(t.dtype) + std::string("[") +
           shapeStr(fn->ctx.expand(t.shape)) + "];";
  }
  return key;
}

/// The disk key's part for the source: the whole text of the file and of
/// every file it imports.
std::string sourceText(const SourceFile &file, const CheckedModule &checked) {
  std::string diskKey = "module " + file.path + "\n" + file.text + "\n";
  for (size_t i = 1; i < checked.files.size(); ++i)
    diskKey += "import " + checked.files[i] + "\n" +
               readFileText(checked.files[i]) + "\n";
  return diskKey;
}

} // namespace

ErrorOr<CheckedModule> Engine::check(const SourceFile &file,
                                     const Module &module,
                                     const CheckOptions &options,
                                     const std::string &function) const {
  CheckOptions symbolic = options;
  symbolic.onlyFunction = function;
  symbolic.loopsMayStaySymbolic = true; // unrolled once bind() has sizes
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, symbolic, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  if (!checked.find(function))
    return noFunctionError(file.path, function, module.functionNames());
  // Never the unsharded program in place of the sharded one.
  if (!checked.meshAxes.empty())
    return Error::inFile(ErrorKind::Program, file.path,
                         "this file declares a mesh; sharded programs are "
                         "checked (einc check) but not yet compiled or run "
                         "by the engine or the API; einc run --ranks N "
                         "[--simulate] runs them (issue 30, "
                         "docs/distributed.md §4)");
  return checked;
}

ErrorOr<std::shared_ptr<Callable>> Engine::compile(const Target &target,
                                                   const SourceFile &file,
                                                   const CheckedModule &checked,
                                                   const std::string &function,
                                                   TargetOptions options) {
  std::string key =
      fmt::format("target {}\n{}{}{}\n{}", target.name(),
                  signatureKey(file, checked, function, options.cpu),
                  options.allowTf32 ? "\ntf32" : "", options.mainFunction,
                  options.inProcess ? "in-process\n" : "");
  if (auto it = callables.find(key); it != callables.end())
    return it->second;
  options.sourcePath = file.path;
  return buildAndLoad(target, key,
                      diskCache ? sourceText(file, checked) + key : "", checked,
                      function, std::move(options));
}

ErrorOr<std::shared_ptr<Callable>> Engine::compile(const Target &target,
                                                   const std::string &key,
                                                   const CheckedModule &checked,
                                                   const std::string &function,
                                                   TargetOptions options) {
  // The caller's key names the program; the rest is what compile() above
  // adds to a file's (the CPU compiled for too: one engine may serve
  // several, as set_cpu changes it).
  std::string full = fmt::format(
      "target {}\nkey {}\nfunction {}\ntiles {} fusion {}\ncpu {} "
      "{}\n{}{}\n{}{}",
      target.name(), key, function, options.cpu.tiles.str(), options.cpu.fusion,
      options.cpu.target.name, options.cpu.target.features,
      options.allowTf32 ? "tf32\n" : "", options.mainFunction,
      options.inProcess ? "in-process\n" : "",
      options.mesh ? "with collectives\n" : "");
  if (auto it = callables.find(full); it != callables.end())
    return it->second;
  return buildAndLoad(target, full, diskCache ? full : "", checked, function,
                      std::move(options));
}

ErrorOr<std::shared_ptr<Callable>>
Engine::buildAndLoad(const Target &target, const std::string &key,
                     const std::string &diskKey, const CheckedModule &checked,
                     const std::string &function, TargetOptions options) {
  options.diskCacheKey = diskKey;
  if (options.mesh && !target.compilesCollectives())
    return Error::usage(fmt::format(
        "--target={} does not compile a sharded function's collectives into "
        "its code",
        target.flag()));
  auto artifact = target.build(checked, function, options);
  if (!artifact)
    return artifact.error();
  bool fromDisk = (*artifact)->fromDiskCache;
  auto callable = target.load(std::move(*artifact));
  if (!callable)
    return callable.error();
  callables.emplace(key, *callable);
  ++(fromDisk ? loaded : compiled);
  return *callable;
}

ErrorOr<BoundCall> Engine::bind(const SourceFile &file, const Module &module,
                                const CheckOptions &options,
                                const CheckedModule &checked,
                                const std::string &function,
                                const std::vector<std::vector<int64_t>> &shapes,
                                Specialisation specialisation,
                                const Target *target) {
  CheckOptions symbolic = options;
  symbolic.onlyFunction = function;
  const CheckedFunction *fn = checked.find(function);
  if (!fn)
    return noFunctionError(file.path, function, module.functionNames());
  std::vector<std::string> paramNames;
  for (unsigned id : fn->params)
    paramNames.push_back(fn->values[id].name);
  if (shapes.size() != paramNames.size())
    return Error::usage(fmt::format("'{}' takes {} input(s), got {}", function,
                                    paramNames.size(), shapes.size()));

  // Sizes from the inputs; entry checks.
  EntryBinding binding = bindEntryShapes(*fn, paramNames, shapes);
  if (!binding.ok)
    return Error::usage(binding.error);

  // The function with every dim bound: the symbolic check specialised
  // (Sema/Specialise.h), or, where the sizes change how it checks (a `#`
  // or anonymous dim given size 1, a variadic whose rank the inputs fix, a
  // `#` dim, a floor quotient `//` of sizes, a size refused or folded once
  // known: SpecialisedModule::recheck), checked again with them.
  BoundCall call;
  SpecialisedModule specialised = specialise(checked, function, binding);
  DiagnosticEngine boundDiags(file);
  if (specialised.module)
    call.concrete = std::move(*specialised.module);
  else
    call.concrete = checkModule(
        module, boundCheckOptions(symbolic, *fn, binding), boundDiags);
  if (boundDiags.hadError()) {
    Error error = Error::usage(fmt::format(
        "with the sizes of these inputs, '{}' does not check:", function));
    error.context = errorFromDiagnostics(boundDiags).rendered;
    for (auto &dim : binding.unitNotes)
      error.withNote(fmt::format(
          "{} has size 1 in the input, so the function is checked with it as "
          "1 (elementwise arithmetic and einsum's '...' broadcast it)",
          dim));
    return error;
  }
  const CheckedFunction *cfn = call.concrete.find(function);
  if (auto why = valueTooLarge(*cfn, Int(runtime::hostMemoryBytes())))
    return Error::usage(*why);
  for (unsigned id : cfn->returns) {
    std::vector<int64_t> shape;
    for (auto &d : cfn->ctx.expand(cfn->values[id].type.shape))
      shape.push_back(static_cast<int64_t>(*d.size.evaluate(cfn->ctx.env)));
    call.resultShapes.push_back(std::move(shape));
  }

  // Compiled from the specialised check, or (size-generic) from the
  // symbolic one where only `#` dims given size 1 are numbers (they must
  // broadcast in the body).
  const CheckedModule *source = &call.concrete;
  CheckedModule generic;
  // The symbolic check is that module when no dim is typed 1 and no
  // variadic rank is fixed by the inputs: it is reused, not redone.
  bool symbolicIsGeneric = binding.unitDims.empty() &&
                           binding.packRanks.empty() &&
                           checked.functions.size() == 1 &&
                           checked.functions.front().name == function;
  if (specialisation == Specialisation::GenericUnlessLoops)
    specialisation = fn->symbolicLoops.empty() ? Specialisation::Generic
                                               : Specialisation::Sizes;
  if (specialisation == Specialisation::Generic && !fn->symbolicLoops.empty()) {
    // A size-generic build cannot unroll a loop over a size it leaves free.
    const auto &[loc, why] = fn->symbolicLoops.front();
    return Error::at(ErrorKind::Program, file.path, loc.line, loc.col,
                     "cannot build '" + function + "' size-generic: " + why);
  } else if (specialisation == Specialisation::Generic && symbolicIsGeneric) {
    source = &checked;
  } else if (specialisation == Specialisation::Generic) {
    CheckOptions unitOnly = symbolic;
    unitOnly.entryUnitDims = binding.unitDims;
    unitOnly.packRanks = binding.packRanks;
    DiagnosticEngine genericDiags(file);
    generic = checkModule(module, unitOnly, genericDiags);
    if (genericDiags.hadError())
      return errorFromDiagnostics(genericDiags);
    source = &generic;
  }
  call.dims = binding.dims;
  if (!target) {
    call.source = *source;
    return call;
  }
  TargetOptions targetOptions;
  targetOptions.cpu = cpu;
  targetOptions.perfListener = jit.perfListener;
  targetOptions.gdbListener = jit.gdbListener;
  targetOptions.inProcess = inProcess;
  auto callable = compile(*target, file, *source, function, targetOptions);
  if (!callable)
    return callable.error();
  call.callable = *callable;
  return call;
}

Error Engine::explainIndexError(const BoundCall &call,
                                const std::string &function,
                                const std::vector<StridedArgument> &inputs,
                                int64_t count, Error original) {
  const CheckedFunction *fn = call.concrete.find(function);
  if (!fn)
    return original;
  // The probe: the function (checked with the call's sizes) returning the
  // ids of each take, each value once.
  CheckedModule probe = call.concrete;
  probe.functions = {*fn};
  CheckedFunction &p = probe.functions.front();
  std::vector<TakeSite> sites = takeSites(call.concrete, *fn);
  std::vector<size_t> resultOf; // per take, its ids' result
  p.returns.clear();
  p.results.clear();
  for (const CheckedOp &op : fn->ops) {
    if (!op.checksIds())
      continue;
    // A dropout's run-time p, a take's ids.
    unsigned ids = op.operands[op.checksDropoutRate() ? 2 : 1];
    auto it = std::find(p.returns.begin(), p.returns.end(), ids);
    resultOf.push_back(static_cast<size_t>(it - p.returns.begin()));
    if (it == p.returns.end()) {
      p.returns.push_back(ids);
      p.results.push_back(fn->values[ids].type);
    }
  }
  if (p.returns.empty() || resultOf.size() != sites.size())
    return original;
  auto executable = JITFunction::compile(probe, function, cpu, jit);
  if (!executable)
    return original;
  std::vector<runtime::HostTensor> ids;
  std::vector<std::vector<int64_t>> strides;
  for (unsigned id : p.returns) {
    std::vector<int64_t> shape;
    for (auto &d : fn->ctx.expand(fn->values[id].type.shape)) {
      auto size = d.size.evaluate(fn->ctx.env);
      if (!size)
        return original;
      shape.push_back(static_cast<int64_t>(*size));
    }
    auto tensor = runtime::HostTensor::create(
        runtime::toStorage(fn->values[id].type.dtype), shape);
    if (!tensor)
      return original;
    ids.push_back(std::move(*tensor));
    strides.push_back(ids.back().strides());
  }
  std::vector<StridedArgument> args = inputs;
  for (size_t i = 0; i < ids.size(); ++i)
    args.push_back({ids[i].data.data(), ids[i].shape.data(), strides[i].data(),
                    ids[i].shape.size()});
  // The probe has the same takes (an id of one may come from another), so
  // it may report the same index error; its results are written either
  // way. Any other error means it did not run.
  int64_t probeStatus = 0;
  if (auto ran =
          (*executable)
              ->callStrided(args.data(), args.size(), &call.dims, &probeStatus);
      !ran && probeStatus == 0)
    return original;
  Bindings env = fn->ctx.env;
  for (auto &[name, value] : call.dims)
    env[name] = value;
  for (size_t k = 0; k < sites.size(); ++k) {
    const runtime::HostTensor &t = ids[resultOf[k]];
    if (sites[k].isDropoutRate()) {
      double p = 0;
      if (t.type == runtime::StorageType::F64) {
        std::memcpy(&p, t.data.data(), 8);
      } else if (t.type == runtime::StorageType::F32) {
        float narrow = 0;
        std::memcpy(&narrow, t.data.data(), 4);
        p = narrow;
      } else {
        continue; // f16, bf16, f8: the general message
      }
      if (!(p >= 0 && p < 1))
        return dropoutRateError(sites[k], p);
      continue;
    }
    auto size = sites[k].size.evaluate(env);
    bool wide = t.type == runtime::StorageType::I64;
    if (!size || (!wide && t.type != runtime::StorageType::I32))
      continue;
    for (int64_t i = 0; i < t.numElements(); ++i) {
      int64_t id = 0;
      if (wide)
        std::memcpy(&id, t.data.data() + i * 8, 8);
      else {
        int32_t narrow = 0;
        std::memcpy(&narrow, t.data.data() + i * 4, 4);
        id = narrow;
      }
      if (id >= 0 && Int(id) < *size)
        continue;
      // The position of the i-th element in C order.
      std::vector<int64_t> position(t.shape.size());
      for (size_t d = t.shape.size(), rest = size_t(i); d-- > 0;) {
        position[d] = int64_t(rest % size_t(t.shape[d]));
        rest /= size_t(t.shape[d]);
      }
      return takeIdError(sites[k], id, position, count, env);
    }
  }
  return original;
}

} // namespace ein
