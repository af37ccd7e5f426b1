// Compile-time patterns for the embedded C++ API (C++20, header-only).
//
// The template forms take the pattern as a template argument and parse it in
// constexpr, so a malformed pattern is a C++ compile error with a readable
// message (each kind of error is its own static_assert, whose text starts
// with "ein: "; the compiler's notes show the pattern and, as
// checkPattern's `Culprit` argument, the offending axis or character):
//
//   Tensor kh = ein::rearrange<"b s (h d) -> b h s d">(k, ein::size<"h">(8));
//   Tensor s = ein::einsum<"b h s d, b h t d -> b h s t">(qh, kh);
//
// The parser mirrors lib/Syntax/Pattern.cpp (docs/language.md §5, §6): the
// syntax, the per-operation axis rules and the einsum operand count are
// checked at compile time; a non-ASCII byte is accepted as an identifier
// character and left to the run-time parser, as are the sizes themselves.
//
// Sizes: `ein::size<"h">(8)` is a NamedSize<"h">, an axis size whose name
// the compiler knows. Passed after the tensor, such sizes let the compiler
// check that every size the pattern needs is given: a composition on an
// input side with more than one axis of unknown size (neither a number nor a
// given size), or a new axis of repeat without a size, is a compile error
// ("... needs a size"), and a size naming no axis of the pattern is one too.
// The forms taking a run-time `Sizes` ({{"h", 8}}) skip that check: the
// run-time API reports a missing size then.
//
// Shape-typed tensors: C++ cannot have both the class ein::Tensor and a
// template ein::Tensor<...>, so the tensor type that carries its shape string
// is `ein::Shaped<ein::f32, "b s (h d)">`. Passed to a template form, its
// shape string is checked at compile time against the pattern's left side
// (the same rank counting top-level groups, the same names in order, the same
// compositions; `1` and `()` are both a unit dim; a `...` must be at the same
// place in both), and the result is Shaped<dtype, "right side"> with the
// right side's canonical text ("b h s d"), so a chain of operations is
// checked by name by the C++ compiler, and by size at run time. A shape
// string carries names only: it determines no size. Shaped converts to
// `const Tensor &`, so it goes wherever a Tensor does; its constructor checks
// the dtype and the rank (at least the rank with `...`) at run time.
//
// The forms (ein::X is ein::api::X; each checks, then calls the run-time
// form of Ops.h, whose errors it raises):
//
//   rearrange<P>(x, ein::size<"h">(8)...)     rearrange<P>(x, Sizes)
//   reduce<P>(x, how, sizes..., ein::acc<D>)  reduce<P>(x, how, Sizes)
//   repeat<P>(x, ein::size<"c">(3)...)        repeat<P>(x, Sizes)
//   einsum<P>(x1, ..., xn, sizes..., ein::acc<D>)
//   pack<P>(std::vector<Tensor>)              unpack<P>(x, PackedShapes)
//
// x is a Tensor (the result is a Tensor) or a Shaped (the result is Shaped;
// for einsum, when every operand is Shaped, of one dtype). The run-time
// forms' `sizes = {}` default is the typed form with no size here, so that
// `rearrange<P>(x)` is checked for missing sizes. `ein::einsum<"...">(a, b)`
// is this einsum; `ein::einsum("...", a, b)` is still the run-time one.
// Not here: nothrow:: template forms, and Shaped results of pack/unpack.
#pragma once

#include "ein/API/Ops.h"
#include "ein/API/Tensor.h"
#include "ein/API/Types.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

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

/// An axis size whose axis name is part of its type: `ein::size<"h">(8)`.
template <fixed_string Name> struct NamedSize {
  static_assert(detail::isAxisName(Name.view()),
                "ein: ein::size<\"name\">: the name must be one axis name");
  /// The axis name.
  static constexpr auto name = Name;
  /// The size.
  int64_t value = 0;
};

/// The accumulation and result dtype of reduce and einsum as a typed
/// argument (the run-time forms' `acc`): `ein::acc<ein::f32>`.
template <DType D> struct AccDType {
  /// The dtype.
  static constexpr DType dtype = D;
};
/// `ein::acc<ein::f32>`: accumulate and return f32.
template <DType D> inline constexpr AccDType<D> acc{};

/// A tensor typed by its dtype and shape string (defined below).
template <DType D, fixed_string Shape> class Shaped;

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

/// Whether T is a Shaped tensor, and its dtype and shape string.
template <class T> struct ShapedTraits {
  static constexpr bool shaped = false;
};
template <DType D, fixed_string S> struct ShapedTraits<Shaped<D, S>> {
  static constexpr bool shaped = true;
  static constexpr DType dtype = D;
  static constexpr auto shape = S;
};
/// Whether T is a Shaped tensor.
template <class T>
inline constexpr bool isShaped = ShapedTraits<std::remove_cvref_t<T>>::shaped;

/// Checks side K of P against X's shape string when X is a Shaped tensor;
/// true when it matches (or X is a plain Tensor).
template <fixed_string P, Use U, size_t K, class X>
constexpr bool checkShape() {
  if constexpr (!isShaped<X>) {
    return true;
  } else {
    constexpr auto S = ShapedTraits<std::remove_cvref_t<X>>::shape;
    constexpr Mismatch m = compareSide(parse(P, U), K, parse(S, Use::Shape));
    static_assert(m != Mismatch::Ellipsis,
                  "ein: the pattern's left side does not match the tensor's "
                  "shape string: '...' must be at the same place in both");
    static_assert(m != Mismatch::Rank,
                  "ein: the pattern's left side has a different rank than the "
                  "tensor's shape string");
    static_assert(m != Mismatch::Composition,
                  "ein: the pattern's left side does not match the tensor's "
                  "shape string: the axes are composed differently");
    static_assert(m != Mismatch::Name,
                  "ein: the pattern's left side does not match the tensor's "
                  "shape string: an axis name differs");
    return m == Mismatch::None;
  }
}

/// Whether T is a NamedSize, and its axis name.
template <class T> struct SizeTraits {
  static constexpr bool size = false;
  static constexpr bool valid = true;
  static constexpr std::string_view name = {};
};
template <fixed_string N> struct SizeTraits<NamedSize<N>> {
  static constexpr bool size = true;
  static constexpr bool valid = isAxisName(N.view());
  static constexpr std::string_view name = N.view();
};
/// Whether T is an AccDType, and its dtype.
template <class T> struct AccTraits {
  static constexpr bool acc = false;
  static constexpr DType dtype = DType::F32;
};
template <DType D> struct AccTraits<AccDType<D>> {
  static constexpr bool acc = true;
  static constexpr DType dtype = D;
};
/// Whether T is a tensor (Tensor, TensorView, Shaped).
template <class T>
inline constexpr bool isTensor =
    std::is_convertible_v<const std::remove_cvref_t<T> &, const Tensor &>;

/// The axis names of the NamedSize types among Extra, in order.
template <class... Extra> consteval auto sizeNames() {
  std::array<std::string_view,
             (size_t(0) + ... + size_t(SizeTraits<Extra>::size))>
      out{};
  size_t i = 0;
  ((SizeTraits<Extra>::size ? (void)(out[i++] = SizeTraits<Extra>::name)
                            : (void)0),
   ...);
  return out;
}

/// What can be wrong with the sizes a pattern is given.
enum class SizeErr : uint8_t { None, NotAxis, Twice, Composition, NewAxis };

/// Checks that `given` names axes of the pattern, once each, and that they
/// determine every size the pattern needs (Infer.cpp's matchSide rules: a
/// composition on an input side has at most one member of unknown size, as
/// einsum learns sizes operand by operand from the left; a new axis of
/// repeat has a size).
template <size_t Cap, size_t K>
constexpr SizeErr checkSizes(const Parsed<Cap> &p, Use use,
                             const std::array<std::string_view, K> &given) {
  for (size_t i = 0; i < K; ++i) {
    bool found = false;
    for (size_t s = 0; s < p.sideCount; ++s)
      found = found || p.has(p.sides[s], given[i]);
    if (!found)
      return SizeErr::NotAxis;
    for (size_t j = 0; j < i; ++j)
      if (given[j] == given[i])
        return SizeErr::Twice;
  }
  auto isGiven = [&](std::string_view n) {
    for (size_t i = 0; i < K; ++i)
      if (given[i] == n)
        return true;
    return false;
  };
  for (size_t s = 0; s < p.inputCount(); ++s) {
    const Side &side = p.sides[s];
    for (size_t g = side.first; g < side.first + side.count; ++g) {
      const Group &group = p.groups[g];
      if (!group.paren)
        continue;
      size_t unknown = 0;
      for (size_t a = group.first; a < group.first + group.count; ++a) {
        const Axis &axis = p.axes[a];
        if (axis.kind != AxisKind::Name)
          continue;
        std::string_view n = p.name(axis);
        bool known = isGiven(n);
        // Sizes learnt from earlier operands (einsum).
        for (size_t e = 0; e < s && !known; ++e)
          known = p.has(p.sides[e], n);
        // A bare occurrence on the same side (an einsum diagonal).
        for (size_t h = side.first; h < side.first + side.count && !known; ++h)
          known = !p.groups[h].paren && p.groups[h].count == 1 &&
                  p.name(p.axes[p.groups[h].first]) == n;
        // An earlier member with the same name counts once.
        for (size_t b = group.first; b < a && !known; ++b)
          known = p.axes[b].kind == AxisKind::Name && p.name(p.axes[b]) == n;
        unknown += known ? 0 : 1;
      }
      if (unknown > 1)
        return SizeErr::Composition;
    }
  }
  if (use == Use::Repeat) {
    const Side &out = p.output();
    for (size_t g = out.first; g < out.first + out.count; ++g)
      for (size_t a = p.groups[g].first;
           a < p.groups[g].first + p.groups[g].count; ++a)
        if (p.axes[a].kind == AxisKind::Name &&
            !p.has(p.sides[0], p.name(p.axes[a])) &&
            !isGiven(p.name(p.axes[a])))
          return SizeErr::NewAxis;
  }
  return SizeErr::None;
}

/// The readable message of each size error, as a static_assert; true when
/// the typed sizes among Extra are fine.
template <fixed_string P, Use U, class... Extra> constexpr bool checkSizes() {
  constexpr SizeErr e = checkSizes(parse(P, U), U, sizeNames<Extra...>());
  static_assert(e != SizeErr::NotAxis,
                "ein: a size names no axis of the pattern");
  static_assert(e != SizeErr::Twice, "ein: a size is given twice");
  static_assert(e != SizeErr::Composition,
                "ein: a composition on the left side has more than one axis "
                "of unknown size: it needs a size for all but one, as "
                "ein::size<\"h\">(8)");
  static_assert(e != SizeErr::NewAxis,
                "ein: repeat: a new axis of the output needs a size, as "
                "ein::size<\"c\">(3)");
  return e == SizeErr::None;
}

/// checkSizes when Run (the input's shape string matched), else false.
template <bool Run, fixed_string P, Use U, class... Extra>
constexpr bool checkSizesIf() {
  if constexpr (Run)
    return checkSizes<P, U, Extra...>();
  else
    return false;
}

/// The run-time Sizes of the NamedSize arguments among `extra`.
template <class... Extra> Sizes toSizes(const Extra &...extra) {
  Sizes sizes;
  auto add = [&](const auto &x) {
    using T = std::remove_cvref_t<decltype(x)>;
    if constexpr (SizeTraits<T>::size)
      sizes.emplace_back(std::string(T::name.view()), x.value);
  };
  (add(extra), ...);
  (void)add;
  return sizes;
}

/// The dtype of the AccDType among Extra, else D.
template <DType D, class... Extra> consteval DType resultDType() {
  DType out = D;
  ((AccTraits<Extra>::acc ? (void)(out = AccTraits<Extra>::dtype) : (void)0),
   ...);
  return out;
}
/// The dtype of the AccDType among `extra`, if any.
template <class... Extra> std::optional<DType> toAcc(const Extra &...) {
  std::optional<DType> out;
  ((AccTraits<Extra>::acc ? (void)(out = AccTraits<Extra>::dtype) : (void)0),
   ...);
  return out;
}

/// Checks that the arguments after the tensor are typed sizes (and one
/// acc<D> where `accAllowed`).
template <bool AccAllowed, class... Extra> constexpr bool checkExtras() {
  constexpr bool typed =
      ((SizeTraits<Extra>::size || (AccAllowed && AccTraits<Extra>::acc)) &&
       ...);
  static_assert(typed || AccAllowed,
                "ein: after the tensor, pass sizes as ein::size<\"h\">(8) "
                "arguments or as one ein::Sizes");
  static_assert(typed || !AccAllowed,
                "ein: after the tensor, pass sizes as ein::size<\"h\">(8) "
                "arguments and the dtype as ein::acc<ein::f32>, or sizes as "
                "one ein::Sizes");
  constexpr size_t accs = (size_t(0) + ... + size_t(AccTraits<Extra>::acc));
  static_assert(accs <= 1, "ein: ein::acc<...> is given more than once");
  // A bad name is NamedSize's own error.
  constexpr bool names = (SizeTraits<Extra>::valid && ...);
  return typed && accs <= 1 && names;
}

/// The operand count check of einsum, with the counts in the message.
template <size_t Names, size_t Given> constexpr bool checkOperandCount() {
  static_assert(Given > 0, "ein: einsum needs at least one tensor");
#define EIN_API_COUNT(n, NS, g, GS)                                            \
  static_assert(Names == Given || Names != n || Given != g,                    \
                "ein: einsum pattern names " #n " " NS " but " #g " " GS       \
                " given");
#define EIN_API_COUNT_ROW(n, NS)                                               \
  EIN_API_COUNT(n, NS, 1, "tensor was")                                        \
  EIN_API_COUNT(n, NS, 2, "tensors were")                                      \
  EIN_API_COUNT(n, NS, 3, "tensors were")                                      \
  EIN_API_COUNT(n, NS, 4, "tensors were")                                      \
  EIN_API_COUNT(n, NS, 5, "tensors were")                                      \
  EIN_API_COUNT(n, NS, 6, "tensors were")
  EIN_API_COUNT_ROW(1, "operand")
  EIN_API_COUNT_ROW(2, "operands")
  EIN_API_COUNT_ROW(3, "operands")
  EIN_API_COUNT_ROW(4, "operands")
  EIN_API_COUNT_ROW(5, "operands")
  EIN_API_COUNT_ROW(6, "operands")
#undef EIN_API_COUNT_ROW
#undef EIN_API_COUNT
  static_assert(Names == Given || Given == 0 || (Names <= 6 && Given <= 6),
                "ein: einsum pattern names a different number of operands "
                "than tensors were given");
  return Names == Given;
}

/// Checks the operands of einsum against the pattern's sides, I the first.
template <fixed_string P, size_t I, class T, class... Rest>
constexpr bool checkOperands() {
  constexpr bool ok = checkShape<P, Use::Einsum, I, T>();
  if constexpr (sizeof...(Rest) == 0 || !ok)
    return ok;
  else
    return checkOperands<P, I + 1, Rest...>();
}

/// The Shaped result of side-K-typed input X, or Tensor when X is plain.
template <fixed_string P, Use U, class X, DType D> auto wrap(Tensor t) {
  if constexpr (isShaped<X>)
    return Shaped<D, sideText<P, U>()>(std::move(t));
  else
    return t;
}

/// The dtype of X when Shaped, else D.
template <class X, DType D> consteval DType dtypeOf() {
  if constexpr (isShaped<X>)
    return ShapedTraits<std::remove_cvref_t<X>>::dtype;
  else
    return D;
}

/// The dtype of the first Shaped among Args.
template <class... Args> consteval DType firstDType() {
  DType out = f32;
  bool found = false;
  ((isShaped<Args> && !found ? (void)(found = true, out = dtypeOf<Args, f32>())
                             : (void)0),
   ...);
  return out;
}

/// Whether T is the run-time Sizes (which goes to the Sizes overloads).
template <class T>
inline constexpr bool isSizes = std::is_same_v<std::remove_cvref_t<T>, Sizes>;

/// A tensor argument: Tensor, TensorView or Shaped.
template <class T>
concept TensorArg = isTensor<T>;
/// An argument after the tensor of the typed forms: anything but a run-time
/// Sizes (checked by checkExtras, for a readable message).
template <class T>
concept TypedArg = !isSizes<T>;

} // namespace detail

/// `ein::size<"h">(8)`: the size of axis h, its name known to the compiler.
template <fixed_string Name> constexpr NamedSize<Name> size(int64_t value) {
  return NamedSize<Name>{value};
}

/// A tensor whose type carries its dtype and shape string ("b s (h d)"):
/// the template forms check patterns against it at compile time and return
/// Shaped results. (Named Shaped, not Tensor<...>: C++ cannot have both a
/// class ein::Tensor and a template of that name.) The shape string is one
/// pattern side: names, `( )` compositions, `1`/`()`, numbers, one `...`.
template <DType D, fixed_string Shape> class Shaped {
  static constexpr auto parsed_ = detail::parse(Shape, detail::Use::Shape);
  // The shape string's errors, as a pattern's (one message each).
  static_assert(detail::checkPattern<Shape, detail::Use::Shape>() || true);

public:
  /// The element type.
  static constexpr DType dtype = D;
  /// The shape string, as written in the type.
  static constexpr std::string_view shape() { return Shape.view(); }
  /// The rank the shape string gives (the least rank when it has `...`).
  static constexpr size_t rank = detail::shapeRank(parsed_);
  /// Whether the shape string has a `...` (any number of dims).
  static constexpr bool has_ellipsis =
      parsed_.sideCount == 1 && parsed_.hasEllipsis(parsed_.sides[0]) &&
      !parsed_.hasEllipsis(parsed_.sides[0], true);

  /// Wraps `t`; raises ein::Error (Usage) unless `t` is defined, of dtype D
  /// and of the shape string's rank.
  explicit Shaped(Tensor t) : t_(std::move(t)) {
    bool rankOk =
        has_ellipsis ? size_t(t_.rank()) >= rank : size_t(t_.rank()) == rank;
    if (!t_.defined() || t_.dtype() != D || !rankOk)
      raise(ErrorInfo{
          ErrorInfo::Kind::Usage,
          std::string("error: ein::Shaped<") + name(D) + ", \"" +
              std::string(Shape.view()) + "\"> needs a tensor of dtype " +
              name(D) + " and rank " + (has_ellipsis ? "at least " : "") +
              std::to_string(rank) + ", got " +
              (t_.defined() ? t_.describe() : std::string("no tensor"))});
  }
  /// The tensor.
  const Tensor &tensor() const & { return t_; }
  /// The tensor, moved out.
  Tensor tensor() && { return std::move(t_); }
  /// A Shaped tensor is usable wherever a Tensor is.
  operator const Tensor &() const { return t_; }

private:
  Tensor t_;
};

/// rearrange with a compile-time pattern and typed sizes: `rearrange<"b s
/// (h d) -> b h s d">(x, ein::size<"h">(8))`. Returns Shaped<D, "b h s d">
/// for a Shaped x, else a Tensor.
template <fixed_string P, detail::TensorArg X, detail::TypedArg... Extra>
auto rearrange(const X &x, const Extra &...sizes) {
  using namespace detail;
  constexpr bool ok =
      checkPattern<P, Use::Rearrange>() && checkExtras<false, Extra...>();
  if constexpr (!ok) {
    return Tensor();
  } else {
    constexpr bool shapeOk = checkShape<P, Use::Rearrange, 0, X>();
    constexpr bool sizesOk =
        checkSizesIf<shapeOk, P, Use::Rearrange, Extra...>();
    constexpr bool checked = shapeOk && sizesOk;
    if constexpr (!checked)
      return Tensor();
    else
      return wrap<P, Use::Rearrange, X, dtypeOf<X, f32>()>(
          nothrow::rearrange(x, P.view(), toSizes(sizes...)).value());
  }
}
/// rearrange with a compile-time pattern and run-time sizes (not checked at
/// compile time): `rearrange<"b s (h d) -> b h s d">(x, {{"h", 8}})`.
template <fixed_string P, detail::TensorArg X>
auto rearrange(const X &x, const Sizes &sizes) {
  using namespace detail;
  constexpr bool ok = checkPattern<P, Use::Rearrange>() &&
                      checkShape<P, Use::Rearrange, 0, X>();
  if constexpr (!ok)
    return Tensor();
  else
    return wrap<P, Use::Rearrange, X, dtypeOf<X, f32>()>(
        nothrow::rearrange(x, P.view(), sizes).value());
}

/// reduce with a compile-time pattern, typed sizes and an optional
/// ein::acc<D>: `reduce<"b s d -> b d">(x, ein::mean)`.
template <fixed_string P, detail::TensorArg X, detail::TypedArg... Extra>
auto reduce(const X &x, Reduction how, const Extra &...extra) {
  using namespace detail;
  constexpr bool ok =
      checkPattern<P, Use::Reduce>() && checkExtras<true, Extra...>();
  if constexpr (!ok) {
    return Tensor();
  } else {
    constexpr bool shapeOk = checkShape<P, Use::Reduce, 0, X>();
    constexpr bool sizesOk = checkSizesIf<shapeOk, P, Use::Reduce, Extra...>();
    constexpr bool checked = shapeOk && sizesOk;
    if constexpr (!checked)
      return Tensor();
    else
      return wrap<P, Use::Reduce, X,
                  resultDType<dtypeOf<X, f32>(), Extra...>()>(
          nothrow::reduce(x, P.view(), how, toSizes(extra...), toAcc(extra...))
              .value());
  }
}
/// reduce with a compile-time pattern and run-time sizes.
template <fixed_string P, detail::TensorArg X>
auto reduce(const X &x, Reduction how, const Sizes &sizes) {
  using namespace detail;
  constexpr bool ok =
      checkPattern<P, Use::Reduce>() && checkShape<P, Use::Reduce, 0, X>();
  if constexpr (!ok)
    return Tensor();
  else
    return wrap<P, Use::Reduce, X, dtypeOf<X, f32>()>(
        nothrow::reduce(x, P.view(), how, sizes).value());
}

/// repeat with a compile-time pattern and typed sizes: `repeat<"h w -> c h
/// w">(x, ein::size<"c">(3))`; a new axis without a size does not compile.
template <fixed_string P, detail::TensorArg X, detail::TypedArg... Extra>
auto repeat(const X &x, const Extra &...sizes) {
  using namespace detail;
  constexpr bool ok =
      checkPattern<P, Use::Repeat>() && checkExtras<false, Extra...>();
  if constexpr (!ok) {
    return Tensor();
  } else {
    constexpr bool shapeOk = checkShape<P, Use::Repeat, 0, X>();
    constexpr bool sizesOk = checkSizesIf<shapeOk, P, Use::Repeat, Extra...>();
    constexpr bool checked = shapeOk && sizesOk;
    if constexpr (!checked)
      return Tensor();
    else
      return wrap<P, Use::Repeat, X, dtypeOf<X, f32>()>(
          nothrow::repeat(x, P.view(), toSizes(sizes...)).value());
  }
}
/// repeat with a compile-time pattern and run-time sizes.
template <fixed_string P, detail::TensorArg X>
auto repeat(const X &x, const Sizes &sizes) {
  using namespace detail;
  constexpr bool ok =
      checkPattern<P, Use::Repeat>() && checkShape<P, Use::Repeat, 0, X>();
  if constexpr (!ok)
    return Tensor();
  else
    return wrap<P, Use::Repeat, X, dtypeOf<X, f32>()>(
        nothrow::repeat(x, P.view(), sizes).value());
}

/// einsum with a compile-time pattern: the operands, then typed sizes and an
/// optional ein::acc<D>: `einsum<"b h s d, b h t d -> b h s t">(q, k)`.
/// Returns Shaped when every operand is Shaped (of one dtype), else Tensor.
template <fixed_string P, class... Args> auto einsum(const Args &...args) {
  using namespace detail;
  constexpr size_t operands = (size_t(0) + ... + size_t(isTensor<Args>));
  constexpr bool allShaped =
      operands > 0 && (size_t(0) + ... + size_t(isShaped<Args>)) == operands;
  // The operands first, then the typed extras.
  constexpr bool ordered = [] {
    bool seenExtra = false, ok = true;
    ((isTensor<Args> ? (void)(ok = ok && !seenExtra)
                     : (void)(seenExtra = true)),
     ...);
    return ok;
  }();
  static_assert(ordered, "ein: einsum: pass the tensors first, then "
                         "ein::size<\"h\">(8) and ein::acc<ein::f32>");
  constexpr bool extrasOk =
      ((isTensor<Args> || SizeTraits<Args>::size || AccTraits<Args>::acc) &&
       ...);
  static_assert(extrasOk, "ein: einsum takes tensors, then "
                          "ein::size<\"h\">(8) and ein::acc<ein::f32> "
                          "arguments");
  constexpr bool ok = ordered && extrasOk && checkPattern<P, Use::Einsum>();
  if constexpr (!ok) {
    return Tensor();
  } else {
    constexpr bool counted =
        checkOperandCount<parse(P, Use::Einsum).inputCount(), operands>();
    if constexpr (!counted) {
      return Tensor();
    } else {
      constexpr bool shapeOk = checkOperands<P, 0, Args...>();
      constexpr bool sizesOk = checkSizesIf<shapeOk, P, Use::Einsum, Args...>();
      constexpr bool checked = shapeOk && sizesOk;
      std::vector<Tensor> tensors;
      auto add = [&](const auto &a) {
        if constexpr (isTensor<decltype(a)>)
          tensors.push_back(static_cast<const Tensor &>(a));
      };
      (add(args), ...);
      (void)add;
      Tensor r =
          nothrow::einsum(P.view(), tensors, toSizes(args...), toAcc(args...))
              .value();
      if constexpr (!checked || !allShaped) {
        return r;
      } else {
        constexpr DType first = firstDType<Args...>();
        constexpr bool sameDType =
            ((!isTensor<Args> || dtypeOf<Args, first>() == first) && ...);
        static_assert(sameDType, "ein: einsum: the Shaped operands have "
                                 "different dtypes");
        return Shaped<resultDType<first, Args...>(),
                      sideText<P, Use::Einsum>()>(std::move(r));
      }
    }
  }
}

/// pack with a compile-time pattern: `pack<"b * c">({img, cls})`.
template <fixed_string P> Packed pack(const std::vector<Tensor> &inputs) {
  constexpr bool ok = detail::checkPattern<P, detail::Use::Pack>();
  (void)ok;
  return nothrow::pack(inputs, P.view()).value();
}
/// unpack with a compile-time pattern: `unpack<"b * c">(p.tensor, p.shapes)`.
template <fixed_string P>
std::vector<Tensor> unpack(const Tensor &x, const PackedShapes &shapes) {
  constexpr bool ok = detail::checkPattern<P, detail::Use::Pack>();
  (void)ok;
  return nothrow::unpack(x, shapes, P.view()).value();
}

} // namespace ein::api
