// MLIR diagnostics as ein prints its own: `file:line:col: error: message`.
#ifndef EIN_DIALECT_DIAGNOSTICTEXT_H
#define EIN_DIALECT_DIAGNOSTICTEXT_H

#include <string>

namespace mlir {
class Diagnostic;
} // namespace mlir

namespace ein {

/// One line per diagnostic and per attached note, each ending in a newline:
/// `FILE:LINE:COL: error: MESSAGE` where the location (or a location fused
/// or named around it) has a file, `error: MESSAGE` where it has none.
std::string diagnosticText(const mlir::Diagnostic &diagnostic);

} // namespace ein

#endif // EIN_DIALECT_DIAGNOSTICTEXT_H
