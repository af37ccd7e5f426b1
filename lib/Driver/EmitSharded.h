// `einc emit --stage=ein` of a sharded function: its local program with the
// mesh collectives as `mesh` dialect ops (docs/distributed.md §4).
#pragma once

#include "ein/Sema/Checker.h"
#include "ein/Support/Error.h"
#include "ein/Syntax/AST.h"

#include <ostream>
#include <string>

namespace ein {

/// Checks `function` (the only one when empty) of a module with a mesh,
/// then again on its local blocks as a sharded run does (splitNames,
/// collectivePoints), and prints the local program's `ein` IR with a
/// `mesh.mesh @mesh` and each collective after the op it follows.
ErrorOr<void> emitShardedEin(const SourceFile &file, const Module &module,
                             const CheckOptions &check,
                             const std::string &function, std::ostream &out);

} // namespace ein
