// Specialising a symbolically checked function for a call's sizes: what the
// checker would give with them, without checking again.
#include "ein/Sema/Specialise.h"
#include "ein/Shape/DTypeRules.h"

#include <fmt/format.h>

#include <functional>

namespace ein {

namespace {

/// Every size expression `fn` holds that the checker computed from its
/// shapes, with what it is (for the reason a re-check is needed), whether
/// the checker refuses it negative when it knows it, and whether the
/// checker may have divided by it (a dim, an axis, a keyword size).
void forEachSize(
    const CheckedFunction &fn,
    const std::function<void(const SizeExpr &, const char *what,
                             bool refusedNegative, bool divisor)> &visit) {
  auto shape = [&](const Shape &s, const char *what, bool refusedNegative) {
    for (const Dim &d : fn.ctx.expand(s))
      if (!d.isPack())
        visit(d.size, what, refusedNegative, true);
  };
  for (const Value &v : fn.values) {
    shape(v.type.shape, "a value's dim", false);
    for (const Shape &part : v.parts)
      shape(part, "a packed shape", true);
  }
  for (const CheckedOp &op : fn.ops) {
    // (Only these ops hold sizes of their own; the rest are in the fields
    // below, which other ops leave empty.)
    if (op.kind == OpKind::Arange)
      visit(op.sizeValue, "arange's size", true, false);
    if (op.kind == OpKind::Size)
      visit(op.sizeValue, "a size used as a number", false, false);
    if (op.kind == OpKind::Slice) {
      visit(op.sliceStart, "a slice's start", true, false);
      visit(op.sliceStop, "a slice's stop", true, false);
    }
    for (const SizeArg &arg : op.sizes)
      visit(arg.value, "a keyword size", true, true);
    for (const Shape &part : op.packParts)
      for (const Dim &d : part)
        if (!d.isPack())
          visit(d.size, "a packed shape", true, true);
    if (op.transform) {
      for (auto &[axis, size] : op.transform->axisSizes)
        visit(size, "an axis size", false, true);
      shape(op.transform->result, "a value's dim", false);
    }
    if (op.einsum) {
      for (auto &[axis, size] : op.einsum->axisSizes)
        visit(size, "an axis size", false, true);
      shape(op.einsum->result, "a value's dim", false);
    }
  }
  for (const Constraint &c : fn.ctx.constraints) {
    visit(c.lhs, "an entry check", false, false);
    visit(c.rhs, "an entry check", false, false);
  }
}

/// Whether `e` holds a floor quotient (`n // 2` of sizes): a quotient
/// without the divisibility entry check that a shape's quotient has.
bool hasFloorQuotient(const InferContext &ctx, const SizeExpr &e) {
  for (auto &[num, den] : e.quotients())
    if (!ctx.exactQuotient(num, den) || hasFloorQuotient(ctx, num) ||
        hasFloorQuotient(ctx, den))
      return true;
  return false;
}

} // namespace

SpecialisedModule specialise(const CheckedModule &symbolic,
                             const std::string &function,
                             const EntryBinding &binding) {
  SpecialisedModule result;
  const CheckedFunction *fn = symbolic.find(function);
  if (!fn) {
    result.recheck = fmt::format("no function '{}' in the module", function);
    return result;
  }
  // Where the checker types the function differently with the sizes, it
  // is checked again: these change its structure, not only its numbers.
  if (!fn->symbolicLoops.empty()) {
    // A loop over a size the inputs give is unrolled only now.
    result.recheck = "a loop's count is known only with the inputs";
    return result;
  }
  if (!binding.unitDims.empty()) {
    // A `#` or anonymous dim of size 1 is typed as the constant 1, so the
    // body broadcasts it (other ops, other result types).
    result.recheck = "a '#' or anonymous dim has size 1 in the inputs";
    return result;
  }
  if (!binding.packRanks.empty()) {
    // A variadic of the parameters becomes that many dims, which the body's
    // ops then match one by one (and may find ambiguous).
    result.recheck = "the inputs fix the rank of a variadic";
    return result;
  }
  if (!fn->ctx.inferred.empty()) {
    // A name the check derived (`h` of `h=2`) is known from the start of
    // the check with the sizes, so what it folds before the symbolic check
    // derived the name is folded there (`(h*d)/2` is `d`).
    result.recheck =
        fmt::format("the check derives '{}'", fn->ctx.inferred.begin()->first);
    return result;
  }
  for (const Value &v : fn->values)
    for (const Dim &d : v.type.shape)
      if (d.broadcastable) {
        // With both sizes known, the checker refuses a `#` dim that is
        // neither 1 nor the other (inferBroadcast).
        result.recheck = "a value has a '#' dim";
        return result;
      }

  // The dims as the check with the sizes has them: the module's, then
  // every dim the call binds (CheckOptions::entryDims overrides them).
  Bindings dims = symbolic.dims;
  for (auto &[name, value] : binding.dims)
    dims[name] = value;

  for (auto &[name, value] : binding.dims)
    if (value == 0) {
      // As below: a division by it, done exactly without the sizes.
      result.recheck = fmt::format("the inputs give '{}' size 0", name);
      return result;
    }
  // Every size must evaluate, as it does in the check with the sizes;
  // where that check folds a number or refuses one, it is checked again.
  std::string why;
  forEachSize(*fn, [&](const SizeExpr &e, const char *what,
                       bool refusedNegative, bool divisor) {
    if (!why.empty())
      return;
    if (hasFloorQuotient(fn->ctx, e)) {
      // `n // 2` of known sizes is folded to its value (elementwise()).
      why = fmt::format("{} ({}) holds a floor quotient", what, e.str());
      return;
    }
    auto value = e.evaluate(dims);
    if (divisor && value && *value == 0) {
      // A division by a size of 0 is refused once it is known, and one
      // the symbolic check did exactly (`n / n` is 1) leaves no trace.
      why = fmt::format("{} ({}) is 0 with the call's sizes", what, e.str());
      return;
    }
    if (!value)
      why = fmt::format("{} ({}) does not evaluate with the call's sizes", what,
                        e.str());
    else if (refusedNegative && *value < 0)
      why = fmt::format("{} ({}) is negative with the call's sizes", what,
                        e.str());
  });
  if (!why.empty()) {
    result.recheck = why;
    return result;
  }

  CheckedFunction out = *fn;
  // The check with the sizes starts from the module's dims (every bound
  // one), so every name the symbolic check derived is already a number:
  // the function derives none.
  out.ctx.env = dims;
  out.ctx.inferred.clear();
  out.ctx.entryNames.clear();
  for (auto &[name, value] : binding.dims)
    if (!fn->ctx.env.count(name))
      out.ctx.entryNames.insert(name);
  // Entry checks: with every size known, unify proves `Equal`s, a slice's
  // bounds and a max's extent are decided (and the binding evaluated them
  // to hold); a quotient's divisibility is still recorded (InferContext::
  // divide keeps the quotient unless it folds without the inputs).
  std::vector<Constraint> kept;
  for (const Constraint &c : fn->ctx.constraints) {
    switch (c.kind) {
    case Constraint::Kind::Divisible:
      kept.push_back(c);
      break;
    case Constraint::Kind::Equal:
    case Constraint::Kind::NonEmpty:
    case Constraint::Kind::LessEq:
      break;
    }
  }
  out.ctx.constraints = std::move(kept);
  // A size used as a number is a constant once it is known (materialize);
  // the backward pass's sizes (ProgramBuilder::size) stay symbolic, as the
  // shapes they come from do.
  for (CheckedOp &op : out.ops) {
    if (op.kind != OpKind::Size || op.phase == GradPhase::DataGrad ||
        op.phase == GradPhase::WeightGrad)
      continue;
    Int known = *op.sizeValue.evaluate(dims);
    DType dtype = out.values[op.results.at(0)].type.dtype;
    NumberLiteral literal;
    literal.isInt = true;
    literal.exact = known;
    literal.value = static_cast<double>(known);
    if (literalDTypeError(literal, dtype)) {
      result.recheck =
          fmt::format("the size {} (= {}) does not fit its dtype {}",
                      op.sizeValue.str(), toString(known), dtypeName(dtype));
      return result;
    }
    op.kind = OpKind::Constant;
    op.sizeValue = SizeExpr();
    op.constant = literal.value;
    op.constantIsInt = true;
    if (!isFloat(dtype) && dtype != DType::Bool)
      op.constantInt = static_cast<int64_t>(known);
  }

  CheckedModule module;
  module.path = symbolic.path;
  module.files = symbolic.files;
  module.dims = std::move(dims);
  module.functions.push_back(std::move(out));
  result.module = std::move(module);
  return result;
}

} // namespace ein
