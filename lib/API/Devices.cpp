// The C++ API's devices: where a tensor's storage lives, and moving tensors
// between the CPU and CUDA.
#include "CUDA/Device.h"
#include "Internal.h"

#include "ein/Sema/ProgramBuilder.h"

#include <fmt/format.h>

#include <cstring>

namespace ein::api {
namespace detail {

Storage::~Storage() {
  if (!owned)
    return;
  if (device == cuda)
    cudaDevice::release(base);
  else
    std::free(base);
}

namespace {

/// A C-order tensor over new device memory.
Result<Tensor> allocateOnDevice(DType dtype, const std::vector<int64_t> &shape,
                                bool zero) {
  auto bytes = checkedBytes(dtype, shape);
  if (!bytes)
    return bytes.error();
  auto memory = cudaDevice::allocate(*bytes);
  if (!memory)
    return memory.error();
  auto storage = std::make_shared<Storage>();
  storage->base = *memory;
  storage->bytes = *bytes;
  storage->owned = true;
  storage->device = cuda;
  if (zero)
    if (auto done = cudaDevice::zero(*memory, *bytes); !done)
      return done.error();
  return Tensor(std::move(storage), dtype, cuda, shape,
                runtime::cOrderStrides(shape), 0);
}

/// What names the copy kernel of `dtype` and `rank` (its cache key).
std::string copyKernelKey(DType dtype, size_t rank) {
  return fmt::format("ein C++ API copy v1: {} rank {}", name(dtype), rank);
}

/// The kernel that copies a rank-`rank` tensor of `dtype` through any
/// strides: an identity rearrange (the CUDA back end's ein_copy), built
/// with the ProgramBuilder.
Result<CheckedModule> copyKernel(DType dtype, size_t rank) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d)
    names.push_back(fmt::format("a{}", d));
  std::string axes = axesString(names);
  CheckedFunction fn;
  fn.name = kernelName;
  ProgramBuilder b(fn);
  TensorType type;
  type.dtype = internal(dtype);
  for (const std::string &n : names)
    type.shape.push_back(Dim::ofSize(SizeExpr::symbol(n)));
  auto copied =
      b.rearrange(b.param(std::move(type), "x0"), axes + " -> " + axes);
  if (!copied)
    return programError("internal error: the copy kernel did not build: " +
                        copied.error().str());
  b.ret({*copied});
  CheckedModule module;
  module.path = "<ein C++ API>";
  module.functions.push_back(std::move(fn));
  return module;
}

} // namespace

Result<Tensor> allocate(DType dtype, const std::vector<int64_t> &shape,
                        bool zero, Device device) {
  if (device == cuda)
    return allocateOnDevice(dtype, shape, zero);
  return allocateHost(dtype, shape, zero);
}

Result<Device> deviceOf(const std::string &what,
                        const std::vector<Tensor> &tensors) {
  std::optional<size_t> first;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &t = tensors[i];
    if (!t.defined() || (t.device() == cpu && t.rank() == 0))
      continue;
    if (!first) {
      first = i;
      continue;
    }
    Device device = tensors[*first].device();
    if (device != t.device())
      return usageError(fmt::format(
          "{}: the tensors are on different devices (input {} is on {}, "
          "input {} on {}); move them to one with .to()",
          what, *first, name(device), i, name(t.device())));
  }
  return first ? tensors[*first].device() : cpu;
}

Result<Tensor> onDevice(const Tensor &t, Device device) {
  if (t.device() == device)
    return t;
  return nothrow::to(t, device);
}

Result<void> copyInto(const Tensor &src, const Tensor &dst) {
  if (src.numel() == 0)
    return {};
  if (src.device() == cpu && dst.device() == cpu) {
    stridedCopy(src, dst);
    return {};
  }
  if (src.is_contiguous() && dst.is_contiguous())
    return cudaDevice::copy(dst.data(), src.data(),
                            size_t(src.numel()) * itemsize(src.dtype()),
                            cudaDevice::Direction::DeviceToDevice);
  auto kernel = kernelFor(copyKernelKey(src.dtype(), src.rank()), cuda,
                          [&] { return copyKernel(src.dtype(), src.rank()); });
  if (!kernel)
    return kernel.error();
  return runKernel(**kernel, {&src, &dst});
}

} // namespace detail

using namespace detail;

bool cuda_available() { return cudaDevice::deviceName().has_value(); }

bool cuda_emulated() { return cudaDevice::emulated(); }

namespace nothrow {

Result<std::string> device_name(Device device) {
  if (device == cpu)
    return std::string(name(cpu));
  return cudaDevice::deviceName();
}

Result<Tensor> to(const Tensor &t, Device device) {
  if (!t.defined())
    return usageError("to() of an undefined tensor");
  if (t.device() == device)
    return t;
  // Made dense where it is, then one copy.
  Tensor dense = t;
  if (!t.is_contiguous()) {
    auto copy = clone(t);
    if (!copy)
      return copy;
    dense = *copy;
  }
  auto out = allocate(t.dtype(), t.shape(), false, device);
  if (!out)
    return out;
  if (auto copied = cudaDevice::copy(
          out->data(), dense.data(), size_t(t.numel()) * itemsize(t.dtype()),
          device == cuda ? cudaDevice::Direction::HostToDevice
                         : cudaDevice::Direction::DeviceToHost);
      !copied)
    return copied.error();
  return out;
}

Result<Tensor> clone(const Tensor &t) {
  if (!t.defined())
    return usageError("clone of an undefined tensor");
  auto copy = allocate(t.dtype(), t.shape(), false, t.device());
  if (!copy)
    return copy;
  if (auto copied = copyInto(t, *copy); !copied)
    return copied.error();
  return copy;
}

} // namespace nothrow
} // namespace ein::api
