// The IR rules of the pack ops (pack, unpack): each op's verifier, how MLIRGen
// builds it (buildFooOp, OpRules.h) and what its cost needs from its
// attributes (fillCostInput).
#include "OpHelpers.h"
#include "ein/Analysis/Cost.h"
#include "ein/Sema/Program.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ein;
using namespace ein::oprules;

LogicalResult PackOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  Expected<ein::Pattern> pattern = opPattern(getPattern(), PatternUse::Pack);
  if (!pattern)
    return fail(*this, pattern.error());
  Type elementType;
  if (failed(sameElementTypes(*this, getInputs(), elementType)) ||
      failed(checkOperandDTypes(*this)))
    return failure();
  std::vector<Shape> shapes;
  for (mlir::Value input : getInputs())
    shapes.push_back(tensorType(input).getShape());
  InferContext ctx = getInferContext(*this);
  Expected<PackResult> packed = inferPack(ctx, *pattern, shapes);
  if (!packed)
    return fail(*this, packed.error());
  return checkResult(*this, ctx, tensorType(getResult()), packed->packed,
                     elementType);
}

Operation *ein::buildPackOp(OpBuilder &builder, Location loc, TypeRange results,
                            ValueRange operands, const CheckedOp &op) {
  return builder.create<PackOp>(loc, results[0], operands,
                                checkedPattern(builder, op));
}

LogicalResult ein::fillCostInput(PackOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

LogicalResult UnpackOp::verify() {
  if (failed(checkOperandDTypes(*this)))
    return failure();
  Expected<ein::Pattern> pattern = opPattern(getPattern(), PatternUse::Pack);
  if (!pattern)
    return fail(*this, pattern.error());
  if (getParts().size() != getResults().size())
    return emitOpError() << "has " << getParts().size() << " part shape(s) but "
                         << getResults().size() << " result(s)";
  std::vector<Shape> parts;
  for (auto [i, part] :
       llvm::enumerate(getParts().getAsValueRange<StringAttr>())) {
    Expected<Shape> shape = parseShape(part.str());
    if (!shape)
      return emitOpError() << "invalid shape \"" << part << "\" of part #" << i
                           << ": " << shape.error().message;
    parts.push_back(*shape);
  }
  InferContext ctx = getInferContext(*this);
  Expected<std::vector<Shape>> shapes =
      inferUnpack(ctx, *pattern, tensorType(getInput()).getShape(), parts);
  if (!shapes)
    return fail(*this, shapes.error());
  if (shapes->size() != getResults().size())
    return emitOpError() << "unpacks into " << shapes->size()
                         << " tensor(s) but has " << getResults().size()
                         << " result(s)";
  Type elementType = tensorType(getInput()).getElementType();
  for (auto [i, result] : llvm::enumerate(getResults())) {
    std::string what = "result #" + std::to_string(i);
    if (failed(checkResult(*this, ctx, tensorType(result), (*shapes)[i],
                           elementType, what)))
      return failure();
  }
  return success();
}

Operation *ein::buildUnpackOp(OpBuilder &builder, Location loc,
                              TypeRange results, ValueRange operands,
                              const CheckedOp &op) {
  return builder.create<UnpackOp>(
      loc, results, operands[0], checkedPattern(builder, op),
      getPartsAttr(builder.getContext(), op.packParts));
}

LogicalResult ein::fillCostInput(UnpackOp op, CostInput &input,
                                 CostInputStorage &) {
  Expected<ein::Pattern> pattern = opPattern(op.getPattern(), PatternUse::Pack);
  if (!pattern)
    return failure();
  input.packAxesBefore = pattern->inputs[0].starIndex();
  return success();
}
