// The MPI communicator (CPU ranks under mpirun): MPI_COMM_WORLD and its
// MPI_Comm_split sub-groups. Every collective is MPI's non-blocking one,
// polled with MPI_Test against the timeout, so a rank that dies or never
// arrives is an error on the others, not a hang. To name the ranks missing,
// each rank tells its peers, on a duplicate of the group's communicator,
// the number of the collective it enters. bf16 and f16 are reduced in f32
// (widened, reduced by MPI, rounded once). Without MPI (EIN_HAVE_MPI unset)
// mpiWorld refuses by name.
#include "ein/Runtime/Communicator.h"

#include <fmt/format.h>

#include <cstdlib>

#ifdef EIN_HAVE_MPI
#include "ein/Runtime/FloatConvert.h"

// The C API only: MPI's deprecated C++ bindings need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <climits>
#include <thread>
#endif

namespace ein {

using runtime::StorageType;

int launcherWorldSize() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *v = std::getenv(name))
      return std::atoi(v);
  return 0;
}

#ifndef EIN_HAVE_MPI

bool haveMPI() { return false; }
void abandonMPI() {}

ErrorOr<std::unique_ptr<Communicator>> mpiWorld() {
  return Error::usage(
      "this einc was built without MPI (CMake found no MPI C library), so it "
      "cannot run ranks (--ranks, mpirun); install OpenMPI (scripts/setup.sh: "
      "openmpi-bin, libopenmpi-dev) and rebuild");
}

#else

bool haveMPI() { return true; }

namespace {

/// Set once a collective failed: the process must then exit without
/// MPI_Finalize (a request is still pending), and mpirun ends the job.
bool mpiBroken = false;
const int arrivalTag = 7301;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

ErrorOr<MPI_Datatype> reduceType(StorageType type) {
  switch (type) {
  case StorageType::F64:
    return MPI_DOUBLE;
  case StorageType::F32:
  case StorageType::BF16: // widened to f32 first
  case StorageType::F16:
    return MPI_FLOAT;
  case StorageType::I64:
    return MPI_INT64_T;
  case StorageType::I32:
    return MPI_INT32_T;
  case StorageType::F8E4M3:
  case StorageType::F8E5M2:
  case StorageType::Bool:
    break;
  }
  return Error::usage(fmt::format(
      "a reduction of {} is not supported (the reducible types are f64, f32, "
      "bf16, f16, i64 and i32)",
      runtime::storageName(type)));
}

MPI_Op mpiOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return MPI_SUM;
  case ReduceOp::Max:
    return MPI_MAX;
  case ReduceOp::Min:
    return MPI_MIN;
  }
  return MPI_SUM;
}

bool isSixteenBit(StorageType type) {
  return type == StorageType::BF16 || type == StorageType::F16;
}

std::vector<float> widen(const void *data, StorageType type, int64_t n) {
  std::vector<float> out(n);
  const uint16_t *bits = static_cast<const uint16_t *>(data);
  for (int64_t i = 0; i < n; ++i)
    out[i] = type == StorageType::BF16 ? runtime::bf16BitsToFloat(bits[i])
                                       : runtime::f16BitsToFloat(bits[i]);
  return out;
}

void narrowInto(void *data, StorageType type, const std::vector<float> &v) {
  uint16_t *bits = static_cast<uint16_t *>(data);
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = type == StorageType::BF16 ? runtime::floatToBF16Bits(v[i])
                                        : runtime::floatToF16Bits(v[i]);
}

class MPICommunicator final : public Communicator {
public:
  MPICommunicator(MPI_Comm comm, bool isWorld) : comm(comm), isWorld(isWorld) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &n);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_dup(comm, &side);
    MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
    seen.assign(n, 0);
  }
  ~MPICommunicator() override {
    if (mpiBroken)
      return;
    drainArrivals();
    finishSends(/*wait=*/true);
    MPI_Comm_free(&side);
    if (isWorld) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    } else {
      MPI_Comm_free(&comm);
    }
  }

  int rank() const override { return myRank; }
  int size() const override { return n; }
  std::string name() const override { return fmt::format("MPI ({} ranks)", n); }

  ErrorOr<void> allReduce(void *data, StorageType type, int64_t count,
                          ReduceOp op) override {
    auto dtype = reduceType(type);
    if (!dtype)
      return dtype.error();
    if (auto r = checkCount("all-reduce", count); !r)
      return r;
    if (isSixteenBit(type)) {
      std::vector<float> wide = widen(data, type, count);
      if (auto r = allReduce(wide.data(), StorageType::F32, count, op); !r)
        return r;
      narrowInto(data, type, wide);
      return {};
    }
    return run("all-reduce", [&](MPI_Request *req) {
      return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), *dtype,
                            mpiOp(op), comm, req);
    });
  }

  ErrorOr<void> allGather(const void *send, void *recv, StorageType type,
                          int64_t count) override {
    int64_t bytes = count * runtime::storageBytes(type);
    if (auto r = checkCount("all-gather", bytes); !r)
      return r;
    return run("all-gather", [&](MPI_Request *req) {
      return MPI_Iallgather(send, static_cast<int>(bytes), MPI_BYTE, recv,
                            static_cast<int>(bytes), MPI_BYTE, comm, req);
    });
  }

  ErrorOr<void> reduceScatter(const void *send, void *recv, StorageType type,
                              int64_t total, ReduceOp op) override {
    auto dtype = reduceType(type);
    if (!dtype)
      return dtype.error();
    if (total % n != 0)
      return Error::usage(fmt::format(
          "reduce-scatter of {} elements over {} ranks: {} is not a multiple "
          "of {}, so the ranks' blocks would differ in size",
          total, n, total, n));
    if (auto r = checkCount("reduce-scatter", total); !r)
      return r;
    int64_t count = total / n;
    if (isSixteenBit(type)) {
      std::vector<float> wide = widen(send, type, total), out(count);
      if (auto r = reduceScatter(wide.data(), out.data(), StorageType::F32,
                                 total, op);
          !r)
        return r;
      narrowInto(recv, type, out);
      return {};
    }
    return run("reduce-scatter", [&](MPI_Request *req) {
      return MPI_Ireduce_scatter_block(send, recv, static_cast<int>(count),
                                       *dtype, mpiOp(op), comm, req);
    });
  }

  ErrorOr<void> allToAll(const void *send, void *recv, StorageType type,
                         int64_t count) override {
    int64_t bytes = count * runtime::storageBytes(type);
    if (auto r = checkCount("all-to-all", bytes * n); !r)
      return r;
    return run("all-to-all", [&](MPI_Request *req) {
      return MPI_Ialltoall(send, static_cast<int>(bytes), MPI_BYTE, recv,
                           static_cast<int>(bytes), MPI_BYTE, comm, req);
    });
  }

  ErrorOr<void> broadcast(void *data, StorageType type, int64_t count,
                          int root) override {
    if (root < 0 || root >= n)
      return Error::usage(fmt::format(
          "broadcast from rank {}, but the group's ranks are 0 to {}", root,
          n - 1));
    int64_t bytes = count * runtime::storageBytes(type);
    if (auto r = checkCount("broadcast", bytes); !r)
      return r;
    return run("broadcast", [&](MPI_Request *req) {
      return MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm,
                        req);
    });
  }

  ErrorOr<std::unique_ptr<Communicator>> split(int color, int key) override {
    // MPI_Comm_split blocks without a timeout: an all-gather first proves
    // every rank has arrived.
    int64_t mine[2] = {color, key};
    std::vector<int64_t> all(2 * n);
    if (auto r = allGather(mine, all.data(), StorageType::I64, 2); !r)
      return r.error();
    MPI_Comm sub;
    if (int code = MPI_Comm_split(comm, color, key, &sub); code != MPI_SUCCESS)
      return Error::usage("MPI_Comm_split failed: " + mpiError(code));
    auto out = std::make_unique<MPICommunicator>(sub, /*isWorld=*/false);
    out->setTimeout(timeout());
    return std::unique_ptr<Communicator>(std::move(out));
  }

private:
  ErrorOr<void> checkCount(const char *what, int64_t count) {
    if (count >= 0 && count <= INT_MAX)
      return {};
    return Error::usage(fmt::format(
        "{} of {} elements: MPI counts stop at {}; split it into buckets", what,
        count, INT_MAX));
  }

  /// Tells every peer that this rank enters collective number `sequence`.
  void announce() {
    for (int p = 0; p < n; ++p) {
      if (p == myRank)
        continue;
      auto buffer = std::make_unique<int64_t>(sequence);
      MPI_Request req;
      MPI_Isend(buffer.get(), 1, MPI_INT64_T, p, arrivalTag, side, &req);
      sends.push_back({req, std::move(buffer)});
    }
  }
  void finishSends(bool wait) {
    std::vector<std::pair<MPI_Request, std::unique_ptr<int64_t>>> pending;
    for (auto &s : sends) {
      int done = 0;
      if (wait)
        MPI_Wait(&s.first, MPI_STATUS_IGNORE);
      else
        MPI_Test(&s.first, &done, MPI_STATUS_IGNORE);
      if (!wait && !done)
        pending.push_back(std::move(s));
    }
    sends = std::move(pending);
  }
  /// Reads the peers' announcements that have arrived.
  void drainArrivals() {
    for (;;) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, arrivalTag, side, &flag, &status);
      if (!flag)
        return;
      int64_t value = 0;
      MPI_Recv(&value, 1, MPI_INT64_T, status.MPI_SOURCE, arrivalTag, side,
               MPI_STATUS_IGNORE);
      seen[status.MPI_SOURCE] = std::max(seen[status.MPI_SOURCE], value);
    }
  }

  template <typename Start> ErrorOr<void> run(const char *what, Start start) {
    if (mpiBroken)
      return Error::usage(fmt::format(
          "{} on rank {}: an earlier collective failed, so the ranks cannot "
          "go on",
          what, myRank));
    ++sequence;
    announce();
    MPI_Request req;
    if (int code = start(&req); code != MPI_SUCCESS) {
      mpiBroken = true;
      return Error::usage(fmt::format("{} on rank {} failed: {}", what, myRank,
                                      mpiError(code)));
    }
    auto begin = std::chrono::steady_clock::now();
    auto deadline = begin + std::chrono::duration<double>(timeout());
    for (long polls = 0;; ++polls) {
      int done = 0;
      if (int code = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
          code != MPI_SUCCESS) {
        mpiBroken = true;
        return Error::usage(fmt::format("{} on rank {} failed: {}", what,
                                        myRank, mpiError(code)));
      }
      if (done)
        break;
      auto now = std::chrono::steady_clock::now();
      if (now > deadline)
        return timedOut(what);
      // Spin briefly (a collective of small buffers ends within
      // microseconds), then poll less often so that oversubscribed ranks
      // leave the cores to the ones still computing.
      if (polls > 2000)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    drainArrivals();
    finishSends(/*wait=*/false);
    return {};
  }

  Error timedOut(const char *what) {
    mpiBroken = true;
    drainArrivals();
    std::string missing;
    int count = 0;
    for (int p = 0; p < n; ++p)
      if (p != myRank && seen[p] < sequence) {
        missing += (count ? ", " : "") + std::to_string(p);
        ++count;
      }
    if (!count)
      missing = "none known (every rank entered it; one may have died in it)";
    return Error::usage(fmt::format(
        "{} (collective #{}) on MPI rank {} of {} timed out after {} s "
        "(EIN_COMM_TIMEOUT): rank{} {} never arrived",
        what, sequence, myRank, n, timeout(), count > 1 ? "s" : "", missing));
  }

  MPI_Comm comm, side;
  bool isWorld;
  int myRank = 0, n = 1;
  int64_t sequence = 0;
  std::vector<int64_t> seen;
  std::vector<std::pair<MPI_Request, std::unique_ptr<int64_t>>> sends;
};

} // namespace

void abandonMPI() { mpiBroken = true; }

ErrorOr<std::unique_ptr<Communicator>> mpiWorld() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return Error::usage("MPI is already initialized: one MPI world per "
                        "process");
  int provided = 0;
  if (int code =
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      code != MPI_SUCCESS)
    return Error::usage("MPI_Init failed: " + mpiError(code));
  auto world = std::make_unique<MPICommunicator>(MPI_COMM_WORLD, true);
  auto timeout = defaultCommTimeout();
  if (!timeout)
    return timeout.error();
  world->setTimeout(*timeout);
  return std::unique_ptr<Communicator>(std::move(world));
}

#endif

} // namespace ein
