// The IR rules of the indexing ops (take, take_along, slice, scatter_add): each
// op's verifier, how MLIRGen builds it (buildFooOp, OpRules.h) and what its
// cost needs from its attributes (fillCostInput).
#include "OpHelpers.h"
#include "ein/Analysis/Cost.h"
#include "ein/Sema/Program.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ein;
using namespace ein::oprules;

namespace {

/// take's CheckedOp read back from its attributes (buildTakeOp's inverse):
/// the table's axis. What the builder would word otherwise is refused here,
/// in the IR's words.
FailureOr<CheckedOp> checkedOf(TakeOp op) {
  EinTensorType table = tensorType(op.getTable()),
                ids = tensorType(op.getIds());
  Shape tableShape = table.getShape();
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(tableShape.size()))
    return op.emitOpError()
           << "axis " << axis << " is not an axis of the table \""
           << table.getShapeText() << "\"";
  if (tableShape[axis].isPack())
    return op.emitOpError() << "axis " << axis << " must be a size, not a pack";
  std::optional<DType> idType = toDType(ids.getElementType());
  if (!idType || (*idType != DType::I64 && *idType != DType::I32))
    return op.emitOpError()
           << "ids must be i32 or i64, not " << ids.getElementType();
  CheckedOp checked;
  checked.kind = OpKind::Take;
  checked.axis = static_cast<unsigned>(axis);
  return checked;
}

} // namespace

LogicalResult TakeOp::verify() {
  FailureOr<CheckedOp> checked = checkedOf(*this);
  if (failed(checked))
    return failure();
  // The builder refuses a variadic in the table or the ids (the checker
  // must know its rank); the IR admits one, its rank given to the lowering
  // later (--rank), so such a take keeps the rule written here.
  Shape tableShape = tensorType(getTable()).getShape(),
        idsShape = tensorType(getIds()).getShape();
  auto isPack = [](const Dim &d) { return d.isPack(); };
  if (llvm::none_of(tableShape, isPack) && llvm::none_of(idsShape, isPack))
    return verifyThroughBuilder(*this, *checked);
  // The table's dims with the axis replaced, in place, by the ids' dims.
  int64_t axis = getAxis();
  Shape inferred(tableShape.begin(), tableShape.begin() + axis);
  inferred.insert(inferred.end(), idsShape.begin(), idsShape.end());
  inferred.insert(inferred.end(), tableShape.begin() + axis + 1,
                  tableShape.end());
  InferContext ctx = getInferContext(*this);
  return checkResult(*this, ctx, tensorType(getResult()), inferred,
                     tensorType(getTable()).getElementType());
}

Operation *ein::buildTakeOp(OpBuilder &builder, Location loc, TypeRange results,
                            ValueRange operands, const CheckedOp &op) {
  return builder.create<TakeOp>(loc, results[0], operands[0], operands[1],
                                builder.getI64IntegerAttr(op.axis));
}

LogicalResult ein::fillCostInput(TakeOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

namespace {

/// take_along's CheckedOp read back from its attributes: the input's axis,
/// refused in the IR's words when it is not one; the builder gives the
/// rest (the ids' shape, their dtype, a variadic) and the result type.
FailureOr<CheckedOp> checkedOf(TakeAlongOp op) {
  EinTensorType input = tensorType(op.getInput());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0 || axis >= static_cast<int64_t>(input.getShape().size()))
    return op.emitOpError()
           << "axis " << axis << " is not an axis of the input \""
           << input.getShapeText() << "\"";
  CheckedOp checked;
  checked.kind = OpKind::TakeAlong;
  checked.axis = static_cast<unsigned>(axis);
  return checked;
}

} // namespace

LogicalResult TakeAlongOp::verify() {
  return verifyThroughBuilder(*this, checkedOf(*this));
}

Operation *ein::buildTakeAlongOp(OpBuilder &builder, Location loc,
                                 TypeRange results, ValueRange operands,
                                 const CheckedOp &op) {
  return builder.create<TakeAlongOp>(loc, results[0], operands[0], operands[1],
                                     builder.getI64IntegerAttr(op.axis));
}

LogicalResult ein::fillCostInput(TakeAlongOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

LogicalResult ScatterAddOp::verify() {
  EinTensorType result = tensorType(getResult()), ids = tensorType(getIds()),
                updates = tensorType(getUpdates());
  Shape resultShape = result.getShape(), idsShape = ids.getShape();
  // I64Attr reads back as uint64_t: a negative axis is its two's complement.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= static_cast<int64_t>(resultShape.size()))
    return emitOpError() << "axis " << axis
                         << " is not an axis of the result \""
                         << result.getShapeText() << "\"";
  if (resultShape[axis].isPack())
    return emitOpError() << "axis " << axis << " must be a size, not a pack";
  std::optional<DType> idType = toDType(ids.getElementType());
  if (!idType || (*idType != DType::I64 && *idType != DType::I32))
    return emitOpError() << "ids must be i32 or i64, not "
                         << ids.getElementType();
  std::optional<DType> dtype = toDType(result.getElementType());
  if (!dtype || *dtype == DType::Bool)
    return emitOpError() << "adds numbers, not " << result.getElementType();
  // The updates have take's result shape: the result's axis replaced, in
  // place, by the ids' dims.
  Shape inferred(resultShape.begin(), resultShape.begin() + axis);
  inferred.insert(inferred.end(), idsShape.begin(), idsShape.end());
  inferred.insert(inferred.end(), resultShape.begin() + axis + 1,
                  resultShape.end());
  InferContext ctx = getInferContext(*this);
  return checkResult(*this, ctx, updates, inferred, result.getElementType(),
                     "updates");
}

Operation *ein::buildScatterAddOp(OpBuilder &builder, Location loc,
                                  TypeRange results, ValueRange operands,
                                  const CheckedOp &op) {
  return builder.create<ScatterAddOp>(loc, results[0], operands[0], operands[1],
                                      builder.getI64IntegerAttr(op.axis));
}

LogicalResult ein::fillCostInput(ScatterAddOp, CostInput &,
                                 CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

int64_t SliceOp::getDimIndex() {
  // I64Attr reads back as uint64_t: the axis is its two's complement.
  int64_t rank = tensorType(getInput()).getShape().size();
  int64_t axis = static_cast<int64_t>(getAxis());
  return axis < 0 ? axis + rank : axis;
}

namespace {

/// slice's CheckedOp read back from its attributes (buildSliceOp's
/// inverse): the axis and the bounds, parsed. The faults the lit tests pin
/// in the IR's words (an axis out of range, a variadic, bounds known to be
/// out of order) are refused here before the builder words them otherwise.
FailureOr<CheckedOp> checkedOf(SliceOp op) {
  Shape input = tensorType(op.getInput()).getShape();
  int64_t rank = input.size(), axis = static_cast<int64_t>(op.getAxis());
  if (axis < -rank || axis >= rank)
    return op.emitOpError()
           << "axis " << axis << " is out of range for rank " << rank;
  int64_t index = op.getDimIndex();
  if (input[index].isPack())
    return op.emitOpError()
           << "cannot slice the variadic *" << input[index].pack;
  Expected<SizeExpr> start = parseSizeExpr(op.getStart().str());
  if (!start)
    return op.emitOpError() << "invalid start \"" << op.getStart()
                            << "\": " << start.error().message;
  Expected<SizeExpr> stop = parseSizeExpr(op.getStop().str());
  if (!stop)
    return op.emitOpError() << "invalid stop \"" << op.getStop()
                            << "\": " << stop.error().message;
  for (auto [bound, name] :
       {std::pair{*start, "start"}, std::pair{*stop, "stop"}})
    if (auto v = bound.constantValue(); v && *v < 0)
      return op.emitOpError() << name << " is negative";
  if (auto v = (*stop - *start).constantValue(); v && *v < 0)
    return op.emitOpError() << "start is after stop";
  if (auto v = (input[index].size - *stop).constantValue(); v && *v < 0)
    return op.emitOpError() << "stop is beyond the dim's size";
  CheckedOp checked;
  checked.kind = OpKind::Slice;
  checked.sliceAxis = axis;
  checked.sliceStart = *start;
  checked.sliceStop = *stop;
  return checked;
}

} // namespace

LogicalResult SliceOp::verify() {
  return verifyThroughBuilder(*this, checkedOf(*this));
}

Operation *ein::buildSliceOp(OpBuilder &builder, Location loc,
                             TypeRange results, ValueRange operands,
                             const CheckedOp &op) {
  return builder.create<SliceOp>(loc, results[0], operands[0],
                                 builder.getI64IntegerAttr(op.sliceAxis),
                                 builder.getStringAttr(op.sliceStart.str()),
                                 builder.getStringAttr(op.sliceStop.str()));
}

LogicalResult ein::fillCostInput(SliceOp op, CostInput &input,
                                 CostInputStorage &) {
  input.packAxesBefore = op.getDimIndex();
  return success();
}
