// The rules of rearrange, reduce and repeat (the transforms of one tensor by
// a pattern): the checker's calls, the builder's bodies and the cost.
#include "../BuildErrors.h"
#include "../FunctionChecker.h"
#include "ein/Sema/OpCost.h"
#include "ein/Sema/Suggestions.h"

#include <fmt/format.h>

#include <set>

namespace ein::sema {

// --- Checker ---

namespace {

/// rearrange(x, pattern, **sizes), repeat(...), reduce(x, pattern, reduction,
/// **sizes, acc=...): the call named by `e.text`.
std::optional<Operand> checkTransformCall(FunctionChecker &checker,
                                          const Expr &e) {
  const std::string &callee = e.text;
  bool isReduce = callee == "reduce";
  size_t expectedArgs = isReduce ? 3 : 2;
  if (e.args.size() != expectedArgs) {
    checker.diagnostics().error(
        e.loc,
        isReduce ? "reduce expects (tensor, pattern, reduction, **sizes)"
                 : callee + " expects (tensor, pattern, **sizes)",
        e.length);
    return std::nullopt;
  }
  auto x = checker.tensorOf(*e.args[0]);
  if (!x)
    return std::nullopt;
  const Expr *patExpr =
      checker.patternArg(e, 1, "a pattern string as its second argument");
  if (!patExpr)
    return std::nullopt;
  PatternUse use = isReduce             ? PatternUse::Reduce
                   : callee == "repeat" ? PatternUse::Repeat
                                        : PatternUse::Rearrange;
  auto pattern = checker.parsePatternAt(*patExpr, use);
  if (!pattern)
    return std::nullopt;
  OpKind kind = isReduce             ? OpKind::Reduce
                : callee == "repeat" ? OpKind::Repeat
                                     : OpKind::Rearrange;
  ReduceKind reduction = ReduceKind::Sum;
  if (isReduce) {
    const Expr &red = *e.args[2];
    std::optional<ReduceKind> kind;
    if (red.kind == Expr::Kind::String)
      kind = parseReduceKind(red.text);
    if (!kind) {
      std::string what = red.kind == Expr::Kind::String
                             ? "unknown reduction " + exprToString(red)
                             : "the reduction must be a string such as "
                               "\"sum\", not " +
                                   exprToString(red);
      // The kinds in table order (ReduceKinds.def): "sum", ... or "var".
      std::vector<std::string> names;
#define EIN_REDUCE_KIND(Kind, name, ...) names.push_back("\"" #name "\"");
#include "ein/Shape/ReduceKinds.def"
      std::string expected = names.front();
      for (size_t i = 1; i < names.size(); ++i)
        expected += (i + 1 == names.size() ? " or " : ", ") + names[i];
      checker.diagnostics().error(red.loc, what + "; expected " + expected,
                                  red.length);
      return std::nullopt;
    }
    reduction = *kind;
    // any/all of numbers reduce their truth, `x != 0` (as numpy, torch and
    // einops: NaN is true, -0.0 false), which is astype(x, bool).
    if (*kind == ReduceKind::Any || *kind == ReduceKind::All)
      x = checker.builder(e.loc).cast(*x, DType::Bool);
  }
  auto acc = checker.accArg(e, kind);
  if (!acc)
    return std::nullopt;
  auto sizes = checker.sizeArgs(e);
  if (!sizes)
    return std::nullopt;
  auto built = checker.builder(e.loc).transform(kind, *x, *pattern, *sizes,
                                                reduction, acc->dtype);
  if (!built) {
    checker.reportBuild(built.error(), e, patExpr, *acc,
                        isReduce ? e.args[2].get() : nullptr);
    checker.noteSpacedPattern(built.error(), *patExpr);
    return std::nullopt;
  }
  if (isReduce) {
    const TransformInfo &info = *checker.function().ops.back().transform;
    size_t checksBefore = checker.function().ctx.constraints.size();
    if (auto ok = requireNonEmptyReduction(checker.function().ctx, reduction,
                                           *pattern, info);
        !ok) {
      checker.report(ok.error(), e, patExpr);
      return std::nullopt;
    }
    // The run-time message names the reduce by its place in the file.
    for (size_t i = checksBefore; i < checker.function().ctx.constraints.size();
         ++i)
      checker.function().ctx.constraints[i].reason =
          "reduce(..., \"" + patExpr->text + "\", \"" +
          reduceKindName(reduction) + "\") at line " +
          std::to_string(e.loc.line) + ": " +
          checker.function().ctx.constraints[i].reason;
  }
  return checker.single(*built);
}

} // namespace

const std::vector<SurfaceCall> &surfaceCallsOfRearrange() {
  static const std::vector<SurfaceCall> calls = {
      {"rearrange", 0, [](FunctionChecker &checker, const Expr &call) {
         return checkTransformCall(checker, call);
       }}};
  return calls;
}

const std::vector<SurfaceCall> &surfaceCallsOfReduce() {
  static const std::vector<SurfaceCall> calls = {
      {"reduce", 1, [](FunctionChecker &checker, const Expr &call) {
         return checkTransformCall(checker, call);
       }}};
  return calls;
}

const std::vector<SurfaceCall> &surfaceCallsOfRepeat() {
  static const std::vector<SurfaceCall> calls = {
      {"repeat", 2, [](FunctionChecker &checker, const Expr &call) {
         return checkTransformCall(checker, call);
       }}};
  return calls;
}

} // namespace ein::sema

namespace ein {

// --- Builder ---

namespace {

/// transform() builds rearrange, repeat and reduce; another kind is refused
/// by name rather than built as a rearrange.
std::optional<BuildError> notATransform(OpKind kind,
                                        const std::string &pattern) {
  if (kind == OpKind::Rearrange || kind == OpKind::Repeat ||
      kind == OpKind::Reduce)
    return std::nullopt;
  return build::failure(
      ShapeError::atOp(fmt::format("transform builds rearrange, "
                                   "repeat or reduce, not {}",
                                   opKindName(kind))),
      opKindName(kind), pattern);
}

} // namespace

BuildOr<unsigned> ProgramBuilder::rearrange(unsigned x,
                                            const std::string &pattern,
                                            std::vector<SizeArg> sizes) {
  return transform(OpKind::Rearrange, x, pattern, std::move(sizes));
}

BuildOr<unsigned> ProgramBuilder::repeat(unsigned x, const std::string &pattern,
                                         std::vector<SizeArg> sizes) {
  return transform(OpKind::Repeat, x, pattern, std::move(sizes));
}

BuildOr<unsigned> ProgramBuilder::reduce(unsigned x, const std::string &pattern,
                                         ReduceKind how,
                                         std::vector<SizeArg> sizes,
                                         std::optional<DType> acc) {
  return transform(OpKind::Reduce, x, pattern, std::move(sizes), how, acc);
}

BuildOr<unsigned> ProgramBuilder::transform(OpKind kind, unsigned x,
                                            const std::string &pattern,
                                            std::vector<SizeArg> sizes,
                                            ReduceKind how,
                                            std::optional<DType> acc) {
  if (auto refused = notATransform(kind, pattern))
    return *refused;
  PatternUse use = kind == OpKind::Reduce   ? PatternUse::Reduce
                   : kind == OpKind::Repeat ? PatternUse::Repeat
                                            : PatternUse::Rearrange;
  auto parsed = parsePattern(pattern, use);
  if (!parsed)
    return build::failure(parsed.error(), opKindName(kind), pattern);
  return transform(kind, x, *parsed, std::move(sizes), how, acc);
}

BuildOr<unsigned> ProgramBuilder::transform(OpKind kind, unsigned x,
                                            const Pattern &parsed,
                                            std::vector<SizeArg> sizes,
                                            ReduceKind how,
                                            std::optional<DType> acc) {
  if (auto refused = notATransform(kind, parsed.text))
    return *refused;
  bool isReduce = kind == OpKind::Reduce;
  PatternUse use = isReduce                 ? PatternUse::Reduce
                   : kind == OpKind::Repeat ? PatternUse::Repeat
                                            : PatternUse::Rearrange;
  std::string name = opKindName(kind);
  const std::string &pattern = parsed.text;
  const DTypeRule &rule =
      isReduce ? reduceDTypeRule(how) : *findDTypeRule(name);
  if (auto error = build::dtypeError(rule, type(x).dtype, 0, name, pattern))
    return *error;
  if (auto error = build::accError(rule, acc, name, pattern))
    return *error;
  auto info = analyzeTransform(fn.ctx, use, parsed, type(x).shape, sizes);
  if (!info)
    return build::withSpacedHint(
        build::failure(info.error(), name, pattern), parsed, use, fn.ctx,
        [&](InferContext &ctx, const Pattern &spaced) {
          return bool(analyzeTransform(ctx, use, spaced, type(x).shape, sizes));
        });
  CheckedOp op;
  op.kind = kind;
  op.pattern = pattern;
  op.parsed = parsed;
  op.sizes = std::move(sizes);
  op.reduction = how;
  op.acc = acc;
  op.operands = {x};
  op.transform = *info;
  return append(std::move(op),
                TensorType{info->result, acc.value_or(type(x).dtype)});
}

} // namespace ein

namespace ein {

// --- Cost ---

namespace {

std::vector<std::string>
transformCostNonUnit(const std::vector<std::string> &axes,
                     const std::map<std::string, SizeExpr> &sizes) {
  std::vector<std::string> out;
  for (auto &a : axes) {
    auto it = sizes.find(a);
    if (it != sizes.end() && it->second.constantValue() == Int(1))
      continue;
    out.push_back(a);
  }
  return out;
}

/// A rearrange is a view when elementary axes keep their order: it only
/// splits or merges adjacent axes. A repeat is a view when, in addition, each
/// new axis stands in a dim of its own (a stride-0 broadcast).
bool transformCostIsView(const CostInput &in) {
  const TransformInfo &t = *in.transform;
  std::set<std::string> inputSet(t.inputAxes.begin(), t.inputAxes.end());
  std::vector<std::string> kept;
  for (auto &a : t.outputAxes)
    if (inputSet.count(a))
      kept.push_back(a);
  if (in.kind == OpKind::Repeat) {
    for (auto &group : t.outputGroups) {
      bool hasNew = false, hasOld = false;
      for (auto &a : group)
        (inputSet.count(a) ? hasOld : hasNew) = true;
      if (hasNew && hasOld)
        return false;
    }
  }
  return transformCostNonUnit(t.inputAxes, t.axisSizes) ==
         transformCostNonUnit(kept, t.axisSizes);
}

/// Rearrange and repeat: a view moves no data.
void transformCostOfView(const CostInput &in, CostCounts &counts) {
  counts.view = in.transform && transformCostIsView(in);
  if (counts.view)
    counts.read = counts.written = SizeExpr();
}

} // namespace

void costOfRearrange(const CostInput &in, const Bindings &,
                     CostCounts &counts) {
  transformCostOfView(in, counts);
}

void costOfRepeat(const CostInput &in, const Bindings &, CostCounts &counts) {
  transformCostOfView(in, counts);
}

void costOfReduce(const CostInput &in, const Bindings &env,
                  CostCounts &counts) {
  SizeExpr inElems = numElements(in.inputs[0].shape);
  SizeExpr outElems = numElements(in.outputs[0].shape);
  // n-1 combining operations per output over n elements: N - M in all,
  // plus what the kind's finish (ReduceKinds.def) costs.
  switch (reduceFinish(in.reduction)) {
  case ReduceFinish::None:
    counts.flops = inElems - outElems;
    break;
  case ReduceFinish::Mean: // one division per output
    counts.flops = inElems - outElems + outElems;
    break;
  case ReduceFinish::Variance:
    // Two passes: the mean (N - M adds, M divisions), then per element a
    // subtraction and a square (2N), their sum and the division (N - M +
    // M): 4N. The second pass reads the input again.
    counts.flops = SizeExpr::constant(4) * inElems;
    counts.read = counts.read + bytesOf(in.inputs[0]);
    break;
  }
  // A reduction over an empty axis (N = 0) does no combining, each output
  // being the identity, where the formula N - M would count -M; a mean still
  // divides each of its M outputs (0/0).
  std::optional<Int> value = counts.flops.evaluate(env);
  if (value && *value < 0) {
    counts.overridesFlopsValue = true;
    counts.flopsValue = Int(0);
  }
  if (reduceFinish(in.reduction) == ReduceFinish::Mean &&
      inElems.evaluate(env) == Int(0)) {
    counts.overridesFlopsValue = true;
    counts.flopsValue = outElems.evaluate(env);
  }
  // var over an empty axis still divides twice per output (0/0).
  if (reduceFinish(in.reduction) == ReduceFinish::Variance &&
      inElems.evaluate(env) == Int(0)) {
    counts.overridesFlopsValue = true;
    counts.flopsValue = (SizeExpr::constant(2) * outElems).evaluate(env);
  }
}

} // namespace ein
