// Part of ein-tile-contractions: which linalg.generic ops are contractions
// the tiled kernel takes, and the roles of their loops.
#pragma once

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace ein {

constexpr int64_t kDynamic = mlir::ShapedType::kDynamic;

/// A generic that computes C[..] += A[..] * B[..] summed over its reduction
/// loops, with the roles of its loops decided.
struct Contraction {
  mlir::linalg::GenericOp op;
  mlir::Value a, b, c; // `a` carries m, `b` carries n
  mlir::AffineMap mapA, mapB, mapC;
  unsigned m, n, k; // loop dims: register rows, vector lanes, inner sum
  llvm::SmallVector<unsigned> outerParallel, outerReduction;
  llvm::SmallVector<int64_t> ranges; // trip counts; kDynamic: run time only
  mlir::FloatType acc;
  mlir::linalg::FillOp zeroFill; // a zero fill of C folded into the kernel
  bool directCandidate = false;  // A in the accumulator type: the kernel
                                 // reads it in place if its type gives k
                                 // unit stride
};

/// The loop that indexes the operand's last axis (its contiguous one in an
/// identity layout); the maps are projected permutations.
inline unsigned innermostLoop(mlir::AffineMap map) {
  return map.getDimPosition(map.getNumResults() - 1);
}

/// Matches a body `yield out + cast(in0) * cast(in1)` (either order).
bool isMultiplyAccumulate(mlir::linalg::GenericOp op);

/// The strides of a strided memref type, kDynamic where only the run time
/// knows them; std::nullopt for a layout that is not strided.
std::optional<llvm::SmallVector<int64_t>> stridesOf(mlir::MemRefType type);

/// The position of loop `dim` among `map`'s results (a projected
/// permutation that uses it).
unsigned axisOf(mlir::AffineMap map, unsigned dim);

/// Decides whether `op` is a contraction the micro-kernel handles, and the
/// roles of its loops; std::nullopt leaves it to the generic lowering.
std::optional<Contraction> matchContraction(mlir::linalg::GenericOp op);

} // namespace ein
