// The checker's warnings about values and dims the program never uses.
// Private to lib/Sema.
#pragma once

#include "ein/Syntax/AST.h"

namespace ein::sema {

/// Warns (unused-value) at each assignment to a name that nothing reads
/// before the end of the function or before the name is assigned again.
/// `_` targets are never warned about; parameters are not assignments.
void warnUnusedValues(const Function &fn, DiagnosticEngine &diags);

/// Warns (unused-dim) at each `dim` declaration whose name occurs nowhere
/// else in the module: in no shape string, pattern or other string, no
/// expression (keyword sizes included) and no other dim's value.
void warnUnusedDims(const Module &module, DiagnosticEngine &diags);

} // namespace ein::sema
