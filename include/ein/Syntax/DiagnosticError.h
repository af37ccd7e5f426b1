// The front end's diagnostics of one file as an ein::Error (the boundary
// between the DiagnosticEngine and the error values of library code).
#pragma once

#include "ein/Support/Error.h"
#include "ein/Syntax/Diagnostics.h"

#include <sstream>

namespace ein {

/// The diagnostics collected in `diags` (which must hold an error), printed
/// as the engine prints them, as one Error located at the first error.
inline Error errorFromDiagnostics(const DiagnosticEngine &diags,
                                  ErrorKind kind = ErrorKind::Program) {
  Error error = Error::inFile(kind, diags.source().path, "");
  for (const Diagnostic &d : diags.diagnostics())
    if (d.severity == Severity::Error) {
      error.line = d.loc.line;
      error.col = d.loc.col;
      error.message = d.message;
      break;
    }
  std::ostringstream text;
  diags.print(text);
  error.rendered = text.str();
  return error;
}

} // namespace ein
