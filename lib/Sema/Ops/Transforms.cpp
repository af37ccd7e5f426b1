// The rules of rearrange, reduce and repeat (the transforms of one tensor by
// a pattern): the checker's calls, the builder's bodies, the cost and the
// gradient.
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

/// reshard(x, "b@dp s d"): x with the layout written (the collectives
/// between the two layouts are layout inference's). Built as the identity
/// rearrange of x's dims, marked with the layout (CheckedOp::reshardTo).
std::optional<Operand> checkReshardCall(FunctionChecker &checker,
                                        const Expr &e) {
  auto &diags = checker.diagnostics();
  if (e.args.size() != 2 || !e.keywords.empty()) {
    diags.error(e.loc,
                "reshard expects (tensor, layout): reshard(x, "
                "\"b@dp s d\")",
                e.length);
    return std::nullopt;
  }
  auto x = checker.tensorOf(*e.args[0]);
  if (!x)
    return std::nullopt;
  const Expr &str = *e.args[1];
  if (str.kind != Expr::Kind::String) {
    diags.error(str.loc,
                "reshard's layout must be a shape string such as "
                "\"b@dp s d\"",
                str.length);
    return std::nullopt;
  }
  if (checker.moduleMeshAxes().empty()) {
    diags.error(e.loc,
                "reshard needs a mesh: this file declares none (write "
                "`mesh dp, tp` at the top level)",
                e.length);
    return std::nullopt;
  }
  TypeAnnotation annotation;
  annotation.dtype = dtypeName(checker.typeOf(*x).dtype);
  annotation.shape = str.text;
  annotation.shapeLoc = str.loc;
  auto type = checker.checkType(annotation);
  if (!type)
    return std::nullopt;
  CheckedFunction &fn = checker.function();
  Shape want = fn.ctx.expand(checker.builtShape(type->shape));
  Shape have = fn.ctx.expand(checker.typeOf(*x).shape);
  auto isVariadic = [](const Dim &d) { return d.isPack(); };
  if (std::any_of(want.begin(), want.end(), isVariadic) ||
      std::any_of(have.begin(), have.end(), isVariadic)) {
    diags.error(e.loc, "reshard of a variadic of unknown rank: name its dims",
                e.length);
    return std::nullopt;
  }
  if (auto ok = checkShapeMatches(fn.ctx, want, have); !ok) {
    diags.error(str.loc,
                fmt::format("reshard's layout \"{}\" is not the shape of "
                            "its tensor \"{}\": {}",
                            str.text, shapeStr(have), ok.error().message),
                str.length);
    return std::nullopt;
  }
  std::string axes;
  for (size_t i = 0; i < have.size(); ++i)
    axes += fmt::format("{}r{}", i ? " " : "", i);
  auto pattern = parsePattern(axes + " -> " + axes, PatternUse::Rearrange);
  if (!pattern) {
    diags.error(e.loc, "reshard: " + pattern.error().message, e.length);
    return std::nullopt;
  }
  auto built = checker.builder(e.loc).transform(
      OpKind::Rearrange, *x, *pattern, {}, ReduceKind::Sum, std::nullopt);
  if (!built) {
    diags.error(e.loc, "reshard: " + built.error().error.message, e.length);
    return std::nullopt;
  }
  std::vector<std::string> layout;
  for (const Dim &d : want)
    layout.push_back(d.meshAxis);
  fn.ops.back().reshardTo = std::move(layout);
  return checker.single(*built);
}

} // namespace

const std::vector<SurfaceCall> &surfaceCallsOfRearrange() {
  static const std::vector<SurfaceCall> calls = {
      {"rearrange", 0,
       [](FunctionChecker &checker, const Expr &call) {
         return checkTransformCall(checker, call);
       }},
      {"reshard", 13, [](FunctionChecker &checker, const Expr &call) {
         return checkReshardCall(checker, call);
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

// The registry rows' builder rules (ProgramBuilder::build): `transform` of
// the parsed pattern, or of its text when none was parsed.
namespace {

BuildOr<std::vector<unsigned>>
buildTransformOf(ProgramBuilder &builder, const CheckedOp &attributes,
                 const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 1, false))
    return *refused;
  if (attributes.parsed.text.empty())
    return asResults(builder.transform(attributes.kind, operands[0],
                                       attributes.pattern, attributes.sizes,
                                       attributes.reduction, attributes.acc));
  return asResults(builder.transform(attributes.kind, operands[0],
                                     attributes.parsed, attributes.sizes,
                                     attributes.reduction, attributes.acc));
}

} // namespace

BuildOr<std::vector<unsigned>>
buildOpOfRearrange(ProgramBuilder &builder, const CheckedOp &attributes,
                   const std::vector<unsigned> &operands) {
  return buildTransformOf(builder, attributes, operands);
}

BuildOr<std::vector<unsigned>>
buildOpOfReduce(ProgramBuilder &builder, const CheckedOp &attributes,
                const std::vector<unsigned> &operands) {
  return buildTransformOf(builder, attributes, operands);
}

BuildOr<std::vector<unsigned>>
buildOpOfRepeat(ProgramBuilder &builder, const CheckedOp &attributes,
                const std::vector<unsigned> &operands) {
  return buildTransformOf(builder, attributes, operands);
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

// --- Gradient ---
// Each transform's gradient is a transform the other way round: a
// rearrange's is the inverse rearrange, a repeat's the sum over what it
// repeated, a reduce's its output's gradient repeated back (scaled or masked
// per reduction).
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

namespace {

/// The gradient of a transform whose adjoint is the pattern reversed, done
/// by `back`: a rearrange's is a rearrange, a repeat's a sum.
bool gradReversedTransform(Differentiator &d, const CheckedOp &op,
                           OpKind back) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned x = op.operands[0];
  d.target(op, x);
  GradTransformSides s(d, *op.transform);
  auto dx = d.transform(back, *dy, s.out + " -> " + s.in, s.sizes);
  return dx && d.accumulate(x, *dx);
}

} // namespace

bool gradientOfRearrange(Differentiator &d, const CheckedOp &op) {
  return gradReversedTransform(d, op, OpKind::Rearrange);
}

bool gradientOfRepeat(Differentiator &d, const CheckedOp &op) {
  return gradReversedTransform(d, op, OpKind::Reduce);
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

// --- Layout ---
// An operand dim split on a mesh axis splits its major elementary axis; the
// result keeps the split where that axis stays a dim's major factor, and
// the axes summed away leave partial results (LayoutInference::throughAxes).
namespace ein {

namespace {

bool layoutOfTransform(LayoutInference &li, const CheckedOp &op,
                       ReduceKind reduction) {
  if (!op.transform) {
    std::string axis = li.shardedAxisOf(op);
    if (!axis.empty())
      return li.unsupported(op, axis, "its axes are not known");
    return true;
  }
  return li.throughAxes(op, {op.transform->inputGroups},
                        op.transform->outputGroups, op.transform->axisSizes,
                        reduction);
}

/// reshard: the layout written; between it and the operand's, partial
/// results are all-reduced (reduce-scattered onto a dim the new layout
/// splits on their axis), a split dropped is an all-gather, a split moved
/// to another dim an all-to-all, and a split added a local slice.
bool layoutOfReshard(LayoutInference &li, const CheckedOp &op) {
  unsigned x = op.operands[0], result = op.results[0];
  ValueLayout have = li.peek(x);
  const std::vector<std::string> &want = *op.reshardTo;
  if (have.dims.size() != want.size())
    return li.fail(op, "reshard's layout has another rank than its tensor");
  Shape shape = li.shapeOf(result);
  int at = static_cast<int>(li.current);
  ValueLayout now = have;
  now.pending.clear();
  for (const std::string &axis : have.pending) {
    auto to = std::find(want.begin(), want.end(), axis);
    size_t j = static_cast<size_t>(to - want.begin());
    if (to != want.end() && have.dims[j].empty()) {
      li.record(CollectiveKind::ReduceScatter, axis, result, at,
                have.pendingKind, now,
                fmt::format("reshard scatters {} onto {}@{}", have.pendingWhy,
                            bareDimStr(shape[j]), axis));
      now.dims[j] = axis;
    } else {
      li.record(CollectiveKind::AllReduce, axis, result, at, have.pendingKind,
                now, "reshard completes " + have.pendingWhy);
    }
  }
  for (size_t j = 0; j < want.size(); ++j) {
    const std::string a = now.dims[j];
    if (a.empty() || a == want[j])
      continue;
    auto to = std::find(want.begin(), want.end(), a);
    size_t k = static_cast<size_t>(to - want.begin());
    if (to != want.end() && now.dims[k].empty()) {
      now.dims[j].clear();
      now.dims[k] = a;
      li.record(CollectiveKind::AllToAll, a, result, at, ReduceKind::Sum, now,
                fmt::format("reshard moves the split on {} from {} to {}", a,
                            bareDimStr(shape[j]), bareDimStr(shape[k])));
      continue;
    }
    now.dims[j].clear();
    li.record(CollectiveKind::AllGather, a, result, at, ReduceKind::Sum, now,
              fmt::format("reshard drops {}@{}", bareDimStr(shape[j]), a));
  }
  // What is left to add is a local slice of a replicated dim.
  now.dims = want;
  li.setResult(result, std::move(now));
  return true;
}

} // namespace

bool layoutOfRearrange(LayoutInference &li, const CheckedOp &op) {
  if (op.reshardTo)
    return layoutOfReshard(li, op);
  return layoutOfTransform(li, op, ReduceKind::Sum);
}

bool layoutOfReduce(LayoutInference &li, const CheckedOp &op) {
  return layoutOfTransform(li, op, op.reduction);
}

bool layoutOfRepeat(LayoutInference &li, const CheckedOp &op) {
  return layoutOfTransform(li, op, ReduceKind::Sum);
}

} // namespace ein
