// Reading a Python file through Python's own `ast` module: einc runs python3
// on an embedded script that prints the module's tree as JSON, and this file
// gives typed access to its nodes.
#pragma once

#include "ein/Support/Error.h"
#include "ein/Syntax/Diagnostics.h"

#include <llvm/Support/JSON.h>

#include <optional>
#include <string>

namespace ein::pycheck {

/// One node of the tree (`{"_t": "Call", "lineno": 3, ...}`), or null.
using Node = const llvm::json::Object *;

/// The Python interpreter einc runs: $EIN_PYTHON, else `python3` in PATH.
std::string pythonInterpreter();

/// The module of `file` (its text, named by its path), parsed by `python`
/// (pythonInterpreter() when empty). A syntax error is returned as a Program
/// error at its line:col (columns count UTF-8 bytes, 1-based, as SourceLoc
/// does); an interpreter that cannot run is a Usage error naming it and
/// EIN_PYTHON.
ErrorOr<llvm::json::Value> readPythonAst(const SourceFile &file,
                                         const std::string &python = "");

/// The node's type name (`Call`), "" for null.
std::string nodeType(Node n);
/// Whether `n` is a node of type `type`.
bool isa(Node n, const char *type);
/// A child node (`func` of a Call), or null.
Node child(Node n, const char *field);
/// A list of child nodes (`args` of a Call); empty when absent.
std::vector<Node> children(Node n, const char *field);
/// A string field (`id` of a Name, `attr` of an Attribute), "" if absent.
std::string stringField(Node n, const char *field);
/// The start of `n`: ast's 1-based line and 0-based byte column, as a
/// 1-based SourceLoc.
SourceLoc nodeLoc(Node n);
/// The bytes `n` spans on its first line (to its end when it ends there).
unsigned nodeLength(Node n, const SourceFile &file);

/// A Constant node's value, by kind.
std::optional<std::string> stringConstant(Node n);
std::optional<long long> intConstant(Node n);
/// Where the first character of a string literal's text is, when offsets
/// into its value are byte offsets into the line (a one-line literal quoted
/// once, without a prefix or escapes, as patterns are written); nullopt
/// otherwise (then a diagnostic points at the literal as a whole).
std::optional<SourceLoc> stringContentLoc(Node n, const SourceFile &file);
/// Whether `n` is a number literal (int or float, not bool), with a sign.
bool isNumberLiteral(Node n);

} // namespace ein::pycheck
