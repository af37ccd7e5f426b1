// The rules of einsum: the checker's call, the builder's body, the
// cost and the gradient.
#include "../BuildErrors.h"
#include "../Differentiator.h"
#include "../FunctionChecker.h"
#include "../LayoutInference.h"
#include "ein/Sema/OpCost.h"
#include "ein/Sema/Suggestions.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace ein::sema {

// --- Checker ---

namespace {

/// einsum(x1, ..., pattern, **sizes, acc=...).
std::optional<Operand> checkEinsumCall(FunctionChecker &checker,
                                       const Expr &e) {
  if (e.args.empty() || e.args.back()->kind != Expr::Kind::String) {
    checker.diagnostics().error(
        e.loc,
        "einsum expects (tensor, ..., pattern): the pattern string "
        "comes last",
        e.length);
    return std::nullopt;
  }
  const Expr *patExpr = e.args.back().get();
  auto pattern = checker.parsePatternAt(*patExpr, PatternUse::Einsum);
  if (!pattern)
    return std::nullopt;
  std::vector<unsigned> xs;
  for (size_t i = 0; i + 1 < e.args.size(); ++i) {
    auto x = checker.tensorOf(*e.args[i]);
    if (!x)
      return std::nullopt;
    xs.push_back(*x);
  }
  auto acc = checker.accArg(e, OpKind::Einsum);
  if (!acc)
    return std::nullopt;
  auto sizes = checker.sizeArgs(e);
  if (!sizes)
    return std::nullopt;
  auto built = checker.builder(e.loc).einsum(xs, *pattern, *sizes, acc->dtype);
  if (!built) {
    checker.reportBuild(built.error(), e, patExpr, *acc);
    checker.noteSpacedPattern(built.error(), *patExpr);
    return std::nullopt;
  }
  for (const LoneAxis &lone : loneAxes(*pattern))
    checker.diagnostics().warning(WarningKind::LoneAxis,
                                  patExpr->loc.advanced(1 + lone.axis->offset),
                                  loneAxisMessage(lone), lone.axis->length);
  return checker.single(*built);
}

} // namespace

const std::vector<SurfaceCall> &surfaceCallsOfEinsum() {
  static const std::vector<SurfaceCall> calls = {
      {"einsum", 3, [](FunctionChecker &checker, const Expr &call) {
         return checkEinsumCall(checker, call);
       }}};
  return calls;
}

} // namespace ein::sema

namespace ein {

// --- Builder ---

BuildOr<unsigned> ProgramBuilder::einsum(const std::vector<unsigned> &xs,
                                         const std::string &pattern,
                                         std::vector<SizeArg> sizes,
                                         std::optional<DType> acc) {
  auto parsed = parsePattern(pattern, PatternUse::Einsum);
  if (!parsed)
    return build::failure(parsed.error(), "einsum", pattern);
  return einsum(xs, *parsed, std::move(sizes), acc);
}

BuildOr<unsigned> ProgramBuilder::einsum(const std::vector<unsigned> &xs,
                                         const Pattern &parsed,
                                         std::vector<SizeArg> sizes,
                                         std::optional<DType> acc) {
  const std::string &pattern = parsed.text;
  const DTypeRule &rule = *findDTypeRule("einsum");
  if (xs.empty())
    return build::failure(ShapeError::atOp("einsum needs at least one tensor"),
                          "einsum", pattern);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < xs.size(); ++i) {
    DType t = type(xs[i]).dtype;
    if (i > 0 && t != type(xs[0]).dtype)
      return build::mixedDTypes(
          fmt::format("einsum operands have different dtypes ({} and {}); "
                      "convert one with astype",
                      dtypeName(type(xs[0]).dtype), dtypeName(t)),
          unsigned(i), "einsum", pattern);
    if (auto error = build::dtypeError(rule, t, unsigned(i), "einsum", pattern))
      return *error;
    shapes.push_back(type(xs[i]).shape);
  }
  if (auto error = build::accError(rule, acc, "einsum", pattern))
    return *error;
  auto info = analyzeEinsum(fn.ctx, parsed, shapes, sizes);
  if (!info)
    return build::withSpacedHint(
        build::failure(info.error(), "einsum", pattern), parsed,
        PatternUse::Einsum, fn.ctx,
        [&](InferContext &ctx, const Pattern &spaced) {
          return bool(analyzeEinsum(ctx, spaced, shapes, sizes));
        });
  CheckedOp op;
  op.kind = OpKind::Einsum;
  op.pattern = pattern;
  op.parsed = parsed;
  op.sizes = std::move(sizes);
  op.acc = acc;
  op.operands = xs;
  op.einsum = *info;
  return append(std::move(op),
                TensorType{info->result, acc.value_or(type(xs[0]).dtype)});
}

// The registry row's builder rule (ProgramBuilder::build).
BuildOr<std::vector<unsigned>>
buildOpOfEinsum(ProgramBuilder &builder, const CheckedOp &attributes,
                const std::vector<unsigned> &operands) {
  if (attributes.parsed.text.empty())
    return asResults(builder.einsum(operands, attributes.pattern,
                                    attributes.sizes, attributes.acc));
  return asResults(builder.einsum(operands, attributes.parsed, attributes.sizes,
                                  attributes.acc));
}

} // namespace ein

namespace ein {

// --- Cost ---

SizeExpr contractionFlops(const std::set<std::string> &indices, bool inner,
                          size_t terms,
                          const std::map<std::string, SizeExpr> &sizes) {
  SizeExpr product = SizeExpr::constant(1);
  for (auto &i : indices)
    product = product * sizes.at(i);
  Int factor = std::max<Int>(1, static_cast<Int>(terms) - 1) + (inner ? 1 : 0);
  return product * SizeExpr::constant(factor);
}

/// The naive count: every operand in one loop nest. An einsum of 3+
/// operands is counted along its contraction order by the cost model
/// (lib/Analysis/Cost.cpp), which keeps this one as the naive count.
void costOfEinsum(const CostInput &in, const Bindings &, CostCounts &counts) {
  const EinsumInfo &info = *in.einsum;
  std::set<std::string> all;
  for (auto &axes : info.operandAxes)
    all.insert(axes.begin(), axes.end());
  std::set<std::string> out(info.outputAxes.begin(), info.outputAxes.end());
  bool inner = false;
  for (auto &a : all)
    inner |= !out.count(a);
  counts.flops =
      contractionFlops(all, inner, info.operandAxes.size(), info.axisSizes);
}

} // namespace ein

// --- Gradient ---
// An einsum's gradient with respect to one operand is an einsum of the
// output's gradient with the other operands, its diagonals (`i i`) through an
// identity, and the operand's axes it summed alone repeated back.
namespace ein {

bool gradientOfEinsum(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> adj = d.adjointOf(op.results[0]);
  if (!adj)
    return true;
  unsigned dy = *adj;
  const EinsumInfo &info = *op.einsum;
  DType operandType = d.dtypeOf(op.operands[0]);
  unsigned g = d.cast(dy, operandType);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    unsigned x = op.operands[i];
    if (!d.isActive(x))
      continue;
    d.target(op, x);
    AxisNames name(info.axisSizes, [&d] { return d.freshAxis(); });
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
          diagonals.push_back({axis, d.freshAxis()});
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
      auto eye = d.identity(info.axisSizes.at(axis), operandType);
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
    auto dx = d.einsum(inputs, pattern, name.sizeArgs(sides), op.acc);
    if (!dx)
      return false;
    if (!exact) {
      AxisNames rename(info.axisSizes, [&d] { return d.freshAxis(); });
      std::string back = fmt::format("{} -> {}", sideText(flat, rename),
                                     sideText(groups, rename));
      // The repeat's new axes (those not in `flat`) need their sizes too.
      dx = d.transform(OpKind::Repeat, *dx, back,
                       rename.sizeArgs({&groups}, &available));
      if (!dx)
        return false;
    }
    if (!d.accumulate(x, *dx))
      return false;
  }
  return true;
}

} // namespace ein

// --- Layout ---
namespace ein {

/// An operand dim split on a mesh axis splits its major axis; an axis summed
/// while split leaves partial sums (an all-reduce, or a reduce-scatter into
/// a result declared split on the axis): LayoutInference::throughAxes.
bool layoutOfEinsum(LayoutInference &li, const CheckedOp &op) {
  if (!op.einsum) {
    std::string axis = li.shardedAxisOf(op);
    return axis.empty() || li.unsupported(op, axis, "its axes are not known");
  }
  return li.throughAxes(op, op.einsum->operandGroups, op.einsum->outputGroups,
                        op.einsum->axisSizes, ReduceKind::Sum);
}

} // namespace ein
