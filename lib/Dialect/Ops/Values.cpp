// The IR rules of the value ops (constant, size, arange): each op's verifier,
// how MLIRGen builds it (buildFooOp, OpRules.h) and what its cost needs from
// its attributes (fillCostInput).
#include "OpHelpers.h"
#include "ein/Analysis/Cost.h"
#include "ein/Sema/Program.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ein;
using namespace ein::oprules;

LogicalResult
ConstantOp::inferReturnTypes(MLIRContext *context, std::optional<Location>,
                             ValueRange operands, DictionaryAttr attributes,
                             OpaqueProperties properties, RegionRange regions,
                             SmallVectorImpl<Type> &inferredReturnTypes) {
  ConstantOp::Adaptor adaptor(operands, attributes, properties, regions);
  TypedAttr value = dyn_cast_or_null<TypedAttr>(adaptor.getValueAttr());
  if (!value)
    return failure();
  inferredReturnTypes.push_back(
      EinTensorType::get(context, "", value.getType()));
  return success();
}

LogicalResult ConstantOp::verify() {
  Attribute value = getValue();
  if (!isa<FloatAttr, IntegerAttr>(value))
    return emitOpError("value must be a float or integer attribute");
  Type type = cast<TypedAttr>(value).getType();
  if (!toDType(type))
    return emitOpError() << "unsupported element type " << type;
  EinTensorType result = tensorType(getResult());
  if (!result.getShape().empty())
    return emitOpError() << "result must be a scalar (shape \"\"), not \""
                         << result.getShapeText() << "\"";
  if (result.getElementType() != type)
    return emitOpError() << "result element type " << result.getElementType()
                         << " does not match the value's " << type;
  return success();
}

Operation *ein::buildConstantOp(OpBuilder &builder, Location loc,
                                TypeRange results, ValueRange,
                                const CheckedOp &op) {
  Type elementType = cast<EinTensorType>(results[0]).getElementType();
  // The checker proved the value fits the dtype (DTypeRules.h); integers
  // are carried exactly, not through a double.
  TypedAttr value =
      isa<FloatType>(elementType)
          ? TypedAttr(builder.getFloatAttr(elementType, op.constant))
          : TypedAttr(builder.getIntegerAttr(
                elementType, APInt(elementType.getIntOrFloatBitWidth(),
                                   op.constantInt, /*isSigned=*/true)));
  return builder.create<ConstantOp>(loc, value);
}

LogicalResult ein::fillCostInput(ConstantOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

LogicalResult SizeOp::verify() {
  Expected<SizeExpr> size = parseSizeExpr(getSize().str());
  if (!size)
    return emitOpError() << "invalid size \"" << getSize()
                         << "\": " << size.error().message;
  EinTensorType result = tensorType(getResult());
  if (!result.getShape().empty())
    return emitOpError() << "result must be a scalar (shape \"\"), not \""
                         << result.getShapeText() << "\"";
  std::optional<DType> dtype = toDType(result.getElementType());
  if (!dtype || *dtype == DType::Bool)
    return emitOpError() << "a size converts to a number type, not "
                         << result.getElementType();
  return success();
}

Operation *ein::buildSizeOp(OpBuilder &builder, Location loc, TypeRange results,
                            ValueRange, const CheckedOp &op) {
  return builder.create<SizeOp>(loc, results[0],
                                builder.getStringAttr(op.sizeValue.str()));
}

LogicalResult ein::fillCostInput(SizeOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

namespace {

/// arange's CheckedOp read back from its result type (buildArangeOp's
/// inverse): the size is its one dim, the dtype its element type. What the
/// type cannot say is refused here, in the IR's words.
FailureOr<CheckedOp> checkedOf(ArangeOp op) {
  EinTensorType result = tensorType(op.getResult());
  if (result.getShape().size() != 1)
    return op.emitOpError() << "result must have rank 1 (its dim is the size), "
                               "not shape \""
                            << result.getShapeText() << "\"";
  if (result.getShape()[0].isPack())
    return op.emitOpError() << "result dim must be a size, not a pack";
  std::optional<DType> dtype = toDType(result.getElementType());
  if (!dtype || *dtype == DType::Bool)
    return op.emitOpError()
           << "counts in a number type, not " << result.getElementType();
  CheckedOp checked;
  checked.kind = OpKind::Arange;
  checked.sizeValue = result.getShape()[0].size;
  checked.dtype = *dtype;
  return checked;
}

} // namespace

LogicalResult ArangeOp::verify() {
  return verifyThroughBuilder(*this, checkedOf(*this));
}

Operation *ein::buildArangeOp(OpBuilder &builder, Location loc,
                              TypeRange results, ValueRange,
                              const CheckedOp &) {
  return builder.create<ArangeOp>(loc, results[0]);
}

LogicalResult ein::fillCostInput(ArangeOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}
