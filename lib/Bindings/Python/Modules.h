// Compiled .ein modules for Python: ein._ein.Module (load, call, report,
// the training account, signatures) and its error types.
#pragma once

#include <nanobind/nanobind.h>

namespace ein::python {

/// Adds ein._ein.Module, ein._ein.CompileError and ein._ein.ShapeError
/// (after bindTensors, whose ein._ein.Error they derive from).
void bindModules(nanobind::module_ &m);

} // namespace ein::python
