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

Expected<ein::Pattern> PatternAttr::parseAnyUse(StringRef text) {
  PatternUse guess = guessUse(text);
  Expected<ein::Pattern> first = parsePattern(text.str(), guess);
  if (first)
    return first;
  // Some uses accept more than others (repeat: new axes and numbers; einsum:
  // diagonals); the attribute accepts what any use accepts.
  for (PatternUse use :
       {PatternUse::Rearrange, PatternUse::Reduce, PatternUse::Repeat,
        PatternUse::Einsum, PatternUse::Pack}) {
    if (use == guess)
      continue;
    if (Expected<ein::Pattern> other = parsePattern(text.str(), use))
      return other;
  }
  return first.error();
}

/// One side as an array of elements: a StringAttr per bare axis, an
/// ArrayAttr of StringAttrs per parenthesised group.
static ArrayAttr sideAttr(MLIRContext *context, const PatternSide &side) {
  Builder b(context);
  SmallVector<Attribute> elements;
  for (const PatternGroup &group : side.groups) {
    if (!group.parenthesized) {
      // A bare `1` is an empty group written as its digit.
      elements.push_back(
          b.getStringAttr(group.axes.empty() ? "1" : group.axes[0].name));
      continue;
    }
    SmallVector<Attribute> axes;
    for (const PatternAxis &axis : group.axes)
      axes.push_back(b.getStringAttr(axis.name));
    elements.push_back(b.getArrayAttr(axes));
  }
  return b.getArrayAttr(elements);
}

static std::string sideText(ArrayAttr side) {
  std::string out;
  for (Attribute element : side) {
    if (!out.empty())
      out += " ";
    if (auto axis = llvm::dyn_cast<StringAttr>(element)) {
      out += axis.getValue().str();
      continue;
    }
    out += "(";
    bool first = true;
    for (Attribute axis : llvm::cast<ArrayAttr>(element)) {
      out += (first ? "" : " ") + llvm::cast<StringAttr>(axis).getValue().str();
      first = false;
    }
    out += ")";
  }
  return out;
}

PatternAttr PatternAttr::get(MLIRContext *context, const ein::Pattern &pattern) {
  SmallVector<Attribute> inputs;
  for (const PatternSide &side : pattern.inputs)
    inputs.push_back(sideAttr(context, side));
  return Base::get(context, ArrayAttr::get(context, inputs),
                   sideAttr(context, pattern.output), pattern.hasArrow);
}

PatternAttr PatternAttr::get(MLIRContext *context, StringRef text) {
  Expected<ein::Pattern> pattern = parseAnyUse(text);
  if (!pattern)
    return {};
  return get(context, *pattern);
}

std::string PatternAttr::getText() const {
  std::string out;
  bool first = true;
  for (Attribute side : getInputs()) {
    out += (first ? "" : ", ") + sideText(llvm::cast<ArrayAttr>(side));
    first = false;
  }
  if (getHasArrow())
    out += " -> " + sideText(getOutput());
  return out;
}

Expected<ein::Pattern> PatternAttr::getPattern(PatternUse use) const {
  return parsePattern(getText(), use);
}

Expected<ein::Pattern> PatternAttr::getPattern() const {
  std::string text = getText();
  return getPattern(guessUse(text));
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
  Expected<ein::Pattern> pattern = PatternAttr::parseAnyUse(text);
  if (!pattern) {
    emitPatternError(parser, loc, text, pattern.error());
    return failure();
  }
  result = PatternAttr::get(parser.getContext(), *pattern);
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
