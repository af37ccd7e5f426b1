// The cost model of collectives (docs/distributed.md §5): the fabric table,
// nccl-tests' bus-bandwidth model of all-reduce, all-gather, reduce-scatter,
// all-to-all and broadcast, and a measured fabric's busbw by size.
#pragma once

#include "ein/Sema/Layout.h" // CollectiveKind, collectiveName
#include "ein/Support/BigInt.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ein {

/// Every kind, in the enum's order (a measured fabric has each of them).
const std::vector<CollectiveKind> &collectiveKinds();

/// One collective as measured on a fabric (`host`, by `einc calibrate`): on
/// shared memory the bus bandwidth depends on the collective (copies against
/// sums) and on the size (what stays in cache), so it is a table, as
/// profiling planners (Alpa) keep one.
struct MeasuredCollective {
  CollectiveKind kind;
  double latency; // seconds: the time of its smallest calls
  /// (bytes S, bus bandwidth in bytes/s: busFactor * S / (t - latency)),
  /// S strictly ascending, each bandwidth positive and finite.
  std::vector<std::pair<double, double>> busBandwidth;
};

/// A link between the ranks of a group: its per-collective latency and its
/// bus bandwidth (what nccl-tests reports as busbw, which is the same for
/// every collective on a GPU fabric). A measured fabric also has `measured`,
/// one table per collective kind, which collectiveSeconds uses instead.
struct FabricSpec {
  std::string name;        // "nvlink-h100"
  std::string description; // "NVLink 4 within an HGX H100 board (8 GPUs)"
  double latency;          // seconds, alpha: the time of a tiny collective
  double busBandwidth;     // bytes/s, B
  /// Empty for the table's fabrics; for a measured one, every kind of
  /// collectiveKinds() once.
  std::vector<MeasuredCollective> measured = {};
};

/// Known fabrics: nvlink-h100, nvlink-h200, pcie5, ib-ndr. The one list of
/// them: `--fabric`'s check, its help and the report read it. This machine's
/// shared memory is measured by `einc calibrate`, not listed here.
const std::vector<FabricSpec> &fabricTable();
const FabricSpec *findFabric(const std::string &name);
/// The fabric of the report when none is named: nvlink-h100.
const FabricSpec &defaultFabric();
/// The table's names joined by `separator` ("nvlink-h100, nvlink-h200, ...").
std::string fabricNames(const std::string &separator);

/// nccl-tests' bus factor for a group of `ranks`: busbw = algbw * factor,
/// 2(n-1)/n for an all-reduce, (n-1)/n for all-gather, reduce-scatter and
/// all-to-all, 1 for a broadcast; 0 for a group of one (nothing moves).
double busFactor(CollectiveKind kind, Int ranks);

/// The bytes each rank sends for a collective over `bytes` (nccl-tests'
/// size: the whole buffer, i.e. the all-reduced buffer, the gathered
/// result, the reduce-scatter's input, the all-to-all's buffer):
/// busFactor * bytes, the traffic a ring moves per rank.
double bytesPerRank(CollectiveKind kind, double bytes, Int ranks);

/// The measured busbw of `m` at `bytes`: between the two measured sizes
/// around it, the one that makes the time past the latency (busFactor *
/// bytes / busbw) linear in bytes; the nearest measured size's outside
/// them.
double interpolateBusBandwidth(const MeasuredCollective &m, double bytes);

/// `kind`'s table in `fabric.measured`, or nullptr (a table fabric).
const MeasuredCollective *findMeasured(const FabricSpec &fabric,
                                       CollectiveKind kind);

/// An error naming what is wrong with `m` (no size, sizes not ascending, a
/// latency or bandwidth not positive and finite), or "" when it is valid.
std::string measuredCollectiveProblem(const MeasuredCollective &m);

/// The modelled time, 0 for a group of one: on a measured fabric
/// latency_k + busFactor * bytes / busbw_k(bytes) with kind k's table
/// (interpolateBusBandwidth), else alpha + busFactor * bytes / B.
double collectiveSeconds(CollectiveKind kind, double bytes, Int ranks,
                         const FabricSpec &fabric);

} // namespace ein
