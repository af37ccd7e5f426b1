// ein-to-linalg's pattern of slice: a tensor.extract_slice along one dim.
#include "Patterns.h"
#include "ein/Shape/Shape.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace ein::lowering {

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

} // namespace ein::lowering
