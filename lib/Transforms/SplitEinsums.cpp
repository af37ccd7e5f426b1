// The ein-split-einsums pass: an einsum of three or more operands becomes a
// chain of two-operand einsums along the cost model's contraction order.
#include "ein/Analysis/Cost.h"
#include "ein/Shape/ContractionOrder.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Transforms/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

#include <string>
#include <vector>

namespace ein {

#define GEN_PASS_DEF_SPLITEINSUMS
#include "ein/Transforms/Passes.h.inc"

namespace {

/// The accumulator rule of the einsum lowering
/// (EinToLinalg/Contractions.cpp): floats narrower than 32 bits accumulate in
/// f32.
bool isLowPrecisionFloat(mlir::Type t) {
  return llvm::isa<mlir::FloatType>(t) && t.getIntOrFloatBitWidth() < 32;
}

/// One einsum of the chain: of two operands, or of one (summing what only it
/// has).
struct Step {
  PairwiseStep planned;   // pairwiseChain's
  std::vector<bool> cast; // cast that operand to the accumulator type first
  EinTensorType type;
};

struct SplitEinsum : mlir::OpRewritePattern<EinsumOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult
  matchAndRewrite(EinsumOp op, mlir::PatternRewriter &rewriter) const override {
    if (op.getInputs().size() < 3)
      return mlir::failure();
    std::optional<EinsumInfo> info = getEinsumInfo(op);
    Expected<ein::Pattern> pattern =
        op.getPattern().getPattern(PatternUse::Einsum);
    Expected<std::vector<SizeArg>> sizes = getSizeArgs(op.getSizesAttr());
    if (!info || !pattern || !sizes)
      return mlir::failure();
    Bindings env = getModuleDims(op);
    // An empty operand makes the whole result zeros; the lowering fills it
    // without building any product (EinToLinalg/Contractions.cpp).
    for (auto &axes : info->operandAxes)
      for (auto &a : axes)
        if (info->axisSizes.at(a).evaluate(env) == Int(0))
          return mlir::failure();

    auto resultType = llvm::cast<EinTensorType>(op.getResult().getType());
    mlir::Type resultElement = resultType.getElementType();
    mlir::Type acc = op.getAcc() ? *op.getAcc()
                     : isLowPrecisionFloat(resultElement)
                         ? rewriter.getF32Type()
                         : resultElement;
    std::vector<EinTensorType> live;
    for (mlir::Value input : op.getInputs())
      live.push_back(llvm::cast<EinTensorType>(input.getType()));
    // Every step names the accumulator unless it is the operands' type and
    // was not asked for (then no step needs it).
    mlir::TypeAttr stepAcc;
    if (op.getAcc() || acc != live[0].getElementType())
      stepAcc = mlir::TypeAttr::get(acc);

    // The whole chain is planned before the IR changes: a step that does not
    // infer leaves the einsum as it is.
    auto chain = pairwiseChain(*info, *pattern, *sizes, env);
    if (!chain)
      return mlir::failure();
    std::vector<Step> steps;
    InferContext ctx = getInferContext(op);
    for (const PairwiseStep &planned : *chain) {
      Step step{planned, {}, {}};
      // An operand of the einsum that meets a product (in `acc`) is cast to
      // it first: the conversion the einsum applies to each of its elements.
      std::vector<Shape> shapes;
      for (unsigned k : planned.at) {
        step.cast.push_back(planned.withProduct &&
                            live[k].getElementType() != acc);
        shapes.push_back(live[k].getShape());
      }
      if (planned.last) {
        step.type = resultType.withElementType(acc);
      } else {
        Expected<Shape> shape =
            inferEinsum(ctx, planned.pattern, shapes, planned.sizes);
        if (!shape)
          return mlir::failure();
        step.type = EinTensorType::get(*shape, acc);
      }
      live =
          afterContracting(live, planned.at[0], planned.at.back(), step.type);
      steps.push_back(std::move(step));
    }

    mlir::Location loc = op.getLoc();
    std::vector<mlir::Value> values(op.getInputs().begin(),
                                    op.getInputs().end());
    for (const Step &step : steps) {
      llvm::SmallVector<mlir::Value, 2> operands;
      const PairwiseStep &planned = step.planned;
      for (size_t n = 0; n < planned.at.size(); ++n) {
        mlir::Value v = values[planned.at[n]];
        if (step.cast[n])
          v = rewriter.create<CastOp>(
              loc, llvm::cast<EinTensorType>(v.getType()).withElementType(acc),
              v);
        operands.push_back(v);
      }
      mlir::DictionaryAttr stepSizes =
          planned.sizes.empty() ? nullptr
                                : getSizesAttr(getContext(), planned.sizes);
      mlir::Value product = rewriter.create<EinsumOp>(
          loc, step.type, operands,
          PatternAttr::get(getContext(), planned.pattern), stepSizes, stepAcc);
      values =
          afterContracting(values, planned.at[0], planned.at.back(), product);
    }
    mlir::Value result = values[0];
    if (acc != resultElement)
      result = rewriter.create<CastOp>(loc, resultType, result);
    rewriter.replaceOp(op, result);
    return mlir::success();
  }
};

struct SplitEinsumsPass : impl::SplitEinsumsBase<SplitEinsumsPass> {
  void runOnOperation() override {
    // The pattern applied to each einsum in turn, not by the greedy driver,
    // which would also fold and erase unrelated ops.
    llvm::SmallVector<EinsumOp> einsums;
    getOperation().walk([&](EinsumOp op) {
      if (op.getInputs().size() >= 3)
        einsums.push_back(op);
    });
    SplitEinsum pattern(&getContext());
    mlir::PatternRewriter rewriter(&getContext());
    for (EinsumOp op : einsums) {
      rewriter.setInsertionPoint(op);
      (void)pattern.matchAndRewrite(op, rewriter);
    }
  }
};

} // namespace
} // namespace ein
