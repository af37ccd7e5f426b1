// The C++ API's static shape check of Python source (ein/API/Check.h): the
// Python checker's library (ein/PyCheck/PyCheck.h), its diagnostics printed
// as einc prints them.
#include "ein/API/Check.h"
#include "Internal.h"

#include "ein/PyCheck/PyCheck.h"
#include "ein/Syntax/Diagnostics.h"
#include "ein/Syntax/Imports.h"

#include <sstream>

namespace ein::api::nothrow {

namespace {

Result<PythonCheck> checkFile(const SourceFile &file, bool verbose) {
  DiagnosticEngine diags(file);
  auto report = pycheck::checkPython(diags);
  if (!report)
    return detail::toInfo(report.error());
  PythonCheck check;
  check.errors = diags.errorCount();
  check.ok = !diags.hadError() && report->parsed;
  std::ostringstream text;
  diags.print(text);
  check.diagnostics = text.str();
  if (report->parsed) {
    check.report = pycheck::reportText(*report, verbose);
    check.json = pycheck::reportJSON(*report);
  }
  return check;
}

} // namespace

Result<PythonCheck> check_python(const std::string &path, bool verbose) {
  auto file = readSource(path);
  if (!file)
    return detail::toInfo(file.error());
  return checkFile(*file, verbose);
}

Result<PythonCheck> check_python_source(const std::string &source,
                                        const std::string &path, bool verbose) {
  return checkFile(SourceFile{path, source}, verbose);
}

} // namespace ein::api::nothrow
