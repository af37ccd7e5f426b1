// The compile-time pattern parser of ein/API/Static.h (C++20, header-only):
// fixed_string, and the constexpr parse, axis-rule and shape-string checks
// that mirror lib/Syntax/Pattern.cpp and lib/Shape/Infer.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ein::api {

/// A string literal usable as a template argument (C++20): the pattern of
/// `einsum<"i j, j k -> i k">` and the shape string of `Shaped`.
template <size_t N> struct fixed_string {
  /// The characters, then a NUL.
  char value[N] = {};
  /// An all-NUL string (filled in by constexpr code).
  constexpr fixed_string() = default;
  /// A copy of the literal `s`.
  constexpr fixed_string(const char (&s)[N]) {
    for (size_t i = 0; i < N; ++i)
      value[i] = s[i];
  }
  /// The length, without the NUL.
  static constexpr size_t size() { return N - 1; }
  /// The characters as a string_view.
  constexpr std::string_view view() const { return {value, N - 1}; }
  /// The characters, NUL-terminated.
  constexpr const char *c_str() const { return value; }
};
/// fixed_string{"a b"} is a fixed_string<4>.
template <size_t N> fixed_string(const char (&)[N]) -> fixed_string<N>;

namespace detail {
/// An identifier byte: ASCII letters, digits, `_`, and any non-ASCII byte
/// (the run-time parser checks Unicode identifiers).
constexpr bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
/// An ASCII decimal digit.
constexpr bool isDigit(char c) { return c >= '0' && c <= '9'; }
/// One axis name: an identifier that is not a number and neither starts nor
/// ends with `_` (a lone `_` is einsum's).
constexpr bool isAxisName(std::string_view n) {
  if (n.empty() || isDigit(n.front()))
    return false;
  for (char c : n)
    if (!isIdentChar(c))
      return false;
  return n == "_" || (n.front() != '_' && n.back() != '_');
}
} // namespace detail

namespace detail {

/// What a pattern is for (as ein::PatternUse), or the shape string of a
/// Shaped tensor (one side, no arrow).
enum class Use : uint8_t { Rearrange, Reduce, Repeat, Einsum, Pack, Shape };

/// Everything the compile-time parser can find wrong: one static_assert each.
enum class Err : uint8_t {
  None,
  UnbalancedOpen,
  UnbalancedClose,
  Nested,
  Dots,
  EllipsisSpacing,
  TwoEllipses,
  InvalidName,
  UnderscoreName,
  Duplicate,
  ZeroAxis,
  LargeAxis,
  UnexpectedChar,
  NeedsArrow,
  TwoArrows,
  CommaNotEinsum,
  CommaAfterArrow,
  EllipsisInParensLeft,
  EllipsisOnlyRight,
  PackArrow,
  PackParens,
  PackEllipsis,
  PackNumber,
  PackNoStar,
  PackTwoStars,
  ShapeArrow,
  RearrangeNumber,
  RearrangeLeftOnly,
  RearrangeRightOnly,
  RearrangeEllipsisLeftOnly,
  ReduceNumberRight,
  ReduceRightOnly,
  RepeatNumberLeft,
  RepeatLeftOnly,
  RepeatEllipsisLeftOnly,
  EinsumAnonymous,
  EinsumOutputOnly,
};

/// The kinds of elementary axes (as ein::PatternAxis::Kind).
enum class AxisKind : uint8_t { Name, Ellipsis, Number, Star };

/// One elementary axis: its bytes in the text, and a number's value.
struct Axis {
  AxisKind kind = AxisKind::Name;
  size_t begin = 0, length = 0;
  uint64_t value = 0;
};

/// A top-level element of a side: axes [first, first + count); a bare `1` or
/// `()` has none.
struct Group {
  size_t first = 0, count = 0;
  bool paren = false;
};

/// One side: groups [first, first + count).
struct Side {
  size_t first = 0, count = 0;
};

/// A parsed pattern (or shape string) of at most Cap - 2 bytes, with the
/// first error found; self-contained (it holds a copy of the text).
template <size_t Cap> struct Parsed {
  char text[Cap] = {};
  size_t length = 0;
  Err error = Err::None;
  /// The bytes of the culprit of `error` (an axis, a parenthesis, ...).
  size_t errorBegin = 0, errorLength = 0;
  bool hasArrow = false;
  Axis axes[Cap] = {};
  Group groups[Cap] = {};
  Side sides[Cap] = {};
  size_t axisCount = 0, groupCount = 0, sideCount = 0;

  /// The text of axis `a`.
  constexpr std::string_view name(const Axis &a) const {
    return {text + a.begin, a.length};
  }
  /// The number of input sides (operands).
  constexpr size_t inputCount() const {
    return hasArrow ? sideCount - 1 : sideCount;
  }
  /// The output side (the last one).
  constexpr const Side &output() const { return sides[sideCount - 1]; }
  /// Whether `side` has a named axis `n`.
  constexpr bool has(const Side &side, std::string_view n) const {
    for (size_t g = side.first; g < side.first + side.count; ++g)
      for (size_t a = groups[g].first; a < groups[g].first + groups[g].count;
           ++a)
        if (axes[a].kind == AxisKind::Name && name(axes[a]) == n)
          return true;
    return false;
  }
  /// The index of the first axis of `side` that `pred` holds for; npos when
  /// none does.
  template <class F> constexpr size_t findAxis(const Side &side, F pred) const {
    for (size_t g = side.first; g < side.first + side.count; ++g)
      for (size_t a = groups[g].first; a < groups[g].first + groups[g].count;
           ++a)
        if (pred(groups[g], axes[a]))
          return a;
    return std::string_view::npos;
  }
  /// The `...` of `side` (inside parentheses only when `inParens`), or npos.
  constexpr size_t findEllipsis(const Side &side, bool inParens = false) const {
    return findAxis(side, [&](const Group &g, const Axis &a) {
      return a.kind == AxisKind::Ellipsis && (!inParens || g.paren);
    });
  }
  /// Whether `side` has a `...` (inside parentheses when `inParens`).
  constexpr bool hasEllipsis(const Side &side, bool inParens = false) const {
    return findEllipsis(side, inParens) != std::string_view::npos;
  }
  /// The first anonymous axis other than 1 of `side`, or npos.
  constexpr size_t findNumber(const Side &side) const {
    return findAxis(side, [](const Group &, const Axis &a) {
      return a.kind == AxisKind::Number;
    });
  }
  /// The first named axis of `side` that no side of `others` names, or npos.
  constexpr size_t findMissing(const Side &side, const Side *others,
                               size_t count) const {
    return findAxis(side, [&](const Group &, const Axis &a) {
      if (a.kind != AxisKind::Name)
        return false;
      for (size_t o = 0; o < count; ++o)
        if (has(others[o], name(a)))
          return false;
      return true;
    });
  }
  /// Sets the culprit to the bytes [begin, begin + length); returns `e`.
  constexpr Err at(Err e, size_t begin, size_t length) {
    errorBegin = begin;
    errorLength = length;
    return e;
  }
  /// Sets the culprit to axis `a`; returns `e`.
  constexpr Err atAxis(Err e, size_t a) {
    return at(e, axes[a].begin, axes[a].length);
  }
};

/// Parses text[begin, end) as one side, as parseSide in Pattern.cpp.
template <size_t Cap>
constexpr Err parseSide(Parsed<Cap> &p, size_t begin, size_t end,
                        bool allowDuplicates, bool allowUnderscore, bool pack) {
  std::string_view text(p.text, p.length);
  Side side;
  side.first = p.groupCount;
  size_t firstAxis = p.axisCount;
  bool open = false, sawEllipsis = false, sawStar = false;
  size_t openAt = 0;
  auto add = [&](Axis axis) {
    if (axis.kind == AxisKind::Number && axis.value == 1) {
      // A unit dim outside parentheses, nothing inside them.
      if (!open)
        p.groups[p.groupCount++] = Group{p.axisCount, 0, false};
      return;
    }
    p.axes[p.axisCount] = axis;
    if (open)
      ++p.groups[p.groupCount].count;
    else
      p.groups[p.groupCount++] = Group{p.axisCount, 1, false};
    ++p.axisCount;
  };
  size_t i = begin;
  while (i < end) {
    char c = text[i];
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (c == '(') {
      if (pack)
        return p.at(Err::PackParens, i, 1);
      if (open)
        return p.at(Err::Nested, i, 1);
      open = true;
      openAt = i;
      p.groups[p.groupCount] = Group{p.axisCount, 0, true};
      ++i;
      continue;
    }
    if (c == ')') {
      if (!open)
        return p.at(Err::UnbalancedClose, i, 1);
      open = false;
      ++p.groupCount;
      ++i;
      continue;
    }
    if (c == '.') {
      size_t j = i;
      while (j < end && text[j] == '.')
        ++j;
      if (j - i != 3)
        return p.at(Err::Dots, i, j - i);
      if (pack)
        return p.at(Err::PackEllipsis, i, 3);
      if ((i > begin && isIdentChar(text[i - 1])) ||
          (j < end && isIdentChar(text[j])))
        return p.at(Err::EllipsisSpacing, i, 3);
      if (sawEllipsis)
        return p.at(Err::TwoEllipses, i, 3);
      sawEllipsis = true;
      add(Axis{AxisKind::Ellipsis, i, 3, 0});
      i = j;
      continue;
    }
    if (c == '*' && pack) {
      if (sawStar)
        return p.at(Err::PackTwoStars, i, 1);
      sawStar = true;
      add(Axis{AxisKind::Star, i, 1, 0});
      ++i;
      continue;
    }
    if (isIdentChar(c)) {
      size_t j = i;
      bool decimal = true;
      for (; j < end && isIdentChar(text[j]); ++j)
        decimal = decimal && isDigit(text[j]);
      Axis axis{AxisKind::Name, i, j - i, 0};
      if (decimal) {
        if (pack)
          return p.at(Err::PackNumber, i, j - i);
        constexpr uint64_t limit = uint64_t(1) << 62;
        uint64_t v = 0;
        for (size_t k = i; k < j; ++k) {
          if (v > limit / 10 + 1)
            return p.at(Err::LargeAxis, i, j - i);
          v = v * 10 + uint64_t(text[k] - '0');
          if (v > limit)
            return p.at(Err::LargeAxis, i, j - i);
        }
        axis.kind = AxisKind::Number;
        axis.value = v;
        if (v == 0)
          return p.at(Err::ZeroAxis, i, j - i);
      } else {
        std::string_view n = text.substr(i, j - i);
        if (isDigit(n.front()))
          return p.at(Err::InvalidName, i, j - i);
        if ((n.front() == '_' || n.back() == '_') &&
            !(n == "_" && allowUnderscore))
          return p.at(Err::UnderscoreName, i, j - i);
        if (!allowDuplicates && n != "_")
          for (size_t a = firstAxis; a < p.axisCount; ++a)
            if (p.axes[a].kind == AxisKind::Name && p.name(p.axes[a]) == n)
              return p.at(Err::Duplicate, i, j - i);
      }
      add(axis);
      i = j;
      continue;
    }
    return p.at(Err::UnexpectedChar, i, 1);
  }
  if (open)
    return p.at(Err::UnbalancedOpen, openAt, 1);
  if (pack && !sawStar)
    return p.at(Err::PackNoStar, begin, end - begin);
  side.count = p.groupCount - side.first;
  p.sides[p.sideCount++] = side;
  return Err::None;
}

/// The per-operation rules of checkAxisSets (lib/Shape/Infer.cpp) and
/// analyzeEinsum, on a pattern whose syntax is fine.
template <size_t Cap> constexpr Err checkAxisSets(Parsed<Cap> &p, Use use) {
  constexpr size_t npos = std::string_view::npos;
  const Side left = p.sides[0];
  const Side right = p.output();
  size_t a = npos;
  switch (use) {
  case Use::Rearrange:
    if ((a = p.findNumber(left)) != npos || (a = p.findNumber(right)) != npos)
      return p.atAxis(Err::RearrangeNumber, a);
    if ((a = p.findMissing(left, &right, 1)) != npos)
      return p.atAxis(Err::RearrangeLeftOnly, a);
    if ((a = p.findMissing(right, &left, 1)) != npos)
      return p.atAxis(Err::RearrangeRightOnly, a);
    if ((a = p.findEllipsis(left)) != npos && !p.hasEllipsis(right))
      return p.atAxis(Err::RearrangeEllipsisLeftOnly, a);
    return Err::None;
  case Use::Reduce:
    if ((a = p.findNumber(right)) != npos)
      return p.atAxis(Err::ReduceNumberRight, a);
    if ((a = p.findMissing(right, &left, 1)) != npos)
      return p.atAxis(Err::ReduceRightOnly, a);
    return Err::None;
  case Use::Repeat:
    if ((a = p.findNumber(left)) != npos)
      return p.atAxis(Err::RepeatNumberLeft, a);
    if ((a = p.findMissing(left, &right, 1)) != npos)
      return p.atAxis(Err::RepeatLeftOnly, a);
    if ((a = p.findEllipsis(left)) != npos && !p.hasEllipsis(right))
      return p.atAxis(Err::RepeatEllipsisLeftOnly, a);
    return Err::None;
  case Use::Einsum:
    for (size_t s = 0; s < p.sideCount; ++s) {
      if ((a = p.findNumber(p.sides[s])) != npos)
        return p.atAxis(Err::EinsumAnonymous, a);
      for (size_t g = p.sides[s].first; g < p.sides[s].first + p.sides[s].count;
           ++g)
        if (p.groups[g].count == 0)
          return p.at(Err::EinsumAnonymous, 0, 0);
    }
    if ((a = p.findMissing(right, p.sides, p.inputCount())) != npos)
      return p.atAxis(Err::EinsumOutputOnly, a);
    return Err::None;
  default:
    return Err::None;
  }
}

/// Parses `s` for `use`, as parsePattern in Pattern.cpp (and, for Shape, as
/// one side without an arrow); `error` is the first problem found.
template <size_t N>
constexpr Parsed<N + 2> parse(const fixed_string<N> &s, Use use) {
  Parsed<N + 2> p;
  p.length = N - 1;
  for (size_t i = 0; i < N; ++i)
    p.text[i] = s.value[i];
  std::string_view text(p.text, p.length);
  auto fail = [&](Err e) {
    p.error = e;
    return p;
  };
  size_t arrow = text.find("->");
  constexpr size_t npos = std::string_view::npos;
  if (use == Use::Pack || use == Use::Shape) {
    if (arrow != npos)
      return fail(
          p.at(use == Use::Pack ? Err::PackArrow : Err::ShapeArrow, arrow, 2));
    // A shape string may hold what a right side may (an einsum output's `_`,
    // a `...` in parentheses).
    bool shape = use == Use::Shape;
    if (Err e = parseSide(p, 0, p.length, false, shape, !shape); e != Err::None)
      return fail(e);
    return p;
  }
  if (arrow == npos)
    return fail(p.at(Err::NeedsArrow, 0, p.length));
  if (size_t second = text.find("->", arrow + 2); second != npos)
    return fail(p.at(Err::TwoArrows, second, 2));
  p.hasArrow = true;
  bool einsum = use == Use::Einsum;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    bool last = comma == npos || comma > arrow;
    size_t stop = last ? arrow : comma;
    if (!last && !einsum)
      return fail(p.at(Err::CommaNotEinsum, comma, 1));
    if (Err e = parseSide(p, start, stop, einsum, einsum, false);
        e != Err::None)
      return fail(e);
    if (last)
      break;
    start = comma + 1;
  }
  if (size_t comma = text.find(',', arrow); comma != npos)
    return fail(p.at(Err::CommaAfterArrow, comma, 1));
  if (Err e = parseSide(p, arrow + 2, p.length, false, einsum, false);
      e != Err::None)
    return fail(e);
  bool anyInputEllipsis = false;
  for (size_t s = 0; s < p.inputCount(); ++s) {
    anyInputEllipsis = anyInputEllipsis || p.hasEllipsis(p.sides[s]);
    if (size_t a = p.findEllipsis(p.sides[s], true); a != npos)
      return fail(p.atAxis(Err::EllipsisInParensLeft, a));
  }
  if (size_t a = p.findEllipsis(p.output()); a != npos && !anyInputEllipsis)
    return fail(p.atAxis(Err::EllipsisOnlyRight, a));
  return fail(checkAxisSets(p, use));
}

/// The text of the culprit of P's parse error ("h" for an axis), empty when
/// there is none: a template argument of checkPattern, so that the
/// compiler's notes show it next to the pattern.
template <fixed_string P, Use U> consteval auto culprit() {
  fixed_string<parse(P, U).errorLength + 1> out;
  auto p = parse(P, U);
  for (size_t i = 0; i < p.errorLength; ++i)
    out.value[i] = p.text[p.errorBegin + i];
  return out;
}

/// The readable message of each parse error, as a static_assert; true when
/// the pattern is fine.
template <fixed_string P, Use U, fixed_string Culprit = culprit<P, U>()>
constexpr bool checkPattern() {
  constexpr Err e = parse(P, U).error;
  static_assert(e != Err::UnbalancedOpen,
                "ein: pattern has an unbalanced parenthesis: '(' is missing "
                "its ')'");
  static_assert(e != Err::UnbalancedClose,
                "ein: pattern has an unbalanced parenthesis: ')' has no "
                "matching '('");
  static_assert(e != Err::Nested,
                "ein: nested parentheses: axis composition is one level only");
  static_assert(e != Err::Dots,
                "ein: dots are only allowed as an ellipsis '...'");
  static_assert(e != Err::EllipsisSpacing,
                "ein: '...' must be separated from axis names by spaces");
  static_assert(e != Err::TwoEllipses,
                "ein: two ellipses on one side of the pattern");
  static_assert(e != Err::InvalidName,
                "ein: invalid axis name: not a valid identifier");
  static_assert(e != Err::UnderscoreName,
                "ein: invalid axis name: an axis name must not start or end "
                "with '_' (a lone '_' only in einsum)");
  static_assert(e != Err::Duplicate,
                "ein: duplicate axis on one side of the pattern");
  static_assert(e != Err::ZeroAxis, "ein: an anonymous axis must be positive");
  static_assert(e != Err::LargeAxis, "ein: anonymous axis size is too large");
  static_assert(e != Err::UnexpectedChar,
                "ein: unexpected character in pattern");
  static_assert(e != Err::NeedsArrow, "ein: pattern needs '->'");
  static_assert(e != Err::TwoArrows, "ein: pattern has more than one '->'");
  static_assert(e != Err::CommaNotEinsum,
                "ein: unexpected ',' in pattern: only einsum takes several "
                "operands");
  static_assert(e != Err::CommaAfterArrow,
                "ein: unexpected ',' after '->': one output only");
  static_assert(e != Err::EllipsisInParensLeft,
                "ein: '...' inside parentheses is only allowed on the right "
                "side");
  static_assert(e != Err::EllipsisOnlyRight,
                "ein: '...' on the right side but not on the left");
  static_assert(e != Err::PackArrow, "ein: a pack pattern has no '->'");
  static_assert(e != Err::PackParens,
                "ein: parentheses are not allowed in a pack pattern");
  static_assert(e != Err::PackEllipsis,
                "ein: '...' is not allowed in a pack pattern; use '*'");
  static_assert(e != Err::PackNumber,
                "ein: numbers are not allowed in a pack pattern");
  static_assert(e != Err::PackNoStar, "ein: a pack pattern needs one '*' axis");
  static_assert(e != Err::PackTwoStars, "ein: two '*' axes in a pack pattern");
  static_assert(e != Err::ShapeArrow,
                "ein: a shape string is one side: it has no '->'");
  static_assert(e != Err::RearrangeNumber,
                "ein: anonymous axis in rearrange: only 1 is allowed (use "
                "repeat or reduce)");
  static_assert(e != Err::RearrangeLeftOnly,
                "ein: rearrange: axis on the input side is missing from the "
                "output side");
  static_assert(e != Err::RearrangeRightOnly,
                "ein: rearrange: axis on the output side is missing from the "
                "input side");
  static_assert(e != Err::RearrangeEllipsisLeftOnly,
                "ein: rearrange: '...' appears only on the left side");
  static_assert(e != Err::ReduceNumberRight,
                "ein: reduce: anonymous axis on the right side");
  static_assert(e != Err::ReduceRightOnly,
                "ein: reduce: output axis is missing from the input");
  static_assert(e != Err::RepeatNumberLeft,
                "ein: repeat: anonymous axis on the left side");
  static_assert(e != Err::RepeatLeftOnly,
                "ein: repeat: axis of the input is missing from the output");
  static_assert(e != Err::RepeatEllipsisLeftOnly,
                "ein: repeat: '...' of the input is missing from the output");
  static_assert(e != Err::EinsumAnonymous,
                "ein: einsum: anonymous axes (numbers, '1' and '()') are not "
                "supported");
  static_assert(e != Err::EinsumOutputOnly,
                "ein: einsum: output axis appears in no input");
  return e == Err::None;
}

/// The length of `side`'s canonical text (PatternSide::str()).
template <size_t Cap>
constexpr size_t writeSide(const Parsed<Cap> &p, const Side &side, char *out) {
  size_t n = 0;
  auto put = [&](std::string_view s) {
    for (char c : s) {
      if (out)
        out[n] = c;
      ++n;
    }
  };
  for (size_t g = side.first; g < side.first + side.count; ++g) {
    const Group &group = p.groups[g];
    if (g != side.first)
      put(" ");
    if (!group.paren) {
      put(group.count ? p.name(p.axes[group.first]) : "1");
      continue;
    }
    put("(");
    for (size_t a = group.first; a < group.first + group.count; ++a) {
      if (a != group.first)
        put(" ");
      put(p.name(p.axes[a]));
    }
    put(")");
  }
  return n;
}

/// Side `K` of a pattern (the output side when K is -1).
template <size_t Cap> constexpr Side sideAt(const Parsed<Cap> &p, int k) {
  return k < 0 ? p.output() : p.sides[k];
}
/// The length of side K of P's canonical text.
template <fixed_string P, Use U, int K> consteval size_t sideLength() {
  auto p = parse(P, U);
  return writeSide(p, sideAt(p, K), nullptr);
}
/// Side `K` of P's canonical text ("b h s d"), or the output side when K is
/// -1: the shape string of a result.
template <fixed_string P, Use U, int K = -1> consteval auto sideText() {
  fixed_string<sideLength<P, U, K>() + 1> out;
  auto p = parse(P, U);
  writeSide(p, sideAt(p, K), out.value);
  return out;
}

/// The dims a shape string names (its top-level groups but a bare `...`).
template <size_t Cap> constexpr size_t shapeRank(const Parsed<Cap> &p) {
  size_t n = 0;
  for (size_t g = 0; g < p.groupCount; ++g)
    n += !(p.groups[g].count == 1 && !p.groups[g].paren &&
           p.axes[p.groups[g].first].kind == AxisKind::Ellipsis);
  return n;
}

/// How a side of a pattern differs from a shape string.
enum class Mismatch : uint8_t { None, Ellipsis, Rank, Composition, Name };

/// Compares side `k` of `p` with the one side of `shape`.
template <size_t A, size_t B>
constexpr Mismatch compareSide(const Parsed<A> &p, size_t k,
                               const Parsed<B> &shape) {
  const Side &x = p.sides[k];
  const Side &y = shape.sides[0];
  if (p.hasEllipsis(x) != shape.hasEllipsis(y))
    return Mismatch::Ellipsis;
  if (x.count != y.count)
    return Mismatch::Rank;
  for (size_t g = 0; g < x.count; ++g) {
    const Group &gx = p.groups[x.first + g];
    const Group &gy = shape.groups[y.first + g];
    if (gx.count == 0 && gy.count == 0)
      continue; // `1` and `()` are both a unit dim
    bool ex = gx.count == 1 && p.axes[gx.first].kind == AxisKind::Ellipsis;
    bool ey = gy.count == 1 && shape.axes[gy.first].kind == AxisKind::Ellipsis;
    if (ex != ey)
      return Mismatch::Ellipsis;
    if (gx.paren != gy.paren || gx.count != gy.count)
      return Mismatch::Composition;
    for (size_t a = 0; a < gx.count; ++a) {
      const Axis &ax = p.axes[gx.first + a];
      const Axis &ay = shape.axes[gy.first + a];
      if (ax.kind != ay.kind || p.name(ax) != shape.name(ay))
        return Mismatch::Name;
    }
  }
  return Mismatch::None;
}
} // namespace detail
} // namespace ein::api
