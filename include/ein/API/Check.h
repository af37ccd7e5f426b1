// The embedded C++ API's static shape check of Python source: what `einc
// check model.py` does (docs/python-check.md), as a library call, for the
// Python package's ein.check and for tools of one's own.
#pragma once

#include "ein/API/Types.h"

#include <string>

namespace ein::api {

/// What checking one Python file found.
struct PythonCheck {
  /// Whether no error was found (also false when Python could not parse
  /// the file: its syntax error is then the one diagnostic).
  bool ok = true;
  /// The errors found.
  unsigned errors = 0;
  /// Every diagnostic as einc prints it: `FILE:LINE:COL: error: ...`, the
  /// source line with a caret, and the notes; empty when there is none.
  std::string diagnostics;
  /// The report (functions checked fully or partly, calls checked and
  /// skipped, entry checks), as `einc check` prints it (`verbose`: each
  /// skipped call with its line and reason); empty when the file did not
  /// parse.
  std::string report;
  /// The same report as JSON (`einc check --json`); empty when the file did
  /// not parse.
  std::string json;
};

namespace nothrow {
/// Checks the Python file at `path`; the error when it cannot be read or no
/// Python interpreter can be run (`python3` from PATH, or $EIN_PYTHON).
Result<PythonCheck> check_python(const std::string &path, bool verbose = false);
/// The same for `source` as if read from `path` (named in diagnostics).
Result<PythonCheck> check_python_source(const std::string &source,
                                        const std::string &path = "<source>",
                                        bool verbose = false);
} // namespace nothrow

/// check_python, throwing the error (ein::Error).
inline PythonCheck check_python(const std::string &path, bool verbose = false) {
  return nothrow::check_python(path, verbose).value();
}

} // namespace ein::api
