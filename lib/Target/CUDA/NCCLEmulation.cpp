// The emulation of NCCL for cuda-emulated (docs/distributed.md §6): NCCL's C
// functions, with its signatures and result codes, run on host buffers over
// a host Communicator (MPI across processes, simulated ranks in tests), so
// that CI exercises the NCCL communicator's calls, its non-blocking start-up
// and its error path without a GPU.
#include "NCCL.h"
#include "ein/Support/Hash.h"

#include <fmt/format.h>

#include <cstring>
#include <random>

namespace ein {

namespace {

using runtime::StorageType;

enum : int {
  kSystemError = 2,
  kInvalidArgument = 4,
  kRemoteError = 6,
};

/// An emulated ncclComm_t.
struct EmuComm {
  Communicator *host = nullptr;
  std::string lastError;
  int asyncError = kNcclSuccess;
  /// Non-blocking start-up: ncclCommGetAsyncError reports "in progress"
  /// this many times first, as a real NCCL may.
  int pendingPolls = 0;
};

/// One ncclSend or ncclRecv inside a group.
struct PointToPoint {
  EmuComm *comm;
  bool send;
  const void *sendData;
  void *recvData;
  size_t bytes;
  int peer;
};
/// ncclGroupStart/End nest per thread, as NCCL's do.
thread_local int groupDepth = 0;
thread_local std::vector<PointToPoint> grouped;
thread_local Communicator *binding = nullptr;

int fail(EmuComm *comm, int code, std::string message) {
  comm->lastError = std::move(message);
  comm->asyncError = code;
  return code;
}

/// The host's type of an ncclDataType_t: ncclType's inverse, and Uint8
/// moves bytes (Bool).
std::optional<StorageType> hostType(int type) {
  if (type == kNcclUint8)
    return StorageType::Bool;
  for (StorageType t : {
#define EIN_DTYPE(Enum, ...) StorageType::Enum,
#include "ein/Shape/DTypes.def"
       })
    if (ncclType(t) == type)
      return t;
  return std::nullopt;
}

/// ncclOp's inverse.
std::optional<ReduceOp> hostOp(int op) {
  for (ReduceOp o : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min})
    if (ncclOp(o) == op)
      return o;
  return std::nullopt;
}

/// Runs a host collective's result into the comm's error state.
int done(EmuComm *comm, const ErrorOr<void> &result) {
  if (result)
    return kNcclSuccess;
  return fail(comm, kRemoteError, result.error().str("ein"));
}

int getUniqueId(NcclUniqueId *id) {
  std::random_device random;
  for (size_t i = 0; i < sizeof id->internal; i += 4) {
    uint32_t word = random();
    std::memcpy(id->internal + i, &word, 4);
  }
  return kNcclSuccess;
}

int commInitRankConfig(NcclComm *out, int ranks, NcclUniqueId id, int rank,
                       NcclConfig *config) {
  auto *comm = new EmuComm;
  *out = comm;
  comm->host = binding;
  if (!comm->host)
    return fail(comm, kNcclInvalidUsage,
                "emulated NCCL: no host group is bound to this thread "
                "(bindEmulatedNccl)");
  if (ranks != comm->host->size() || rank != comm->host->rank())
    return fail(comm, kInvalidArgument,
                fmt::format("emulated NCCL: rank {} of {} asked for, but the "
                            "host group is rank {} of {}",
                            rank, ranks, comm->host->rank(),
                            comm->host->size()));
  // Every rank must hold rank 0's unique id (what NCCL's bootstrap needs).
  uint64_t hash = fnv1a({id.internal, sizeof id.internal});
  if (auto same = checkSameOnAllRanks(*comm->host, hash, "the NCCL unique id");
      !same)
    return done(comm, same);
  if (config && config->blocking == 0) {
    comm->pendingPolls = 2;
    return kNcclInProgress;
  }
  return kNcclSuccess;
}

int commFinalize(NcclComm) { return kNcclSuccess; }
int commDestroy(NcclComm comm) {
  delete static_cast<EmuComm *>(comm);
  return kNcclSuccess;
}
int commAbort(NcclComm comm) { return commDestroy(comm); }

int commGetAsyncError(NcclComm handle, int *state) {
  auto *comm = static_cast<EmuComm *>(handle);
  if (comm->pendingPolls > 0) {
    --comm->pendingPolls;
    *state = kNcclInProgress;
  } else {
    *state = comm->asyncError;
  }
  return kNcclSuccess;
}

const char *getErrorString(int code) {
  switch (code) {
  case kNcclSuccess:
    return "no error";
  case 1:
    return "unhandled cuda error";
  case kSystemError:
    return "unhandled system error";
  case 3:
    return "internal error";
  case kInvalidArgument:
    return "invalid argument";
  case kNcclInvalidUsage:
    return "invalid usage";
  case kRemoteError:
    return "remote process exited or there was a network error";
  case kNcclInProgress:
    return "NCCL operation in progress";
  }
  return "unknown result code";
}

const char *getLastError(NcclComm comm) {
  return comm ? static_cast<EmuComm *>(comm)->lastError.c_str() : "";
}

int allReduce(const void *send, void *recv, size_t count, int type, int op,
              NcclComm handle, void *) {
  auto *comm = static_cast<EmuComm *>(handle);
  auto t = hostType(type);
  auto o = hostOp(op);
  if (!t || !o || *t == StorageType::Bool)
    return fail(comm, kInvalidArgument,
                "emulated NCCL: all-reduce of this type or op is not built");
  if (send != recv)
    std::memcpy(recv, send, count * runtime::storageBytes(*t));
  return done(comm, comm->host->allReduce(recv, *t, int64_t(count), *o));
}

int broadcast(const void *send, void *recv, size_t count, int type, int root,
              NcclComm handle, void *) {
  auto *comm = static_cast<EmuComm *>(handle);
  auto t = hostType(type);
  if (!t)
    return fail(comm, kInvalidArgument, "emulated NCCL: unknown data type");
  if (comm->host->rank() == root && send != recv)
    std::memcpy(recv, send, count * runtime::storageBytes(*t));
  return done(comm, comm->host->broadcast(recv, *t, int64_t(count), root));
}

int reduceScatter(const void *send, void *recv, size_t count, int type, int op,
                  NcclComm handle, void *) {
  auto *comm = static_cast<EmuComm *>(handle);
  auto t = hostType(type);
  auto o = hostOp(op);
  if (!t || !o || *t == StorageType::Bool)
    return fail(comm, kInvalidArgument,
                "emulated NCCL: reduce-scatter of this type or op is not "
                "built");
  return done(
      comm, comm->host->reduceScatter(send, recv, *t,
                                      int64_t(count) * comm->host->size(), *o));
}

int allGather(const void *send, void *recv, size_t count, int type,
              NcclComm handle, void *) {
  auto *comm = static_cast<EmuComm *>(handle);
  auto t = hostType(type);
  if (!t)
    return fail(comm, kInvalidArgument, "emulated NCCL: unknown data type");
  return done(comm, comm->host->allGather(send, recv, *t, int64_t(count)));
}

int pointToPoint(PointToPoint op, int type) {
  auto t = hostType(type);
  if (!t)
    return fail(op.comm, kInvalidArgument, "emulated NCCL: unknown data type");
  if (groupDepth == 0)
    return fail(op.comm, kNcclInvalidUsage,
                "emulated NCCL runs ncclSend/ncclRecv inside a group only "
                "(as one all-to-all)");
  op.bytes *= runtime::storageBytes(*t);
  grouped.push_back(op);
  return kNcclSuccess;
}

int send(const void *data, size_t count, int type, int peer, NcclComm handle,
         void *) {
  return pointToPoint(
      {static_cast<EmuComm *>(handle), true, data, nullptr, count, peer}, type);
}
int recv(void *data, size_t count, int type, int peer, NcclComm handle,
         void *) {
  return pointToPoint(
      {static_cast<EmuComm *>(handle), false, nullptr, data, count, peer},
      type);
}

int groupStart() {
  ++groupDepth;
  return kNcclSuccess;
}

/// A group's sends and receives, run as the one all-to-all they must form:
/// on one comm, one send and one receive per rank, all of one size.
int groupEnd() {
  if (groupDepth == 0 || --groupDepth > 0 || grouped.empty())
    return kNcclSuccess;
  std::vector<PointToPoint> ops;
  ops.swap(grouped);
  EmuComm *comm = ops.front().comm;
  int n = comm->host->size();
  size_t bytes = ops.front().bytes;
  std::vector<const void *> sends(n, nullptr);
  std::vector<void *> recvs(n, nullptr);
  bool allToAll = ops.size() == size_t(2 * n);
  for (const PointToPoint &op : ops) {
    allToAll &= op.comm == comm && op.bytes == bytes && op.peer >= 0 &&
                op.peer < n && (op.send ? !sends[op.peer] : !recvs[op.peer]);
    if (!allToAll)
      break;
    if (op.send)
      sends[op.peer] = op.sendData;
    else
      recvs[op.peer] = op.recvData;
  }
  if (!allToAll)
    return fail(comm, kNcclInvalidUsage,
                "emulated NCCL runs a group's ncclSend/ncclRecv only as an "
                "all-to-all: one send and one receive of one size per rank");
  std::vector<char> in(bytes * n), out(bytes * n);
  for (int r = 0; r < n; ++r)
    std::memcpy(in.data() + r * bytes, sends[r], bytes);
  auto result = comm->host->allToAll(in.data(), out.data(), StorageType::Bool,
                                     int64_t(bytes));
  if (!result)
    return done(comm, result);
  for (int r = 0; r < n; ++r)
    std::memcpy(recvs[r], out.data() + r * bytes, bytes);
  return kNcclSuccess;
}

NcclApi makeEmulation() {
  NcclApi api;
  api.name = "emulated NCCL (over the host communicator)";
  api.version = 22800;
  api.emulated = true;
  api.getUniqueId = getUniqueId;
  api.commInitRankConfig = commInitRankConfig;
  api.commFinalize = commFinalize;
  api.commDestroy = commDestroy;
  api.commAbort = commAbort;
  api.commGetAsyncError = commGetAsyncError;
  api.getErrorString = getErrorString;
  api.getLastError = getLastError;
  api.allReduce = allReduce;
  api.broadcast = broadcast;
  api.reduceScatter = reduceScatter;
  api.allGather = allGather;
  api.send = send;
  api.recv = recv;
  api.groupStart = groupStart;
  api.groupEnd = groupEnd;
  return api;
}

} // namespace

const NcclApi &emulatedNccl() {
  static const NcclApi *api = new NcclApi(makeEmulation());
  return *api;
}

void bindEmulatedNccl(Communicator *group) { binding = group; }

} // namespace ein
