// The CUDA target's describe, private to lib/Target/CUDA: per row of the op
// registry, what the op becomes in the generated source as the report's
// CUDA column says it, defined in the op family's file (Ops/<Family>.cpp)
// beside its emit function. MLIR-free: the report fuzzer compiles these
// parts alone (EIN_CUDA_DESCRIBE_ONLY, test/fuzz/CMakeLists.txt).
#pragma once

#include "ein/Analysis/Cost.h"
#include "ein/Sema/Program.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ein {
namespace cuda {

/// Per row: the cell of `op` (of `fn`) in the report's CUDA column. A row
/// without one fails to link, naming it. A result the function returns is
/// always written (copied) into the output, which no cell says.
#define EIN_OP(Kind, Name, OpClass)                                            \
  std::string describe##Kind(const CheckedOp &op, const CheckedFunction &fn);
#include "ein/Sema/Ops.def"

/// The cost model's verdict on `op`: whether it is a view at all, and
/// whether it computes anything (DescribeCUDA.cpp).
OpCost describedCost(const CheckedOp &op, const CheckedFunction &fn);

/// The sizes of an op's axes for layout questions: the known ones capped at
/// 2^10 (whether a merge works depends on which sizes are 1, not on how
/// large the others are, and strides stay far from overflow), unknown ones
/// 2 (so that no size 1 merges by accident).
std::map<std::string, int64_t>
layoutSizes(const std::map<std::string, SizeExpr> &axisSizes,
            const Bindings &env);

/// The elementary axes of `groups` with the strides of a row-major tensor
/// whose dims are those groups; false when a stride overflows.
bool rowMajorAxes(const std::vector<std::vector<std::string>> &groups,
                  const std::map<std::string, int64_t> &sizes,
                  std::vector<std::string> &axes,
                  std::vector<int64_t> &strides);

} // namespace cuda
} // namespace ein
