// The rules of take, take_along and scatter_add (take's adjoint): the
// checker's calls, the builder's bodies, the cost and the gradient. The
// family's slice is in Slice.cpp.
#include "../BuildErrors.h"
#include "../Differentiator.h"
#include "../FunctionChecker.h"
#include "../LayoutInference.h"
#include "ein/Sema/OpCost.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein::sema {

// --- Checker ---

namespace {

/// What take and take_along's checkers say: the op's name, its usage, what
/// it calls its first operand, an example axis.
struct GatherCall {
  const char *name, *usage, *operand, *example;
};

/// take(table, ids, "axis") and take_along(x, ids, "axis"): three
/// arguments, the axis one size written as a string; `build` builds the op.
std::optional<Operand> checkGatherCall(
    FunctionChecker &checker, const Expr &e, const GatherCall &op,
    BuildOr<unsigned> (ProgramBuilder::*build)(unsigned, unsigned, const Dim &,
                                               std::string)) {
  if (e.args.size() != 3 || !e.keywords.empty()) {
    checker.diagnostics().error(e.loc, op.usage, e.length);
    return std::nullopt;
  }
  const Expr &axisArg = *e.args[2];
  if (axisArg.kind != Expr::Kind::String) {
    checker.diagnostics().error(
        axisArg.loc,
        fmt::format("{}'s axis is a string naming {} dim by its size, "
                    "e.g. \"{}\"; {}",
                    op.name, op.operand, op.example, op.usage),
        axisArg.length);
    return std::nullopt;
  }
  auto table = checker.tensorOf(*e.args[0]);
  if (!table)
    return std::nullopt;
  auto ids = checker.tensorOf(*e.args[1]);
  if (!ids)
    return std::nullopt;
  auto parsed = parseShape(axisArg.text);
  if (parsed && parsed->size() == 1 && !(*parsed)[0].meshAxis.empty()) {
    checker.diagnostics().error(
        axisArg.loc,
        fmt::format("{}'s axis \"{}\" has a layout; layouts are written in "
                    "types, not in an op's arguments",
                    op.name, axisArg.text),
        axisArg.length);
    return std::nullopt;
  }
  if (!parsed || parsed->size() != 1) {
    checker.diagnostics().error(
        axisArg.loc,
        fmt::format("{}'s axis \"{}\" must be one size (a dim name "
                    "or an expression such as \"n + 1\")",
                    op.name, axisArg.text),
        axisArg.length);
    return std::nullopt;
  }
  Dim axis = checker.builtShape(*parsed)[0];
  auto taken = checker.builtAlong(
      (checker.builder(e.loc).*build)(*table, *ids, axis, axisArg.text), e,
      axisArg);
  if (!taken)
    return std::nullopt;
  return checker.single(*taken);
}

} // namespace

const std::vector<SurfaceCall> &surfaceCallsOfTake() {
  static const std::vector<SurfaceCall> calls = {
      {"take", 8, [](FunctionChecker &checker, const Expr &call) {
         return checkGatherCall(
             checker, call,
             {"take",
              "take expects (table, ids, \"axis\"), e.g. take(table, ids, "
              "\"vocab\")",
              "the table's", "vocab"},
             &ProgramBuilder::take);
       }}};
  return calls;
}

const std::vector<SurfaceCall> &surfaceCallsOfTakeAlong() {
  static const std::vector<SurfaceCall> calls = {
      {"take_along", 11, [](FunctionChecker &checker, const Expr &call) {
         return checkGatherCall(
             checker, call,
             {"take_along",
              "take_along expects (x, ids, \"axis\"), e.g. take_along(logp, "
              "targets, \"vocab\")",
              "x's", "vocab"},
             &ProgramBuilder::takeAlong);
       }}};
  return calls;
}

// No call: only grad() builds it, as take's adjoint.
const std::vector<SurfaceCall> &surfaceCallsOfScatterAdd() {
  static const std::vector<SurfaceCall> calls;
  return calls;
}

} // namespace ein::sema

namespace ein {

// --- Builder ---

namespace {

BuildError takeError(ShapeError error, const std::string &written) {
  return BuildError{std::move(error), "take", written};
}

/// Why `dtype` cannot index (take's ids, take_along's, scatter_add's), or
/// nullopt.
std::optional<std::string> idsDTypeError(DType dtype, const char *op = "take") {
  if (dtype == DType::I64 || dtype == DType::I32)
    return std::nullopt;
  return fmt::format("{}'s ids must be integers (i32 or i64), not {}", op,
                     dtypeName(dtype));
}

/// The first variadic dim of `shape`, which take cannot index around (the
/// lowering needs every rank).
const Dim *takeVariadicDim(const Shape &shape) {
  for (const Dim &d : shape)
    if (d.isPack())
      return &d;
  return nullptr;
}

std::string takeVariadicMessage(const Dim &d) {
  return fmt::format("take does not support a variadic dim (*{}) in the "
                     "table or the ids; name its dims",
                     d.pack);
}

} // namespace

namespace {

/// The position of the one dim of `shape` (take's table, take_along's
/// input: `operand`) whose size is `axis`, or `op`'s refusal anchored in the
/// axis as `written`.
BuildOr<unsigned> gatherAxis(const char *op, const char *operand,
                             const Shape &shape, const Dim &axis,
                             const std::string &written,
                             const std::string &shapeText) {
  auto axisError = [&](std::string message) {
    return BuildError{
        ShapeError::atPattern(std::move(message), 0,
                              static_cast<unsigned>(written.size())),
        op, written};
  };
  if (axis.isPack() || isAnonymousName(axis.size.str()))
    return axisError(fmt::format("{}'s axis \"{}\" must be a size, not a "
                                 "variadic or anonymous dim",
                                 op, written));
  std::vector<size_t> matches = dimsOfSize(shape, axis.size);
  if (matches.empty()) {
    std::vector<std::string> names;
    for (const Dim &d : shape)
      if (!d.isPack())
        names.push_back(d.size.str());
    std::string hint;
    // Short names are too close to every other to suggest one.
    std::string wanted = axis.size.str();
    if (auto close =
            closestName(wanted, names, std::min<size_t>(2, wanted.size() / 2)))
      hint = fmt::format("; did you mean \"{}\"?", *close);
    else if (takeVariadicDim(shape))
      hint = "; an axis inside a variadic (*name) cannot be named";
    return axisError(fmt::format("{}'s axis \"{}\" is not a dim of {} "
                                 "(shape \"{}\"){}",
                                 op, written, operand, shapeText, hint));
  }
  if (matches.size() > 1)
    return axisError(fmt::format("{}'s axis \"{}\" is ambiguous: {} "
                                 "(shape \"{}\") has {} dims of that size; "
                                 "rearrange it so that one dim has its own "
                                 "name",
                                 op, written, operand, shapeText,
                                 matches.size()));
  return static_cast<unsigned>(matches[0]);
}

} // namespace

BuildOr<unsigned> ProgramBuilder::take(unsigned table, unsigned ids,
                                       const Dim &axis, std::string written) {
  if (written.empty())
    written = axis.str();
  if (auto why = idsDTypeError(type(ids).dtype))
    return takeError(ShapeError::atOperand(*why, 1), written);
  auto at = gatherAxis("take", "the table", fn.ctx.expand(type(table).shape),
                       axis, written, shapeStr(type(table).shape));
  if (!at)
    return at;
  auto taken = takeAt(table, ids, *at);
  if (!taken)
    return takeError(taken.error().error, written);
  // The axis as the caller named it: the run-time message for an id out
  // of range names it (JIT.cpp's takeSites).
  fn.ops.back().sizeValue = axis.size;
  return taken;
}

BuildOr<unsigned> ProgramBuilder::takeAlong(unsigned x, unsigned ids,
                                            const Dim &axis,
                                            std::string written) {
  if (written.empty())
    written = axis.str();
  auto refuse = [&](ShapeError error) {
    return BuildError{std::move(error), "take_along", written};
  };
  if (auto why = idsDTypeError(type(ids).dtype, "take_along"))
    return refuse(ShapeError::atOperand(*why, 1));
  auto at = gatherAxis("take_along", "the input", fn.ctx.expand(type(x).shape),
                       axis, written, shapeStr(type(x).shape));
  if (!at)
    return at;
  auto taken = takeAlongAt(x, ids, *at);
  if (!taken)
    return refuse(taken.error().error);
  // The axis as the caller named it, for the run-time message (takeSites).
  fn.ops.back().sizeValue = axis.size;
  return taken;
}

namespace {

/// The dims of `a` (as written) that `b` lacks, counted as multisets.
std::vector<std::string> dimsMissingFrom(const Shape &a, const Shape &b) {
  std::vector<std::string> left;
  for (const Dim &d : b)
    left.push_back(d.str());
  std::vector<std::string> missing;
  for (const Dim &d : a) {
    auto it = std::find(left.begin(), left.end(), d.str());
    if (it == left.end())
      missing.push_back(d.str());
    else
      left.erase(it);
  }
  return missing;
}

} // namespace

BuildOr<unsigned> ProgramBuilder::takeAlongAt(unsigned x, unsigned ids,
                                              unsigned axis) {
  auto refuse = [](std::string message, unsigned operand) {
    return BuildError{ShapeError::atOperand(std::move(message), operand),
                      "take_along", ""};
  };
  if (auto why = idsDTypeError(type(ids).dtype, "take_along"))
    return refuse(*why, 1);
  Shape xShape = fn.ctx.expand(type(x).shape);
  Shape idsShape = fn.ctx.expand(type(ids).shape);
  for (unsigned i : {0u, 1u})
    if (const Dim *d = takeVariadicDim(i == 0 ? xShape : idsShape))
      return refuse(fmt::format("take_along does not support a variadic dim "
                                "(*{}) in the input or the ids; name its dims",
                                d->pack),
                    i);
  if (axis >= xShape.size())
    return refuse(fmt::format("take_along's axis {} is beyond the input's "
                              "rank {}",
                              axis, xShape.size()),
                  0);
  // The ids have the input's shape without the axis, dim for dim: no
  // broadcasting (a wrong target shape must not pass as a broadcast).
  Shape expected = xShape;
  expected.erase(expected.begin() + axis);
  std::string want = shapeStr(expected), got = shapeStr(idsShape);
  auto shapeError = [&](const std::string &why) {
    return refuse(fmt::format("take_along's ids (shape \"{}\") must have "
                              "the input's shape without its axis {}: \"{}\"; "
                              "{}",
                              got, xShape[axis].str(), want, why),
                  1);
  };
  std::vector<std::string> extra = dimsMissingFrom(idsShape, expected),
                           missing = dimsMissingFrom(expected, idsShape);
  if (idsShape.size() != expected.size()) {
    std::vector<std::string> why;
    if (!extra.empty())
      why.push_back(fmt::format("the ids have the extra {} {}",
                                extra.size() == 1 ? "dim" : "dims",
                                fmt::join(extra, ", ")));
    if (!missing.empty())
      why.push_back(fmt::format("the ids lack {} {}",
                                missing.size() == 1 ? "the dim" : "the dims",
                                fmt::join(missing, ", ")));
    if (why.empty())
      why.push_back(fmt::format("the ids have rank {}, not {}", idsShape.size(),
                                expected.size()));
    std::string message = fmt::format("{}", fmt::join(why, "; "));
    if (idsShape.size() == xShape.size() &&
        idsShape[axis].size.constantValue() == Int(1))
      message += " (take_along gives one element per position: the ids "
                 "have no dim 1 at the axis, unlike numpy's "
                 "take_along_axis)";
    return shapeError(message);
  }
  if (extra.empty() && missing.empty() && got != want)
    return shapeError(fmt::format("the ids' dims are in another order; "
                                  "rearrange them to \"{}\"",
                                  want));
  // Each pair provably equal; only an anonymous dim (`_`), which the user
  // never named, is left to an entry check. Two names, or a name and a
  // number, are refused: a size bound by the match would be a silent
  // broadcast ("1 s" taken for "b s").
  for (size_t i = 0; i < expected.size(); ++i) {
    const SizeExpr &a = expected[i].size, &b = idsShape[i].size;
    auto proof = fn.ctx.prove(a, b);
    if (proof == InferContext::Proof::Equal)
      continue;
    if (proof == InferContext::Proof::Unknown &&
        (mentionsAnonymous(a) || mentionsAnonymous(b)) &&
        fn.ctx.unify(a, b, "take_along's ids"))
      continue;
    return shapeError(fmt::format("dim {} of the ids is {}, not {}", i,
                                  idsShape[i].str(), expected[i].str()));
  }
  CheckedOp op;
  op.kind = OpKind::TakeAlong;
  op.axis = axis;
  op.sizeValue = xShape[axis].size;
  op.operands = {x, ids};
  return append(std::move(op), TensorType{expected, type(x).dtype});
}

BuildOr<unsigned> ProgramBuilder::takeAt(unsigned table, unsigned ids,
                                         unsigned axis) {
  if (auto why = idsDTypeError(type(ids).dtype))
    return takeError(ShapeError::atOperand(*why, 1), "");
  Shape tableShape = fn.ctx.expand(type(table).shape);
  Shape idsShape = fn.ctx.expand(type(ids).shape);
  // The variadics before the axis would leave its position unknown; after
  // it, and in the ids, they must have a rank the lowering knows.
  for (unsigned i : {0u, 1u})
    if (const Dim *d = takeVariadicDim(i == 0 ? tableShape : idsShape))
      return takeError(ShapeError::atOperand(takeVariadicMessage(*d), i), "");
  if (axis >= tableShape.size())
    return takeError(
        ShapeError::atOperand(fmt::format("take's axis {} is beyond the "
                                          "table's rank {}",
                                          axis, tableShape.size()),
                              0),
        "");
  Shape result(tableShape.begin(), tableShape.begin() + axis);
  result.insert(result.end(), idsShape.begin(), idsShape.end());
  result.insert(result.end(), tableShape.begin() + axis + 1, tableShape.end());
  CheckedOp op;
  op.kind = OpKind::Take;
  op.axis = axis;
  op.sizeValue = tableShape[axis].size;
  op.operands = {table, ids};
  return append(std::move(op), TensorType{result, type(table).dtype});
}

BuildOr<unsigned> ProgramBuilder::scatterAdd(unsigned ids, unsigned updates,
                                             const TensorType &table,
                                             unsigned axis) {
  auto refuse = [](std::string message, unsigned operand) {
    return BuildError{ShapeError::atOperand(std::move(message), operand),
                      "scatter_add", ""};
  };
  if (auto why = idsDTypeError(type(ids).dtype))
    return refuse(*why, 0);
  if (type(updates).dtype != table.dtype)
    return refuse(fmt::format("scatter_add's updates are {}, its table {}",
                              dtypeName(type(updates).dtype),
                              dtypeName(table.dtype)),
                  1);
  Shape tableShape = fn.ctx.expand(table.shape);
  if (const Dim *d = takeVariadicDim(tableShape))
    return refuse(takeVariadicMessage(*d), 1);
  if (axis >= tableShape.size())
    return refuse(fmt::format("scatter_add's axis {} is beyond the table's "
                              "rank {}",
                              axis, tableShape.size()),
                  1);
  CheckedOp op;
  op.kind = OpKind::ScatterAdd;
  op.axis = axis;
  // The table's dim at the axis, which the updates do not give (build()).
  op.sizeValue = tableShape[axis].size;
  op.operands = {ids, updates};
  return append(std::move(op), table);
}

// The registry rows' builder rules (ProgramBuilder::build): by the axis's
// position, as the IR and the adjoints name it.

BuildOr<std::vector<unsigned>>
buildOpOfTake(ProgramBuilder &builder, const CheckedOp &attributes,
              const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 2, false))
    return *refused;
  auto taken = builder.takeAt(operands[0], operands[1], attributes.axis);
  // The axis as the caller named it, as take() keeps it (JIT.cpp's
  // takeSites quote it).
  if (taken && !attributes.sizeValue.str().empty())
    builder.function().ops.back().sizeValue = attributes.sizeValue;
  return asResults(std::move(taken));
}

BuildOr<std::vector<unsigned>>
buildOpOfTakeAlong(ProgramBuilder &builder, const CheckedOp &attributes,
                   const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 2, false))
    return *refused;
  auto taken = builder.takeAlongAt(operands[0], operands[1], attributes.axis);
  if (taken && !attributes.sizeValue.str().empty())
    builder.function().ops.back().sizeValue = attributes.sizeValue;
  return asResults(std::move(taken));
}

BuildOr<std::vector<unsigned>>
buildOpOfScatterAdd(ProgramBuilder &builder, const CheckedOp &attributes,
                    const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 2, false))
    return *refused;
  // The table: the updates (take's result) with the ids' dims folded back
  // into the one dim of size sizeValue at the axis.
  const TensorType &ids = builder.type(operands[0]),
                   &updates = builder.type(operands[1]);
  size_t axis = attributes.axis, idRank = ids.shape.size();
  if (axis + idRank > updates.shape.size())
    return BuildError{ShapeError::atOperand(
                          fmt::format("scatter_add's updates (rank {}) have no "
                                      "room for the ids' {} dims at axis {}",
                                      updates.shape.size(), idRank, axis),
                          1),
                      "scatter_add", ""};
  TensorType table = updates;
  table.shape.erase(table.shape.begin() + axis,
                    table.shape.begin() + axis + idRank);
  table.shape.insert(table.shape.begin() + axis,
                     Dim::ofSize(attributes.sizeValue));
  return asResults(
      builder.scatterAdd(operands[0], operands[1], table, attributes.axis));
}

} // namespace ein

namespace ein {

// --- Cost ---

void costOfTake(const CostInput &in, const Bindings &, CostCounts &counts) {
  // Reads the ids and only the rows gathered, not the table.
  counts.read = bytesOf(in.inputs[1]) + counts.written;
}

void costOfTakeAlong(const CostInput &in, const Bindings &,
                     CostCounts &counts) {
  // As take: the ids and one element of the input per result element, not
  // the whole input.
  counts.read = bytesOf(in.inputs[1]) + counts.written;
}

void costOfScatterAdd(const CostInput &in, const Bindings &,
                      CostCounts &counts) {
  // One add per update. Bytes: the ids and the updates read (the default),
  // plus a read-modify-write of the element each update lands on (an
  // update's size again, read and written: repeated ids are not merged);
  // the zero fill of the whole result written once.
  SizeExpr updates = bytesOf(in.inputs[1]);
  counts.flops = numElements(in.inputs[1].shape);
  counts.read = counts.read + updates;
  counts.written = counts.written + updates;
}

} // namespace ein

// --- Gradient ---
// take and scatter_add are each other's adjoint (a take's table gradient is
// a scatter-add of dy at the ids; a scatter-add's updates gradient the take
// of dy at them); take_along's is dy at the ids between zeros.
namespace ein {

/// take's adjoint: the table's gradient is zeros with dy added at the ids
/// (a scatter-add, O(updates), not a one-hot product over the vocabulary);
/// a row gathered several times gets the sum of its dys. The ids, integers,
/// have no gradient.
bool gradientOfTake(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned table = op.operands[0];
  if (!d.isActive(table) || !isFloat(d.dtypeOf(table)))
    return true;
  d.target(op, table);
  if (!d.shapeOf(table))
    return false;
  auto scattered = d.built(d.build().scatterAdd(
      op.operands[1], d.cast(*dy, d.dtypeOf(table)), d.type(table), op.axis));
  return scattered && d.accumulate(table, *scattered);
}

/// A scatter-add (a second-order gradient) is linear in its updates: their
/// gradient is the take of dy at the same ids.
bool gradientOfScatterAdd(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned updates = op.operands[1];
  if (!d.isActive(updates) || !isFloat(d.dtypeOf(updates)))
    return true;
  d.target(op, updates);
  auto gathered = d.built(d.build().takeAt(d.cast(*dy, d.dtypeOf(updates)),
                                           op.operands[0], op.axis));
  return gathered && d.accumulate(updates, *gathered);
}

/// take_along's adjoint: dx is zero except at the ids, where it is dy:
/// where(arange(v) == ids, dy, 0), the ids and dy given a dim 1 at the
/// axis and the positions dims 1 elsewhere, so that broadcasting by name
/// makes x's shape. Each position picks one element, so nothing adds up;
/// elementwise ops of x's size, as dense as the gradient itself, and
/// nothing saved but the ids. The ids, integers, have no gradient.
bool gradientOfTakeAlong(Differentiator &d, const CheckedOp &op) {
  std::optional<unsigned> dy = d.adjointOf(op.results[0]);
  if (!dy)
    return true;
  unsigned x = op.operands[0], ids = op.operands[1];
  if (!d.isActive(x) || !isFloat(d.dtypeOf(x)))
    return true;
  d.target(op, x);
  auto shape = d.shapeOf(x);
  if (!shape)
    return false;
  DType idType = d.dtypeOf(ids);
  auto positions = d.built(d.build().arange((*shape)[op.axis].size, idType));
  if (!positions)
    return false;
  // "a0 a1 -> a0 1 a1" (a dim 1 at the axis) and "p -> 1 p 1" (the
  // positions at the axis, 1 elsewhere).
  std::vector<std::string> names, withAxis, alongAxis;
  for (size_t i = 0; i + 1 < shape->size(); ++i)
    names.push_back(d.freshAxis());
  std::string p = d.freshAxis();
  for (size_t i = 0, k = 0; i < shape->size(); ++i) {
    bool at = i == op.axis;
    withAxis.push_back(at ? "1" : names[k]);
    alongAxis.push_back(at ? p : "1");
    k += !at;
  }
  std::string spread =
      fmt::format("{} -> {}", fmt::join(names, " "), fmt::join(withAxis, " "));
  auto idsAt = d.transform(OpKind::Rearrange, ids, spread, {});
  auto dyAt =
      d.transform(OpKind::Rearrange, d.cast(*dy, d.dtypeOf(x)), spread, {});
  auto row =
      d.transform(OpKind::Rearrange, *positions,
                  fmt::format("{} -> {}", p, fmt::join(alongAxis, " ")), {});
  if (!idsAt || !dyAt || !row)
    return false;
  auto picked = d.ew(ElementwiseFn::Eq, {*row, *idsAt});
  if (!picked)
    return false;
  auto dx =
      d.ew(ElementwiseFn::Where, {*picked, *dyAt, d.constant(0, d.dtypeOf(x))});
  return dx && d.accumulate(x, *dx);
}

} // namespace ein

// --- Layout ---
namespace ein {

namespace {

/// Layouts of the dims of `table` around `axis` with `ids` put in its place
/// (take's result, scatter_add's updates): table[:axis] ids table[axis+1:].
std::vector<std::string> aroundIds(const ValueLayout &table,
                                   const ValueLayout &ids, size_t axis) {
  std::vector<std::string> out(table.dims.begin(), table.dims.begin() + axis);
  out.insert(out.end(), ids.dims.begin(), ids.dims.end());
  out.insert(out.end(), table.dims.begin() + axis + 1, table.dims.end());
  return out;
}

/// Whether a mesh axis splits two dims of `dims`.
std::string axisTwice(const std::vector<std::string> &dims) {
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = i + 1; j < dims.size(); ++j)
      if (!dims[i].empty() && dims[i] == dims[j])
        return dims[i];
  return "";
}

} // namespace

/// take keeps the splits of the table's other dims and of the ids; a table
/// split along the axis taken is vocab-parallel: each rank takes the ids in
/// its block (zeros for the others) and the partial rows are all-reduced.
bool layoutOfTake(LayoutInference &li, const CheckedOp &op) {
  ValueLayout table = li.operand(op.operands[0]);
  const ValueLayout &ids = li.operand(op.operands[1]);
  if (op.axis >= table.dims.size())
    return true;
  std::string vocab = table.dims[op.axis];
  table.dims[op.axis].clear();
  ValueLayout out;
  out.dims = aroundIds(table, ids, op.axis);
  if (out.dims.size() != li.peek(op.results[0]).dims.size())
    return li.unsupported(op, li.shardedAxisOf(op),
                          "its result has another rank");
  std::string twice = axisTwice(out.dims);
  if (twice.empty() && !vocab.empty() &&
      std::find(out.dims.begin(), out.dims.end(), vocab) != out.dims.end())
    twice = vocab;
  if (!twice.empty())
    return li.fail(op, fmt::format("take's table and ids are split along {} "
                                   "both; reshard one of them (reshard(x, "
                                   "\"...\"))",
                                   twice));
  if (!vocab.empty()) {
    out.pending.push_back(vocab);
    out.pendingWhy = fmt::format(
        "take from a table split on {} (vocab-parallel: a masked local take)",
        vocab);
  }
  li.setResult(op.results[0], std::move(out));
  return true;
}

/// take's adjoint: the updates' table dims keep their splits; the ids'
/// dims are summed over (many updates land on one row), so a split there
/// leaves partial sums over its axis (the data-parallel gradient's
/// all-reduce).
bool layoutOfScatterAdd(LayoutInference &li, const CheckedOp &op) {
  const ValueLayout &ids = li.operand(op.operands[0]);
  const ValueLayout &updates = li.operand(op.operands[1]);
  ValueLayout out = li.replicatedOf(op.results[0]);
  size_t k = ids.dims.size();
  if (op.axis >= out.dims.size() ||
      updates.dims.size() + 1 != out.dims.size() + k)
    return li.shardedAxisOf(op).empty() ||
           li.unsupported(op, li.shardedAxisOf(op), "its ranks do not line up");
  for (size_t i = 0; i < out.dims.size(); ++i) {
    if (i == op.axis)
      continue;
    out.dims[i] = updates.dims[i < op.axis ? i : i - 1 + k];
  }
  for (size_t i = 0; i < k; ++i) {
    const std::string &a = updates.dims[op.axis + i].empty()
                               ? ids.dims[i]
                               : updates.dims[op.axis + i];
    if (a.empty() || std::find(out.pending.begin(), out.pending.end(), a) !=
                         out.pending.end())
      continue;
    if (std::find(out.dims.begin(), out.dims.end(), a) != out.dims.end())
      return li.fail(op, fmt::format("scatter_add's updates are split along "
                                     "{} twice; reshard them",
                                     a));
    out.pending.push_back(a);
    out.pendingWhy = fmt::format("scatter_add sums updates split on {}", a);
  }
  li.setResult(op.results[0], std::move(out));
  return true;
}

/// take_along picks along x's axis, which must be whole; the other dims
/// keep the splits of x and of the ids, which must agree.
bool layoutOfTakeAlong(LayoutInference &li, const CheckedOp &op) {
  ValueLayout x = li.operand(op.operands[0]);
  const ValueLayout &ids = li.operand(op.operands[1]);
  // Picking along a split axis: the tensor is gathered along it first, so
  // each rank's ids pick from the whole (on an axis of one rank, nothing
  // moves).
  std::string gathered;
  if (op.axis < x.dims.size()) {
    gathered = x.dims[op.axis];
    if (auto n = li.axisSize(gathered); n && *n == 1)
      gathered.clear();
    x.dims.erase(x.dims.begin() + op.axis);
  }
  ValueLayout out;
  out.dims = ids.dims;
  if (x.dims.size() != out.dims.size())
    return li.shardedAxisOf(op).empty() ||
           li.unsupported(op, li.shardedAxisOf(op), "its ranks do not line up");
  for (size_t i = 0; i < out.dims.size(); ++i) {
    if (out.dims[i].empty())
      out.dims[i] = x.dims[i];
    else if (!x.dims[i].empty() && x.dims[i] != out.dims[i])
      return li.fail(op, fmt::format("take_along's tensor and ids split a dim "
                                     "along different mesh axes ({} and {}); "
                                     "reshard one of them",
                                     x.dims[i], out.dims[i]));
  }
  if (!gathered.empty())
    li.gatherOperandFirst(op, gathered, op.results[0], out,
                          fmt::format("take_along picks along a dim split on "
                                      "{}: its tensor is gathered first",
                                      gathered));
  li.setResult(op.results[0], std::move(out));
  return true;
}

} // namespace ein
