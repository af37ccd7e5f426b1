// Transposes of small tiles held in vector registers, by vector shuffles:
// shared by ein-tile-transposes and the packing of ein-tile-contractions.
#pragma once

#include "mlir/IR/Builders.h"

namespace ein {

/// `rows` (n vectors of n values, n a power of 2) transposed: vector i of
/// the result holds value i of every row, by log2(n) rounds of interleaving
/// shuffles.
llvm::SmallVector<mlir::Value>
transposeSquare(mlir::OpBuilder &b, mlir::Location loc,
                llvm::ArrayRef<mlir::Value> rows);

/// `rows` (`lanes` vectors of `vl` values, row r holding lane r at `vl`
/// consecutive positions p) as the `lanes` vectors of the same values in
/// the interleaved order, position major and lanes minor (value f = `vl` j
/// + e of vector j is lane f % lanes at p = f / lanes): per vector, one
/// two-source shuffle per pair of the rows it draws from, merged by blends.
llvm::SmallVector<mlir::Value> interleaveRows(mlir::OpBuilder &b,
                                              mlir::Location loc,
                                              llvm::ArrayRef<mlir::Value> rows,
                                              int64_t vl);

} // namespace ein
