// The ein-tile-reductions pass: reductions over an axis that is outer in
// memory (sum over the first axis) run tile by tile, the reduced loop
// outside the tile's rows, so each input plane streams sequentially into an
// output tile that stays in cache.
#include "ein/Conversion/HostCPU.h"
#include "ein/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <optional>

namespace ein {

#define GEN_PASS_DEF_TILEREDUCTIONS
#include "ein/Conversion/Passes.h.inc"

namespace {

namespace linalg = mlir::linalg;
using mlir::utils::IteratorType;

/// A reduction worth tiling: its outermost loop `rows` is parallel, and a
/// reduced loop is more major than `rows` in the input's layout.
struct Candidate {
  linalg::GenericOp op;
  int64_t rows;        // trip count of loop 0
  int64_t rowBytes;    // bytes of output per value of loop 0
  linalg::FillOp fill; // a fill of the output right before, if any
};

std::optional<Candidate> match(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  if (iterators.size() < 3 || iterators[0] != IteratorType::parallel)
    return std::nullopt;
  auto in = llvm::dyn_cast<mlir::MemRefType>(op.getDpsInputs()[0].getType());
  auto out = llvm::dyn_cast<mlir::MemRefType>(op.getDpsInits()[0].getType());
  if (!in || !out || !in.getLayout().isIdentity() ||
      !out.getLayout().isIdentity() || !out.getElementType().isIntOrFloat())
    return std::nullopt;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Dynamic loops, or empty ones: an empty loop leaves nothing to tile (and
  // a tile of 0 rows would not be a tile).
  if (llvm::any_of(ranges, [](int64_t r) { return r < 1; }))
    return std::nullopt;
  mlir::AffineMap inMap = op.getIndexingMapsArray()[0];
  if (!inMap.isProjectedPermutation())
    return std::nullopt;
  auto loop = [&](unsigned l) {
    return mlir::getAffineDimExpr(l, op.getContext());
  };
  auto rowsAt = inMap.getResultPosition(loop(0));
  if (!rowsAt)
    return std::nullopt;
  // Some reduced loop must be more major than loop 0 in the input, and a
  // parallel loop must stay inside (the output tile's rows).
  bool reducedOutside = false, parallelInside = false;
  for (unsigned l = 1; l < iterators.size(); ++l) {
    if (iterators[l] == IteratorType::reduction) {
      auto at = inMap.getResultPosition(loop(l));
      reducedOutside |= at && *at < *rowsAt;
    } else {
      parallelInside = true;
    }
  }
  if (!reducedOutside || !parallelInside)
    return std::nullopt;
  Candidate c{op, ranges[0], 0, nullptr};
  int64_t rowElements = 1;
  for (unsigned l = 1; l < iterators.size(); ++l)
    if (iterators[l] == IteratorType::parallel)
      rowElements *= ranges[l];
  c.rowBytes = rowElements * out.getElementTypeBitWidth() / 8;
  if (auto fill = llvm::dyn_cast_or_null<linalg::FillOp>(op->getPrevNode()))
    if (fill.getDpsInits()[0] == op.getDpsInits()[0])
      c.fill = fill;
  return c;
}

struct TileReductionsPass : impl::TileReductionsBase<TileReductionsPass> {
  using TileReductionsBase::TileReductionsBase;

  void runOnOperation() override {
    int64_t items = workItems > 0 ? int64_t(workItems) : defaultWorkItems();
    std::vector<Candidate> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto c = match(op))
        found.push_back(*c);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (Candidate &c : found) {
      // Rows per tile: the output tile fills about `tile-bytes`, and there
      // are at least `items` tiles while the rows allow.
      int64_t rows = std::clamp<int64_t>(
          int64_t(tileBytes) / std::max<int64_t>(1, c.rowBytes), 1, c.rows);
      rows = std::min(rows, std::max<int64_t>(1, c.rows / items));
      if (rows >= c.rows && c.rows > 1)
        rows = (c.rows + 1) / 2;
      rewriter.setInsertionPoint(c.op);
      auto options =
          linalg::LinalgTilingOptions()
              .setTileSizes(llvm::ArrayRef<int64_t>{rows})
              .setLoopType(linalg::LinalgTilingLoopType::ParallelLoops);
      auto tiled = linalg::tileLinalgOp(rewriter, c.op, options);
      if (mlir::failed(tiled)) {
        c.op.emitError("ein-tile-reductions: tiling failed");
        return signalPassFailure();
      }
      auto inner = llvm::cast<linalg::GenericOp>(tiled->op.getOperation());
      // The tile's fill moves inside the tile: the output tile is zeroed
      // while it is in cache, not in a separate pass over all of memory.
      if (c.fill) {
        rewriter.setInsertionPoint(inner);
        auto fill = rewriter.create<linalg::FillOp>(
            c.fill.getLoc(), c.fill.getDpsInputs()[0], inner.getDpsInits()[0]);
        if (mlir::failed(linalg::linalgOpToLoops(rewriter, fill))) {
          fill.emitError("ein-tile-reductions: lowering to loops failed");
          return signalPassFailure();
        }
        rewriter.eraseOp(fill);
        rewriter.eraseOp(c.fill);
      }
      // Inside a tile: the reduced loops first, then the parallel ones in
      // their order, loop 0 (the tile's rows) included.
      llvm::SmallVector<unsigned> order;
      auto iterators = inner.getIteratorTypesArray();
      for (unsigned l = 0; l < iterators.size(); ++l)
        if (iterators[l] == IteratorType::reduction)
          order.push_back(l);
      for (unsigned l = 0; l < iterators.size(); ++l)
        if (iterators[l] == IteratorType::parallel)
          order.push_back(l);
      rewriter.setInsertionPoint(inner);
      auto interchanged = linalg::interchangeGenericOp(rewriter, inner, order);
      if (mlir::failed(interchanged)) {
        inner.emitError("ein-tile-reductions: interchange failed");
        return signalPassFailure();
      }
      // Sequential loops inside the parallel tile loop (affine-parallelize
      // would otherwise nest a second parallel region in it).
      rewriter.setInsertionPoint(*interchanged);
      if (mlir::failed(linalg::linalgOpToLoops(rewriter, *interchanged))) {
        interchanged->emitError(
            "ein-tile-reductions: lowering to loops failed");
        return signalPassFailure();
      }
      rewriter.eraseOp(*interchanged);
      rewriter.eraseOp(c.op);
    }
  }
};

} // namespace
} // namespace ein
