// Part of ein-tile-contractions: the bf16 pair dot product micro-kernel step
// (vdpbf16ps, avx512bf16) and when a contraction takes it.
#pragma once

#include "MatchContraction.h"

#include "mlir/IR/Builders.h"

namespace ein {

/// Lanes of f32 in the vectors vdpbf16ps works on (512 bits).
constexpr int64_t kPairDotLanes = 16;

/// Whether `c` runs on bf16 pair dot products: the CPU has them (`bf16Dot`),
/// both operands are bf16, the accumulator f32 and the vectors 512-bit
/// (`lanes` f32 lanes).
bool usesPairDot(const Contraction &c, bool bf16Dot, int64_t lanes);

/// The bf16 pair at `at` (the last index even, the pair adjacent in memory)
/// of the bf16 memref `packed`, in all kPairDotLanes pairs of a
/// vector<32xbf16>.
mlir::Value broadcastPair(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value packed, mlir::ValueRange at);

/// acc[i] + a[2i] * b[2i] + a[2i+1] * b[2i+1] for the kPairDotLanes f32 lanes
/// of `acc` (vector<16xf32>) and the bf16 pairs of `a` and `b`
/// (vector<32xbf16>): one vdpbf16ps.
mlir::Value pairDot(mlir::OpBuilder &b, mlir::Location loc, mlir::Value acc,
                    mlir::Value a, mlir::Value bv);

} // namespace ein
