// The C++ API's kernels: programs built with the ProgramBuilder (or, for the
// ops not yet moved to it, generated .ein source checked by einc's front
// end), compiled through the CPU pipeline and cached in memory by key.
#include "CUDA/Device.h"
#include "Internal.h"

#include "ein/Engine/ObjectCache.h"
#include "ein/Sema/Checker.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace ein::api::detail {

namespace {

/// The path generated sources are checked under (named in compiler errors).
constexpr const char *kGeneratedPath = "<ein C++ API>";

struct KernelCache {
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Kernel>> kernels;
  /// Compilations run one at a time: each builds an MLIR context and a JIT,
  /// and two threads asking for one kernel must not compile it twice.
  std::mutex compiling;
  std::atomic<size_t> compilations{0};
  std::atomic<size_t> loads{0};
};

/// Never destroyed: the kernels' JITs must not be torn down after LLVM's
/// own globals at exit (the process's end frees their memory).
KernelCache &cache() {
  static KernelCache *instance = new KernelCache;
  return *instance;
}

/// The diagnostics of a generated source, with the body line's call as the
/// source line, so the caret points into the user's pattern.
std::string renderDiagnostics(const SourceFile &file,
                              const std::vector<Diagnostic> &diags) {
  std::string text;
  for (const Diagnostic &d : diags) {
    const char *severity = d.severity == Severity::Error     ? "error"
                           : d.severity == Severity::Warning ? "warning"
                                                             : "note";
    if (d.severity == Severity::Warning)
      continue; // the API has no warning channel; warnings never stop a call
    if (!text.empty())
      text += "\n";
    text += fmt::format("{}: {}", severity, d.message);
    // The body's line, without its indentation and `return ` or `p, ps =`:
    // the user's call, with the caret placed in it.
    std::string line = file.lineText(d.loc.line);
    if (d.loc.line < 2 || line.rfind("    ", 0) != 0)
      continue;
    size_t start = 4;
    if (line.compare(start, 7, "return ") == 0)
      start += 7;
    else if (size_t eq = line.find(" = ");
             eq != std::string::npos && eq < line.find('('))
      start = eq + 3;
    if (d.loc.col - 1 < start)
      continue;
    size_t col = d.loc.col - 1 - start;
    text += fmt::format("\n    {}\n    {}^{}", line.substr(start),
                        std::string(col, ' '),
                        std::string(d.length > 1 ? d.length - 1 : 0, '~'));
  }
  return text;
}

} // namespace

Result<CheckedModule> checkSource(const std::string &source) {
  SourceFile file{kGeneratedPath, source};
  DiagnosticEngine diags(file);
  ein::Module module = parseModule(file, diags);
  CheckedModule checked;
  if (!diags.hadError())
    checked = checkModule(module, {}, diags);
  if (diags.hadError())
    return ErrorInfo{ErrorInfo::Kind::Program,
                     renderDiagnostics(file, diags.diagnostics())};
  return checked;
}

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

/// The kernel cached under `what` (a source, or a built program's key),
/// compiled from the module `build` gives on first use.
template <typename Build>
Result<std::shared_ptr<Kernel>> cachedKernel(const std::string &what,
                                             Build build) {
  KernelCache &c = cache();
  // Keyed by the CPU compiled for too: set_cpu changes later kernels only.
  CPUOptions options = compileOptions();
  const std::string key =
      options.target.isHost()
          ? what
          : fmt::format("// cpu {} {}\n{}", options.target.name,
                        options.target.features, what);
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
  Result<const CheckedModule *> module = build();
  if (!module)
    return module.error();
  auto kernel = std::make_shared<Kernel>();
  kernel->source = what;
  // The disk cache, keyed by `what` (and, inside, this compiler build and
  // CPU).
  bool loaded = false;
  auto compiled =
      ObjectCache::compileOrLoad(what, **module, kernelName, options,
                                 JITOptions::fromEnvironment(), &loaded);
  if (!compiled) {
    ErrorInfo info = toInfo(compiled.error());
    info.message += "\nthe kernel was:\n" + what;
    return info;
  }
  kernel->function = std::shared_ptr<JITFunction>(std::move(*compiled));
  ++(loaded ? c.loads : c.compilations);
  std::unique_lock<std::shared_mutex> lock(c.mutex);
  c.kernels.emplace(key, kernel);
  return kernel;
}

} // namespace

Result<std::shared_ptr<Kernel>>
kernelFor(const std::string &key,
          const std::function<Result<CheckedModule>()> &build) {
  CheckedModule built;
  return cachedKernel(key, [&]() -> Result<const CheckedModule *> {
    auto module = build();
    if (!module)
      return module.error();
    built = std::move(*module);
    return &built;
  });
}

Result<std::shared_ptr<Kernel>> kernelFor(const std::string &key,
                                          const CheckedModule &module) {
  return cachedKernel(
      key, [&]() -> Result<const CheckedModule *> { return &module; });
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
  size_t built = 0, loaded = 0;
  detail::cudaDevice::counts(built, loaded);
  stats.compiled = detail::cache().compilations.load() + built;
  stats.loaded = detail::cache().loads.load() + loaded;
  stats.directory = ObjectCache::directory();
  return stats;
}

namespace ein::api::detail {

void countModuleCompilations(size_t compiled, size_t loaded) {
  cache().compilations += compiled;
  cache().loads += loaded;
}

Result<void> runKernel(JITFunction &function,
                       const std::vector<const Tensor *> &tensors) {
  std::vector<JITFunction::StridedArgument> args;
  args.reserve(tensors.size());
  for (const Tensor *t : tensors)
    args.push_back(
        {t->data(), t->shape().data(), t->strides().data(), t->shape().size()});
  if (auto called = function.callStrided(args.data(), args.size()); !called)
    return toInfo(called.error());
  return {};
}

} // namespace ein::api::detail
