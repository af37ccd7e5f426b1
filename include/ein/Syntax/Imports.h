// `from layers import rmsnorm`: finding, reading and parsing imported files.
#pragma once

#include "ein/Syntax/AST.h"

namespace ein {

/// Reads the files `module` (parsed from `file`) imports, transitively and
/// each once, resolving `from NAME import ...` to `NAME.ein` in the importing
/// file's directory, and fills module.imported*. A file that cannot be read,
/// an import cycle and a name the imported file does not define are errors
/// at the import, in `diags` (which also learns the imported files, to print
/// locations in them).
void resolveImports(Module &module, const SourceFile &file,
                    DiagnosticEngine &diags);

} // namespace ein
