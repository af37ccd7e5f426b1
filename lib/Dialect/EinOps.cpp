//===- EinOps.cpp - ein operations: verifiers, building, cost inputs ------===//
//
// Everything the IR layer needs of each op, beside its verifier: how MLIRGen
// builds it from a checked op (`buildFooOp`) and what the cost model needs
// from its attributes (`fillCostInput`), both declared per registry row in
// OpRules.h, so a new op's IR rules are its ODS and this file.
//
// The verifiers are the static shape checker: each re-runs the matching
// `ein::infer*` rule on the operand types and the attributes, then checks
// the declared result type with `ein::checkShapeMatches`. Element types are
// checked against the one dtype table of the front end (DTypeRules.h), so
// that every op that verifies also lowers.
//
//===----------------------------------------------------------------------===//

#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Dialect/OpRules.h"
#include "ein/Sema/Program.h"
#include "ein/Shape/DTypeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace ein;

//===----------------------------------------------------------------------===//
// Custom assembly directives
//===----------------------------------------------------------------------===//

namespace ein {
ParseResult parsePatternLiteral(AsmParser &parser, PatternAttr &result);

/// `"b s (h d) -> b h s d"`
static ParseResult parsePatternText(OpAsmParser &parser, PatternAttr &pattern) {
  return parsePatternLiteral(parser, pattern);
}

static void printPatternText(OpAsmPrinter &printer, Operation *,
                             PatternAttr pattern) {
  printer.printString(pattern.getText());
}

/// `"b s (h d) -> b h s d" {h = "heads"}`: the pattern, then the optional
/// `sizes` dictionary (other attributes follow after `attributes`).
static ParseResult parsePatternAndSizes(OpAsmParser &parser,
                                        PatternAttr &pattern,
                                        DictionaryAttr &sizes) {
  if (parsePatternText(parser, pattern))
    return failure();
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  OptionalParseResult result = parser.parseOptionalAttribute(attr);
  if (!result.has_value())
    return success();
  if (failed(*result))
    return failure();
  sizes = dyn_cast<DictionaryAttr>(attr);
  if (!sizes)
    return parser.emitError(loc, "expected a dictionary of sizes");
  return success();
}

static void printPatternAndSizes(OpAsmPrinter &printer, Operation *op,
                                 PatternAttr pattern, DictionaryAttr sizes) {
  printPatternText(printer, op, pattern);
  if (sizes) {
    printer << " ";
    printer.printAttribute(sizes);
  }
}

/// `sum`, `mean`, `max`, `min` or `prod`.
static ParseResult parseReduceKind(OpAsmParser &parser,
                                   ReduceOpKindAttr &kind) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<ReduceOpKind> value = symbolizeReduceOpKind(keyword);
  if (!value)
    return parser.emitError(loc) << "unknown reduction '" << keyword
                                 << "' (expected sum, mean, max, min or prod)";
  kind = ReduceOpKindAttr::get(parser.getContext(), *value);
  return success();
}

static void printReduceKind(OpAsmPrinter &printer, Operation *,
                            ReduceOpKindAttr kind) {
  printer << stringifyReduceOpKind(kind.getValue());
}
} // namespace ein

#define GET_OP_CLASSES
#include "ein/Dialect/EinOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Verifier helpers
//===----------------------------------------------------------------------===//

static LogicalResult fail(Operation *op, const ShapeError &error) {
  return op->emitOpError() << error.message;
}

static EinTensorType tensorType(mlir::Value value) {
  return cast<EinTensorType>(value.getType());
}

/// Checks that `result` has the inferred shape and element type.
static LogicalResult checkResult(Operation *op, InferContext &ctx,
                                 EinTensorType result, const Shape &inferred,
                                 Type elementType, StringRef what = "result") {
  if (result.getElementType() != elementType)
    return op->emitOpError()
           << what << " element type " << result.getElementType()
           << " does not match the expected " << elementType;
  Expected<bool> matches = checkShapeMatches(ctx, result.getShape(), inferred);
  if (!matches)
    return op->emitOpError()
           << what << " shape \"" << result.getShapeText()
           << "\" does not match the inferred \"" << shapeStr(inferred)
           << "\": " << matches.error().message;
  return success();
}

/// The dtype rule of `op` (by its name without `ein.`) applied to each
/// tensor operand.
static LogicalResult checkOperandDTypes(Operation *op, const DTypeRule &rule) {
  for (mlir::Value operand : op->getOperands())
    if (std::optional<DType> dtype =
            toDType(tensorType(operand).getElementType()))
      if (std::optional<std::string> error = operandDTypeError(rule, *dtype))
        return op->emitOpError() << *error;
  return success();
}

static LogicalResult checkOperandDTypes(Operation *op) {
  const DTypeRule *rule = findDTypeRule(op->getName().stripDialect());
  assert(rule && "every ein op has a row in the dtype table");
  return checkOperandDTypes(op, *rule);
}

/// `acc`, when present, must be a supported element type the rule admits.
static LogicalResult checkAcc(Operation *op, const DTypeRule &rule, Type acc) {
  if (!acc)
    return success();
  std::optional<DType> dtype = toDType(acc);
  if (!dtype)
    return op->emitOpError()
           << "acc must be a supported element type, got " << acc;
  if (std::optional<std::string> error = accDTypeError(rule, *dtype))
    return op->emitOpError() << *error;
  return success();
}

/// Parses the op's pattern for `use`.
static Expected<ein::Pattern> opPattern(PatternAttr attr, PatternUse use) {
  return attr.getPattern(use);
}

/// Checks that all `values` share one element type, returned in `common`.
static LogicalResult sameElementTypes(Operation *op, ValueRange values,
                                      Type &common) {
  for (auto [i, value] : llvm::enumerate(values)) {
    Type type = tensorType(value).getElementType();
    if (i == 0)
      common = type;
    else if (type != common)
      return op->emitOpError()
             << "operands must share one element type, but operand #" << i
             << " has " << type << " and operand #0 has " << common;
  }
  return success();
}

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

//===----------------------------------------------------------------------===//
// Building an op from a checked op (OpRules.h)
//===----------------------------------------------------------------------===//

/// The pattern of a checked pattern op, as parsed by the checker.
static PatternAttr checkedPattern(OpBuilder &builder, const CheckedOp &op) {
  return PatternAttr::get(builder.getContext(), op.parsed);
}

/// The `sizes` dictionary of a checked pattern op, or null without sizes.
static DictionaryAttr checkedSizes(OpBuilder &builder, const CheckedOp &op) {
  return op.sizes.empty() ? nullptr
                          : getSizesAttr(builder.getContext(), op.sizes);
}

/// The `acc` type of a checked reduce or einsum, or null without one.
static TypeAttr checkedAcc(OpBuilder &builder, const CheckedOp &op) {
  if (!op.acc)
    return nullptr;
  return TypeAttr::get(toMLIRType(builder.getContext(), *op.acc));
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

//===----------------------------------------------------------------------===//
// einops operations
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Elementwise operations
//===----------------------------------------------------------------------===//

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

LogicalResult ArangeOp::verify() {
  EinTensorType result = tensorType(getResult());
  if (result.getShape().size() != 1)
    return emitOpError() << "result must have rank 1 (its dim is the size), "
                            "not shape \""
                         << result.getShapeText() << "\"";
  if (result.getShape()[0].isPack())
    return emitOpError() << "result dim must be a size, not a pack";
  std::optional<DType> dtype = toDType(result.getElementType());
  if (!dtype || *dtype == DType::Bool)
    return emitOpError() << "counts in a number type, not "
                         << result.getElementType();
  return success();
}

Operation *ein::buildArangeOp(OpBuilder &builder, Location loc,
                              TypeRange results, ValueRange,
                              const CheckedOp &) {
  return builder.create<ArangeOp>(loc, results[0]);
}

LogicalResult ein::fillCostInput(ArangeOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

LogicalResult TakeOp::verify() {
  EinTensorType table = tensorType(getTable()), ids = tensorType(getIds());
  Shape tableShape = table.getShape(), idsShape = ids.getShape();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(tableShape.size()))
    return emitOpError() << "axis " << axis << " is not an axis of the table \""
                         << table.getShapeText() << "\"";
  if (tableShape[axis].isPack())
    return emitOpError() << "axis " << axis << " must be a size, not a pack";
  std::optional<DType> idType = toDType(ids.getElementType());
  if (!idType || (*idType != DType::I64 && *idType != DType::I32))
    return emitOpError() << "ids must be i32 or i64, not "
                         << ids.getElementType();
  // The table's dims with the axis replaced, in place, by the ids' dims.
  Shape inferred(tableShape.begin(), tableShape.begin() + axis);
  inferred.insert(inferred.end(), idsShape.begin(), idsShape.end());
  inferred.insert(inferred.end(), tableShape.begin() + axis + 1,
                  tableShape.end());
  InferContext ctx = getInferContext(*this);
  return checkResult(*this, ctx, tensorType(getResult()), inferred,
                     table.getElementType());
}

Operation *ein::buildTakeOp(OpBuilder &builder, Location loc, TypeRange results,
                            ValueRange operands, const CheckedOp &op) {
  return builder.create<TakeOp>(loc, results[0], operands[0], operands[1],
                                builder.getI64IntegerAttr(op.axis));
}

LogicalResult ein::fillCostInput(TakeOp, CostInput &, CostInputStorage &) {
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

LogicalResult SliceOp::verify() {
  Shape input = tensorType(getInput()).getShape();
  int64_t rank = input.size(), axis = static_cast<int64_t>(getAxis());
  if (axis < -rank || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  int64_t index = getDimIndex();
  if (input[index].isPack())
    return emitOpError() << "cannot slice the variadic *" << input[index].pack;
  Expected<SizeExpr> start = parseSizeExpr(getStart().str());
  if (!start)
    return emitOpError() << "invalid start \"" << getStart()
                         << "\": " << start.error().message;
  Expected<SizeExpr> stop = parseSizeExpr(getStop().str());
  if (!stop)
    return emitOpError() << "invalid stop \"" << getStop()
                         << "\": " << stop.error().message;
  for (auto [bound, name] :
       {std::pair{*start, "start"}, std::pair{*stop, "stop"}})
    if (auto v = bound.constantValue(); v && *v < 0)
      return emitOpError() << name << " is negative";
  if (auto v = (*stop - *start).constantValue(); v && *v < 0)
    return emitOpError() << "start is after stop";
  if (auto v = (input[index].size - *stop).constantValue(); v && *v < 0)
    return emitOpError() << "stop is beyond the dim's size";
  Shape inferred = input;
  inferred[index] = Dim::ofSize(*stop - *start);
  InferContext ctx = getInferContext(*this);
  return checkResult(*this, ctx, tensorType(getResult()), inferred,
                     tensorType(getInput()).getElementType());
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

LogicalResult CastOp::verify() {
  if (failed(checkOperandDTypes(*this)))
    return failure();
  InferContext ctx = getInferContext(*this);
  EinTensorType result = tensorType(getResult());
  return checkResult(*this, ctx, result, tensorType(getInput()).getShape(),
                     result.getElementType());
}

Operation *ein::buildCastOp(OpBuilder &builder, Location loc, TypeRange results,
                            ValueRange operands, const CheckedOp &) {
  return builder.create<CastOp>(loc, results[0], operands[0]);
}

LogicalResult ein::fillCostInput(CastOp, CostInput &, CostInputStorage &) {
  return success(); // its operand and result types are all its cost needs
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

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
