// einops' functions for Python: rearrange, reduce, repeat, einsum, pack and
// unpack on numpy arrays and torch tensors, through the C++ API.
#pragma once

#include <nanobind/nanobind.h>

namespace ein::python {

/// Adds ein._ein.rearrange, reduce, repeat, einsum, pack and unpack (the
/// package's ein.rearrange & co. wrap them, docs/python.md).
void bindOps(nanobind::module_ &m);

} // namespace ein::python
