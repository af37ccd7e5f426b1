// Tensors between Python and ein without copies: DLPack and the buffer
// protocol (through nanobind's ndarray) in, nanobind ndarrays over ein's
// storage out.
#include "Tensors.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>

namespace ein::python {

namespace {

/// ein._ein.Error: every refusal of an input or a call (a RuntimeError; the
/// package's wrappers raise it again as ein.EinopsError).
PyObject *errorType = nullptr;

/// The data pointers of the last call's inputs, as ein's kernels and views
/// received them (the debug hook that proves no input was copied).
std::vector<uintptr_t> lastInputPointers;

/// The DLPack element type of `t`; each ein dtype is one of these.
nb::dlpack::dtype dlpackType(api::DType t) {
  using Code = nb::dlpack::dtype_code;
  auto make = [](Code code, uint8_t bits) {
    return nb::dlpack::dtype{uint8_t(code), bits, 1};
  };
  switch (t) {
  case api::DType::F64:
    return make(Code::Float, 64);
  case api::DType::F32:
    return make(Code::Float, 32);
  case api::DType::F16:
    return make(Code::Float, 16);
  case api::DType::BF16:
    return make(Code::Bfloat, 16);
  // The language's fp8 types are OCP's, torch's float8_e4m3fn and
  // float8_e5m2 (docs/language.md §3).
  case api::DType::F8E4M3:
    return make(Code::Float8_E4M3FN, 8);
  case api::DType::F8E5M2:
    return make(Code::Float8_E5M2, 8);
  case api::DType::I64:
    return make(Code::Int, 64);
  case api::DType::I32:
    return make(Code::Int, 32);
  case api::DType::Bool:
    return make(Code::Bool, 8);
  case api::DType::I8:
    return make(Code::Int, 8);
  }
  return make(Code::Float, 32);
}

/// The ein dtype of a DLPack element type, if ein has it.
std::optional<api::DType> einType(nb::dlpack::dtype d) {
  // DType's enumerators run from F64 to I8 (include/ein/API/Types.h).
  for (unsigned i = 0; i <= unsigned(api::DType::I8); ++i) {
    auto t = static_cast<api::DType>(i);
    if (dlpackType(t) == d)
      return t;
  }
  return std::nullopt;
}

/// numpy.ndarray's type, compared first: the common case costs no import.
PyTypeObject *numpyArrayType() {
  static PyTypeObject *type = [] {
    nb::object ndarray = nb::module_::import_("numpy").attr("ndarray");
    return reinterpret_cast<PyTypeObject *>(ndarray.release().ptr());
  }();
  return type;
}

/// torch.Tensor, once torch is imported (ein never imports it itself).
PyObject *torchTensorType() {
  static PyObject *type = nullptr;
  if (!type) {
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *torch = PyDict_GetItemString(modules, "torch");
    if (torch)
      type = PyObject_GetAttrString(torch, "Tensor");
    if (!type)
      PyErr_Clear();
  }
  return type;
}

Framework frameworkOf(nb::handle x) {
  if (Py_TYPE(x.ptr()) == numpyArrayType())
    return Framework::NumPy;
  if (PyObject *tensor = torchTensorType();
      tensor && PyObject_IsInstance(x.ptr(), tensor) == 1)
    return Framework::Torch;
  return Framework::NumPy;
}

/// How the value's type is called, for messages: "ndarray".
std::string typeName(nb::handle x) {
  return nb::cast<std::string>(
      nb::handle(reinterpret_cast<PyObject *>(Py_TYPE(x.ptr())))
          .attr("__name__"));
}

/// ein's dtypes by their language names: "f64 f32 ... bool i8".
std::string dtypeNames() {
  std::string names;
  // DType's enumerators run from F64 to I8 (include/ein/API/Types.h).
  for (unsigned i = 0; i <= unsigned(api::DType::I8); ++i)
    names += (names.empty() ? "" : " ") +
             std::string(api::name(static_cast<api::DType>(i)));
  return names;
}

/// Why `x`, which nanobind did not take as an array or whose dtype ein
/// lacks, is refused.
[[noreturn]] void refuseArray(nb::handle x, const std::string &which) {
  if (frameworkOf(x) == Framework::Torch) {
    std::string device = text(x.attr("device"));
    if (device != "cpu")
      raiseError(which + " is on " + device +
                 ": ein's einops functions take CPU tensors");
  }
  if (nb::hasattr(x, "dtype"))
    raiseError(which + " has dtype " + text(x.attr("dtype")) +
               ", which ein lacks (ein's dtypes: " + dtypeNames() + ")");
  raiseError(which + " is a " + typeName(x) +
             ", not an array (ein takes numpy arrays, torch tensors and "
             "objects with __dlpack__ or the buffer protocol)");
}

/// Refuses a torch tensor that needs gradients while autograd records:
/// ein's result would silently have none.
void refuseGradients(nb::handle x, const std::string &which) {
  if (!nb::cast<bool>(x.attr("requires_grad")))
    return;
  // Kept for the process's life (never released after Python finalizes).
  static PyObject *gradEnabled =
      nb::object(nb::module_::import_("torch").attr("is_grad_enabled"))
          .release()
          .ptr();
  if (nb::cast<bool>(nb::handle(gradEnabled)()))
    raiseError(which + " requires grad: ein's einops functions do not "
                       "track gradients (use einops there, or call under "
                       "torch.no_grad(), or pass x.detach())");
}

struct Keep {
  api::Tensor tensor;
  nb::object base;
};

} // namespace

std::string text(nb::handle x) {
  return nb::cast<std::string>(nb::steal<nb::str>(PyObject_Str(x.ptr())));
}

void raiseError(const std::string &message) {
  PyErr_SetString(errorType, message.c_str());
  throw nb::python_error();
}

/// Whether an array's strides are all >= 0 (a size-1 dim's never counts).
static bool nonNegativeStrides(const nb::ndarray<nb::ro> &a) {
  for (size_t d = 0; d < a.ndim(); ++d)
    if (a.stride(d) < 0 && a.shape(d) != 1)
      return false;
  return true;
}

Inputs viewInputs(const std::vector<nb::handle> &objects) {
  Inputs in;
  in.tensors.reserve(objects.size());
  in.objects.reserve(objects.size());
  lastInputPointers.clear();
  for (size_t i = 0; i < objects.size(); ++i) {
    nb::object x = nb::borrow(objects[i]);
    std::string which = "input " + std::to_string(i);
    Framework framework = frameworkOf(x);
    if (i == 0)
      in.framework = framework;
    if (framework == Framework::Torch)
      refuseGradients(x, which);
    nb::ndarray<nb::ro> a;
    if (!nb::try_cast(x, a, /*convert=*/false))
      refuseArray(x, which);
    if (a.device_type() != nb::device::cpu::value)
      raiseError(which + " is not in host memory (DLPack device type " +
                 std::to_string(a.device_type()) +
                 "): ein's einops functions take CPU tensors");
    std::optional<api::DType> dtype = einType(a.dtype());
    if (!dtype)
      refuseArray(x, which);
    // ein's tensors have strides >= 0 (include/ein/API/Tensor.h): a numpy
    // array with a negative stride (x[::-1]) is the one input ein copies, C
    // order, by numpy (docs/python.md).
    if (!nonNegativeStrides(a)) {
      x = nb::module_::import_("numpy").attr("ascontiguousarray")(x);
      if (!nb::try_cast(x, a, /*convert=*/false) || !nonNegativeStrides(a))
        raiseError(which + " has a negative stride, and no C-order copy of "
                           "it could be made");
    }
    std::vector<int64_t> shape(a.ndim()), strides(a.ndim());
    for (size_t d = 0; d < a.ndim(); ++d) {
      shape[d] = int64_t(a.shape(d));
      // A size-1 dim's stride is never used; numpy and torch may give any.
      strides[d] = shape[d] == 1 ? 0 : a.stride(d);
    }
    auto view = api::nothrow::view(const_cast<void *>(a.data()), *dtype,
                                   std::move(shape), std::move(strides));
    if (!view)
      raiseError(which + ": " + view.error().message);
    lastInputPointers.push_back(reinterpret_cast<uintptr_t>(a.data()));
    in.tensors.push_back(std::move(*view));
    in.objects.push_back(std::move(x));
  }
  return in;
}

nb::object toPython(const api::Tensor &t, const Inputs &inputs) {
  auto *keep = new Keep{t, nb::object()};
  for (size_t i = 0; i < inputs.tensors.size(); ++i)
    if (t.shares_storage(inputs.tensors[i]))
      keep->base = inputs.objects[i];
  nb::capsule owner(keep,
                    [](void *p) noexcept { delete static_cast<Keep *>(p); });
  size_t rank = size_t(t.rank());
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::dlpack::dtype dtype = dlpackType(t.dtype());
  switch (inputs.framework) {
  case Framework::NumPy:
    // A view of a read-only array is read-only, as numpy's own views are.
    if (keep->base.is_valid() && nb::hasattr(keep->base, "flags") &&
        !nb::cast<bool>(keep->base.attr("flags").attr("writeable")))
      return nb::ndarray<nb::numpy, nb::ro>(t.data(), rank, shape.data(), owner,
                                            t.strides().data(), dtype)
          .cast();
    return nb::ndarray<nb::numpy>(t.data(), rank, shape.data(), owner,
                                  t.strides().data(), dtype)
        .cast();
  case Framework::Torch:
    return nb::ndarray<nb::pytorch>(t.data(), rank, shape.data(), owner,
                                    t.strides().data(), dtype)
        .cast();
  }
  return nb::none();
}

void bindTensors(nb::module_ &m) {
  errorType = PyErr_NewException("ein._ein.Error", PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(errorType);
  m.def(
      "_last_input_pointers", [] { return lastInputPointers; },
      "The data pointers ein's views of the last call's inputs had: equal "
      "to the inputs' own (x.ctypes.data, x.data_ptr()) when nothing was "
      "copied.");
}

} // namespace ein::python
