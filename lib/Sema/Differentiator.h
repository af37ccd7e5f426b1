// grad()'s private interface: the Differentiator the gradient rules build
// backward ops with, and one gradient rule per row of the op registry.
//
// The driver (lib/Sema/Autodiff.cpp) walks the ops backwards and calls the
// rule of each op's kind; each rule lives with its op family's other rules in
// lib/Sema/Ops/<Family>.cpp, in its `// --- Gradient ---` section.
#pragma once

#include "ein/Sema/Autodiff.h"
#include "ein/Sema/ProgramBuilder.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {

/// What a failed step returns: an empty optional (of any type), or, through
/// `Failed::no`, false. (No implicit bool: an optional<unsigned> would take
/// it as the value 0.)
struct Failed {
  template <typename T> operator std::optional<T>() const {
    return std::nullopt;
  }
  bool no() const { return false; }
};

/// A side of a pattern, one entry per dim: its elementary axes.
using Groups = std::vector<std::vector<std::string>>;

/// The state of one grad(): the adjoints found so far, the backward ops'
/// origin, and the builders the rules write their backward ops with. A rule
/// reads the adjoints of its op's results, builds the adjoints of its
/// operands and adds them with `accumulate`; a step that fails returns an
/// empty optional (or false) after `fail` recorded why.
class Differentiator {
public:
  Differentiator(CheckedFunction &fn, const std::vector<unsigned> &wrt)
      : fn(fn), builder(fn), params(wrt.begin(), wrt.end()) {}

  GradientResult run(unsigned loss, const std::vector<unsigned> &wrt,
                     SourceLoc at);

  // What the rules read.
  CheckedFunction &function() { return fn; }
  const TensorType &type(unsigned id) const { return fn.values[id].type; }
  DType dtypeOf(unsigned id) const { return type(id).dtype; }
  /// The value's shape, every pack expanded (refused when a rank is
  /// unknown).
  std::optional<Shape> shapeOf(unsigned id);
  /// Whether `value` depends on a wrt value (only those get gradients).
  bool isActive(unsigned value) const { return active.count(value) != 0; }
  /// The adjoint of `value` so far, none when nothing reached it from the
  /// loss (a rule whose result has none has nothing to do).
  std::optional<unsigned> adjointOf(unsigned value) const;
  /// Whether a step has failed (its error is kept for the grad() call).
  bool failed() const { return error.has_value(); }

  /// Records why the gradient cannot be built, at the op being
  /// differentiated (the first failure wins).
  Failed fail(std::string message);
  /// A backward op that does not check is a bug of a rule, reported as
  /// such rather than lowered wrongly.
  Failed failBuilt(const std::string &what, const std::string &why);

  /// The backward ops built from now on differentiate `op` with respect to
  /// `operand` (their place, call site, phase and gradOf).
  void target(const CheckedOp &op, unsigned operand);
  /// The builder, its origin set to the forward op being differentiated.
  ProgramBuilder &build();
  /// A built value, or the failure of a rule's step (a bug of the rule).
  template <typename T> std::optional<T> built(BuildOr<T> value) {
    if (value)
      return *value;
    return builtFailure(value.error());
  }

  /// A fresh axis name for a backward pattern ("ad0", "ad1", ...).
  std::string freshAxis();

  // Builders of backward ops.
  unsigned constant(double value, DType dtype);
  std::optional<unsigned> count(const SizeExpr &n, DType dtype);
  unsigned cast(unsigned x, DType dtype);
  std::optional<unsigned> ew(ElementwiseFn f, std::vector<unsigned> xs);
  std::optional<unsigned> transform(OpKind kind, unsigned x,
                                    const std::string &pattern,
                                    std::vector<SizeArg> sizes,
                                    ReduceKind reduction = ReduceKind::Sum);
  std::optional<unsigned> einsum(const std::vector<unsigned> &xs,
                                 const std::string &pattern,
                                 std::vector<SizeArg> sizes,
                                 std::optional<DType> acc);
  std::optional<unsigned> zeros(unsigned like);
  std::optional<unsigned> zerosOf(const Shape &shape, DType dtype);
  /// pack(parts, pattern): unpack's gradient, and slice's (a cat).
  std::optional<unsigned> pack(const std::vector<unsigned> &parts,
                               const Pattern &pattern, DType dtype);
  /// The n x n identity in `dtype`: arange(n) "i 1" == arange(n) "1 j".
  std::optional<unsigned> identity(const SizeExpr &n, DType dtype);
  /// `g`, the gradient of the broadcast `result`, summed to `operand`'s
  /// shape along the dims the forward op broadcast it (aligned against
  /// `result`'s type, never g's: its sizes may be written otherwise).
  std::optional<unsigned> unbroadcast(unsigned g, unsigned operand,
                                      unsigned result);
  /// Adds `g` to the gradient of `value` (in value's dtype, and value's
  /// shape as written: see typedAs).
  bool accumulate(unsigned value, unsigned g);
  /// `g`, of `value`'s shape up to how its sizes are written, as a value
  /// typed exactly as `value` (an identity rearrange where the names
  /// differ and every dim is provably equal; g itself otherwise).
  std::optional<unsigned> typedAs(unsigned g, unsigned value);

private:
  CheckedFunction &fn;
  ProgramBuilder builder; // every backward op is built through it
  std::set<unsigned> params;
  std::set<unsigned> active; // values that depend on a wrt value
  std::map<unsigned, unsigned> adjoint;
  std::optional<GradientError> error;
  unsigned freshAxes = 0;

  // Where the ops being added belong (the forward op they differentiate).
  SourceLoc atLoc;
  int atSite = -1;
  GradPhase atPhase = GradPhase::DataGrad;
  int atTarget = -1;
  std::string atWhat; // "einsum", "reduce max", ... for messages

  Failed builtFailure(const BuildError &e);
  /// Calls the rule of `op`'s kind (the registry's switch).
  bool differentiate(const CheckedOp &op);
};

/// Renames a forward pattern's axes for a backward pattern: names stay
/// (readable IR), numbers and names an ellipsis expanded to get fresh ones,
/// and every axis in a composition, or renamed, gets its size as a keyword.
class AxisNames {
public:
  AxisNames(const std::map<std::string, SizeExpr> &sizes,
            std::function<std::string()> fresh)
      : sizes(sizes), fresh(std::move(fresh)) {}
  std::string operator()(const std::string &axis);
  /// Keyword sizes for the axes of `sides` that need one: those in a
  /// composition, renamed ones, and those not in `bound` when given (the
  /// new axes of a repeat back).
  std::vector<SizeArg> sizeArgs(const std::vector<const Groups *> &sides,
                                const std::set<std::string> *bound = nullptr);

private:
  const std::map<std::string, SizeExpr> &sizes;
  std::function<std::string()> fresh;
  std::map<std::string, std::string> names;
  std::set<std::string> sized;
};

/// The text of one side of a pattern, each axis through `name`.
std::string sideText(const Groups &groups, AxisNames &name);

/// A softmax over some axes as the checked program writes it:
/// `t = z - mx`, `mx = reduce(z, ..., "max")`, `p = exp(t)`,
/// `den = reduce(p, ..., "sum")` over the same axes, `y = p / den`, each
/// step read by the next alone (lib/Sema/SoftmaxGrad.cpp).
struct SoftmaxChain {
  unsigned z, mx, t, p, den, y;
  /// A log-softmax's `log(den)`: then `y = t - lg` (matchLogSoftmax).
  std::optional<unsigned> lg;
  Pattern sumPattern; // the sum's, to reduce over the same axes
  std::vector<SizeArg> sumSizes;
};
/// The softmax that `div` ends, if it ends one.
std::optional<SoftmaxChain> matchSoftmax(const CheckedFunction &fn,
                                         const CheckedOp &div);
/// The softmax's gradient as one rule, dz = y * (dy - sum(dy * y)): the
/// division's rule when it ends a softmax (the steps before it then get no
/// adjoint).
bool gradientOfSoftmax(Differentiator &d, const CheckedOp &div,
                       const SoftmaxChain &s);
/// A log-softmax, `y = t - log(reduce(exp(t), ..., "sum"))` with
/// `t = z - reduce(z, ..., "max")`, that `sub` ends, if it ends one.
std::optional<SoftmaxChain> matchLogSoftmax(const CheckedFunction &fn,
                                            const CheckedOp &sub);
/// Its gradient as one rule, dz = dy - exp(y) * sum(dy), reading y alone.
bool gradientOfLogSoftmax(Differentiator &d, const CheckedOp &sub,
                          const SoftmaxChain &s);

/// A copy of the forward op `op` (one result) for the backward to compute
/// again instead of saving its value: phase Recompute, its operands the
/// copies already made (`copyOf`), its result a new value of the same type,
/// recorded in `copyOf`.
CheckedOp recomputedCopy(CheckedFunction &fn, const CheckedOp &op,
                         std::map<unsigned, unsigned> &copyOf);

/// One gradient rule per registry row, defined in the op's family file
/// (lib/Sema/Ops/<Family>.cpp): it is called for every op one of whose
/// results has an adjoint, reads the adjoints it needs (`adjointOf`; unpack
/// takes zeros for the parts that have none) and accumulates its operands'.
/// An op without a gradient has a rule saying why; a row without its rule
/// fails to link, naming it.
#define EIN_OP(Kind, Name, OpClass)                                            \
  bool gradientOf##Kind(Differentiator &d, const CheckedOp &op);
#include "ein/Sema/Ops.def"

} // namespace ein
