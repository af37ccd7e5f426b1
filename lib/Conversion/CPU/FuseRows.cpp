// The ein-fuse-rows pass: an elementwise op that reads row reductions (the
// division of a softmax, the normalisation of a layer norm) runs tile by
// tile of rows, with the reductions and everything else it reads computed
// inside the tile, so a row is read from memory once and stays in cache.
#include "ein/Conversion/CPU/Fusion.h"
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace ein {

#define GEN_PASS_DEF_FUSEROWS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace linalg = mlir::linalg;

/// A reduction that may be computed inside a row tile: one result, reduced
/// loops, and not a contraction (whose place is ein-tile-contractions).
bool isRowReduction(mlir::Operation *op) {
  auto generic = llvm::dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic->getNumResults() == 1 &&
         generic.getNumReductionLoops() > 0 &&
         !linalg::isaContractionOpInterface(generic);
}

/// How many leading loops of `root` are its rows: the loops through which
/// it reads a row reduction, when they are its leading loops and it writes
/// its result in loop order. 0: not a root.
unsigned rowLoops(linalg::GenericOp root) {
  if (root.getNumReductionLoops() != 0 || root->getNumResults() != 1 ||
      !root.getMatchingIndexingMap(root.getDpsInitOperand(0)).isIdentity())
    return 0;
  unsigned rows = 0;
  for (mlir::OpOperand *input : root.getDpsInputOperands()) {
    if (!isRowReduction(input->get().getDefiningOp()))
      continue;
    mlir::AffineMap map = root.getMatchingIndexingMap(input);
    // The reduction's result is indexed by the root's leading loops, in
    // order: (d0, ..., d{r-1}).
    unsigned count = map.getNumResults();
    if (count == 0 || count >= root.getNumLoops())
      return 0;
    for (unsigned i = 0; i < count; ++i)
      if (map.getResult(i) != mlir::getAffineDimExpr(i, root.getContext()))
        return 0;
    if (rows != 0 && rows != count)
      return 0;
    rows = count;
  }
  return rows;
}

/// Which producers the tile computes: fills and non-contraction generics
/// (elementwise ops and row reductions).
std::tuple<bool, bool> fuseIntoTile(mlir::tensor::ExtractSliceOp,
                                    mlir::OpResult producer, bool) {
  mlir::Operation *op = producer.getOwner();
  bool fuse =
      llvm::isa<linalg::FillOp>(op) ||
      (llvm::isa<linalg::GenericOp>(op) &&
       !linalg::isaContractionOpInterface(llvm::cast<linalg::LinalgOp>(op)));
  return {fuse, false};
}

/// Erases the ops on tensors that nothing reads any more (the originals of
/// the ops now computed in a tile), last first so that chains die whole.
void eraseDeadProducers(mlir::RewriterBase &rewriter, mlir::ModuleOp module) {
  llvm::SmallVector<mlir::Operation *> ops;
  module.walk([&](mlir::Operation *op) {
    if (llvm::isa<linalg::LinalgOp, mlir::tensor::EmptyOp>(op))
      ops.push_back(op);
  });
  for (mlir::Operation *op : llvm::reverse(ops))
    if (mlir::isOpTriviallyDead(op))
      rewriter.eraseOp(op);
}

struct FuseRowsPass : impl::FuseRowsBase<FuseRowsPass> {
  using FuseRowsBase::FuseRowsBase;

  void runOnOperation() override {
    llvm::SmallVector<std::pair<linalg::GenericOp, unsigned>> roots;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<mlir::scf::ForallOp>())
        return;
      if (unsigned rows = rowLoops(op))
        roots.push_back({op, rows});
    });
    mlir::IRRewriter rewriter(&getContext());
    // The last root first: it takes in every earlier op it reads, earlier
    // roots included, which then die instead of getting tiles of their own.
    for (auto [root, rows] : llvm::reverse(roots)) {
      if (root->use_empty()) {
        rewriter.eraseOp(root);
        eraseDeadProducers(rewriter, getOperation());
        continue;
      }
      // Rows one at a time on every row loop but the innermost, which takes
      // `rowsPerTile`: a tile of a softmax over 512 f32 is 16 KiB per
      // tensor it streams, well inside the L2 cache.
      llvm::SmallVector<mlir::OpFoldResult> sizes(root.getNumLoops(),
                                                  rewriter.getIndexAttr(0));
      for (unsigned i = 0; i < rows; ++i)
        sizes[i] = rewriter.getIndexAttr(i + 1 == rows ? rowsPerTile : 1);
      mlir::scf::SCFTileAndFuseOptions options;
      options.tilingOptions.setTileSizes(sizes).setLoopType(
          mlir::scf::SCFTilingOptions::LoopType::ForallOp);
      options.setFusionControlFn(fuseIntoTile);
      auto tileable =
          llvm::dyn_cast<mlir::TilingInterface>(root.getOperation());
      if (!tileable)
        continue; // TilingInterface's models are not registered
      rewriter.setInsertionPoint(root);
      mlir::FailureOr<mlir::scf::SCFTileAndFuseResult> tiled =
          mlir::scf::tileConsumerAndFuseProducersUsingSCF(rewriter, tileable,
                                                          options);
      if (mlir::failed(tiled))
        continue; // the op keeps its own loops: slower, never wrong
      for (mlir::OpResult result : root->getResults())
        if (mlir::Value replacement = tiled->replacements.lookup(result))
          rewriter.replaceAllUsesWith(result, replacement);
      // Mark the tile loop for ein-parallel-tiles and for `einc report`.
      for (mlir::LoopLikeOpInterface loop : tiled->loops)
        loop->setAttr(kRowTilesAttr, rewriter.getUnitAttr());
      rewriter.eraseOp(root);
      eraseDeadProducers(rewriter, getOperation());
    }
  }
};

} // namespace

} // namespace ein
