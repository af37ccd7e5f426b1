// ein._ein.check_python: api::nothrow::check_python (ein/API/Check.h) with
// the GIL released while Python's parser runs in a child process and ein
// checks; the result as a dict for python/ein/_check.py.
#include "Check.h"
#include "Modules.h"

#include "ein/API/Check.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace ein::python {

namespace {

nb::dict asDict(const api::PythonCheck &check) {
  nb::dict d;
  d["ok"] = check.ok;
  d["errors"] = check.errors;
  d["diagnostics"] = check.diagnostics;
  d["report"] = check.report;
  d["json"] = check.json;
  return d;
}

} // namespace

void bindCheck(nb::module_ &m) {
  m.def(
      "check_python",
      [](const std::string &path, bool verbose) {
        return asDict(withoutGIL(
            [&] { return api::nothrow::check_python(path, verbose); }));
      },
      nb::arg("path"), nb::arg("verbose") = false,
      "Checks the Python file at `path` as `einc check` does: a dict of ok, "
      "errors, diagnostics (as einc prints them), report and json.");
  m.def(
      "check_python_source",
      [](const std::string &source, const std::string &path, bool verbose) {
        return asDict(withoutGIL([&] {
          return api::nothrow::check_python_source(source, path, verbose);
        }));
      },
      nb::arg("source"), nb::arg("path") = "<source>",
      nb::arg("verbose") = false,
      "check_python for `source` as if read from `path`.");
}

} // namespace ein::python
