// einc calibrate: theoretical f32 peak from /proc/cpuinfo, copy bandwidth
// and matmul rate measured with JIT-compiled ein code.
#include "ein/Driver/Calibrate.h"
#include "ein/Driver/Run.h"
#include "ein/Engine/Engine.h"
#include "ein/Execution/JIT.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Files.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>

namespace ein {

std::string calibrationPath() {
  std::string base;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    base = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    base = std::string(home) + "/.cache";
  else
    base = "/tmp";
  return base + "/ein/calibration.json";
}

namespace {

double jsonNumber(const std::string &text, const std::string &key) {
  auto at = text.find("\"" + key + "\"");
  if (at == std::string::npos)
    return 0;
  at = text.find(':', at);
  return at == std::string::npos ? 0
                                 : std::strtod(text.c_str() + at + 1, nullptr);
}

/// `text` as a JSON string.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20)
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(ch));
    else
      out += ch;
  }
  return out + "\"";
}

/// cores x clock x FLOPs per cycle (2 FMA pipes x SIMD lanes x 2), for
/// code using `vectorBits`-wide vectors (the CPU compiled for).
Calibration theoreticalPeak(int64_t vectorBits) {
  Calibration c;
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  double mhz = 0;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU")
      model = line.substr(line.find(':') + 2);
    if (line.rfind("cpu MHz", 0) == 0 && mhz == 0)
      mhz = std::strtod(line.c_str() + line.find(':') + 1, nullptr);
  }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  int lanes = int(vectorBits / 32);
  c.peakFlops = cores * mhz * 1e6 * 2 /*FMA pipes*/ * lanes * 2 /*mul+add*/;
  c.description =
      fmt::format("{}, {} cores x {:.0f} MHz x 2 FMA x {} f32 lanes x 2", model,
                  cores, mhz, lanes);
  return c;
}

/// Seconds per call of `name` in `source` (median over >= 0.2 s).
ErrorOr<double> timeSource(const std::string &source, const std::string &name,
                           const std::vector<std::vector<int64_t>> &shapes,
                           const CPUOptions &cpu) {
  SourceFile file{"<calibrate>", source};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  Engine engine(cpu);
  auto checked = engine.check(file, module, {}, name);
  if (!checked)
    return checked.error();
  // Calibration measures this host: the cpu target's JIT.
  auto target = lookupTarget("cpu", TargetUse::Run);
  if (!target)
    return target.error();
  TargetOptions options;
  options.cpu = cpu;
  auto jit = engine.compile(**target, file, *checked, name, options);
  if (!jit)
    return Error::program(
               fmt::format("calibration kernel failed to compile: {}",
                           jit.error().message))
        .withContext(jit.error().context);
  std::vector<runtime::HostTensor> tensors;
  for (auto &s : shapes)
    tensors.push_back(
        *runtime::HostTensor::create(runtime::StorageType::F32, s));
  std::vector<const runtime::HostTensor *> ins;
  for (size_t i = 0; i + 1 < tensors.size(); ++i)
    ins.push_back(&tensors[i]);
  std::vector<runtime::HostTensor *> outs{&tensors.back()};
  size_t calls = 0;
  auto seconds =
      medianSeconds([&] { return (*jit)->call(ins, outs, {}); }, calls);
  if (!seconds)
    return Error::program(fmt::format("calibration kernel failed to run: {}",
                                      seconds.error().message))
        .withContext(seconds.error().context);
  return *seconds;
}

} // namespace

std::optional<Calibration> loadCalibration() {
  std::ifstream in(calibrationPath());
  if (!in)
    return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  Calibration c;
  c.peakFlops = jsonNumber(text.str(), "peak_flops_f32");
  c.bandwidth = jsonNumber(text.str(), "bandwidth");
  c.matmulFlops = jsonNumber(text.str(), "ein_matmul_flops_f32");
  if (!(c.peakFlops > 0) || !(c.bandwidth > 0))
    return std::nullopt;
  return c;
}

ErrorOr<std::string> runCalibrate(const CPUOptions &cpu) {
  auto target = resolveCPU(cpu.target);
  if (!target)
    return target.error();
  Calibration c = theoreticalPeak(target->vectorBits);
  const int64_t copyN = 16 * 1024 * 1024; // 64 MiB each way
  auto copy = timeSource(fmt::format("dim n = {}\n"
                                     "def copy(x: f32[\"n\"]) -> f32[\"n\"]:\n"
                                     "    return -x\n",
                                     copyN),
                         "copy", {{copyN}, {copyN}}, cpu);
  if (!copy)
    return copy.error();
  const int64_t m = 256;
  auto matmul = timeSource(
      fmt::format("dim m = {}\n"
                  "def mm(a: f32[\"m m\"], b: f32[\"m m\"]) -> f32[\"m m\"]:\n"
                  "    return einsum(a, b, \"i k, k j -> i j\")\n",
                  m),
      "mm", {{m, m}, {m, m}, {m, m}}, cpu);
  if (!matmul)
    return matmul.error();
  c.bandwidth = 2.0 * 4 * copyN / *copy;
  c.matmulFlops = 2.0 * m * m * m / *matmul;
  std::string path = calibrationPath();
  std::string dir = path.substr(0, path.rfind('/'));
  std::string parent = dir.substr(0, dir.rfind('/'));
  ::mkdir(parent.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  if (!writeFileAtomically(
          path,
          fmt::format("{{\"peak_flops_f32\": {}, \"bandwidth\": {}, "
                      "\"ein_matmul_flops_f32\": {}, \"peak_source\": {}}}\n",
                      c.peakFlops, c.bandwidth, c.matmulFlops,
                      jsonString(c.description))))
    return Error::program(fmt::format("cannot write {}", path));
  std::string text;
  text += fmt::format("peak f32 compute: {:.4g} GFLOP/s ({})\n",
                      c.peakFlops / 1e9, c.description);
  text +=
      fmt::format("copy bandwidth:   {:.4g} GB/s (measured, read + write)\n",
                  c.bandwidth / 1e9);
  text +=
      fmt::format("ein matmul:       {:.4g} GFLOP/s (measured, {}x{}x{} f32)\n",
                  c.matmulFlops / 1e9, m, m, m);
  text += fmt::format("stored in {}\n", path);
  return text;
}

} // namespace ein
