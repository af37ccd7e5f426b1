// einc calibrate: theoretical f32 peak from /proc/cpuinfo, copy bandwidth
// and matmul rate measured with JIT-compiled ein code; the calibration file
// and the fabrics by name (resolveFabric).
#include "ein/Driver/Calibrate.h"
#include "CalibrateFabric.h"
#include "ein/Driver/Run.h"
#include "ein/Engine/Engine.h"
#include "ein/Execution/JIT.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Files.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>
#include <llvm/Support/JSON.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

/// Where the value of `"key":` starts in `text`, or npos.
size_t jsonValueAt(const std::string &text, const std::string &key) {
  auto at = text.find("\"" + key + "\"");
  if (at == std::string::npos)
    return at;
  at = text.find_first_not_of(" \t\r\n", at + key.size() + 2);
  if (at == std::string::npos || text[at] != ':')
    return std::string::npos;
  at = text.find_first_not_of(" \t\r\n", at + 1);
  return at == std::string::npos ? text.size() : at;
}

/// The number stored under `key` (0 when absent); an error naming the key
/// when it is there but not a positive finite number.
ErrorOr<double> jsonPositive(const std::string &text, const std::string &key,
                             const std::string &path) {
  auto at = jsonValueAt(text, key);
  if (at == std::string::npos)
    return 0.0;
  const char *start = text.c_str() + at;
  char *end = nullptr;
  double value = std::strtod(start, &end);
  bool number =
      end != start && (*end == 0 || std::strchr(" \t\r\n,}", *end) != nullptr);
  if (number && std::isfinite(value) && value > 0)
    return value;
  std::string written = text.substr(at, text.find_first_of(",}\n", at) - at);
  return Error::usage(fmt::format(
      "{}: \"{}\" is {}, not a positive number; run `einc calibrate` again",
      path, key, written.empty() ? "empty" : written));
}

/// The string stored under `key` ("" when absent).
std::string jsonStringValue(const std::string &text, const std::string &key) {
  auto at = jsonValueAt(text, key);
  if (at == std::string::npos || at >= text.size() || text[at] != '"')
    return "";
  std::string out;
  for (size_t i = at + 1; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out += text[i];
    } else if (text[i + 1] == 'u' && i + 5 < text.size()) {
      out += static_cast<char>(
          std::strtol(text.substr(i + 2, 4).c_str(), nullptr, 16));
      i += 5;
    } else {
      out += text[++i];
    }
  }
  return out;
}

/// The object stored under `key` as its text ("" when absent), from its
/// `{` to the matching `}`; an error naming the key when it is not one.
ErrorOr<std::string> jsonObjectText(const std::string &text,
                                    const std::string &key,
                                    const std::string &path) {
  auto at = jsonValueAt(text, key);
  if (at == std::string::npos)
    return std::string();
  int depth = 0;
  bool quoted = false;
  for (size_t i = at; i < text.size() && text[at] == '{'; ++i) {
    char ch = text[i];
    if (quoted) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        quoted = false;
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == '{' || ch == '[') {
      ++depth;
    } else if ((ch == '}' || ch == ']') && --depth == 0) {
      return text.substr(at, i + 1 - at);
    }
  }
  return Error::usage(
      fmt::format("{}: \"{}\" is not a JSON object; run `einc calibrate` "
                  "again",
                  path, key));
}

/// The host fabric's tables stored under "host_fabric_collectives": one
/// object per collective kind, {"latency_s": s, "busbw": [[bytes, B/s],
/// ...]}; every kind is there once, and each table is valid
/// (measuredCollectiveProblem), else an error naming the kind and what is
/// wrong.
ErrorOr<std::vector<MeasuredCollective>>
parseFabricCollectives(const std::string &object, const std::string &path) {
  auto refuse = [&](const std::string &why) {
    return Error::usage(fmt::format("{}: \"host_fabric_collectives\" {}; run "
                                    "`einc calibrate` again",
                                    path, why));
  };
  auto parsed = llvm::json::parse(object);
  if (!parsed)
    return refuse("is not valid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *kinds = parsed->getAsObject();
  if (!kinds)
    return refuse("is not a JSON object");
  for (const auto &entry : *kinds) {
    bool known = false;
    for (CollectiveKind kind : collectiveKinds())
      known = known || entry.first == collectiveName(kind);
    if (!known)
      return refuse(
          fmt::format("has an unknown collective \"{}\"", entry.first.str()));
  }
  std::vector<MeasuredCollective> out;
  for (CollectiveKind kind : collectiveKinds()) {
    std::string name = collectiveName(kind);
    const llvm::json::Object *table = kinds->getObject(name);
    if (!table)
      return refuse(fmt::format("has no object for {}", name));
    MeasuredCollective m{kind, table->getNumber("latency_s").value_or(0), {}};
    const llvm::json::Array *points = table->getArray("busbw");
    if (!points)
      return refuse(fmt::format(
          "has no \"busbw\" array of [bytes, bytes/s] for {}", name));
    for (const llvm::json::Value &point : *points) {
      const llvm::json::Array *pair = point.getAsArray();
      std::optional<double> bytes, bandwidth;
      if (pair && pair->size() == 2) {
        bytes = (*pair)[0].getAsNumber();
        bandwidth = (*pair)[1].getAsNumber();
      }
      if (!bytes || !bandwidth)
        return refuse(fmt::format(
            "{}: a \"busbw\" entry is not a pair [bytes, bytes/s]", name));
      m.busBandwidth.push_back({*bytes, *bandwidth});
    }
    if (std::string problem = measuredCollectiveProblem(m); !problem.empty())
      return refuse(fmt::format("{}: {}", name, problem));
    out.push_back(std::move(m));
  }
  return out;
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

ErrorOr<Calibration> readCalibration() {
  std::string path = calibrationPath();
  Calibration c;
  std::ifstream in(path);
  if (!in)
    return c;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  for (auto [key, field] :
       {std::pair{"peak_flops_f32", &c.peakFlops},
        std::pair{"bandwidth", &c.bandwidth},
        std::pair{"ein_matmul_flops_f32", &c.matmulFlops},
        std::pair{"host_fabric_latency_s", &c.fabricLatency},
        std::pair{"host_fabric_bus_bandwidth", &c.fabricBusBandwidth}}) {
    auto value = jsonPositive(text, key, path);
    if (!value)
      return value.error();
    *field = *value;
  }
  auto ranks = jsonPositive(text, "host_fabric_ranks", path);
  if (!ranks)
    return ranks.error();
  c.fabricRanks = static_cast<int64_t>(*ranks);
  if ((c.fabricLatency > 0) != (c.fabricBusBandwidth > 0))
    return Error::usage(fmt::format(
        "{}: the host fabric has only one of \"host_fabric_latency_s\" and "
        "\"host_fabric_bus_bandwidth\"; run `einc calibrate` again",
        path));
  c.description = jsonStringValue(text, "peak_source");
  c.fabricSource = jsonStringValue(text, "host_fabric_source");
  auto tables = jsonObjectText(text, "host_fabric_collectives", path);
  if (!tables)
    return tables.error();
  if (tables->empty())
    return c;
  if (!(c.fabricLatency > 0))
    return Error::usage(fmt::format(
        "{}: \"host_fabric_collectives\" without \"host_fabric_latency_s\" "
        "and \"host_fabric_bus_bandwidth\"; run `einc calibrate` again",
        path));
  auto collectives = parseFabricCollectives(*tables, path);
  if (!collectives)
    return collectives.error();
  c.fabricCollectives = std::move(*collectives);
  return c;
}

std::optional<Calibration> loadCalibration() {
  auto c = readCalibration();
  if (!c || !(c->peakFlops > 0) || !(c->bandwidth > 0))
    return std::nullopt;
  return *c;
}

ErrorOr<void> writeCalibration(const Calibration &c) {
  std::string path = calibrationPath();
  std::string dir = path.substr(0, path.rfind('/'));
  std::string parent = dir.substr(0, dir.rfind('/'));
  ::mkdir(parent.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  std::vector<std::string> fields;
  if (c.peakFlops > 0)
    fields.push_back(fmt::format(
        "\"peak_flops_f32\": {}, \"bandwidth\": {}, "
        "\"ein_matmul_flops_f32\": {}, \"peak_source\": {}",
        c.peakFlops, c.bandwidth, c.matmulFlops, jsonString(c.description)));
  if (c.fabricLatency > 0)
    fields.push_back(fmt::format(
        "\"host_fabric_latency_s\": {}, \"host_fabric_bus_bandwidth\": {}, "
        "\"host_fabric_ranks\": {}, \"host_fabric_source\": {}",
        c.fabricLatency, c.fabricBusBandwidth, c.fabricRanks,
        jsonString(c.fabricSource)));
  if (c.fabricLatency > 0 && !c.fabricCollectives.empty()) {
    std::vector<std::string> kinds;
    for (const MeasuredCollective &m : c.fabricCollectives) {
      std::vector<std::string> points;
      for (auto [bytes, bandwidth] : m.busBandwidth)
        points.push_back(fmt::format("[{}, {}]", bytes, bandwidth));
      kinds.push_back(fmt::format(
          "\"{}\": {{\"latency_s\": {}, \"busbw\": [{}]}}",
          collectiveName(m.kind), m.latency, fmt::join(points, ", ")));
    }
    fields.push_back(fmt::format("\"host_fabric_collectives\": {{{}}}",
                                 fmt::join(kinds, ", ")));
  }
  std::string text = "{";
  for (size_t i = 0; i < fields.size(); ++i)
    text += (i ? ", " : "") + fields[i];
  if (!writeFileAtomically(path, text + "}\n"))
    return Error::program(fmt::format("cannot write {}", path));
  return {};
}

std::string resolvableFabricNames(const std::string &separator) {
  return fabricNames(separator) + separator + "host";
}

ErrorOr<FabricSpec> resolveFabric(const std::string &name) {
  if (const FabricSpec *spec = findFabric(name))
    return *spec;
  if (name != "host")
    return Error::usage(fmt::format("unknown fabric '{}'; the fabrics are {}",
                                    name, resolvableFabricNames(", ")));
  auto c = readCalibration();
  if (!c)
    return c.error();
  if (!(c->fabricLatency > 0))
    return Error::usage(fmt::format(
        "the host fabric (this machine's shared memory between MPI ranks) "
        "has not been measured (no \"host_fabric_latency_s\" in {}); run "
        "`einc calibrate`, which needs OpenMPI's mpirun",
        calibrationPath()));
  return FabricSpec{
      "host",
      fmt::format("this machine's shared memory, measured by einc calibrate "
                  "({})",
                  c->fabricSource),
      c->fabricLatency, c->fabricBusBandwidth, c->fabricCollectives};
}

ErrorOr<std::string> runCalibrate(const CPUOptions &cpu,
                                  const std::vector<int64_t> &checkBytes) {
  // Under mpirun this process is one rank of the fabric's measurement, or
  // of its check.
  if (launcherWorldSize() > 0)
    return checkBytes.empty() ? runFabricRank() : checkFabricRank(checkBytes);
  if (!checkBytes.empty())
    return Error::usage(
        "calibrate --check times the collectives on MPI ranks against the "
        "stored host fabric: run it under mpirun after `einc calibrate` "
        "(mpirun -n 2 einc calibrate --check 48KiB,3MiB)");
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
  // The fabric figures are measured again below: old ones are dropped.
  if (auto stored = writeCalibration(c); !stored)
    return stored.error();
  std::string text;
  text += fmt::format("peak f32 compute: {:.4g} GFLOP/s ({})\n",
                      c.peakFlops / 1e9, c.description);
  text +=
      fmt::format("copy bandwidth:   {:.4g} GB/s (measured, read + write)\n",
                  c.bandwidth / 1e9);
  text +=
      fmt::format("ein matmul:       {:.4g} GFLOP/s (measured, {}x{}x{} f32)\n",
                  c.matmulFlops / 1e9, m, m, m);
  text += measureHostFabric(hostFabricRanks());
  text += fmt::format("stored in {}\n", calibrationPath());
  return text;
}

} // namespace ein
