// ein-to-linalg's patterns of the value ops: arange (a generic writing its
// loop index), size (a size read at run time, splat) and constant (a splat).
#include "Patterns.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace ein::lowering {

namespace {

/// arange: a linalg.generic with no inputs whose one loop writes its index,
/// converted to the element type; the size comes from the result's dim
/// (read at run time where it is not static).
struct ArangeLowering : EinPattern<ArangeOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(ArangeOp op, OpAdaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    Location loc = op.getLoc();
    const ResultShape &result = (*results)[0];
    Type element = result.type.getElementType();
    Value init = l.emptyTensor(loc, result.sizes, element);
    mlir::AffineMap identity = rewriter.getMultiDimIdentityMap(1);
    auto generic = rewriter.create<mlir::linalg::GenericOp>(
        loc, init.getType(), mlir::ValueRange{}, mlir::ValueRange{init},
        llvm::ArrayRef<mlir::AffineMap>{identity},
        llvm::ArrayRef<mlir::utils::IteratorType>{
            mlir::utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, mlir::ValueRange) {
          Value i = nb.create<mlir::linalg::IndexOp>(nl, 0);
          Value asI64 =
              nb.create<mlir::arith::IndexCastOp>(nl, nb.getI64Type(), i);
          OpLowering inner(nb, state.sizesOf(op));
          Value v = inner.cast(nl, asI64, element);
          nb.create<mlir::linalg::YieldOp>(nl, v);
        });
    Value v = generic.getResult(0);
    l.sizes.setKnownSizes(v, result.sizes);
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{v});
  }
};

/// A size read at run time: the entry's size values, converted to the
/// element type and splat into a 0-d tensor.
struct SizeLowering : EinPattern<SizeOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(SizeOp op, OpAdaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    Expected<SizeExpr> size = parseSizeExpr(op.getSize().str());
    if (!size)
      return op.emitError() << size.error().message;
    Location loc = op.getLoc();
    auto index = state.sizesOf(op).materialize(rewriter, loc, *size, op);
    if (mlir::failed(index))
      return mlir::failure();
    Value asI64 = rewriter.create<mlir::arith::IndexCastOp>(
        loc, rewriter.getI64Type(), asIndexValue(rewriter, loc, *index));
    Type element = (*results)[0].type.getElementType();
    Value scalar = l.cast(loc, asI64, element);
    Value empty = rewriter.create<mlir::tensor::EmptyOp>(
        loc, llvm::ArrayRef<int64_t>{}, element);
    Value filled =
        rewriter.create<mlir::linalg::FillOp>(loc, scalar, empty).getResult(0);
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{filled});
  }
};

/// A scalar constant: a splat of the result type.
struct ConstantLowering : EinPattern<ConstantOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    auto value = llvm::cast<mlir::TypedAttr>(op.getValue());
    Value c = rewriter.create<mlir::arith::ConstantOp>(
        op.getLoc(), mlir::DenseElementsAttr::get((*results)[0].type, value));
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{c});
  }
};

} // namespace

void populateArangeLowering(mlir::RewritePatternSet &patterns,
                            const mlir::TypeConverter &converter,
                            LoweringState &state) {
  patterns.add<ArangeLowering>(converter, patterns.getContext(), state);
}

void populateSizeLowering(mlir::RewritePatternSet &patterns,
                          const mlir::TypeConverter &converter,
                          LoweringState &state) {
  patterns.add<SizeLowering>(converter, patterns.getContext(), state);
}

void populateConstantLowering(mlir::RewritePatternSet &patterns,
                              const mlir::TypeConverter &converter,
                              LoweringState &state) {
  patterns.add<ConstantLowering>(converter, patterns.getContext(), state);
}

} // namespace ein::lowering
