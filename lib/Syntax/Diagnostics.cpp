// Printing of diagnostics in the `FILE:LINE:COL: error:` format with carets.
#include "ein/Syntax/Diagnostics.h"
#include "ein/Syntax/Unicode.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein {

std::string SourceFile::lineText(unsigned line) const {
  size_t start = 0;
  for (unsigned l = 1; l < line; ++l) {
    start = text.find('\n', start);
    if (start == std::string::npos)
      return "";
    ++start;
  }
  size_t end = text.find('\n', start);
  std::string out = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!out.empty() && out.back() == '\r')
    out.pop_back();
  return out;
}

const std::vector<WarningKind> &allWarningKinds() {
  static const std::vector<WarningKind> kinds = {
      WarningKind::LoneAxis, WarningKind::UnusedValue, WarningKind::UnusedDim};
  return kinds;
}

const char *warningName(WarningKind kind) {
  switch (kind) {
  case WarningKind::LoneAxis:
    return "lone-axis";
  case WarningKind::UnusedValue:
    return "unused-value";
  case WarningKind::UnusedDim:
    return "unused-dim";
  }
  return "";
}

std::optional<WarningKind> parseWarningName(const std::string &name) {
  for (WarningKind kind : allWarningKinds())
    if (name == warningName(kind))
      return kind;
  return std::nullopt;
}

void DiagnosticEngine::error(SourceLoc loc, const std::string &message,
                             unsigned length) {
  list.push_back({Severity::Error, loc, length ? length : 1, message});
  ++errors;
  droppedLast = false;
}

void DiagnosticEngine::warning(WarningKind kind, SourceLoc loc,
                               const std::string &message, unsigned length) {
  droppedLast = warnings.disabled.count(kind) > 0;
  if (droppedLast)
    return;
  if (warnings.asErrors) {
    list.push_back(
        {Severity::Error, loc, length ? length : 1,
         fmt::format("{} [-Werror,-W{}]", message, warningName(kind))});
    ++errors;
    return;
  }
  list.push_back({Severity::Warning, loc, length ? length : 1,
                  fmt::format("{} [-W{}]", message, warningName(kind))});
  ++shownWarnings;
}

void DiagnosticEngine::note(SourceLoc loc, const std::string &message,
                            unsigned length) {
  if (droppedLast)
    return;
  list.push_back({Severity::Note, loc, length ? length : 1, message});
}

void DiagnosticEngine::addFile(std::shared_ptr<const SourceFile> added) {
  for (auto &f : imported)
    if (f->id == added->id)
      return;
  imported.push_back(std::move(added));
}

const SourceFile &DiagnosticEngine::fileWithId(unsigned id) const {
  for (auto &f : imported)
    if (f->id == id)
      return *f;
  return file;
}

namespace {

/// Width on a terminal of the character at `pos` of a line as the printer
/// echoes it: invalid bytes become `\xNN` escapes (4 columns per byte).
unsigned echoWidth(const unicode::DecodedChar &d) {
  return d.valid() ? unicode::displayWidth(d.codePoint) : 4 * d.size;
}

} // namespace

unsigned SourceFile::codePointColumn(SourceLoc loc) const {
  std::string line = lineText(loc.line);
  size_t bytes = loc.col > 0 ? loc.col - 1 : 0;
  if (bytes <= line.size())
    return static_cast<unsigned>(
        unicode::countCodePoints(std::string_view(line).substr(0, bytes)) + 1);
  // Past the end of the line (an error at its end): one column per byte.
  return static_cast<unsigned>(unicode::countCodePoints(line) +
                               (bytes - line.size()) + 1);
}

void DiagnosticEngine::print(std::ostream &os) const {
  for (auto &d : list) {
    const SourceFile &file = fileWithId(d.loc.file);
    std::string path = unicode::sanitizeUtf8(file.path);
    const char *kind = d.severity == Severity::Error     ? "error"
                       : d.severity == Severity::Warning ? "warning"
                                                          : "note";
    std::string message = unicode::sanitizeUtf8(d.message);
    if (d.loc.line == 0) {
      os << fmt::format("{}: {}: {}\n", path, kind, message);
      continue;
    }
    os << fmt::format("{}:{}:{}: {}: {}\n", path, d.loc.line,
                      file.codePointColumn(d.loc), kind, message);
    std::string line = file.lineText(d.loc.line);
    os << unicode::sanitizeUtf8(line) << "\n";
    // Pad to the caret character by character, so that the caret lines up on
    // a terminal; tabs are echoed as tabs.
    std::string marker;
    size_t caret = d.loc.col > 0 ? d.loc.col - 1 : 0, i = 0;
    while (i < caret && i < line.size()) {
      auto c = unicode::decodeUtf8(line, i);
      if (c.valid() && c.codePoint == '\t')
        marker += '\t';
      else
        marker.append(echoWidth(c), ' ');
      i += c.size;
    }
    if (caret > line.size())
      marker.append(caret - line.size(), ' ');
    // The underline covers the display width of the bytes it spans.
    size_t end = caret + std::max(d.length, 1u), width = 0;
    for (i = std::max(i, caret); i < end && i < line.size();) {
      auto c = unicode::decodeUtf8(line, i);
      width += echoWidth(c);
      i += c.size;
    }
    if (end > line.size())
      width += end - std::max(line.size(), caret);
    marker += '^';
    if (width > 1)
      marker.append(width - 1, '~');
    os << marker << "\n";
  }
}

} // namespace ein
