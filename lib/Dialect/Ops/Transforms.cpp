// The IR rules of the transform ops (rearrange, reduce, repeat): each op's
// verifier, how MLIRGen builds it (buildFooOp, OpRules.h) and what its cost
// needs from its attributes (fillCostInput).
#include "OpHelpers.h"
#include "ein/Analysis/Cost.h"
#include "ein/Sema/Program.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ein;
using namespace ein::oprules;

/// rearrange, reduce and repeat: one operand, pattern and sizes.
template <typename InferFn>
static LogicalResult
verifyUnaryPatternOp(Operation *op, PatternAttr attr, DictionaryAttr sizesAttr,
                     PatternUse use, mlir::Value input, mlir::Value result,
                     InferFn infer, Type resultElement = {}) {
  Expected<ein::Pattern> pattern = opPattern(attr, use);
  if (!pattern)
    return fail(op, pattern.error());
  Expected<std::vector<SizeArg>> sizes = getSizeArgs(sizesAttr);
  if (!sizes)
    return fail(op, sizes.error());
  InferContext ctx = getInferContext(op);
  Expected<Shape> shape =
      infer(ctx, *pattern, tensorType(input).getShape(), *sizes);
  if (!shape)
    return fail(op, shape.error());
  return checkResult(op, ctx, tensorType(result), *shape,
                     resultElement ? resultElement
                                   : tensorType(input).getElementType());
}

/// What the cost of rearrange, reduce and repeat needs: the elementary-axis
/// structure.
static LogicalResult fillTransformCostInput(Operation *op, CostInput &input,
                                            CostInputStorage &storage) {
  storage.transform = getTransformInfo(op);
  if (!storage.transform)
    return failure();
  input.transform = &*storage.transform;
  return success();
}

LogicalResult RearrangeOp::verify() {
  if (failed(checkOperandDTypes(*this)))
    return failure();
  return verifyUnaryPatternOp(*this, getPattern(), getSizesAttr(),
                              PatternUse::Rearrange, getInput(), getResult(),
                              inferRearrange);
}

Operation *ein::buildRearrangeOp(OpBuilder &builder, Location loc,
                                 TypeRange results, ValueRange operands,
                                 const CheckedOp &op) {
  return builder.create<RearrangeOp>(loc, results[0], operands[0],
                                     checkedPattern(builder, op),
                                     checkedSizes(builder, op));
}

LogicalResult ein::fillCostInput(RearrangeOp op, CostInput &input,
                                 CostInputStorage &storage) {
  return fillTransformCostInput(op, input, storage);
}

LogicalResult ReduceOp::verify() {
  Type acc = getAcc() ? *getAcc() : Type();
  const DTypeRule &rule = reduceDTypeRule(toReduceKind(getKind()));
  if (failed(checkOperandDTypes(*this, rule)) ||
      failed(checkAcc(*this, rule, acc)))
    return failure();
  // max/min over an axis of size 0 has no identity: rejected here as in the
  // checker, so no IR that verifies lowers to a wrong (-inf/+inf) result.
  ReduceKind kind = toReduceKind(getKind());
  auto inferNonEmpty =
      [kind](InferContext &ctx, const ein::Pattern &pattern, const Shape &input,
             const std::vector<SizeArg> &sizes) -> Expected<Shape> {
    auto info =
        analyzeTransform(ctx, PatternUse::Reduce, pattern, input, sizes);
    if (!info)
      return info.error();
    Expected<bool> nonEmpty =
        requireNonEmptyReduction(ctx, kind, pattern, *info);
    if (!nonEmpty)
      return nonEmpty.error();
    return info->result;
  };
  return verifyUnaryPatternOp(*this, getPattern(), getSizesAttr(),
                              PatternUse::Reduce, getInput(), getResult(),
                              inferNonEmpty, acc);
}

Operation *ein::buildReduceOp(OpBuilder &builder, Location loc,
                              TypeRange results, ValueRange operands,
                              const CheckedOp &op) {
  return builder.create<ReduceOp>(
      loc, results[0],
      ReduceOpKindAttr::get(builder.getContext(), toReduceOpKind(op.reduction)),
      operands[0], checkedPattern(builder, op), checkedSizes(builder, op),
      checkedAcc(builder, op));
}

LogicalResult ein::fillCostInput(ReduceOp op, CostInput &input,
                                 CostInputStorage &storage) {
  input.reduction = toReduceKind(op.getKind());
  return fillTransformCostInput(op, input, storage);
}

LogicalResult RepeatOp::verify() {
  if (failed(checkOperandDTypes(*this)))
    return failure();
  return verifyUnaryPatternOp(*this, getPattern(), getSizesAttr(),
                              PatternUse::Repeat, getInput(), getResult(),
                              inferRepeat);
}

Operation *ein::buildRepeatOp(OpBuilder &builder, Location loc,
                              TypeRange results, ValueRange operands,
                              const CheckedOp &op) {
  return builder.create<RepeatOp>(loc, results[0], operands[0],
                                  checkedPattern(builder, op),
                                  checkedSizes(builder, op));
}

LogicalResult ein::fillCostInput(RepeatOp op, CostInput &input,
                                 CostInputStorage &storage) {
  return fillTransformCostInput(op, input, storage);
}
