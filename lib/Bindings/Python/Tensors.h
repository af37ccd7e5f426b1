// Tensors between Python and ein: numpy arrays and torch tensors become
// ein::api tensors over the same memory (their strides as they are), and
// ein's results go back as arrays or tensors over ein's memory, no copy
// either way (docs/python.md, "Tensors without copies").
#pragma once

#include "ein/ein.h"

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

namespace ein::python {

namespace nb = nanobind;

/// Where a result goes: the framework of the call's first input.
enum class Framework : uint8_t { NumPy, Torch };

/// The tensors of one call: ein's views of the Python inputs, the inputs
/// themselves, what keeps each one's memory alive (the input, or the DLPack
/// tensor imported from it; a result that is a view of one keeps it), and
/// the framework results are returned in.
struct Inputs {
  std::vector<api::Tensor> tensors;
  std::vector<nb::object> objects, owners;
  Framework framework = Framework::NumPy;
};

/// The views of `objects` (numpy arrays, torch tensors, anything speaking
/// DLPack or the buffer protocol; CPU tensors, and CUDA tensors as views of
/// device memory on api::cuda); throws nb::python_error (ein._ein.Error)
/// for a dtype ein lacks, a device ein cannot use, a negative stride on
/// the device.
Inputs viewInputs(const std::vector<nb::handle> &objects);

/// `t` as an array of `inputs.framework` over t's memory, kept alive by the
/// result (and the input it views, if it is a view of one).
nb::object toPython(const api::Tensor &t, const Inputs &inputs);

/// The framework `x` belongs to: Torch for a torch.Tensor (once torch is
/// imported), else NumPy.
Framework frameworkOf(nb::handle x);

/// ein._ein.Error, which every refusal raises.
PyObject *errorType();

/// A 0-d numpy array as numpy's scalar (PyArray_Return); anything else as
/// it is.
nb::object numpyScalar(nb::object array);

/// str(x), as Python prints it.
std::string text(nb::handle x);

/// Throws ein._ein.Error carrying `message`.
[[noreturn]] void raiseError(const std::string &message);

/// Registers ein._ein.Error and the debug hook _last_input_pointers.
void bindTensors(nb::module_ &m);

} // namespace ein::python
