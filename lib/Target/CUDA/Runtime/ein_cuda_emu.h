// CUDA emulation for ein's generated .cu files: lets a host C++ compiler run
// the kernels on the CPU (blocks in sequence, a block's threads as fibers).
//
// Concatenation order (docs/cuda.md): ein_cuda_emu.h, ein_cuda_runtime.cuh,
// ein_cuda_types.cuh, ein_cuda_map.cuh, ein_cuda_reduce.cuh,
// ein_cuda_gemm.cuh. Under nvcc (__CUDACC__) this file is empty.
//
// Model: a launch runs its blocks one after another on the calling OS
// thread. The threads of a block are ucontext fibers; a thread runs until it
// reaches __syncthreads() or a warp collective, or returns, then the next
// one runs. So `__shared__` is plain `static` storage (one block is live at
// a time), and races *between* blocks, memory coalescing and timing are not
// modelled. Misuse that would hang or be undefined on a GPU (a barrier that
// not every thread of the block reaches, a shuffle whose mask names a lane
// that does not take part) aborts with a message naming the kernel's
// thread, block and barrier.
#ifndef EIN_CUDA_EMU_H
#define EIN_CUDA_EMU_H
#ifndef __CUDACC__

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <ucontext.h>
#include <utility>
#include <vector>

#define EIN_CUDA_EMULATION 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
// One block is live at a time, so block-shared memory can be static.
#define __shared__ static

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
};
struct uint3 {
  unsigned x, y, z;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};

namespace ein_emu {

/// The index registers of the running fiber; the scheduler rewrites them at
/// every switch.
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

enum class Wait { None, Block, Warp, Done };

struct Fiber {
  ucontext_t ctx;
  char *stack = nullptr;
  uint3 tid;
  Wait wait = Wait::None;
  unsigned mask = 0;      // the lanes a warp collective names
  const char *where = ""; // the barrier's source position
};

constexpr size_t kStackBytes = 64 * 1024;

struct Scheduler {
  std::vector<Fiber> fibers; // stacks allocated once, reused by every launch
  ucontext_t main;
  const std::function<void()> *body = nullptr;
  size_t current = 0;
  size_t live = 0;
  bool inKernel = false;
  const char *kernel = "";
  // Per-warp exchange slots of the shuffles and votes.
  std::vector<uint64_t> slots;

  ~Scheduler() {
    for (Fiber &f : fibers)
      std::free(f.stack);
  }
};

inline Scheduler &sched() {
  static Scheduler s;
  return s;
}

[[noreturn]] inline void misuse(const char *what) {
  Scheduler &s = sched();
  const Fiber &f = s.fibers[s.current];
  std::fprintf(stderr,
               "ein CUDA emulation: %s in kernel %s (thread (%u,%u,%u) of "
               "block (%u,%u,%u), block size %u)\n",
               what, s.kernel, f.tid.x, f.tid.y, f.tid.z, blockIdx.x,
               blockIdx.y, blockIdx.z, blockDim.x * blockDim.y * blockDim.z);
  std::fflush(stderr);
  std::abort();
}

inline void trampoline() {
  Scheduler &s = sched();
  (*s.body)();
  s.fibers[s.current].wait = Wait::Done;
  swapcontext(&s.fibers[s.current].ctx, &s.main);
}

/// Suspends the running fiber until the scheduler releases `kind`.
inline void suspend(Wait kind, unsigned mask, const char *where) {
  Scheduler &s = sched();
  if (!s.inKernel) {
    std::fprintf(stderr, "ein CUDA emulation: %s outside a kernel\n", where);
    std::abort();
  }
  Fiber &f = s.fibers[s.current];
  f.wait = kind;
  f.mask = mask;
  f.where = where;
  swapcontext(&f.ctx, &s.main);
}

inline unsigned linearTid(const uint3 &t) {
  return t.x + blockDim.x * (t.y + blockDim.y * t.z);
}

/// Releases every warp whose named lanes all wait at a warp collective;
/// aborts where one never can. Returns whether any fiber was released.
inline bool releaseWarps(size_t n) {
  Scheduler &s = sched();
  bool released = false;
  for (size_t w = 0; w * 32 < n; ++w) {
    size_t lo = w * 32, hi = std::min(n, lo + 32);
    bool any = false, all = true;
    unsigned mask = 0;
    for (size_t i = lo; i < hi; ++i)
      if (s.fibers[i].wait == Wait::Warp) {
        any = true;
        mask = s.fibers[i].mask;
      }
    if (!any)
      continue;
    for (size_t i = lo; i < hi; ++i) {
      bool named = (mask >> (i - lo)) & 1u;
      if (named && s.fibers[i].wait != Wait::Warp) {
        s.current = i;
        misuse(s.fibers[i].wait == Wait::Done
                   ? "a warp collective names a lane that has exited"
                   : "a warp collective's lanes wait at different barriers");
      }
      all = all && (!named || s.fibers[i].wait == Wait::Warp);
    }
    if (all) {
      for (size_t i = lo; i < hi; ++i)
        if (s.fibers[i].wait == Wait::Warp)
          s.fibers[i].wait = Wait::None;
      released = true;
    }
  }
  return released;
}

/// Runs one block: every fiber until all have returned.
inline void runBlock(size_t n) {
  Scheduler &s = sched();
  for (size_t i = 0; i < n; ++i) {
    Fiber &f = s.fibers[i];
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, trampoline, 0);
    f.wait = Wait::None;
    f.tid =
        uint3{unsigned(i % blockDim.x), unsigned(i / blockDim.x % blockDim.y),
              unsigned(i / (blockDim.x * blockDim.y))};
  }
  s.live = n;
  for (;;) {
    for (size_t i = 0; i < n; ++i) {
      if (s.fibers[i].wait != Wait::None)
        continue;
      s.current = i;
      threadIdx = s.fibers[i].tid;
      swapcontext(&s.main, &s.fibers[i].ctx);
    }
    if (releaseWarps(n))
      continue;
    size_t done = 0, atBarrier = 0;
    for (size_t i = 0; i < n; ++i) {
      done += s.fibers[i].wait == Wait::Done;
      atBarrier += s.fibers[i].wait == Wait::Block;
    }
    if (done == n)
      return;
    // Every thread that has not returned waits at __syncthreads.
    for (size_t i = 0; i < n; ++i)
      if (s.fibers[i].wait == Wait::Block &&
          std::strcmp(s.fibers[i].where, s.fibers[0].where) != 0 &&
          s.fibers[0].wait == Wait::Block) {
        s.current = i;
        misuse("threads of one block wait at different __syncthreads");
      }
    if (done != 0) {
      for (size_t i = 0; i < n; ++i)
        if (s.fibers[i].wait == Wait::Block)
          s.current = i;
      std::fprintf(stderr,
                   "ein CUDA emulation: %zu of %zu threads returned "
                   "while the others wait at __syncthreads (%s)\n",
                   done, n, s.fibers[s.current].where);
      misuse("barrier not reached by every thread of the block");
    }
    (void)atBarrier;
    for (size_t i = 0; i < n; ++i)
      s.fibers[i].wait = Wait::None;
  }
}

/// A stream capture under way on this thread (cudaStreamBeginCapture to
/// cudaStreamEndCapture): the work queued meanwhile, which each
/// cudaGraphLaunch of the graph runs, and the stream-ordered allocations
/// freed in it, freed with the graph instead, since every replay uses them
/// again. A call that a real capture refuses (a wait for the stream, a
/// synchronous copy) makes it `invalid`, as CUDA invalidates the capture.
struct Capture {
  std::vector<std::function<void()>> work;
  std::vector<void *> owned;
  bool invalid = false;
  ~Capture() {
    for (void *p : owned)
      std::free(p);
  }
};

inline Capture *&capturing() {
  static thread_local Capture *capture = nullptr;
  return capture;
}

/// Runs `work` now, or records it while this thread captures.
inline void enqueue(std::function<void()> work) {
  if (Capture *c = capturing())
    c->work.push_back(std::move(work));
  else
    work();
}

/// The emulated `kernel<<<grid, block>>>(args...)`: `body` calls the kernel.
/// While the thread captures, the launch is recorded (with a copy of
/// `body`, which holds the kernel's arguments by value).
inline void launch(const char *name, dim3 grid, dim3 block,
                   const std::function<void()> &body) {
  if (capturing()) {
    enqueue([name, grid, block, body] { launch(name, grid, block, body); });
    return;
  }
  Scheduler &s = sched();
  size_t n = size_t(block.x) * block.y * block.z;
  if (n == 0 || n > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535 ||
      grid.x == 0 || grid.y == 0 || grid.z == 0) {
    std::fprintf(stderr,
                 "ein CUDA emulation: invalid launch of %s: grid (%u,%u,%u) "
                 "block (%u,%u,%u)\n",
                 name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
    std::abort();
  }
  if (s.inKernel) {
    std::fprintf(stderr, "ein CUDA emulation: nested launch of %s\n", name);
    std::abort();
  }
  while (s.fibers.size() < n) {
    s.fibers.emplace_back();
    s.fibers.back().stack = static_cast<char *>(std::malloc(kStackBytes));
  }
  s.slots.assign(((n + 31) / 32) * 32, 0);
  s.body = &body;
  s.kernel = name;
  s.inKernel = true;
  gridDim = grid;
  blockDim = block;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = uint3{x, y, z};
        runBlock(n);
      }
  s.inKernel = false;
}

/// launch() of `kernel(args...)` with the arguments' values now.
template <typename Kernel, typename... Args>
inline void launchCopying(const char *name, dim3 grid, dim3 block,
                          Kernel kernel, Args... args) {
  launch(name, grid, block, [=]() mutable { kernel(args...); });
}

inline void syncthreads(const char *where) { suspend(Wait::Block, 0, where); }

inline unsigned lane() { return linearTid(threadIdx) % 32; }
inline size_t warpBase() { return linearTid(threadIdx) / 32 * 32; }

inline void syncwarp(unsigned mask, const char *where) {
  suspend(Wait::Warp, mask, where);
}

/// One warp exchange: every named lane publishes `v`, then reads lane
/// `src`'s (its own when `src` is out of range).
template <typename T>
T exchange(unsigned mask, T v, int src, const char *where) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  Scheduler &s = sched();
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  size_t base = warpBase();
  s.slots[base + lane()] = bits;
  syncwarp(mask, where);
  T out = v;
  if (src >= 0 && src < 32 && ((mask >> src) & 1u))
    std::memcpy(&out, &s.slots[base + src], sizeof(T));
  syncwarp(mask, where);
  return out;
}

} // namespace ein_emu

#define EIN_EMU_STR2(x) #x
#define EIN_EMU_STR(x) EIN_EMU_STR2(x)
#define EIN_EMU_WHERE __FILE__ ":" EIN_EMU_STR(__LINE__)

#define threadIdx (::ein_emu::threadIdx)
#define blockIdx (::ein_emu::blockIdx)
#define blockDim (::ein_emu::blockDim)
#define gridDim (::ein_emu::gridDim)
#define warpSize 32
#define __syncthreads() ::ein_emu::syncthreads(EIN_EMU_WHERE)

template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  int l = int(::ein_emu::lane());
  return ::ein_emu::exchange(mask, v, (l & ~(width - 1)) + (src % width),
                             "__shfl_sync");
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  int l = int(::ein_emu::lane());
  int src = l + int(delta);
  if ((src & ~(width - 1)) != (l & ~(width - 1)))
    src = l; // past the segment: the caller's own value, as on a GPU
  return ::ein_emu::exchange(mask, v, src, "__shfl_down_sync");
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  int l = int(::ein_emu::lane());
  int src = l ^ laneMask;
  if ((src & ~(width - 1)) != (l & ~(width - 1)))
    src = l;
  return ::ein_emu::exchange(mask, v, src, "__shfl_xor_sync");
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::ein_emu::syncwarp(mask, "__syncwarp");
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  ::ein_emu::Scheduler &s = ::ein_emu::sched();
  size_t base = ::ein_emu::warpBase();
  s.slots[base + ::ein_emu::lane()] = predicate != 0;
  ::ein_emu::syncwarp(mask, "__ballot_sync");
  unsigned out = 0;
  for (unsigned i = 0; i < 32; ++i)
    if (((mask >> i) & 1u) && base + i < s.slots.size() && s.slots[base + i])
      out |= 1u << i;
  ::ein_emu::syncwarp(mask, "__ballot_sync");
  return out;
}

// Atomics: one OS thread runs every fiber, and a fiber is never preempted
// between the read and the write.
template <typename T> inline T atomicAdd(T *p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}
template <typename T> inline T atomicMax(T *p, T v) {
  T old = *p;
  *p = old < v ? v : old;
  return old;
}
template <typename T> inline T __ldg(const T *p) { return *p; }

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline int __float_as_int(float x) {
  int i;
  std::memcpy(&i, &x, 4);
  return i;
}
inline unsigned __float_as_uint(float x) {
  unsigned i;
  std::memcpy(&i, &x, 4);
  return i;
}
inline float __uint_as_float(unsigned x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline long long __double_as_longlong(double x) {
  long long i;
  std::memcpy(&i, &x, 8);
  return i;
}
inline double __longlong_as_double(long long x) {
  double d;
  std::memcpy(&d, &x, 8);
  return d;
}
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return unsigned((uint64_t(a) * b) >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a,
                                     unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

// The host API the runtime uses, over host memory. Streams are nominal:
// every call completes before it returns, except while the thread captures
// a graph (below), when the work is recorded instead.
typedef int cudaError_t;
enum : int {
  cudaSuccess = 0,
  cudaErrorMemoryAllocation = 2,
  cudaErrorIllegalState = 401,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901
};
typedef struct ein_emu_stream *cudaStream_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
inline cudaError_t cudaMalloc(void **p, size_t bytes) {
  *p = std::malloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <typename T> inline cudaError_t cudaMalloc(T **p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void **>(p), bytes);
}
inline cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t) {
  return cudaMalloc(p, bytes);
}
template <typename T>
inline cudaError_t cudaMallocAsync(T **p, size_t bytes, cudaStream_t s) {
  return cudaMallocAsync(reinterpret_cast<void **>(p), bytes, s);
}
inline cudaError_t cudaFree(void *p) {
  std::free(p);
  return cudaSuccess;
}
/// A stream-ordered free while capturing frees with the graph (replays use
/// the memory again).
inline cudaError_t cudaFreeAsync(void *p, cudaStream_t) {
  if (ein_emu::Capture *c = ein_emu::capturing()) {
    c->owned.push_back(p);
    return cudaSuccess;
  }
  return cudaFree(p);
}
/// The pinned host allocations (cudaMallocHost): the only host memory a
/// captured copy may read or write, as in CUDA, where a graph's copy node
/// cannot reach pageable memory (a copy from the stack would read it at
/// every replay, long after the call).
inline std::vector<std::pair<const char *, size_t>> &ein_emu_pinned() {
  static std::vector<std::pair<const char *, size_t>> pinned;
  return pinned;
}
inline bool ein_emu_is_pinned(const void *p, size_t n) {
  const char *c = static_cast<const char *>(p);
  for (const auto &[base, bytes] : ein_emu_pinned())
    if (c >= base && c + n <= base + bytes)
      return true;
  return false;
}
inline cudaError_t cudaMallocHost(void **p, size_t bytes) {
  cudaError_t e = cudaMalloc(p, bytes);
  if (e == cudaSuccess)
    ein_emu_pinned().push_back({static_cast<const char *>(*p), bytes});
  return e;
}
inline cudaError_t cudaFreeHost(void *p) {
  auto &pinned = ein_emu_pinned();
  for (size_t i = 0; i < pinned.size(); ++i)
    if (pinned[i].first == p) {
      pinned.erase(pinned.begin() + i);
      break;
    }
  return cudaFree(p);
}
/// A call a capture refuses: the capture is invalidated, as CUDA's is.
inline cudaError_t ein_emu_refused_in_capture() {
  ein_emu::capturing()->invalid = true;
  return cudaErrorStreamCaptureUnsupported;
}
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n,
                              cudaMemcpyKind) {
  if (ein_emu::capturing())
    return ein_emu_refused_in_capture();
  if (n)
    std::memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n,
                                   cudaMemcpyKind kind,
                                   cudaStream_t = nullptr) {
  if (ein_emu::capturing() &&
      ((kind == cudaMemcpyHostToDevice && !ein_emu_is_pinned(s, n)) ||
       (kind == cudaMemcpyDeviceToHost && !ein_emu_is_pinned(d, n))))
    return ein_emu_refused_in_capture();
  ein_emu::enqueue([d, s, n] {
    if (n)
      std::memmove(d, s, n);
  });
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void *d, int v, size_t n) {
  if (ein_emu::capturing())
    return ein_emu_refused_in_capture();
  std::memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n,
                                   cudaStream_t = nullptr) {
  ein_emu::enqueue([d, v, n] { std::memset(d, v, n); });
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return ein_emu::capturing() ? ein_emu_refused_in_capture() : cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t *s) {
  *s = nullptr; // one nominal stream
  return cudaSuccess;
}
enum : unsigned { cudaStreamDefault = 0, cudaStreamNonBlocking = 1 };
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
  return cudaStreamCreate(s);
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }

// CUDA Graphs: a capture records what this thread queues (ein_emu::Capture);
// a graph and its executable share the record, and a launch runs it.
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal,
  cudaStreamCaptureModeThreadLocal,
  cudaStreamCaptureModeRelaxed
};
struct ein_emu_graph {
  std::shared_ptr<ein_emu::Capture> record;
};
typedef ein_emu_graph *cudaGraph_t;
typedef ein_emu_graph *cudaGraphExec_t;
inline cudaError_t cudaStreamBeginCapture(cudaStream_t,
                                          cudaStreamCaptureMode) {
  if (ein_emu::capturing())
    return cudaErrorIllegalState;
  ein_emu::capturing() = new ein_emu::Capture;
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *graph) {
  std::shared_ptr<ein_emu::Capture> record(ein_emu::capturing());
  if (!record)
    return cudaErrorIllegalState;
  ein_emu::capturing() = nullptr;
  *graph = nullptr;
  if (record->invalid)
    return cudaErrorStreamCaptureInvalidated;
  *graph = new ein_emu_graph{record};
  return cudaSuccess;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec,
                                        cudaGraph_t graph,
                                        unsigned long long = 0) {
  *exec = new ein_emu_graph{graph->record};
  return cudaSuccess;
}
/// The number of graph launches so far (the runtime's tests read it).
inline size_t &ein_emu_graph_launches() {
  static size_t launches = 0;
  return launches;
}
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  ++ein_emu_graph_launches();
  for (const std::function<void()> &work : exec->record->work)
    ein_emu::enqueue(work);
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline const char *cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess                   ? "no error"
         : e == cudaErrorMemoryAllocation   ? "out of memory"
         : e == cudaErrorStreamCaptureUnsupported
             ? "operation not permitted when stream is capturing"
         : e == cudaErrorStreamCaptureInvalidated
             ? "operation failed due to a previous error during capture"
             : "emulated CUDA error";
}

/// kernel<<<grid, block, 0, stream>>>(args...). `kernel` must be one token
/// (a name or a pointer variable, not `k<A, B>`: bind a template instance to
/// a variable first, as the runtime's launchers do).
/// The arguments are evaluated and copied at the launch, as CUDA copies
/// them, so that a captured launch (a CUDA Graph) reads what was passed,
/// not the launcher's variables, gone by the time the graph runs.
#define EIN_LAUNCH(kernel, grid, block, stream, ...)                           \
  ::ein_emu::launchCopying(#kernel, (grid), (block), kernel, __VA_ARGS__)

#endif // __CUDACC__
#endif // EIN_CUDA_EMU_H
