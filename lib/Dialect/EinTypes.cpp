//===- EinTypes.cpp - !ein.tensor -----------------------------------------===//

#include "ein/Dialect/EinDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace ein;

/// The element types a tensor takes, as MLIR prints them: one per row of
/// the dtype table (ein/Shape/DTypes.def), so the list never goes stale.
static std::string expectedElementTypes(MLIRContext *context) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const std::vector<DType> &all = allDTypes();
  for (size_t i = 0; i < all.size(); ++i)
    os << (i == 0                ? ""
           : i + 1 == all.size() ? " or "
                                 : ", ")
       << toMLIRType(context, all[i]);
  return text;
}

#define GET_TYPEDEF_CLASSES
#include "ein/Dialect/EinTypes.cpp.inc"

void EinDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "ein/Dialect/EinTypes.cpp.inc"
      >();
}

/// `!ein.tensor<"batch seq heads*d", bf16>`: the shape string is parsed and
/// stored in canonical form, so printing is stable.
Type EinTensorType::parse(AsmParser &parser) {
  std::string text;
  Type elementType;
  if (parser.parseLess())
    return {};
  SMLoc shapeLoc = parser.getCurrentLocation();
  if (parser.parseString(&text) || parser.parseComma())
    return {};
  SMLoc typeLoc = parser.getCurrentLocation();
  if (parser.parseType(elementType) || parser.parseGreater())
    return {};
  Expected<Shape> shape = parseShape(text);
  if (!shape) {
    const ShapeError &error = shape.error();
    SMLoc loc = shapeLoc;
    if (error.anchor == ShapeError::Anchor::Pattern &&
        error.offset <= text.size())
      loc = SMLoc::getFromPointer(shapeLoc.getPointer() + 1 + error.offset);
    parser.emitError(loc) << "invalid shape \"" << text
                          << "\": " << error.message;
    return {};
  }
  if (!toDType(elementType)) {
    parser.emitError(typeLoc)
        << "unsupported element type " << elementType << " (expected "
        << expectedElementTypes(elementType.getContext()) << ")";
    return {};
  }
  return parser.getChecked<EinTensorType>(shapeLoc, parser.getContext(),
                                          shapeStr(*shape), elementType);
}

void EinTensorType::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printString(getShapeText());
  printer << ", " << getElementType() << ">";
}

LogicalResult
EinTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef shapeText, Type elementType) {
  Expected<Shape> shape = parseShape(shapeText.str());
  if (!shape)
    return emitError() << "invalid shape \"" << shapeText
                       << "\": " << shape.error().message;
  if (!toDType(elementType))
    return emitError() << "unsupported element type " << elementType
                       << " (expected "
                       << expectedElementTypes(elementType.getContext()) << ")";
  return success();
}

std::string EinTensorType::canonicalShapeText(StringRef text) {
  Expected<Shape> shape = parseShape(text.str());
  return shape ? shapeStr(*shape) : text.str();
}

Shape EinTensorType::getShape() const {
  Expected<Shape> shape = parseShape(getShapeText().str());
  // Only a type built with get() from text that does not parse (getChecked
  // and the parser refuse it) gets here. Reading it as a scalar would lower
  // the tensor as rank 0 and compute a wrong answer, so stop instead.
  if (!shape)
    llvm::report_fatal_error(llvm::Twine("!ein.tensor shape \"") +
                             getShapeText() +
                             "\" does not parse: " + shape.error().message);
  return *shape;
}

DType EinTensorType::getDType() const {
  return toDType(getElementType()).value_or(DType::F32);
}

int64_t EinTensorType::getRankIfKnown() const {
  Shape shape = getShape();
  for (const Dim &dim : shape)
    if (dim.isPack())
      return -1;
  return static_cast<int64_t>(shape.size());
}

EinTensorType EinTensorType::withShape(const Shape &shape) const {
  return EinTensorType::get(shape, getElementType());
}

EinTensorType EinTensorType::withElementType(Type elementType) const {
  return EinTensorType::get(getContext(), getShapeText(), elementType);
}
