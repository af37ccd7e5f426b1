// `einc run`: bind dims from .npy, .npz or safetensors inputs, JIT-compile,
// run, time, write.
#include "ein/Driver/Run.h"
#include "ein/Driver/Calibrate.h"
#include "ein/Engine/Engine.h"
#include "ein/Execution/JIT.h"
#include "ein/Report/Report.h"
#include "ein/Runtime/Npy.h"
#include "ein/Runtime/Npz.h"
#include "ein/Runtime/SafeTensors.h"
#include "ein/Support/Spelling.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

#include <sys/resource.h>
#include <sys/stat.h>

namespace ein {

namespace {

/// Run-time inputs that do not fit the function (exit 2).
Error inputError(std::string message) {
  return Error::usage(std::move(message));
}

/// What a file of `einc run` is, by its extension: one .npy array, or
/// tensors by name (a safetensors file or an .npz archive).
enum class FileKind { Npy, SafeTensors, Npz };

FileKind fileKind(const std::string &path) {
  if (runtime::isSafeTensorsPath(path))
    return FileKind::SafeTensors;
  if (runtime::isNpzPath(path))
    return FileKind::Npz;
  return FileKind::Npy;
}

/// A file of named tensors, read once: a safetensors file or an .npz
/// archive.
struct NamedFile {
  std::optional<runtime::SafeTensors> safetensors;
  std::optional<runtime::Npz> npz;

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    if (safetensors)
      for (const runtime::SafeTensorsEntry &e : safetensors->entries)
        out.push_back(e.name);
    if (npz)
      for (const runtime::NpzEntry &e : npz->entries)
        out.push_back(e.name);
    return out;
  }
  ErrorOr<runtime::HostTensor>
  tensor(const std::string &name,
         std::optional<runtime::StorageType> want) const {
    return safetensors ? safetensors->tensor(name, want)
                       : npz->tensor(name, want);
  }
};

std::string si(double v, const char *unit) {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

} // namespace

ErrorOr<std::vector<runtime::HostTensor>>
readInputs(const CheckedFunction &fn, const std::string &function,
           const std::vector<std::pair<std::string, std::string>> &inputs,
           bool convert) {
  std::vector<std::string> paramNames;
  for (unsigned id : fn.params)
    paramNames.push_back(fn.values[id].name);
  auto isParam = [&](const std::string &name) {
    return std::find(paramNames.begin(), paramNames.end(), name) !=
           paramNames.end();
  };
  // Each parameter's source: a file, and the tensor in it when the file is
  // a safetensors or .npz one; and how it was given, for "given twice".
  struct Source {
    std::string path;
    bool named = false; // safetensors or .npz: the tensor of the param's name
    std::string given;  // "--in x=a.npy"
  };
  std::map<std::string, Source> sources;
  // Each file of named tensors is read once, however many parameters it
  // gives.
  std::map<std::string, NamedFile> files;
  auto fileAt = [&](const std::string &path) -> ErrorOr<const NamedFile *> {
    auto it = files.find(path);
    if (it == files.end()) {
      NamedFile file;
      if (fileKind(path) == FileKind::Npz) {
        auto read = runtime::readNpz(path);
        if (!read)
          return read.error();
        file.npz = std::move(*read);
      } else {
        auto read = runtime::readSafeTensors(path);
        if (!read)
          return read.error();
        file.safetensors = std::move(*read);
      }
      it = files.emplace(path, std::move(file)).first;
    }
    return &it->second;
  };
  auto add = [&](const std::string &name, Source source) -> ErrorOr<void> {
    auto [it, fresh] = sources.emplace(name, source);
    if (!fresh)
      return inputError(fmt::format("parameter '{}' is given twice: by {} "
                                    "and by {}",
                                    name, it->second.given, source.given));
    return {};
  };
  for (auto &[name, path] : inputs) {
    bool named = fileKind(path) != FileKind::Npy;
    if (!name.empty()) {
      if (!isParam(name))
        return inputError(
            fmt::format("--in {}: function '{}' has no parameter '{}'", name,
                        function, name));
      if (auto ok =
              add(name, {path, named, fmt::format("--in {}={}", name, path)});
          !ok)
        return ok.error();
      continue;
    }
    // A whole safetensors or .npz file: its tensors name the parameters.
    auto file = fileAt(path);
    if (!file)
      return inputError(file.error().message);
    std::vector<std::string> strangers;
    for (const std::string &tensorName : (*file)->names()) {
      if (!isParam(tensorName)) {
        strangers.push_back("'" + tensorName + "'");
        continue;
      }
      if (auto ok = add(tensorName, {path, true, fmt::format("--in {}", path)});
          !ok)
        return ok.error();
    }
    if (!strangers.empty())
      return inputError(fmt::format(
          "--in {}: {} {} no parameter of function '{}' (its parameters: {})",
          path, fmt::join(strangers, ", "),
          strangers.size() == 1 ? "names" : "name", function,
          fmt::join(paramNames, ", ")));
  }
  std::vector<runtime::HostTensor> tensors;
  for (size_t i = 0; i < paramNames.size(); ++i) {
    const std::string &name = paramNames[i];
    auto it = sources.find(name);
    if (it == sources.end())
      return inputError(fmt::format(
          "missing --in {}=FILE.npy (or a .safetensors or .npz file holding "
          "a tensor '{}')",
          name, name));
    std::optional<runtime::StorageType> want;
    if (convert)
      want = runtime::toStorage(fn.values[fn.params[i]].type.dtype);
    const Source &source = it->second;
    auto read = [&]() -> ErrorOr<runtime::HostTensor> {
      if (!source.named)
        return runtime::readNpy(source.path, want);
      auto file = fileAt(source.path);
      if (!file)
        return file.error();
      return (*file)->tensor(name, want);
    };
    ErrorOr<runtime::HostTensor> tensor = read();
    if (!tensor)
      return inputError(
          fmt::format("parameter '{}': {}", name, tensor.error().message));
    tensors.push_back(std::move(*tensor));
  }
  return tensors;
}

namespace {

/// The files `--out` names, in order of first mention, and what each holds:
/// one result (.npy), or named results (a safetensors or .npz file, listed
/// once).
struct OutputFile {
  std::string path;
  FileKind kind = FileKind::Npy;
  std::vector<std::pair<std::string, size_t>> results; // name, result index
};

ErrorOr<std::vector<OutputFile>> outputFiles(const CheckedFunction &fn,
                                             const RunOptions &options) {
  std::vector<OutputFile> files;
  std::map<std::string, size_t> byPath;
  for (size_t k = 0; k < options.outputs.size(); ++k) {
    auto [name, path] = options.outputs[k];
    FileKind kind = fileKind(path);
    bool named = kind != FileKind::Npy;
    if (!named && !name.empty())
      return inputError(fmt::format("--out {}={}: only a .safetensors or "
                                    ".npz file names its tensors",
                                    name, path));
    if (named && name.empty()) {
      name = fn.values[fn.returns[k]].name;
      if (name.empty())
        return inputError(fmt::format(
            "result {} of '{}' is not a named value: give its tensor's name "
            "with --out NAME={}",
            k + 1, options.function, path));
    }
    // Results named into one safetensors or .npz file share it; a .npy
    // file is one result's, and planOutputs judges the same file given
    // twice.
    if (!named) {
      files.push_back({path, kind, {{name, k}}});
      continue;
    }
    auto [it, fresh] = byPath.emplace(path, files.size());
    if (fresh)
      files.push_back({path, kind, {}});
    OutputFile &file = files[it->second];
    for (auto &[other, index] : file.results)
      if (other == name)
        return inputError(
            fmt::format("--out {}: results {} and {} are both named '{}'", path,
                        index + 1, k + 1, name));
    file.results.push_back({name, k});
  }
  return files;
}

/// Writes `outputs` into the planned files: all replaced or none
/// (OutputFiles.h). bf16/fp8 widen to f32 in .npy files and .npz archives
/// (numpy has no such dtypes) and stay themselves in safetensors files.
ErrorOr<void> writePlanned(const std::vector<OutputFile> &files,
                           const runtime::OutputPlan &plan,
                           std::vector<runtime::HostTensor> &outputs) {
  auto written =
      runtime::writeOutputs(plan, [&](size_t index, int fd) -> ErrorOr<void> {
        const OutputFile &file = files[index];
        std::vector<runtime::NamedTensor> named;
        for (auto &[name, k] : file.results)
          named.push_back({name, &outputs[k]});
        switch (file.kind) {
        case FileKind::Npy:
          return runtime::writeNpyTo(fd, outputs[file.results[0].second]);
        case FileKind::SafeTensors:
          return runtime::writeSafeTensorsTo(fd, named);
        case FileKind::Npz:
          return runtime::writeNpzTo(fd, named);
        }
        return Error::program("an output file of no kind"); // unreachable
      });
  if (!written)
    return inputError(fmt::format("--out {}", written.error().message));
  return {};
}

/// The output files of `fn`'s results and their plan, every path checked
/// before anything runs (OutputFiles.h).
struct PlannedOutputs {
  std::vector<OutputFile> files;
  runtime::OutputPlan plan;
};
ErrorOr<PlannedOutputs> planRunOutputs(const CheckedFunction &fn,
                                       const RunOptions &options) {
  auto files = outputFiles(fn, options);
  if (!files)
    return files.error();
  std::vector<std::string> outputPaths;
  for (const OutputFile &file : *files)
    outputPaths.push_back(file.path);
  auto plan = runtime::planOutputs(outputPaths);
  if (!plan)
    return inputError(fmt::format("--out {}", plan.error().message));
  return PlannedOutputs{std::move(*files), std::move(*plan)};
}

} // namespace

ErrorOr<void> writeRunOutputs(const CheckedFunction &fn,
                              const RunOptions &options,
                              std::vector<runtime::HostTensor> &outputs) {
  auto planned = planRunOutputs(fn, options);
  if (!planned)
    return planned.error();
  return writePlanned(planned->files, planned->plan, outputs);
}

ErrorOr<void> runFunction(const SourceFile &file, const Module &module,
                          const CheckOptions &check, const RunOptions &options,
                          std::ostream &out, const CheckedModule *symbolic) {
  // 0. The target, from the registry.
  auto target = lookupTarget(options.target, TargetUse::Run);
  if (!target)
    return target.error();
  TargetOptions targetOptions;
  targetOptions.cpu = options.cpu;
  targetOptions.perfListener = options.jit.perfListener;
  targetOptions.gdbListener = options.jit.gdbListener;
  targetOptions.allowTf32 = options.allowTf32;

  // 1. The symbolic check of the function, as `einc check` does.
  Engine engine(options.cpu, options.jit);
  // The caller's check is reused when it gives one (it is this one).
  ErrorOr<CheckedModule> checked =
      symbolic ? ErrorOr<CheckedModule>(*symbolic)
               : engine.check(file, module, check, options.function);
  if (!checked)
    return checked.error();
  const CheckedFunction *fn = checked->find(options.function);
  if (!fn)
    return noFunctionError(file.path, options.function, module.functionNames());

  // 2. Inputs, by parameter name, read in the parameter's dtype.
  auto inputs = readInputs(*fn, options.function, options.inputs);
  if (!inputs)
    return inputs.error();
  std::vector<std::vector<int64_t>> shapes;
  for (const runtime::HostTensor &tensor : *inputs)
    shapes.push_back(tensor.shape);
  if (options.outputs.size() != fn->results.size())
    return inputError(fmt::format(
        "function '{}' returns {} value(s): give one --out FILE.npy (or "
        "NAME=FILE.safetensors, NAME=FILE.npz) for each (got {})",
        options.function, fn->results.size(), options.outputs.size()));
  // Every output path is checked before anything runs (OutputFiles.h).
  auto planned = planRunOutputs(*fn, options);
  if (!planned)
    return planned.error();
  // An output that is an input would replace it: refused, as `cp a a` is.
  // By inode, so that another spelling or a link of the path is caught.
  for (const runtime::OutputTarget &target : planned->plan.targets) {
    if (target.kind != runtime::OutputTarget::Kind::ExistingFile)
      continue;
    for (auto &[name, path] : options.inputs) {
      struct stat input;
      if (::stat(path.c_str(), &input) == 0 && input.st_dev == target.device &&
          input.st_ino == target.inode)
        return inputError(fmt::format("output {} is also input {} (--in "
                                      "{}={}); write the result to another "
                                      "file",
                                      target.path, name, name, path));
    }
  }

  // 3-4. Sizes from the inputs, entry checks, the function specialised for
  // them (Engine::bind), built for the target and loaded.
  auto bound = engine.bind(
      file, module, check, *checked, options.function, shapes,
      options.sizeGeneric ? Specialisation::Generic : Specialisation::Sizes);
  if (!bound)
    return bound.error();
  auto callable = engine.compile(**target, file, bound->source,
                                 options.function, targetOptions);
  if (!callable)
    return callable.error();
  const CheckedFunction *cfn = bound->concrete.find(options.function);

  // 5. Run into fresh outputs.
  std::vector<runtime::HostTensor> outputs;
  for (size_t k = 0; k < cfn->returns.size(); ++k) {
    const TensorType &t = cfn->values[cfn->returns[k]].type;
    auto tensor = runtime::HostTensor::create(runtime::toStorage(t.dtype),
                                              bound->resultShapes[k]);
    if (!tensor)
      return inputError(fmt::format("output: {}", tensor.error().message));
    outputs.push_back(std::move(*tensor));
  }
  std::vector<const runtime::HostTensor *> ins;
  for (auto &t : *inputs)
    ins.push_back(&t);
  std::vector<runtime::HostTensor *> outs;
  for (auto &t : outputs)
    outs.push_back(&t);
  // An id out of range (`count` of them, 0 when the target does not
  // count): which take, which id, where, found by a probe on the CPU.
  auto explainIds = [&](int64_t count, Error original) {
    std::vector<std::vector<int64_t>> strides;
    for (auto &t : *inputs)
      strides.push_back(t.strides());
    std::vector<JITFunction::StridedArgument> args;
    for (size_t i = 0; i < inputs->size(); ++i) {
      runtime::HostTensor &t = (*inputs)[i];
      args.push_back(
          {t.data.data(), t.shape.data(), strides[i].data(), t.shape.size()});
    }
    return engine.explainIndexError(*bound, options.function, args, count,
                                    std::move(original));
  };
  int64_t status = 0;
  if (auto called = (*callable)->call(ins, outs, bound->dims, &status); !called)
    return status != 0
               ? explainIds(std::max<int64_t>(status, 0), called.error())
               : called.error();
  std::optional<Timing> timing;
  if (options.time) {
    auto timed = (*callable)->time(ins, outs, bound->dims);
    if (!timed)
      return timed.error();
    timing = std::move(*timed);
  }
  if (timing && !timing->notMeasured.empty()) {
    out << fmt::format("time: not measured ({})\n", timing->notMeasured);
  } else if (timing) {
    double seconds = timing->seconds;
    ReportOptions ro;
    auto rows = reportOps(*cfn, ro);
    double flops = 0, bytes = 0;
    for (auto &r : rows) {
      if (r.cost.flops.value)
        flops += toDouble(*r.cost.flops.value);
      if (auto b = r.cost.bytes().value)
        bytes += toDouble(*b);
    }
    out << fmt::format("time: {:.6g} ms ({})\n", seconds * 1e3, timing->how);
    if (timing->faults >= 0)
      out << fmt::format("faults: {:.4g} minor page faults per call\n",
                         timing->faults);
    out << fmt::format("achieved: {} ({} counted), {} ({} moved)\n",
                       si(flops / seconds, "FLOP/s"), si(flops, "FLOP"),
                       si(bytes / seconds, "B/s"), si(bytes, "B"));
    double peak = options.peakFlops, bandwidth = options.bandwidth;
    const char *source = "given";
    std::string gpuSource;
    if (timing->fromDeviceTable) {
      const std::string &gpu = timing->device;
      // MFU against the device table's dense peak for the dtype of the op
      // with the most FLOPs (H100 bf16: 989 TFLOP/s, not the sparse figure).
      const DeviceSpec *spec = findDeviceForGPU(gpu);
      const OpReport *top = nullptr;
      for (auto &r : rows)
        if (r.cost.flops.value &&
            (!top || *r.cost.flops.value > *top->cost.flops.value))
          top = &r;
      if (spec) {
        DType dtype = top && !top->op->operands.empty()
                          ? cfn->values[top->op->operands[0]].type.dtype
                          : cfn->values[cfn->returns[0]].type.dtype;
        peak = peak > 0 ? peak : spec->peakFor(dtype);
        bandwidth = bandwidth > 0 ? bandwidth : spec->bandwidth;
        gpuSource =
            fmt::format("{}, dense {}", spec->description, dtypeName(dtype));
        source = gpuSource.c_str();
      } else {
        out << fmt::format("(GPU '{}' is not in the device table: pass "
                           "--peak-flops/--bandwidth for fractions of peak)\n",
                           gpu);
      }
    } else if (peak <= 0 || bandwidth <= 0) {
      if (auto c = loadCalibration()) {
        peak = peak > 0 ? peak : c->peakFlops;
        bandwidth = bandwidth > 0 ? bandwidth : c->bandwidth;
        source = "from einc calibrate";
      }
    }
    if (peak > 0)
      out << fmt::format("MFU: {:.3g} (counted FLOP/s / peak {}, {})\n",
                         flops / seconds / peak, si(peak, "FLOP/s"), source);
    if (bandwidth > 0)
      out << fmt::format("fraction of peak bandwidth: {:.3g} (peak {}, {})\n",
                         bytes / seconds / bandwidth, si(bandwidth, "B/s"),
                         source);
    if (peak <= 0 && bandwidth <= 0)
      out << "(no peak figures: run `einc calibrate` or pass "
             "--peak-flops/--bandwidth)\n";
  }

  // 6. Outputs: all replaced or none.
  return writePlanned(planned->files, planned->plan, outputs);
}

} // namespace ein
