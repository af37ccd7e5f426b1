// The ein-fuse-rows pass: an elementwise op that reads row reductions (the
// division of a softmax, the normalisation of a layer norm) runs tile by
// tile of rows, with the reductions and everything else it reads computed
// inside the tile, so a row is read from memory once and stays in cache.
#include "ein/Conversion/CPU/Fusion.h"
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <functional>

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

/// Whether `value` is a row value: the result of a row reduction, or of
/// elementwise work on row values (a mean's division, `sqrt(var + eps)`).
bool isRowValue(mlir::Value value, unsigned depth = 0) {
  mlir::Operation *op = value.getDefiningOp();
  if (isRowReduction(op))
    return true;
  auto generic = llvm::dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || depth > 8 || generic.getNumReductionLoops() != 0)
    return false;
  return llvm::any_of(generic.getDpsInputOperands(), [&](mlir::OpOperand *in) {
    return isRowValue(in->get(), depth + 1);
  });
}

unsigned rowLoops(linalg::GenericOp op,
                  llvm::DenseMap<mlir::Operation *, unsigned> &rows);

/// Whether `map`'s first `count` results are the loops d0, ..., d{count-1}.
bool leadsWithLoops(mlir::AffineMap map, unsigned count) {
  if (map.getNumResults() < count)
    return false;
  for (unsigned i = 0; i < count; ++i)
    if (map.getResult(i) != mlir::getAffineDimExpr(i, map.getContext()))
      return false;
  return true;
}

/// The row loops of a contraction that reads rows made by a row-fused chain
/// (attention's weighted sum `p v` of the softmax `p`): its output and that
/// operand lead with the chain's row loops, which are parallel in it. 0:
/// none.
unsigned
contractionRowLoops(linalg::GenericOp op,
                    llvm::DenseMap<mlir::Operation *, unsigned> &rows) {
  if (op->getNumResults() != 1 || op.getNumDpsInputs() != 2 ||
      !linalg::isaContractionOpInterface(op))
    return 0;
  auto iterators = op.getIteratorTypesArray();
  for (mlir::OpOperand *input : op.getDpsInputOperands()) {
    auto producer = input->get().getDefiningOp<linalg::GenericOp>();
    if (!producer || linalg::isaContractionOpInterface(producer))
      continue;
    unsigned count = rowLoops(producer, rows);
    if (count == 0 || count > iterators.size() ||
        !leadsWithLoops(op.getMatchingIndexingMap(input), count) ||
        !leadsWithLoops(op.getMatchingIndexingMap(op.getDpsInitOperand(0)),
                        count))
      continue;
    if (llvm::all_of(llvm::ArrayRef(iterators).take_front(count),
                     [](mlir::utils::IteratorType type) {
                       return type == mlir::utils::IteratorType::parallel;
                     }))
      return count;
  }
  return 0;
}

/// How many leading loops of `op` are rows it works on: it is elementwise,
/// writes its result in loop order, and reads a row value through its
/// leading loops (d0, ..., d{r-1}) or, through its own loops, an op that
/// does (`c / sqrt(var + eps) * g + beta`: the scale and the shift too).
/// 0: none. `rows` memoizes the ops seen.
unsigned rowLoops(linalg::GenericOp op,
                  llvm::DenseMap<mlir::Operation *, unsigned> &rows) {
  if (auto known = rows.find(op); known != rows.end())
    return known->second;
  rows[op] = 0; // (a cycle through block arguments cannot occur; be safe)
  if (unsigned count = contractionRowLoops(op, rows))
    return rows[op] = count;
  unsigned found = 0;
  bool valid = op.getNumReductionLoops() == 0 && op->getNumResults() == 1 &&
               op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
  for (mlir::OpOperand *input : valid
                                    ? op.getDpsInputOperands()
                                    : llvm::SmallVector<mlir::OpOperand *>{}) {
    mlir::AffineMap map = op.getMatchingIndexingMap(input);
    unsigned count = 0;
    if (map.isIdentity()) {
      // (Not through a contraction: elementwise work after one is not
      // fused with it yet, and a tile of that work would leave it out.)
      auto producer = input->get().getDefiningOp<linalg::GenericOp>();
      if (producer && !linalg::isaContractionOpInterface(producer))
        count = rowLoops(producer, rows);
    } else if (map.getNumResults() > 0 &&
               map.getNumResults() < op.getNumLoops() &&
               isRowValue(input->get())) {
      count = map.getNumResults();
      for (unsigned i = 0; i < count; ++i)
        if (map.getResult(i) != mlir::getAffineDimExpr(i, op.getContext()))
          count = 0;
    }
    if (count != 0 && found != 0 && count != found) {
      found = 0; // rows of two different shapes: leave the op alone
      break;
    }
    found = count != 0 ? count : found;
  }
  rows[op] = found;
  return found;
}

/// Whether everything that reads `op` (through elementwise ops and
/// reductions) ends in `root`, or reads it in a tile made for `root`: the
/// original of `op` dies once `root` is tiled.
bool onlyFeeds(mlir::Operation *op, mlir::Operation *root, unsigned depth = 0) {
  return depth < 16 && llvm::all_of(op->getUsers(), [&](mlir::Operation *user) {
           if (user == root ||
               llvm::isa<mlir::tensor::ExtractSliceOp, mlir::tensor::DimOp>(
                   user))
             return true;
           auto reader = llvm::dyn_cast<linalg::GenericOp>(user);
           return reader && !linalg::isaContractionOpInterface(reader) &&
                  onlyFeeds(reader, root, depth + 1);
         });
}

/// Whether a loop of `op` is known to run zero times (a reduction over an
/// empty axis of static size). Tiling reads a tile size of 0 as "the whole
/// loop", and MLIR 19's tiled implementation of a linalg op then reads a
/// loop bound it was not given: such an op is neither tiled nor fused into
/// a tile (it is no work anyway).
bool hasEmptyLoop(linalg::LinalgOp op) {
  return llvm::is_contained(op.getStaticLoopRanges(), 0);
}

/// Whether computing `generic` again inside a tile reads no more memory than
/// loading its result: it streams at most one operand, one read along the
/// innermost loop and along another (the rest are row values, scalars, or
/// rows broadcast down the tile, such as a LayerNorm's scale).
bool cheapToRecompute(linalg::GenericOp generic) {
  unsigned loops = generic.getNumLoops();
  unsigned streamed = llvm::count_if(
      generic.getDpsInputOperands(), [&](mlir::OpOperand *input) {
        mlir::AffineMap map = generic.getMatchingIndexingMap(input);
        if (loops < 2 || !map.isFunctionOfDim(loops - 1))
          return loops == 1 && map.isFunctionOfDim(0);
        for (unsigned dim = 0; dim + 1 < loops; ++dim)
          if (map.isFunctionOfDim(dim))
            return true;
        return false;
      });
  return streamed <= 1;
}

/// Which producers the tile of `root` computes: fills and non-contraction
/// generics (elementwise ops and row reductions) that either die once the
/// tile is made or are cheap to compute again (cheapToRecompute); in the
/// tile of a contraction also a contraction read only on the way to it
/// (attention's scores `q k`: the tile computes its rows of them, and the
/// scores never go to memory whole). Other producers read elsewhere too
/// are not computed in the tile, which loads their result: a training
/// step's residual stream (the embedding plus every block's output, read
/// by the next block and by the backward) was summed again in every tile
/// of every LayerNorm's backward, three passes each: 20% of the step of
/// examples/gpt.ein at d_model 512: 640 ms a step, 510 ms without).
std::tuple<bool, bool> fuseIntoTile(mlir::OpResult producer,
                                    mlir::Operation *root) {
  mlir::Operation *op = producer.getOwner();
  if (auto linalgOp = llvm::dyn_cast<linalg::LinalgOp>(op);
      linalgOp && hasEmptyLoop(linalgOp))
    return {false, false};
  if (llvm::isa<linalg::FillOp>(op))
    return {true, false};
  auto generic = llvm::dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return {false, false};
  if (!linalg::isaContractionOpInterface(generic))
    return {onlyFeeds(generic, root) || cheapToRecompute(generic), false};
  auto rootOp = llvm::cast<linalg::LinalgOp>(root);
  return {linalg::isaContractionOpInterface(rootOp) && onlyFeeds(generic, root),
          false};
}

/// Gives each reader of `op`'s one result its own copy of `op` (an empty
/// tensor or a fill of one, which CSE merged): in a function's body, right
/// before the reader (its ancestor in `op`'s block), since a buffer is
/// allocated where its empty tensor is and copies left at the first one's
/// place, often the top of the function, held every intermediate of a
/// training step from its start (examples/gpt.ein with its LayerNorms
/// written in the plain form, so fused: a step's measured memory 1.66x
/// report --train's, 0.96x split this way). Inside a tile, where the
/// buffers are the tile's, the copies stay together at `op`'s place: the
/// tile's bufferization reuses them in that order.
void splitBeforeReaders(mlir::Operation *op, mlir::RewriterBase &rewriter) {
  llvm::SmallVector<mlir::OpOperand *> uses;
  for (mlir::OpOperand &use : op->getResult(0).getUses())
    uses.push_back(&use);
  // (An empty tensor may have no use left: CSE erased the dead op that
  // wrote it, such as the original of an op of another element type.)
  if (uses.size() < 2)
    return;
  if (!llvm::isa<mlir::func::FuncOp>(op->getParentOp())) {
    rewriter.setInsertionPoint(op);
    for (mlir::OpOperand *use : llvm::drop_begin(uses))
      use->set(rewriter.clone(*op)->getResult(0));
    return;
  }
  for (mlir::OpOperand *use : uses) {
    mlir::Operation *reader =
        op->getBlock()->findAncestorOpInBlock(*use->getOwner());
    rewriter.setInsertionPoint(reader ? reader : op);
    use->set(rewriter.clone(*op)->getResult(0));
  }
  rewriter.eraseOp(op);
}

/// Rewrites the kept-`1` form of row values into the plain one: a
/// reduction written `"b s d -> b s 1"` is a `b s` reduction whose result
/// is expanded to `b s 1` and read through `(b, s, d) -> (b, s, 0)`, and
/// elementwise work on it (`rsqrt(var + eps)`) runs on `b s 1` tensors.
/// Dropping the unit dims of every non-contraction generic (MLIR's
/// fold-unit-extent-dims, reshapes folded) leaves the `b s` values read
/// through `(b, s, d) -> (b, s)`, which rowLoops recognises, and no
/// reshape between the ops a tile takes in. Contractions keep their dims:
/// ein-tile-contractions reads their loops as written. So do ops nested in
/// a region (a take's gather under its bounds check, `scf.if`): the
/// reshapes the pattern makes there take sizes defined in the region,
/// which the affine loops made later cannot use as bounds.
void dropUnitDims(mlir::ModuleOp module) {
  mlir::MLIRContext *context = module.getContext();
  mlir::RewritePatternSet patterns(context);
  linalg::ControlDropUnitDims options;
  options.controlFn = [](mlir::Operation *op) {
    auto generic = llvm::dyn_cast<linalg::GenericOp>(op);
    if (!generic || linalg::isaContractionOpInterface(generic) ||
        !llvm::isa<mlir::func::FuncOp>(generic->getParentOp()))
      return llvm::SmallVector<unsigned>{};
    return llvm::to_vector(llvm::seq<unsigned>(0, generic.getNumLoops()));
  };
  linalg::populateFoldUnitExtentDimsPatterns(patterns, options);
  (void)mlir::applyPatternsAndFoldGreedily(module, std::move(patterns));
}

struct FuseRowsPass : impl::FuseRowsBase<FuseRowsPass> {
  using FuseRowsBase::FuseRowsBase;

  void runOnOperation() override {
    dropUnitDims(getOperation());
    llvm::SmallVector<std::pair<linalg::GenericOp, unsigned>> roots;
    llvm::DenseMap<mlir::Operation *, unsigned> known;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<mlir::scf::ForallOp>())
        return;
      if (unsigned rows = rowLoops(op, known); rows && !hasEmptyLoop(op))
        roots.push_back({op, rows});
    });
    // Only the last root of a chain is tiled: it takes in every earlier op
    // it reads, earlier roots included, whose originals then die
    // (canonicalization erases them).
    std::function<bool(mlir::Operation *, unsigned)> feedsRoot =
        [&](mlir::Operation *op, unsigned depth) {
          return depth < 16 &&
                 llvm::any_of(op->getUsers(), [&](mlir::Operation *user) {
                   auto found = known.find(user);
                   if (found != known.end() && found->second != 0)
                     return true;
                   return llvm::isa<linalg::GenericOp>(user) &&
                          feedsRoot(user, depth + 1);
                 });
        };
    llvm::erase_if(roots,
                   [&](auto &entry) { return feedsRoot(entry.first, 0); });
    mlir::RewritePatternSet emptySlicePatterns(&getContext());
    mlir::tensor::populateFoldTensorEmptyPatterns(emptySlicePatterns);
    mlir::FrozenRewritePatternSet emptySlices(std::move(emptySlicePatterns));
    mlir::IRRewriter rewriter(&getContext());
    for (auto [root, rows] : roots) {
      // Rows one at a time on every row loop but the innermost, which takes
      // `rowsPerTile`: a tile of a softmax over 512 f32 is 16 KiB per
      // tensor it streams, well inside the L2 cache.
      // A contraction's tile takes more rows: the contractions in it read
      // their other operand (attention's keys and values) once per tile.
      int64_t tileRows = linalg::isaContractionOpInterface(root)
                             ? contractionRowsPerTile
                             : rowsPerTile;
      llvm::SmallVector<mlir::OpFoldResult> sizes(root.getNumLoops(),
                                                  rewriter.getIndexAttr(0));
      for (unsigned i = 0; i < rows; ++i)
        sizes[i] = rewriter.getIndexAttr(i + 1 == rows ? tileRows : 1);
      mlir::scf::SCFTileAndFuseOptions options;
      options.tilingOptions.setTileSizes(sizes).setLoopType(
          mlir::scf::SCFTilingOptions::LoopType::ForallOp);
      options.setFusionControlFn(
          [root = root.getOperation()](mlir::tensor::ExtractSliceOp,
                                       mlir::OpResult producer, bool) {
            return fuseIntoTile(producer, root);
          });
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
      // Mark the tile loop, and turn slices of an empty tensor into empty
      // tensors of the tile's shape, so that two copies of one op in the
      // tile (a row max read by the exponentials and by the division is
      // fused once per reader) differ in nothing and CSE below merges them.
      for (mlir::LoopLikeOpInterface loop : tiled->loops) {
        loop->setAttr(kRowTilesAttr, rewriter.getUnitAttr());
        (void)mlir::applyPatternsAndFoldGreedily(loop, emptySlices);
      }
      rewriter.eraseOp(root);
    }
    if (roots.empty())
      return;
    // Sizes read from an op's result are taken from its operands, CSE runs
    // over each function (a size read inside a tile equals one read
    // outside), then every empty tensor it merged is split again: results
    // sharing one would share a buffer that bufferization cannot split.
    llvm::SmallVector<mlir::Operation *> dims;
    getOperation().walk([&](mlir::tensor::DimOp dim) { dims.push_back(dim); });
    mlir::RewritePatternSet sizes(&getContext());
    mlir::memref::populateResolveRankedShapedTypeResultDimsPatterns(sizes);
    mlir::tensor::DimOp::getCanonicalizationPatterns(sizes, &getContext());
    mlir::GreedyRewriteConfig config;
    config.strictMode = mlir::GreedyRewriteStrictness::ExistingAndNewOps;
    (void)mlir::applyOpPatternsAndFold(dims, std::move(sizes), config);
    mlir::DominanceInfo dominance;
    getOperation().walk([&](mlir::func::FuncOp function) {
      mlir::eliminateCommonSubExpressions(rewriter, dominance, function);
    });
    // Fills CSE merged (one zero accumulator for two contractions, one of
    // them in the backward) are split the same way, first: a fill shared by
    // two writers is one buffer, copied for the second writer and held
    // until the last.
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics())
        splitBeforeReaders(fill, rewriter);
    });
    getOperation().walk([&](mlir::tensor::EmptyOp empty) {
      splitBeforeReaders(empty, rewriter);
    });
  }
};

} // namespace

} // namespace ein
