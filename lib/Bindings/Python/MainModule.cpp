// The extension module ein._ein: one bind function per concern.
#include "Check.h"
#include "Modules.h"
#include "Ops.h"
#include "Tensors.h"

NB_MODULE(_ein, m) {
  m.doc() = "ein's compiled core; use the package `ein` (docs/python.md)";
  ein::python::bindTensors(m);
  ein::python::bindOps(m);
  ein::python::bindModules(m);
  ein::python::bindCheck(m);
}
