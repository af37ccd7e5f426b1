// The MPI communicator (CPU ranks under mpirun): MPI_COMM_WORLD and its
// MPI_Comm_split sub-groups. Every collective is MPI's non-blocking one,
// polled with MPI_Test against the timeout, and MPI_Init is waited for
// within it too, so a rank that dies or never arrives is an error on the
// others, not a hang. To name the ranks missing,
// each rank tells its peers, on a duplicate of the group's communicator,
// the number of the collective it enters. bf16 and f16 are reduced in f32
// (widened, reduced by MPI, rounded once). Without MPI (EIN_HAVE_MPI unset)
// mpiWorld refuses by name.
#include "ein/Runtime/Communicator.h"

#include <fmt/format.h>

#include <cstdlib>
#include <unistd.h>

#ifdef EIN_HAVE_MPI
#include "ein/Runtime/FloatConvert.h"

// The C API only: MPI's deprecated C++ bindings need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
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

ErrorOr<std::vector<std::string>> mpirunSelf(int64_t ranks) {
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0)
    return Error::usage("cannot find this einc's own path (/proc/self/exe) "
                        "to launch it under mpirun");
  std::vector<std::string> words = {"mpirun", "-n", std::to_string(ranks),
                                    "--oversubscribe"};
  if (geteuid() == 0)
    words.push_back("--allow-run-as-root");
  words.push_back(std::string(self, size_t(length)));
  return words;
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
  case StorageType::I8:
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
    heard.assign(n, std::chrono::steady_clock::now());
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

  /// Tells every peer that this rank is in collective number `sequence`:
  /// once as it enters, then as a heartbeat while it waits.
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
      heard[status.MPI_SOURCE] = std::chrono::steady_clock::now();
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
    // While it waits, a rank repeats its announcement every `beat`, so
    // that on a timeout the others can tell a rank that never came from
    // one that came and then went silent (stopped, or died in it).
    auto beat = std::chrono::duration<double>(std::min(1.0, timeout() / 4));
    auto lastBeat = begin;
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
        return timedOut(what, 2 * beat);
      if (now - lastBeat > beat) {
        lastBeat = now;
        drainArrivals();
        finishSends(/*wait=*/false);
        announce();
      }
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

  /// The error of a collective past its timeout, naming the ranks that
  /// never entered it, else those that entered it but have not been heard
  /// from for `silence` (no heartbeat).
  Error timedOut(const char *what, std::chrono::duration<double> silence) {
    mpiBroken = true;
    drainArrivals();
    auto now = std::chrono::steady_clock::now();
    std::vector<int> absent, silent;
    for (int p = 0; p < n; ++p)
      if (p != myRank && seen[p] < sequence)
        absent.push_back(p);
      else if (p != myRank && now - heard[p] > silence)
        silent.push_back(p);
    auto ranks = [](const std::vector<int> &list) {
      return fmt::format("rank{} {}", list.size() > 1 ? "s" : "",
                         fmt::join(list, ", "));
    };
    std::string who;
    if (!absent.empty())
      who = fmt::format("{} never arrived", ranks(absent));
    else if (!silent.empty()) {
      double quiet = 0;
      for (int p : silent)
        quiet = std::max(quiet,
                         std::chrono::duration<double>(now - heard[p]).count());
      who =
          fmt::format("{} entered it but {} not answered for {:.1f} s "
                      "(stopped, or died in it)",
                      ranks(silent), silent.size() > 1 ? "have" : "has", quiet);
    } else
      who = "every rank entered it and still answers, yet it did not "
            "complete";
    return Error::usage(fmt::format(
        "{} (collective #{}) on MPI rank {} of {} timed out after {} s "
        "(EIN_COMM_TIMEOUT): {}",
        what, sequence, myRank, n, timeout(), who));
  }

  MPI_Comm comm, side;
  bool isWorld;
  int myRank = 0, n = 1;
  int64_t sequence = 0;
  std::vector<int64_t> seen;
  /// When each peer was last heard from (an announcement or heartbeat).
  std::vector<std::chrono::steady_clock::time_point> heard;
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
  auto timeout = defaultCommTimeout();
  if (!timeout)
    return timeout.error();
  // MPI_Init waits for every rank of the job (Open MPI's start-up
  // exchange), with no timeout of its own: a rank stopped or stuck before
  // it would hang the others. So it runs on a thread of its own, waited for
  // within the timeout; past it this rank leaves with an error (the thread
  // stays blocked until the process exits) and mpirun ends the job.
  // MPI_THREAD_SERIALIZED: the MPI calls after it come from the calling
  // thread, one at a time.
  struct Start {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    int code = MPI_SUCCESS;
  };
  auto start = std::make_shared<Start>();
  std::thread([start] {
    int provided = 0, code = MPI_Init_thread(nullptr, nullptr,
                                             MPI_THREAD_SERIALIZED, &provided);
    std::lock_guard<std::mutex> lock(start->mutex);
    start->code = code;
    start->done = true;
    start->finished.notify_all();
  }).detach();
  {
    std::unique_lock<std::mutex> lock(start->mutex);
    if (!start->finished.wait_for(lock, std::chrono::duration<double>(*timeout),
                                  [&] { return start->done; })) {
      mpiBroken = true;
      const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
      return Error::usage(fmt::format(
          "MPI start-up (MPI_Init) on rank {} of {} timed out after {} s "
          "(EIN_COMM_TIMEOUT): a rank of the job never reached it (stopped, "
          "stuck or killed before it), and MPI cannot say which",
          rank ? rank : "?", launcherWorldSize(), *timeout));
    }
    if (start->code != MPI_SUCCESS)
      return Error::usage("MPI_Init failed: " + mpiError(start->code));
  }
  auto world = std::make_unique<MPICommunicator>(MPI_COMM_WORLD, true);
  world->setTimeout(*timeout);
  return std::unique_ptr<Communicator>(std::move(world));
}

#endif

} // namespace ein
