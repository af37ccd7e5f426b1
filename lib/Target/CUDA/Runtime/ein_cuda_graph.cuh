// Whole calls as CUDA Graphs: what a generated entry point queues for one
// set of arguments is captured once and replayed, so a call costs one
// cudaGraphLaunch instead of a launch per kernel and GEMM (einc's in-process
// calls, such as a training step, and the --time loop of ein_cuda_main.h).
#ifndef EIN_CUDA_GRAPH_CUH
#define EIN_CUDA_GRAPH_CUH

#include <cstdlib>
#include <cstring>
#include <list>
#include <string>

/// One argument set's graph.
struct EinGraphEntry {
  std::string key;
  int directCalls = 0;  // calls run without a graph so far
  bool refused = false; // its capture failed: every call runs directly
  cudaGraphExec_t exec = nullptr;
  EinGraphStatus status; // a take's counter, when the call has one
};

/// How many argument sets an entry point keeps graphs of (the most recent;
/// a training step has one, an evaluation another).
constexpr size_t kEinGraphs = 4;

/// The graphs of one entry point, most recently used first, and the stream
/// captures run on (the legacy default stream cannot capture). Kept for the
/// process's life: graphs are not destroyed at exit, after which the CUDA
/// context may be gone.
struct EinGraphCache {
  std::list<EinGraphEntry> entries;
  cudaStream_t capture = nullptr;
  size_t launches = 0; // graph launches so far
};

/// Whether calls are captured: on unless EIN_CUDA_GRAPHS=0.
inline bool ein_graphs_enabled() {
  static const bool enabled = [] {
    const char *value = std::getenv("EIN_CUDA_GRAPHS");
    return !(value && std::strcmp(value, "0") == 0);
  }();
  return enabled;
}

/// The key of a call's arguments: a graph replays their addresses, sizes
/// and strides, so any change in one is another graph.
inline std::string ein_graph_key(size_t count, void *const *data,
                                 const int64_t *ranks,
                                 const int64_t *const *sizes,
                                 const int64_t *const *strides) {
  std::string key;
  auto add = [&](const void *p, size_t bytes) {
    key.append(static_cast<const char *>(p), bytes);
  };
  for (size_t i = 0; i < count; ++i) {
    add(&data[i], sizeof data[i]);
    add(&ranks[i], sizeof ranks[i]);
    for (int64_t d = 0; d < ranks[i]; ++d) {
      add(&sizes[i][d], sizeof sizes[i][d]);
      add(&strides[i][d], sizeof strides[i][d]);
    }
  }
  return key;
}

inline void ein_graph_release(EinGraphEntry &entry) {
  if (entry.exec)
    (void)cudaGraphExecDestroy(entry.exec);
  if (entry.status.device)
    (void)cudaFree(entry.status.device);
  if (entry.status.host)
    (void)cudaFreeHost(entry.status.host);
}

/// Captures `run` on the cache's stream into `entry.exec`; leaves it null
/// (and the entry refused) when CUDA refuses: a call that waits for its
/// stream, or a call whose checks fail (nothing is queued then).
template <typename Run>
inline void ein_graph_capture(EinGraphCache &cache, EinGraphEntry &entry,
                              Run &run) {
  entry.refused = true;
  if (!cache.capture &&
      cudaStreamCreateWithFlags(&cache.capture, cudaStreamNonBlocking) !=
          cudaSuccess) {
    cache.capture = nullptr;
    (void)cudaGetLastError();
    return;
  }
  if (!entry.status.device &&
      (cudaMalloc(&entry.status.device, sizeof(unsigned long long)) !=
           cudaSuccess ||
       cudaMallocHost(reinterpret_cast<void **>(&entry.status.host),
                      sizeof(unsigned long long)) != cudaSuccess)) {
    (void)cudaGetLastError();
    return;
  }
  entry.status.used = false;
  cudaGraph_t graph = nullptr;
  // Relaxed: a library call that allocates (cuBLASLt's first use of a
  // shape) does not invalidate the capture.
  if (cudaStreamBeginCapture(cache.capture, cudaStreamCaptureModeRelaxed) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  ein_graph_status() = &entry.status;
  int rc = run(cache.capture);
  ein_graph_status() = nullptr;
  if (cudaStreamEndCapture(cache.capture, &graph) != cudaSuccess)
    graph = nullptr;
  if (graph && rc == 0 &&
      cudaGraphInstantiate(&entry.exec, graph, 0) != cudaSuccess)
    entry.exec = nullptr;
  if (graph)
    (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  entry.refused = entry.exec == nullptr;
}

/// Runs `run(stream)`, the entry point's call on a stream returning its
/// EIN_ERR_* code, for the arguments `key` names (ein_graph_key). The first
/// call of a key runs directly, which also warms up what a capture cannot
/// do (cuBLASLt's workspace, lazily loaded kernels); the second is captured
/// and launched; later ones are launched. A key whose capture failed runs
/// directly from then on: a graph is a speed-up, never a change of result.
/// A function with a take waits for its stream after a launch to read its
/// count, as it does without a graph. One caller at a time per cache (the
/// in-process library holds its device's lock).
template <typename Run>
inline int ein_graph_call(EinGraphCache &cache, std::string key,
                          cudaStream_t stream, Run &&run) {
  if (!ein_graphs_enabled())
    return run(stream);
  auto found = cache.entries.begin();
  while (found != cache.entries.end() && found->key != key)
    ++found;
  if (found != cache.entries.end()) {
    cache.entries.splice(cache.entries.begin(), cache.entries, found);
  } else {
    cache.entries.emplace_front();
    cache.entries.front().key = std::move(key);
    if (cache.entries.size() > kEinGraphs) {
      ein_graph_release(cache.entries.back());
      cache.entries.pop_back();
    }
  }
  EinGraphEntry &entry = cache.entries.front();
  if (!entry.exec) {
    if (entry.refused || entry.directCalls++ == 0)
      return run(stream);
    ein_graph_capture(cache, entry, run);
    if (!entry.exec)
      return run(stream); // nothing of the failed capture ran
  }
  EIN_CUDA_CHECK(cudaGraphLaunch(entry.exec, stream));
  ++cache.launches;
  if (!entry.status.used)
    return 0;
  EIN_CUDA_CHECK(cudaStreamSynchronize(stream));
  return *entry.status.host ? 6 /* EIN_ERR_INDEX */ : 0;
}

#endif // EIN_CUDA_GRAPH_CUH
