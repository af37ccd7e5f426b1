// The rules of the elementwise functions, astype (Cast) and dropout: the
// checker's calls, the builder's bodies, the cost and the gradient.
#include "../BuildErrors.h"
#include "../Differentiator.h"
#include "../FunctionChecker.h"
#include "../LayoutInference.h"
#include "ein/Sema/OpCost.h"

#include <fmt/format.h>

namespace ein::sema {

// --- Checker ---

namespace {

/// astype(x, dtype): x converted, or a number, size or deferred value
/// computed in `dtype`. A free function of the checker's public API, as a
/// new op's checker is.
std::optional<Operand> checkAstypeCall(FunctionChecker &checker,
                                       const Expr &e) {
  if (e.args.size() != 2 || e.args[1]->kind != Expr::Kind::Name) {
    checker.diagnostics().error(
        e.loc, "astype expects (tensor, dtype), e.g. astype(x, f32)", e.length);
    return std::nullopt;
  }
  auto dtype = parseDType(e.args[1]->text);
  if (!dtype) {
    checker.diagnostics().error(e.args[1]->loc,
                                "unknown dtype '" + e.args[1]->text +
                                    "'; expected one of " + kDTypeList,
                                e.args[1]->length);
    return std::nullopt;
  }
  auto value = checker.eval(*e.args[0]);
  if (!value)
    return std::nullopt;
  if (value->isScalar()) {
    // astype(B * K, f32), astype(1.0 / sqrt(d), f32): the number, size or
    // deferred value computed in `dtype`.
    auto id = checker.scalarAs(*value, *dtype, *e.args[0]);
    if (!id)
      return std::nullopt;
    return checker.single(*id);
  }
  if (!checker.isSingleTensor(*value)) {
    checker.diagnostics().error(e.args[0]->loc, "expected a tensor here",
                                e.args[0]->length);
    return std::nullopt;
  }
  return checker.single(
      checker.builder(e.loc).astype(value->values[0], *dtype));
}

/// dropout(x, p, key): p a number literal in [0, 1) (checked here), or a
/// rank-0 float value (a parameter, a computed value: checked at run time),
/// x and the key tensors; the builder checks their dtypes and ranks.
std::optional<Operand> checkDropoutCall(FunctionChecker &checker,
                                        const Expr &e) {
  const char *usage = "dropout expects (x, p, key), e.g. dropout(h, 0.1, "
                      "key) with key an i64[\"\"] tensor";
  if (e.args.size() != 3 || !e.keywords.empty()) {
    checker.diagnostics().error(e.loc, usage, e.length);
    return std::nullopt;
  }
  auto x = checker.eval(*e.args[0]);
  if (!x)
    return std::nullopt;
  if (!checker.isSingleTensor(*x)) {
    checker.diagnostics().error(
        e.args[0]->loc, "dropout's input must be a tensor", e.args[0]->length);
    return std::nullopt;
  }
  const Expr &pArg = *e.args[1];
  auto p = checker.eval(pArg);
  if (!p)
    return std::nullopt;
  double rate = 0;
  std::optional<unsigned> rateValue; // a run-time p
  if (p->isLiteral) {
    rate = p->literal.value;
    if (!(rate >= 0 && rate < 1)) {
      checker.diagnostics().error(
          pArg.loc,
          fmt::format("dropout's p must be in [0, 1), not {}{}", rate,
                      rate == 1 ? " (p = 1 drops every element and its scale "
                                  "1 / (1 - p) is infinite)"
                                : ""),
          literalSpan(pArg));
      return std::nullopt;
    }
  } else if (p->isScalar()) {
    // A number expression or a size: an f64 value, as a literal p is.
    rateValue = checker.scalarAs(*p, DType::F64, pArg);
    if (!rateValue)
      return std::nullopt;
  } else if (checker.isSingleTensor(*p)) {
    rateValue = p->values[0];
  } else {
    checker.diagnostics().error(
        pArg.loc,
        fmt::format("dropout's p must be a number in [0, 1) or a rank-0 "
                    "float tensor; {}",
                    usage),
        pArg.length);
    return std::nullopt;
  }
  auto key = checker.eval(*e.args[2]);
  if (!key)
    return std::nullopt;
  if (!checker.isSingleTensor(*key)) {
    checker.diagnostics().error(
        e.args[2]->loc,
        "dropout's key must be an i64[\"\"] tensor (a parameter of the "
        "function, e.g. key: i64[\"\"]), not a number",
        e.args[2]->length);
    return std::nullopt;
  }
  ProgramBuilder builder = checker.builder(e.loc);
  BuildOr<unsigned> value =
      rateValue ? builder.dropout(x->values[0], *rateValue, key->values[0])
                : builder.dropout(x->values[0], rate, key->values[0]);
  // The builder's operands are (x, key, p), the call's (x, p, key).
  if (!value && value.error().error.anchor == ShapeError::Anchor::Operand &&
      value.error().error.index >= 1) {
    BuildError moved = value.error();
    moved.error.index = moved.error.index == 1 ? 2 : 1;
    value = std::move(moved);
  }
  auto built = checker.builtAlong(std::move(value), e, pArg);
  if (!built)
    return std::nullopt;
  return checker.single(*built);
}

} // namespace

// No call of its own: each function of the elementwise table is called by
// its own name, or written as an operator (FunctionChecker::call).
const std::vector<SurfaceCall> &surfaceCallsOfElementwise() {
  static const std::vector<SurfaceCall> calls;
  return calls;
}

const std::vector<SurfaceCall> &surfaceCallsOfCast() {
  static const std::vector<SurfaceCall> calls = {
      {"astype", 9, [](FunctionChecker &checker, const Expr &call) {
         return checkAstypeCall(checker, call);
       }}};
  return calls;
}

const std::vector<SurfaceCall> &surfaceCallsOfDropout() {
  static const std::vector<SurfaceCall> calls = {
      {"dropout", 12, [](FunctionChecker &checker, const Expr &call) {
         return checkDropoutCall(checker, call);
       }}};
  return calls;
}

} // namespace ein::sema

namespace ein {

// --- Builder ---

unsigned ProgramBuilder::cast(unsigned x, DType dtype) {
  if (type(x).dtype == dtype)
    return x;
  return astype(x, dtype);
}

unsigned ProgramBuilder::astype(unsigned x, DType dtype) {
  CheckedOp op;
  op.kind = OpKind::Cast;
  op.operands = {x};
  return append(std::move(op), TensorType{type(x).shape, dtype});
}

BuildOr<unsigned> ProgramBuilder::elementwise(ElementwiseFn f,
                                              std::vector<unsigned> xs) {
  const ElementwiseInfo &info = elementwiseInfo(f);
  std::string name(info.name);
  size_t first = info.firstIsCondition ? 1 : 0;
  DType dtype = type(xs[first]).dtype;
  for (size_t i = 0; i < xs.size(); ++i) {
    DType t = type(xs[i]).dtype;
    if (auto why = elementwiseOperandError(info, unsigned(i), t))
      return build::mixedDTypes(*why, unsigned(i), name, "");
    if (i >= first && t != dtype) {
      // Named as written: an operator by its symbol ('+'), a function by
      // its name; the mismatch is the whole call's.
      std::string what =
          info.symbol.empty() ? name : fmt::format("'{}'", info.symbol);
      BuildError error = build::failure(
          ShapeError::atOp(fmt::format("operands of {} have different dtypes "
                                       "({} and {}); convert one with astype",
                                       what, dtypeName(dtype), dtypeName(t))),
          name, "");
      error.rule = BuildError::Rule::OperandDType;
      return error;
    }
  }
  Shape shape = type(xs[0]).shape;
  for (size_t i = 1; i < xs.size(); ++i) {
    auto joined = inferBroadcast(fn.ctx, shape, type(xs[i]).shape);
    if (!joined) {
      ShapeError error = joined.error();
      error.anchor = ShapeError::Anchor::Operand;
      error.index = error.index == 0 && i == 1 ? 0 : unsigned(i);
      return build::failure(std::move(error), name, "");
    }
    shape = *joined;
  }
  CheckedOp op;
  op.kind = OpKind::Elementwise;
  op.fn = f;
  op.operands = std::move(xs);
  return append(std::move(op),
                TensorType{shape, elementwiseResultDType(info, dtype)});
}

namespace {

/// dropout's checks of x and the key, shared by its two forms.
std::optional<BuildError> dropoutOperandError(const TensorType &x,
                                              const TensorType &key) {
  auto refuse = [](std::string message, unsigned operand) {
    return BuildError{ShapeError::atOperand(std::move(message), operand),
                      "dropout", ""};
  };
  if (!isFloat(x.dtype))
    return refuse(fmt::format("dropout's input must be a float tensor, not "
                              "{}; convert it with astype",
                              dtypeName(x.dtype)),
                  0);
  if (key.dtype != DType::I64 || !key.shape.empty())
    return refuse(fmt::format("dropout's key must be an i64 scalar tensor "
                              "(i64[\"\"]), not {}[\"{}\"]",
                              dtypeName(key.dtype), shapeStr(key.shape)),
                  1);
  return std::nullopt;
}

} // namespace

BuildOr<unsigned> ProgramBuilder::dropout(unsigned x, double p, unsigned key) {
  if (auto error = dropoutOperandError(type(x), type(key)))
    return *error;
  if (!(p >= 0 && p < 1)) {
    BuildError error =
        build::failure(ShapeError::atOp(fmt::format(
                           "dropout's p must be in [0, 1), not {}", p)),
                       "dropout", "");
    return error;
  }
  CheckedOp op;
  op.kind = OpKind::Dropout;
  op.constant = p;
  op.operands = {x, key};
  return append(std::move(op), TensorType{type(x).shape, type(x).dtype});
}

BuildOr<unsigned> ProgramBuilder::dropout(unsigned x, unsigned p,
                                          unsigned key) {
  if (auto error = dropoutOperandError(type(x), type(key)))
    return *error;
  const TensorType &rate = type(p);
  if (!isFloat(rate.dtype) || !rate.shape.empty())
    return BuildError{
        ShapeError::atOperand(
            fmt::format("dropout's p must be a number or a rank-0 float "
                        "tensor (f32[\"\"], f64[\"\"]), not {}[\"{}\"]",
                        dtypeName(rate.dtype), shapeStr(rate.shape)),
            2),
        "dropout", ""};
  CheckedOp op;
  op.kind = OpKind::Dropout;
  op.operands = {x, key, p};
  return append(std::move(op), TensorType{type(x).shape, type(x).dtype});
}

// The registry rows' builder rules (ProgramBuilder::build).

BuildOr<std::vector<unsigned>>
buildOpOfElementwise(ProgramBuilder &builder, const CheckedOp &attributes,
                     const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 1, false))
    return *refused;
  return asResults(builder.elementwise(attributes.fn, operands));
}

BuildOr<std::vector<unsigned>>
buildOpOfCast(ProgramBuilder &builder, const CheckedOp &attributes,
              const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 1, true))
    return *refused;
  // astype, not cast: the op is built even to x's own dtype.
  return asResults(builder.astype(operands[0], *attributes.dtype));
}

BuildOr<std::vector<unsigned>>
buildOpOfDropout(ProgramBuilder &builder, const CheckedOp &attributes,
                 const std::vector<unsigned> &operands) {
  // Three operands: p is the third, a run-time value.
  if (operands.size() == 3)
    return asResults(builder.dropout(operands[0], operands[2], operands[1]));
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 2, false))
    return *refused;
  return asResults(
      builder.dropout(operands[0], attributes.constant, operands[1]));
}

} // namespace ein

namespace ein {

// --- Cost ---

void costOfElementwise(const CostInput &in, const Bindings &,
                       CostCounts &counts) {
  // The table's FLOPs per output element.
  SizeExpr outElems = numElements(in.outputs[0].shape);
  counts.flops = outElems * SizeExpr::constant(elementwiseInfo(in.fn).flops);
}

void costOfCast(const CostInput &, const Bindings &, CostCounts &) {
  // Conversion moves data but does no arithmetic.
}

void costOfDropout(const CostInput &in, const Bindings &, CostCounts &counts) {
  // One FLOP per element: the multiply by 1 / (1 - p). Philox's rounds are
  // integer work (10 rounds of two 64x64->128 multiplies, four xors and two
  // key adds, about 100 integer ops per element), not floating-point
  // operations, and are not counted (docs/cost-model.md); the bytes are an
  // elementwise op's.
  counts.flops = numElements(in.outputs[0].shape);
}

} // namespace ein

// --- Gradient ---
// An elementwise function's gradient follows its row's gradient column: a
// `Rule` row's local derivative (gradLocalOfElementwise) times the output's
// gradient, summed over the dims the operand was broadcast along; a `Zero`
// row passes nothing; a `NotDifferentiable` row is refused with its reason.
namespace ein {

namespace {

using F = ElementwiseFn;

/// The gradient reaching operand `i` of the elementwise `op` from `dy`
/// (before unbroadcasting): one case per function whose row says
/// GradientRule::Rule.
std::optional<unsigned> gradLocalOfElementwise(Differentiator &d,
                                               const CheckedOp &op, unsigned i,
                                               unsigned dy) {
  using Opt = std::optional<unsigned>;
  const auto &xs = op.operands;
  Opt a = xs[0], b = xs.size() > 1 ? Opt(xs[1]) : std::nullopt,
      y = op.results[0], g = dy;
  DType t = d.dtypeOf(op.results[0]);
  // Each step stops at the first failure (error is then set).
  auto f = [&](F fn, std::initializer_list<Opt> args) -> Opt {
    std::vector<unsigned> ids;
    for (const Opt &arg : args) {
      if (!arg)
        return std::nullopt;
      ids.push_back(*arg);
    }
    return d.ew(fn, ids);
  };
  auto c = [&](double v) -> Opt { return d.constant(v, t); };
  auto mul = [&](Opt p, Opt q) { return f(F::Mul, {p, q}); };
  auto add = [&](Opt p, Opt q) { return f(F::Add, {p, q}); };
  auto sub = [&](Opt p, Opt q) { return f(F::Sub, {p, q}); };
  auto div = [&](Opt p, Opt q) { return f(F::Div, {p, q}); };
  auto mask = [&](F cmp, Opt p, Opt q) -> Opt {
    Opt m = f(cmp, {p, q});
    if (!m)
      return std::nullopt;
    return d.cast(*m, t);
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
  return d.fail(fmt::format("grad of '{}' has no rule in Autodiff although the "
                            "elementwise table says it has one",
                            elementwiseInfo(op.fn).name));
}

} // namespace

bool gradientOfElementwise(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> adj = d.adjointOf(op.results[0]);
  if (!adj)
    return true;
  unsigned dy = *adj;
  if (!isFloat(d.dtypeOf(op.results[0])))
    return true;
  // A division ending exp(z - max(z)) / sum(...) differentiates the whole
  // softmax, a subtraction ending a log-softmax the whole log-softmax
  // (SoftmaxGrad.cpp).
  if (op.fn == F::Div)
    if (auto softmax = matchSoftmax(d.function(), op))
      return gradientOfSoftmax(d, op, *softmax);
  if (op.fn == F::Sub)
    if (auto logSoftmax = matchLogSoftmax(d.function(), op))
      return gradientOfLogSoftmax(d, op, *logSoftmax);
  for (unsigned i = 0; i < op.operands.size(); ++i) {
    unsigned x = op.operands[i];
    if (!d.isActive(x) || (op.fn == F::Where && i == 0))
      continue;
    d.target(op, x);
    // The table's gradient column decides; a function with no rule is
    // refused by name, never given a zero gradient.
    const ElementwiseInfo &info = elementwiseInfo(op.fn);
    switch (info.gradientRule) {
    case GradientRule::Rule:
      break;
    case GradientRule::Zero:
      continue; // piecewise constant: 0 wherever the derivative exists
    case GradientRule::NotDifferentiable:
      return d
          .fail(fmt::format("grad of '{}' is not defined: {}", info.name,
                            info.gradient))
          .no();
    }
    auto local = gradLocalOfElementwise(d, op, i, dy);
    if (d.failed() || !local)
      return false;
    auto g = d.unbroadcast(*local, x, op.results[0]);
    if (!g || !d.accumulate(x, *g))
      return false;
  }
  return true;
}

/// dropout's adjoint is dropout of dy with the same p and key: dx = dy *
/// mask / (1 - p), the mask drawn again from (key, index) since dy has x's
/// shape and so each element's index. Nothing is saved; the key (an
/// integer) and p (a number, or a run-time value) get no gradient.
bool gradientOfDropout(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned x = op.operands[0];
  if (!d.isActive(x) || !isFloat(d.dtypeOf(x)))
    return true;
  d.target(op, x);
  unsigned g = d.cast(*dy, d.dtypeOf(x));
  auto dx = d.built(op.operands.size() == 3
                        ? d.build().dropout(g, op.operands[2], op.operands[1])
                        : d.build().dropout(g, op.constant, op.operands[1]));
  return dx && d.accumulate(x, *dx);
}

bool gradientOfCast(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned x = op.operands[0];
  d.target(op, x);
  return !isFloat(d.dtypeOf(x)) || d.accumulate(x, d.cast(*dy, d.dtypeOf(x)));
}

} // namespace ein

// --- Layout ---
namespace ein {

/// Operands broadcast by name; a split dim stays split, a replicated operand
/// is sliced locally where another is split, and operands split along
/// different axes are an error (LayoutInference::elementwise).
bool layoutOfElementwise(LayoutInference &li, const CheckedOp &op) {
  return li.elementwise(op);
}

bool layoutOfCast(LayoutInference &li, const CheckedOp &op) {
  return li.keep(op, 0);
}

/// The mask is drawn per element of x (its layout kept); the key is a
/// scalar, the same on every rank.
bool layoutOfDropout(LayoutInference &li, const CheckedOp &op) {
  // Each element's mask is drawn from its index in the whole tensor (the
  // Philox counter): a rank's block would draw its own indices' masks, so
  // a split operand is gathered first and the result is whole (on an axis
  // of one rank, nothing moves).
  ValueLayout x = li.operand(op.operands[0]);
  ValueLayout out = li.replicatedOf(op.results[0]);
  if (out.dims.size() != x.dims.size())
    return li.keep(op, 0);
  for (size_t d = 0; d < x.dims.size(); ++d) {
    const std::string &axis = x.dims[d];
    if (axis.empty() || li.axisSize(axis) == std::optional<Int>(1))
      continue;
    li.gatherOperandFirst(op, axis, op.results[0], out,
                          fmt::format("dropout draws its mask by the index "
                                      "in the whole tensor: its operand, "
                                      "split on {}, is gathered first",
                                      axis));
  }
  li.setResult(op.results[0], std::move(out));
  return true;
}

} // namespace ein
