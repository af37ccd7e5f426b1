// The static checker: types every value of a .ein module and reports shape errors.
#pragma once

#include "ein/Sema/Program.h"
#include "ein/Syntax/AST.h"

#include <map>
#include <set>

namespace ein {

struct CheckOptions {
  /// `--dim NAME=INT`: overrides `dim` declarations and binds free names.
  std::map<std::string, Int> dimOverrides;
  /// Bindings from actual inputs (`einc run`): any name of the file's
  /// types, fresh names of `_` and `...` included, without validation.
  std::map<std::string, Int> entryDims;
  /// Parameters of `onlyFunction` whose broadcastable (`#`) dims are 1 in
  /// the actual inputs: parameter name -> positions in its declared shape.
  /// Those dims are typed as the constant 1 (the function is specialised
  /// for the inputs, so the body broadcasts them).
  std::map<std::string, std::set<size_t>> entryUnitDims;
  /// When set, only this function is checked (others are skipped).
  std::string onlyFunction;
};

/// Checks `module`; every error goes to `diags` with its source location.
/// The result is meaningful only when no error was reported.
CheckedModule checkModule(const Module &module, const CheckOptions &options,
                          DiagnosticEngine &diags);

} // namespace ein
