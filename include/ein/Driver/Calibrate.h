// `einc calibrate`: this CPU's peak figures and this machine's shared-memory
// fabric (MPI ranks), stored for `einc run --time` and the `host` fabric.
#pragma once

#include "ein/Analysis/Collectives.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Support/Error.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ein {

/// Peak figures of this machine.
struct Calibration {
  double peakFlops = 0;    // f32 FLOP/s: cores x clock x SIMD FMA width
  double bandwidth = 0;    // bytes/s read+write, measured by a JIT'd copy
  double matmulFlops = 0;  // f32 FLOP/s ein's own matmul reached
  std::string description; // how peakFlops was derived
  /// The shared-memory fabric among MPI ranks of this machine (0 when not
  /// measured): alpha from the smallest all-reduces, B (busbw, as
  /// nccl-tests computes it) from the largest.
  double fabricLatency = 0;      // seconds
  double fabricBusBandwidth = 0; // bytes/s
  int64_t fabricRanks = 0;       // the ranks it was measured on
  std::string fabricSource;      // how: "MPI, 2 ranks, 5 collectives ..."
  /// Per collective kind, its latency and busbw by size (empty in files
  /// written before the tables; then the host fabric is (alpha, B) alone).
  std::vector<MeasuredCollective> fabricCollectives;
};

/// The file the figures live in: $XDG_CACHE_HOME/ein/calibration.json, or
/// ~/.cache/ein/calibration.json.
std::string calibrationPath();
/// Reads the stored figures, each 0 when absent (all of them when there is
/// no file); an error naming the field when one is not a positive finite
/// number.
ErrorOr<Calibration> readCalibration();
/// The CPU figures; nullopt when there are none or the file is malformed.
std::optional<Calibration> loadCalibration();

/// The fabric called `name`: an entry of the fabric table (fabricTable()),
/// or `host`, this machine's shared memory as `einc calibrate` measured it
/// (an error naming `einc calibrate` when it has not been measured); any
/// other name is an error listing the valid ones.
ErrorOr<FabricSpec> resolveFabric(const std::string &name);
/// Every valid fabric name, the table's and `host`, joined by `separator`.
std::string resolvableFabricNames(const std::string &separator);

/// Fits the fabric to an all-reduce sweep over `ranks` ranks, each entry
/// (bytes, seconds): alpha is the median time of the sweep's all-reduces
/// of at most 1 KiB, B the median of busFactor * bytes / (seconds - alpha)
/// (nccl-tests' busbw, less the latency) over those of at least 16 MiB. An
/// error when the sweep lacks either range or a large one is not slower
/// than alpha.
ErrorOr<FabricSpec>
fitFabric(const std::vector<std::pair<double, double>> &sweep, int64_t ranks);

/// Fits one collective's table to its sweep over `ranks` ranks, each entry
/// (bytes, seconds): the latency is the median time of the calls of at
/// most 1 KiB; each size of at least 4 KiB whose time exceeds it gives
/// (bytes, busFactor * bytes / (seconds - latency)), the busbw that makes
/// collectiveSeconds exact there (a size no slower than the latency is
/// latency-bound and left out). An error when the sweep lacks either.
ErrorOr<MeasuredCollective>
fitCollective(CollectiveKind kind,
              const std::vector<std::pair<double, double>> &sweep,
              int64_t ranks);

/// The sizes between a collective's grid sizes where its time bends, timed
/// with `timeAt` (bytes to seconds): a step (MPI's algorithm switch, a
/// cache's edge) between two measured sizes makes the interpolation wrong
/// over the whole interval (all-reduce on 2 MPI ranks here doubles its time
/// from 30 to 32 MiB, and 24 MiB was modelled 1.6x long from 16 and
/// 32 MiB; bench/README.md). Each interval of `grid` (bytes, seconds) from
/// 4 KiB is timed at its geometric midpoint (a multiple of 64 B, never a
/// check size such as 1.5 x 2^k); where the interpolation of the time past the
/// latency misses it by more than 12%, both halves are refined again, at
/// most 3 halvings deep. Returns the new (bytes, seconds); `timeAt` must
/// give every rank the same time (the slowest rank's) so ranks refine alike.
ErrorOr<std::vector<std::pair<double, double>>>
refineSweep(const std::vector<std::pair<double, double>> &grid,
            const std::function<ErrorOr<double>(int64_t)> &timeAt);

/// "48KiB,3MiB,24MiB" (each a whole number of B, KiB or MiB, at least
/// 64 B and at most 256 MiB) as bytes; an error naming the bad item.
ErrorOr<std::vector<int64_t>> parseByteSizes(const std::string &list);

/// Measures and stores the figures, with the kernels compiled for `cpu`
/// (the host by default; its vector width sets the theoretical peak), then
/// the shared-memory fabric on MPI ranks launched with mpirun (said not to
/// be measured, without failing, when MPI or mpirun is missing); returns the
/// text that reports them. Under mpirun it is one rank of the fabric's
/// measurement instead (CalibrateFabric.cpp); with `checkBytes` (under
/// mpirun only) it measures nothing new but times the collectives at those
/// sizes against the stored host model.
ErrorOr<std::string> runCalibrate(const CPUOptions &cpu = {},
                                  const std::vector<int64_t> &checkBytes = {});

} // namespace ein
