// The CPU code is compiled for (the host, or one named by --cpu, checked
// against LLVM's tables), and what it offers the CPU passes: vector width,
// threads and caches (from the OS), and the GEMM blocking derived from them.
#include "ein/Conversion/CPU/HostCPU.h"
#include "ein/Support/Spelling.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace ein {

namespace {

/// The host's instruction-set features, all that LLVM's probe reports,
/// sorted by name: the one place the host's features are probed (the probe
/// runs cpuid each call; the answer does not change within a process).
const std::map<std::string, bool> &hostFeatures() {
  static const std::map<std::string, bool> features = [] {
    std::map<std::string, bool> sorted;
    for (auto &f : llvm::sys::getHostCPUFeatures())
      sorted[f.getKey().str()] = f.getValue();
    return sorted;
  }();
  return features;
}

/// The host's CPU name as LLVM names it ("znver3").
std::string hostCPUName() { return llvm::sys::getHostCPUName().str(); }

/// The host's instruction-set features as "+f,-g" (sorted, so the string is
/// stable).
std::string hostFeatureString() {
  std::string text;
  for (auto &[name, on] : hostFeatures())
    text +=
        fmt::format("{}{}{}", text.empty() ? "" : ",", on ? "+" : "-", name);
  return text;
}

int64_t vectorBitsOf(const std::function<bool(const char *)> &has) {
  if (has("avx512f"))
    return 512;
  if (has("avx"))
    return 256;
  return 128;
}

/// LLVM's subtarget table for this process's triple with `cpu` and
/// `features`; null when the target is not linked in.
std::unique_ptr<llvm::MCSubtargetInfo>
subtargetInfo(const std::string &cpu, const std::string &features,
              std::string &error) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    return true;
  }();
  (void)initialized;
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      target->createMCSubtargetInfo(triple, cpu, features));
}

std::string nearestNote(const std::string &name,
                        const std::vector<std::string> &candidates,
                        const char *what) {
  if (auto near =
          closestName(name, candidates, std::max<size_t>(2, name.size() / 3)))
    return fmt::format("; did you mean '{}'?", *near);
  return fmt::format(" ({} lists them)", what);
}

} // namespace

const char *int8DotName(Int8Dot dot) {
  switch (dot) {
  case Int8Dot::None:
    return "none";
  case Int8Dot::Avx2:
    return "avx2";
  case Int8Dot::Avx512BW:
    return "avx512bw";
  case Int8Dot::Vnni:
    return "vnni";
  }
  return "none";
}

std::optional<Int8Dot> parseInt8Dot(const std::string &name) {
  for (Int8Dot dot :
       {Int8Dot::None, Int8Dot::Avx2, Int8Dot::Avx512BW, Int8Dot::Vnni})
    if (name == int8DotName(dot))
      return dot;
  return std::nullopt;
}

std::string ResolvedCPU::describe() const {
  std::string text = host ? "the host (" + name + ")" : name;
  if (!extraFeatures.empty())
    text += " " + extraFeatures;
  return text;
}

ErrorOr<ResolvedCPU> resolveCPU(const TargetCPU &cpu) {
  // Resolved once per (name, features): the JIT, the pipeline and the cache
  // key each ask.
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, ResolvedCPU> resolved;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(cpu.name, cpu.features);
  if (auto found = resolved.find(key); found != resolved.end())
    return found->second;
  ResolvedCPU out;
  const std::string &name = cpu.name;
  bool hostBase = name.empty() || name == "native" || name == "host";
  // Exactly the host: its caches, and its code runs here unchecked.
  out.host = hostBase && cpu.features.empty();
  out.name = hostBase ? hostCPUName() : name;
  std::string error;
  // The generic subtarget lists the CPUs and features without warnings
  // (createMCSubtargetInfo prints one to stderr for an unknown name).
  auto generic = subtargetInfo("", "", error);
  if (!generic)
    return Error::usage(fmt::format("--cpu: no code generator for this host "
                                    "({}): {}",
                                    llvm::sys::getProcessTriple(), error));
  if (!hostBase && !generic->isCPUStringValid(name)) {
    std::vector<std::string> names;
    for (const auto &d : generic->getAllProcessorDescriptions())
      names.push_back(d.Key);
    return Error::usage(
        fmt::format("--cpu: '{}' is not a CPU LLVM knows for {}{}", name,
                    llvm::sys::getProcessTriple(),
                    nearestNote(name, names, "`llc -mcpu=help`")));
  }
  std::set<std::string> known;
  for (const auto &f : generic->getAllProcessorFeatures())
    known.insert(f.Key);
  std::string extra;
  for (size_t start = 0; start < cpu.features.size();) {
    size_t end = cpu.features.find(',', start);
    if (end == std::string::npos)
      end = cpu.features.size();
    std::string item = cpu.features.substr(start, end - start);
    start = end + 1;
    if (item.empty())
      continue;
    if ((item[0] != '+' && item[0] != '-') || !known.count(item.substr(1))) {
      std::string bare =
          item[0] == '+' || item[0] == '-' ? item.substr(1) : item;
      std::vector<std::string> names(known.begin(), known.end());
      if (item[0] != '+' && item[0] != '-')
        return Error::usage(fmt::format(
            "--cpu-features: '{}' must be +FEATURE or -FEATURE (as +{})", item,
            bare));
      return Error::usage(
          fmt::format("--cpu-features: '{}' is not a feature LLVM knows{}",
                      bare, nearestNote(bare, names, "`llc -mattr=help`")));
    }
    extra += (extra.empty() ? "" : ",") + item;
  }
  out.features = hostBase ? hostFeatureString() : "";
  if (!extra.empty())
    out.features += (out.features.empty() ? "" : ",") + extra;
  out.extraFeatures = extra;
  auto info = subtargetInfo(out.name, out.features, error);
  if (!info)
    return Error::usage(fmt::format("--cpu: {}", error));
  auto has = [&](const char *f) {
    return info->checkFeatures(std::string("+") + f);
  };
  out.vectorBits = vectorBitsOf(has);
  out.bf16Dot = has("avx512bf16");
  out.int8Dot = out.vectorBits == 512 && has("avx512vnni") ? Int8Dot::Vnni
                : out.vectorBits == 512 && has("avx512bw") ? Int8Dot::Avx512BW
                : has("avx2")                              ? Int8Dot::Avx2
                                                           : Int8Dot::None;
  resolved.emplace(key, out);
  return out;
}

ErrorOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const ResolvedCPU &cpu) {
  std::string error;
  if (!subtargetInfo("", "", error))
    return Error::program(
        fmt::format("cannot create a target machine: {}", error));
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu.name, cpu.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return Error::program(
        fmt::format("cannot create a target machine for {}", cpu.describe()));
  return machine;
}

ErrorOr<void> checkHostCanRun(const ResolvedCPU &cpu) {
  if (cpu.host)
    return {};
  std::string error;
  auto info = subtargetInfo(cpu.name, cpu.features, error);
  if (!info)
    return Error::usage(fmt::format("--cpu: {}", error));
  std::vector<std::string> missing;
  const std::map<std::string, bool> &host = hostFeatures();
  std::set<std::string> known;
  for (const auto &f : info->getAllProcessorFeatures())
    known.insert(f.Key);
  for (auto &[name, on] : host)
    if (!on && known.count(name) && info->checkFeatures("+" + name))
      missing.push_back(name);
  if (missing.empty())
    return {};
  std::string list;
  for (size_t i = 0; i < missing.size() && i < 8; ++i)
    list += (i ? ", " : "") + missing[i];
  if (missing.size() > 8)
    list += fmt::format(" and {} more", missing.size() - 8);
  return Error::usage(fmt::format(
      "--cpu {}: this host ({}) cannot run code for it: it lacks {} "
      "(`einc build --cpu` compiles for another machine)",
      cpu.describe(), hostCPUName(), list));
}

int64_t hostVectorBits() {
  const std::map<std::string, bool> &features = hostFeatures();
  return vectorBitsOf([&](const char *f) {
    auto it = features.find(f);
    return it != features.end() && it->second;
  });
}

int64_t defaultWorkItems() {
  return 2 * std::max<int64_t>(1, std::thread::hardware_concurrency());
}

namespace {

std::string readLine(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// CPUs in a sysfs list such as "0-1" or "0,2,4-7".
int64_t countCpus(const std::string &list) {
  int64_t count = 0;
  size_t i = 0;
  while (i < list.size()) {
    size_t end = list.find(',', i);
    std::string part = list.substr(i, end == std::string::npos ? end : end - i);
    size_t dash = part.find('-');
    if (dash == std::string::npos)
      count += part.empty() ? 0 : 1;
    else
      count += std::stoll(part.substr(dash + 1)) -
               std::stoll(part.substr(0, dash)) + 1;
    if (end == std::string::npos)
      break;
    i = end + 1;
  }
  return std::max<int64_t>(1, count);
}

} // namespace

HostCaches commonCaches() {
  int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  HostCaches caches;
  caches.l1d = {32 << 10, 8, 1};
  caches.l2 = {512 << 10, 8, 1};
  caches.l3 = {8 << 20, 16, threads};
  return caches;
}

HostCaches hostCaches() {
  HostCaches caches = commonCaches();
  const std::string root = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    std::string dir = root + std::to_string(i) + "/";
    std::string level = readLine(dir + "level");
    std::string type = readLine(dir + "type");
    if (level.empty())
      break;
    if (type != "Data" && type != "Unified")
      continue;
    CacheLevel c;
    c.bytes = parseCacheSize(readLine(dir + "size"));
    std::string ways = readLine(dir + "ways_of_associativity");
    c.ways = ways.empty() ? 0 : std::atoll(ways.c_str());
    std::string shared = readLine(dir + "shared_cpu_list");
    c.sharers = shared.empty() ? 1 : countCpus(shared);
    if (c.bytes <= 0 || c.ways <= 0)
      continue;
    if (level == "1")
      caches.l1d = c;
    else if (level == "2")
      caches.l2 = c;
    else if (level == "3")
      caches.l3 = c;
  }
  return caches;
}

GemmTiles hostGemmTiles() {
  static const GemmTiles tiles =
      gemmTiles(hostCaches(), hostVectorBits(), 4,
                std::max<int64_t>(1, std::thread::hardware_concurrency()));
  return tiles;
}

} // namespace ein
