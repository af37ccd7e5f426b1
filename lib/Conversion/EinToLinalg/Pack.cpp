// ein-to-linalg's pack and unpack patterns: slices along the `*` axis.
#include "Patterns.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace ein::lowering {

namespace {

struct PackLowering : EinPattern<PackOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(PackOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    auto pattern = op.getPattern().getPattern(PatternUse::Pack);
    if (!pattern)
      return replaceOrReport(rewriter, op, mlir::failure());
    // Each input, its packed dims merged into one, goes into a slice of the
    // result along that dim.
    size_t before = pattern->inputs[0].starIndex();
    const ResultShape &r = (*results)[0];
    Value out = l.emptyTensor(loc, r.sizes, r.type.getElementType());
    OpFoldResult offset = b.getIndexAttr(0);
    size_t after = r.type.getRank() - before - 1;
    for (Value in : adaptor.getInputs()) {
      auto t = llvm::cast<RankedTensorType>(in.getType());
      int64_t end = t.getRank() - static_cast<int64_t>(after);
      auto inSizes = mlir::tensor::getMixedSizes(b, loc, in);
      llvm::SmallVector<OpFoldResult> shape(inSizes.begin(),
                                            inSizes.begin() + before);
      OpFoldResult star = b.getIndexAttr(1);
      for (int64_t d = before; d < end; ++d)
        star = l.mul(loc, star, inSizes[d]);
      shape.push_back(star);
      shape.append(inSizes.end() - after, inSizes.end());
      std::vector<std::vector<int64_t>> targets;
      for (size_t d = 0; d < before; ++d)
        targets.push_back({static_cast<int64_t>(d)});
      targets.emplace_back();
      for (int64_t d = before; d < end; ++d)
        targets.back().push_back(d);
      for (int64_t d = end; d < t.getRank(); ++d)
        targets.push_back({d});
      Value part = l.regroup(loc, in, targets, shape);
      llvm::SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0));
      offsets[before] = offset;
      llvm::SmallVector<OpFoldResult> strides(shape.size(), b.getIndexAttr(1));
      out = b.create<mlir::tensor::InsertSliceOp>(loc, part, out, offsets,
                                                  shape, strides);
      offset = l.add(loc, offset, star);
    }
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{out});
  }
};

struct UnpackLowering : EinPattern<UnpackOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(UnpackOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    auto pattern = op.getPattern().getPattern(PatternUse::Pack);
    if (!pattern)
      return op->emitError("cannot lower: bad pattern");
    Value input = adaptor.getInput();
    size_t before = pattern->inputs[0].starIndex();
    auto t = llvm::cast<RankedTensorType>(input.getType());
    auto inSizes = mlir::tensor::getMixedSizes(b, loc, input);
    size_t after = t.getRank() - before - 1;
    OpFoldResult offset = b.getIndexAttr(0);
    llvm::SmallVector<Value> values;
    for (const ResultShape &r : *results) {
      OpFoldResult star = b.getIndexAttr(1);
      for (int64_t d = before;
           d < r.type.getRank() - static_cast<int64_t>(after); ++d)
        star = l.mul(loc, star, r.sizes[d]);
      llvm::SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0));
      offsets[before] = offset;
      llvm::SmallVector<OpFoldResult> sizes(inSizes),
          strides(t.getRank(), b.getIndexAttr(1));
      sizes[before] = star;
      Value slice = b.create<mlir::tensor::ExtractSliceOp>(
          loc, OpLowering::typeOf(sizes, t.getElementType()), input, offsets,
          sizes, strides);
      // The packed dim splits back into the part's dims (none: dropped).
      int64_t parts = r.type.getRank() - static_cast<int64_t>(before + after);
      Value value;
      if (parts == 0) {
        std::vector<std::vector<int64_t>> targets;
        for (int64_t d = 0; d < t.getRank(); ++d)
          if (d != static_cast<int64_t>(before))
            targets.push_back({d});
        value = l.regroup(loc, slice, targets, r.sizes);
      } else {
        llvm::SmallVector<mlir::ReassociationIndices> split;
        int64_t next = 0;
        for (int64_t d = 0; d < t.getRank(); ++d) {
          int64_t width = d == static_cast<int64_t>(before) ? parts : 1;
          split.emplace_back();
          for (int64_t i = 0; i < width; ++i)
            split.back().push_back(next++);
        }
        if (parts == 1)
          value = slice.getType() == r.type
                      ? slice
                      : b.create<mlir::tensor::CastOp>(loc, r.type, slice)
                            .getResult();
        else
          value = l.expandDims(loc, slice, split, r.sizes);
      }
      values.push_back(value);
      offset = l.add(loc, offset, star);
    }
    rewriter.replaceOp(op, values);
    return mlir::success();
  }
};

} // namespace

void populatePackLowering(mlir::RewritePatternSet &patterns,
                          const mlir::TypeConverter &converter,
                          LoweringState &state) {
  patterns.add<PackLowering>(converter, patterns.getContext(), state);
}

void populateUnpackLowering(mlir::RewritePatternSet &patterns,
                            const mlir::TypeConverter &converter,
                            LoweringState &state) {
  patterns.add<UnpackLowering>(converter, patterns.getContext(), state);
}

} // namespace ein::lowering
