// The CUDA targets' shared libraries: generated CUDA source plus C-ABI shims,
// built by nvcc for this machine's GPU or by the host compiler under the
// runtime's emulation, loaded with dlopen and cached on disk by their text;
// and the device support library (memory, copies, the device's name) that
// every process using them loads once.
#include "SharedLibrary.h"

#include "ein/Engine/ObjectCache.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Support/Process.h"
#include "ein/Target/CUDA/Build.h"
#include "ein/Target/CUDA/Device.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <optional>

namespace ein {

namespace {

/// The entry point's C-ABI, for any number of tensors: a shim appended to
/// every library's source calls ein_NAME with the i-th tensor's (data,
/// rank, sizes, strides), then the default stream.
using Shim = int (*)(void *const *data, const int64_t *ranks,
                     const int64_t *const *sizes,
                     const int64_t *const *strides);

/// The support library's functions, appended to the runtime's source.
constexpr const char *kSupportFunctions = R"cu(
/* The device support of the CUDA targets (lib/Target/CUDA/SharedLibrary.cpp). */
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
/* The training loop's element-wise steps (DeviceMemory, ein/Target/
   DeviceMemory.h), on the default stream; each waits for its kernel and
   returns its error. */
#define EIN_TRAIN_EACH(i, n)                                                   \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);    \
       i += (int64_t)gridDim.x * blockDim.x)
template <typename T> __global__ void ein_train_scale(T *p, int64_t n, T f) {
  EIN_TRAIN_EACH(i, n) p[i] *= f;
}
template <typename T>
__global__ void ein_train_add(T *s, const T *p, int64_t n) {
  EIN_TRAIN_EACH(i, n) s[i] += p[i];
}
template <typename N>
__global__ void ein_train_widen(float *s, const N *p, int64_t n, int add) {
  EIN_TRAIN_EACH(i, n) s[i] = (add ? s[i] : 0.0f) + ein_to_f32(p[i]);
}
template <typename N>
__global__ void ein_train_narrow(N *o, const float *m, int64_t n) {
  EIN_TRAIN_EACH(i, n) o[i] = ein_cvt<N>(m[i]);
}
/* One block: thread t sums elements t, t + 256, ... in f64, then a tree in
   shared memory; the same order on every run. */
template <typename T>
__global__ void ein_train_squares(const T *p, int64_t n, double *out) {
  __shared__ double part[256];
  unsigned t = threadIdx.x;
  double s = 0;
  for (int64_t i = t; i < n; i += 256) {
    double v = (double)p[i];
    s += v * v;
  }
  part[t] = s;
  __syncthreads();
  for (unsigned w = 128; w > 0; w >>= 1) {
    if (t < w)
      part[t] += part[t + w];
    __syncthreads();
  }
  if (t == 0)
    *out = part[0];
}
static int ein_train_done() {
  cudaError_t e = cudaGetLastError();
  return (int)(e != cudaSuccess ? e : cudaDeviceSynchronize());
}
/* type: 0 f32, 1 f64, 2 bf16, 3 f16 (DeviceMemory's order). */
extern "C" int ein_api_train_scale(void *p, int64_t n, int type, double f) {
  const unsigned threads = 256;
  if (type == 1) {
    auto k = ein_train_scale<double>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (double *)p, n, f);
  } else {
    auto k = ein_train_scale<float>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (float *)p, n, (float)f);
  }
  return ein_train_done();
}
extern "C" int ein_api_train_accumulate(void *s, const void *p, int64_t n,
                                        int type, int add) {
  const unsigned threads = 256;
  if (type == 0) {
    auto k = ein_train_add<float>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (float *)s, (const float *)p, n);
  } else if (type == 1) {
    auto k = ein_train_add<double>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (double *)s, (const double *)p, n);
  } else if (type == 2) {
    auto k = ein_train_widen<ein_bf16_t>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (float *)s, (const ein_bf16_t *)p, n, add);
  } else {
    auto k = ein_train_widen<ein_f16_t>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (float *)s, (const ein_f16_t *)p, n, add);
  }
  return ein_train_done();
}
extern "C" int ein_api_train_narrow(void *o, const void *m, int64_t n,
                                    int type) {
  const unsigned threads = 256;
  if (type == 2) {
    auto k = ein_train_narrow<ein_bf16_t>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (ein_bf16_t *)o, (const float *)m, n);
  } else {
    auto k = ein_train_narrow<ein_f16_t>;
    EIN_LAUNCH(k, ein_grid_for(n, threads), threads, (cudaStream_t)0,
               (ein_f16_t *)o, (const float *)m, n);
  }
  return ein_train_done();
}
/* The sum of squares into *out (device memory). */
extern "C" int ein_api_train_squares(const void *p, int64_t n, int type,
                                     double *out) {
  if (type == 1) {
    auto k = ein_train_squares<double>;
    EIN_LAUNCH(k, 1, 256, (cudaStream_t)0, (const double *)p, n, out);
  } else {
    auto k = ein_train_squares<float>;
    EIN_LAUNCH(k, 1, 256, (cudaStream_t)0, (const float *)p, n, out);
  }
  return ein_train_done();
}
/* The default stream's state, polled by the NCCL communicator (NCCL.h). */
extern "C" int ein_api_stream_query(void) {
#ifdef __CUDACC__
  return (int)cudaStreamQuery((cudaStream_t)0);
#else
  return 0; /* the emulation runs each call to its end */
#endif
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

/// The C entry point the library's callers use. A function without
/// collectives runs as a CUDA Graph per argument set (ein_cuda_graph.cuh):
/// a training step's hundreds of launches become one. A sharded one calls
/// its collectives, which wait for the stream, and runs directly.
std::string shimText(const std::string &function, size_t tensors,
                     bool collectives) {
  std::string args;
  for (size_t i = 0; i < tensors; ++i)
    args += fmt::format("ein_api_ptr{{d[{0}]}}, r[{0}], z[{0}], s[{0}], ", i);
  std::string head = fmt::format(
      "extern \"C\" int ein_api_call_{0}(void *const *d, const int64_t *r, "
      "const int64_t *const *z, const int64_t *const *s) {{\n",
      function);
  if (collectives)
    return head + fmt::format("  return ein_{0}({1}(cudaStream_t)0);\n}}\n",
                              function, args);
  return fmt::format("static EinGraphCache ein_api_graphs_{0};\n", function) +
         head +
         fmt::format("  return ein_graph_call(ein_api_graphs_{0}, "
                     "ein_graph_key({2}, d, r, z, s), (cudaStream_t)0,\n"
                     "      [&](cudaStream_t stream) {{ return ein_{0}({1}"
                     "stream); }});\n}}\n",
                     function, args, tensors);
}

/// Builds and loads the library of CUDA `text`, or (with `diskCache`) finds
/// it in the disk cache, keyed by the text and the build; `*fromDisk` says
/// which. Errors are the compiler's last lines.
ErrorOr<void *> loadLibrary(const std::string &text, const CUDABuild &build,
                            bool diskCache, bool *fromDisk) {
  *fromDisk = false;
  std::string key = text + "\n" + cudaBuildStamp(build);
  if (diskCache)
    if (auto cached = ObjectCache::findFile(key, ".so"))
      if (void *handle = ::dlopen(cached->c_str(), RTLD_NOW | RTLD_LOCAL)) {
        *fromDisk = true;
        return handle;
      } // a damaged entry: built again below
  TempDir dir("ein-cuda");
  if (dir.path.empty())
    return Error::program("cannot create a temporary directory for a CUDA "
                          "build");
  std::string library = dir.file("kernel.so");
  if (auto built =
          compileCUDASource(build, text, dir.file("kernel.cu"), library);
      !built)
    return built.error();
  // Loaded from the cache, or (cache off) from the temporary directory: a
  // loaded library outlives its file.
  std::string path =
      diskCache ? ObjectCache::storeFile(key, ".so", library) : library;
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return Error::program(
        fmt::format("cannot load the built CUDA library: {}", ::dlerror()));
  return handle;
}

template <class F> bool symbol(void *handle, const char *name, F &out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  return out != nullptr;
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
  case 7:
    return "its collectives have no communicators (ein_api_set_collectives)";
  default:
    return fmt::format("error code {}", rc);
  }
}

/// The support library of `emulated` mode, loaded into `device`; the error
/// says why the device cannot be used.
ErrorOr<void> loadSupport(CUDADevice &device) {
  if (!device.emulated && !hasNvidiaGPU())
    return Error::usage("no CUDA device: this machine has no NVIDIA GPU (no "
                        "/dev/nvidiactl)");
  auto runtime = emitCUDA(CheckedModule{});
  if (!runtime)
    return Error::usage(runtime.error().str("ein"));
  CUDABuild build;
  build.emulated = device.emulated;
  build.sharedLibrary = true;
  bool fromDisk = false;
  auto handle = loadLibrary(*runtime + kSupportFunctions, build,
                            /*diskCache=*/true, &fromDisk);
  if (!handle)
    return Error::usage("the CUDA device support could not be built: " +
                        handle.error().str("ein"));
  int (*name)(char *, int) = nullptr;
  if (!symbol(*handle, "ein_api_malloc", device.malloc) ||
      !symbol(*handle, "ein_api_free", device.free) ||
      !symbol(*handle, "ein_api_copy", device.copy) ||
      !symbol(*handle, "ein_api_zero", device.zero) ||
      !symbol(*handle, "ein_api_error_string", device.errorString) ||
      !symbol(*handle, "ein_api_train_scale", device.trainScale) ||
      !symbol(*handle, "ein_api_train_accumulate", device.trainAccumulate) ||
      !symbol(*handle, "ein_api_train_narrow", device.trainNarrow) ||
      !symbol(*handle, "ein_api_train_squares", device.trainSquares) ||
      !symbol(*handle, "ein_api_stream_query", device.streamQuery) ||
      !symbol(*handle, "ein_api_device", name))
    return Error::usage("the CUDA device support library lacks its "
                        "functions");
  char text[256] = {0};
  if (int rc = name(text, sizeof text); rc != 0)
    return Error::usage(rc < 0 ? std::string("no CUDA device is usable")
                               : fmt::format("no CUDA device is usable: {}",
                                             device.errorString(rc)));
  device.name = text;
  if (auto at = device.name.rfind("(sm_"); at != std::string::npos)
    device.arch = device.name.substr(at + 1, device.name.size() - at - 2);
  return {};
}

/// The device's lock (CUDADevice::running) the calling thread holds while
/// its library's entry point runs, released while a compiled collective
/// waits for the other ranks: simulated ranks share the device, and one
/// holding it in a collective would keep the others from arriving.
thread_local std::unique_lock<std::mutex> *heldDevice = nullptr;

/// Runs a collective of CollectiveCalls.h without the device's lock.
struct DeviceReleased {
  DeviceReleased() {
    if (heldDevice)
      heldDevice->unlock();
  }
  ~DeviceReleased() {
    if (heldDevice)
      heldDevice->lock();
  }
};
void allReduceReleased(int64_t data, int64_t count, int32_t type, int32_t op,
                       int32_t axis) {
  DeviceReleased released;
  ein_comm_all_reduce(data, count, type, op, axis);
}
void reduceScatterReleased(int64_t send, int64_t recv, int64_t total,
                           int32_t type, int32_t op, int32_t axis) {
  DeviceReleased released;
  ein_comm_reduce_scatter(send, recv, total, type, op, axis);
}

/// Gives a library's generated collectives (Runtime/ein_cuda_comm.cuh) the
/// entry points of CollectiveCalls.h, which run on the calling rank's
/// CollectiveScope: its device communicators.
ErrorOr<void> installCollectives(void *handle) {
  using Reduce = void (*)(int64_t, int64_t, int32_t, int32_t, int32_t);
  using Scatter =
      void (*)(int64_t, int64_t, int64_t, int32_t, int32_t, int32_t);
  using Rank = int64_t (*)(int32_t);
  void (*install)(Reduce, Scatter, Rank) = nullptr;
  if (!symbol(handle, "ein_api_set_collectives", install))
    return Error::program("the built CUDA library lacks "
                          "ein_api_set_collectives");
  install(allReduceReleased, reduceScatterReleased, ein_comm_axis_rank);
  return {};
}

/// A loaded library of one function.
struct LibraryArtifact final : Artifact {
  CUDADevice *device = nullptr;
  Shim shim = nullptr;
  std::string function;
  /// Built with a sharded program's collectives: called on a rank only.
  bool collectives = false;
  ArtifactKind kind() const override { return ArtifactKind::SharedLibrary; }
};

/// Calls the library's entry point on device tensors. call() on host
/// tensors is refused: the library reads device memory only (a client
/// copies its tensors there first, as the C++ API does with to(cuda)).
struct LibraryCallable final : Callable {
  std::shared_ptr<LibraryArtifact> library;

  ErrorOr<void> call(const std::vector<const runtime::HostTensor *> &,
                     const std::vector<runtime::HostTensor *> &,
                     const Bindings &, int64_t *) override {
    return Error::program(fmt::format(
        "the in-process CUDA library of '{}' runs on device memory: it is "
        "called through callStrided with device pointers, not on host "
        "tensors",
        library->function));
  }

  ErrorOr<void> callStrided(const StridedArgument *args, size_t count,
                            const Bindings *, int64_t *indexStatus) override {
    // Most calls have a few tensors: their arrays live on the stack.
    constexpr size_t kInline = 16;
    void *dataInline[kInline];
    int64_t ranksInline[kInline];
    const int64_t *sizesInline[kInline], *stridesInline[kInline];
    std::vector<void *> dataHeap;
    std::vector<int64_t> ranksHeap;
    std::vector<const int64_t *> sizesHeap, stridesHeap;
    void **data = dataInline;
    int64_t *ranks = ranksInline;
    const int64_t **sizes = sizesInline, **strides = stridesInline;
    if (count > kInline) {
      dataHeap.resize(count);
      ranksHeap.resize(count);
      sizesHeap.resize(count);
      stridesHeap.resize(count);
      data = dataHeap.data();
      ranks = ranksHeap.data();
      sizes = sizesHeap.data();
      strides = stridesHeap.data();
    }
    for (size_t i = 0; i < count; ++i) {
      data[i] = args[i].data;
      ranks[i] = int64_t(args[i].rank);
      sizes[i] = args[i].sizes;
      strides[i] = args[i].strides;
    }
    if (indexStatus)
      *indexStatus = 0;
    if (library->collectives)
      if (auto inScope = CollectiveScope::required(library->function); !inScope)
        return inScope;
    int rc;
    {
      std::unique_lock<std::mutex> lock(library->device->running);
      heldDevice = &lock;
      rc = library->shim(data, ranks, sizes, strides);
      heldDevice = nullptr;
    }
    if (rc == 0)
      return {};
    if (rc == 6 && indexStatus)
      *indexStatus = -1; // some id was out of range; the entry says not which
    return Error::usage(fmt::format("the CUDA kernel of '{}' refused its "
                                    "arguments: {}",
                                    library->function, entryError(rc)));
  }
};

} // namespace

ErrorOr<CUDADevice *> loadCUDADevice(bool emulated) {
  struct Loaded {
    std::once_flag once;
    CUDADevice *device = nullptr;
    std::optional<Error> error;
  };
  // Never destroyed: libraries loaded into the process use the device
  // until its end.
  static Loaded *modes = new Loaded[2];
  Loaded &mode = modes[emulated ? 1 : 0];
  std::call_once(mode.once, [&] {
    auto *device = new CUDADevice;
    device->emulated = emulated;
    if (auto loaded = loadSupport(*device); !loaded) {
      mode.error = loaded.error();
      delete device;
      return;
    }
    mode.device = device;
  });
  if (mode.error)
    return *mode.error;
  return mode.device;
}

ErrorOr<std::shared_ptr<Artifact>>
buildSharedLibrary(const CheckedModule &module, const std::string &function,
                   const TargetOptions &options, bool emulated) {
  auto device = loadCUDADevice(emulated);
  if (!device)
    return device.error();
  const CheckedFunction *fn = module.find(function);
  if (!fn)
    return Error::program(fmt::format("no function named '{}'", function));
  CUDAOptions cuda;
  cuda.allowTf32 = options.allowTf32;
  cuda.fusion = options.cpu.fusion;
  cuda.mesh = options.mesh;
  auto emitted = emitCUDA(module, cuda);
  if (!emitted)
    return emitted.error();
  std::string source =
      *emitted + kShimPrelude +
      shimText(function, fn->params.size() + fn->returns.size(),
               options.mesh != nullptr);
  CUDABuild build;
  build.emulated = emulated;
  build.sharedLibrary = true;
  if (!(*device)->arch.empty())
    build.arch = (*device)->arch;
  auto artifact = std::make_shared<LibraryArtifact>();
  auto handle = loadLibrary(source, build, !options.diskCacheKey.empty(),
                            &artifact->fromDiskCache);
  if (!handle)
    return handle.error();
  if (!symbol(*handle, ("ein_api_call_" + function).c_str(), artifact->shim))
    return Error::program("the built CUDA library lacks the entry point of '" +
                          function + "'");
  if (options.mesh)
    if (auto installed = installCollectives(*handle); !installed)
      return installed.error();
  artifact->device = *device;
  artifact->function = function;
  artifact->collectives = options.mesh != nullptr;
  return std::shared_ptr<Artifact>(std::move(artifact));
}

std::shared_ptr<Callable>
sharedLibraryCallable(const std::shared_ptr<Artifact> &artifact) {
  auto library = std::dynamic_pointer_cast<LibraryArtifact>(artifact);
  if (!library)
    return nullptr;
  auto callable = std::make_shared<LibraryCallable>();
  callable->library = std::move(library);
  return callable;
}

} // namespace ein
