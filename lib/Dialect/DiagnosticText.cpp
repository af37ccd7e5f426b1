// MLIR diagnostics as ein prints its own: `file:line:col: error: message`.
#include "ein/Dialect/DiagnosticText.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include <fmt/format.h>

namespace ein {

namespace {

/// The first file location in `loc`, looking through fused, named and
/// call-site locations (a pass may wrap the location MLIRGen gave).
std::string where(mlir::Location loc) {
  std::string found;
  loc->walk([&](mlir::Location inner) {
    if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(inner)) {
      found = fmt::format("{}:{}:{}: ", file.getFilename().str(),
                          file.getLine(), file.getColumn());
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return found;
}

const char *severity(mlir::DiagnosticSeverity s) {
  switch (s) {
  case mlir::DiagnosticSeverity::Error:
    return "error";
  case mlir::DiagnosticSeverity::Warning:
    return "warning";
  case mlir::DiagnosticSeverity::Note:
    return "note";
  case mlir::DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

} // namespace

std::string diagnosticText(const mlir::Diagnostic &diagnostic) {
  std::string text =
      fmt::format("{}{}: {}\n", where(diagnostic.getLocation()),
                  severity(diagnostic.getSeverity()), diagnostic.str());
  for (const mlir::Diagnostic &note : diagnostic.getNotes())
    text += fmt::format("{}note: {}\n", where(note.getLocation()), note.str());
  return text;
}

} // namespace ein
