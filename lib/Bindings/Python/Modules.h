// Compiled .ein modules for Python: ein._ein.Module (load, call, report,
// the training account, signatures) and its error types, which the other
// bindings that run ein's front end raise too.
#pragma once

#include "ein/API/Types.h"

#include <nanobind/nanobind.h>

namespace ein::python {

/// Adds ein._ein.Module, ein._ein.CompileError and ein._ein.ShapeError
/// (after bindTensors, whose ein._ein.Error they derive from).
void bindModules(nanobind::module_ &m);

/// Raises `error` as the Python exception of its kind (CompileError for a
/// program ein refuses, ShapeError for inputs or sizes that do not fit),
/// its message ein's diagnostic as einc prints it.
[[noreturn]] void raiseInfo(const api::ErrorInfo &error);

/// The value of `result`, or its error raised by kind (with the GIL held).
template <class T> T unwrap(api::Result<T> &&result) {
  if (!result)
    raiseInfo(result.error());
  return std::move(*result);
}

/// The value of what `f` returns (an api::Result), `f` run with the GIL
/// released (ein checks, compiles or runs); its error raised with the GIL
/// held again.
template <class F> auto withoutGIL(F &&f) {
  auto result = [&] {
    nanobind::gil_scoped_release unlocked;
    return f();
  }();
  return unwrap(std::move(result));
}

} // namespace ein::python
