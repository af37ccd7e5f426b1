// ein-to-linalg's pattern of arange: a generic writing its loop index.
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

} // namespace

void populateArangeLowering(mlir::RewritePatternSet &patterns,
                            const mlir::TypeConverter &converter,
                            LoweringState &state) {
  patterns.add<ArangeLowering>(converter, patterns.getContext(), state);
}

} // namespace ein::lowering
