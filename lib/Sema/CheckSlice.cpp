// The checker of slice(x, "axis", start, stop): the axis and the bounds read
// as sizes, then built (ProgramBuilder::slice finds the axis and checks the
// bounds).
#include "FunctionChecker.h"

#include <fmt/format.h>

namespace ein::sema {

namespace {

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
      diags.error(axisExpr.loc,
                  fmt::format("slice's axis \"{}\" is not a size expression "
                              "(a dim name such as \"seq\", or \"2*half\")",
                              text),
                  axisExpr.length);
      return std::nullopt;
    }
    auto symbol = parsed->asSymbol();
    if (symbol && packNames.count(*symbol))
      axis = Dim::ofPack(*symbol); // a variadic of this function
    else
      axis = Dim::ofSize(inlined() ? renamedSize(*parsed) : *parsed);
  }

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
    return s;
  };
  auto start = bound(*e.args[2], "start");
  if (!start)
    return std::nullopt;
  auto stop = bound(*e.args[3], "stop");
  if (!stop)
    return std::nullopt;
  auto sliced =
      builtAlong(builder(e.loc).slice(*x, axis, *start, *stop,
                                      SliceText{exprToString(*e.args[0]), text,
                                                boundText(*e.args[2]),
                                                boundText(*e.args[3])}),
                 e, axisExpr);
  if (!sliced)
    return std::nullopt;
  return single(*sliced);
}

} // namespace ein::sema
