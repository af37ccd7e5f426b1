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
#include "../lib/Target/CUDA/NCCL.h"

#include "ein/Runtime/HostTensor.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <chrono>
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

} // namespace

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1;
  auto api = loadNccl();
  if (!api) {
    std::printf("nccl-check: %s\n", api.error().message.c_str());
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
