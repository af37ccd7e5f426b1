// The build errors every op's builder body shares (ProgramBuilder.cpp
// defines them; the bodies sit in lib/Sema/Ops/*.cpp). Private to lib/Sema.
#pragma once

#include "ein/Sema/ProgramBuilder.h"
#include "ein/Sema/Suggestions.h"
#include "ein/Syntax/Pattern.h"

#include <optional>
#include <string>

namespace ein::build {

BuildError failure(ShapeError error, std::string op, std::string pattern);

/// `error` (the shape rule's, on `pattern`) with the numpy-spaced pattern
/// when that one passes `builds`, tried on a scratch copy of `ctx` so that
/// the attempt binds nothing.
template <typename Builds>
BuildError withSpacedHint(BuildError error, const Pattern &pattern,
                          PatternUse use, const InferContext &ctx,
                          Builds builds) {
  auto spaced = spacedPattern(pattern);
  if (!spaced)
    return error;
  auto respaced = parsePattern(*spaced, use);
  InferContext scratch = ctx;
  if (respaced && builds(scratch, *respaced))
    error.spaced = *spaced;
  return error;
}

/// The table's verdict on operand `i` of `op`, as a build error.
std::optional<BuildError> dtypeError(const DTypeRule &rule, DType dtype,
                                     unsigned i, const std::string &op,
                                     const std::string &pattern);

/// The table's verdict on `acc=` for `op`, as a build error.
std::optional<BuildError> accError(const DTypeRule &rule,
                                   std::optional<DType> acc,
                                   const std::string &op,
                                   const std::string &pattern);

/// Operands that must share one dtype and do not: `op`'s message, at the
/// operand that differs from the first.
BuildError mixedDTypes(std::string message, unsigned operand,
                       const std::string &op, const std::string &pattern);

/// build()'s refusal of an op given fewer operands than it takes, or of
/// one whose result dtype its operands do not give and `attributes` do not
/// say (CheckedOp::dtype); nothing when it has what it needs.
std::optional<BuildError> missingAttributes(const CheckedOp &attributes,
                                            size_t operands, size_t needs,
                                            bool needsDType);

} // namespace ein::build
