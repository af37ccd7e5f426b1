// The collectives compiled code calls (docs/distributed.md §4): C entry
// points that the `ein-mesh-to-calls` pass emits for the `mesh` dialect's
// collectives, run on the calling thread's rank context (one communicator
// per mesh axis) that a sharded run sets around each call. MLIR-free.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ein {

// Not Communicator.h: ein::ReduceOp there is the dialect's op class in a
// file that includes both (ein-mesh-to-calls).
class Communicator;

/// The reduction code of a compiled collective: the communicator's three,
/// and the group's mean (a sum divided by the group's size; f32 and f64).
enum class CollectiveReduction : int32_t {
  Sum = 0,
  Max = 1,
  Min = 2,
  Mean = 3
};

/// Why a compiled collective cannot take `type` with `reduction` (none: a
/// move, not a reduction), or nullopt when it can: reductions of f64, f32,
/// f16, bf16, i64 and i32 (the communicator's), averages of f32 and f64.
/// The pass refuses by it at compile time; the entry points check it too.
std::optional<std::string>
collectiveRefusal(runtime::StorageType type,
                  std::optional<CollectiveReduction> reduction);

/// The entry points' names, for the pass that emits their calls and the JIT
/// that resolves them: one place.
inline constexpr const char *kAllReduceCall = "ein_comm_all_reduce";
inline constexpr const char *kReduceScatterCall = "ein_comm_reduce_scatter";
inline constexpr const char *kAllGatherCall = "ein_comm_all_gather";
inline constexpr const char *kAxisRankCall = "ein_comm_axis_rank";

/// The rank context of the calling thread while it lives (outside one, an
/// entry point does nothing: JITFunction refuses to call code compiled with
/// collectives there): `axisGroups[i]`
/// is the group of mesh axis i (meshAxisGroup), which the compiled
/// collectives over axis i run on. The first collective that fails is kept
/// (error()); the later ones then do nothing, so a compiled function runs
/// to its end and the caller reports the failure. Scopes do not nest.
class CollectiveScope {
public:
  explicit CollectiveScope(std::vector<Communicator *> axisGroups);
  ~CollectiveScope();
  CollectiveScope(const CollectiveScope &) = delete;
  CollectiveScope &operator=(const CollectiveScope &) = delete;
  /// The first failure of a collective called in this scope, if any.
  std::optional<Error> error() const;
  /// Whether the calling thread is inside a scope: code compiled with
  /// collectives is called only there (JITFunction refuses otherwise).
  static bool active();
  /// An error naming `function` (compiled with collectives) when the
  /// calling thread is outside a scope; nothing inside one.
  static ErrorOr<void> required(const std::string &function);
};

} // namespace ein

extern "C" {
/// data[0 .. count) = the reduction `op` (CollectiveReduction) over the
/// ranks of mesh axis `axis` of data (in place); `type` is a
/// runtime::StorageType. Pointers are passed as integers.
void ein_comm_all_reduce(int64_t data, int64_t count, int32_t type, int32_t op,
                         int32_t axis);
/// recv[0 .. total/n) = block `rank` of the reduction over axis `axis`'s n
/// ranks of send[0 .. total).
void ein_comm_reduce_scatter(int64_t send, int64_t recv, int64_t total,
                             int32_t type, int32_t op, int32_t axis);
/// recv[r·count ...] = rank r's send[0 .. count), over axis `axis`.
void ein_comm_all_gather(int64_t send, int64_t recv, int64_t count,
                         int32_t type, int32_t axis);
/// This rank's coordinate on mesh axis `axis` (its rank in the axis group);
/// 0 after a failure.
int64_t ein_comm_axis_rank(int32_t axis);
}
