// What each op of a function becomes on the CUDA target, as the column of
// `einc report --target=cuda` (the CUDA target's Target::describe).
#pragma once

#include "ein/Target/Target.h"

namespace ein {

/// Per op of `fn`: the cuBLASLt call or kernel the generated source uses
/// for it, with the bytes of any permute a contraction of row-major operands
/// needs first (the runtime's GEMM planner, run here); "view" for what is
/// only strides. Constants get a cell too (the report skips them).
TargetColumn describeCUDA(const CheckedFunction &fn);

} // namespace ein
