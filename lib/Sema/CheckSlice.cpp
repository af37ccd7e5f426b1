// The checker of slice(x, "axis", start, stop): the axis found by its size,
// the bounds as sizes, checked when known and at the entry otherwise.
#include "FunctionChecker.h"
#include "ein/Support/Spelling.h"

#include <fmt/format.h>

namespace ein::sema {

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

/// A bound as written, without the parentheses exprToString puts around
/// a binary expression (`seq - 1`, not `(seq - 1)`).
std::string boundText(const Expr &e) {
  std::string text = exprToString(e);
  if (e.kind == Expr::Kind::Binary && text.size() >= 2 && text.front() == '(')
    return text.substr(1, text.size() - 2);
  return text;
}

} // namespace

std::optional<Operand> FunctionChecker::slice(const Expr &e) {
  const char *usage = "slice expects (tensor, axis, start, stop), e.g. "
                      "slice(x, \"seq\", 0, k)";
  if (e.args.size() != 4) {
    diags.error(e.loc, usage, e.length);
    return std::nullopt;
  }
  if (!e.keywords.empty()) {
    diags.error(e.keywords[0].loc,
                fmt::format("slice takes no keyword argument '{}'; {}",
                            e.keywords[0].name, usage),
                static_cast<unsigned>(e.keywords[0].name.size()));
    return std::nullopt;
  }
  auto x = tensorOf(*e.args[0]);
  if (!x)
    return std::nullopt;
  const Expr &axisExpr = *e.args[1];
  if (axisExpr.kind != Expr::Kind::String) {
    diags.error(axisExpr.loc,
                "slice's axis is a string naming the dim by its size, e.g. "
                "\"seq\" or \"2*half\"",
                axisExpr.length);
    return std::nullopt;
  }
  Shape shape = out.ctx.expand(typeOf(*x).shape);
  const std::string &text = axisExpr.text;
  auto variadicError = [&](const std::string &name) {
    diags.error(axisExpr.loc,
                fmt::format("slice cannot slice the variadic {}: name one "
                            "dim of fixed size (rearrange the variadic into "
                            "named dims first)",
                            name == "..." ? "'...'" : "*" + name),
                axisExpr.length);
    return std::nullopt;
  };
  std::string trimmed = text;
  trimmed.erase(0, trimmed.find_first_not_of(' '));
  trimmed.erase(trimmed.find_last_not_of(' ') + 1);
  if (trimmed == "...")
    return variadicError("...");
  if (!trimmed.empty() && trimmed[0] == '*')
    return variadicError(trimmed.substr(1));
  Expected<SizeExpr> parsed = parseSizeExpr(trimmed);
  if (!parsed) {
    diags.error(axisExpr.loc,
                fmt::format("slice's axis \"{}\" is not a size expression "
                            "(a dim name such as \"seq\", or \"2*half\")",
                            text),
                axisExpr.length);
    return std::nullopt;
  }
  SizeExpr axis = inlined() ? renamedSize(*parsed) : *parsed;
  // The dim whose size is the axis: structurally first (two dims bound to
  // the same number stay apart), then with the known sizes substituted:
  // those known without the call's inputs first, so that binding them does
  // not make the axis ambiguous.
  std::vector<size_t> found = dimsOfSize(shape, axis);
  if (found.empty()) {
    Bindings fixed = out.ctx.staticEnv();
    found = dimsOfSize(shape, axis, &fixed);
  }
  if (found.empty())
    found = dimsOfSize(shape, axis, &out.ctx.env);
  if (found.empty()) {
    if (auto symbol = parsed->asSymbol()) {
      if (packNames.count(*symbol))
        return variadicError(*symbol);
      for (const Dim &d : shape)
        if (d.isPack() && (d.pack == *symbol || d.pack == axis.str()))
          return variadicError(*symbol);
    }
    std::vector<std::string> names;
    for (const Dim &d : shape)
      if (!d.isPack())
        names.push_back(d.str());
    std::string message = fmt::format(
        "slice: '{}' has no axis of size '{}' (its shape is \"{}\")",
        exprToString(*e.args[0]), trimmed, shapeStr(shape));
    if (auto close = closestName(trimmed, names, trimmed.size() / 2 + 1))
      message += fmt::format("; did you mean '{}'?", *close);
    diags.error(axisExpr.loc, message, axisExpr.length);
    return std::nullopt;
  }
  if (found.size() > 1) {
    diags.error(axisExpr.loc,
                fmt::format("slice: axis '{}' is ambiguous: '{}' has {} dims "
                            "of that size (shape \"{}\"); rearrange it so "
                            "that one dim has it",
                            trimmed, exprToString(*e.args[0]), found.size(),
                            shapeStr(shape)),
                axisExpr.length);
    return std::nullopt;
  }
  size_t index = found[0];
  bool packBefore = false;
  for (size_t d = 0; d < index; ++d)
    packBefore |= shape[d].isPack();
  SizeExpr size = shape[index].size;

  // The bounds: sizes (integers, dims and + - * // of them).
  auto bound = [&](const Expr &b,
                   const char *which) -> std::optional<SizeExpr> {
    auto v = eval(b);
    if (!v)
      return std::nullopt;
    std::optional<SizeExpr> s;
    if (v->size)
      s = *v->size;
    else if (v->isLiteral && v->literal.isInt && v->literal.exact)
      s = SizeExpr::constant(*v->literal.exact);
    if (!s && v->isLiteral && v->literal.isInt) {
      diags.error(b.loc, fmt::format("slice's {} is too large", which),
                  b.length);
      return std::nullopt;
    }
    if (!s) {
      diags.error(b.loc,
                  fmt::format("slice's {} is a size (an integer, a dim or "
                              "+ - * // of them), not {}",
                              which,
                              v->isLiteral  ? "a float"
                              : v->deferred ? "a number computed in a dtype"
                                            : "a tensor"),
                  b.length);
      return std::nullopt;
    }
    if (s->tooComplex()) {
      diags.error(b.loc, SizeExpr::tooComplexMessage(), b.length);
      return std::nullopt;
    }
    if (auto known = s->substitute(out.ctx.env).constantValue();
        known && *known < 0) {
      diags.error(b.loc,
                  fmt::format("slice's {} is negative ({}): Python-style "
                              "negative indices are not supported; write "
                              "{} - {}",
                              which, toString(*known), trimmed,
                              toString(-*known)),
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
  auto known = [&](const SizeExpr &s) {
    return s.substitute(out.ctx.env).constantValue();
  };
  if (auto gap = known(*stop - *start); gap && *gap < 0) {
    diags.error(e.loc,
                fmt::format("slice's start ({}) is after its stop ({})",
                            boundText(*e.args[2]), boundText(*e.args[3])),
                e.length);
    return std::nullopt;
  }
  if (auto room = known(size - *stop); room && *room < 0) {
    diags.error(e.args[3]->loc,
                fmt::format("slice's stop ({}) is beyond the axis '{}' of "
                            "size {}",
                            stop->substitute(out.ctx.env).str(), trimmed,
                            size.substitute(out.ctx.env).str()),
                e.args[3]->length);
    return std::nullopt;
  }
  // What the sizes do not prove is checked at the entry: 0 <= start <=
  // stop <= size, so that no read leaves the axis.
  std::string reason = fmt::format(
      "slice(..., \"{}\", {}, {}) at line {} needs 0 <= start <= stop <= {}",
      text, boundText(*e.args[2]), boundText(*e.args[3]), e.loc.line,
      size.str());
  for (auto [lo, hi] : {std::pair{SizeExpr(), *start}, std::pair{*start, *stop},
                        std::pair{*stop, size}}) {
    SizeExpr gap = (hi - lo).substitute(out.ctx.env);
    if (!provablyNonNegative(gap))
      out.ctx.constraints.push_back({Constraint::Kind::LessEq, lo, hi, reason});
  }

  CheckedOp op;
  op.kind = OpKind::Slice;
  op.loc = e.loc;
  // What the report's pattern column shows: the axis and the bounds.
  op.pattern = fmt::format("{} {}:{}", trimmed, boundText(*e.args[2]),
                           boundText(*e.args[3]));
  op.operands = {*x};
  op.sliceAxis = packBefore ? static_cast<int64_t>(index) -
                                  static_cast<int64_t>(shape.size())
                            : static_cast<int64_t>(index);
  op.sliceStart = *start;
  op.sliceStop = *stop;
  Shape result = shape;
  result[index] = Dim::ofSize(*stop - *start);
  op.results.push_back(addValue(TensorType{result, typeOf(*x).dtype}));
  unsigned id = op.results[0];
  out.ops.push_back(std::move(op));
  return single(id);
}

} // namespace ein::sema
