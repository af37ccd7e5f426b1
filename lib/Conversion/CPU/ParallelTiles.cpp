// The ein-parallel-tiles pass: the `scf.forall` loops over fused tiles run
// on all cores, and the ops inside each tile become sequential loops.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace ein {

#define GEN_PASS_DEF_PARALLELTILES
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace linalg = mlir::linalg;

struct ParallelTilesPass : impl::ParallelTilesBase<ParallelTilesPass> {
  void runOnOperation() override {
    llvm::SmallVector<mlir::scf::ForallOp> loops;
    getOperation().walk([&](mlir::scf::ForallOp loop) {
      if (!loop->getParentOfType<mlir::scf::ForallOp>())
        loops.push_back(loop);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::scf::ForallOp loop : loops) {
      // The tile's ops as plain scf.for nests first: affine-parallelize
      // (later) parallelizes affine loops only, so the one parallel loop
      // stays the loop over tiles, and a tile runs on one core.
      llvm::SmallVector<linalg::LinalgOp> ops;
      loop.getBody()->walk([&](linalg::LinalgOp op) { ops.push_back(op); });
      for (linalg::LinalgOp op : ops) {
        rewriter.setInsertionPoint(op);
        if (mlir::failed(linalg::linalgOpToLoops(rewriter, op))) {
          op->emitError("ein-parallel-tiles: cannot lower this op to loops");
          return signalPassFailure();
        }
        rewriter.eraseOp(op);
      }
      // The buffers a tile allocates die with the tile. The deallocation
      // pipeline (ownership-based) does not place frees inside an
      // scf.forall body, and nothing leaves an iteration of a loop without
      // results, so each is freed at the end of the body.
      mlir::Operation *terminator = loop.getBody()->getTerminator();
      for (mlir::Operation &op : loop.getBody()->without_terminator()) {
        auto alloc = llvm::dyn_cast<mlir::memref::AllocOp>(op);
        if (!alloc || llvm::any_of(alloc->getUsers(), [](mlir::Operation *u) {
              return llvm::isa<mlir::memref::DeallocOp>(u);
            }))
          continue;
        rewriter.setInsertionPoint(terminator);
        rewriter.create<mlir::memref::DeallocOp>(alloc.getLoc(), alloc);
      }
      rewriter.setInsertionPoint(loop);
      if (mlir::failed(mlir::scf::forallToParallelLoop(rewriter, loop))) {
        loop->emitError("ein-parallel-tiles: cannot make this loop parallel");
        return signalPassFailure();
      }
    }
  }
};

} // namespace

} // namespace ein
