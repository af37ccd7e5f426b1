// What the fusion passes (ein-fuse-elementwise, ein-fuse-rows) leave in the
// IR for others to read: the fused locations and the row-tile loops.
#pragma once

#include "llvm/ADT/StringRef.h"

namespace ein {

/// The metadata of the `FusedLoc` an op fused by ein-fuse-elementwise
/// carries: its parts are the locations of every op it computes.
inline constexpr llvm::StringLiteral kFusedLocationTag = "ein.fused";

/// The unit attribute ein-fuse-rows puts on the `scf.forall` over the row
/// tiles it makes (for readers of the IR: tests, and `einc report`, which
/// counts every op inside as fused in that loop).
inline constexpr llvm::StringLiteral kRowTilesAttr = "ein.row_tiles";

} // namespace ein
