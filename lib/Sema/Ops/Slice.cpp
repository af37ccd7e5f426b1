// The rules of slice: the checker's call, the builder's body, the cost
// and the gradient (split from Indexing.cpp, the family's other file in
// this layer, to keep each file short).
#include "../BuildErrors.h"
#include "../Differentiator.h"
#include "../FunctionChecker.h"
#include "../LayoutInference.h"
#include "ein/Sema/OpCost.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

namespace ein::sema {

// --- Checker ---

namespace {

/// A bound as written, without the parentheses exprToString puts around
/// a binary expression (`seq - 1`, not `(seq - 1)`).
std::string sliceBoundText(const Expr &e) {
  std::string text = exprToString(e);
  if (e.kind == Expr::Kind::Binary && text.size() >= 2 && text.front() == '(')
    return text.substr(1, text.size() - 2);
  return text;
}

/// slice(x, "axis", start, stop): start <= i < stop along the dim of x
/// whose size is `axis`.
std::optional<Operand> checkSliceCall(FunctionChecker &checker, const Expr &e) {
  const char *usage = "slice expects (tensor, axis, start, stop), e.g. "
                      "slice(x, \"seq\", 0, k)";
  if (e.args.size() != 4) {
    checker.diagnostics().error(e.loc, usage, e.length);
    return std::nullopt;
  }
  if (!e.keywords.empty()) {
    checker.diagnostics().error(
        e.keywords[0].loc,
        fmt::format("slice takes no keyword argument '{}'; {}",
                    e.keywords[0].name, usage),
        static_cast<unsigned>(e.keywords[0].name.size()));
    return std::nullopt;
  }
  auto x = checker.tensorOf(*e.args[0]);
  if (!x)
    return std::nullopt;
  const Expr &axisExpr = *e.args[1];
  if (axisExpr.kind != Expr::Kind::String) {
    checker.diagnostics().error(
        axisExpr.loc,
        "slice's axis is a string naming the dim by its size, e.g. "
        "\"seq\" or \"2*half\"",
        axisExpr.length);
    return std::nullopt;
  }
  const std::string &text = axisExpr.text;
  std::string trimmed = text;
  trimmed.erase(0, trimmed.find_first_not_of(' '));
  trimmed.erase(trimmed.find_last_not_of(' ') + 1);
  // The axis: a size, or a variadic written as one (refused by the builder,
  // by name).
  Dim axis;
  if (trimmed == "...") {
    axis = Dim::ofPack("...");
  } else if (!trimmed.empty() && trimmed[0] == '*') {
    axis = Dim::ofPack(trimmed.substr(1));
  } else {
    Expected<SizeExpr> parsed = parseSizeExpr(trimmed);
    if (!parsed) {
      checker.diagnostics().error(
          axisExpr.loc,
          fmt::format("slice's axis \"{}\" is not a size expression "
                      "(a dim name such as \"seq\", or \"2*half\")",
                      text),
          axisExpr.length);
      return std::nullopt;
    }
    auto symbol = parsed->asSymbol();
    if (symbol && checker.isPackName(*symbol))
      axis = Dim::ofPack(*symbol); // a variadic of this function
    else
      axis = Dim::ofSize(checker.builtSize(*parsed));
  }

  // The bounds: sizes (integers, dims and + - * // of them).
  auto bound = [&](const Expr &b,
                   const char *which) -> std::optional<SizeExpr> {
    auto v = checker.eval(b);
    if (!v)
      return std::nullopt;
    std::optional<SizeExpr> s;
    if (v->size)
      s = *v->size;
    else if (v->isLiteral && v->literal.isInt && v->literal.exact)
      s = SizeExpr::constant(*v->literal.exact);
    if (!s && v->isLiteral && v->literal.isInt) {
      checker.diagnostics().error(
          b.loc, fmt::format("slice's {} is too large", which), b.length);
      return std::nullopt;
    }
    if (!s) {
      checker.diagnostics().error(
          b.loc,
          fmt::format("slice's {} is a size (an integer, a dim or "
                      "+ - * // of them), not {}",
                      which,
                      v->isLiteral  ? "a float"
                      : v->deferred ? "a number computed in a dtype"
                                    : "a tensor"),
          b.length);
      return std::nullopt;
    }
    return s;
  };
  auto start = bound(*e.args[2], "start");
  if (!start)
    return std::nullopt;
  auto stop = bound(*e.args[3], "stop");
  if (!stop)
    return std::nullopt;
  auto sliced = checker.builtAlong(
      checker.builder(e.loc).slice(*x, axis, *start, *stop,
                                   SliceText{exprToString(*e.args[0]), text,
                                             sliceBoundText(*e.args[2]),
                                             sliceBoundText(*e.args[3])}),
      e, axisExpr);
  if (!sliced)
    return std::nullopt;
  return checker.single(*sliced);
}

} // namespace

const std::vector<SurfaceCall> &surfaceCallsOfSlice() {
  static const std::vector<SurfaceCall> calls = {
      {"slice", 7, [](FunctionChecker &checker, const Expr &call) {
         return checkSliceCall(checker, call);
       }}};
  return calls;
}

} // namespace ein::sema

namespace ein {

// --- Builder ---

namespace {

bool provablyNonNegative(const SizeExpr &e);

/// A floor quotient is at least 0 when its numerator is and its
/// denominator is a positive constant (`d/2`); `(n - 1)/2` may be -1.
bool provablyNonNegativeQuotient(const SizeExpr::Factor &f) {
  auto den = f.den ? f.den->constantValue() : std::nullopt;
  return f.num && den && *den > 0 && provablyNonNegative(*f.num);
}

/// True when `e` is at least 0 for every value of its names: a constant at
/// least 0, or a polynomial of names (sizes, never negative) and of
/// quotients that are never negative, whose coefficients are all at least 0.
bool provablyNonNegative(const SizeExpr &e) {
  if (e.tooComplex() || e.overflowed())
    return false;
  if (auto v = e.constantValue())
    return *v >= 0;
  for (const SizeExpr::Term &t : e.termList()) {
    if (t.coefficient < 0)
      return false;
    for (const SizeExpr::Factor &f : t.factors)
      if (f.symbol.empty() && !provablyNonNegativeQuotient(f))
        return false;
  }
  return true;
}

std::string indexingTrimmed(std::string text) {
  text.erase(0, text.find_first_not_of(' '));
  text.erase(text.find_last_not_of(' ') + 1);
  return text;
}

} // namespace

BuildOr<unsigned> ProgramBuilder::slice(unsigned x, const Dim &axis,
                                        const SizeExpr &start,
                                        const SizeExpr &stop, SliceText text) {
  if (text.tensor.empty())
    text.tensor = "x";
  if (text.axis.empty())
    text.axis = axis.str();
  if (text.start.empty())
    text.start = start.str();
  if (text.stop.empty())
    text.stop = stop.str();
  std::string name = indexingTrimmed(text.axis);
  auto refuse = [&](ShapeError error) {
    return BuildError{std::move(error), "slice", text.axis};
  };
  auto axisError = [&](std::string message) {
    return refuse(ShapeError::atPattern(
        std::move(message), 0, static_cast<unsigned>(text.axis.size())));
  };
  auto variadicError = [&](const std::string &pack) {
    return axisError(fmt::format("slice cannot slice the variadic {}: name "
                                 "one dim of fixed size (rearrange the "
                                 "variadic into named dims first)",
                                 pack == "..." ? "'...'" : "*" + pack));
  };
  if (axis.isPack())
    return variadicError(axis.pack);
  Shape shape = fn.ctx.expand(type(x).shape);
  // The dim whose size is the axis: structurally first (two dims bound to
  // the same number stay apart), then with the known sizes substituted:
  // those known without the call's inputs first, so that binding them does
  // not make the axis ambiguous.
  std::vector<size_t> found = dimsOfSize(shape, axis.size);
  if (found.empty()) {
    Bindings fixed = fn.ctx.staticEnv();
    found = dimsOfSize(shape, axis.size, &fixed);
  }
  if (found.empty())
    found = dimsOfSize(shape, axis.size, &fn.ctx.env);
  if (found.empty()) {
    for (const Dim &d : shape)
      if (d.isPack() && (d.pack == name || d.pack == axis.size.str()))
        return variadicError(name);
    std::vector<std::string> names;
    for (const Dim &d : shape)
      if (!d.isPack())
        names.push_back(d.str());
    std::string message = fmt::format(
        "slice: '{}' has no axis of size '{}' (its shape is \"{}\")",
        text.tensor, name, shapeStr(shape));
    if (auto close = closestName(name, names, name.size() / 2 + 1))
      message += fmt::format("; did you mean '{}'?", *close);
    return axisError(message);
  }
  if (found.size() > 1)
    return axisError(fmt::format("slice: axis '{}' is ambiguous: '{}' has {} "
                                 "dims of that size (shape \"{}\"); "
                                 "rearrange it so that one dim has it",
                                 name, text.tensor, found.size(),
                                 shapeStr(shape)));
  return sliceAt(x, static_cast<int64_t>(found[0]), start, stop,
                 std::move(text));
}

BuildOr<unsigned> ProgramBuilder::sliceAt(unsigned x, int64_t at,
                                          const SizeExpr &start,
                                          const SizeExpr &stop,
                                          SliceText text) {
  Shape shape = fn.ctx.expand(type(x).shape);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (at < -rank || at >= rank)
    return BuildError{ShapeError::atOp(fmt::format("slice's axis {} is out of "
                                                   "range for rank {}",
                                                   at, rank)),
                      "slice", text.axis};
  size_t index = static_cast<size_t>(at < 0 ? at + rank : at);
  // An empty field is spelled from the values, the axis from its dim.
  if (text.tensor.empty())
    text.tensor = "x";
  if (text.axis.empty())
    text.axis = shape[index].str();
  if (text.start.empty())
    text.start = start.str();
  if (text.stop.empty())
    text.stop = stop.str();
  std::string name = indexingTrimmed(text.axis);
  auto refuse = [&](ShapeError error) {
    return BuildError{std::move(error), "slice", text.axis};
  };
  if (shape[index].isPack())
    return refuse(ShapeError::atPattern(
        fmt::format("slice cannot slice the variadic {}: name one dim of "
                    "fixed size (rearrange the variadic into named dims "
                    "first)",
                    shape[index].pack == "..." ? "'...'"
                                               : "*" + shape[index].pack),
        0, static_cast<unsigned>(text.axis.size())));
  bool packBefore = false;
  for (size_t d = 0; d < index; ++d)
    packBefore |= shape[d].isPack();
  SizeExpr size = shape[index].size;

  auto known = [&](const SizeExpr &s) {
    return s.substitute(fn.ctx.env).constantValue();
  };
  // Each bound a size that is not too complex to reason about, and not
  // known to be negative.
  for (unsigned i : {1u, 2u}) {
    const SizeExpr &bound = i == 1 ? start : stop;
    if (bound.tooComplex())
      return refuse(ShapeError::atOperand(SizeExpr::tooComplexMessage(), i));
    if (auto value = known(bound); value && *value < 0)
      return refuse(ShapeError::atOperand(
          fmt::format("slice's {} is negative ({}): Python-style negative "
                      "indices are not supported; write {} - {}",
                      i == 1 ? "start" : "stop", toString(*value), name,
                      toString(-*value)),
          i));
  }
  if (auto gap = known(stop - start); gap && *gap < 0)
    return refuse(
        ShapeError::atOp(fmt::format("slice's start ({}) is after its stop "
                                     "({})",
                                     text.start, text.stop)));
  if (auto room = known(size - stop); room && *room < 0)
    return refuse(ShapeError::atOperand(
        fmt::format("slice's stop ({}) is beyond the axis '{}' of size {}",
                    stop.substitute(fn.ctx.env).str(), name,
                    size.substitute(fn.ctx.env).str()),
        2));
  // What the sizes do not prove is checked at the entry: 0 <= start <=
  // stop <= size, so that no read leaves the axis.
  std::string reason = fmt::format(
      "slice(..., \"{}\", {}, {}) at line {} needs 0 <= start <= stop <= {}",
      text.axis, text.start, text.stop, origin().loc.line, size.str());
  for (auto [lo, hi] : {std::pair{SizeExpr(), start}, std::pair{start, stop},
                        std::pair{stop, size}}) {
    SizeExpr gap = (hi - lo).substitute(fn.ctx.env);
    if (!provablyNonNegative(gap))
      fn.ctx.constraints.push_back({Constraint::Kind::LessEq, lo, hi, reason});
  }

  CheckedOp op;
  op.kind = OpKind::Slice;
  // What the report's pattern column shows: the axis and the bounds.
  op.pattern = fmt::format("{} {}:{}", name, text.start, text.stop);
  op.operands = {x};
  op.sliceAxis = packBefore ? static_cast<int64_t>(index) -
                                  static_cast<int64_t>(shape.size())
                            : static_cast<int64_t>(index);
  op.sliceStart = start;
  op.sliceStop = stop;
  Shape result = shape;
  result[index] = Dim::ofSize(stop - start);
  return append(std::move(op), TensorType{result, type(x).dtype});
}

BuildOr<std::vector<unsigned>>
buildOpOfSlice(ProgramBuilder &builder, const CheckedOp &attributes,
               const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 1, false))
    return *refused;
  return asResults(builder.sliceAt(operands[0], attributes.sliceAxis,
                                   attributes.sliceStart,
                                   attributes.sliceStop));
}

} // namespace ein

namespace ein {

// --- Cost ---

void costOfSlice(const CostInput &in, const Bindings &, CostCounts &counts) {
  // A slice along the leading dim is a contiguous range of the input: a
  // view. Otherwise the model counts a copy of the selected elements: each
  // read once and written once (docs/cost-model.md).
  counts.view = in.packAxesBefore == 0;
  counts.read = counts.written =
      counts.view ? SizeExpr() : bytesOf(in.outputs[0]);
}

// --- Gradient ---

bool gradientOfSlice(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> adj = d.adjointOf(op.results[0]);
  if (!adj)
    return true;
  unsigned dy = *adj;
  unsigned x = op.operands[0];
  d.target(op, x);
  auto shape = d.shapeOf(x);
  if (!shape)
    return false;
  size_t axis = op.sliceAxis < 0 ? shape->size() + op.sliceAxis
                                 : static_cast<size_t>(op.sliceAxis);
  // The gradient is dy between zeros: cat([zeros, dy, zeros]) on the axis.
  std::vector<std::string> names;
  for (size_t dim = 0; dim < shape->size(); ++dim)
    names.push_back(dim == axis ? "*" : d.freshAxis());
  std::vector<unsigned> parts;
  auto zerosAlong = [&](const SizeExpr &n) -> bool {
    if (n.constantValue() == Int(0))
      return true;
    Shape s = *shape;
    s[axis] = Dim::ofSize(n);
    auto z = d.zerosOf(s, d.dtypeOf(x));
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
    return d.failBuilt("a cat", parsed.error().message).no();
  auto dx = d.pack(parts, *parsed, d.dtypeOf(x));
  return dx && d.accumulate(x, *dx);
}

} // namespace ein

// --- Layout ---
namespace ein {

/// slice keeps every dim's split but the sliced dim's, which must be whole
/// (a slice of a split dim would start in one rank's block and end in
/// another's).
bool layoutOfSlice(LayoutInference &li, const CheckedOp &op) {
  ValueLayout l = li.operand(op.operands[0]);
  int64_t n = static_cast<int64_t>(l.dims.size());
  int64_t at = op.sliceAxis < 0 ? n + op.sliceAxis : op.sliceAxis;
  if (at >= 0 && at < n && !l.dims[at].empty())
    return li.unsupported(op, l.dims[at], "the sliced dim is split");
  return li.keep(op, 0);
}

} // namespace ein
