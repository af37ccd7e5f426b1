// libFuzzer target: the `.ein` front end as `einc check` runs it (lexer,
// parser, checker, diagnostics, AST printing), bytes taken as a source file.
//
// Oracles beyond "no crash, no sanitizer report":
//   diag-location   every diagnostic points into the file (or nowhere);
//   diag-eof        ... also at the end of a file without a final newline;
//   shape-roundtrip every type of a checked program prints as a shape string
//                   that parses back to the same shape;
//   utf8            for valid UTF-8 input, the printed diagnostics are valid
//                   UTF-8.
#include "FuzzSupport.h"

#include "ein/Sema/Checker.h"
#include "ein/Shape/Shape.h"
#include "ein/Syntax/Parser.h"

#include <algorithm>
#include <sstream>

using namespace ein;

namespace {

void checkLocations(const SourceFile &file, const DiagnosticEngine &diags) {
  if (fuzz::ignored("diag-location"))
    return;
  unsigned lines = 1 + static_cast<unsigned>(
                           std::count(file.text.begin(), file.text.end(), '\n'));
  for (auto &d : diags.diagnostics()) {
    if (d.loc.line <= lines)
      continue;
    // One line past a last line without a newline: where the lexer puts
    // the end of the file (a separate oracle, to look past it).
    const char *oracle = d.loc.line == lines + 1 && !file.text.empty() &&
                                 file.text.back() != '\n'
                             ? "diag-eof"
                             : "diag-location";
    if (!fuzz::ignored(oracle))
      fuzz::finding(oracle,
                    fmt::format("diagnostic '{}' at line {}, the file has {} lines",
                                d.message, d.loc.line, lines));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SourceFile file{"fuzz.ein", std::string(reinterpret_cast<const char *>(data), size)};
  // einc refuses a file with NUL bytes before lexing it.
  if (file.text.find('\0') != std::string::npos)
    return -1;
  DiagnosticEngine diags(file);
  std::ostringstream out;
  Module module = parseModule(file, diags);
  if (!diags.hadError()) {
    printAST(module, out);
    CheckedModule checked = checkModule(module, CheckOptions(), diags);
    if (!diags.hadError()) {
      for (auto &fn : checked.functions) {
        for (auto &c : fn.ctx.constraints)
          out << fn.name << ": entry check: " << c.str() << "\n";
        for (auto &[name, value] : fn.ctx.inferred)
          out << fn.name << ": entry check: " << name << " == "
              << toString(value) << "\n";
      }
      fuzz::checkShapesRoundTrip(checked);
    }
  }
  checkLocations(file, diags);
  std::ostringstream printed;
  diags.print(printed);
  if (!fuzz::ignored("utf8") && fuzz::isValidUtf8(file.text) &&
      !fuzz::isValidUtf8(printed.str()))
    fuzz::finding("utf8", "valid UTF-8 source, invalid UTF-8 diagnostics:\n" +
                              printed.str());
  return 0;
}
