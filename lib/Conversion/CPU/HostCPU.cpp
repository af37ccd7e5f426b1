// What the compiling host offers the CPU passes: vector width, threads and
// caches (from the OS), and the GEMM blocking derived from them.
#include "ein/Conversion/CPU/HostCPU.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <fstream>
#include <thread>

namespace ein {

int64_t hostVectorBits() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (features.lookup("avx512f"))
    return 512;
  if (features.lookup("avx"))
    return 256;
  return 128;
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

HostCaches hostCaches() {
  int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  HostCaches caches;
  caches.l1d = {32 << 10, 8, 1};
  caches.l2 = {512 << 10, 8, 1};
  caches.l3 = {8 << 20, 16, threads};
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
