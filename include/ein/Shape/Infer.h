// Shape inference for every ein operation: the one place the shape rules live.
//
// The front end's checker and the dialect's verifiers both call these, so a
// rule is written once. Errors carry an anchor (pattern offset, operand or
// keyword index) that the caller turns into a source location.
#pragma once

#include "ein/Shape/Shape.h"
#include "ein/Support/Expected.h"
#include "ein/Syntax/Pattern.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ein {

/// A keyword size argument: `h=heads`.
struct SizeArg {
  std::string name;
  SizeExpr value;
};

/// Every reduction, one per row of ReduceKinds.def.
enum class ReduceKind {
#define EIN_REDUCE_KIND(Kind, name, ...) Kind,
#include "ein/Shape/ReduceKinds.def"
};
std::optional<ReduceKind> parseReduceKind(const std::string &name);
const char *reduceKindName(ReduceKind kind);

/// How a reduction folds its elements (ReduceKinds.def's Combine column):
/// the binary operation and so the identity a fold starts from (Add 0, Mul
/// 1, Max the lowest value, Min the highest, Or 0, And 1).
enum class ReduceCombine { Add, Mul, Max, Min, Or, And };
/// What a reduction does with the folded value (the Finish column): nothing,
/// divide by the count of reduced elements (Mean), or fold the squared
/// deviations from that mean in a second pass and divide again (Variance).
enum class ReduceFinish { None, Mean, Variance };
ReduceCombine reduceCombine(ReduceKind kind);
ReduceFinish reduceFinish(ReduceKind kind);

/// What inference knows and learns about sizes in one function.
struct InferContext {
  /// Sizes known as numbers at compile time (`dim` declarations, `--dim`).
  Bindings env;
  /// Packs whose rank became known by matching against explicit axes:
  /// `*batch` -> its dims. Used to expand packs in later shapes.
  std::map<std::string, Shape> packBindings;
  /// The names of `env` bound from a call's inputs (the re-check of a
  /// function for the sizes it is called with): numbers to evaluate and to
  /// check with, but not to fold shapes or to choose between dims with, so
  /// that the function checks as it did without them (a quotient `d/7` stays
  /// one, not a `7` that a `7` elsewhere could be taken for).
  std::set<std::string> entryNames;
  /// `env` without `entryNames`.
  Bindings staticEnv() const;
  /// Relations that can only be checked once sizes are known.
  std::vector<Constraint> constraints;

  enum class Proof { Equal, NotEqual, Unknown };
  /// Decides `a == b` symbolically, then with the known numbers.
  Proof prove(const SizeExpr &a, const SizeExpr &b) const;
  /// `prove` with the sizes known without the call's inputs (staticEnv).
  Proof proveStatic(const SizeExpr &a, const SizeExpr &b) const;
  /// `prove` with the sizes `known`.
  Proof proveWith(const SizeExpr &a, const SizeExpr &b,
                  const Bindings &known) const;
  /// `num / den`: exact if possible, else an opaque quotient plus a recorded
  /// divisibility constraint; an error when numbers show it does not divide.
  Expected<SizeExpr> divide(const SizeExpr &num, const SizeExpr &den,
                            const std::string &what);
  /// Requires `a == b`: succeeds when provable; binds a free name to a
  /// number when one side is a lone free name and the other a number (as
  /// jaxtyping binds a name on first use); records `a == b` as an entry
  /// check when either side mentions an anonymous size (`_`, a dim of
  /// `...`: isAnonymousName), which the user never named and so cannot have
  /// meant to be different; otherwise fails with "cannot prove" when the two
  /// sides are different symbols, or with both values when they differ.
  Expected<bool> unify(const SizeExpr &a, const SizeExpr &b,
                       const std::string &what);
  /// Records `a == b` as an entry check (once, in either order).
  void requireEqualAtEntry(const SizeExpr &a, const SizeExpr &b,
                           const std::string &what);
  /// Whether the quotient `num / den` divides evenly: it has its entry
  /// check `num % den == 0` (a floor quotient of sizes written with `//`
  /// has none).
  bool exactQuotient(const SizeExpr &num, const SizeExpr &den) const;
  /// `e` with every exact quotient times its divisor cancelled:
  /// `(c/t)*t` is `c`, `2*((s-1)/2)` is `s-1` (SizeExpr::cancelQuotients).
  SizeExpr simplify(const SizeExpr &e) const;
  /// Names bound by `unify` (not given by the user).
  std::map<std::string, Int> inferred;
  /// Replaces bound packs by their dims.
  Shape expand(const Shape &shape) const;
};

/// The fresh dims a variadic `*pack` of known rank stands for: `pack` for
/// rank 1, `pack_0 pack_1 ...` otherwise. The checker, `--rank` and
/// EntryBinding all name them so.
Shape packDims(const std::string &pack, size_t rank);

/// What a rearrange/reduce/repeat does to elementary axes: the cost model
/// and the view analysis read it. Ellipsis dims are named `...0`, `...1`.
struct TransformInfo {
  std::vector<std::string> inputAxes;  // elementary axes, in input order
  std::vector<std::vector<std::string>> inputGroups; // per input dim
  std::vector<std::string> outputAxes; // elementary axes, in output order
  std::vector<std::vector<std::string>> outputGroups; // per output dim
  std::map<std::string, SizeExpr> axisSizes;
  Shape result;
};
Expected<TransformInfo> analyzeTransform(InferContext &ctx, PatternUse use,
                                         const Pattern &pattern,
                                         const Shape &input,
                                         const std::vector<SizeArg> &sizes);

/// The elementary structure of an einsum, for costs and contraction order.
struct EinsumInfo {
  std::vector<std::vector<std::string>> operandAxes; // per operand
  /// Per operand, per dim: its elementary axes (empty for a broadcast 1).
  std::vector<std::vector<std::vector<std::string>>> operandGroups;
  std::vector<std::string> outputAxes;
  std::vector<std::vector<std::string>> outputGroups; // per output dim
  std::map<std::string, SizeExpr> axisSizes;
  Shape result;
};
Expected<EinsumInfo> analyzeEinsum(InferContext &ctx, const Pattern &pattern,
                                   const std::vector<Shape> &inputs,
                                   const std::vector<SizeArg> &sizes);

Expected<Shape> inferRearrange(InferContext &ctx, const Pattern &pattern,
                               const Shape &input,
                               const std::vector<SizeArg> &sizes);
Expected<Shape> inferReduce(InferContext &ctx, const Pattern &pattern,
                            const Shape &input,
                            const std::vector<SizeArg> &sizes);
/// max and min have no identity, so (as numpy refuses "zero-size array to
/// reduction operation maximum which has no identity") they need at least
/// one element along the reduced axes: an error anchored at an axis known to
/// be 0, a `NonEmpty` entry check when the sizes bind later, nothing when
/// they are known to be at least 1 or for sum (0), prod (1) and mean (0/0,
/// NaN).
Expected<bool> requireNonEmptyReduction(InferContext &ctx, ReduceKind kind,
                                        const Pattern &pattern,
                                        const TransformInfo &info);
Expected<Shape> inferRepeat(InferContext &ctx, const Pattern &pattern,
                            const Shape &input,
                            const std::vector<SizeArg> &sizes);
/// einsum with any number of operands, ellipses and (beyond einops) composed
/// axes.
Expected<Shape> inferEinsum(InferContext &ctx, const Pattern &pattern,
                            const std::vector<Shape> &inputs,
                            const std::vector<SizeArg> &sizes);

/// pack([x, y], "b * c"): the packed shape and each input's `*` part.
struct PackResult {
  Shape packed;
  std::vector<Shape> parts;
};
Expected<PackResult> inferPack(InferContext &ctx, const Pattern &pattern,
                               const std::vector<Shape> &inputs);
/// unpack(x, ps, "b * c"): one shape per part.
Expected<std::vector<Shape>> inferUnpack(InferContext &ctx,
                                         const Pattern &pattern,
                                         const Shape &input,
                                         const std::vector<Shape> &parts);

/// Elementwise broadcasting by dimension name: the smaller operand's dims
/// (size-1 dims dropped) must appear in the larger one, in order. Errors
/// anchor at operand 0 or 1.
/// Where each operand dim lands in the broadcast result: a result dim
/// index, or -1 for a size-1 dim that broadcasts.
struct BroadcastAlignment {
  std::vector<int> lhs, rhs;
};
/// The dims of `shape` (not variadics) whose size is `size`, compared as
/// written, or with `known`'s values substituted into both when given: how
/// slice and take find the axis a string names.
std::vector<size_t> dimsOfSize(const Shape &shape, const SizeExpr &size,
                               const Bindings *known = nullptr);

Expected<Shape> inferBroadcast(InferContext &ctx, const Shape &lhs,
                               const Shape &rhs,
                               BroadcastAlignment *alignment = nullptr);

/// Checks that `actual` is `expected` (a declared type): same rank after
/// pack expansion and provably equal sizes. Binds packs of `expected` whose
/// rank is still free.
Expected<bool> checkShapeMatches(InferContext &ctx, const Shape &expected,
                                 const Shape &actual);

} // namespace ein
