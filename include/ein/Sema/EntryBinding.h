// Binding a function's dims from the shapes of actual inputs (run-time entry checks).
#pragma once

#include "ein/Sema/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ein {

/// The dims of `fn` bound by the input `shapes` (one per parameter), on top
/// of what is already known (`dim` declarations, --dim, numbers the checker
/// derived), with every entry check evaluated. On a mismatch `error` names
/// the parameter, the dim, the expected and the actual size.
struct EntryBinding {
  bool ok = false;
  Bindings dims;
  std::string error;
};
EntryBinding bindEntryShapes(const CheckedFunction &fn,
                             const std::vector<std::string> &paramNames,
                             const std::vector<std::vector<int64_t>> &shapes);

} // namespace ein
