// CUDA device tensors of the C++ API: generated CUDA source (the CUDA back
// end's, plus C-ABI shims) built into shared libraries by nvcc for this
// machine's GPU, or by the host compiler under the runtime's emulation when
// EIN_CUDA=emulated, and loaded with dlopen; cached in memory and on disk.
#include "CUDA/Device.h"
#include "Internal.h"

#include "ein/Engine/ObjectCache.h"
#include "ein/Support/Process.h"
#include "ein/Target/CUDA/Build.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <sys/stat.h>
#include <unordered_map>

namespace ein::api::detail::cudaDevice {

namespace {

/// The entry point's C-ABI, for any number of tensors: a shim the API
/// appends to every generated source calls ein_NAME with the i-th tensor's
/// (data, rank, sizes, strides), then the default stream.
using Shim = int (*)(void *const *data, const int64_t *ranks,
                     const int64_t *const *sizes,
                     const int64_t *const *strides);

/// What the API appends to generated CUDA source: device memory functions
/// (the support library), and the shims of each entry point.
constexpr const char *kSupportFunctions = R"cu(
/* The C++ API's device functions (lib/API/CUDA/Device.cpp). */
extern "C" int ein_api_malloc(void **p, size_t n) {
  return (int)cudaMalloc(p, n ? n : 1);
}
extern "C" int ein_api_free(void *p) { return (int)cudaFree(p); }
extern "C" int ein_api_copy(void *d, const void *s, size_t n, int kind) {
  return n ? (int)cudaMemcpy(d, s, n, (cudaMemcpyKind)kind) : 0;
}
extern "C" int ein_api_zero(void *d, size_t n) {
  return n ? (int)cudaMemset(d, 0, n) : 0;
}
extern "C" const char *ein_api_error_string(int e) {
  return cudaGetErrorString((cudaError_t)e);
}
extern "C" int ein_api_device(char *name, int size) {
#ifdef __CUDACC__
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return (int)e;
  if (count == 0)
    return -1;
  cudaDeviceProp p;
  if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess)
    return (int)e;
  snprintf(name, size, "%s (sm_%d%d)", p.name, p.major, p.minor);
#else
  snprintf(name, size, "emulated CUDA on the CPU");
#endif
  return 0;
}
)cu";

/// A pointer argument of any type, from the shim's void pointers.
constexpr const char *kShimPrelude = R"(
struct ein_api_ptr {
  void *p;
  template <class T> operator T *() const { return static_cast<T *>(p); }
};
)";

std::string shimText(const std::string &function, size_t tensors) {
  std::string args;
  for (size_t i = 0; i < tensors; ++i)
    args += fmt::format("ein_api_ptr{{d[{0}]}}, r[{0}], z[{0}], s[{0}], ", i);
  return fmt::format(
      "extern \"C\" int ein_api_call_{0}(void *const *d, const int64_t *r, "
      "const int64_t *const *z, const int64_t *const *s) {{\n"
      "  return ein_{0}({1}(cudaStream_t)0);\n}}\n",
      function, args);
}

/// A loaded library of generated CUDA source.
struct Library {
  void *handle = nullptr;
  std::unordered_map<std::string, Shim> shims;
};

struct DeviceState {
  bool emulated = false;
  /// Why the device cannot be used; empty when it can.
  std::string unusable;
  std::string name;
  /// nvcc's -arch for kernels ("sm_90"); the disk cache's key names it.
  std::string arch;
  int (*malloc)(void **, size_t) = nullptr;
  int (*free)(void *) = nullptr;
  int (*copy)(void *, const void *, size_t, int) = nullptr;
  int (*zero)(void *, size_t) = nullptr;
  const char *(*errorString)(int) = nullptr;

  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Library>> libraries;
  /// Builds run one at a time (each is a compiler process).
  std::mutex building;
  /// Kernels run one at a time: emulated blocks keep __shared__ arrays in
  /// static storage, and the runtime's GEMM descriptor cache is not locked.
  std::mutex running;
};

/// Libraries built and loaded from the disk cache (cache_stats() asks
/// without selecting a device).
std::atomic<size_t> librariesBuilt{0}, librariesLoaded{0};

/// What a cached library depends on besides its source: the build's
/// command line (without its paths) and the compiler's identity.
std::string buildStamp(const CUDABuild &build) {
  std::string stamp = "cuda-library\n";
  for (const std::string &arg : cudaBuildCommand(build, "SRC", "OUT"))
    stamp += arg + " ";
  std::string compiler = cudaCompiler(build);
  struct stat info;
  if (::stat(compiler.c_str(), &info) == 0)
    stamp += fmt::format("\n{} {}", info.st_size, info.st_mtim.tv_sec);
  return stamp;
}

/// Builds (or finds in the disk cache) and loads the library of CUDA
/// `text`; errors are the compiler's last lines.
ErrorOr<void *> loadLibrary(const std::string &text, const CUDABuild &build,
                            std::atomic<size_t> &built,
                            std::atomic<size_t> &loaded) {
  std::string key = text + "\n" + buildStamp(build);
  if (auto cached = ObjectCache::findFile(key, ".so"))
    if (void *handle = ::dlopen(cached->c_str(), RTLD_NOW | RTLD_LOCAL)) {
      ++loaded;
      return handle;
    } // a damaged entry: built again below
  TempDir dir("ein-cuda");
  if (dir.path.empty())
    return ein::Error::program("cannot create a temporary directory for a CUDA "
                               "build");
  std::string source = dir.file("kernel.cu"), library = dir.file("kernel.so"),
              log = dir.file("log.txt");
  if (!writeFileBytes(source, text.data(), text.size()))
    return ein::Error::program("cannot write the generated CUDA source to " +
                               source);
  std::string compiler = cudaCompiler(build);
  if (int rc = runProcess(cudaBuildCommand(build, source, library), log);
      rc != 0)
    return ein::Error::program(fmt::format("{} could not compile the generated "
                                           "CUDA source (exit {}):",
                                           compiler, rc))
        .withContext(lastLines(readFileText(log), 20));
  ++built;
  std::string path = ObjectCache::storeFile(key, ".so", library);
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return ein::Error::program(
        fmt::format("cannot load the built CUDA library: {}", ::dlerror()));
  return handle;
}

template <class F> bool symbol(void *handle, const char *name, F &out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  return out != nullptr;
}

/// The device, selected on first use: EIN_CUDA=emulated runs the CUDA
/// source on the CPU; otherwise this machine's GPU, through nvcc.
DeviceState &state() {
  static DeviceState *instance = [] {
    auto *s = new DeviceState;
    const char *mode = std::getenv("EIN_CUDA");
    std::string m = mode ? mode : "";
    if (!m.empty() && m != "emulated" && m != "gpu") {
      s->unusable = fmt::format("EIN_CUDA={} is not a CUDA mode; use "
                                "EIN_CUDA=gpu (the default) or "
                                "EIN_CUDA=emulated",
                                m);
      return s;
    }
    s->emulated = m == "emulated";
    if (!s->emulated && !hasNvidiaGPU()) {
      s->unusable = "no CUDA device: this machine has no NVIDIA GPU (no "
                    "/dev/nvidiactl); EIN_CUDA=emulated runs the CUDA code "
                    "on the CPU";
      return s;
    }
    auto support = emitCUDA(CheckedModule{});
    if (!support) {
      s->unusable = support.error().str("ein");
      return s;
    }
    CUDABuild build;
    build.emulated = s->emulated;
    build.sharedLibrary = true;
    std::atomic<size_t> ignored{0};
    auto handle =
        loadLibrary(*support + kSupportFunctions, build, ignored, ignored);
    if (!handle) {
      s->unusable = "the CUDA device support could not be built: " +
                    handle.error().str("ein");
      return s;
    }
    int (*device)(char *, int) = nullptr;
    if (!symbol(*handle, "ein_api_malloc", s->malloc) ||
        !symbol(*handle, "ein_api_free", s->free) ||
        !symbol(*handle, "ein_api_copy", s->copy) ||
        !symbol(*handle, "ein_api_zero", s->zero) ||
        !symbol(*handle, "ein_api_error_string", s->errorString) ||
        !symbol(*handle, "ein_api_device", device)) {
      s->unusable = "the CUDA device support library lacks its functions";
      return s;
    }
    char name[256] = {0};
    int rc = device(name, sizeof name);
    if (rc != 0) {
      s->unusable = rc < 0 ? std::string("no CUDA device is usable")
                           : fmt::format("no CUDA device is usable: {}",
                                         s->errorString(rc));
      return s;
    }
    s->name = name;
    if (auto at = s->name.rfind("(sm_"); at != std::string::npos)
      s->arch = s->name.substr(at + 1, s->name.size() - at - 2);
    return s;
  }();
  return *instance;
}

Result<DeviceState *> usable() {
  DeviceState &s = state();
  if (!s.unusable.empty())
    return usageError(s.unusable);
  return &s;
}

/// The library of CUDA `text` with shims for `functions` (name, tensor
/// count), built on first use.
Result<std::shared_ptr<Library>>
libraryFor(DeviceState &s, const std::string &key,
           const std::function<Result<std::string>()> &text,
           const std::vector<std::pair<std::string, size_t>> &functions) {
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex);
    if (auto it = s.libraries.find(key); it != s.libraries.end())
      return it->second;
  }
  std::lock_guard<std::mutex> building(s.building);
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex);
    if (auto it = s.libraries.find(key); it != s.libraries.end())
      return it->second;
  }
  auto emitted = text();
  if (!emitted)
    return emitted.error();
  std::string source = *emitted + kShimPrelude;
  for (auto &[function, count] : functions)
    source += shimText(function, count);
  CUDABuild build;
  build.emulated = s.emulated;
  build.sharedLibrary = true;
  if (!s.arch.empty())
    build.arch = s.arch;
  auto handle = loadLibrary(source, build, librariesBuilt, librariesLoaded);
  if (!handle)
    return toInfo(handle.error());
  auto library = std::make_shared<Library>();
  library->handle = *handle;
  for (auto &[function, count] : functions) {
    Shim shim = nullptr;
    if (!symbol(*handle, ("ein_api_call_" + function).c_str(), shim))
      return programError("the built CUDA library lacks the entry point of '" +
                          function + "'");
    library->shims[function] = shim;
  }
  std::unique_lock<std::shared_mutex> lock(s.mutex);
  s.libraries.emplace(key, library);
  return library;
}

/// What an entry point's EIN_ERR_* code means (ein/Target/CEntry.h).
std::string entryError(int rc) {
  switch (rc) {
  case 1:
    return "a size does not match or overflows";
  case 2:
    return "a stride is negative or overflows";
  case 3:
    return "a data pointer is null";
  case 4:
    return "a result overlaps another tensor";
  case 5:
    return "a tensor has the wrong rank";
  case 6:
    return "an index of a take is out of range";
  default:
    return fmt::format("error code {}", rc);
  }
}

Result<void> call(DeviceState &s, const Library &library,
                  const std::string &function,
                  const std::vector<const Tensor *> &tensors) {
  std::vector<void *> data;
  std::vector<int64_t> ranks;
  std::vector<const int64_t *> sizes, strides;
  for (const Tensor *t : tensors) {
    if (t->device() != api::cuda)
      return usageError("internal error: a CPU tensor given to a CUDA kernel");
    data.push_back(t->data());
    ranks.push_back(int64_t(t->shape().size()));
    sizes.push_back(t->shape().data());
    strides.push_back(t->strides().data());
  }
  int rc;
  {
    std::lock_guard<std::mutex> lock(s.running);
    rc = library.shims.at(function)(data.data(), ranks.data(), sizes.data(),
                                    strides.data());
  }
  if (rc != 0)
    return usageError(fmt::format("the CUDA kernel of '{}' refused its "
                                  "arguments: {}",
                                  function, entryError(rc)));
  return {};
}

} // namespace

Result<void *> allocate(size_t bytes) {
  auto s = usable();
  if (!s)
    return s.error();
  void *p = nullptr;
  if (int rc = (*s)->malloc(&p, bytes); rc != 0)
    return usageError(fmt::format("cannot allocate {} bytes on the CUDA "
                                  "device: {}",
                                  bytes, (*s)->errorString(rc)));
  return p;
}

void release(void *device) {
  if (device)
    state().free(device);
}

Result<void> copy(void *dst, const void *src, size_t bytes, Direction how) {
  auto s = usable();
  if (!s)
    return s.error();
  std::lock_guard<std::mutex> lock((*s)->running);
  if (int rc = (*s)->copy(dst, src, bytes, int(how)); rc != 0)
    return usageError(fmt::format("a copy of {} bytes to or from the CUDA "
                                  "device failed: {}",
                                  bytes, (*s)->errorString(rc)));
  return {};
}

Result<void> zero(void *device, size_t bytes) {
  auto s = usable();
  if (!s)
    return s.error();
  std::lock_guard<std::mutex> lock((*s)->running);
  if (int rc = (*s)->zero(device, bytes); rc != 0)
    return usageError(fmt::format("cannot zero {} bytes on the CUDA device: "
                                  "{}",
                                  bytes, (*s)->errorString(rc)));
  return {};
}

Result<void> runSource(const std::string &source,
                       const std::vector<const Tensor *> &tensors) {
  auto s = usable();
  if (!s)
    return s.error();
  auto library = libraryFor(**s, source,
                            [&]() -> Result<std::string> {
                              auto checked = checkSource(source);
                              if (!checked)
                                return checked.error();
                              auto emitted = emitCUDA(*checked);
                              if (!emitted)
                                return toInfo(emitted.error());
                              return *emitted;
                            },
                            {{kernelName, tensors.size()}});
  if (!library)
    return library.error();
  return call(**s, **library, kernelName, tensors);
}

Result<void> runModule(const std::string &key, const CheckedModule &module,
                       const std::string &function,
                       const std::vector<const Tensor *> &tensors) {
  auto s = usable();
  if (!s)
    return s.error();
  const CheckedFunction *fn = module.find(function);
  if (!fn)
    return programError(fmt::format("no function named '{}'", function));
  std::vector<std::pair<std::string, size_t>> functions{
      {function, fn->params.size() + fn->returns.size()}};
  auto library = libraryFor(
      **s, key,
      [&]() -> Result<std::string> {
        auto emitted = emitCUDA(module);
        if (!emitted)
          return toInfo(emitted.error());
        return *emitted;
      },
      functions);
  if (!library)
    return library.error();
  return call(**s, **library, function, tensors);
}

Result<std::string> deviceName() {
  auto s = usable();
  if (!s)
    return s.error();
  return (*s)->name;
}

void counts(size_t &built, size_t &loaded) {
  built = librariesBuilt.load();
  loaded = librariesLoaded.load();
}

} // namespace ein::api::detail::cudaDevice
