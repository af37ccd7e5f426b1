// What a sharded program's `mesh` collectives become as calls of the
// runtime's entry points (ein/Runtime/CollectiveCalls.h), shared by the CPU's
// `ein-mesh-to-calls` pass and the CUDA emitter, so that both take and refuse
// the same collectives.
#pragma once

#include "ein/Dialect/MeshReduction.h"
#include "ein/Runtime/CollectiveCalls.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"

#include <optional>
#include <string>

namespace ein {

/// Why the mesh collective `op` (all_reduce, reduce_scatter, all_gather or
/// all_to_all) cannot become calls, or "" when it can: one mesh axis, the
/// result's element type the operand's, a type the communicator moves
/// (reduces, for a reduction: collectiveReduction), a mean of f32 or f64; a
/// gather along dim 0, or along another dim or an all-to-all (which move
/// blocks through a transpose) of an operand of known sizes. (The CUDA
/// emitter takes all_reduce and reduce_scatter only, and refuses the others
/// by name first.)
std::string meshCollectiveRefusal(mlir::Operation *op);

} // namespace ein
