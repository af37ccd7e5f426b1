// Printing of diagnostics in the `FILE:LINE:COL: error:` format with carets.
#include "ein/Syntax/Diagnostics.h"

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

void DiagnosticEngine::error(SourceLoc loc, const std::string &message,
                             unsigned length) {
  list.push_back({Severity::Error, loc, length ? length : 1, message});
  ++errors;
}

void DiagnosticEngine::note(SourceLoc loc, const std::string &message,
                            unsigned length) {
  list.push_back({Severity::Note, loc, length ? length : 1, message});
}

void DiagnosticEngine::print(std::ostream &os) const {
  for (auto &d : list) {
    const char *kind = d.severity == Severity::Error     ? "error"
                       : d.severity == Severity::Warning ? "warning"
                                                          : "note";
    if (d.loc.line == 0) {
      os << file.path << ": " << kind << ": " << d.message << "\n";
      continue;
    }
    os << file.path << ":" << d.loc.line << ":" << d.loc.col << ": " << kind
       << ": " << d.message << "\n";
    std::string line = file.lineText(d.loc.line);
    os << line << "\n";
    std::string marker;
    for (unsigned c = 1; c < d.loc.col; ++c)
      marker += (c - 1 < line.size() && line[c - 1] == '\t') ? '\t' : ' ';
    marker += '^';
    for (unsigned i = 1; i < d.length; ++i)
      marker += '~';
    os << marker << "\n";
  }
}

} // namespace ein
