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
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace ein {

#define GEN_PASS_DEF_PARALLELTILES
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace linalg = mlir::linalg;

/// The first and last op of `block` that use `buffer`, directly or through
/// views of it (subviews, collapsed shapes: view-like ops), deallocations
/// left out.
std::pair<unsigned, unsigned>
liveRange(mlir::Value buffer, mlir::Block *block,
          const llvm::DenseMap<mlir::Operation *, unsigned> &position) {
  unsigned first = ~0u, last = 0;
  llvm::SmallVector<mlir::Value> work{buffer};
  while (!work.empty()) {
    mlir::Value value = work.pop_back_val();
    for (mlir::Operation *user : value.getUsers()) {
      if (llvm::isa<mlir::memref::DeallocOp>(user))
        continue;
      if (auto view = llvm::dyn_cast<mlir::ViewLikeOpInterface>(user))
        if (view.getViewSource() == value)
          work.append(user->result_begin(), user->result_end());
      mlir::Operation *top = block->findAncestorOpInBlock(*user);
      unsigned at = top ? position.lookup(top) : ~0u;
      first = std::min(first, at);
      last = top ? std::max(last, at) : ~0u;
    }
  }
  return {first, last};
}

/// Buffers of a tile whose lives do not overlap become one: a softmax's
/// probabilities take the buffer of the scores once the exponentials are
/// computed, so a tile touches less memory (and stays in the L2 cache).
/// A buffer takes the place of an earlier one of the same type and sizes
/// whose last use comes before its first. Their deallocations go (all of
/// the tile's buffers are freed at the end of the tile, below).
void shareTileBuffers(mlir::Block *body) {
  llvm::DenseMap<mlir::Operation *, unsigned> position;
  for (mlir::Operation &op : body->without_terminator())
    position[&op] = position.size();
  struct Buffer {
    mlir::memref::AllocOp alloc;
    unsigned last;
  };
  llvm::SmallVector<Buffer> buffers;
  for (mlir::Operation &op : llvm::make_early_inc_range(*body)) {
    auto alloc = llvm::dyn_cast<mlir::memref::AllocOp>(op);
    if (!alloc)
      continue;
    auto [first, last] = liveRange(alloc, body, position);
    Buffer *free = llvm::find_if(buffers, [&](Buffer &earlier) {
      return earlier.alloc.getType() == alloc.getType() &&
             earlier.alloc.getDynamicSizes() == alloc.getDynamicSizes() &&
             earlier.alloc.getAlignment() == alloc.getAlignment() &&
             earlier.last < first;
    });
    if (first == ~0u || last == ~0u || free == buffers.end()) {
      buffers.push_back({alloc, last});
      continue;
    }
    for (mlir::Value buffer : {free->alloc.getResult(), alloc.getResult()})
      for (mlir::Operation *user :
           llvm::make_early_inc_range(buffer.getUsers()))
        if (llvm::isa<mlir::memref::DeallocOp>(user))
          user->erase();
    alloc.getResult().replaceAllUsesWith(free->alloc.getResult());
    alloc.erase();
    free->last = last;
  }
}

struct ParallelTilesPass : impl::ParallelTilesBase<ParallelTilesPass> {
  void runOnOperation() override {
    llvm::SmallVector<mlir::scf::ForallOp> loops;
    getOperation().walk([&](mlir::scf::ForallOp loop) {
      if (!loop->getParentOfType<mlir::scf::ForallOp>())
        loops.push_back(loop);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::scf::ForallOp loop : loops) {
      shareTileBuffers(loop.getBody());
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
