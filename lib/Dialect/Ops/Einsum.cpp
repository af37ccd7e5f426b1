// The IR rules of the einsum op: each op's verifier, how MLIRGen
// builds it (buildFooOp, OpRules.h) and what its cost needs from its
// attributes (fillCostInput).
#include "OpHelpers.h"
#include "ein/Analysis/Cost.h"
#include "ein/Sema/Program.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ein;
using namespace ein::oprules;

LogicalResult EinsumOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  Expected<ein::Pattern> pattern = opPattern(getPattern(), PatternUse::Einsum);
  if (!pattern)
    return fail(*this, pattern.error());
  if (pattern->inputs.size() != getInputs().size())
    return emitOpError() << "pattern \"" << getPattern().getText() << "\" has "
                         << pattern->inputs.size()
                         << " input(s) but the op has " << getInputs().size()
                         << " operand(s)";
  Type elementType;
  if (failed(sameElementTypes(*this, getInputs(), elementType)) ||
      failed(checkOperandDTypes(*this)))
    return failure();
  if (std::optional<Type> acc = getAcc()) {
    if (failed(checkAcc(*this, *findDTypeRule("einsum"), *acc)))
      return failure();
    elementType = *acc;
  }
  Expected<std::vector<SizeArg>> sizes = getSizeArgs(getSizesAttr());
  if (!sizes)
    return fail(*this, sizes.error());
  std::vector<Shape> shapes;
  for (mlir::Value input : getInputs())
    shapes.push_back(tensorType(input).getShape());
  InferContext ctx = getInferContext(*this);
  Expected<Shape> shape = inferEinsum(ctx, *pattern, shapes, *sizes);
  if (!shape)
    return fail(*this, shape.error());
  return checkResult(*this, ctx, tensorType(getResult()), *shape, elementType);
}

Operation *ein::buildEinsumOp(OpBuilder &builder, Location loc,
                              TypeRange results, ValueRange operands,
                              const CheckedOp &op) {
  return builder.create<EinsumOp>(
      loc, results[0], operands, checkedPattern(builder, op),
      checkedSizes(builder, op), checkedAcc(builder, op));
}

LogicalResult ein::fillCostInput(EinsumOp op, CostInput &input,
                                 CostInputStorage &storage) {
  storage.einsum = getEinsumInfo(op);
  if (!storage.einsum)
    return failure();
  input.einsum = &*storage.einsum;
  return success();
}
