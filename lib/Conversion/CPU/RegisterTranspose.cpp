// Transposes of small tiles held in vector registers, by vector shuffles
// (RegisterTranspose.h).
#include "RegisterTranspose.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

namespace ein {

using mlir::Location;
using mlir::OpBuilder;
using mlir::Value;
namespace vector = mlir::vector;

llvm::SmallVector<Value> transposeSquare(OpBuilder &b, Location loc,
                                         llvm::ArrayRef<Value> square) {
  int64_t n = square.size();
  llvm::SmallVector<Value> rows(square);
  // Row k of a round interleaves rows k/2 and k/2 + n/2 of the last one
  // (its low half for even k, high half for odd k); log2(n) rounds
  // transpose the tile.
  llvm::SmallVector<int64_t> low, high;
  for (int64_t e = 0; e < n / 2; ++e) {
    low.append({e, e + n});
    high.append({e + n / 2, e + n / 2 + n});
  }
  for (int64_t round = 1; round < n; round *= 2) {
    llvm::SmallVector<Value> next;
    for (int64_t k = 0; k < n / 2; ++k) {
      next.push_back(
          b.create<vector::ShuffleOp>(loc, rows[k], rows[k + n / 2], low));
      next.push_back(
          b.create<vector::ShuffleOp>(loc, rows[k], rows[k + n / 2], high));
    }
    rows = next;
  }
  return rows;
}

llvm::SmallVector<Value> interleaveRows(OpBuilder &b, Location loc,
                                        llvm::ArrayRef<Value> rows,
                                        int64_t vl) {
  int64_t lanes = rows.size();
  llvm::SmallVector<Value> out;
  for (int64_t j = 0; j < lanes; ++j) {
    auto lane = [&](int64_t e) { return (j * vl + e) % lanes; };
    auto at = [&](int64_t e) { return (j * vl + e) / lanes; };
    llvm::SmallVector<int64_t> from; // the rows, in order of appearance
    for (int64_t e = 0; e < vl; ++e)
      if (!llvm::is_contained(from, lane(e)))
        from.push_back(lane(e));
    Value merged;
    for (size_t i = 0; i < from.size(); i += 2) {
      int64_t first = from[i], second = from[std::min(i + 1, from.size() - 1)];
      llvm::SmallVector<int64_t> pick, blend;
      for (int64_t e = 0; e < vl; ++e) {
        bool ours = lane(e) == first || lane(e) == second;
        pick.push_back(lane(e) == second && second != first ? vl + at(e)
                       : ours                               ? at(e)
                                                            : 0);
        blend.push_back(ours ? vl + e : e);
      }
      Value pair =
          b.create<vector::ShuffleOp>(loc, rows[first], rows[second], pick);
      merged =
          merged ? b.create<vector::ShuffleOp>(loc, merged, pair, blend) : pair;
    }
    out.push_back(merged);
  }
  return out;
}

} // namespace ein
