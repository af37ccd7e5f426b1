// The NCCL communicator (lib/Target/CUDA/NCCL.h) on a real GPU, for
// scripts/gpu-check.sh: built by nvcc on the GPU machine (which has no LLVM,
// so no einc) from the communicator's own sources. Ranks are threads of this
// process (simulated ranks carry the unique id), each with a stream of its
// own on device 0; every collective's result, copied back, must equal bit
// for bit what the host communicator gives on the same inputs (the CPU
// results: with 1 or 2 ranks a sum has one rounding in any order). Then a
// rank that never arrives: the other's call must fail within the timeout
// (ncclCommAbort), not hang.
//
//   nccl-check RANKS    exit 0 when all agree; 3 when skipped (said why)
//
// Built with -DEIN_MESH_CHECK and the generated CUDA source of a sharded MLP
// (`einc emit --stage=cuda` of test/run/Inputs/mesh/mlp.ein on tp=RANKS,
// prepared by gpu-check.sh --prepare), it also runs that source's function
// on RANKS ranks of the GPU, its all-reduce on each rank's NCCL communicator
// through CollectiveCalls.h's entry points, as einc's in-process loader
// installs them:
//
//   nccl-check mesh RANKS DIR    DIR holds the inputs and the CPU's result
#include "../lib/Target/CUDA/NCCL.h"

#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/HostTensor.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace ein;
using runtime::StorageType;

// The two element facts the communicator needs from HostTensor.cpp, from
// the same table (that file pulls in the whole shape library).
namespace ein::runtime {
unsigned storageBytes(StorageType type) {
  switch (type) {
#define EIN_DTYPE(Enum, Name, Bytes, ...)                                      \
  case StorageType::Enum:                                                      \
    return Bytes;
#include "ein/Shape/DTypes.def"
  }
  return 0;
}
const char *storageName(StorageType type) {
  switch (type) {
#define EIN_DTYPE(Enum, Name, ...)                                             \
  case StorageType::Enum:                                                      \
    return Name;
#include "ein/Shape/DTypes.def"
  }
  return "?";
}
} // namespace ein::runtime

namespace {

std::mutex printing;
int failures = 0;

void report(bool ok, const std::string &what) {
  std::lock_guard<std::mutex> lock(printing);
  std::printf("  %s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  failures += ok ? 0 : 1;
}

/// Rank r's value i: varied, some negative.
float value(int rank, int64_t i) {
  return float(((rank * 7919 + i * 104729) % 2003) - 1000) / 37.0f;
}

/// Runs every collective on device buffers through `nccl` and on host
/// buffers through `host`, and compares.
void checkRank(Communicator &host, Communicator &nccl, cudaStream_t stream) {
  const int n = host.size(), me = host.rank();
  const int64_t count = (1 << 20) + 6; // 4 MiB of f32, a multiple of 1, 2
  std::vector<float> in(count * n), ref(count * n), got(count * n);
  for (int64_t i = 0; i < count * n; ++i)
    in[i] = value(me, i);
  size_t bytes = in.size() * sizeof(float);
  void *send = nullptr, *recv = nullptr;
  if (cudaMalloc(&send, bytes) != cudaSuccess ||
      cudaMalloc(&recv, bytes) != cudaSuccess) {
    report(false, "cudaMalloc");
    return;
  }
  auto upload = [&] {
    cudaMemcpy(send, in.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemset(recv, 0, bytes);
  };
  auto compare = [&](const char *what, void *device, size_t elements) {
    cudaMemcpy(got.data(), device, elements * sizeof(float),
               cudaMemcpyDeviceToHost);
    bool same =
        std::memcmp(got.data(), ref.data(), elements * sizeof(float)) == 0;
    report(same, fmt::format("rank {}: {} of {} f32 equals the host's", me,
                             what, elements));
  };
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    upload();
    ref = in;
    auto h = host.allReduce(ref.data(), StorageType::F32, count, op);
    auto d = nccl.allReduce(send, StorageType::F32, count, op);
    if (!h || !d) {
      report(false, (!d ? d : h).error().message);
      continue;
    }
    compare(fmt::format("all-reduce ({})", reduceOpName(op)).c_str(), send,
            count);
  }
  upload();
  if (auto h =
          host.allGather(in.data(), ref.data(), StorageType::F32, count / n),
      d = nccl.allGather(send, recv, StorageType::F32, count / n);
      h && d)
    compare("all-gather", recv, count);
  else
    report(false, "all-gather: " + (!d ? d : h).error().message);
  upload();
  if (auto h = host.reduceScatter(in.data(), ref.data(), StorageType::F32,
                                  count, ReduceOp::Sum),
      d = nccl.reduceScatter(send, recv, StorageType::F32, count,
                             ReduceOp::Sum);
      h && d)
    compare("reduce-scatter", recv, count / n);
  else
    report(false, "reduce-scatter: " + (!d ? d : h).error().message);
  upload();
  if (auto h =
          host.allToAll(in.data(), ref.data(), StorageType::F32, count / n),
      d = nccl.allToAll(send, recv, StorageType::F32, count / n);
      h && d)
    compare("all-to-all", recv, count);
  else
    report(false, "all-to-all: " + (!d ? d : h).error().message);
  upload();
  ref = in;
  if (auto h = host.broadcast(ref.data(), StorageType::F32, count, n - 1),
      d = nccl.broadcast(send, StorageType::F32, count, n - 1);
      h && d)
    compare("broadcast", send, count);
  else
    report(false, "broadcast: " + (!d ? d : h).error().message);
  cudaFree(send);
  cudaFree(recv);
}

/// One thread per rank: its stream, its NCCL communicator, the checks;
/// with `dead`, rank 1 joins and then never calls, and rank 0's all-reduce
/// must fail within the timeout.
void runRanks(const NcclApi &api, int n, bool dead) {
  auto hosts = simulatedRanks(n);
  std::vector<std::thread> threads;
  for (auto &h : hosts)
    threads.emplace_back([&, host = h.get()] {
      cudaSetDevice(0);
      cudaStream_t stream = nullptr;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      host->setTimeout(dead ? 3 : 60);
      NcclStream where{
          stream, [stream] { return int(cudaStreamQuery(stream)); }, nullptr};
      auto nccl = ncclCommunicator(*host, api, where);
      if (!nccl) {
        report(false, "rank " + std::to_string(host->rank()) + ": " +
                          nccl.error().message);
        return;
      }
      if (!dead) {
        checkRank(*host, **nccl, stream);
      } else if (host->rank() == 0) {
        float *x = nullptr;
        cudaMalloc(&x, sizeof(float));
        auto start = std::chrono::steady_clock::now();
        auto r = (*nccl)->allReduce(x, StorageType::F32, 1, ReduceOp::Sum);
        double s = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
        report(!r && s < 30,
               fmt::format("a rank that never arrives: an error after {:.1f} "
                           "s: {}",
                           s, r ? "none" : r.error().message));
      } else {
        std::this_thread::sleep_for(std::chrono::seconds(8));
      }
    });
  for (auto &t : threads)
    t.join();
}

#ifdef EIN_MESH_CHECK
} // namespace
// The generated source's entry point and its loader's table.
extern "C" int ein_mlp(const float *, int64_t, const int64_t *,
                       const int64_t *, const float *, int64_t,
                       const int64_t *, const int64_t *, const float *,
                       int64_t, const int64_t *, const int64_t *, float *,
                       int64_t, const int64_t *, const int64_t *,
                       cudaStream_t);
extern "C" void ein_api_set_collectives(
    void (*)(int64_t, int64_t, int32_t, int32_t, int32_t),
    void (*)(int64_t, int64_t, int64_t, int32_t, int32_t, int32_t),
    int64_t (*)(int32_t));
namespace {

/// The generated code's runtime is not thread-safe (its GEMM plans): one
/// rank's call at a time, the lock released while a collective waits for
/// the other ranks (as einc's in-process loader does).
std::mutex device;
thread_local std::unique_lock<std::mutex> *held = nullptr;
void allReduce(int64_t data, int64_t count, int32_t type, int32_t op,
               int32_t axis) {
  held->unlock();
  ein_comm_all_reduce(data, count, type, op, axis);
  held->lock();
}
void reduceScatter(int64_t send, int64_t recv, int64_t total, int32_t type,
                   int32_t op, int32_t axis) {
  held->unlock();
  ein_comm_reduce_scatter(send, recv, total, type, op, axis);
  held->lock();
}

std::vector<float> readF32(const std::string &path, size_t count) {
  std::vector<float> v(count);
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f || std::fread(v.data(), sizeof(float), count, f) != count)
    report(false, "cannot read " + path);
  if (f)
    std::fclose(f);
  return v;
}

/// mlp(x: b d, w_fc: d f@tp, w_proj: f@tp d) at b=4, d=8, f=16 on `n`
/// ranks, each a thread with its stream and its blocks of the weights:
/// every rank's result within 1e-5 of the CPU's unsharded one (the GPU's
/// GEMMs round as they do) and bit for bit equal to every other rank's.
void runMesh(const NcclApi &api, int n, const std::string &dir) {
  const int64_t b = 4, d = 8, f = 16, fb = f / n;
  auto x = readF32(dir + "/x.bin", b * d);
  auto w1 = readF32(dir + "/w_fc.bin", d * f);
  auto w2 = readF32(dir + "/w_proj.bin", f * d);
  auto want = readF32(dir + "/want.bin", b * d);
  ein_api_set_collectives(allReduce, reduceScatter, ein_comm_axis_rank);
  auto hosts = simulatedRanks(n);
  std::vector<std::vector<float>> got(n, std::vector<float>(b * d));
  std::vector<std::thread> threads;
  for (auto &h : hosts)
    threads.emplace_back([&, host = h.get()] {
      const int r = host->rank();
      cudaSetDevice(0);
      cudaStream_t stream = nullptr;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      host->setTimeout(60);
      NcclStream where{
          stream, [stream] { return int(cudaStreamQuery(stream)); }, nullptr};
      auto nccl = ncclCommunicator(*host, api, where);
      if (!nccl) {
        report(false, fmt::format("rank {}: {}", r, nccl.error().message));
        return;
      }
      std::vector<float> b1(d * fb), b2(fb * d);
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < fb; ++j)
          b1[i * fb + j] = w1[i * f + r * fb + j];
      for (int64_t i = 0; i < fb; ++i)
        for (int64_t j = 0; j < d; ++j)
          b2[i * d + j] = w2[(r * fb + i) * d + j];
      float *dx, *d1, *d2, *out;
      cudaMalloc(&dx, x.size() * 4);
      cudaMalloc(&d1, b1.size() * 4);
      cudaMalloc(&d2, b2.size() * 4);
      cudaMalloc(&out, b * d * 4);
      cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(d1, b1.data(), b1.size() * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(d2, b2.data(), b2.size() * 4, cudaMemcpyHostToDevice);
      const int64_t xs[] = {b, d}, xt[] = {d, 1}, s1[] = {d, fb},
                    t1[] = {fb, 1}, s2[] = {fb, d}, t2[] = {d, 1};
      int rc;
      std::optional<Error> failed;
      {
        CollectiveScope scope({nccl->get()});
        std::unique_lock<std::mutex> lock(device);
        held = &lock;
        rc = ein_mlp(dx, 2, xs, xt, d1, 2, s1, t1, d2, 2, s2, t2, out, 2, xs,
                     xt, stream);
        held = nullptr;
        failed = scope.error();
      }
      cudaStreamSynchronize(stream);
      cudaMemcpy(got[r].data(), out, b * d * 4, cudaMemcpyDeviceToHost);
      report(rc == 0 && !failed,
             fmt::format("rank {}: the generated function ran (code {}){}", r,
                         rc, failed ? ": " + failed->message : ""));
    });
  for (auto &t : threads)
    t.join();
  float scale = 1e-30f, off = 0;
  for (float w : want)
    scale = std::max(scale, std::abs(w));
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < b * d; ++i)
      off = std::max(off, std::abs(got[r][i] - want[i]));
    report(std::memcmp(got[r].data(), got[0].data(), b * d * 4) == 0,
           fmt::format("rank {}: its result equals rank 0's bit for bit", r));
  }
  report(off <= 1e-5f * scale,
         fmt::format("the sharded MLP on {} rank(s) is the CPU's within "
                     "1e-5 (off by {:.3g} of the largest)",
                     n, off / scale));
}
#endif

} // namespace

int main(int argc, char **argv) {
  bool mesh = argc > 1 && std::string(argv[1]) == "mesh";
  int n = argc > (mesh ? 2 : 1) ? std::atoi(argv[mesh ? 2 : 1]) : 1;
  auto api = loadNccl();
  if (!api) {
    std::printf("nccl-check: %s\n", api.error().message.c_str());
    return 1;
  }
#ifdef EIN_MESH_CHECK
  if (mesh) {
    std::printf("nccl-check: the generated sharded MLP on %d rank%s with %s\n",
                n, n == 1 ? "" : "s", (*api)->name.c_str());
    if (n > 1 && (*api)->version < 23000) {
      std::printf("nccl-check: skipped: %d ranks on one GPU need NCCL >= "
                  "2.30 (NCCL_MULTI_RANK_GPU_ENABLE=1)\n",
                  n);
      return 3;
    }
    runMesh(**api, n, argc > 3 ? argv[3] : ".");
    std::printf("nccl-check: %s\n", failures ? "FAILED" : "all agree");
    return failures ? 1 : 0;
  }
#endif
  if (mesh) {
    std::printf("nccl-check: built without EIN_MESH_CHECK\n");
    return 1;
  }
  std::printf("nccl-check: %d rank%s on one GPU with %s\n", n,
              n == 1 ? "" : "s", (*api)->name.c_str());
  if (n > 1 && (*api)->version < 23000) {
    std::printf("nccl-check: skipped: %d ranks on one GPU need NCCL >= 2.30 "
                "(NCCL_MULTI_RANK_GPU_ENABLE=1)\n",
                n);
    return 3;
  }
  runRanks(**api, n, false);
  if (n > 1)
    runRanks(**api, n, true);
  std::printf("nccl-check: %s\n", failures ? "FAILED" : "all agree");
  return failures ? 1 : 0;
}
