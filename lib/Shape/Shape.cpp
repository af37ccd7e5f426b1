// Element types, dims, and the jaxtyping shape-string parser.
#include "ein/Shape/Shape.h"
#include "ein/Syntax/Unicode.h"

#include <cctype>

namespace ein {

namespace {
// The table is indexed by the enum's value: DTypes.def lists its rows in
// enum order, which the static_asserts below hold it to.
constexpr DTypeInfo kDTypes[] = {
#define EIN_DTYPE(Enum, Name, Bytes, Kind, CType, CUDAType, NpyDescr, MLIR,    \
                  Peak, Mantissa, MaxExp, HasMaxMantissa)                      \
  DTypeInfo{DType::Enum, Name,     Bytes,         DTypeKind::Kind,             \
            CType,       CUDAType, NpyDescr,      PeakSlot::Peak,              \
            Mantissa,    MaxExp,   HasMaxMantissa},
#include "ein/Shape/DTypes.def"
};
#define EIN_DTYPE(Enum, ...)                                                   \
  static_assert(kDTypes[static_cast<unsigned>(DType::Enum)].type ==            \
                DType::Enum);
#include "ein/Shape/DTypes.def"
} // namespace

const std::vector<DType> &allDTypes() {
  static const std::vector<DType> all = {
#define EIN_DTYPE(Enum, ...) DType::Enum,
#include "ein/Shape/DTypes.def"
  };
  return all;
}

const DTypeInfo &dtypeInfo(DType type) {
  return kDTypes[static_cast<unsigned>(type)];
}

std::optional<DType> parseDType(const std::string &name) {
  for (auto &i : kDTypes)
    if (name == i.name)
      return i.type;
  return std::nullopt;
}
const char *dtypeName(DType type) { return dtypeInfo(type).name; }
unsigned dtypeBytes(DType type) { return dtypeInfo(type).bytes; }
bool isFloat(DType type) { return dtypeInfo(type).kind == DTypeKind::Float; }

std::string Dim::str() const {
  if (isPack())
    return "*" + pack;
  std::string text;
  for (char c : size.str())
    if (c != ' ')
      text += c;
  // A bare `_` would read back as a fresh anonymous dim, not the name `_`.
  if (text == "_")
    text = "(_)";
  if (!meshAxis.empty())
    text += "@" + meshAxis;
  return broadcastable ? "#" + text : text;
}

std::string shapeStr(const Shape &shape) {
  std::string out;
  for (auto &d : shape) {
    if (!out.empty())
      out += " ";
    out += d.str();
  }
  return out;
}

SizeExpr numElements(const Shape &shape) {
  SizeExpr n = SizeExpr::constant(1);
  for (auto &d : shape)
    n = n * (d.isPack() ? SizeExpr::symbol(d.pack) : d.size);
  return n;
}

std::string TensorType::str() const {
  return std::string(dtypeName(dtype)) + "[\"" + shapeStr(shape) + "\"]";
}

namespace {
/// Recursive-descent parser for size expressions inside a shape string.
class SizeParser {
public:
  SizeParser(const std::string &text, unsigned base) : text(text), base(base) {}

  Expected<SizeExpr> parseAll() {
    auto e = parseSum();
    if (!e)
      return e;
    skipSpace();
    if (pos != text.size())
      return unexpected();
    return e;
  }

private:
  const std::string &text;
  unsigned base;
  size_t pos = 0;
  unsigned depth = 0; // parenthesis nesting, bounded against stack exhaustion

  ShapeError err(std::string message) {
    return ShapeError::atPattern(std::move(message), base + pos, 1);
  }
  /// The character at `pos` (a whole code point, never half of one).
  ShapeError unexpected() {
    if (text[pos] == '@')
      return ShapeError::atPattern(
          "a layout '@axis' goes after a whole dim (batch@dp, (heads d)@tp) "
          "or after a composition's first member ((heads@tp d))",
          base + pos, 1);
    auto d = unicode::decodeUtf8(text, pos);
    std::string message =
        d.valid() ? "unexpected " + unicode::describeCodePoint(d.codePoint) +
                        " in size"
                  : "invalid UTF-8 in size: " +
                        unicode::describeInvalidUtf8(text, pos);
    return ShapeError::atPattern(message, base + pos, d.size);
  }
  void skipSpace() {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  /// A sum may start with '-' (SizeExpr::str prints `b-a` as `-a + b`); the
  /// sign applies to the whole first product, so `-a/2` is -(a/2).
  Expected<SizeExpr> parseSum() {
    skipSpace();
    bool negate = pos < text.size() && text[pos] == '-';
    if (negate)
      ++pos;
    auto lhs = parseProduct();
    if (!lhs)
      return lhs;
    SizeExpr acc = negate ? SizeExpr::constant(-1) * *lhs : *lhs;
    for (;;) {
      skipSpace();
      if (pos >= text.size() || (text[pos] != '+' && text[pos] != '-'))
        return acc;
      char op = text[pos++];
      auto rhs = parseProduct();
      if (!rhs)
        return rhs;
      if (op == '+')
        acc += *rhs;
      else
        acc -= *rhs;
    }
  }
  Expected<SizeExpr> parseProduct() {
    auto lhs = parseAtom();
    if (!lhs)
      return lhs;
    SizeExpr acc = *lhs;
    for (;;) {
      skipSpace();
      if (pos >= text.size() || (text[pos] != '*' && text[pos] != '/'))
        return acc;
      char op = text[pos++];
      unsigned at = pos;
      auto rhs = parseAtom();
      if (!rhs)
        return rhs;
      if (op == '*') {
        acc = acc * *rhs;
      } else {
        if (rhs->constantValue() == Int(0))
          return ShapeError::atPattern("division by zero in size", base + at,
                                       1);
        acc = SizeExpr::quotient(acc, *rhs);
      }
    }
  }
  Expected<SizeExpr> parseAtom() {
    skipSpace();
    if (pos >= text.size())
      return err("expected a size");
    char c = text[pos];
    if (c == '(') {
      if (++depth > 200)
        return err("size expression nested too deeply");
      ++pos;
      auto inner = parseSum();
      --depth;
      if (!inner)
        return inner;
      skipSpace();
      if (pos < text.size() && text[pos] == '@')
        return unexpected();
      if (pos >= text.size() || text[pos] != ')')
        return err("expected ')' in size");
      ++pos;
      return inner;
    }
    size_t start = pos;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos])))
        ++pos;
      auto v = parseInt(text.substr(start, pos - start));
      if (!v)
        return ShapeError::atPattern(
            "size '" + text.substr(start, pos - start) + "' is too large",
            base + start, pos - start);
      return SizeExpr::constant(*v);
    }
    // Dim names are Unicode identifiers, as in the lexer and patterns.
    if (size_t end = unicode::scanIdentifier(text, pos); end > pos) {
      pos = end;
      return SizeExpr::symbol(text.substr(start, pos - start));
    }
    return unexpected();
  }
};

bool isIdentifier(const std::string &s) { return unicode::isIdentifier(s); }
} // namespace

Expected<SizeExpr> parseSizeExpr(const std::string &text) {
  return SizeParser(text, 0).parseAll();
}

bool isAnonymousName(const std::string &name) {
  const std::string prefix = "_anon";
  if (name.rfind(prefix, 0) != 0)
    return false;
  // `_anon` DIGITS, optionally `_` DIGITS (a dim of an anonymous `...`).
  size_t pos = prefix.size();
  for (int part = 0; part < 2; ++part) {
    size_t start = pos;
    while (pos < name.size() &&
           std::isdigit(static_cast<unsigned char>(name[pos])))
      ++pos;
    if (pos == start)
      return false;
    if (pos == name.size())
      return true;
    if (part == 1 || name[pos] != '_')
      return false;
    ++pos;
  }
  return false;
}

bool mentionsAnonymous(const SizeExpr &size) {
  for (auto &name : size.symbols())
    if (isAnonymousName(name))
      return true;
  return false;
}

bool isAnonymousDim(const Dim &d) {
  return d.isPack() ? isAnonymousName(d.pack) : mentionsAnonymous(d.size);
}

SizeExpr sizeOrPack(const Dim &d) {
  return d.isPack() ? SizeExpr::symbol(d.pack) : d.size;
}

std::vector<std::pair<unsigned, unsigned>>
shapeDimSpans(const std::string &text) {
  // parseShape's tokens: each runs to the next top-level space or tab;
  // parentheses nest (a stray ')' is left for parseShape to report).
  std::vector<std::pair<unsigned, unsigned>> spans;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ' || text[pos] == '\t') {
      ++pos;
      continue;
    }
    size_t start = pos;
    int depth = 0;
    while (pos < text.size() &&
           (depth > 0 || (text[pos] != ' ' && text[pos] != '\t'))) {
      if (text[pos] == '(')
        ++depth;
      else if (text[pos] == ')' && depth > 0)
        --depth;
      ++pos;
    }
    spans.push_back(
        {static_cast<unsigned>(start), static_cast<unsigned>(pos - start)});
  }
  return spans;
}

namespace {
/// Where a dim written in `text[start, end)` ends and its layout begins:
/// `batch@dp` has its dim end before the `@` at depth 0 and the axis `dp`
/// after it; no `@` leaves `axis` empty and `dimEnd` at `end`.
struct LayoutSplit {
  size_t dimEnd = 0;
  std::string axis;
  unsigned axisOffset = 0;
};
Expected<LayoutSplit> splitLayout(const std::string &text, size_t start,
                                  size_t end) {
  LayoutSplit out;
  out.dimEnd = end;
  int depth = 0;
  size_t sign = std::string::npos;
  for (size_t pos = start; pos < end; ++pos) {
    if (text[pos] == '(')
      ++depth;
    else if (text[pos] == ')')
      --depth;
    else if (text[pos] == '@' && depth == 0) {
      if (sign != std::string::npos)
        return ShapeError::atPattern(
            "a dim is sharded on one mesh axis at most", pos, 1);
      sign = pos;
    }
  }
  if (sign == std::string::npos)
    return out;
  if (sign == start)
    return ShapeError::atPattern("expected a dim before '@' (a layout is "
                                 "written name@axis, without spaces)",
                                 sign, 1);
  std::string axis = text.substr(sign + 1, end - sign - 1);
  if (!unicode::isIdentifier(axis))
    return ShapeError::atPattern("expected a mesh axis name after '@'", sign,
                                 static_cast<unsigned>(end - sign));
  out.dimEnd = sign;
  out.axis = axis;
  out.axisOffset = static_cast<unsigned>(sign + 1);
  return out;
}
} // namespace

Expected<Shape> parseShape(const std::string &text, unsigned *anonCounter) {
  unsigned localCounter = 0;
  unsigned &counter = anonCounter ? *anonCounter : localCounter;
  Shape shape;
  bool sawVariadic = false;
  for (auto [start, spanLength] : shapeDimSpans(text)) {
    size_t length = spanLength, end = start + length;
    int depth = 0;
    bool spaceInParens = false;
    for (size_t pos = start; pos < end; ++pos) {
      if (text[pos] == '(')
        ++depth;
      else if (text[pos] == ')') {
        if (depth == 0)
          return ShapeError::atPattern("unbalanced ')' in shape", pos, 1);
        --depth;
      } else if (text[pos] == ' ' && depth == 1)
        spaceInParens = true;
    }
    if (depth != 0)
      return ShapeError::atPattern("unbalanced '(' in shape", start, length);
    // A layout: `@axis` after the dim, outside its parentheses.
    auto layout = splitLayout(text, start, end);
    if (!layout)
      return layout.error();
    std::string axis = layout->axis;
    unsigned axisAt = layout->axisOffset;
    if (!axis.empty()) {
      length = layout->dimEnd - start;
      end = layout->dimEnd;
    }
    std::string token = text.substr(start, length);
    unsigned at = static_cast<unsigned>(start);
    if (!axis.empty()) {
      auto refuse = [&](const char *what) {
        return ShapeError::atPattern(std::string(what) + " cannot be sharded",
                                     at, length);
      };
      if (token == "..." || token[0] == '*')
        return refuse("a variadic dim");
      if (token == "_")
        return refuse("an anonymous dim '_' (name it)");
      if (token[0] == '#')
        return refuse("a broadcastable dim '#'");
    }
    auto variadic = [&](std::string name) -> Expected<Shape> {
      if (sawVariadic)
        return ShapeError::atPattern("a shape can have only one variadic dim",
                                     at, token.size());
      sawVariadic = true;
      shape.push_back(Dim::ofPack(std::move(name)));
      return shape;
    };
    if (token == "...") {
      if (auto r = variadic("_anon" + std::to_string(counter++)); !r)
        return r;
      continue;
    }
    if (token[0] == '*') {
      std::string name = token.substr(1);
      if (!isIdentifier(name))
        return ShapeError::atPattern("expected a name after '*'", at,
                                     token.size());
      if (auto r = variadic(name); !r)
        return r;
      continue;
    }
    if (token == "_") {
      shape.push_back(
          Dim::ofSize(SizeExpr::symbol("_anon" + std::to_string(counter++))));
      continue;
    }
    bool broadcastable = token[0] == '#';
    if (broadcastable) {
      token = token.substr(1);
      ++at;
      if (token.empty())
        return ShapeError::atPattern("expected a dim after '#'", at - 1, 1);
    }
    Expected<SizeExpr> size = SizeExpr();
    std::optional<SizeExpr> major;
    if (spaceInParens && token.front() == '(' && token.back() == ')') {
      // A composition: the product of its space-separated members.
      std::string inner = token.substr(1, token.size() - 2);
      SizeExpr product = SizeExpr::constant(1);
      size_t p = 0;
      bool first = true;
      while (p < inner.size()) {
        if (inner[p] == ' ') {
          ++p;
          continue;
        }
        size_t s = p;
        while (p < inner.size() && inner[p] != ' ')
          ++p;
        // `(heads@tp d)`: sharded through the major factor, the only
        // member whose blocks stay contiguous on each rank.
        auto memberLayout = splitLayout(inner, s, p);
        if (!memberLayout)
          return ShapeError::atPattern(memberLayout.error().message,
                                       at + 1 + memberLayout.error().offset,
                                       memberLayout.error().length);
        size_t memberEnd = p;
        if (!memberLayout->axis.empty()) {
          unsigned sign = at + 1 + static_cast<unsigned>(memberLayout->dimEnd);
          if (!first)
            return ShapeError::atPattern(
                "a composition is sharded through its first (major) member "
                "only: a rank's block of a minor member is not contiguous; "
                "write (" +
                    inner.substr(s, memberLayout->dimEnd - s) + "@" +
                    memberLayout->axis +
                    " ...) with it first, or shard the "
                    "first member",
                sign, static_cast<unsigned>(p - memberLayout->dimEnd));
          if (!axis.empty())
            return ShapeError::atPattern(
                "a dim is sharded on one mesh axis at most: the composition "
                "is sharded on '" +
                    axis + "' and its first member on '" + memberLayout->axis +
                    "'",
                sign, static_cast<unsigned>(p - memberLayout->dimEnd));
          axis = memberLayout->axis;
          axisAt = at + 1 + memberLayout->axisOffset;
          memberEnd = memberLayout->dimEnd;
        }
        auto member =
            SizeParser(inner.substr(s, memberEnd - s), at + 1 + s).parseAll();
        if (!member)
          return member.error();
        if (first)
          major = *member;
        first = false;
        product = product * *member;
      }
      size = product;
    } else {
      size = SizeParser(token, at).parseAll();
    }
    if (!size)
      return size.error();
    if (size->tooComplex())
      return ShapeError::atPattern(SizeExpr::tooComplexMessage(), at,
                                   token.size());
    if (size->overflowed())
      return ShapeError::atPattern("size overflows 128 bits", at, token.size());
    Dim d = Dim::ofSize(*size);
    d.broadcastable = broadcastable;
    if (!axis.empty()) {
      d.meshAxis = axis;
      d.meshMajor = major ? *major : *size;
      d.meshAxisOffset = axisAt;
    }
    shape.push_back(std::move(d));
  }
  return shape;
}

} // namespace ein
