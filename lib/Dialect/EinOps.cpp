//===- EinOps.cpp - ein operations: ODS classes, assembly, shared helpers -===//
//
// The op classes generated from EinOps.td, their custom assembly directives,
// and the helpers the ops' rules share (Ops/OpHelpers.h). Each op's rules sit
// in the file of its op family, lib/Dialect/Ops/<Family>.cpp (the families of
// lib/Sema/Ops/): its verifier, how MLIRGen builds it from a checked op
// (`buildFooOp`) and what the cost model needs from its attributes
// (`fillCostInput`), both declared per registry row in OpRules.h.
//
// The verifiers are the static shape checker: each re-runs the matching
// `ein::infer*` rule on the operand types and the attributes, or builds the
// op through its builder rule (`verifyThroughBuilder`, below), then checks
// the declared result type with `ein::checkShapeMatches`. Element types are
// checked against the one dtype table of the front end (DTypeRules.h), so
// that every op that verifies also lowers.
//
//===----------------------------------------------------------------------===//

#include "Ops/OpHelpers.h"
#include "ein/Sema/Program.h"
#include "ein/Sema/ProgramBuilder.h"
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

namespace ein::oprules {

//===----------------------------------------------------------------------===//
// What the ops' rules share (Ops/OpHelpers.h)
//===----------------------------------------------------------------------===//

LogicalResult fail(Operation *op, const ShapeError &error) {
  return op->emitOpError() << error.message;
}

EinTensorType tensorType(mlir::Value value) {
  return cast<EinTensorType>(value.getType());
}

/// Checks that `result` has the inferred shape and element type.
LogicalResult checkResult(Operation *op, InferContext &ctx,
                          EinTensorType result, const Shape &inferred,
                          Type elementType, StringRef what) {
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
LogicalResult checkOperandDTypes(Operation *op, const DTypeRule &rule) {
  for (mlir::Value operand : op->getOperands())
    if (std::optional<DType> dtype =
            toDType(tensorType(operand).getElementType()))
      if (std::optional<std::string> error = operandDTypeError(rule, *dtype))
        return op->emitOpError() << *error;
  return success();
}

LogicalResult checkOperandDTypes(Operation *op) {
  const DTypeRule *rule = findDTypeRule(op->getName().stripDialect());
  assert(rule && "every ein op has a row in the dtype table");
  return checkOperandDTypes(op, *rule);
}

/// `acc`, when present, must be a supported element type the rule admits.
LogicalResult checkAcc(Operation *op, const DTypeRule &rule, Type acc) {
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
Expected<ein::Pattern> opPattern(PatternAttr attr, PatternUse use) {
  return attr.getPattern(use);
}

/// Checks that all `values` share one element type, returned in `common`.
LogicalResult sameElementTypes(Operation *op, ValueRange values, Type &common) {
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

//===----------------------------------------------------------------------===//
// Building an op from a checked op (OpRules.h)
//===----------------------------------------------------------------------===//

/// The pattern of a checked pattern op, as parsed by the checker.
PatternAttr checkedPattern(OpBuilder &builder, const CheckedOp &op) {
  return PatternAttr::get(builder.getContext(), op.parsed);
}

/// The `sizes` dictionary of a checked pattern op, or null without sizes.
DictionaryAttr checkedSizes(OpBuilder &builder, const CheckedOp &op) {
  return op.sizes.empty() ? nullptr
                          : getSizesAttr(builder.getContext(), op.sizes);
}

/// The `acc` type of a checked reduce or einsum, or null without one.
TypeAttr checkedAcc(OpBuilder &builder, const CheckedOp &op) {
  if (!op.acc)
    return nullptr;
  return TypeAttr::get(toMLIRType(builder.getContext(), *op.acc));
}

LogicalResult verifyThroughBuilder(Operation *op, const CheckedOp &attributes) {
  // A scratch function of one parameter per operand, in the module's dims
  // (ein.dims), as the other verifiers infer: the op is built by the same
  // rules as the checker's and grad()'s, and must have the types built.
  CheckedFunction fn;
  fn.ctx = getInferContext(op);
  ProgramBuilder builder(fn);
  std::vector<unsigned> operands;
  for (mlir::Value operand : op->getOperands()) {
    EinTensorType type = tensorType(operand);
    std::optional<DType> dtype = toDType(type.getElementType());
    if (!dtype)
      return op->emitOpError()
             << "unsupported element type " << type.getElementType();
    operands.push_back(builder.param(TensorType{type.getShape(), *dtype}));
  }
  BuildOr<std::vector<unsigned>> built = builder.build(attributes, operands);
  if (!built)
    return op->emitOpError() << built.error().error.message;
  if ((*built).size() != op->getNumResults())
    return op->emitOpError() << "builds " << (*built).size() << " results, not "
                             << op->getNumResults();
  for (auto [value, result] : llvm::zip(*built, op->getResults())) {
    const TensorType &type = fn.values[value].type;
    if (failed(checkResult(op, fn.ctx, tensorType(result), type.shape,
                           toMLIRType(op->getContext(), type.dtype))))
      return failure();
  }
  return success();
}

LogicalResult verifyThroughBuilder(Operation *op,
                                   FailureOr<CheckedOp> attributes) {
  if (failed(attributes))
    return failure(); // checkedOf said why
  return verifyThroughBuilder(op, *attributes);
}

} // namespace ein::oprules
