// The rules of the ops that make values from nothing but numbers and sizes:
// constant, size and arange.

// --- Gradient ---
// None of these has an operand, so none depends on a wrt value: no gradient
// flows through them, and nothing reaches the loss through them to pass on.
#include "../Differentiator.h"

namespace ein {

/// A constant has no operand to differentiate.
bool gradientOfConstant(Differentiator &, const CheckedOp &) { return true; }

/// A size read at run time is an integer of the bound dims, no operand.
bool gradientOfSize(Differentiator &, const CheckedOp &) { return true; }

/// arange(n) depends on the size n only, no operand.
bool gradientOfArange(Differentiator &, const CheckedOp &) { return true; }

} // namespace ein
