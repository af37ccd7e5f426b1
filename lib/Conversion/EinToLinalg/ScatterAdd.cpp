// ein-to-linalg's pattern of scatter_add (take's gradient): a zero fill and
// a loop nest over the updates adding each at its clamped id.
#include "Patterns.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace ein::lowering {

namespace {

/// scatter_add: zeros of the result's shape, then an scf.for nest over every
/// dim of the updates carrying the result as iter_args, each iteration a
/// tensor.extract / add / tensor.insert at (the result's dims before the
/// axis, the clamped id, the dims after it). O(updates) work, where a
/// one-hot contraction would be O(size of the axis x updates); one-shot
/// bufferization keeps the carried tensor in one buffer (each insert
/// overwrites the value it extracted from), so the loops become loads and
/// stores. Repeated ids add up since the iterations run in order. An id out
/// of [0, size) is clamped as take clamps it (take reports it); a result
/// whose axis is empty is never written (its updates, if any, have no row
/// to land on).
struct ScatterAddLowering : EinPattern<ScatterAddOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(ScatterAddOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    Location loc = op.getLoc();
    const ResultShape &result = (*results)[0];
    Type element = result.type.getElementType();
    Value ids = adaptor.getIds(), updates = adaptor.getUpdates();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    int64_t idsRank = llvm::cast<RankedTensorType>(ids.getType()).getRank();
    int64_t updatesRank =
        llvm::cast<RankedTensorType>(updates.getType()).getRank();

    Value zeros =
        l.filled(loc, result.sizes, element, rewriter.getZeroAttr(element));
    Value zero = indexConstant(rewriter, loc, 0);
    Value one = indexConstant(rewriter, loc, 1);
    Value bound = l.asValue(loc, result.sizes[axis]);
    Value last = rewriter.create<mlir::arith::SubIOp>(loc, bound, one);
    Value empty = rewriter.create<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::eq, bound, zero);
    auto branch = rewriter.create<mlir::scf::IfOp>(
        loc, mlir::TypeRange{result.type}, empty, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&branch.getThenRegion().front());
      rewriter.create<mlir::scf::YieldOp>(loc, zeros);

      rewriter.setInsertionPointToStart(&branch.getElseRegion().front());
      llvm::SmallVector<Value> ubs;
      for (int64_t d = 0; d < updatesRank; ++d)
        ubs.push_back(rewriter.create<mlir::tensor::DimOp>(loc, updates, d));
      auto body = [&](OpBuilder &nb, Location nl, mlir::ValueRange ivs,
                      mlir::ValueRange carried) -> mlir::scf::ValueVector {
        llvm::SmallVector<Value> idAt(ivs.begin() + axis,
                                      ivs.begin() + axis + idsRank);
        Value raw = nb.create<mlir::tensor::ExtractOp>(nl, ids, idAt);
        Value clamped = clampedIndex(nb, nl, raw, last, zero);
        llvm::SmallVector<Value> at(ivs.begin(), ivs.begin() + axis);
        at.push_back(clamped);
        at.append(ivs.begin() + axis + idsRank, ivs.end());
        Value acc = carried[0];
        Value old = nb.create<mlir::tensor::ExtractOp>(nl, acc, at);
        Value u = nb.create<mlir::tensor::ExtractOp>(nl, updates, ivs);
        Value sum =
            llvm::isa<mlir::FloatType>(element)
                ? nb.create<mlir::arith::AddFOp>(nl, old, u).getResult()
                : nb.create<mlir::arith::AddIOp>(nl, old, u).getResult();
        return {nb.create<mlir::tensor::InsertOp>(nl, sum, acc, at)};
      };
      llvm::SmallVector<Value> lbs(updatesRank, zero), steps(updatesRank, one);
      mlir::scf::LoopNest nest = mlir::scf::buildLoopNest(
          rewriter, loc, lbs, ubs, steps, mlir::ValueRange{zeros}, body);
      rewriter.create<mlir::scf::YieldOp>(loc, nest.results);
    }
    Value v = branch.getResult(0);
    l.sizes.setKnownSizes(v, result.sizes);
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{v});
  }
};

} // namespace

void populateScatterAddLowering(mlir::RewritePatternSet &patterns,
                                const mlir::TypeConverter &converter,
                                LoweringState &state) {
  patterns.add<ScatterAddLowering>(converter, patterns.getContext(), state);
}

} // namespace ein::lowering
