// The ein-fuse-elementwise pass: elementwise linalg ops move into the ops
// that read them, so a chain of them runs as one loop nest on tensors.
#include "ein/Conversion/CPU/Fusion.h"
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ein {

#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace linalg = mlir::linalg;

/// Whether `reader` may take the producer it reads through `operand`: it
/// reads one producer element per iteration, and it is not a contraction.
bool readerTakes(mlir::OpOperand &operand) {
  auto reader = llvm::dyn_cast<linalg::GenericOp>(operand.getOwner());
  if (!reader || !reader.isDpsInput(&operand))
    return false;
  if (!reader.getMatchingIndexingMap(&operand).isPermutation())
    return false;
  return !linalg::isaContractionOpInterface(reader);
}

/// Whether computing `producer` again in each of its readers costs less
/// than a store and a load: arithmetic, but no exp, log, tanh and the like
/// (inside the row tiles of ein-fuse-rows the load hits the cache).
bool cheapToRecompute(linalg::GenericOp producer) {
  return !producer.getBody()
              ->walk([](mlir::Operation *op) {
                return op->getDialect() &&
                               op->getDialect()->getNamespace() == "math"
                           ? mlir::WalkResult::interrupt()
                           : mlir::WalkResult::advance();
              })
              .wasInterrupted();
}

/// The control of the fusion: the producer goes into every reader or none,
/// and into several only when it is cheap to compute again.
bool shouldFuse(mlir::OpOperand *operand) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || producer->getNumResults() != 1 ||
      producer.getNumReductionLoops() != 0)
    return false;
  mlir::Value value = producer->getResult(0);
  if (!value.hasOneUse() && !cheapToRecompute(producer))
    return false;
  return llvm::all_of(value.getUses(),
                      [](mlir::OpOperand &use) { return readerTakes(use); });
}

/// The leaves of a location: a fused one's parts, recursively.
void appendLeaves(mlir::Location loc,
                  llvm::SmallVectorImpl<mlir::Location> &leaves) {
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location part : fused.getLocations())
      appendLeaves(part, leaves);
    return;
  }
  if (!llvm::is_contained(leaves, loc))
    leaves.push_back(loc);
}

/// One fusion of a producer into a reader (MLIR's FuseElementwiseOps
/// pattern, with the decision above and a location naming both ops).
struct FuseIntoReader : mlir::OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult
  matchAndRewrite(linalg::GenericOp reader,
                  mlir::PatternRewriter &rewriter) const override {
    for (mlir::OpOperand &operand : reader->getOpOperands()) {
      if (!linalg::areElementwiseOpsFusable(&operand) || !shouldFuse(&operand))
        continue;
      mlir::Operation *producer = operand.get().getDefiningOp();
      llvm::SmallVector<mlir::Location> leaves;
      appendLeaves(producer->getLoc(), leaves);
      appendLeaves(reader->getLoc(), leaves);
      mlir::FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (mlir::failed(fused))
        continue;
      // The reader's results take the fused op's; the producer's stay
      // with the producer for its other readers, which fuse in turn.
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(
            original, replacement, [&](mlir::OpOperand &use) {
              return use.get().getDefiningOp() != producer;
            });
      fused->fusedOp->setLoc(
          mlir::FusedLoc::get(rewriter.getContext(), leaves,
                              rewriter.getStringAttr(kFusedLocationTag)));
      rewriter.eraseOp(reader);
      return mlir::success();
    }
    return mlir::failure();
  }
};

struct FuseElementwisePass : impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<FuseIntoReader>(&getContext());
    // Operands the fused body no longer reads (an input of the producer
    // that the reader also had) are dropped, so the fused loop loads each
    // buffer once.
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(),
                                                        std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

} // namespace ein
