// `einc check model.py`: the static shape checker for Python source that
// uses einops, jaxtyping and everyday torch/numpy ops (docs/python-check.md).
//
// Sound by construction: what it does not understand makes a value's shape
// unknown, never an error; an error means the code and its annotations
// provably disagree under ein's shape rules (the same rules and messages as
// a .ein file's).
#pragma once

#include "ein/Support/Error.h"
#include "ein/Syntax/Diagnostics.h"

#include <string>
#include <vector>

namespace ein::pycheck {

struct PyCheckOptions {
  /// The interpreter that parses the file (pythonInterpreter() when empty).
  std::string python;
};

/// A call the checker recognised but could not check, and why.
struct SkippedCall {
  SourceLoc loc;
  std::string what;   // "einops.rearrange", "torch.matmul", "return"
  std::string reason; // "its input's shape is unknown"
};

/// One function with a jaxtyping annotation on a parameter or its result.
struct FunctionSummary {
  std::string name; // `Attention.forward`
  SourceLoc loc;
  /// Full: every recognised op in it and every return was checked;
  /// Partial: some were not (see the skipped calls); Skipped: no annotation
  /// of it could be read.
  enum class Status { Full, Partial, Skipped } status = Status::Full;
  std::string reason; // Skipped: why
};

struct PyCheckReport {
  std::string path;
  /// False when Python could not parse the file (its error is in the
  /// diagnostics; nothing was checked).
  bool parsed = true;
  std::vector<FunctionSummary> functions;
  unsigned einopsChecked = 0, torchChecked = 0, returnsChecked = 0;
  /// Calls of the file's own annotated functions, methods and modules.
  unsigned callsChecked = 0;
  std::vector<SkippedCall> skipped;
  /// Size relations checked only at run time: (function, check).
  std::vector<std::pair<std::string, std::string>> entryChecks;
};

/// Checks the Python file `diags.source()`: its diagnostics (a syntax error
/// included) go to `diags`; an Error only when Python cannot be run.
ErrorOr<PyCheckReport> checkPython(DiagnosticEngine &diags,
                                   const PyCheckOptions &options = {});

/// The report as text (`--verbose` lists each skipped call) or JSON.
std::string reportText(const PyCheckReport &report, bool verbose);
std::string reportJSON(const PyCheckReport &report);

} // namespace ein::pycheck
