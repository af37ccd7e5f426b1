// Part of ein-tile-contractions: merging runs of loops that are contiguous in
// every operand of a contraction.
#pragma once

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace ein {

/// Rewrites `op` (a linalg.generic on buffers whose maps are projected
/// permutations) so that every run of loops that appears as consecutive axes
/// in the same order in each operand using it, and is contiguous in memory
/// there, is one loop over collapsed views (`memref.collapse_shape`). Where
/// the strides are known only at run time, the grouped op runs under an
/// scf.if that checks them and `op` itself otherwise. A zero fill of the
/// output right before `op` moves along. Only a grouped op that `accept`
/// takes is kept; erases `op` when it rewrites it.
void groupContractionAxes(
    mlir::linalg::GenericOp op,
    llvm::function_ref<bool(mlir::linalg::GenericOp)> accept);

} // namespace ein
