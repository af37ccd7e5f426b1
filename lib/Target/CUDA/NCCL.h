// NCCL for CUDA ranks (docs/distributed.md §6): the few NCCL C functions ein
// calls, as a table filled from libnccl.so.2 (dlopen, so that einc builds
// and runs without NCCL) or from the emulation over a host Communicator
// (cuda-emulated, CI); and the Communicator on device buffers built on
// either table.
#pragma once

#include "ein/Runtime/Communicator.h"

#include <functional>
#include <mutex>

namespace ein {

/// NCCL's ABI, declared here so that no NCCL header is needed to build:
/// the types as nccl.h (2.18 and later) lays them out.
struct NcclUniqueId {
  char internal[128];
};
/// ncclConfig_t as of NCCL 2.18 (version 21800): later versions append
/// fields and read only those the version names.
struct NcclConfig {
  size_t size = sizeof(NcclConfig);
  unsigned magic = 0xcafebeef;
  unsigned version = 21800;
  int blocking = -2147483647 - 1; // NCCL_CONFIG_UNDEF_INT
  int cgaClusterSize = -2147483647 - 1;
  int minCTAs = -2147483647 - 1;
  int maxCTAs = -2147483647 - 1;
  const char *netName = nullptr;
  int splitShare = -2147483647 - 1;
};
using NcclComm = void *;
/// ncclResult_t's values that ein tells apart.
enum : int { kNcclSuccess = 0, kNcclInvalidUsage = 5, kNcclInProgress = 7 };
/// ncclUint8: the type the other collectives move bytes as.
constexpr int kNcclUint8 = 1;
/// NCCL's ncclDataType_t of a type a reduction takes, -1 for the others;
/// the one table of them (the emulation inverts it).
int ncclType(runtime::StorageType type);
/// NCCL's ncclRedOp_t of `op`.
int ncclOp(ReduceOp op);

/// The NCCL functions ein calls (each returns an ncclResult_t; `stream` is
/// a cudaStream_t, `type` an ncclDataType_t, `op` an ncclRedOp_t).
struct NcclApi {
  /// "NCCL 2.28.9 (/usr/local/cuda/lib64/libnccl.so.2)", or the emulation.
  std::string name;
  int version = 0; // NCCL_VERSION_CODE, 22809 for 2.28.9
  bool emulated = false;
  int (*getUniqueId)(NcclUniqueId *) = nullptr;
  int (*commInitRankConfig)(NcclComm *, int, NcclUniqueId, int,
                            NcclConfig *) = nullptr;
  int (*commFinalize)(NcclComm) = nullptr;
  int (*commDestroy)(NcclComm) = nullptr;
  int (*commAbort)(NcclComm) = nullptr;
  int (*commGetAsyncError)(NcclComm, int *) = nullptr;
  const char *(*getErrorString)(int) = nullptr;
  const char *(*getLastError)(NcclComm) = nullptr;
  int (*allReduce)(const void *, void *, size_t, int, int, NcclComm,
                   void *) = nullptr;
  int (*broadcast)(const void *, void *, size_t, int, int, NcclComm,
                   void *) = nullptr;
  int (*reduceScatter)(const void *, void *, size_t, int, int, NcclComm,
                       void *) = nullptr;
  int (*allGather)(const void *, void *, size_t, int, NcclComm,
                   void *) = nullptr;
  int (*send)(const void *, size_t, int, int, NcclComm, void *) = nullptr;
  int (*recv)(void *, size_t, int, int, NcclComm, void *) = nullptr;
  int (*groupStart)() = nullptr;
  int (*groupEnd)() = nullptr;
};

/// libnccl.so.2, loaded once: `EIN_NCCL_LIBRARY` (a path) when set, else
/// the loader's own search, the CUDA toolkit's lib64/ and lib/, and
/// PyTorch's nvidia-nccl wheel (site-packages/nvidia/nccl/lib, in a
/// virtualenv, ~/.local, pyenv or the system's Python). A usage
/// error naming the places tried when none loads.
ErrorOr<const NcclApi *> loadNccl();
/// The same search, done again on every call (tests).
ErrorOr<NcclApi> openNcclLibrary();

/// The emulation of NCCL over host Communicators, for cuda-emulated (whose
/// device memory is the host's): the same calls, in the same order, each
/// run at once on the host group bound by bindEmulatedNccl; send/recv run
/// as one all-to-all at the group's end.
const NcclApi &emulatedNccl();
/// The host group the calling thread's next emulated ncclCommInitRankConfig
/// joins (its rank and size must match the call's).
void bindEmulatedNccl(Communicator *group);

/// Where the collectives run and how the communicator waits for them: the
/// cudaStream_t (null: the default stream, the kernels' one), its state
/// (0 done, 600 cudaErrorNotReady, another cudaError_t; none: done when
/// NCCL is) and the lock device work holds (CUDADevice::running), if any.
struct NcclStream {
  void *stream = nullptr;
  std::function<int()> query;
  std::mutex *running = nullptr;
};

/// A Communicator whose buffers are device memory, over the ranks of
/// `group` (which stays alive while it does): rank 0 makes the NCCL unique
/// id and broadcasts it over `group`; every rank joins with
/// ncclCommInitRankConfig in non-blocking mode. Each collective is issued
/// on `stream` (for einc, the default stream: the kernels' one,
/// SharedLibrary.cpp) and waited for,
/// polling ncclCommGetAsyncError and the stream, within `group`'s timeout;
/// past it the NCCL communicator is aborted (ncclCommAbort) and the group
/// broken. bf16/f16 sums are NCCL's own (rounded per step, not once).
ErrorOr<std::unique_ptr<Communicator>>
ncclCommunicator(Communicator &group, const NcclApi &api, NcclStream stream);

} // namespace ein
