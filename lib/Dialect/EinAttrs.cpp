//===- EinAttrs.cpp - #ein.pattern and the reduce kind --------------------===//

#include "ein/Dialect/EinDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ein;

#include "ein/Dialect/EinEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ein/Dialect/EinAttrs.cpp.inc"

void EinDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ein/Dialect/EinAttrs.cpp.inc"
      >();
}

PatternUse PatternAttr::guessUse(StringRef text) {
  size_t arrow = text.find("->");
  if (arrow == StringRef::npos)
    return PatternUse::Pack;
  if (text.take_front(arrow).contains(','))
    return PatternUse::Einsum;
  return PatternUse::Rearrange;
}

Expected<std::string> PatternAttr::canonicalize(StringRef text) {
  PatternUse guess = guessUse(text);
  Expected<ein::Pattern> first = parsePattern(text.str(), guess);
  if (first)
    return first->str();
  // Some uses accept more than others (repeat: new axes and numbers; einsum:
  // diagonals); the attribute accepts what any use accepts.
  for (PatternUse use :
       {PatternUse::Rearrange, PatternUse::Reduce, PatternUse::Repeat,
        PatternUse::Einsum, PatternUse::Pack}) {
    if (use == guess)
      continue;
    if (Expected<ein::Pattern> other = parsePattern(text.str(), use))
      return other->str();
  }
  return first.error();
}

Expected<ein::Pattern> PatternAttr::getPattern(PatternUse use) const {
  return parsePattern(getText().str(), use);
}

Expected<ein::Pattern> PatternAttr::getPattern() const {
  return getPattern(guessUse(getText()));
}

/// Reports `error` from parsing `text`, whose opening quote is at `quoteLoc`.
static void emitPatternError(AsmParser &parser, SMLoc quoteLoc, StringRef text,
                             const ShapeError &error) {
  SMLoc loc = quoteLoc;
  if (error.anchor == ShapeError::Anchor::Pattern &&
      error.offset <= text.size())
    loc = SMLoc::getFromPointer(quoteLoc.getPointer() + 1 + error.offset);
  parser.emitError(loc) << "invalid pattern \"" << text
                        << "\": " << error.message;
}

namespace ein {
/// Parses a pattern string literal (shared with the ops' custom directives).
ParseResult parsePatternLiteral(AsmParser &parser, PatternAttr &result) {
  SMLoc loc = parser.getCurrentLocation();
  std::string text;
  if (parser.parseString(&text))
    return failure();
  Expected<std::string> canonical = PatternAttr::canonicalize(text);
  if (!canonical) {
    emitPatternError(parser, loc, text, canonical.error());
    return failure();
  }
  result = PatternAttr::get(parser.getContext(), *canonical);
  return success();
}
} // namespace ein

/// `#ein.pattern<"b s (h d) -> b h s d">`
Attribute PatternAttr::parse(AsmParser &parser, Type) {
  PatternAttr result;
  if (parser.parseLess() || parsePatternLiteral(parser, result) ||
      parser.parseGreater())
    return {};
  return result;
}

void PatternAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printString(getText());
  printer << ">";
}

LogicalResult PatternAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  StringRef text) {
  Expected<std::string> canonical = canonicalize(text);
  if (!canonical)
    return emitError() << "invalid pattern \"" << text
                       << "\": " << canonical.error().message;
  return success();
}
