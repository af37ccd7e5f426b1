// ein-to-linalg's einsum pattern: generics that contract, pairwise if 3+.
#include "Patterns.h"

#include "ein/Analysis/Cost.h"

namespace ein::lowering {

namespace {

mlir::FailureOr<Value> lowerEinsum(OpLowering &l, EinsumOp op,
                                   llvm::ArrayRef<Value> inputs,
                                   const ResultShape &resultShape,
                                   const EinsumInfo &info) {
  OpBuilder &b = l.b;
  Location loc = op.getLoc();
  if (mlir::failed(l.bindAxes(info.axisSizes, op)))
    return mlir::failure();
  Type element = resultShape.type.getElementType();
  Type acc = op.getAcc()                    ? *op.getAcc()
             : isLowPrecisionFloat(element) ? Type(b.getF32Type())
                                            : element;
  std::vector<Indexed> live;
  for (size_t i = 0; i < inputs.size(); ++i)
    live.push_back(l.elementary(loc, inputs[i], info.operandGroups[i]));
  std::vector<std::string> outAxes = l.flatten(info.outputGroups);

  // One contraction of `operands` producing `resultAxes`.
  auto contract = [&](const std::vector<Indexed> &operands,
                      const std::vector<std::string> &resultAxes) {
    std::vector<std::string> loops = resultAxes;
    std::set<std::string> reductions;
    for (auto &o : operands)
      for (auto &a : o.axes)
        if (!a.empty() &&
            std::find(loops.begin(), loops.end(), a) == loops.end()) {
          loops.push_back(a);
          reductions.insert(a);
        }
    Value init = l.filled(loc, l.sizesOf(resultAxes), acc,
                          l.identity(ReduceKind::Sum, acc));
    bool isF = llvm::isa<mlir::FloatType>(acc);
    auto math = OpLowering::reductionMath();
    Value v = l.generic(
        loc, loops, operands, resultAxes, init, reductions,
        [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value product = l.cast(nl, args[0], acc);
          for (size_t k = 1; k + 1 < args.size(); ++k) {
            Value x = l.cast(nl, args[k], acc);
            product =
                isF ? Value(
                          nb.create<mlir::arith::MulFOp>(nl, product, x, math))
                    : Value(nb.create<mlir::arith::MulIOp>(nl, product, x));
          }
          Value sum = args.back();
          return isF ? Value(nb.create<mlir::arith::AddFOp>(nl, sum, product,
                                                            math))
                     : Value(nb.create<mlir::arith::AddIOp>(nl, sum, product));
        });
    return Indexed{v, resultAxes};
  };

  // An empty operand leaves every sum empty: the result is all zeros (or is
  // itself empty). Pairwise contraction could otherwise build a large
  // intermediate from empty operands ("i j, j k, k l" with j = l = 0 and a
  // large k makes i x k zeros).
  for (auto &operand : live)
    for (auto &a : operand.axes)
      if (!a.empty() && isStaticSize(l.axisSize(a), 0)) {
        Value zeros = l.filled(loc, l.sizesOf(outAxes), acc,
                               l.identity(ReduceKind::Sum, acc));
        return l.regroupAxes(loc, l.castTensor(loc, zeros, element), outAxes,
                             info.outputGroups, resultShape.sizes);
      }
  if (live.size() <= 2) {
    Value v = contract(live, outAxes).value;
    v = l.castTensor(loc, v, element);
    return l.regroupAxes(loc, v, outAxes, info.outputGroups, resultShape.sizes);
  }
  // Pairwise along the cost model's order; intermediates keep the axes that
  // the output or a later operand still needs. (ein-split-einsums has
  // usually split such einsums already; ein-opt may bring one here.)
  for (auto [i, j] : contractionPath(info, l.sizes.getEnv())) {
    std::set<std::string> needed(outAxes.begin(), outAxes.end());
    for (size_t k = 0; k < live.size(); ++k)
      if (k != i && k != j)
        needed.insert(live[k].axes.begin(), live[k].axes.end());
    std::vector<std::string> keep;
    for (auto *side : {&live[i], &live[j]})
      for (auto &a : side->axes)
        if (!a.empty() && needed.count(a) &&
            std::find(keep.begin(), keep.end(), a) == keep.end())
          keep.push_back(a);
    bool last = live.size() == 2;
    Indexed step = contract({live[i], live[j]}, last ? outAxes : keep);
    live = afterContracting(live, i, j, step);
  }
  Value v = l.castTensor(loc, live[0].value, element);
  return l.regroupAxes(loc, v, live[0].axes, info.outputGroups,
                       resultShape.sizes);
}

struct EinsumLowering : EinPattern<EinsumOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    mlir::FailureOr<llvm::SmallVector<Value>> values = mlir::failure();
    if (auto info = getEinsumInfo(op)) {
      llvm::SmallVector<Value> inputs(adaptor.getInputs());
      auto v = lowerEinsum(l, op, inputs, (*results)[0], *info);
      if (mlir::succeeded(v))
        values = llvm::SmallVector<Value>{*v};
    }
    return replaceOrReport(rewriter, op, values);
  }
};

} // namespace

void populateEinsumLowering(mlir::RewritePatternSet &patterns,
                            const mlir::TypeConverter &converter,
                            LoweringState &state) {
  patterns.add<EinsumLowering>(converter, patterns.getContext(), state);
}

} // namespace ein::lowering
