// Specialising a symbolically checked function for the sizes a call binds,
// without checking it again.
#pragma once

#include "ein/Sema/EntryBinding.h"
#include "ein/Sema/Program.h"

#include <optional>
#include <string>

namespace ein {

/// What specialise() gives: the module the checker would give for the
/// function checked again with the call's sizes (CheckOptions::entryDims),
/// or, where it cannot say that exactly, why the function must be checked
/// again (`recheck`, for a comment or a test; not an error of the call).
struct SpecialisedModule {
  std::optional<CheckedModule> module;
  std::string recheck;
};

/// The function `function` of `symbolic` (checked without the call's
/// sizes, as `einc check` does) specialised for `binding` (its entry checks
/// evaluated and holding): the module that checkModule returns for the
/// function alone with `binding`'s dims as entry dims, the names only the
/// inputs bind as entry names. That check keeps every shape symbolic (entry
/// names do not fold shapes), so the two differ only where the checker uses
/// the numbers themselves:
///   - the module's dims and the function's `env` hold every bound dim, and
///     `entryNames` those that only the inputs bind;
///   - a size used as a number (`x * n`) is a constant, not a `size` op;
///   - the entry checks decided by the numbers are gone (an `Equal`, a
///     slice's `LessEq`, a max's `NonEmpty`) and so are the names the check
///     derived (`inferred`, now dims); divisibility checks stay, as their
///     quotients do.
/// Where the re-check would type the function differently or may report an
/// error (a dim typed `#` or anonymous given size 1, a variadic whose rank
/// the inputs fix, a `#` dim, a name the check derives (it is known from
/// the start with the sizes, and folds what it did not), a floor quotient `//`
/// of sizes, a size that does not evaluate, a size of 0 (a division by it,
/// which the symbolic check may have done exactly: `n / n`), a negative size
/// where one is refused, a size constant that does not fit its dtype), `module`
/// is empty and `recheck` says which.
SpecialisedModule specialise(const CheckedModule &symbolic,
                             const std::string &function,
                             const EntryBinding &binding);

} // namespace ein
