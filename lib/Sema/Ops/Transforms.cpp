// The rules of the transform ops: rearrange, reduce and repeat.

// --- Gradient ---
// Each transform's gradient is a transform the other way round: a
// rearrange's is the inverse rearrange, a repeat's the sum over what it
// repeated, a reduce's its output's gradient repeated back (scaled or masked
// per reduction).
#include "../Differentiator.h"

#include <fmt/format.h>

namespace ein {

namespace {

/// A transform's two sides renamed for its backward pattern, and the sizes
/// the renamed axes need.
struct GradTransformSides {
  GradTransformSides(Differentiator &d, const TransformInfo &info)
      : name(info.axisSizes, [&d] { return d.freshAxis(); }),
        in(sideText(info.inputGroups, name)),
        out(sideText(info.outputGroups, name)),
        sizes(name.sizeArgs({&info.inputGroups, &info.outputGroups})) {}
  AxisNames name;
  std::string in, out;
  std::vector<SizeArg> sizes;
};

} // namespace

bool gradientOfRearrange(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned x = op.operands[0];
  d.target(op, x);
  GradTransformSides s(d, *op.transform);
  auto dx = d.transform(OpKind::Rearrange, *dy, s.out + " -> " + s.in, s.sizes);
  return dx && d.accumulate(x, *dx);
}

bool gradientOfRepeat(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned x = op.operands[0];
  d.target(op, x);
  GradTransformSides s(d, *op.transform);
  auto dx = d.transform(OpKind::Reduce, *dy, s.out + " -> " + s.in, s.sizes);
  return dx && d.accumulate(x, *dx);
}

bool gradientOfReduce(Differentiator &d, const CheckedOp &op) {
  using F = ElementwiseFn;
  std::optional<unsigned> adj = d.adjointOf(op.results[0]);
  if (!adj)
    return true;
  unsigned dy = *adj;
  const TransformInfo &info = *op.transform;
  unsigned x = op.operands[0];
  d.target(op, x);
  GradTransformSides s(d, info);
  const std::string &in = s.in, &out = s.out;
  // The input's axes the reduce removed: a repeat puts them back, with
  // their sizes.
  std::set<std::string> kept(info.outputAxes.begin(), info.outputAxes.end());
  std::vector<SizeArg> sizes =
      s.name.sizeArgs({&info.inputGroups, &info.outputGroups}, &kept);
  std::string back = out + " -> " + in;
  DType t = d.dtypeOf(dy);
  std::optional<unsigned> dx;
  switch (op.reduction) {
  case ReduceKind::Sum:
    dx = d.transform(OpKind::Repeat, dy, back, sizes);
    break;
  case ReduceKind::Mean: {
    SizeExpr n = SizeExpr::constant(1);
    for (const auto &group : info.inputGroups)
      for (const auto &a : group)
        if (!kept.count(a))
          n = n * info.axisSizes.at(a);
    auto spread = d.transform(OpKind::Repeat, dy, back, sizes);
    auto total = spread ? d.count(n, t) : std::nullopt;
    if (total)
      dx = d.ew(F::Div, {*spread, *total});
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
    unsigned xt = d.cast(x, t);
    auto mean = d.transform(OpKind::Reduce, xt, in + " -> " + out, sizes,
                            ReduceKind::Mean);
    if (!mean)
      return false;
    auto meanBack = d.transform(OpKind::Repeat, *mean, back, sizes);
    auto spread = d.transform(OpKind::Repeat, dy, back, sizes);
    if (!meanBack || !spread)
      return false;
    auto dev = d.ew(F::Sub, {xt, *meanBack});
    auto scaled = dev ? d.ew(F::Mul, {*dev, d.constant(2, t)}) : std::nullopt;
    auto weighted = scaled ? d.ew(F::Mul, {*scaled, *spread}) : std::nullopt;
    auto total = weighted ? d.count(n, t) : std::nullopt;
    if (total)
      dx = d.ew(F::Div, {*weighted, *total});
    break;
  }
  case ReduceKind::Max:
  case ReduceKind::Min: {
    // As torch.amax/amin: the gradient is shared evenly by the elements
    // equal to the extremum.
    unsigned y = op.results[0];
    auto yBack = d.transform(OpKind::Repeat, y, back, sizes);
    if (!yBack)
      return false;
    // With acc=, the extremum is of the accumulation dtype: the input is
    // compared in it (as the reduce converted it).
    auto hit = d.ew(F::Eq, {d.cast(x, d.dtypeOf(y)), *yBack});
    if (!hit)
      return false;
    unsigned mask = d.cast(*hit, t);
    auto ties = d.transform(OpKind::Reduce, mask, in + " -> " + out, sizes);
    if (!ties)
      return false;
    auto share = d.ew(F::Div, {dy, *ties});
    if (!share)
      return false;
    auto spread = d.transform(OpKind::Repeat, *share, back, sizes);
    if (spread)
      dx = d.ew(F::Mul, {mask, *spread});
    break;
  }
  case ReduceKind::Prod:
    return d
        .fail("grad of reduce \"prod\" is not supported (its gradient "
              "divides by the inputs, which may be 0); write it as "
              "exp(reduce(log(x), ..., \"sum\")) for positive inputs")
        .no();
  case ReduceKind::Any:
  case ReduceKind::All:
    return true; // bool: nothing to differentiate
  }
  if (!dx)
    return false;
  return d.accumulate(x, *dx);
}

} // namespace ein
