// Binding a function's dims from the shapes of actual inputs (run-time entry checks).
#pragma once

#include "ein/Sema/Checker.h"
#include "ein/Sema/Program.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {

/// The dims of `fn` bound by the input `shapes` (one per parameter), on top
/// of what is already known (`dim` declarations, --dim, numbers the checker
/// derived), with every entry check evaluated. On a mismatch `error` names
/// the parameter, the dim, the expected and the actual size.
///
/// A variadic (`*batch`, `...`) stands for the input dims that the fixed
/// dims before and after it leave; its rank goes to `packRanks` and its dims
/// get fresh names (packDims), bound like any dim. A named variadic in
/// several parameters must have the same rank and sizes in each.
///
/// A broadcastable dim (`#m`) given size 1 binds nothing: it broadcasts
/// against m, which another input (or, failing that, 1) determines. An
/// anonymous dim (`_`, a dim of `...`) given size 1 is likewise typed as 1,
/// and its entry checks `A == B` are left to the specialised check, where
/// it broadcasts (elementwise, einsum's `...`) or fails. Such dims are
/// listed in `unitDims` so that the function can be specialised for these
/// inputs (`CheckOptions::entryUnitDims`).
struct EntryBinding {
  bool ok = false;
  Bindings dims;
  std::string error;
  /// Parameter name -> positions in its shape with its variadic expanded
  /// of `#` and anonymous dims whose input size is 1.
  std::map<std::string, std::set<size_t>> unitDims;
  /// The same dims, described for a note: "parameter 'x': #m",
  /// "parameter 'x': _ (dim 0)", "parameter 'x': dim 1 of ...".
  std::vector<std::string> unitNotes;
  /// The rank of every parameter's variadic (CheckOptions::packRanks).
  std::map<std::string, size_t> packRanks;
};
/// With every dim of `fn` bound: a message naming the first value (a
/// parameter, an intermediate or a result) whose size exceeds `maxBytes`, or
/// nullopt when all fit. Empty inputs make large values cheap to ask for
/// (reduce over an empty (0, 2**40) input gives 2**40 zeros); the caller
/// refuses them instead of letting an allocation fail.
std::optional<std::string> valueTooLarge(const CheckedFunction &fn,
                                         Int maxBytes);

EntryBinding bindEntryShapes(const CheckedFunction &fn,
                             const std::vector<std::string> &paramNames,
                             const std::vector<std::vector<int64_t>> &shapes);

/// `symbolic` (the options `fn` was checked with) with `binding`'s sizes,
/// unit dims and variadic ranks: the options of checking `fn` again for
/// one call's inputs (what Engine::bind does where specialise() cannot).
CheckOptions boundCheckOptions(const CheckOptions &symbolic,
                               const CheckedFunction &fn,
                               const EntryBinding &binding);

} // namespace ein
