// Source files, locations and compiler diagnostics with a caret under the culprit.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <set>
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

/// The kinds of warning, each named by its command-line flag (`-Wno-NAME`
/// silences it). docs/language.md describes each.
enum class WarningKind { LoneAxis, UnusedValue, UnusedDim };

/// Every warning kind, in the order the docs list them.
const std::vector<WarningKind> &allWarningKinds();
/// The flag name of `kind`: `lone-axis`, `unused-value`, `unused-dim`.
const char *warningName(WarningKind kind);
/// The kind named `name` (as in `-Wno-NAME`), if any.
std::optional<WarningKind> parseWarningName(const std::string &name);

/// Which warnings are shown and whether they count as errors.
struct WarningOptions {
  /// `-Werror`: every shown warning is an error.
  bool asErrors = false;
  /// `-Wno-NAME`: kinds not shown at all.
  std::set<WarningKind> disabled;
};

/// Collects diagnostics for one file (and the files it imports, added with
/// addFile) and prints them as
/// `FILE:LINE:COL: error: MESSAGE` (or `warning:`, `note:`), the source line
/// and a caret. A warning's message ends with its flag, `[-WNAME]`, and
/// follows the WarningOptions: dropped when disabled, an error
/// (`[-Werror,-WNAME]`) under `-Werror`; a note after a dropped warning is
/// dropped with it. COL counts
/// code points; the caret sits under the character on a terminal (wide
/// characters take two columns). The output is valid UTF-8 even when the
/// source or a message is not: invalid bytes are shown as `\xNN`.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceFile &file) : file(file) {}
  void error(SourceLoc loc, const std::string &message, unsigned length = 1);
  void warning(WarningKind kind, SourceLoc loc, const std::string &message,
               unsigned length = 1);
  /// A note on the diagnostic reported just before it.
  void note(SourceLoc loc, const std::string &message, unsigned length = 1);
  void setWarningOptions(WarningOptions options) {
    warnings = std::move(options);
  }
  /// True when an error was reported (a warning turned error included).
  bool hadError() const { return errors > 0; }
  unsigned errorCount() const { return errors; }
  /// Warnings shown as warnings (not counting those made errors).
  unsigned warningCount() const { return shownWarnings; }
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
  unsigned errors = 0, shownWarnings = 0;
  WarningOptions warnings;
  /// The last warning was dropped: so are its notes.
  bool droppedLast = false;
};

} // namespace ein
