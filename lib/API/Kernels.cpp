// The C++ API's kernels: programs built with the ProgramBuilder, compiled
// for the registry's cpu target or the API's CUDA target through one
// process-wide Engine (its memory and disk caches), with the API's own
// per-key lookup in front of it.
#include "CUDA/Device.h"
#include "Internal.h"

#include "ein/Engine/Engine.h"
#include "ein/Engine/ObjectCache.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace ein::api::detail {

namespace {

struct KernelCache {
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Kernel>> kernels;
  /// Compilations run one at a time: each builds an MLIR context and a JIT
  /// (or a CUDA library), two threads asking for one kernel must not
  /// compile it twice, and the Engine's cache is not thread-safe.
  std::mutex compiling;
  /// Every kernel compiles through it: the cpu target for CPU kernels, the
  /// CUDA target (cudaDevice::target) for device kernels; its disk cache is
  /// keyed by the kernel's key (and, inside, this compiler and CPU).
  Engine engine;
  KernelCache() { engine.useDiskCache(true); }
  std::atomic<size_t> compilations{0};
  std::atomic<size_t> loads{0};
};

/// Never destroyed: the kernels' JITs must not be torn down after LLVM's
/// own globals at exit (the process's end frees their memory).
KernelCache &cache() {
  static KernelCache *instance = new KernelCache;
  return *instance;
}

} // namespace

namespace {

/// set_cpu's target, read by every compilation, and every target set so
/// far (its index is compileTargetId; the host is 0).
struct TargetState {
  std::mutex mutex;
  TargetCPU target;
  std::vector<std::pair<std::string, std::string>> seen{{"", ""}};
  std::atomic<uint32_t> id{0};
};
TargetState &targetState() {
  static TargetState *state = new TargetState;
  return *state;
}

} // namespace

uint32_t compileTargetId() {
  return targetState().id.load(std::memory_order_acquire);
}

CPUOptions compileOptions() {
  TargetState &state = targetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  CPUOptions options;
  options.target = state.target;
  return options;
}

namespace {

/// The kernel cached under `what` (a built program's key) for `device`,
/// compiled from the module `build` gives on first use.
template <typename Build>
Result<std::shared_ptr<Kernel>> cachedKernel(const std::string &what,
                                             Device device, Build build) {
  KernelCache &c = cache();
  // Keyed by the device, and for the CPU by the CPU compiled for too:
  // set_cpu changes later kernels only.
  CPUOptions options = compileOptions();
  std::string key;
  if (device == cuda)
    key = "// cuda\n" + what;
  else if (!options.target.isHost())
    key = fmt::format("// cpu {} {}\n{}", options.target.name,
                      options.target.features, what);
  else
    key = what;
  {
    std::shared_lock<std::shared_mutex> lock(c.mutex);
    if (auto it = c.kernels.find(key); it != c.kernels.end())
      return it->second;
  }
  std::lock_guard<std::mutex> compiling(c.compiling);
  {
    std::shared_lock<std::shared_mutex> lock(c.mutex);
    if (auto it = c.kernels.find(key); it != c.kernels.end())
      return it->second;
  }
  const Target *target = nullptr;
  if (device == cuda) {
    auto found = cudaDevice::target();
    if (!found)
      return found.error();
    target = *found;
  } else {
    auto found = lookupTarget("cpu", TargetUse::Run);
    if (!found)
      return toInfo(found.error());
    target = *found;
  }
  Result<const CheckedModule *> module = build();
  if (!module)
    return module.error();
  TargetOptions targetOptions;
  targetOptions.cpu = options;
  JITOptions jit = JITOptions::fromEnvironment();
  targetOptions.perfListener = jit.perfListener;
  targetOptions.gdbListener = jit.gdbListener;
  targetOptions.inProcess = true; // CUDA kernels run on device pointers
  size_t compiled = c.engine.compilations(), loaded = c.engine.loads();
  auto callable =
      c.engine.compile(*target, what, **module, kernelName, targetOptions);
  c.compilations += c.engine.compilations() - compiled;
  c.loads += c.engine.loads() - loaded;
  if (!callable) {
    ErrorInfo info = toInfo(callable.error());
    info.message += "\nthe kernel was:\n" + what;
    return info;
  }
  auto kernel = std::make_shared<Kernel>();
  kernel->callable = std::move(*callable);
  kernel->source = what;
  std::unique_lock<std::shared_mutex> lock(c.mutex);
  c.kernels.emplace(key, kernel);
  return kernel;
}

} // namespace

Result<std::shared_ptr<Kernel>>
kernelFor(const std::string &key, Device device,
          const std::function<Result<CheckedModule>()> &build) {
  CheckedModule built;
  return cachedKernel(key, device, [&]() -> Result<const CheckedModule *> {
    auto module = build();
    if (!module)
      return module.error();
    built = std::move(*module);
    return &built;
  });
}

Result<std::shared_ptr<Kernel>> kernelFor(const std::string &key, Device device,
                                          const CheckedModule &module) {
  return cachedKernel(
      key, device, [&]() -> Result<const CheckedModule *> { return &module; });
}

} // namespace ein::api::detail

ein::api::Result<void> ein::api::nothrow::set_cpu(const std::string &name,
                                                  const std::string &features) {
  TargetCPU target{name == "native" ? "" : name, features};
  auto resolved = resolveCPU(target);
  if (!resolved)
    return detail::toInfo(resolved.error());
  // Kernels run in this process: a CPU it cannot run is refused now.
  if (auto runnable = checkHostCanRun(*resolved); !runnable)
    return detail::toInfo(runnable.error());
  detail::TargetState &state = detail::targetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.target = target;
  auto key = std::make_pair(target.name, target.features);
  auto found = std::find(state.seen.begin(), state.seen.end(), key);
  if (found == state.seen.end())
    found = state.seen.insert(state.seen.end(), key);
  state.id.store(uint32_t(found - state.seen.begin()),
                 std::memory_order_release);
  return {};
}

ein::api::CacheStats ein::api::cache_stats() {
  CacheStats stats;
  stats.compiled = detail::cache().compilations.load();
  stats.loaded = detail::cache().loads.load();
  stats.directory = ObjectCache::directory();
  return stats;
}

namespace ein::api::detail {

void countModuleCompilations(size_t compiled, size_t loaded) {
  cache().compilations += compiled;
  cache().loads += loaded;
}

Result<void> runKernel(const Kernel &kernel,
                       const std::vector<const Tensor *> &tensors) {
  // Most kernels have a few tensors: their arguments live on the stack.
  constexpr size_t kInline = 8;
  StridedArgument inline_[kInline];
  std::vector<StridedArgument> heap;
  StridedArgument *args = inline_;
  if (tensors.size() > kInline) {
    heap.resize(tensors.size());
    args = heap.data();
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor *t = tensors[i];
    args[i] = {t->data(), t->shape().data(), t->strides().data(),
               t->shape().size()};
  }
  if (auto called =
          kernel.callable->callStrided(args, tensors.size(), nullptr, nullptr);
      !called)
    return toInfo(called.error());
  return {};
}

} // namespace ein::api::detail
