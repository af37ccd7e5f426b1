// Parser for einops pattern strings, following einops' own grammar rules.
#include "ein/Syntax/Pattern.h"
#include "ein/Support/BigInt.h"
#include "ein/Syntax/Unicode.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

namespace ein {

bool PatternSide::hasEllipsis() const {
  for (auto &g : groups)
    for (auto &a : g.axes)
      if (a.kind == PatternAxis::Kind::Ellipsis)
        return true;
  return false;
}

bool PatternSide::hasEllipsisInParens() const {
  for (auto &g : groups)
    if (g.parenthesized)
      for (auto &a : g.axes)
        if (a.kind == PatternAxis::Kind::Ellipsis)
          return true;
  return false;
}

size_t PatternSide::starIndex() const {
  for (size_t i = 0; i < groups.size(); ++i)
    if (!groups[i].axes.empty() &&
        groups[i].axes[0].kind == PatternAxis::Kind::Star)
      return i;
  return groups.size();
}

std::vector<const PatternAxis *> PatternSide::namedAxes() const {
  std::vector<const PatternAxis *> out;
  for (auto &g : groups)
    for (auto &a : g.axes)
      if (a.kind == PatternAxis::Kind::Name)
        out.push_back(&a);
  return out;
}

std::string PatternSide::str() const {
  std::string out;
  for (auto &g : groups) {
    if (!out.empty())
      out += " ";
    if (!g.parenthesized) {
      out += g.axes.empty() ? "1" : g.axes[0].name;
      continue;
    }
    out += "(";
    for (size_t i = 0; i < g.axes.size(); ++i)
      out += (i ? " " : "") + g.axes[i].name;
    out += ")";
  }
  return out;
}

std::string Pattern::str() const {
  std::string out;
  for (size_t i = 0; i < inputs.size(); ++i)
    out += (i ? ", " : "") + inputs[i].str();
  if (hasArrow)
    out += " -> " + output.str();
  return out;
}

bool isValidAxisName(const std::string &name, bool allowUnderscore,
                     std::string *reason) {
  auto fail = [&](const char *why) {
    if (reason)
      *reason = why;
    return false;
  };
  if (name.empty())
    return fail("empty axis name");
  if (!unicode::isIdentifier(name))
    return fail("not a valid identifier");
  if (name.front() == '_' || name.back() == '_') {
    if (name == "_" && allowUnderscore)
      return true;
    return fail("an axis name must not start or end with '_'");
  }
  return true;
}

namespace {

struct SideOptions {
  bool allowDuplicates = false;
  bool allowUnderscore = false;
  bool pack = false; // `*` allowed, no parentheses or ellipsis
};

/// Bytes of the identifier character (XID_Continue, which includes digits)
/// at text[i]; 0 when there is none.
size_t axisCharAt(const std::string &text, size_t i, size_t end) {
  if (i >= end)
    return 0;
  auto d = unicode::decodeUtf8(text, i);
  return d.valid() && unicode::isIdentifierContinue(d.codePoint) ? d.size : 0;
}

/// True when the character ending at text[i] (exclusive) is an identifier
/// character.
bool axisCharBefore(const std::string &text, size_t i, size_t begin) {
  if (i <= begin)
    return false;
  size_t k = i - 1;
  while (k > begin && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80)
    --k;
  return k + axisCharAt(text, k, i) == i && axisCharAt(text, k, i) > 0;
}

/// Parses text[begin, end) as one side; offsets are absolute in `text`.
Expected<PatternSide> parseSide(const std::string &text, size_t begin,
                                size_t end, const SideOptions &opts) {
  PatternSide side;
  side.offset = static_cast<unsigned>(begin);
  side.length = static_cast<unsigned>(end - begin);
  std::set<std::string> seen;
  PatternGroup *open = nullptr;
  PatternGroup current;
  bool sawEllipsis = false, sawStar = false;

  auto addAxis = [&](PatternAxis axis) -> std::optional<ShapeError> {
    if (axis.kind == PatternAxis::Kind::Name) {
      std::string why;
      if (!isValidAxisName(axis.name, opts.allowUnderscore, &why))
        return ShapeError::atPattern("invalid axis name '" + axis.name +
                                         "': " + why,
                                     axis.offset, axis.length);
      if (!seen.insert(axis.name).second && !opts.allowDuplicates &&
          axis.name != "_")
        return ShapeError::atPattern("duplicate axis '" + axis.name +
                                         "' on one side of the pattern",
                                     axis.offset, axis.length);
    }
    if (axis.kind == PatternAxis::Kind::Number && axis.value == 1) {
      // An anonymous unit axis: an empty group outside parentheses, nothing
      // inside them.
      if (!open) {
        PatternGroup g;
        g.offset = axis.offset;
        g.length = axis.length;
        side.groups.push_back(g);
      }
      return std::nullopt;
    }
    if (open) {
      open->axes.push_back(axis);
    } else {
      PatternGroup g;
      g.offset = axis.offset;
      g.length = axis.length;
      g.axes.push_back(axis);
      side.groups.push_back(g);
    }
    return std::nullopt;
  };

  size_t i = begin;
  while (i < end) {
    char c = text[i];
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (c == '(') {
      if (opts.pack)
        return ShapeError::atPattern(
            "parentheses are not allowed in a pack pattern", i, 1);
      if (open)
        return ShapeError::atPattern(
            "nested parentheses: axis composition is one level only", i, 1);
      current = PatternGroup();
      current.parenthesized = true;
      current.offset = static_cast<unsigned>(i);
      open = &current;
      ++i;
      continue;
    }
    if (c == ')') {
      if (!open)
        return ShapeError::atPattern("unbalanced ')': no matching '('", i, 1);
      current.length = static_cast<unsigned>(i + 1 - current.offset);
      side.groups.push_back(current);
      open = nullptr;
      ++i;
      continue;
    }
    if (c == '.') {
      size_t j = i;
      while (j < end && text[j] == '.')
        ++j;
      if (j - i != 3)
        return ShapeError::atPattern(
            "dots are only allowed as an ellipsis '...'", i, j - i);
      if (opts.pack)
        return ShapeError::atPattern(
            "'...' is not allowed in a pack pattern; use '*'", i, 3);
      // einops reads "...pre" as one (invalid) identifier.
      if (axisCharBefore(text, i, begin) || axisCharAt(text, j, end))
        return ShapeError::atPattern(
            "'...' must be separated from axis names by spaces", i, 3);
      if (sawEllipsis)
        return ShapeError::atPattern("two ellipses on one side of the pattern",
                                     i, 3);
      sawEllipsis = true;
      PatternAxis axis;
      axis.kind = PatternAxis::Kind::Ellipsis;
      axis.name = "...";
      axis.offset = static_cast<unsigned>(i);
      axis.length = 3;
      if (auto e = addAxis(axis))
        return *e;
      i = j;
      continue;
    }
    if (c == '*' && opts.pack) {
      if (sawStar)
        return ShapeError::atPattern("two '*' axes in a pack pattern", i, 1);
      sawStar = true;
      PatternAxis axis;
      axis.kind = PatternAxis::Kind::Star;
      axis.name = "*";
      axis.offset = static_cast<unsigned>(i);
      axis.length = 1;
      if (auto e = addAxis(axis))
        return *e;
      ++i;
      continue;
    }
    if (axisCharAt(text, i, end)) {
      size_t j = i;
      while (size_t n = axisCharAt(text, j, end))
        j += n;
      PatternAxis axis;
      axis.name = text.substr(i, j - i);
      axis.offset = static_cast<unsigned>(i);
      axis.length = static_cast<unsigned>(j - i);
      bool decimal = true;
      for (char d : axis.name)
        decimal &= std::isdigit(static_cast<unsigned char>(d)) != 0;
      if (decimal) {
        if (opts.pack)
          return ShapeError::atPattern(
              "numbers are not allowed in a pack pattern", i, j - i);
        auto v = parseInt(axis.name);
        if (!v || *v > Int(1) << 62)
          return ShapeError::atPattern("anonymous axis size is too large", i,
                                       j - i);
        axis.kind = PatternAxis::Kind::Number;
        axis.value = static_cast<int64_t>(*v);
        if (axis.value == 0)
          return ShapeError::atPattern("an anonymous axis must be positive", i,
                                       j - i);
      }
      if (auto e = addAxis(axis))
        return *e;
      i = j;
      continue;
    }
    // `b@dp` is a layout (docs/distributed.md): it belongs to a parameter
    // or result type; an op's pattern names axes only.
    if (text[i] == '@')
      return ShapeError::atPattern(
          "unexpected '@' in pattern: layouts are written in types "
          "(f32[\"batch@dp d\"]), not in an op's pattern",
          i, 1);
    auto d = unicode::decodeUtf8(text, i);
    if (!d.valid())
      return ShapeError::atPattern("invalid UTF-8 in pattern: " +
                                       unicode::describeInvalidUtf8(text, i),
                                   i, d.size);
    return ShapeError::atPattern(
        fmt::format("unexpected character {} in pattern",
                    unicode::describeCodePoint(d.codePoint)),
        i, d.size);
  }
  if (open)
    return ShapeError::atPattern("unbalanced '(': missing ')'", current.offset,
                                 1);
  if (opts.pack && !sawStar)
    return ShapeError::atPattern("a pack pattern needs one '*' axis", begin,
                                 end - begin);
  return side;
}

} // namespace

Expected<Pattern> parsePattern(const std::string &text, PatternUse use) {
  Pattern pattern;
  pattern.text = text;
  size_t arrow = text.find("->");
  if (use == PatternUse::Pack) {
    if (arrow != std::string::npos)
      return ShapeError::atPattern("a pack pattern has no '->'", arrow, 2);
    SideOptions opts;
    opts.pack = true;
    auto side = parseSide(text, 0, text.size(), opts);
    if (!side)
      return side.error();
    pattern.inputs.push_back(*side);
    return pattern;
  }
  if (arrow == std::string::npos)
    return ShapeError::atPattern("pattern needs '->'", 0, text.size());
  if (text.find("->", arrow + 2) != std::string::npos)
    return ShapeError::atPattern("pattern has more than one '->'",
                                 text.find("->", arrow + 2), 2);
  pattern.hasArrow = true;

  SideOptions inOpts, outOpts;
  if (use == PatternUse::Einsum) {
    inOpts.allowDuplicates = true;
    inOpts.allowUnderscore = outOpts.allowUnderscore = true;
  }
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    bool last = comma == std::string::npos || comma > arrow;
    size_t stop = last ? arrow : comma;
    if (!last && use != PatternUse::Einsum)
      return ShapeError::atPattern(
          "unexpected ',' in pattern: only einsum takes several operands",
          comma, 1);
    auto side = parseSide(text, start, stop, inOpts);
    if (!side)
      return side.error();
    pattern.inputs.push_back(*side);
    if (last)
      break;
    start = comma + 1;
  }
  size_t comma = text.find(',', arrow);
  if (comma != std::string::npos)
    return ShapeError::atPattern("unexpected ',' after '->': one output only",
                                 comma, 1);
  auto out = parseSide(text, arrow + 2, text.size(), outOpts);
  if (!out)
    return out.error();
  pattern.output = *out;

  // Ellipsis rules shared by every operation.
  bool anyInputEllipsis = false;
  for (auto &in : pattern.inputs) {
    anyInputEllipsis |= in.hasEllipsis();
    if (in.hasEllipsisInParens()) {
      for (auto &g : in.groups)
        for (auto &a : g.axes)
          if (a.kind == PatternAxis::Kind::Ellipsis)
            return ShapeError::atPattern(
                "'...' inside parentheses is only allowed on the right side",
                a.offset, 3);
    }
  }
  if (pattern.output.hasEllipsis() && !anyInputEllipsis) {
    for (auto &g : pattern.output.groups)
      for (auto &a : g.axes)
        if (a.kind == PatternAxis::Kind::Ellipsis)
          return ShapeError::atPattern(
              "'...' on the right side but not on the left", a.offset, 3);
  }
  return pattern;
}

} // namespace ein
