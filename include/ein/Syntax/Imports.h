// Reading .ein files: the file compiled, and for `from layers import rmsnorm`
// finding, reading and parsing imported files.
#pragma once

#include "ein/Support/Error.h"
#include "ein/Syntax/AST.h"

#include <string>

namespace ein {

/// Reads the files `module` (parsed from `file`) imports, transitively and
/// each once, resolving `from NAME import ...` to `NAME.ein` in the importing
/// file's directory, and fills module.imported*. A file that cannot be read,
/// an import cycle and a name the imported file does not define are errors
/// at the import, in `diags` (which also learns the imported files, to print
/// locations in them).
void resolveImports(Module &module, const SourceFile &file,
                    DiagnosticEngine &diags);

/// Reads the .ein file at `path`; refuses what is not a regular file, cannot
/// be read, or holds NUL bytes (a program error naming the file).
ErrorOr<SourceFile> readSource(const std::string &path);

} // namespace ein
