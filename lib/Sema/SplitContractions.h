// grad()'s split of an einsum of three or more operands into the pairwise
// einsums of its contraction order (SplitContractions.cpp).
#pragma once

#include "ein/Sema/Program.h"

#include <cstddef>

namespace ein {

/// Replaces `fn.ops[index]`, when it is an einsum of three or more operands,
/// by the chain of one- and two-operand einsums (and the casts to the
/// accumulator) of its contraction order under the function's bound dims,
/// the last of them writing the einsum's result; returns how many ops now
/// stand in its place (1 when it is left as written: another op, or a chain
/// that does not build).
size_t splitContraction(CheckedFunction &fn, size_t index);

} // namespace ein
