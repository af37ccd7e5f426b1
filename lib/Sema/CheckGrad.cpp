// The checker of grad(loss, wrt=[w1, w2]): reverse-mode differentiation of
// the function so far, its backward ops appended (Autodiff.h).
#include "FunctionChecker.h"
#include "ein/Sema/Autodiff.h"

#include <fmt/format.h>

namespace ein::sema {

std::optional<Operand> FunctionChecker::grad(const Expr &e) {
  const char *usage = "grad expects (loss, wrt=[w1, w2], recompute=False): "
                      "the gradient of a scalar loss with respect to tensors "
                      "of this function";
  const Expr *wrtArg = nullptr;
  bool recompute = false;
  for (auto &k : e.keywords) {
    if (k.name == "wrt") {
      wrtArg = k.value.get();
      continue;
    }
    if (k.name == "recompute") {
      const Expr &v = *k.value;
      if (v.kind != Expr::Kind::Name ||
          (v.text != "True" && v.text != "False")) {
        diags.error(v.loc, "recompute= is True or False", v.length);
        return std::nullopt;
      }
      recompute = v.text == "True";
      continue;
    }
    diags.error(
        k.loc,
        fmt::format("grad takes no keyword argument '{}'; {}", k.name, usage),
        static_cast<unsigned>(k.name.size()));
    return std::nullopt;
  }
  if (e.args.size() != 1 || !wrtArg) {
    diags.error(e.loc, usage, e.length);
    return std::nullopt;
  }
  const Expr &lossExpr = *e.args[0];
  auto loss = tensorOf(lossExpr);
  if (!loss)
    return std::nullopt;
  const TensorType &lossType = typeOf(*loss);
  if (!isFloat(lossType.dtype)) {
    diags.error(lossExpr.loc,
                fmt::format("grad needs a float loss, got {}; convert it with "
                            "astype",
                            dtypeName(lossType.dtype)),
                lossExpr.length);
    return std::nullopt;
  }
  if (!out.ctx.expand(lossType.shape).empty()) {
    diags.error(lossExpr.loc,
                fmt::format("grad needs a scalar loss (rank 0), got shape "
                            "\"{}\"; reduce it first, e.g. reduce(x, \"{} "
                            "->\", \"mean\")",
                            shapeStr(lossType.shape), shapeStr(lossType.shape)),
                lossExpr.length);
    return std::nullopt;
  }
  const Expr &wrtExpr = *wrtArg;
  bool single = wrtExpr.kind != Expr::Kind::List;
  std::vector<const Expr *> items;
  if (single)
    items.push_back(&wrtExpr);
  else
    for (auto &item : wrtExpr.args)
      items.push_back(item.get());
  if (items.empty()) {
    diags.error(wrtExpr.loc, "wrt= names at least one tensor", 1);
    return std::nullopt;
  }
  std::vector<unsigned> wrt;
  for (const Expr *item : items) {
    if (item->kind != Expr::Kind::Name) {
      diags.error(item->loc,
                  "wrt= names tensors of this function (w1 or [w1, w2]), "
                  "not expressions",
                  item->length);
      return std::nullopt;
    }
    auto w = tensorOf(*item);
    if (!w)
      return std::nullopt;
    if (!isFloat(typeOf(*w).dtype)) {
      diags.error(item->loc,
                  fmt::format("'{}' is {}: only float tensors have gradients",
                              item->text, dtypeName(typeOf(*w).dtype)),
                  item->length);
      return std::nullopt;
    }
    if (std::find(wrt.begin(), wrt.end(), *w) != wrt.end()) {
      diags.error(item->loc,
                  fmt::format("'{}' is named twice in wrt=", item->text),
                  item->length);
      return std::nullopt;
    }
    wrt.push_back(*w);
  }
  GradientResult result = appendGradient(out, *loss, wrt, e.loc);
  if (result.error) {
    diags.error(result.error->loc,
                "cannot differentiate: " + result.error->message);
    diags.note(e.loc, "in the gradient asked for here", e.length);
    return std::nullopt;
  }
  if (recompute)
    recomputeCheapValues(out);
  out.gradLosses.push_back(*loss);
  for (unsigned w : wrt)
    if (std::find(out.gradWrt.begin(), out.gradWrt.end(), w) ==
        out.gradWrt.end())
      out.gradWrt.push_back(w);
  // The gradients carry their parameter's name: d_w1, d_w2.
  for (size_t i = 0; i < items.size(); ++i)
    if (out.values[result.grads[i]].name.empty())
      out.values[result.grads[i]].name = "d_" + items[i]->text;
  Operand o;
  o.values = result.grads;
  return o;
}

} // namespace ein::sema
