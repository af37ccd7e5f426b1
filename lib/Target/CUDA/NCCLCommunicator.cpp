// The Communicator on device buffers through NCCL (docs/distributed.md §6):
// libnccl.so.2 found and loaded with dlopen, the unique id exchanged over the
// host group, non-blocking NCCL polled against the timeout, ncclCommAbort
// when it passes.
#include "NCCL.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <glob.h>
#include <thread>

namespace ein {

namespace {

using runtime::StorageType;

template <class F> bool symbol(void *handle, const char *name, F &out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  return out != nullptr;
}

/// The places libnccl.so.2 is looked for, in order (loadNccl).
std::vector<std::string> ncclCandidates() {
  std::vector<std::string> out = {"libnccl.so.2"};
  std::vector<std::string> roots;
  if (const char *home = std::getenv("CUDA_HOME"))
    roots.push_back(home);
  roots.push_back("/usr/local/cuda");
  for (const std::string &root : roots)
    for (const char *lib : {"/lib64/libnccl.so.2", "/lib/libnccl.so.2"})
      out.push_back(root + lib);
  // PyTorch's wheel: site-packages/nvidia/nccl/lib (nvidia-nccl-cu12) or
  // nvidia/cu13/lib (the CUDA 13 wheels), in a virtualenv, the user's or
  // the system's Python.
  std::vector<std::string> patterns;
  std::vector<std::string> prefixes = {"/usr/local/lib", "/usr/lib",
                                       "/opt/conda/lib"};
  if (const char *venv = std::getenv("VIRTUAL_ENV"))
    prefixes.insert(prefixes.begin(), std::string(venv) + "/lib");
  if (const char *home = std::getenv("HOME")) {
    prefixes.push_back(std::string(home) + "/.local/lib");
    prefixes.push_back(std::string(home) + "/.pyenv/versions/*/lib");
  }
  for (const std::string &prefix : prefixes)
    for (const char *packages : {"site-packages", "dist-packages"})
      for (const char *lib : {"nvidia/nccl/lib", "nvidia/cu13/lib"})
        patterns.push_back(fmt::format("{}/python3*/{}/{}/libnccl.so.2", prefix,
                                       packages, lib));
  for (const std::string &pattern : patterns) {
    glob_t found;
    if (::glob(pattern.c_str(), 0, nullptr, &found) == 0)
      for (size_t i = 0; i < found.gl_pathc; ++i)
        out.push_back(found.gl_pathv[i]);
    ::globfree(&found);
  }
  return out;
}

} // namespace

ErrorOr<NcclApi> openNcclLibrary() {
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("EIN_NCCL_LIBRARY"))
    candidates.push_back(path);
  else
    candidates = ncclCandidates();
  std::string tried;
  for (const std::string &path : candidates) {
    void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += "\n  " + path + ": " + ::dlerror();
      continue;
    }
    NcclApi api;
    int (*getVersion)(int *) = nullptr;
    char where[4096] = {0};
    if (!symbol(handle, "ncclGetVersion", getVersion) ||
        !symbol(handle, "ncclGetUniqueId", api.getUniqueId) ||
        !symbol(handle, "ncclCommInitRankConfig", api.commInitRankConfig) ||
        !symbol(handle, "ncclCommFinalize", api.commFinalize) ||
        !symbol(handle, "ncclCommDestroy", api.commDestroy) ||
        !symbol(handle, "ncclCommAbort", api.commAbort) ||
        !symbol(handle, "ncclCommGetAsyncError", api.commGetAsyncError) ||
        !symbol(handle, "ncclGetErrorString", api.getErrorString) ||
        !symbol(handle, "ncclGetLastError", api.getLastError) ||
        !symbol(handle, "ncclAllReduce", api.allReduce) ||
        !symbol(handle, "ncclBroadcast", api.broadcast) ||
        !symbol(handle, "ncclReduceScatter", api.reduceScatter) ||
        !symbol(handle, "ncclAllGather", api.allGather) ||
        !symbol(handle, "ncclSend", api.send) ||
        !symbol(handle, "ncclRecv", api.recv) ||
        !symbol(handle, "ncclGroupStart", api.groupStart) ||
        !symbol(handle, "ncclGroupEnd", api.groupEnd)) {
      tried += "\n  " + path +
               ": lacks the NCCL functions ein calls (NCCL 2.18 or later "
               "has them all)";
      ::dlclose(handle);
      continue;
    }
    getVersion(&api.version);
    if (::dlinfo(handle, RTLD_DI_ORIGIN, where) != 0)
      where[0] = 0;
    int major = api.version / 10000, minor = api.version / 100 % 100,
        patch = api.version % 100;
    if (api.version < 10000) // NCCL_VERSION before 2.9: X*1000+Y*100+Z
      major = api.version / 1000, minor = api.version / 100 % 10,
      patch = api.version % 100;
    api.name =
        fmt::format("NCCL {}.{}.{} ({}{}{})", major, minor, patch, where,
                    where[0] ? "/" : "", path.substr(path.rfind('/') + 1));
    return api;
  }
  return Error::usage(fmt::format(
      "NCCL is needed for CUDA ranks but libnccl.so.2 did not load; install "
      "PyTorch's nvidia-nccl wheel or the CUDA toolkit's NCCL, or set "
      "EIN_NCCL_LIBRARY to its path. Tried:{}",
      tried));
}

int ncclType(StorageType type) {
  switch (type) {
  case StorageType::F64:
    return 8;
  case StorageType::F32:
    return 7;
  case StorageType::BF16:
    return 9;
  case StorageType::F16:
    return 6;
  case StorageType::I64:
    return 4;
  case StorageType::I32:
    return 2;
  case StorageType::F8E4M3:
  case StorageType::F8E5M2:
  case StorageType::I8:
  case StorageType::Bool:
    break;
  }
  return -1;
}

int ncclOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return 0;
  case ReduceOp::Max:
    return 2;
  case ReduceOp::Min:
    return 3;
  }
  return 0;
}

namespace {

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(Communicator &group, const NcclApi &api, NcclStream stream)
      : group(group), api(api), stream(stream) {
    setTimeout(group.timeout());
  }
  ~NcclCommunicator() override {
    if (!comm)
      return;
    if (broken) // aborted, which frees it
      return;
    // Finalize flushes the pending work; an error or a timeout (at most
    // 10 s: a process leaving on another rank's error must not wait the
    // whole collective timeout) aborts.
    double limit = std::min(timeout(), 10.0);
    int rc = api.commFinalize(comm);
    if (rc == kNcclSuccess || rc == kNcclInProgress) {
      auto start = std::chrono::steady_clock::now();
      int state = kNcclInProgress;
      while (api.commGetAsyncError(comm, &state) == kNcclSuccess &&
             state == kNcclInProgress &&
             std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                     .count() < limit)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (state == kNcclSuccess) {
        api.commDestroy(comm);
        return;
      }
    }
    api.commAbort(comm);
  }

  int rank() const override { return group.rank(); }
  int size() const override { return group.size(); }
  std::string name() const override {
    return fmt::format("{} ({} rank{})",
                       api.emulated ? "emulated NCCL" : "NCCL", size(),
                       size() == 1 ? "" : "s");
  }

  /// Joins the NCCL communicator of `group`'s ranks.
  ErrorOr<void> start() {
    NcclUniqueId id{};
    if (group.rank() == 0)
      if (int rc = api.getUniqueId(&id); rc != kNcclSuccess)
        return Error::program(fmt::format(
            "ncclGetUniqueId failed on rank 0: {}", api.getErrorString(rc)));
    // The id's bytes, broadcast as 32 i32 (any type's bytes move alike).
    if (auto ok = group.broadcast(&id, StorageType::I32, sizeof id / 4, 0); !ok)
      return ok.error();
    if (api.emulated)
      bindEmulatedNccl(&group);
    NcclConfig config;
    config.blocking = 0; // non-blocking: polled against the timeout
    int rc;
    {
      auto lock = device();
      rc = api.commInitRankConfig(&comm, group.size(), id, group.rank(),
                                  &config);
    }
    if (api.emulated)
      bindEmulatedNccl(nullptr);
    return finish(rc, "ncclCommInitRankConfig");
  }

  ErrorOr<void> allReduce(void *data, StorageType type, int64_t count,
                          ReduceOp op) override {
    if (auto ok = reducible(type, "all-reduce"); !ok)
      return ok;
    return issue("all-reduce", [&] {
      return api.allReduce(data, data, size_t(count), ncclType(type),
                           ncclOp(op), comm, stream.stream);
    });
  }
  ErrorOr<void> allGather(const void *send, void *recv, StorageType type,
                          int64_t count) override {
    size_t bytes = size_t(count) * runtime::storageBytes(type);
    return issue("all-gather", [&] {
      return api.allGather(send, recv, bytes, kNcclUint8, comm, stream.stream);
    });
  }
  ErrorOr<void> reduceScatter(const void *send, void *recv, StorageType type,
                              int64_t total, ReduceOp op) override {
    if (auto ok = reducible(type, "reduce-scatter"); !ok)
      return ok;
    if (total % size() != 0)
      return Error::usage(
          fmt::format("reduce-scatter of {} elements over {} ranks: the count "
                      "must be a multiple of the ranks",
                      total, size()));
    return issue("reduce-scatter", [&] {
      return api.reduceScatter(send, recv, size_t(total / size()),
                               ncclType(type), ncclOp(op), comm, stream.stream);
    });
  }
  ErrorOr<void> allToAll(const void *send, void *recv, StorageType type,
                         int64_t count) override {
    // ncclSend/ncclRecv to and from every rank, in one group (NCCL has no
    // all-to-all call).
    size_t bytes = size_t(count) * runtime::storageBytes(type);
    return issue("all-to-all", [&] {
      // A non-blocking communicator may answer "in progress" to each.
      auto ok = [](int rc) {
        return rc == kNcclSuccess || rc == kNcclInProgress;
      };
      int rc = api.groupStart();
      for (int r = 0; r < size() && ok(rc); ++r) {
        rc = api.send(static_cast<const char *>(send) + r * bytes, bytes,
                      kNcclUint8, r, comm, stream.stream);
        if (ok(rc))
          rc = api.recv(static_cast<char *>(recv) + r * bytes, bytes,
                        kNcclUint8, r, comm, stream.stream);
      }
      int end = api.groupEnd();
      return ok(rc) ? end : rc;
    });
  }
  ErrorOr<void> broadcast(void *data, StorageType type, int64_t count,
                          int root) override {
    if (root < 0 || root >= size())
      return Error::usage(fmt::format("broadcast from rank {}: the group has "
                                      "ranks 0 to {}",
                                      root, size() - 1));
    size_t bytes = size_t(count) * runtime::storageBytes(type);
    return issue("broadcast", [&] {
      return api.broadcast(data, data, bytes, kNcclUint8, root, comm,
                           stream.stream);
    });
  }
  ErrorOr<std::unique_ptr<Communicator>> split(int color, int key) override {
    // The host group splits, then its pieces join NCCL communicators of
    // their own (as ncclCommSplit would, through the same start-up).
    auto hostPart = group.split(color, key);
    if (!hostPart)
      return hostPart.error();
    auto part = std::make_unique<NcclCommunicator>(**hostPart, api, stream);
    part->ownedGroup = std::move(*hostPart);
    if (auto ok = part->start(); !ok)
      return ok.error();
    return std::unique_ptr<Communicator>(std::move(part));
  }

private:
  std::unique_lock<std::mutex> device() {
    return stream.running ? std::unique_lock<std::mutex>(*stream.running)
                          : std::unique_lock<std::mutex>();
  }

  ErrorOr<void> reducible(StorageType type, const char *what) {
    if (isReducibleType(type))
      return {};
    return Error::usage(fmt::format("{} of {} on NCCL: reductions take f64, "
                                    "f32, bf16, f16, i64 and i32",
                                    what, runtime::storageName(type)));
  }

  /// Issues one collective (`call` returns its ncclResult_t) and waits
  /// for it.
  template <class F> ErrorOr<void> issue(const char *what, F call) {
    ++collectives;
    if (broken)
      return Error::program(fmt::format(
          "NCCL {} (collective #{}) on rank {} of {}: the communicator was "
          "aborted after an earlier error",
          what, collectives, rank(), size()));
    int rc;
    {
      auto lock = device();
      rc = call();
    }
    return finish(rc, fmt::format("{} (collective #{})", what, collectives));
  }

  /// Waits until NCCL and the stream are done with the call that returned
  /// `rc`; past the timeout, or on an error, aborts the communicator.
  ErrorOr<void> finish(int rc, const std::string &what) {
    auto start = std::chrono::steady_clock::now();
    auto fail = [&](const std::string &why) -> Error {
      if (comm && !broken)
        api.commAbort(comm);
      broken = true;
      return Error::program(fmt::format("NCCL {} on rank {} of {} {}", what,
                                        rank(), size(), why));
    };
    auto reason = [&](int code) {
      const char *last = comm ? api.getLastError(comm) : nullptr;
      return fmt::format("failed: {}{}{}", api.getErrorString(code),
                         last && *last ? ": " : "", last ? last : "");
    };
    if (rc != kNcclSuccess && rc != kNcclInProgress)
      return fail(reason(rc));
    int state = kNcclInProgress;
    for (unsigned polls = 0;; ++polls) {
      if (int q = api.commGetAsyncError(comm, &state); q != kNcclSuccess)
        return fail(reason(q));
      if (state != kNcclSuccess && state != kNcclInProgress)
        return fail(reason(state));
      if (state == kNcclSuccess) {
        int s = stream.query ? stream.query() : 0;
        if (s == 0)
          return {};
        if (s != 600) // cudaErrorNotReady
          return fail(
              fmt::format("failed: the CUDA stream reports error {}", s));
      }
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > timeout())
        return fail(fmt::format(
            "timed out after {:g} s (EIN_COMM_TIMEOUT): a rank did not "
            "arrive or its device stalled; the NCCL communicator was aborted "
            "(ncclCommAbort)",
            timeout()));
      if (polls > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  Communicator &group;
  std::unique_ptr<Communicator> ownedGroup; // a split's host group
  const NcclApi &api;
  NcclStream stream;
  NcclComm comm = nullptr;
  bool broken = false;
  int64_t collectives = 0;
};

} // namespace

ErrorOr<const NcclApi *> loadNccl() {
  // Loaded once and kept for the process, as the CUDA device is.
  static ErrorOr<NcclApi> *loaded = new ErrorOr<NcclApi>(openNcclLibrary());
  if (!*loaded)
    return loaded->error();
  return &**loaded;
}

ErrorOr<std::unique_ptr<Communicator>>
ncclCommunicator(Communicator &group, const NcclApi &api, NcclStream stream) {
  auto comm = std::make_unique<NcclCommunicator>(group, api, stream);
  if (auto ok = comm->start(); !ok)
    return ok.error();
  return std::unique_ptr<Communicator>(std::move(comm));
}

} // namespace ein
