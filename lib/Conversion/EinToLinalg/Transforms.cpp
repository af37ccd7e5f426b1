// ein-to-linalg's rearrange, repeat and reduce patterns.
#include "Patterns.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace ein::lowering {

namespace {

mlir::FailureOr<Value> lowerTransform(OpLowering &l, mlir::Operation *op,
                                      Value input,
                                      const ResultShape &resultShape,
                                      const TransformInfo &info, PatternUse use,
                                      ReduceKind kind) {
  OpBuilder &b = l.b;
  Location loc = op->getLoc();
  if (mlir::failed(l.bindAxes(info.axisSizes, op)))
    return mlir::failure();
  Indexed in = l.elementary(loc, input, info.inputGroups);
  std::vector<std::string> outAxes = l.flatten(info.outputGroups);
  Type element = resultShape.type.getElementType();
  std::vector<std::string> inAxes; // without the broadcast 1s
  for (auto &a : in.axes)
    if (!a.empty())
      inAxes.push_back(a);
  if (use == PatternUse::Rearrange && inAxes == outAxes)
    return l.regroupAxes(loc, in.value, in.axes, info.outputGroups,
                         resultShape.sizes); // a view where strides allow

  std::vector<std::string> loops = outAxes;
  std::set<std::string> reductions;
  for (auto &a : inAxes)
    if (std::find(loops.begin(), loops.end(), a) == loops.end()) {
      loops.push_back(a);
      reductions.insert(a);
    }
  Value result;
  if (use != PatternUse::Reduce) {
    Value init = l.emptyTensor(loc, l.sizesOf(outAxes), element);
    result = l.generic(
        loc, loops, {in}, outAxes, init, {},
        [](OpBuilder &, Location, mlir::ValueRange args) { return args[0]; });
  } else {
    // max and min have no identity: over an empty axis there is no answer
    // (the checker refuses such programs; IR given to ein-opt may not be).
    if (reduceCombine(kind) == ReduceCombine::Max ||
        reduceCombine(kind) == ReduceCombine::Min)
      for (auto &a : reductions)
        if (isStaticSize(l.axisSize(a), 0))
          return op->emitOpError()
                 << reduceKindName(kind) << " over the empty axis '" << a
                 << "' has no identity";
    Type acc = isLowPrecisionFloat(element) ? Type(b.getF32Type()) : element;
    Value init = l.filled(loc, l.sizesOf(outAxes), acc, l.identity(kind, acc));
    result = l.generic(
        loc, loops, {in}, outAxes, init, reductions,
        [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          return l.combine(nb, nl, kind, args[1], l.cast(nl, args[0], acc));
        });
    // mean and var divide by the count of reduced elements.
    auto divideByCount = [&](Value sum) {
      OpFoldResult count = b.getIndexAttr(1);
      for (auto &a : reductions)
        count = l.mul(loc, count, l.axisSize(a));
      // The count as a number of the accumulator type, computed once
      // outside the loops (a constant when static).
      Value n;
      if (auto c = mlir::getConstantIntValue(count)) {
        n = llvm::isa<mlir::FloatType>(acc)
                ? b.create<mlir::arith::ConstantOp>(
                       loc, b.getFloatAttr(acc, static_cast<double>(*c)))
                      .getResult()
                : b.create<mlir::arith::ConstantOp>(loc,
                                                    b.getIntegerAttr(acc, *c))
                      .getResult();
      } else {
        Value i64 = b.create<mlir::arith::IndexCastUIOp>(loc, b.getI64Type(),
                                                         l.asValue(loc, count));
        n = llvm::isa<mlir::FloatType>(acc)
                ? b.create<mlir::arith::UIToFPOp>(loc, acc, i64).getResult()
                : Value(l.cast(loc, i64, acc));
      }
      return l.mapElements(
          loc, sum, acc, [&](OpBuilder &nb, Location nl, Value x) {
            if (llvm::isa<mlir::FloatType>(acc))
              return Value(nb.create<mlir::arith::DivFOp>(nl, x, n));
            return Value(nb.create<mlir::arith::DivSIOp>(nl, x, n));
          });
    };
    switch (reduceFinish(kind)) {
    case ReduceFinish::Mean:
      result = divideByCount(result);
      break;
    case ReduceFinish::Variance: {
      // Two passes (numerically sound, unlike E[x^2] - E[x]^2): the mean,
      // then the mean of the squared deviations from it. Floats only (the
      // dtype rule), in the accumulator type.
      Value mean = divideByCount(result);
      Value zeros = l.filled(loc, l.sizesOf(outAxes), acc,
                             l.identity(ReduceKind::Sum, acc));
      Value squares = l.generic(
          loc, loops, {in, Indexed{mean, outAxes}}, outAxes, zeros, reductions,
          [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
            OpBuilder::InsertionGuard g(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            Value d = nb.create<mlir::arith::SubFOp>(
                nl, l.cast(nl, args[0], acc), args[1]);
            Value d2 = nb.create<mlir::arith::MulFOp>(nl, d, d);
            return l.combine(nb, nl, ReduceKind::Sum, args[2], d2);
          });
      result = divideByCount(squares);
      break;
    }
    case ReduceFinish::None:
      break;
    }
    result = l.castTensor(loc, result, element);
  }
  return l.regroupAxes(loc, result, outAxes, info.outputGroups,
                       resultShape.sizes);
}

/// rearrange, repeat and reduce: `use` is how the op's pattern reads.
template <typename OpT, PatternUse use>
struct TransformLowering : EinPattern<OpT> {
  using EinPattern<OpT>::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, this->state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    ReduceKind kind = ReduceKind::Sum;
    if constexpr (std::is_same_v<OpT, ReduceOp>)
      kind = toReduceKind(op.getKind());
    mlir::FailureOr<llvm::SmallVector<Value>> values = mlir::failure();
    if (auto info = getTransformInfo(op)) {
      auto v = lowerTransform(l, op, adaptor.getInput(), (*results)[0], *info,
                              use, kind);
      if (mlir::succeeded(v))
        values = llvm::SmallVector<Value>{*v};
    }
    return replaceOrReport(rewriter, op, values);
  }
};

} // namespace

void populateRearrangeLowering(mlir::RewritePatternSet &patterns,
                               const mlir::TypeConverter &converter,
                               LoweringState &state) {
  patterns.add<TransformLowering<RearrangeOp, PatternUse::Rearrange>>(
      converter, patterns.getContext(), state);
}

void populateReduceLowering(mlir::RewritePatternSet &patterns,
                            const mlir::TypeConverter &converter,
                            LoweringState &state) {
  patterns.add<TransformLowering<ReduceOp, PatternUse::Reduce>>(
      converter, patterns.getContext(), state);
}

void populateRepeatLowering(mlir::RewritePatternSet &patterns,
                            const mlir::TypeConverter &converter,
                            LoweringState &state) {
  patterns.add<TransformLowering<RepeatOp, PatternUse::Repeat>>(
      converter, patterns.getContext(), state);
}

} // namespace ein::lowering
