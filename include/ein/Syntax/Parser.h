// Recursive-descent parser from tokens to the AST.
#pragma once

#include "ein/Syntax/AST.h"
#include "ein/Syntax/Lexer.h"

namespace ein {

/// Parses a whole file. Returns the module; errors go to `diags`.
Module parseModule(const SourceFile &file, DiagnosticEngine &diags);

} // namespace ein
