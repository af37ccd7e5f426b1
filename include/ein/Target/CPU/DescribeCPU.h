// What the CPU target says of a function's ops in `einc report`: how its
// pipeline fuses them (docs/lowering.md §3.6), the CPU target's column.
#pragma once

#include "ein/Conversion/CPU/CPUOptions.h"
#include "ein/Sema/Program.h"
#include "ein/Target/Target.h"

#include <map>
#include <string>
#include <vector>

namespace ein {

/// How the CPU pipeline fuses one function's ops, as `einc report` shows it
/// in its `fused` column.
struct FunctionFusion {
  /// Per op of CheckedFunction::ops (same index): the loop nests it is
  /// computed in together with other source ops, "rows#N" (the N-th row-tile
  /// loop of ein-fuse-rows), "elementwise#N" (the N-th loop
  /// ein-fuse-elementwise made), several joined by ','; empty for an op in its
  /// own loop nest(s).
  std::vector<std::string> groups;
  /// Why the fusion is unknown (the function does not compile for the CPU);
  /// empty when known.
  std::string unknown;
  /// --no-fusion: every op is its own loop nest.
  bool off = false;
};

/// The fusion of `fn`, a function of `module`, from the IR the CPU pipeline
/// has after its fusion passes (CPUStage::Fused), compiled with the checked
/// sizes (the unbound ones dynamic, as `einc build`). Never fails: a
/// function that does not compile gets FunctionFusion::unknown.
FunctionFusion analyzeFusion(const CheckedModule &module,
                             const CheckedFunction &fn, const CPUOptions &cpu);
/// The same for each function of `module` (only `function` when not
/// empty), by name.
std::map<std::string, FunctionFusion> analyzeFusion(const CheckedModule &module,
                                                    const std::string &function,
                                                    const CPUOptions &cpu);

/// The report's `fused` column of `fn`: per op its groups ("rows#1"; "-" for
/// an op in its own loop nest; "?" when unknown, null in JSON), a table cell
/// of many groups shortened to the first and a count ("elementwise#15 +2"),
/// a note when fusion is off or unknown, and the function's "fusion" field
/// ("cpu", "off", "unknown: WHY").
TargetColumn fusionColumn(const CheckedFunction &fn,
                          const FunctionFusion &fusion);

} // namespace ein
