// The mesh dialect's reduction kind of each compiled collective reduction,
// both ways: MLIRGen emits mesh ops by it and ein-mesh-to-calls lowers them
// by it (which ReduceKind completes by which is ReduceKinds.def's Ranks
// column, read through compiledReduction).
#pragma once

#include "ein/Runtime/CollectiveCalls.h"

#include "mlir/Dialect/Mesh/IR/MeshOps.h"

#include <optional>

namespace ein {

/// The mesh reduction of a compiled one: a mean is MLIR's `average` (the
/// group's mean: a sum divided by the group's size).
mlir::mesh::ReductionKind meshReduction(CollectiveReduction reduction);

/// The compiled reduction of a mesh one, or none for those the entry points
/// have not (product, bitwise, generic).
std::optional<CollectiveReduction>
collectiveReduction(mlir::mesh::ReductionKind kind);

} // namespace ein
