// Source files, locations and compiler diagnostics with a caret under the culprit.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace ein {

/// A 1-based line and column; line 0 means "no location". The column counts
/// bytes of the UTF-8 line (so offsets into string literals add directly);
/// the printer shows it as a column of code points and places the caret by
/// display width. `file` is the SourceFile::id of the file it is in: 0 for
/// the file being compiled, others for the files it imports.
struct SourceLoc {
  unsigned line = 0, col = 0;
  unsigned file = 0;
  SourceLoc advanced(unsigned columns) const {
    return {line, col + columns, file};
  }
};

/// A source file held in memory.
struct SourceFile {
  std::string path;
  std::string text;
  /// Which file of the program this is (SourceLoc::file): 0 for the file
  /// being compiled, 1, 2, ... for the files it imports.
  unsigned id = 0;
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

/// Collects diagnostics for one file (and the files it imports, added with
/// addFile) and prints them as
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
  /// Makes an imported file's locations printable (its id names it); adding
  /// one twice is harmless.
  void addFile(std::shared_ptr<const SourceFile> imported);
  /// The file with this id; the main file for an unknown id.
  const SourceFile &fileWithId(unsigned id) const;

private:
  const SourceFile &file;
  std::vector<std::shared_ptr<const SourceFile>> imported;
  std::vector<Diagnostic> list;
  unsigned errors = 0;
};

} // namespace ein
