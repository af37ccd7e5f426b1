// Reverse-mode differentiation over the checked ops of a function: the rule
// of each op, written as ein ops (the gradient of an einsum is an einsum, of
// a repeat a reduce, ...), each checked by the same inference as user code.
#include "ein/Sema/Autodiff.h"

#include "ein/Sema/ProgramBuilder.h"
#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

namespace ein {

namespace {

using F = ElementwiseFn;

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

class Differentiator {
public:
  Differentiator(CheckedFunction &fn, const std::vector<unsigned> &wrt)
      : fn(fn), builder(fn), params(wrt.begin(), wrt.end()) {}

  GradientResult run(unsigned loss, const std::vector<unsigned> &wrt,
                     SourceLoc at);

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

  Failed fail(std::string message) {
    if (!error)
      error = GradientError{std::move(message), atLoc, atSite};
    return {};
  }
  /// A backward op that does not check is a bug of a rule, reported as
  /// such rather than lowered wrongly.
  Failed failBuilt(const std::string &what, const std::string &why) {
    return fail(fmt::format("the gradient of this {} needs {}, which does "
                            "not check ({}); please report this",
                            atWhat, what, why));
  }

  const TensorType &type(unsigned id) const { return fn.values[id].type; }
  DType dtypeOf(unsigned id) const { return type(id).dtype; }
  std::optional<Shape> shapeOf(unsigned id) {
    Shape shape = fn.ctx.expand(type(id).shape);
    for (const Dim &d : shape)
      if (d.isPack())
        return fail(fmt::format("grad needs every rank known; '...{}' has an "
                                "unknown rank here (give it with --rank)",
                                d.pack));
    return shape;
  }

  void target(const CheckedOp &op, unsigned operand) {
    atLoc = op.loc;
    atSite = op.callSite;
    atTarget = static_cast<int>(operand);
    atPhase =
        params.count(operand) ? GradPhase::WeightGrad : GradPhase::DataGrad;
  }

  /// The builder, its origin set to the forward op being differentiated.
  ProgramBuilder &build() {
    builder.setOrigin(BuildOrigin{atLoc, atSite, atPhase, atTarget});
    return builder;
  }
  /// A built value, or the failure of a rule's step (a bug of the rule).
  template <typename T> std::optional<T> built(BuildOr<T> value) {
    if (value)
      return *value;
    const BuildError &e = value.error();
    std::string what = e.op == "pack"     ? std::string("a pack")
                       : e.op == "unpack" ? std::string("an unpack")
                       : e.pattern.empty()
                           ? e.op
                           : fmt::format("{}(\"{}\")", e.op, e.pattern);
    return failBuilt(what, e.error.message);
  }

  std::string freshAxis() { return fmt::format("ad{}", freshAxes++); }

  // Builders of backward ops.
  unsigned constant(double value, DType dtype);
  std::optional<unsigned> count(const SizeExpr &n, DType dtype);
  unsigned cast(unsigned x, DType dtype);
  std::optional<unsigned> ew(F f, std::vector<unsigned> xs);
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
  /// `g` (of the broadcast result's shape) summed to `operand`'s shape.
  std::optional<unsigned> unbroadcast(unsigned g, unsigned operand);
  /// Adds `g` to the gradient of `value` (in value's dtype).
  bool accumulate(unsigned value, unsigned g);

  // The rules.
  bool differentiate(const CheckedOp &op);
  bool einsumRule(const CheckedOp &op, unsigned dy);
  bool transformRule(const CheckedOp &op, unsigned dy);
  bool elementwiseRule(const CheckedOp &op, unsigned dy);
  std::optional<unsigned> localGradient(const CheckedOp &op, unsigned i,
                                        unsigned dy);
  bool packRule(const CheckedOp &op, unsigned dy);
  bool unpackRule(const CheckedOp &op);
  bool sliceRule(const CheckedOp &op, unsigned dy);
  bool takeRule(const CheckedOp &op, unsigned dy);
};

unsigned Differentiator::constant(double value, DType dtype) {
  return build().constant(value, dtype);
}

std::optional<unsigned> Differentiator::count(const SizeExpr &n, DType dtype) {
  return built(build().size(n, dtype));
}

unsigned Differentiator::cast(unsigned x, DType dtype) {
  return build().cast(x, dtype);
}

std::optional<unsigned> Differentiator::ew(F f, std::vector<unsigned> xs) {
  return built(build().elementwise(f, std::move(xs)));
}

std::optional<unsigned> Differentiator::transform(OpKind kind, unsigned x,
                                                  const std::string &pattern,
                                                  std::vector<SizeArg> sizes,
                                                  ReduceKind reduction) {
  return built(
      build().transform(kind, x, pattern, std::move(sizes), reduction));
}

std::optional<unsigned> Differentiator::einsum(const std::vector<unsigned> &xs,
                                               const std::string &pattern,
                                               std::vector<SizeArg> sizes,
                                               std::optional<DType> acc) {
  return built(build().einsum(xs, pattern, std::move(sizes), acc));
}

std::optional<unsigned> Differentiator::zeros(unsigned like) {
  auto shape = shapeOf(like);
  if (!shape)
    return std::nullopt;
  return zerosOf(*shape, dtypeOf(like));
}

std::optional<unsigned> Differentiator::zerosOf(const Shape &shape,
                                                DType dtype) {
  unsigned zero = constant(0, dtype);
  if (shape.empty())
    return zero;
  std::vector<std::string> names;
  std::vector<SizeArg> sizes;
  for (const Dim &d : shape) {
    names.push_back(freshAxis());
    sizes.push_back(SizeArg{names.back(), d.size});
  }
  return transform(OpKind::Repeat, zero,
                   fmt::format(" -> {}", fmt::join(names, " ")), sizes);
}

std::optional<unsigned> Differentiator::pack(const std::vector<unsigned> &parts,
                                             const Pattern &pattern,
                                             DType dtype) {
  return built(build().pack(parts, pattern, dtype));
}

std::optional<unsigned> Differentiator::identity(const SizeExpr &n,
                                                 DType dtype) {
  auto positions = built(build().arange(n));
  if (!positions)
    return std::nullopt;
  auto column = transform(OpKind::Rearrange, *positions, "i -> i 1", {});
  auto row = transform(OpKind::Rearrange, *positions, "j -> 1 j", {});
  if (!column || !row)
    return std::nullopt;
  auto same = ew(F::Eq, {*column, *row});
  if (!same)
    return std::nullopt;
  return cast(*same, dtype);
}

std::optional<unsigned> Differentiator::unbroadcast(unsigned g,
                                                    unsigned operand) {
  auto gShape = shapeOf(g);
  auto xShape = shapeOf(operand);
  if (!gShape || !xShape)
    return std::nullopt;
  InferContext scratch = fn.ctx;
  BroadcastAlignment align;
  if (!inferBroadcast(scratch, *gShape, *xShape, &align))
    return failBuilt("a sum over its broadcast dims", "no alignment");
  bool identity = xShape->size() == gShape->size();
  for (size_t j = 0; j < xShape->size() && identity; ++j) {
    identity = align.rhs[j] == static_cast<int>(j);
    if (identity && (*xShape)[j].broadcastable &&
        fn.ctx.prove((*xShape)[j].size, (*gShape)[j].size) !=
            InferContext::Proof::Equal)
      return fail(fmt::format("grad through a '#' dim that may broadcast "
                              "({}) is not supported; give it its size",
                              (*xShape)[j].str()));
  }
  if (identity)
    return g;
  std::vector<std::string> names;
  for (size_t i = 0; i < gShape->size(); ++i)
    names.push_back(freshAxis());
  std::vector<std::string> kept;
  for (size_t j = 0; j < xShape->size(); ++j)
    kept.push_back(align.rhs[j] >= 0 ? names[align.rhs[j]] : "1");
  return transform(
      OpKind::Reduce, g,
      fmt::format("{} -> {}", fmt::join(names, " "), fmt::join(kept, " ")), {});
}

bool Differentiator::accumulate(unsigned value, unsigned g) {
  g = cast(g, dtypeOf(value));
  auto it = adjoint.find(value);
  if (it == adjoint.end()) {
    adjoint.emplace(value, g);
    return true;
  }
  auto sum = ew(F::Add, {it->second, g});
  if (!sum)
    return false;
  it->second = *sum;
  return true;
}

/// The text of one side of a pattern, each axis through `name`.
template <typename Name>
std::string sideText(const Groups &groups, Name &name) {
  std::vector<std::string> dims;
  for (const auto &group : groups) {
    if (group.empty()) {
      dims.push_back("1");
      continue;
    }
    std::vector<std::string> axes;
    for (const auto &a : group)
      axes.push_back(name(a));
    dims.push_back(
        axes.size() == 1 ? axes[0] : fmt::format("({})", fmt::join(axes, " ")));
  }
  return fmt::format("{}", fmt::join(dims, " "));
}

/// Renames a forward pattern's axes for a backward pattern: names stay
/// (readable IR), numbers and names an ellipsis expanded to get fresh ones,
/// and every axis in a composition, or renamed, gets its size as a keyword.
class AxisNames {
public:
  AxisNames(const std::map<std::string, SizeExpr> &sizes,
            std::function<std::string()> fresh)
      : sizes(sizes), fresh(std::move(fresh)) {}
  std::string operator()(const std::string &axis) {
    auto it = names.find(axis);
    if (it != names.end())
      return it->second;
    std::string name = isValidAxisName(axis) ? axis : fresh();
    if (name != axis)
      sized.insert(axis);
    names.emplace(axis, name);
    return name;
  }
  /// Keyword sizes for the axes of `sides` that need one: those in a
  /// composition, renamed ones, and those not in `bound` when given (the
  /// new axes of a repeat back).
  std::vector<SizeArg> sizeArgs(const std::vector<const Groups *> &sides,
                                const std::set<std::string> *bound = nullptr) {
    std::set<std::string> want;
    for (const Groups *side : sides)
      for (const auto &group : *side)
        for (const auto &a : group)
          if (group.size() > 1 || sized.count(a) || (bound && !bound->count(a)))
            want.insert(a);
    std::vector<SizeArg> out;
    for (const auto &a : want)
      if (auto it = sizes.find(a); it != sizes.end())
        out.push_back(SizeArg{(*this)(a), it->second});
    return out;
  }

private:
  const std::map<std::string, SizeExpr> &sizes;
  std::function<std::string()> fresh;
  std::map<std::string, std::string> names;
  std::set<std::string> sized;
};

bool Differentiator::einsumRule(const CheckedOp &op, unsigned dy) {
  const EinsumInfo &info = *op.einsum;
  DType operandType = dtypeOf(op.operands[0]);
  unsigned g = cast(dy, operandType);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    unsigned x = op.operands[i];
    if (!active.count(x))
      continue;
    target(op, x);
    AxisNames name(info.axisSizes, [this] { return freshAxis(); });
    std::set<std::string> seen,
        available(info.outputAxes.begin(), info.outputAxes.end());
    // A diagonal (`i i` in this operand): the gradient lands on it only, so
    // each repeat of an axis gets a fresh name and the identity of the two
    // joins the gradient einsum. The identity carries both axes, so both
    // reach the result (a repeat of the first would spread the gradient
    // over the whole of `i i` instead of its diagonal).
    Groups groups = info.operandGroups[i];
    std::vector<std::pair<std::string, std::string>> diagonals;
    for (auto &group : groups)
      for (auto &axis : group)
        if (!seen.insert(axis).second) {
          diagonals.push_back({axis, freshAxis()});
          available.insert(axis);
          axis = diagonals.back().second;
          available.insert(axis);
        }
    std::vector<unsigned> inputs = {g};
    std::vector<const Groups *> sides = {&info.outputGroups};
    std::vector<std::string> texts = {sideText(info.outputGroups, name)};
    for (size_t j = 0; j < op.operands.size(); ++j) {
      if (j == i)
        continue;
      inputs.push_back(op.operands[j]);
      sides.push_back(&info.operandGroups[j]);
      texts.push_back(sideText(info.operandGroups[j], name));
      available.insert(info.operandAxes[j].begin(), info.operandAxes[j].end());
    }
    for (const auto &[axis, twin] : diagonals) {
      auto eye = identity(info.axisSizes.at(axis), operandType);
      if (!eye)
        return false;
      inputs.push_back(*eye);
      texts.push_back(fmt::format("{} {}", name(axis), twin));
    }
    // The operand's axes that reach the gradient einsum, in its order; the
    // others (summed in this operand alone, or its 1 dims) come back by a
    // repeat.
    Groups flat;
    bool exact = true;
    for (const auto &group : groups) {
      exact &= group.size() == 1;
      for (const auto &axis : group) {
        if (available.count(axis))
          flat.push_back({axis});
        else
          exact = false;
      }
    }
    std::string pattern =
        fmt::format("{} -> {}", fmt::join(texts, ", "), sideText(flat, name));
    auto dx = einsum(inputs, pattern, name.sizeArgs(sides), op.acc);
    if (!dx)
      return false;
    if (!exact) {
      AxisNames rename(info.axisSizes, [this] { return freshAxis(); });
      std::string back = fmt::format("{} -> {}", sideText(flat, rename),
                                     sideText(groups, rename));
      // The repeat's new axes (those not in `flat`) need their sizes too.
      dx = transform(OpKind::Repeat, *dx, back,
                     rename.sizeArgs({&groups}, &available));
      if (!dx)
        return false;
    }
    if (!accumulate(x, *dx))
      return false;
  }
  return true;
}

bool Differentiator::transformRule(const CheckedOp &op, unsigned dy) {
  const TransformInfo &info = *op.transform;
  unsigned x = op.operands[0];
  target(op, x);
  AxisNames name(info.axisSizes, [this] { return freshAxis(); });
  std::string in = sideText(info.inputGroups, name);
  std::string out = sideText(info.outputGroups, name);
  std::vector<SizeArg> sizes =
      name.sizeArgs({&info.inputGroups, &info.outputGroups});
  std::optional<unsigned> dx;
  switch (op.kind) {
  case OpKind::Rearrange:
    dx = transform(OpKind::Rearrange, dy, out + " -> " + in, sizes);
    break;
  case OpKind::Repeat:
    dx = transform(OpKind::Reduce, dy, out + " -> " + in, sizes);
    break;
  case OpKind::Reduce: {
    // The input's axes the reduce removed: a repeat puts them back, with
    // their sizes.
    std::set<std::string> kept(info.outputAxes.begin(), info.outputAxes.end());
    sizes = name.sizeArgs({&info.inputGroups, &info.outputGroups}, &kept);
    std::string back = out + " -> " + in;
    DType t = dtypeOf(dy);
    switch (op.reduction) {
    case ReduceKind::Sum:
      dx = transform(OpKind::Repeat, dy, back, sizes);
      break;
    case ReduceKind::Mean: {
      SizeExpr n = SizeExpr::constant(1);
      for (const auto &group : info.inputGroups)
        for (const auto &a : group)
          if (!kept.count(a))
            n = n * info.axisSizes.at(a);
      auto spread = transform(OpKind::Repeat, dy, back, sizes);
      auto total = spread ? count(n, t) : std::nullopt;
      if (total)
        dx = ew(F::Div, {*spread, *total});
      break;
    }
    case ReduceKind::Var: {
      // d var / dx = 2 (x - mean) / N, times the output's gradient spread
      // back; with acc=, in the accumulation dtype (as the reduce computed).
      SizeExpr n = SizeExpr::constant(1);
      for (const auto &group : info.inputGroups)
        for (const auto &a : group)
          if (!kept.count(a))
            n = n * info.axisSizes.at(a);
      unsigned xt = cast(x, t);
      auto mean = transform(OpKind::Reduce, xt, in + " -> " + out, sizes,
                            ReduceKind::Mean);
      if (!mean)
        return false;
      auto meanBack = transform(OpKind::Repeat, *mean, back, sizes);
      auto spread = transform(OpKind::Repeat, dy, back, sizes);
      if (!meanBack || !spread)
        return false;
      auto dev = ew(F::Sub, {xt, *meanBack});
      auto scaled = dev ? ew(F::Mul, {*dev, constant(2, t)}) : std::nullopt;
      auto weighted = scaled ? ew(F::Mul, {*scaled, *spread}) : std::nullopt;
      auto total = weighted ? count(n, t) : std::nullopt;
      if (total)
        dx = ew(F::Div, {*weighted, *total});
      break;
    }
    case ReduceKind::Max:
    case ReduceKind::Min: {
      // As torch.amax/amin: the gradient is shared evenly by the elements
      // equal to the extremum.
      unsigned y = op.results[0];
      auto yBack = transform(OpKind::Repeat, y, back, sizes);
      if (!yBack)
        return false;
      // With acc=, the extremum is of the accumulation dtype: the input is
      // compared in it (as the reduce converted it).
      auto hit = ew(F::Eq, {cast(x, dtypeOf(y)), *yBack});
      if (!hit)
        return false;
      unsigned mask = cast(*hit, t);
      auto ties = transform(OpKind::Reduce, mask, in + " -> " + out, sizes);
      if (!ties)
        return false;
      auto share = ew(F::Div, {dy, *ties});
      if (!share)
        return false;
      auto spread = transform(OpKind::Repeat, *share, back, sizes);
      if (spread)
        dx = ew(F::Mul, {mask, *spread});
      break;
    }
    case ReduceKind::Prod:
      return fail("grad of reduce \"prod\" is not supported (its gradient "
                  "divides by the inputs, which may be 0); write it as "
                  "exp(reduce(log(x), ..., \"sum\")) for positive inputs")
          .no();
    case ReduceKind::Any:
    case ReduceKind::All:
      return true; // bool: nothing to differentiate
    }
    break;
  }
  case OpKind::Einsum:
  case OpKind::Pack:
  case OpKind::Unpack:
  case OpKind::Elementwise:
  case OpKind::Cast:
  case OpKind::Constant:
  case OpKind::Size:
  case OpKind::Arange:
  case OpKind::Take:
  case OpKind::Slice:
  case OpKind::ScatterAdd:
    return fail(fmt::format("grad of {} is not a rearrange, reduce or repeat "
                            "rule",
                            opKindName(op.kind)))
        .no();
  }
  if (!dx)
    return false;
  return accumulate(x, *dx);
}

std::optional<unsigned> Differentiator::localGradient(const CheckedOp &op,
                                                      unsigned i, unsigned dy) {
  using Opt = std::optional<unsigned>;
  const auto &xs = op.operands;
  Opt a = xs[0], b = xs.size() > 1 ? Opt(xs[1]) : std::nullopt,
      y = op.results[0], g = dy;
  DType t = dtypeOf(op.results[0]);
  // Each step stops at the first failure (error is then set).
  auto f = [&](F fn, std::initializer_list<Opt> args) -> Opt {
    std::vector<unsigned> ids;
    for (const Opt &arg : args) {
      if (!arg)
        return std::nullopt;
      ids.push_back(*arg);
    }
    return ew(fn, ids);
  };
  auto c = [&](double v) -> Opt { return constant(v, t); };
  auto mul = [&](Opt p, Opt q) { return f(F::Mul, {p, q}); };
  auto add = [&](Opt p, Opt q) { return f(F::Add, {p, q}); };
  auto sub = [&](Opt p, Opt q) { return f(F::Sub, {p, q}); };
  auto div = [&](Opt p, Opt q) { return f(F::Div, {p, q}); };
  auto mask = [&](F cmp, Opt p, Opt q) -> Opt {
    Opt m = f(cmp, {p, q});
    if (!m)
      return std::nullopt;
    return cast(*m, t);
  };
  switch (op.fn) {
  case F::Add:
    return g;
  case F::Sub:
    return i == 0 ? g : f(F::Neg, {g});
  case F::Mul:
    return mul(g, i == 0 ? b : a);
  case F::Div:
    if (i == 0)
      return div(g, b);
    return f(F::Neg, {div(mul(g, y), b)}); // d(a/b)/db = -y/b
  case F::Pow:
    if (i == 0) // b * a ** (b - 1)
      return mul(g, mul(b, f(F::Pow, {a, sub(b, c(1))})));
    return mul(g, mul(y, f(F::Log, {a})));
  case F::Neg:
    return f(F::Neg, {g});
  case F::Minimum:
  case F::Maximum: {
    // As torch.minimum/maximum: ties share the gradient equally.
    F wins = op.fn == F::Maximum ? (i == 0 ? F::Gt : F::Lt)
                                 : (i == 0 ? F::Lt : F::Gt);
    return mul(g, add(mask(wins, a, b), mul(mask(F::Eq, a, b), c(0.5))));
  }
  case F::Clip: // as torch.clamp: x inside [lo, hi]; lo and hi where they bind
    if (i == 0)
      return mul(g, mul(mask(F::Ge, a, b), mask(F::Le, a, Opt(xs[2]))));
    return mul(g, i == 1 ? mask(F::Lt, a, b) : mask(F::Gt, a, Opt(xs[2])));
  case F::Abs:
    return mul(g, f(F::Sign, {a}));
  case F::Square:
    return mul(g, mul(a, c(2)));
  case F::Mod: // a - floor(a / b) * b
    if (i == 0)
      return g;
    return f(F::Neg, {mul(g, f(F::FloorDiv, {a, b}))});
  case F::Exp:
    return mul(g, y);
  case F::Log:
    return div(g, a);
  case F::Sqrt:
    return div(g, mul(y, c(2)));
  case F::Rsqrt: // -x^(-3/2) / 2 = -y / (2x)
    return f(F::Neg, {div(mul(g, y), mul(a, c(2)))});
  case F::Tanh:
    return mul(g, sub(c(1), mul(y, y)));
  case F::Relu: // as torch: 0 at 0
    return mul(g, mask(F::Gt, y, c(0)));
  case F::Sigmoid:
    return mul(g, mul(y, sub(c(1), y)));
  case F::Silu: { // s (1 + x (1 - s))
    Opt s = f(F::Sigmoid, {a});
    return mul(g, mul(s, add(c(1), mul(a, sub(c(1), s)))));
  }
  case F::Softplus:
    return mul(g, f(F::Sigmoid, {a}));
  case F::Gelu: { // Phi(x) + x phi(x)
    Opt phi = mul(f(F::Exp, {mul(mul(a, a), c(-0.5))}),
                  c(0.3989422804014327)); // 1 / sqrt(2 pi)
    Opt cdf =
        mul(add(c(1), f(F::Erf, {mul(a, c(0.7071067811865476))})), c(0.5));
    return mul(g, add(cdf, mul(a, phi)));
  }
  case F::GeluTanh: {
    // u = k (x + 0.044715 x^3), t = tanh u:
    // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 * 0.044715 x^2)
    const double k = 0.7978845608028654; // sqrt(2 / pi)
    Opt x2 = mul(a, a);
    Opt th = f(F::Tanh, {mul(add(a, mul(mul(x2, a), c(0.044715))), c(k))});
    Opt left = mul(add(c(1), th), c(0.5));
    Opt du = mul(add(c(1), mul(x2, c(3 * 0.044715))), c(k));
    Opt right = mul(mul(mul(a, c(0.5)), sub(c(1), mul(th, th))), du);
    return mul(g, add(left, right));
  }
  case F::Sin:
    return mul(g, f(F::Cos, {a}));
  case F::Cos:
    return f(F::Neg, {mul(g, f(F::Sin, {a}))});
  case F::Erf: // 2 / sqrt(pi) exp(-x^2)
    return mul(g,
               mul(f(F::Exp, {f(F::Neg, {mul(a, a)})}), c(1.1283791670955126)));
  case F::Where:
    return i == 1 ? f(F::Where, {a, g, c(0)}) : f(F::Where, {a, c(0), g});
  // The table's gradient column says no gradient flows through these
  // (GradientRule::Zero or NotDifferentiable): elementwiseRule does not ask.
  case F::FloorDiv:
  case F::Sign:
  case F::Floor:
  case F::Ceil:
  case F::Round:
  case F::Lt:
  case F::Le:
  case F::Gt:
  case F::Ge:
  case F::Eq:
  case F::Ne:
  case F::And:
  case F::Or:
  case F::Not:
    break;
  }
  // Only a function whose row says GradientRule::Rule gets here.
  return fail(fmt::format("grad of '{}' has no rule in Autodiff although the "
                          "elementwise table says it has one",
                          elementwiseInfo(op.fn).name));
}

bool Differentiator::elementwiseRule(const CheckedOp &op, unsigned dy) {
  if (!isFloat(dtypeOf(op.results[0])))
    return true;
  for (unsigned i = 0; i < op.operands.size(); ++i) {
    unsigned x = op.operands[i];
    if (!active.count(x) || (op.fn == F::Where && i == 0))
      continue;
    target(op, x);
    // The table's gradient column decides; a function with no rule is
    // refused by name, never given a zero gradient.
    const ElementwiseInfo &info = elementwiseInfo(op.fn);
    switch (info.gradientRule) {
    case GradientRule::Rule:
      break;
    case GradientRule::Zero:
      continue; // piecewise constant: 0 wherever the derivative exists
    case GradientRule::NotDifferentiable:
      return fail(fmt::format("grad of '{}' is not defined: {}", info.name,
                              info.gradient))
          .no();
    }
    auto local = localGradient(op, i, dy);
    if (error || !local)
      return false;
    auto g = unbroadcast(*local, x);
    if (!g || !accumulate(x, *g))
      return false;
  }
  return true;
}

bool Differentiator::packRule(const CheckedOp &op, unsigned dy) {
  target(op, op.operands[0]);
  // dy has the pack's dtype (accumulate casts to it), its operands' one.
  auto results = built(build().unpack(dy, op.parsed, op.packParts));
  if (!results)
    return false;
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (active.count(op.operands[i]))
      if (!accumulate(op.operands[i], (*results)[i]))
        return false;
  return true;
}

bool Differentiator::unpackRule(const CheckedOp &op) {
  unsigned x = op.operands[0];
  target(op, x);
  std::vector<unsigned> parts;
  for (unsigned r : op.results) {
    auto it = adjoint.find(r);
    std::optional<unsigned> g =
        it != adjoint.end() ? std::optional<unsigned>(it->second) : zeros(r);
    if (!g)
      return false;
    parts.push_back(*g);
  }
  auto dx = pack(parts, op.parsed, dtypeOf(x));
  return dx && accumulate(x, *dx);
}

bool Differentiator::sliceRule(const CheckedOp &op, unsigned dy) {
  unsigned x = op.operands[0];
  target(op, x);
  auto shape = shapeOf(x);
  if (!shape)
    return false;
  size_t axis = op.sliceAxis < 0 ? shape->size() + op.sliceAxis
                                 : static_cast<size_t>(op.sliceAxis);
  // The gradient is dy between zeros: cat([zeros, dy, zeros]) on the axis.
  std::vector<std::string> names;
  for (size_t d = 0; d < shape->size(); ++d)
    names.push_back(d == axis ? "*" : freshAxis());
  std::vector<unsigned> parts;
  auto zerosAlong = [&](const SizeExpr &n) -> bool {
    if (n.constantValue() == Int(0))
      return true;
    Shape s = *shape;
    s[axis] = Dim::ofSize(n);
    auto z = zerosOf(s, dtypeOf(x));
    if (z)
      parts.push_back(*z);
    return z.has_value();
  };
  if (!zerosAlong(op.sliceStart))
    return false;
  parts.push_back(dy);
  if (!zerosAlong((*shape)[axis].size - op.sliceStop))
    return false;
  std::string pattern = fmt::format("{}", fmt::join(names, " "));
  auto parsed = parsePattern(pattern, PatternUse::Pack);
  if (!parsed)
    return failBuilt("a cat", parsed.error().message).no();
  auto dx = pack(parts, *parsed, dtypeOf(x));
  return dx && accumulate(x, *dx);
}

/// take's adjoint: the table's gradient is zeros with dy added at the ids
/// (a scatter-add, O(updates), not a one-hot product over the vocabulary);
/// a row gathered several times gets the sum of its dys. The ids, integers,
/// have no gradient.
bool Differentiator::takeRule(const CheckedOp &op, unsigned dy) {
  // A scatter-add (a second-order gradient) is linear in its updates: their
  // gradient is the take of dy at the same ids.
  if (op.kind == OpKind::ScatterAdd) {
    unsigned updates = op.operands[1];
    if (!active.count(updates) || !isFloat(dtypeOf(updates)))
      return true;
    target(op, updates);
    auto gathered = built(
        build().takeAt(cast(dy, dtypeOf(updates)), op.operands[0], op.axis));
    return gathered && accumulate(updates, *gathered);
  }
  unsigned table = op.operands[0];
  if (!active.count(table) || !isFloat(dtypeOf(table)))
    return true;
  target(op, table);
  if (!shapeOf(table))
    return false;
  auto scattered = built(build().scatterAdd(
      op.operands[1], cast(dy, dtypeOf(table)), type(table), op.axis));
  return scattered && accumulate(table, *scattered);
}

bool Differentiator::differentiate(const CheckedOp &op) {
  atLoc = op.loc;
  atSite = op.callSite;
  atWhat = op.kind == OpKind::Reduce
               ? fmt::format("reduce \"{}\"", reduceKindName(op.reduction))
               : std::string(opName(op.kind, op.fn));
  if (op.kind == OpKind::Unpack)
    return unpackRule(op);
  auto it = adjoint.find(op.results[0]);
  if (it == adjoint.end())
    return true;
  unsigned dy = it->second;
  switch (op.kind) {
  case OpKind::Einsum:
    return einsumRule(op, dy);
  case OpKind::Rearrange:
  case OpKind::Repeat:
  case OpKind::Reduce:
    return transformRule(op, dy);
  case OpKind::Elementwise:
    return elementwiseRule(op, dy);
  case OpKind::Cast:
    target(op, op.operands[0]);
    return !isFloat(dtypeOf(op.operands[0])) ||
           accumulate(op.operands[0], cast(dy, dtypeOf(op.operands[0])));
  case OpKind::Pack:
    return packRule(op, dy);
  case OpKind::Slice:
    return sliceRule(op, dy);
  case OpKind::Take:
  case OpKind::ScatterAdd:
    return takeRule(op, dy);
  case OpKind::Unpack:
  case OpKind::Constant:
  case OpKind::Size:
  case OpKind::Arange:
    return true;
  }
  return true;
}

GradientResult Differentiator::run(unsigned loss,
                                   const std::vector<unsigned> &wrt,
                                   SourceLoc at) {
  GradientResult result;
  // The ops the gradient walks: those before the loss's, on a path from a
  // wrt value to it.
  size_t end = 0;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned r : fn.ops[i].results)
      if (r == loss)
        end = i + 1;
  active = params;
  for (size_t i = 0; i < end; ++i) {
    const CheckedOp &op = fn.ops[i];
    bool in = std::any_of(op.operands.begin(), op.operands.end(),
                          [&](unsigned v) { return active.count(v); });
    if (in)
      for (unsigned r : op.results)
        if (isFloat(dtypeOf(r)))
          active.insert(r);
  }
  atLoc = at;
  atPhase = GradPhase::DataGrad;
  atTarget = static_cast<int>(loss);
  if (active.count(loss))
    adjoint.emplace(loss, constant(1, dtypeOf(loss)));
  for (size_t i = end; i-- > 0;) {
    CheckedOp op = fn.ops[i]; // fn.ops grows below
    bool touched = std::any_of(op.results.begin(), op.results.end(),
                               [&](unsigned r) { return adjoint.count(r); });
    if (!touched)
      continue;
    if (!differentiate(op)) {
      result.error = error;
      return result;
    }
  }
  // A rule that failed inside a step it could not report through its
  // return value still leaves its error: never return gradients then.
  if (error) {
    result.error = error;
    return result;
  }
  for (unsigned w : wrt) {
    atLoc = at;
    atSite = -1;
    atPhase = GradPhase::WeightGrad;
    atTarget = static_cast<int>(w);
    auto it = adjoint.find(w);
    std::optional<unsigned> g =
        it != adjoint.end() ? std::optional<unsigned>(it->second) : zeros(w);
    if (!g) {
      result.error = error;
      return result;
    }
    result.grads.push_back(*g);
  }
  if (error)
    result.error = error;
  return result;
}

} // namespace

GradientResult appendGradient(CheckedFunction &fn, unsigned loss,
                              const std::vector<unsigned> &wrt, SourceLoc at) {
  return Differentiator(fn, wrt).run(loss, wrt, at);
}

std::vector<unsigned> savedForBackward(const CheckedFunction &fn) {
  std::set<unsigned> backward, saved;
  for (const CheckedOp &op : fn.ops)
    if (op.phase != GradPhase::Forward)
      backward.insert(op.results.begin(), op.results.end());
  for (const CheckedOp &op : fn.ops)
    if (op.phase != GradPhase::Forward)
      for (unsigned v : op.operands)
        if (!backward.count(v))
          saved.insert(v);
  return {saved.begin(), saved.end()};
}

} // namespace ein

namespace ein {

size_t recomputeCheapValues(CheckedFunction &fn) {
  auto isBackward = [](const CheckedOp &op) {
    return op.phase != GradPhase::Forward;
  };
  std::vector<unsigned> savedList = savedForBackward(fn);
  std::set<unsigned> saved(savedList.begin(), savedList.end());
  std::set<unsigned> inputs(fn.params.begin(), fn.params.end());
  std::map<unsigned, size_t> producer;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned r : fn.ops[i].results)
      producer[r] = i;
  auto isScalar = [&](unsigned v) {
    auto it = producer.find(v);
    return it != producer.end() &&
           (fn.ops[it->second].kind == OpKind::Constant ||
            fn.ops[it->second].kind == OpKind::Size);
  };
  // The candidates, in forward order: an elementwise op whose operands the
  // backward holds anyway (saved, inputs, numbers), or recomputes.
  std::map<unsigned, unsigned> copyOf; // forward value -> its recomputation
  std::vector<std::pair<size_t, CheckedOp>> inserts; // before op index
  for (unsigned v : savedList) {
    auto it = producer.find(v);
    if (it == producer.end())
      continue;
    const CheckedOp &op = fn.ops[it->second];
    if (op.kind != OpKind::Elementwise || isBackward(op))
      continue;
    bool cheap =
        std::all_of(op.operands.begin(), op.operands.end(), [&](unsigned x) {
          return saved.count(x) || inputs.count(x) || isScalar(x);
        });
    if (!cheap)
      continue;
    // Before the first backward op reading it.
    size_t first = fn.ops.size();
    for (size_t i = 0; i < fn.ops.size() && first == fn.ops.size(); ++i)
      if (isBackward(fn.ops[i]) &&
          std::count(fn.ops[i].operands.begin(), fn.ops[i].operands.end(), v))
        first = i;
    CheckedOp again = op;
    again.phase = GradPhase::Recompute;
    again.gradOf = static_cast<int>(v);
    for (unsigned &x : again.operands)
      if (auto c = copyOf.find(x); c != copyOf.end())
        x = c->second;
    fn.values.push_back(fn.values[v]);
    unsigned copy = static_cast<unsigned>(fn.values.size() - 1);
    again.results = {copy};
    copyOf[v] = copy;
    inserts.push_back({first, std::move(again)});
  }
  for (CheckedOp &op : fn.ops)
    if (isBackward(op))
      for (unsigned &x : op.operands)
        if (auto c = copyOf.find(x); c != copyOf.end())
          x = c->second;
  // A recomputation read by another one must come before that one's place
  // too (the readers come later in forward order: walk back).
  for (size_t k = inserts.size(); k-- > 0;)
    for (size_t j = k + 1; j < inserts.size(); ++j)
      if (std::count(inserts[j].second.operands.begin(),
                     inserts[j].second.operands.end(),
                     inserts[k].second.results[0]))
        inserts[k].first = std::min(inserts[k].first, inserts[j].first);
  // Insert each before its first reader, in forward order among equals.
  std::stable_sort(inserts.begin(), inserts.end(),
                   [](auto &a, auto &b) { return a.first < b.first; });
  for (size_t k = inserts.size(); k-- > 0;)
    fn.ops.insert(fn.ops.begin() + inserts[k].first,
                  std::move(inserts[k].second));
  return copyOf.size();
}

} // namespace ein
