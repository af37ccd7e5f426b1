// The cost model of collectives (docs/distributed.md §5): the fabric table and
// nccl-tests' bus-bandwidth model of all-reduce, all-gather, reduce-scatter,
// all-to-all and broadcast.
#pragma once

#include "ein/Sema/Layout.h" // CollectiveKind, collectiveName
#include "ein/Support/BigInt.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

/// A link between the ranks of a group: its per-collective latency and its
/// bus bandwidth (what nccl-tests reports as busbw, which is the same for
/// every collective on a given fabric).
struct FabricSpec {
  std::string name;        // "nvlink-h100"
  std::string description; // "NVLink 4 within an HGX H100 board (8 GPUs)"
  double latency;          // seconds, alpha: the time of a tiny collective
  double busBandwidth;     // bytes/s, B
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

/// The modelled time: alpha + busFactor * bytes / B, and 0 for a group of
/// one.
double collectiveSeconds(CollectiveKind kind, double bytes, Int ranks,
                         const FabricSpec &fabric);

} // namespace ein
