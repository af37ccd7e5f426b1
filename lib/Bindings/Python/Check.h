// The static shape check of Python source for Python: ein._ein.check_python,
// what `einc check model.py` does (docs/python-check.md).
#pragma once

#include <nanobind/nanobind.h>

namespace ein::python {

/// Adds ein._ein.check_python and check_python_source (after bindModules,
/// whose errors they raise).
void bindCheck(nanobind::module_ &m);

} // namespace ein::python
