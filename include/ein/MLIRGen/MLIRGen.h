// The one bridge from the checked AST to the `ein` dialect (no MLIR in this header).
#pragma once

#include "ein/Sema/Program.h"

#include <ostream>
#include <string>

namespace ein {

/// Builds the `ein` IR of `module`, verifies it, and prints it to `os`.
/// On failure returns false with the verifier's messages in `error`.
bool emitEinIR(const CheckedModule &module, std::ostream &os,
               std::string &error);

} // namespace ein
