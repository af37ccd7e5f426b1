// `einc run`: bind dims from .npy inputs, JIT-compile, run, time, write.
#include "ein/Driver/Run.h"
#include "ein/Driver/Calibrate.h"
#include "ein/Driver/Report.h"
#include "ein/Execution/JIT.h"
#include "ein/Runtime/Npy.h"
#include "ein/Sema/EntryBinding.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

namespace ein {

namespace {

int inputError(const std::string &message) {
  std::cerr << "einc: error: " << message << "\n";
  return 2;
}

std::string si(double v, const char *unit) {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, prefixes[i], unit);
  return buf;
}

} // namespace

double medianCallSeconds(JITFunction &jit,
                         const std::vector<const runtime::HostTensor *> &ins,
                         const std::vector<runtime::HostTensor *> &outs,
                         size_t &calls) {
  using clock = std::chrono::steady_clock;
  std::string error;
  if (!jit.call(ins, outs, error))
    return -1;
  std::vector<double> samples;
  double total = 0;
  while (total < 0.2 || (samples.size() < 5 && total < 2.0)) {
    auto start = clock::now();
    if (!jit.call(ins, outs, error))
      return -1;
    double s = std::chrono::duration<double>(clock::now() - start).count();
    samples.push_back(s);
    total += s;
    if (samples.size() >= 100000)
      break;
  }
  calls = samples.size();
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

int runFunction(const SourceFile &file, const Module &module,
                const CheckOptions &check, const RunOptions &options) {
  // 1. The symbolic check of the function, as `einc check` does.
  CheckOptions symbolic = check;
  symbolic.onlyFunction = options.function;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, symbolic, diags);
  if (diags.hadError()) {
    diags.print(std::cerr);
    return 1;
  }
  const CheckedFunction *fn = checked.find(options.function);
  if (!fn) {
    std::cerr << file.path << ": error: no function named '"
              << options.function << "'\n";
    return 1;
  }

  // 2. Inputs, by parameter name, read in the parameter's dtype.
  std::vector<std::string> paramNames;
  for (unsigned id : fn->params)
    paramNames.push_back(fn->values[id].name);
  std::map<std::string, std::string> paths;
  for (auto &[name, path] : options.inputs) {
    if (std::find(paramNames.begin(), paramNames.end(), name) ==
        paramNames.end())
      return inputError("--in " + name + ": function '" + options.function +
                        "' has no parameter '" + name + "'");
    if (!paths.emplace(name, path).second)
      return inputError("--in " + name + " is given twice");
  }
  std::vector<runtime::HostTensor> inputs;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < paramNames.size(); ++i) {
    auto it = paths.find(paramNames[i]);
    if (it == paths.end())
      return inputError("missing --in " + paramNames[i] + "=FILE.npy");
    DType dtype = fn->values[fn->params[i]].type.dtype;
    auto tensor = runtime::readNpy(it->second, runtime::toStorage(dtype));
    if (!tensor)
      return inputError("parameter '" + paramNames[i] + "': " + tensor.error());
    shapes.push_back(tensor->shape);
    inputs.push_back(std::move(*tensor));
  }
  if (options.outputs.size() != fn->results.size())
    return inputError("function '" + options.function + "' returns " +
                      std::to_string(fn->results.size()) +
                      " value(s): give one --out FILE.npy for each (got " +
                      std::to_string(options.outputs.size()) + ")");
  std::set<std::string> outPaths(options.outputs.begin(), options.outputs.end());
  if (outPaths.size() != options.outputs.size())
    return inputError("the same --out file is given twice");

  // 3. Sizes from the inputs; entry checks.
  EntryBinding binding = bindEntryShapes(*fn, paramNames, shapes);
  if (!binding.ok)
    return inputError(binding.error);

  // 4. The function again with every dim bound, then compiled.
  CheckOptions bound = symbolic;
  bound.entryDims = binding.dims;
  bound.entryUnitDims = binding.unitDims;
  DiagnosticEngine boundDiags(file);
  CheckedModule concrete = checkModule(module, bound, boundDiags);
  if (boundDiags.hadError()) {
    std::cerr << "einc: error: with the sizes of these inputs, '"
              << options.function << "' does not check:\n";
    boundDiags.print(std::cerr);
    for (auto &[param, positions] : binding.unitDims) {
      auto at = std::find(paramNames.begin(), paramNames.end(), param);
      const Shape &declared =
          fn->values[fn->params[at - paramNames.begin()]].type.shape;
      for (size_t pos : positions)
        std::cerr << "einc: note: parameter '" << param
                  << "': " << declared[pos].str()
                  << " has size 1 in the input, so the function is checked "
                     "with it as 1 (only elementwise arithmetic broadcasts "
                     "it)\n";
    }
    return 2;
  }
  if (auto memory = runtime::physicalMemoryBytes())
    if (auto why = valueTooLarge(*concrete.find(options.function),
                                 Int(*memory)))
      return inputError(*why);
  std::string error;
  auto jit = JITFunction::compile(concrete, options.function, error, options.cpu);
  if (!jit) {
    std::cerr << file.path << ": error: cannot compile '" << options.function
              << "':\n"
              << error;
    return 1;
  }

  // 5. Run into fresh outputs.
  const CheckedFunction *cfn = concrete.find(options.function);
  std::vector<runtime::HostTensor> outputs;
  for (unsigned id : cfn->returns) {
    const TensorType &t = cfn->values[id].type;
    std::vector<int64_t> shape;
    for (auto &d : cfn->ctx.expand(t.shape))
      shape.push_back(static_cast<int64_t>(*d.size.evaluate(cfn->ctx.env)));
    auto tensor = runtime::HostTensor::create(runtime::toStorage(t.dtype), shape);
    if (!tensor)
      return inputError("output: " + tensor.error());
    outputs.push_back(std::move(*tensor));
  }
  std::vector<const runtime::HostTensor *> ins;
  for (auto &t : inputs)
    ins.push_back(&t);
  std::vector<runtime::HostTensor *> outs;
  for (auto &t : outputs)
    outs.push_back(&t);
  if (!jit->call(ins, outs, error))
    return inputError(error);

  if (options.time) {
    size_t calls = 0;
    double seconds = medianCallSeconds(*jit, ins, outs, calls);
    ReportOptions ro;
    auto rows = reportOps(*cfn, ro);
    double flops = 0, bytes = 0;
    for (auto &r : rows) {
      if (r.cost.flops.value)
        flops += toDouble(*r.cost.flops.value);
      if (auto b = r.cost.bytes().value)
        bytes += toDouble(*b);
    }
    std::printf("time: %.6g ms (median of %zu runs)\n", seconds * 1e3, calls);
    std::printf("achieved: %s (%s counted), %s (%s moved)\n",
                si(flops / seconds, "FLOP/s").c_str(), si(flops, "FLOP").c_str(),
                si(bytes / seconds, "B/s").c_str(), si(bytes, "B").c_str());
    double peak = options.peakFlops, bandwidth = options.bandwidth;
    const char *source = "given";
    if (peak <= 0 || bandwidth <= 0) {
      if (auto c = loadCalibration()) {
        peak = peak > 0 ? peak : c->peakFlops;
        bandwidth = bandwidth > 0 ? bandwidth : c->bandwidth;
        source = "from einc calibrate";
      }
    }
    if (peak > 0)
      std::printf("fraction of peak compute: %.3g (peak %s, %s)\n",
                  flops / seconds / peak, si(peak, "FLOP/s").c_str(), source);
    if (bandwidth > 0)
      std::printf("fraction of peak bandwidth: %.3g (peak %s, %s)\n",
                  bytes / seconds / bandwidth, si(bandwidth, "B/s").c_str(),
                  source);
    if (peak <= 0 && bandwidth <= 0)
      std::printf("(no peak figures: run `einc calibrate` or pass "
                  "--peak-flops/--bandwidth)\n");
  }

  // 6. Outputs: all written to temporaries first, then renamed into place,
  // so a failure leaves every existing output untouched. bf16/fp8 widen to
  // f32 files.
  std::vector<std::string> temporaries;
  auto discard = [&]() {
    for (auto &t : temporaries)
      std::remove(t.c_str());
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string tmp = options.outputs[i] + ".einc-partial";
    auto status = runtime::writeNpy(tmp, outputs[i]);
    if (!status.ok()) {
      discard();
      std::cerr << "einc: error: cannot write " << options.outputs[i] << ": "
                << status.error() << "\n";
      return 1;
    }
    temporaries.push_back(tmp);
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (std::rename(temporaries[i].c_str(), options.outputs[i].c_str()) != 0) {
      discard();
      std::cerr << "einc: error: cannot write " << options.outputs[i] << "\n";
      return 1;
    }
  return 0;
}

} // namespace ein
