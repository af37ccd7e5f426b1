// ein-to-linalg's patterns of the indexing ops: take and take_along
// (clamped gathers, and a count of the ids out of range that the function
// reports as its index status), slice (a tensor.extract_slice along one dim)
// and scatter_add (take's gradient: a zero fill and a loop nest over the
// updates adding each at its clamped id).
#include "Patterns.h"
#include "ein/Shape/Shape.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace ein::lowering {

namespace {

/// A generic counting the ids outside [0, bound) (a reduction over every
/// dim of the ids), marked kIndexCountAttr: addIndexStatus sums each such
/// count into the function's index status. take and take_along share it.
void countIdsOutOfRange(mlir::ConversionPatternRewriter &rewriter, Location loc,
                        Value ids, Value bound) {
  int64_t idsRank = llvm::cast<RankedTensorType>(ids.getType()).getRank();
  mlir::TypedAttr zeroCount =
      rewriter.getZeroAttr(RankedTensorType::get({}, rewriter.getI64Type()));
  Value countInit = rewriter.create<mlir::arith::ConstantOp>(loc, zeroCount);
  llvm::SmallVector<mlir::AffineMap> countMaps{
      rewriter.getMultiDimIdentityMap(idsRank),
      mlir::AffineMap::get(idsRank, 0, rewriter.getContext())};
  llvm::SmallVector<mlir::utils::IteratorType> countIters(
      idsRank, mlir::utils::IteratorType::reduction);
  auto count = rewriter.create<mlir::linalg::GenericOp>(
      loc, countInit.getType(), mlir::ValueRange{ids},
      mlir::ValueRange{countInit}, countMaps, countIters,
      [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
        // Compared as indices (an i32 id sign-extended), so that no bound
        // is truncated.
        Value id =
            nb.create<mlir::arith::IndexCastOp>(nl, nb.getIndexType(), args[0]);
        // Unsigned: a negative id is beyond every bound.
        Value bad = nb.create<mlir::arith::CmpIOp>(
            nl, mlir::arith::CmpIPredicate::uge, id, bound);
        Value inc = nb.create<mlir::arith::ExtUIOp>(nl, nb.getI64Type(), bad);
        Value sum = nb.create<mlir::arith::AddIOp>(nl, args[1], inc);
        nb.create<mlir::linalg::YieldOp>(nl, sum);
      });
  count->setAttr(kIndexCountAttr, rewriter.getUnitAttr());
}

/// take: a linalg.generic over the result reading each id and extracting
/// the table's element at it. The id is clamped into [0, size) for the load
/// so that a bad id never reads outside the table; a second generic counts
/// the ids outside [0, size) (marked kIndexCountAttr), which the pass sums
/// into the function's index status (addIndexStatus). A table whose axis is
/// empty is never read: the result is zeros (and every id is counted).
struct TakeLowering : EinPattern<TakeOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(TakeOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    Location loc = op.getLoc();
    const ResultShape &result = (*results)[0];
    Type element = result.type.getElementType();
    Value table = adaptor.getTable(), ids = adaptor.getIds();
    auto idsType = llvm::cast<RankedTensorType>(ids.getType());
    int64_t axis = op.getAxis();
    int64_t idsRank = idsType.getRank();
    int64_t rank = result.type.getRank();

    Value bound = rewriter.create<mlir::tensor::DimOp>(loc, table, axis);
    Value zero = indexConstant(rewriter, loc, 0);
    Value one = indexConstant(rewriter, loc, 1);
    Value last = rewriter.create<mlir::arith::SubIOp>(loc, bound, one);

    countIdsOutOfRange(rewriter, loc, ids, bound);

    // The gather, or zeros when the axis is empty (nothing may be read).
    Value empty = rewriter.create<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::eq, bound, zero);
    auto branch = rewriter.create<mlir::scf::IfOp>(
        loc, mlir::TypeRange{result.type}, empty, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&branch.getThenRegion().front());
      OpLowering inner(rewriter, state.sizesOf(op));
      Value zeros = inner.filled(loc, result.sizes, element,
                                 rewriter.getZeroAttr(element));
      rewriter.create<mlir::scf::YieldOp>(loc, zeros);

      rewriter.setInsertionPointToStart(&branch.getElseRegion().front());
      Value init = inner.emptyTensor(loc, result.sizes, element);
      // Result dims: the table's before the axis, the ids', the table's
      // after it.
      llvm::SmallVector<mlir::AffineExpr> idDims;
      for (int64_t i = 0; i < idsRank; ++i)
        idDims.push_back(rewriter.getAffineDimExpr(axis + i));
      llvm::SmallVector<mlir::AffineMap> maps{
          mlir::AffineMap::get(rank, 0, idDims, rewriter.getContext()),
          rewriter.getMultiDimIdentityMap(rank)};
      llvm::SmallVector<mlir::utils::IteratorType> iters(
          rank, mlir::utils::IteratorType::parallel);
      auto gather = rewriter.create<mlir::linalg::GenericOp>(
          loc, init.getType(), mlir::ValueRange{ids}, mlir::ValueRange{init},
          maps, iters, [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
            Value clamped = clampedIndex(nb, nl, args[0], last, zero);
            llvm::SmallVector<Value> at;
            for (int64_t d = 0; d < axis; ++d)
              at.push_back(nb.create<mlir::linalg::IndexOp>(nl, d));
            at.push_back(clamped);
            for (int64_t d = axis + idsRank; d < rank; ++d)
              at.push_back(nb.create<mlir::linalg::IndexOp>(nl, d));
            Value v = nb.create<mlir::tensor::ExtractOp>(nl, table, at);
            nb.create<mlir::linalg::YieldOp>(nl, v);
          });
      rewriter.create<mlir::scf::YieldOp>(loc, gather.getResult(0));
    }
    Value v = branch.getResult(0);
    l.sizes.setKnownSizes(v, result.sizes);
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{v});
  }
};

} // namespace

void populateTakeLowering(mlir::RewritePatternSet &patterns,
                          const mlir::TypeConverter &converter,
                          LoweringState &state) {
  patterns.add<TakeLowering>(converter, patterns.getContext(), state);
}

namespace {

/// take_along: a linalg.generic over the result (the ids' shape) reading
/// each id and extracting the input's element at it, the id in the axis's
/// place among the result's indices; the id clamped and counted as take's
/// are (countIdsOutOfRange). An input whose axis is empty is never read:
/// the result is zeros (and every id is counted).
struct TakeAlongLowering : EinPattern<TakeAlongOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(TakeAlongOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    Location loc = op.getLoc();
    const ResultShape &result = (*results)[0];
    Type element = result.type.getElementType();
    Value input = adaptor.getInput(), ids = adaptor.getIds();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    int64_t rank = result.type.getRank();

    Value bound = rewriter.create<mlir::tensor::DimOp>(loc, input, axis);
    Value zero = indexConstant(rewriter, loc, 0);
    Value one = indexConstant(rewriter, loc, 1);
    Value last = rewriter.create<mlir::arith::SubIOp>(loc, bound, one);
    countIdsOutOfRange(rewriter, loc, ids, bound);

    Value empty = rewriter.create<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::eq, bound, zero);
    auto branch = rewriter.create<mlir::scf::IfOp>(
        loc, mlir::TypeRange{result.type}, empty, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&branch.getThenRegion().front());
      OpLowering inner(rewriter, state.sizesOf(op));
      Value zeros = inner.filled(loc, result.sizes, element,
                                 rewriter.getZeroAttr(element));
      rewriter.create<mlir::scf::YieldOp>(loc, zeros);

      rewriter.setInsertionPointToStart(&branch.getElseRegion().front());
      Value init = inner.emptyTensor(loc, result.sizes, element);
      llvm::SmallVector<mlir::AffineMap> maps{
          rewriter.getMultiDimIdentityMap(rank),
          rewriter.getMultiDimIdentityMap(rank)};
      llvm::SmallVector<mlir::utils::IteratorType> iters(
          rank, mlir::utils::IteratorType::parallel);
      auto gather = rewriter.create<mlir::linalg::GenericOp>(
          loc, init.getType(), mlir::ValueRange{ids}, mlir::ValueRange{init},
          maps, iters, [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
            llvm::SmallVector<Value> at;
            for (int64_t d = 0; d < rank; ++d)
              at.push_back(nb.create<mlir::linalg::IndexOp>(nl, d));
            at.insert(at.begin() + axis,
                      clampedIndex(nb, nl, args[0], last, zero));
            Value v = nb.create<mlir::tensor::ExtractOp>(nl, input, at);
            nb.create<mlir::linalg::YieldOp>(nl, v);
          });
      rewriter.create<mlir::scf::YieldOp>(loc, gather.getResult(0));
    }
    Value v = branch.getResult(0);
    l.sizes.setKnownSizes(v, result.sizes);
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{v});
  }
};

} // namespace

void populateTakeAlongLowering(mlir::RewritePatternSet &patterns,
                               const mlir::TypeConverter &converter,
                               LoweringState &state) {
  patterns.add<TakeAlongLowering>(converter, patterns.getContext(), state);
}

void addIndexStatus(mlir::func::FuncOp fn) {
  if (fn.isExternal() || !fn->hasAttr(kIndexStatusAttr))
    return;
  mlir::OpBuilder b(fn.getContext());
  llvm::SmallVector<Value> counts;
  fn.walk([&](mlir::linalg::GenericOp g) {
    if (g->hasAttr(kIndexCountAttr))
      counts.push_back(g.getResult(0));
  });
  fn.walk([&](mlir::func::ReturnOp ret) {
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    Value total = b.create<mlir::arith::ConstantIntOp>(loc, 0, 64);
    for (Value c : counts) {
      Value n = b.create<mlir::tensor::ExtractOp>(loc, c, mlir::ValueRange{});
      total = b.create<mlir::arith::AddIOp>(loc, total, n);
    }
    Value status = b.create<mlir::tensor::FromElementsOp>(
        loc, RankedTensorType::get({1}, b.getI64Type()), total);
    ret->insertOperands(ret.getNumOperands(), status);
  });
  llvm::SmallVector<Type> resultTypes(fn.getResultTypes());
  resultTypes.push_back(RankedTensorType::get({1}, b.getI64Type()));
  fn.setType(b.getFunctionType(fn.getArgumentTypes(), resultTypes));
}

namespace {

/// slice: `tensor.extract_slice` at offset `start` along the dim, of the
/// result's sizes, stride 1. Bufferization makes it a strided view of the
/// input (memref.subview), copied only where a copy is needed (a returned
/// slice is written into the caller's output). The entry has checked
/// 0 <= start <= stop <= size where the sizes do not prove it.
struct SliceLowering : EinPattern<SliceOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    const ResultShape &r = (*results)[0];
    Expected<SizeExpr> start = parseSizeExpr(op.getStart().str());
    if (!start)
      return op->emitError("cannot lower: bad start");
    auto offset = l.sizes.materialize(b, loc, *start, op);
    if (mlir::failed(offset))
      return mlir::failure();
    Value input = adaptor.getInput();
    auto t = llvm::cast<RankedTensorType>(input.getType());
    int64_t index = op.getDimIndex();
    llvm::SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0));
    offsets[index] = *offset;
    llvm::SmallVector<OpFoldResult> strides(t.getRank(), b.getIndexAttr(1));
    Value slice = b.create<mlir::tensor::ExtractSliceOp>(
        loc, OpLowering::typeOf(r.sizes, t.getElementType()), input, offsets,
        r.sizes, strides);
    Value v =
        slice.getType() == r.type
            ? slice
            : b.create<mlir::tensor::CastOp>(loc, r.type, slice).getResult();
    l.sizes.setKnownSizes(v, r.sizes);
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{v});
  }
};

} // namespace

void populateSliceLowering(mlir::RewritePatternSet &patterns,
                           const mlir::TypeConverter &converter,
                           LoweringState &state) {
  patterns.add<SliceLowering>(converter, patterns.getContext(), state);
}

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
