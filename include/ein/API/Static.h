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
#include "ein/API/StaticParse.h"
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
