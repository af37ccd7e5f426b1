// The checker's mesh and layout checks (docs/distributed.md §2), used by
// checkModule and FunctionChecker::checkType.
#pragma once

#include "FunctionChecker.h"

namespace ein::sema {

/// The first divisors of `n` in increasing order, as a list for a message:
/// "1, 2, 4, 8, 16, 32, ..." (six at most, then "...").
std::string divisorList(Int n);

/// The module's `mesh` and `shard` declarations and --mesh: one mesh, each
/// axis named once and not used as a dim of a type, --mesh naming axes (and
/// agreeing with --dim), each rule naming an axis, one rule per dim. Fills
/// `scope`'s mesh axes and rules and adds the axes to `knownNames` (so that
/// --dim may bind them). Reports the first error and returns false.
bool checkMesh(const Module &module, const CheckOptions &options,
               ModuleScope &scope, std::set<std::string> &knownNames,
               DiagnosticEngine &diags);

/// Once the sizes are bound: every bound mesh axis spans at least 1 device.
bool checkMeshSizes(const Module &module, const Bindings &dims,
                    DiagnosticEngine &diags);

/// The layouts of the parsed type `shape` of annotation `t`: applies the
/// `shard` rules to dims without a layout of their own, and checks that each
/// axis is a mesh axis, is used once in the tensor, and divides the dim (its
/// major factor for a composition) when `env` gives both sizes; otherwise
/// adds the divisibility to `entryChecks` (when given). Reports the first
/// error at the dim and returns false.
bool checkLayouts(const TypeAnnotation &t, Shape &shape,
                  const ModuleScope &scope, const Bindings &env,
                  std::vector<Constraint> *entryChecks,
                  DiagnosticEngine &diags);

} // namespace ein::sema
