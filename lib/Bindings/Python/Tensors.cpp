// Tensors between Python and ein without copies. numpy arrays are read and
// made through numpy's C API and CPU torch tensors through their attributes
// and as_strided (the per-call cost of a tiny tensor is these conversions:
// bench/python_overhead.py); anything else, the dtypes numpy lacks and every
// CUDA tensor go through nanobind's ndarray (DLPack, the buffer protocol).
#include "Tensors.h"

#include <nanobind/ndarray.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <numpy/arrayobject.h>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace ein::python {

namespace {

/// ein._ein.Error: every refusal of an input or a call (a RuntimeError; the
/// package's wrappers raise it again as ein.EinopsError).
PyObject *errorTypeObject = nullptr;

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

/// The DLPack device type of `d` (dlpack.h's kDLCPU, kDLCUDA).
int32_t dlpackDevice(api::Device d) {
  switch (d) {
  case api::Device::CPU:
    return nb::device::cpu::value;
  case api::Device::CUDA:
    return nb::device::cuda::value;
  }
  return nb::device::cpu::value;
}

/// ein's device of a DLPack device type, if ein has it.
std::optional<api::Device> einDevice(int32_t type) {
  // Device's enumerators run from CPU to CUDA (include/ein/API/Types.h).
  for (unsigned i = 0; i <= unsigned(api::Device::CUDA); ++i)
    if (auto d = static_cast<api::Device>(i); dlpackDevice(d) == type)
      return d;
  return std::nullopt;
}

/// "cuda:1", "cpu", or the DLPack device type ein lacks, for messages.
std::string deviceText(int32_t type, int32_t id) {
  std::optional<api::Device> d = einDevice(type);
  if (!d)
    return "DLPack device type " + std::to_string(type) + " (id " +
           std::to_string(id) + ")";
  if (*d == api::cpu)
    return api::name(*d);
  return std::string(api::name(*d)) + ":" + std::to_string(id);
}

/// numpy's type number of `t`, or -1 where numpy has no such type.
int numpyType(api::DType t) {
  switch (t) {
  case api::DType::F64:
    return NPY_FLOAT64;
  case api::DType::F32:
    return NPY_FLOAT32;
  case api::DType::F16:
    return NPY_FLOAT16;
  case api::DType::BF16:
  case api::DType::F8E4M3:
  case api::DType::F8E5M2:
    return -1;
  case api::DType::I64:
    return NPY_INT64;
  case api::DType::I32:
    return NPY_INT32;
  case api::DType::Bool:
    return NPY_BOOL;
  case api::DType::I8:
    return NPY_INT8;
  }
  return -1;
}

/// torch's name of `t` (torch.float32, ...); torch has every ein dtype.
const char *torchName(api::DType t) {
  switch (t) {
  case api::DType::F64:
    return "float64";
  case api::DType::F32:
    return "float32";
  case api::DType::F16:
    return "float16";
  case api::DType::BF16:
    return "bfloat16";
  case api::DType::F8E4M3:
    return "float8_e4m3fn";
  case api::DType::F8E5M2:
    return "float8_e5m2";
  case api::DType::I64:
    return "int64";
  case api::DType::I32:
    return "int32";
  case api::DType::Bool:
    return "bool";
  case api::DType::I8:
    return "int8";
  }
  return "";
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

/// How the value's type is called, for messages: "ndarray".
std::string typeName(nb::handle x) {
  return nb::cast<std::string>(
      nb::handle(reinterpret_cast<PyObject *>(Py_TYPE(x.ptr())))
          .attr("__name__"));
}

/// "input 3", for messages.
std::string inputName(size_t index) { return "input " + std::to_string(index); }

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
[[noreturn]] void refuseArray(nb::handle x, size_t index) {
  std::string which = inputName(index);
  if (frameworkOf(x) == Framework::Torch) {
    std::string layout = text(x.attr("layout"));
    if (layout != "torch.strided")
      raiseError(which + " has layout " + layout +
                 ": ein takes strided (dense) tensors");
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
void refuseGradients(nb::handle x, size_t index) {
  if (!nb::cast<bool>(x.attr("requires_grad")))
    return;
  // Kept for the process's life (never released after Python finalizes).
  static PyObject *gradEnabled =
      nb::object(nb::module_::import_("torch").attr("is_grad_enabled"))
          .release()
          .ptr();
  if (nb::cast<bool>(nb::handle(gradEnabled)()))
    raiseError(inputName(index) +
               " requires grad: ein's einops functions do not "
               "track gradients (use einops there, or call under "
               "torch.no_grad(), or pass x.detach())");
}

/// Where an input's elements are, as ein reads them.
struct Described {
  void *data = nullptr;
  api::DType dtype = api::DType::F32;
  std::vector<int64_t> shape, strides; // strides in elements, any sign
  api::Device device = api::cpu;
  /// What keeps the elements alive when not the input itself: the DLPack
  /// tensor nanobind imported.
  nb::object owner;
};

/// A numpy array of a native-order dtype ein has, read from its struct;
/// false for anything else (the generic path then explains).
bool describeNumPy(PyObject *x, Described &d) {
  auto *a = reinterpret_cast<PyArrayObject *>(x);
  if (!PyArray_ISNOTSWAPPED(a))
    return false;
  int type = PyArray_TYPE(a);
  std::optional<api::DType> dtype;
  // DType's enumerators run from F64 to I8 (include/ein/API/Types.h).
  for (unsigned i = 0; i <= unsigned(api::DType::I8) && !dtype; ++i)
    if (int t = numpyType(static_cast<api::DType>(i));
        t >= 0 && PyArray_EquivTypenums(type, t))
      dtype = static_cast<api::DType>(i);
  if (!dtype)
    return false;
  int rank = PyArray_NDIM(a);
  npy_intp item = PyArray_ITEMSIZE(a);
  d.data = PyArray_DATA(a);
  d.dtype = *dtype;
  d.shape.assign(PyArray_DIMS(a), PyArray_DIMS(a) + rank);
  d.strides.resize(rank);
  for (int k = 0; k < rank; ++k) {
    npy_intp bytes = PyArray_STRIDE(a, k);
    if (bytes % item != 0 && d.shape[k] > 1)
      return false;
    d.strides[k] = bytes / item;
  }
  return true;
}

/// torch's dtype objects in DType's order, once torch is imported.
const std::vector<PyObject *> &torchDtypes() {
  static std::vector<PyObject *> dtypes = [] {
    nb::module_ torch = nb::module_::import_("torch");
    std::vector<PyObject *> out;
    for (unsigned i = 0; i <= unsigned(api::DType::I8); ++i) {
      const char *name = torchName(static_cast<api::DType>(i));
      // Kept for the process's life (never released after finalizing).
      out.push_back(nb::hasattr(torch, name)
                        ? nb::object(torch.attr(name)).release().ptr()
                        : nullptr);
    }
    return out;
  }();
  return dtypes;
}

/// A strided CPU torch tensor of a dtype ein has, read from its attributes
/// (cheaper than a DLPack capsule); false for anything else.
bool describeTorch(nb::handle x, Described &d) {
  static PyObject *strided =
      nb::object(nb::module_::import_("torch").attr("strided")).release().ptr();
  if (!nb::cast<bool>(x.attr("is_cpu")) ||
      nb::object(x.attr("layout")).ptr() != strided)
    return false;
  nb::object dtype = x.attr("dtype");
  const std::vector<PyObject *> &dtypes = torchDtypes();
  auto found = std::find(dtypes.begin(), dtypes.end(), dtype.ptr());
  if (found == dtypes.end())
    return false;
  d.dtype = static_cast<api::DType>(found - dtypes.begin());
  d.data = reinterpret_cast<void *>(nb::cast<uintptr_t>(x.attr("data_ptr")()));
  nb::tuple shape = nb::borrow<nb::tuple>(x.attr("shape"));
  nb::tuple strides = nb::borrow<nb::tuple>(x.attr("stride")());
  size_t rank = nb::len(shape);
  d.shape.resize(rank);
  d.strides.resize(rank);
  for (size_t k = 0; k < rank; ++k) {
    d.shape[k] = nb::cast<int64_t>(shape[k]);
    d.strides[k] = nb::cast<int64_t>(strides[k]);
  }
  return true;
}

/// The DLPack device `x` says it is on (__dlpack_device__: type, id), if it
/// says.
std::optional<std::pair<int32_t, int32_t>> dlpackDeviceOf(nb::handle x) {
  if (!nb::hasattr(x, "__dlpack_device__"))
    return std::nullopt;
  nb::object d = x.attr("__dlpack_device__")();
  return std::pair{nb::cast<int32_t>(d[0]), nb::cast<int32_t>(d[1])};
}

/// torch.cuda (torch is imported: a torch CUDA tensor is at hand).
nb::handle torchCUDA() {
  // Kept for the process's life (never released after finalizing).
  static PyObject *module = nb::module_::import_("torch.cuda").release().ptr();
  return module;
}

/// x's DLPack capsule for ein's CUDA device, or its refusal. ein's kernels
/// run on the CUDA default stream, so the capsule is asked for with
/// stream=1 (the protocol's legacy default stream): the producer makes that
/// stream wait for the writes queued on its own (torch: its current
/// stream) before ein reads (docs/python.md, "CUDA tensors").
nb::object exportToCUDA(nb::handle x, int32_t id, size_t index) {
  std::string which = inputName(index);
  std::string where = deviceText(dlpackDevice(api::cuda), id);
  if (id != 0)
    raiseError(which + " is on " + where +
               ": ein runs on CUDA device 0 only; move it with x.to('cuda:0')");
  api::Result<std::string> usable = [] {
    // The first use selects the device and may build its library: seconds.
    nb::gil_scoped_release unlocked;
    return api::nothrow::device_name(api::cuda);
  }();
  if (!usable) {
    std::string why = usable.error().message;
    if (why.rfind("error: ", 0) == 0)
      why.erase(0, 7);
    raiseError(which + " is on " + where + ", but ein cannot use it: " + why +
               "; or pass x.cpu()");
  }
  nb::object source = nb::borrow(x);
  if (frameworkOf(x) == Framework::Torch) {
    if (api::cuda_emulated())
      raiseError(which + " is a torch tensor on " + where +
                 ", but ein's CUDA device is the emulation (EIN_CUDA="
                 "emulated), whose \"device\" memory is host memory: unset "
                 "EIN_CUDA to run on the GPU, or pass x.cpu()");
    if (text(x.attr("layout")) != "torch.strided")
      refuseArray(x, index);
    // ein's kernels may still read x after the call returns (they are
    // queued on the default stream): torch's allocator must not hand x's
    // memory to other work before they finish.
    x.attr("record_stream")(torchCUDA().attr("default_stream")());
    // torch exports no tensor that requires grad; one that reaches here is
    // read without recording (refuseGradients).
    if (nb::cast<bool>(x.attr("requires_grad")))
      source = x.attr("detach")();
  }
  return source.attr("__dlpack__")(nb::arg("stream") = 1);
}

/// `x` through nanobind's ndarray (DLPack, the buffer protocol): anything
/// not taken on the fast paths, CUDA tensors included; refused by name when
/// ein cannot read it.
Described describeGeneric(nb::handle x, size_t index) {
  nb::object source = nb::borrow(x);
  api::Device device = api::cpu;
  // torch names devices DLPack lacks (meta) only by its attribute.
  if (frameworkOf(x) == Framework::Torch) {
    std::string type = text(x.attr("device").attr("type"));
    if (type != api::name(api::cpu) && type != api::name(api::cuda))
      raiseError(inputName(index) + " is on " + text(x.attr("device")) +
                 ": ein takes CPU and CUDA tensors");
  }
  if (auto where = dlpackDeviceOf(x)) {
    std::optional<api::Device> known = einDevice(where->first);
    if (!known)
      raiseError(inputName(index) + " is on " +
                 deviceText(where->first, where->second) +
                 ": ein takes CPU and CUDA tensors");
    device = *known;
    if (device == api::cuda)
      source = exportToCUDA(x, where->second, index);
  }
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(source, a, /*convert=*/false))
    refuseArray(x, index);
  if (a.device_type() != dlpackDevice(device))
    raiseError(inputName(index) + "'s DLPack tensor is on " +
               deviceText(a.device_type(), a.device_id()) +
               ", although it says it is on " +
               deviceText(dlpackDevice(device), 0) +
               " (__dlpack_device__); ein refuses it");
  std::optional<api::DType> dtype = einType(a.dtype());
  if (!dtype)
    refuseArray(x, index);
  Described d;
  d.data = const_cast<void *>(a.data());
  d.dtype = *dtype;
  d.device = device;
  d.owner = nb::capsule(new nb::ndarray<nb::ro>(a), [](void *p) noexcept {
    delete static_cast<nb::ndarray<nb::ro> *>(p);
  });
  for (size_t k = 0; k < a.ndim(); ++k) {
    d.shape.push_back(int64_t(a.shape(k)));
    d.strides.push_back(a.stride(k));
  }
  return d;
}

Described describe(nb::handle x, Framework framework, size_t index) {
  Described d;
  switch (framework) {
  case Framework::NumPy:
    if (PyArray_Check(x.ptr()) && describeNumPy(x.ptr(), d))
      return d;
    break;
  case Framework::Torch:
    refuseGradients(x, index);
    if (describeTorch(x, d))
      return d;
    break;
  }
  return describeGeneric(x, index);
}

/// Whether a stride is negative (a size-1 dim's never counts).
bool negativeStrides(const Described &d) {
  for (size_t k = 0; k < d.shape.size(); ++k)
    if (d.strides[k] < 0 && d.shape[k] != 1)
      return true;
  return false;
}

} // namespace

Framework frameworkOf(nb::handle x) {
  if (Py_TYPE(x.ptr()) == numpyArrayType())
    return Framework::NumPy;
  if (PyObject *tensor = torchTensorType();
      tensor && PyObject_IsInstance(x.ptr(), tensor) == 1)
    return Framework::Torch;
  return Framework::NumPy;
}

PyObject *errorType() { return errorTypeObject; }

nb::object numpyScalar(nb::object array) {
  if (!PyArray_Check(array.ptr()))
    return array;
  return nb::steal(
      PyArray_Return(reinterpret_cast<PyArrayObject *>(array.release().ptr())));
}

std::string text(nb::handle x) {
  return nb::cast<std::string>(nb::steal<nb::str>(PyObject_Str(x.ptr())));
}

void raiseError(const std::string &message) {
  PyErr_SetString(errorTypeObject, message.c_str());
  throw nb::python_error();
}

Inputs viewInputs(const std::vector<nb::handle> &objects) {
  Inputs in;
  in.tensors.reserve(objects.size());
  in.objects.reserve(objects.size());
  lastInputPointers.clear();
  for (size_t i = 0; i < objects.size(); ++i) {
    nb::object x = nb::borrow(objects[i]);
    Framework framework = frameworkOf(x);
    if (i == 0)
      in.framework = framework;
    Described d = describe(x, framework, i);
    // ein's tensors have strides >= 0 (include/ein/API/Tensor.h): a numpy
    // array with a negative stride (x[::-1]) is the one input ein copies, C
    // order, by numpy (docs/python.md).
    if (negativeStrides(d) && d.device != api::cpu)
      raiseError(inputName(i) + " has a negative stride: ein's views of " +
                 api::name(d.device) +
                 " memory take strides >= 0; pass a copy (x.contiguous())");
    if (negativeStrides(d)) {
      x = nb::steal(PyArray_FromAny(x.ptr(), nullptr, 0, 0,
                                    NPY_ARRAY_C_CONTIGUOUS, nullptr));
      if (!x.is_valid())
        throw nb::python_error();
      d = describe(x, Framework::NumPy, i);
    }
    // A size-1 dim's stride is never used; numpy and torch may give any.
    for (size_t k = 0; k < d.shape.size(); ++k)
      if (d.shape[k] == 1)
        d.strides[k] = 0;
    auto view = api::nothrow::view(d.data, d.dtype, std::move(d.shape),
                                   std::move(d.strides), d.device);
    if (!view)
      raiseError(inputName(i) + ": " + view.error().message);
    lastInputPointers.push_back(reinterpret_cast<uintptr_t>(d.data));
    in.tensors.push_back(std::move(*view));
    in.owners.push_back(d.owner.is_valid() ? std::move(d.owner) : x);
    in.objects.push_back(std::move(x));
  }
  return in;
}

namespace {

/// A numpy array over t's memory, owned by `base` (an array it views, or a
/// capsule holding t); nullptr where numpy lacks t's dtype.
nb::object numpyArray(const api::Tensor &t, nb::handle base, bool writeable) {
  int type = numpyType(t.dtype());
  if (type < 0)
    return nb::object();
  int rank = int(t.rank());
  std::vector<npy_intp> dims(t.shape().begin(), t.shape().end());
  std::vector<npy_intp> strides(rank);
  for (int k = 0; k < rank; ++k)
    strides[k] = npy_intp(t.strides()[k] * int64_t(api::itemsize(t.dtype())));
  PyObject *array = PyArray_NewFromDescr(
      &PyArray_Type, PyArray_DescrFromType(type), rank, dims.data(),
      strides.data(), t.data(), writeable ? NPY_ARRAY_WRITEABLE : 0, nullptr);
  if (!array)
    throw nb::python_error();
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject *>(array),
                            base.inc_ref().ptr()) < 0) {
    Py_DECREF(array);
    throw nb::python_error();
  }
  return nb::steal(array);
}

/// A capsule that keeps `t`'s storage alive, and `input` (the owner of
/// the memory of the input t views, if it views one).
nb::capsule owner(const api::Tensor &t, nb::handle input) {
  struct Kept {
    api::Tensor t;
    nb::object input;
  };
  return nb::capsule(new Kept{t, nb::borrow(input)},
                     [](void *p) noexcept { delete static_cast<Kept *>(p); });
}

/// Waits until ein's kernels writing the CUDA tensor `t` have finished, for
/// a consumer whose stream ein cannot order itself after: a copy of one
/// element to the host, which the default stream runs after them.
void waitFor(const api::Tensor &t) {
  if (t.numel() == 0)
    return;
  api::Result<api::Tensor> copied = [&] {
    nb::gil_scoped_release unlocked;
    auto first = api::nothrow::view(t.data(), t.dtype(), {}, {}, t.device());
    return first ? api::nothrow::to(*first, api::cpu) : first;
  }();
  if (!copied)
    raiseError(copied.error().message);
}

} // namespace

nb::object toPython(const api::Tensor &t, const Inputs &inputs) {
  // ein's kernels are queued on the default stream and may still run: torch
  // reads the result on its current stream after them (an event, no wait).
  if (t.device() == api::cuda && inputs.framework == Framework::Torch) {
    nb::handle cuda = torchCUDA();
    cuda.attr("current_stream")().attr("wait_stream")(
        cuda.attr("default_stream")());
  }
  // A view of an input: made from that input, which it keeps alive.
  nb::handle viewed;
  for (size_t i = 0; i < inputs.tensors.size(); ++i) {
    if (!t.shares_storage(inputs.tensors[i]))
      continue;
    nb::handle x = inputs.objects[i];
    if (PyArray_Check(x.ptr()) && inputs.framework == Framework::NumPy) {
      // Read-only when the input is, as numpy's own views.
      bool writeable =
          PyArray_ISWRITEABLE(reinterpret_cast<PyArrayObject *>(x.ptr()));
      if (nb::object a = numpyArray(t, x, writeable); a.is_valid())
        return a;
    }
    if (inputs.framework == Framework::Torch &&
        frameworkOf(x) == Framework::Torch) {
      int64_t item = int64_t(api::itemsize(t.dtype()));
      int64_t offset = nb::cast<int64_t>(x.attr("storage_offset")()) +
                       (static_cast<char *>(t.data()) -
                        static_cast<char *>(inputs.tensors[i].data())) /
                           item;
      nb::list shape, strides;
      for (int64_t k = 0; k < t.rank(); ++k) {
        shape.append(t.shape()[k]);
        strides.append(t.strides()[k]);
      }
      return x.attr("as_strided")(shape, strides, offset);
    }
    viewed = inputs.owners[i];
    break;
  }
  // ein's own memory (or a view of an input of another kind).
  nb::capsule keep = owner(t, viewed);
  size_t rank = size_t(t.rank());
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::dlpack::dtype dtype = dlpackType(t.dtype());
  bool host = t.device() == api::cpu;
  int32_t device = dlpackDevice(t.device());
  switch (inputs.framework) {
  case Framework::NumPy:
    if (!host) { // numpy holds host memory only: an array-API object then
      waitFor(t);
      return nb::ndarray<nb::array_api>(t.data(), rank, shape.data(), keep,
                                        t.strides().data(), dtype, device)
          .cast();
    }
    if (nb::object a = numpyArray(t, keep, true); a.is_valid())
      return a;
    return nb::ndarray<nb::numpy>(t.data(), rank, shape.data(), keep,
                                  t.strides().data(), dtype)
        .cast();
  case Framework::Torch: {
    // torch.from_numpy of an array over t takes a fraction of a DLPack
    // import; bf16 and fp8, which numpy lacks, take DLPack.
    static PyObject *fromNumPy =
        nb::object(nb::module_::import_("torch").attr("from_numpy"))
            .release()
            .ptr();
    if (host)
      if (nb::object a = numpyArray(t, keep, true); a.is_valid())
        return nb::handle(fromNumPy)(a);
    return nb::ndarray<nb::pytorch>(t.data(), rank, shape.data(), keep,
                                    t.strides().data(), dtype, device)
        .cast();
  }
  }
  return nb::none();
}

void bindTensors(nb::module_ &m) {
  if (_import_array() < 0)
    throw nb::python_error();
  errorTypeObject =
      PyErr_NewException("ein._ein.Error", PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(errorTypeObject);
  m.def(
      "_last_input_pointers", [] { return lastInputPointers; },
      "The data pointers ein's views of the last call's inputs had: equal "
      "to the inputs' own (x.ctypes.data, x.data_ptr()) when nothing was "
      "copied.");
}

} // namespace ein::python
