// The builder of checked programs: what every op shares (values, params,
// returns, the origin, the build errors). Each op's body, through the shape
// rules (Shape/Infer.h) and the dtype table (Shape/DTypeRules.h), sits in
// its family file (lib/Sema/Ops/*.cpp).
#include "ein/Sema/ProgramBuilder.h"
#include "BuildErrors.h"
#include "ein/Sema/Suggestions.h"

#include "ein/Shape/DTypeRules.h"
#include "ein/Syntax/Pattern.h"

#include <fmt/format.h>

#include <cmath>

namespace ein {

std::string BuildError::str() const {
  if (pattern.empty())
    return fmt::format("{}: {}", op, error.message);
  return fmt::format("{}(\"{}\"): {}", op, pattern, error.message);
}

std::string BuildError::caret() const {
  if (error.anchor != ShapeError::Anchor::Pattern || pattern.empty())
    return "";
  unsigned length = error.length ? error.length : 1;
  return fmt::format("    {}\n    {}^{}", pattern,
                     std::string(error.offset, ' '),
                     std::string(length - 1, '~'));
}

namespace build {

BuildError failure(ShapeError error, std::string op, std::string pattern) {
  return BuildError{std::move(error), std::move(op), std::move(pattern)};
}

/// The table's verdict on operand `i` of `op`, as a build error.
std::optional<BuildError> dtypeError(const DTypeRule &rule, DType dtype,
                                     unsigned i, const std::string &op,
                                     const std::string &pattern) {
  if (auto why = operandDTypeError(rule, dtype)) {
    BuildError error = failure(ShapeError::atOperand(*why, i), op, pattern);
    error.rule = BuildError::Rule::OperandDType;
    return error;
  }
  return std::nullopt;
}

/// The table's verdict on `acc=` for `op`, as a build error.
std::optional<BuildError> accError(const DTypeRule &rule,
                                   std::optional<DType> acc,
                                   const std::string &op,
                                   const std::string &pattern) {
  if (!acc)
    return std::nullopt;
  if (auto why = accDTypeError(rule, *acc)) {
    BuildError error = failure(ShapeError::atOp(*why), op, pattern);
    error.rule = BuildError::Rule::AccDType;
    return error;
  }
  return std::nullopt;
}

/// Operands that must share one dtype and do not: `op`'s message, at the
/// operand that differs from the first.
BuildError mixedDTypes(std::string message, unsigned operand,
                       const std::string &op, const std::string &pattern) {
  BuildError error =
      failure(ShapeError::atOperand(std::move(message), operand), op, pattern);
  error.rule = BuildError::Rule::OperandDType;
  return error;
}

} // namespace build

using namespace build;

unsigned ProgramBuilder::newValue(TensorType type) {
  fn.values.push_back(Value{std::move(type)});
  return static_cast<unsigned>(fn.values.size() - 1);
}

void ProgramBuilder::appendOp(CheckedOp op) {
  op.loc = at.loc;
  op.callSite = at.callSite;
  op.phase = at.phase;
  op.gradOf = at.gradOf;
  fn.ops.push_back(std::move(op));
}

unsigned ProgramBuilder::append(CheckedOp op, TensorType result) {
  unsigned id = newValue(std::move(result));
  op.results.push_back(id);
  appendOp(std::move(op));
  return id;
}

unsigned ProgramBuilder::param(TensorType type, std::string name) {
  unsigned id = newValue(std::move(type));
  fn.values[id].name = std::move(name);
  fn.params.push_back(id);
  return id;
}

std::optional<BuildError> build::missingAttributes(const CheckedOp &attributes,
                                                   size_t operands,
                                                   size_t needs,
                                                   bool needsDType) {
  std::string name = opKindName(attributes.kind);
  if (operands < needs)
    return failure(ShapeError::atOp(fmt::format("{} takes {} operands, not {}",
                                                name, needs, operands)),
                   name, attributes.pattern);
  if (needsDType && !attributes.dtype)
    return failure(
        ShapeError::atOp(fmt::format(
            "{}'s result dtype is not given (CheckedOp::dtype)", name)),
        name, attributes.pattern);
  return std::nullopt;
}

BuildOr<std::vector<unsigned>>
ProgramBuilder::build(const CheckedOp &attributes,
                      const std::vector<unsigned> &operands) {
  // Generated from the registry: a row without its buildOpOfFoo fails to
  // link, so no op is left out.
  switch (attributes.kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    return buildOpOf##Kind(*this, attributes, operands);
#include "ein/Sema/Ops.def"
  }
  return build::failure(ShapeError::atOp("not an op kind"), "?", "");
}

void ProgramBuilder::ret(const std::vector<unsigned> &values) {
  for (unsigned v : values) {
    fn.returns.push_back(v);
    fn.results.push_back(type(v));
  }
}

} // namespace ein
