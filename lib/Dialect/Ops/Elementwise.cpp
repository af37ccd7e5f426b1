// The IR rules of the elementwise ops (ein.elementwise; ein.cast, astype;
// ein.dropout): each
// op's verifier, how MLIRGen builds it (buildFooOp, OpRules.h) and what its
// cost needs from its attributes (fillCostInput).
#include "OpHelpers.h"
#include "ein/Analysis/Cost.h"
#include "ein/Sema/Program.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ein;
using namespace ein::oprules;

const ElementwiseInfo &ElementwiseOp::getInfo() {
  return *findElementwise(getFn().str());
}

LogicalResult ElementwiseOp::verify() {
  const ElementwiseInfo *info = findElementwise(getFn().str());
  if (!info)
    return emitOpError() << "unknown elementwise function \"" << getFn()
                         << "\"";
  if (getInputs().size() != info->arity)
    return emitOpError() << "\"" << getFn() << "\" takes " << info->arity
                         << " operand(s), got " << getInputs().size();
  Type elementType;
  InferContext ctx = getInferContext(*this);
  std::optional<Shape> shape;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    Type type = tensorType(input).getElementType();
    std::optional<DType> dtype = toDType(type);
    if (!dtype)
      return emitOpError() << "unsupported element type " << type;
    if (std::optional<std::string> error =
            elementwiseOperandError(*info, static_cast<unsigned>(i), *dtype))
      return emitOpError() << *error;
    if (!(info->firstIsCondition && i == 0)) {
      if (!elementType)
        elementType = type;
      else if (type != elementType)
        return emitOpError()
               << "operands must share one element type, but operand #" << i
               << " has " << type << " and operand #"
               << (info->firstIsCondition ? 1 : 0) << " has " << elementType;
    }
    Shape inputShape = tensorType(input).getShape();
    if (!shape) {
      shape = inputShape;
      continue;
    }
    Expected<Shape> joined = inferBroadcast(ctx, *shape, inputShape);
    if (!joined)
      return fail(*this, joined.error());
    shape = *joined;
  }
  Type resultElement =
      info->boolResult ? Type(IntegerType::get(getContext(), 1)) : elementType;
  return checkResult(*this, ctx, tensorType(getResult()), *shape,
                     resultElement);
}

Operation *ein::buildElementwiseOp(OpBuilder &builder, Location loc,
                                   TypeRange results, ValueRange operands,
                                   const CheckedOp &op) {
  return builder.create<ElementwiseOp>(
      loc, results[0], builder.getStringAttr(elementwiseInfo(op.fn).name),
      operands);
}

LogicalResult ein::fillCostInput(ElementwiseOp op, CostInput &input,
                                 CostInputStorage &) {
  input.fn = op.getInfo().fn;
  return success();
}

namespace {

/// astype's CheckedOp read back from its result type (buildCastOp's
/// inverse): the dtype cast to. The operand's dtype rule, which the builder
/// leaves to the checker, is applied here.
FailureOr<CheckedOp> checkedOf(CastOp op) {
  if (failed(checkOperandDTypes(op)))
    return failure();
  Type element = tensorType(op.getResult()).getElementType();
  std::optional<DType> dtype = toDType(element);
  if (!dtype)
    return op.emitOpError() << "unsupported element type " << element;
  CheckedOp checked;
  checked.kind = OpKind::Cast;
  checked.dtype = *dtype;
  return checked;
}

} // namespace

LogicalResult CastOp::verify() {
  return verifyThroughBuilder(*this, checkedOf(*this));
}

Operation *ein::buildCastOp(OpBuilder &builder, Location loc, TypeRange results,
                            ValueRange operands, const CheckedOp &) {
  return builder.create<CastOp>(loc, results[0], operands[0]);
}

LogicalResult ein::fillCostInput(CastOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

LogicalResult DropoutOp::verify() {
  // The builder checks p, the input's dtype and the key's type; p is the
  // attribute or the operand `rate`, one of them.
  if (bool(getP()) == bool(getRate()))
    return emitOpError() << "needs p (a number) or rate (a rank-0 float "
                            "tensor), one of them";
  CheckedOp checked;
  checked.kind = OpKind::Dropout;
  if (getP())
    checked.constant = getP()->convertToDouble();
  return verifyThroughBuilder(*this, checked);
}

Operation *ein::buildDropoutOp(OpBuilder &builder, Location loc,
                               TypeRange results, ValueRange operands,
                               const CheckedOp &op) {
  if (operands.size() == 3)
    return builder.create<DropoutOp>(loc, results[0], operands[0], operands[1],
                                     operands[2], nullptr);
  return builder.create<DropoutOp>(loc, results[0], operands[0], operands[1],
                                   mlir::Value(),
                                   builder.getF64FloatAttr(op.constant));
}

LogicalResult ein::fillCostInput(DropoutOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}
