// What a sharded program's `mesh` collectives become as calls of the
// runtime's entry points (ein/Runtime/CollectiveCalls.h), shared by the CPU's
// `ein-mesh-to-calls` pass and the CUDA emitter, so that both take and refuse
// the same collectives.
#pragma once

#include "ein/Runtime/CollectiveCalls.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"

#include <optional>
#include <string>

namespace ein {

/// The runtime's reduction code of a mesh reduction; none for those the
/// communicator has not (product, bitwise, generic).
std::optional<CollectiveReduction>
meshReductionCode(mlir::mesh::ReductionKind kind);

/// Why the mesh collective `op` (all_reduce, reduce_scatter or all_gather)
/// cannot become calls, or "" when it can: one mesh axis, the result's
/// element type the operand's, a type the communicator moves (reduces, for a
/// reduction), a mean of f32 or f64, a gather along dim 0.
std::string meshCollectiveRefusal(mlir::Operation *op);

} // namespace ein
