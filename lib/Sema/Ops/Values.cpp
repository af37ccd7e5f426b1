// The rules of the ops that make values from no tensor (constant, size,
// arange): the checker's calls, the builder's bodies, the cost and the
// gradient.
#include "../BuildErrors.h"
#include "../Differentiator.h"
#include "../FunctionChecker.h"
#include "../LayoutInference.h"
#include "ein/Sema/OpCost.h"

#include <fmt/format.h>

#include <cmath>

namespace ein::sema {

// --- Checker ---

namespace {

/// arange(n, dtype=...): 0, 1, ..., n-1 along the dim n.
std::optional<Operand> checkArangeCall(FunctionChecker &checker,
                                       const Expr &e) {
  const char *usage = "arange expects (size, dtype=...), e.g. arange(s) or "
                      "arange(s, dtype=f32)";
  if (e.args.size() != 1) {
    checker.diagnostics().error(e.loc, usage, e.length);
    return std::nullopt;
  }
  DType dtype = DType::I64;
  const Expr *dtypeExpr = nullptr;
  for (const KeywordArg &k : e.keywords) {
    if (k.name != "dtype") {
      checker.diagnostics().error(
          k.loc,
          fmt::format("arange takes no keyword argument '{}'; {}", k.name,
                      usage),
          static_cast<unsigned>(k.name.size()));
      return std::nullopt;
    }
    std::optional<DType> d;
    if (k.value->kind == Expr::Kind::Name)
      d = parseDType(k.value->text);
    if (!d) {
      checker.diagnostics().error(
          k.value->loc, fmt::format("dtype= expects a dtype ({})", kDTypeList),
          k.value->length);
      return std::nullopt;
    }
    dtype = *d;
    dtypeExpr = k.value.get();
  }
  const Expr &arg = *e.args[0];
  if (arg.kind == Expr::Kind::Name && checker.isTensorName(arg.text)) {
    checker.diagnostics().error(
        arg.loc,
        fmt::format("arange takes a size (a dim, an integer or an "
                    "expression of them), not a tensor ('{}')",
                    arg.text),
        arg.length);
    return std::nullopt;
  }
  if (arg.kind == Expr::Kind::Call || arg.kind == Expr::Kind::Float ||
      arg.kind == Expr::Kind::String || arg.kind == Expr::Kind::List) {
    checker.diagnostics().error(
        arg.loc,
        "arange takes a size (a dim, an integer or an expression of "
        "them), not a tensor",
        arg.length);
    return std::nullopt;
  }
  std::optional<SizeExpr> n = checker.sizeOf(arg);
  if (!n)
    return std::nullopt;
  BuildOr<unsigned> counted = checker.builder(e.loc).arange(*n, dtype);
  if (!counted) {
    // The rule refuses the dtype (its keyword, dtype=) or the size.
    const ShapeError &why = counted.error().error;
    const Expr &at =
        why.anchor == ShapeError::Anchor::Kwarg && dtypeExpr ? *dtypeExpr : arg;
    checker.diagnostics().error(at.loc, why.message, at.length);
    return std::nullopt;
  }
  return checker.single(*counted);
}

} // namespace

// No call: a number in the text is a constant.
const std::vector<SurfaceCall> &surfaceCallsOfConstant() {
  static const std::vector<SurfaceCall> calls;
  return calls;
}

// No call: a dim used as a value (`B * K`) is a size.
const std::vector<SurfaceCall> &surfaceCallsOfSize() {
  static const std::vector<SurfaceCall> calls;
  return calls;
}

const std::vector<SurfaceCall> &surfaceCallsOfArange() {
  static const std::vector<SurfaceCall> calls = {
      {"arange", 10, [](FunctionChecker &checker, const Expr &call) {
         return checkArangeCall(checker, call);
       }}};
  return calls;
}

} // namespace ein::sema

namespace ein {

// --- Builder ---

unsigned ProgramBuilder::constant(double value, DType dtype) {
  CheckedOp op;
  op.kind = OpKind::Constant;
  op.constant = value;
  op.constantIsInt = std::trunc(value) == value;
  // MLIRGen carries an integer dtype's value exactly, from constantInt.
  if (!isFloat(dtype) && dtype != DType::Bool)
    op.constantInt = static_cast<int64_t>(value);
  return append(std::move(op), TensorType{{}, dtype});
}

BuildOr<unsigned> ProgramBuilder::literal(const NumberLiteral &value,
                                          DType dtype) {
  if (auto why = literalDTypeError(value, dtype))
    return build::failure(ShapeError::atOp(*why), "constant", "");
  CheckedOp op;
  op.kind = OpKind::Constant;
  op.constant = value.value;
  op.constantIsInt = value.isInt;
  if (value.isInt && value.exact && !isFloat(dtype) && dtype != DType::Bool)
    op.constantInt = static_cast<int64_t>(*value.exact);
  return append(std::move(op), TensorType{{}, dtype});
}

BuildOr<unsigned> ProgramBuilder::size(const SizeExpr &n, DType dtype) {
  if (auto known = n.constantValue()) {
    NumberLiteral number;
    number.isInt = true;
    number.exact = *known;
    number.value = static_cast<double>(*known);
    return literal(number, dtype);
  }
  if (dtype == DType::Bool)
    return build::failure(
        ShapeError::atOp("a size cannot combine with a bool "
                         "tensor; compare it (x < n) or convert "
                         "with astype"),
        "size", "");
  CheckedOp op;
  op.kind = OpKind::Size;
  op.sizeValue = n;
  return append(std::move(op), TensorType{{}, dtype});
}

BuildOr<unsigned> ProgramBuilder::arange(const SizeExpr &n, DType dtype) {
  if (dtype == DType::Bool)
    return build::failure(
        ShapeError::atKwarg("arange counts in a number dtype, not "
                            "bool; compare the result instead "
                            "(arange(s) < n)",
                            0),
        "arange", "");
  if (auto known = n.substitute(fn.ctx.env).constantValue();
      known && *known < 0)
    return build::failure(
        ShapeError::atOperand(fmt::format("arange of a negative size ({})",
                                          static_cast<long long>(*known)),
                              0),
        "arange", "");
  CheckedOp op;
  op.kind = OpKind::Arange;
  op.sizeValue = n;
  return append(std::move(op), TensorType{{Dim::ofSize(n)}, dtype});
}

// The registry rows' builder rules (ProgramBuilder::build): the typed
// methods above, their result dtype from CheckedOp::dtype (no operand gives
// it).

BuildOr<std::vector<unsigned>>
buildOpOfConstant(ProgramBuilder &builder, const CheckedOp &attributes,
                  const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 0, true))
    return *refused;
  // The value as the checker keeps it: an integer exactly, so that the
  // literal rule sees what MLIRGen will write.
  NumberLiteral number;
  number.isInt = attributes.constantIsInt;
  number.value = attributes.constant;
  // Only an integer dtype reads `exact` (bool's 0 or 1 is in `constant`).
  if (attributes.constantIsInt && !isFloat(*attributes.dtype))
    number.exact = *attributes.dtype == DType::Bool
                       ? Int(static_cast<int64_t>(attributes.constant))
                       : Int(attributes.constantInt);
  return asResults(builder.literal(number, *attributes.dtype));
}

BuildOr<std::vector<unsigned>>
buildOpOfSize(ProgramBuilder &builder, const CheckedOp &attributes,
              const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 0, true))
    return *refused;
  return asResults(builder.size(attributes.sizeValue, *attributes.dtype));
}

BuildOr<std::vector<unsigned>>
buildOpOfArange(ProgramBuilder &builder, const CheckedOp &attributes,
                const std::vector<unsigned> &operands) {
  if (auto refused =
          build::missingAttributes(attributes, operands.size(), 0, true))
    return *refused;
  return asResults(builder.arange(attributes.sizeValue, *attributes.dtype));
}

} // namespace ein

namespace ein {

// --- Cost ---

void costOfConstant(const CostInput &, const Bindings &, CostCounts &counts) {
  counts.read = counts.written = SizeExpr();
}

void costOfSize(const CostInput &, const Bindings &, CostCounts &counts) {
  counts.read = counts.written = SizeExpr();
}

void costOfArange(const CostInput &, const Bindings &, CostCounts &) {
  // Writes n numbers; no arithmetic on data, nothing read.
}

} // namespace ein

// --- Gradient ---
// None of these has an operand, so none depends on a wrt value: no gradient
// flows through them, and nothing reaches the loss through them to pass on.
namespace ein {

/// A constant has no operand to differentiate.
bool gradientOfConstant(Differentiator &, const CheckedOp &) { return true; }

/// A size read at run time is an integer of the bound dims, no operand.
bool gradientOfSize(Differentiator &, const CheckedOp &) { return true; }

/// arange(n) depends on the size n only, no operand.
bool gradientOfArange(Differentiator &, const CheckedOp &) { return true; }

} // namespace ein

// --- Layout ---
namespace ein {

// Values made from nothing split are the same on every rank: replicated.
bool layoutOfConstant(LayoutInference &, const CheckedOp &) { return true; }
bool layoutOfSize(LayoutInference &, const CheckedOp &) { return true; }
bool layoutOfArange(LayoutInference &, const CheckedOp &) { return true; }

} // namespace ein
