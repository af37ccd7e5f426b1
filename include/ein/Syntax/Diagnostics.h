// Source files, locations and compiler diagnostics with a caret under the culprit.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ein {

/// A 1-based line and column; line 0 means "no location". The column counts
/// bytes of the UTF-8 line (so offsets into string literals add directly);
/// the printer shows it as a column of code points and places the caret by
/// display width.
struct SourceLoc {
  unsigned line = 0, col = 0;
  SourceLoc advanced(unsigned columns) const { return {line, col + columns}; }
};

/// A source file held in memory.
struct SourceFile {
  std::string path;
  std::string text;
  /// The text of a 1-based line, without its newline.
  std::string lineText(unsigned line) const;
  /// The 1-based code point column of `loc` (whose column counts bytes).
  unsigned codePointColumn(SourceLoc loc) const;
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity;
  SourceLoc loc;
  unsigned length; // bytes underlined, at least 1
  std::string message;
};

/// Collects diagnostics for one file and prints them as
/// `FILE:LINE:COL: error: MESSAGE`, the source line and a caret. COL counts
/// code points; the caret sits under the character on a terminal (wide
/// characters take two columns). The output is valid UTF-8 even when the
/// source or a message is not: invalid bytes are shown as `\xNN`.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceFile &file) : file(file) {}
  void error(SourceLoc loc, const std::string &message, unsigned length = 1);
  void note(SourceLoc loc, const std::string &message, unsigned length = 1);
  bool hadError() const { return errors > 0; }
  unsigned errorCount() const { return errors; }
  const std::vector<Diagnostic> &diagnostics() const { return list; }
  void print(std::ostream &os) const;
  const SourceFile &source() const { return file; }

private:
  const SourceFile &file;
  std::vector<Diagnostic> list;
  unsigned errors = 0;
};

} // namespace ein
