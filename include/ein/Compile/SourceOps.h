// The source ops of a checked function behind IR ops: MLIRGen gives every op
// it builds its source location (in call-site locations when inlined), and
// passes that merge ops fuse their locations, so an IR op's location names
// the CheckedFunction::ops it computes (the report's fused columns).
#pragma once

#include "ein/Sema/Program.h"

#include "mlir/IR/Location.h"

#include <map>
#include <string>
#include <vector>

namespace ein {

/// `module` with `fn` its only function (so that another function that
/// does not compile does not hide what `fn` becomes).
CheckedModule withOnlyFunction(const CheckedModule &module,
                               const CheckedFunction &fn);

/// The ops of one checked function by source location and call sites.
class SourceOps {
public:
  SourceOps(const CheckedModule &module, const CheckedFunction &fn);
  /// The indices in CheckedFunction::ops of the ops `loc` (a fused
  /// location's parts, recursively) was built from, ascending, no repeats.
  std::vector<size_t> at(mlir::Location loc) const;

private:
  std::map<std::string, std::vector<size_t>> opsAt;
};

} // namespace ein
