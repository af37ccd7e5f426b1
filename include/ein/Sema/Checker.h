// The static checker: types every value of a .ein module and reports shape
// errors.
#pragma once

#include "ein/Sema/Program.h"
#include "ein/Syntax/AST.h"

#include <map>
#include <optional>
#include <set>

namespace ein {

struct CheckOptions {
  /// `--dim NAME=INT`: overrides `dim` declarations and binds free names.
  std::map<std::string, Int> dimOverrides;
  /// `--mesh dp=2,tp=4`: binds mesh axes as --dim does, and only them (a
  /// name that is not an axis of the file's `mesh` is an error, and so is
  /// a --dim of the same name with another value).
  std::map<std::string, Int> meshSizes;
  /// Bindings from actual inputs (`einc run`): any name of the file's
  /// types, fresh names of `_` and `...` included, without validation.
  std::map<std::string, Int> entryDims;
  /// The names of `entryDims` that only the inputs bind (not a `dim`,
  /// --dim, or a name the check without them binds): known numbers, but
  /// the check folds and matches shapes as without them
  /// (InferContext::entryNames).
  std::set<std::string> entryNames;
  /// Parameters of `onlyFunction` whose broadcastable (`#`) or anonymous
  /// (`_`, a dim of `...`) dims are 1 in the actual inputs: parameter name
  /// -> positions in its shape with its variadic expanded (by `packRanks`;
  /// one of unknown rank counts as one dim). Those dims are typed as the
  /// constant 1 (the function is specialised for the inputs, so the body
  /// broadcasts them).
  std::map<std::string, std::set<size_t>> entryUnitDims;
  /// The rank of variadics (`--rank`, or from actual inputs under `einc
  /// run`): a variadic of known rank stands for that many fresh dims
  /// (packDims: `batch` for rank 1, `batch_0 batch_1 ...` otherwise) from the
  /// parameter on. Keyed by `NAME` for `*NAME`, `PARAM...` for the `...` in
  /// parameter PARAM's type. Applies to every function checked; a key that
  /// names no variadic of the file is an error.
  std::map<std::string, size_t> packRanks;
  /// When set, only this function is checked (others are skipped).
  std::string onlyFunction;
  /// A `for` loop whose count is not known is checked once, symbolically,
  /// and left out of the program, which records it
  /// (CheckedFunction::symbolicLoops), instead of being an error: for a
  /// check whose program is read only for its signature and diagnostics,
  /// and checked again once the inputs give the sizes (Engine::bind).
  bool loopsMayStaySymbolic = false;
};

/// The `packRanks` key of the variadic `pack` in parameter `param`'s type:
/// `pack` when named, `param...` for an anonymous `...`.
std::string packRankKey(const std::string &param, const std::string &pack);

/// The `--rank` key of the first variadic of `fn`'s parameter or result
/// types whose rank is not fixed (`batch`, `x...`); std::nullopt when every
/// rank is known, as lowering needs.
std::optional<std::string> variadicOfUnknownRank(const CheckedFunction &fn);

/// Checks `module`; every error goes to `diags` with its source location.
/// The result is meaningful only when no error was reported.
CheckedModule checkModule(const Module &module, const CheckOptions &options,
                          DiagnosticEngine &diags);

} // namespace ein
