// The rules of the elementwise functions and astype (Cast): the checker's
// calls, the builder's bodies and the cost.
#include "../BuildErrors.h"
#include "../FunctionChecker.h"
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

} // namespace ein
