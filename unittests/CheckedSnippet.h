// A .ein snippet parsed and checked for a unit test, with its first error:
// shared by the checker, calls and autodiff tests.
#pragma once

#include "ein/Sema/Checker.h"
#include "ein/Syntax/Parser.h"

#include <memory>
#include <string>

namespace ein::test {

/// A checked snippet; the engine refers to the file, so both live here.
struct CheckedSnippet {
  SourceFile file;
  std::unique_ptr<DiagnosticEngine> diags;
  Module module;
  CheckedModule result;

  /// "line:col: message" of the first error, or "".
  std::string firstError() const {
    for (auto &d : diags->diagnostics())
      if (d.severity == Severity::Error)
        return std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) +
               ": " + d.message;
    return "";
  }
};

/// Parses and (when it parses) checks `source` as t.ein into a `T`, a
/// CheckedSnippet or a test's own extension of it.
template <typename T = CheckedSnippet>
std::unique_ptr<T> checkSnippet(const std::string &source,
                                CheckOptions options = {}) {
  auto c = std::make_unique<T>();
  c->file = SourceFile{"t.ein", source};
  c->diags = std::make_unique<DiagnosticEngine>(c->file);
  c->module = parseModule(c->file, *c->diags);
  if (!c->diags->hadError())
    c->result = checkModule(c->module, options, *c->diags);
  return c;
}

} // namespace ein::test
