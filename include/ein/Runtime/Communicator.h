// The communicator of a group of ranks (docs/distributed.md §6): rank, size,
// sub-groups, and the collectives on host buffers, each bounded by a
// timeout. Implemented by simulated ranks (threads of one process, for
// tests) and by MPI (CPU ranks); MLIR-free.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ein {

/// The reduction of all-reduce and reduce-scatter.
enum class ReduceOp { Sum, Max, Min };
/// "sum", "max", "min".
const char *reduceOpName(ReduceOp op);

/// One rank's view of a group of ranks. Every collective must be called by
/// every rank of the group, in the same order, with the same type and count
/// (and root); a rank that does not arrive within `timeout()` seconds makes
/// the call fail on the others with an error naming the collective and the
/// missing ranks, and the group is then broken: every later call fails at
/// once. Nothing aborts the process.
///
/// Types: all-reduce and reduce-scatter take f64, f32, bf16, f16, i64 and
/// i32 (bf16 and f16 are summed in f32 and rounded once, to nearest even);
/// all-gather, all-to-all and broadcast move any type's bytes.
class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "2 simulated ranks", "MPI (4 ranks)".
  virtual std::string name() const = 0;

  /// data = op over the ranks of data (in place), `count` elements.
  virtual ErrorOr<void> allReduce(void *data, runtime::StorageType type,
                                  int64_t count, ReduceOp op) = 0;
  /// recv[r·count ...] = rank r's send[0 .. count), for every r.
  virtual ErrorOr<void> allGather(const void *send, void *recv,
                                  runtime::StorageType type, int64_t count) = 0;
  /// recv[0 .. total/size) = block `rank` of op over the ranks of send;
  /// `total` must be a multiple of size() (refused by name otherwise).
  virtual ErrorOr<void> reduceScatter(const void *send, void *recv,
                                      runtime::StorageType type, int64_t total,
                                      ReduceOp op) = 0;
  /// recv[r·count ...] = rank r's send[rank·count ...]: block r of this
  /// rank's `send` goes to rank r.
  virtual ErrorOr<void> allToAll(const void *send, void *recv,
                                 runtime::StorageType type, int64_t count) = 0;
  /// data = rank `root`'s data, on every rank.
  virtual ErrorOr<void> broadcast(void *data, runtime::StorageType type,
                                  int64_t count, int root) = 0;
  /// Collective over this group: the ranks that pass the same `color` form
  /// a new group, ranked by (`key`, rank).
  virtual ErrorOr<std::unique_ptr<Communicator>> split(int color, int key) = 0;

  double timeout() const { return timeoutSeconds; }
  void setTimeout(double seconds) { timeoutSeconds = seconds; }

protected:
  Communicator();

private:
  double timeoutSeconds;
};

/// `EIN_COMM_TIMEOUT` (seconds, > 0) or 300; a malformed value is an error.
ErrorOr<double> defaultCommTimeout();

/// The group of the ranks that share this rank's coordinates on every mesh
/// axis but `axis` (ranks laid out row-major over `meshShape`, the last axis
/// fastest): the group a collective over that axis runs on.
ErrorOr<std::unique_ptr<Communicator>>
meshAxisGroup(Communicator &world, const std::vector<int64_t> &meshShape,
              size_t axis);

/// Start-up check: every rank passes the hash of what it will run (program,
/// shapes, options); an error on every rank names the ranks whose hash
/// differs from rank 0's and says what the hash covers (`what`).
ErrorOr<void> checkSameOnAllRanks(Communicator &comm, uint64_t hash,
                                  const std::string &what);

/// Whether all-reduce and reduce-scatter take `type`.
bool isReducibleType(runtime::StorageType type);

/// out[i] = op over inputs[k][i] for k in order, `count` elements of `type`
/// (bf16/f16 widened to f32 and rounded once): the simulated ranks' sum and
/// the reference of every implementation.
ErrorOr<void> reduceBuffers(const std::vector<const void *> &inputs, void *out,
                            runtime::StorageType type, int64_t count,
                            ReduceOp op);

/// N simulated ranks: one Communicator per rank, to be used by one thread
/// each, sharing memory (tests; PyTorch's fake process group).
std::vector<std::unique_ptr<Communicator>> simulatedRanks(int n);

/// Whether this build has MPI.
bool haveMPI();
/// Whether this process was started by mpirun (OMPI_COMM_WORLD_SIZE,
/// PMI_SIZE) and how many ranks the job has; 0 when not.
int launcherWorldSize();
/// The command that starts `ranks` copies of this executable as one MPI job
/// on this host: `mpirun -n N --oversubscribe [--allow-run-as-root] SELF`,
/// the caller appending SELF's arguments (--ranks, calibrate's fabric).
ErrorOr<std::vector<std::string>> mpirunSelf(int64_t ranks);
/// The MPI world (MPI_Init on the first call, waited for within
/// EIN_COMM_TIMEOUT: a rank that never starts is an error on the others, not
/// a hang); refused by name when this build has no MPI. The returned
/// communicator finalizes MPI when destroyed unless a collective failed (then
/// the process must exit without it).
ErrorOr<std::unique_ptr<Communicator>> mpiWorld();
/// For a rank that leaves on an error: the MPI world is then destroyed
/// without MPI_Finalize, which would wait for ranks still inside a
/// collective; mpirun sees the rank's non-zero exit and ends the job.
void abandonMPI();

} // namespace ein
