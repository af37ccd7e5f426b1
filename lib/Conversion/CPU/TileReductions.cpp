// The ein-tile-reductions pass: reductions over an axis that is outer in
// memory (sum over the first axis) run tile by tile, the reduced loop
// outside the tile's rows, so each input plane streams sequentially into an
// output tile that stays in cache. Sizes and strides may be known only at
// run time.
#include "ein/Conversion/CPU/HostCPU.h"
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <optional>

namespace ein {

#define GEN_PASS_DEF_TILEREDUCTIONS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace arith = mlir::arith;
namespace linalg = mlir::linalg;
using mlir::Value;
using mlir::utils::IteratorType;
constexpr int64_t kDynamic = mlir::ShapedType::kDynamic;

/// A reduction worth tiling: its outermost loop `rows` is parallel, and a
/// reduced loop is more major than `rows` in the input's layout.
struct Candidate {
  linalg::GenericOp op;
  llvm::SmallVector<int64_t> ranges; // trip counts; kDynamic: run time only
  linalg::FillOp fill; // a fill of the output right before, if any
};

/// How major each axis of `type` is in memory: by the strides when the type
/// gives them all (the larger, the more major; ties in axis order), else by
/// axis order, as in the row-major layout that strides known only at run
/// time nearly always have. Larger is more major; std::nullopt when the
/// layout is not strided. The order only steers performance: the tiled loops
/// read and write through the real strides whatever they are.
std::optional<llvm::SmallVector<int64_t>> majorness(mlir::MemRefType type) {
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(mlir::getStridesAndOffset(type, strides, offset)))
    return std::nullopt;
  int64_t rank = type.getRank();
  llvm::SmallVector<int64_t> rankOf(rank);
  for (int64_t i = 0; i < rank; ++i)
    rankOf[i] = rank - i;
  if (llvm::any_of(strides, [](int64_t s) { return s == kDynamic; }))
    return rankOf;
  for (int64_t i = 0; i < rank; ++i) {
    rankOf[i] = 0;
    for (int64_t j = 0; j < rank; ++j)
      rankOf[i] +=
          strides[j] < strides[i] || (strides[j] == strides[i] && j > i);
  }
  return rankOf;
}

std::optional<Candidate> match(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  if (iterators.size() < 3 || iterators[0] != IteratorType::parallel)
    return std::nullopt;
  auto in = llvm::dyn_cast<mlir::MemRefType>(op.getDpsInputs()[0].getType());
  auto out = llvm::dyn_cast<mlir::MemRefType>(op.getDpsInits()[0].getType());
  if (!in || !out || !out.getElementType().isIntOrFloat())
    return std::nullopt;
  auto major = majorness(in);
  int64_t offset;
  llvm::SmallVector<int64_t> outStrides;
  if (!major ||
      mlir::failed(mlir::getStridesAndOffset(out, outStrides, offset)))
    return std::nullopt;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Empty loops known at compile time: an empty loop leaves nothing to tile
  // (and a tile of 0 rows would not be a tile). Sizes known only at run time
  // get a tile of at least one row.
  if (llvm::any_of(ranges, [](int64_t r) { return r != kDynamic && r < 1; }))
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
      reducedOutside |= at && (*major)[*at] > (*major)[*rowsAt];
    } else {
      parallelInside = true;
    }
  }
  if (!reducedOutside || !parallelInside)
    return std::nullopt;
  Candidate c{op, ranges, nullptr};
  if (auto fill = llvm::dyn_cast_or_null<linalg::FillOp>(op->getPrevNode()))
    if (fill.getDpsInits()[0] == op.getDpsInits()[0])
      c.fill = fill;
  return c;
}

struct TileReductionsPass : impl::TileReductionsBase<TileReductionsPass> {
  using TileReductionsBase::TileReductionsBase;

  /// Rows per tile: the output tile fills about `tile-bytes`, and there are
  /// at least `items` tiles while the rows allow.
  int64_t tileRows(llvm::ArrayRef<int64_t> ranges, linalg::GenericOp op,
                   int64_t items) {
    int64_t rowBytes = outputBytes(op);
    auto iterators = op.getIteratorTypesArray();
    for (unsigned l = 1; l < iterators.size(); ++l)
      if (iterators[l] == IteratorType::parallel)
        rowBytes *= ranges[l];
    int64_t all = ranges[0];
    int64_t rows = std::clamp<int64_t>(
        int64_t(tileBytes) / std::max<int64_t>(1, rowBytes), 1, all);
    rows = std::min(rows, std::max<int64_t>(1, all / items));
    if (rows >= all && all > 1)
      rows = (all + 1) / 2;
    return rows;
  }

  /// The same at run time, from the loop sizes read off the operands; at
  /// least 1, also for 0 rows.
  Value tileRows(mlir::RewriterBase &rewriter, linalg::GenericOp op,
                 int64_t items) {
    mlir::Location loc = op.getLoc();
    mlir::ArithBuilder ab(rewriter, loc);
    auto cst = [&](int64_t v) -> Value {
      return rewriter.create<arith::ConstantIndexOp>(loc, v);
    };
    auto ranges = llvm::cast<linalg::LinalgOp>(op.getOperation())
                      .createLoopRanges(rewriter, loc);
    auto size = [&](unsigned l) {
      return mlir::getValueOrCreateConstantIndexOp(rewriter, loc,
                                                   ranges[l].size);
    };
    Value rowBytes = cst(outputBytes(op));
    auto iterators = op.getIteratorTypesArray();
    for (unsigned l = 1; l < iterators.size(); ++l)
      if (iterators[l] == IteratorType::parallel)
        rowBytes = ab.mul(rowBytes, size(l));
    Value all = size(0), one = cst(1);
    auto min = [&](Value x, Value y) {
      return rewriter.createOrFold<arith::MinSIOp>(loc, x, y);
    };
    auto max = [&](Value x, Value y) {
      return rewriter.createOrFold<arith::MaxSIOp>(loc, x, y);
    };
    auto div = [&](Value x, Value y) {
      return rewriter.createOrFold<arith::DivSIOp>(loc, x, y);
    };
    Value rows = max(min(div(cst(tileBytes), max(one, rowBytes)), all), one);
    rows = min(rows, max(one, div(all, cst(items))));
    Value whole = rewriter.create<arith::AndIOp>(
        loc, ab.sgt(rows, ab.sub(all, one)), ab.sgt(all, one));
    Value half = rewriter.createOrFold<arith::CeilDivSIOp>(loc, all, cst(2));
    return rewriter.create<arith::SelectOp>(loc, whole, half, rows);
  }

  /// Bytes per output element (at least 1).
  static int64_t outputBytes(linalg::GenericOp op) {
    auto out = llvm::cast<mlir::MemRefType>(op.getDpsInits()[0].getType());
    return std::max<int64_t>(1, out.getElementTypeBitWidth() / 8);
  }

  void runOnOperation() override {
    int64_t items = workItems > 0 ? int64_t(workItems) : defaultWorkItems();
    std::vector<Candidate> found;
    getOperation().walk([&](linalg::GenericOp op) {
      // Inside a fused tile (ein-fuse-rows) the op already runs on one core
      // over a few rows: no parallel loop of its own.
      if (op->getParentOfType<mlir::scf::ForallOp>())
        return;
      if (auto c = match(op))
        found.push_back(*c);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (Candidate &c : found) {
      rewriter.setInsertionPoint(c.op);
      auto options = linalg::LinalgTilingOptions().setLoopType(
          linalg::LinalgTilingLoopType::ParallelLoops);
      if (llvm::is_contained(c.ranges, kDynamic)) {
        Value rows = tileRows(rewriter, c.op, items);
        options.setTileSizeComputationFunction(
            [rows](mlir::OpBuilder &, mlir::Operation *) {
              return llvm::SmallVector<Value, 4>{rows};
            });
      } else {
        options.setTileSizes(
            llvm::ArrayRef<int64_t>{tileRows(c.ranges, c.op, items)});
      }
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
