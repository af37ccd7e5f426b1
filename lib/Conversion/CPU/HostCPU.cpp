// What the compiling host offers the CPU passes: vector width and threads.
#include "ein/Conversion/CPU/HostCPU.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
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

} // namespace ein
