// The ein-split-einsums pass: an einsum of three or more operands becomes a
// chain of two-operand einsums along the cost model's contraction order.
#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Transforms/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <set>
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

bool isEllipsisAxis(const std::string &axis) {
  return axis.rfind("...", 0) == 0;
}

/// One live operand of the chain: an operand of the einsum or the product of
/// a step.
struct Term {
  EinTensorType type;
  std::string side;              // its side of a step's pattern
  std::vector<std::string> axes; // elementary axes, as EinsumInfo names them
  bool original;
  bool hasEllipsis; // some operand it comes from has `...`
};

/// The pattern side of a product holding `axes`: the named axes in order and
/// one `...` for the ellipsis dims (where the first of them is, else first).
std::string productSide(const std::vector<std::string> &axes,
                        bool hasEllipsis) {
  std::vector<std::string> parts;
  bool dots = false;
  for (auto &a : axes) {
    if (!isEllipsisAxis(a))
      parts.push_back(a);
    else if (!dots)
      parts.push_back("...");
    dots |= isEllipsisAxis(a);
  }
  if (hasEllipsis && !dots)
    parts.insert(parts.begin(), "...");
  std::string side;
  for (auto &p : parts)
    side += (side.empty() ? "" : " ") + p;
  return side;
}

/// One einsum of the chain: of two operands, or of one (summing what only it
/// has).
struct Step {
  ContractionStep at;     // positions in the live list (contractionOrder)
  std::vector<bool> cast; // cast that operand to the accumulator type first
  ein::Pattern pattern;
  std::vector<SizeArg> sizes;
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
    std::vector<Term> live;
    for (size_t k = 0; k < op.getInputs().size(); ++k)
      live.push_back(
          Term{llvm::cast<EinTensorType>(op.getInputs()[k].getType()),
               pattern->inputs[k].str(), info->operandAxes[k], true,
               pattern->inputs[k].hasEllipsis()});
    // Every step names the accumulator unless it is the operands' type and
    // was not asked for (then no step needs it).
    mlir::TypeAttr stepAcc;
    if (op.getAcc() || acc != live[0].type.getElementType())
      stepAcc = mlir::TypeAttr::get(acc);

    // The whole chain is planned before the IR changes: a step that does not
    // infer leaves the einsum as it is.
    std::vector<Step> steps;
    InferContext ctx = getInferContext(op);
    for (const ContractionStep &at : contractionOrder(*info, env)) {
      unsigned i = at[0], j = at.back(); // j == i: one operand
      // As the lowering keeps them: the axes of the step's operands, in
      // order, that the output or another live operand still needs.
      std::set<std::string> needed(info->outputAxes.begin(),
                                   info->outputAxes.end());
      for (size_t k = 0; k < live.size(); ++k)
        if (k != i && k != j)
          needed.insert(live[k].axes.begin(), live[k].axes.end());
      std::vector<std::string> keep;
      bool hasEllipsis = false, withProduct = false;
      std::string in;
      for (unsigned k : at) {
        for (auto &a : live[k].axes)
          if (needed.count(a) &&
              std::find(keep.begin(), keep.end(), a) == keep.end())
            keep.push_back(a);
        hasEllipsis |= live[k].hasEllipsis;
        withProduct |= !live[k].original;
        in += (k == at[0] ? "" : ", ") + live[k].side; // a scalar's is ""
      }
      bool last = live.size() == at.size();
      std::string out =
          last ? pattern->output.str() : productSide(keep, hasEllipsis);
      Expected<ein::Pattern> stepPattern =
          parsePattern(in + " -> " + out, PatternUse::Einsum);
      if (!stepPattern)
        return mlir::failure();
      Step step{at, {}, *stepPattern, {}, {}};
      // An operand of the einsum that meets a product (in `acc`) is cast to
      // it first: the conversion the einsum applies to each of its elements.
      std::vector<Shape> shapes;
      for (unsigned k : at) {
        step.cast.push_back(withProduct &&
                            live[k].type.getElementType() != acc);
        shapes.push_back(live[k].type.getShape());
      }
      std::set<std::string> named; // the sizes of the axes this step names
      for (auto &side : step.pattern.inputs)
        for (auto *a : side.namedAxes())
          named.insert(a->name);
      for (auto *a : step.pattern.output.namedAxes())
        named.insert(a->name);
      for (auto &s : *sizes)
        if (named.count(s.name))
          step.sizes.push_back(s);
      if (last) {
        step.type = resultType.withElementType(acc);
      } else {
        Expected<Shape> shape =
            inferEinsum(ctx, step.pattern, shapes, step.sizes);
        if (!shape)
          return mlir::failure();
        step.type = EinTensorType::get(*shape, acc);
      }
      steps.push_back(step);
      live = afterContracting(live, i, j,
                              Term{step.type, productSide(keep, hasEllipsis),
                                   keep, false, hasEllipsis});
    }

    mlir::Location loc = op.getLoc();
    std::vector<mlir::Value> values(op.getInputs().begin(),
                                    op.getInputs().end());
    for (const Step &step : steps) {
      llvm::SmallVector<mlir::Value, 2> operands;
      for (size_t n = 0; n < step.at.size(); ++n) {
        mlir::Value v = values[step.at[n]];
        if (step.cast[n])
          v = rewriter.create<CastOp>(
              loc, llvm::cast<EinTensorType>(v.getType()).withElementType(acc),
              v);
        operands.push_back(v);
      }
      mlir::DictionaryAttr stepSizes =
          step.sizes.empty() ? nullptr : getSizesAttr(getContext(), step.sizes);
      mlir::Value product = rewriter.create<EinsumOp>(
          loc, step.type, operands,
          PatternAttr::get(getContext(), step.pattern), stepSizes, stepAcc);
      values = afterContracting(values, step.at[0], step.at.back(), product);
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
