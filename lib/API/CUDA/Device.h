// CUDA device tensors of the C++ API: which CUDA target and device it uses
// (EIN_CUDA), device memory and copies (docs/cpp-api.md, 'Devices'). Kernels
// run through the registered CUDA target's shared libraries (Kernels.cpp).
#pragma once

#include "ein/API/Tensor.h"

#include <string>

namespace ein {
class Target;
}

namespace ein::api::detail::cudaDevice {

/// Device memory of `bytes` (at least 1), or why there is none: no GPU, no
/// driver, out of memory. The first call selects the device (below).
Result<void *> allocate(size_t bytes);
/// Frees memory from allocate().
void release(void *device);

enum class Direction { HostToDevice = 1, DeviceToHost = 2, DeviceToDevice = 3 };
/// Copies `bytes` between host and device memory, in order with every
/// kernel queued before it.
Result<void> copy(void *dst, const void *src, size_t bytes, Direction how);
/// Sets `bytes` of device memory to zero.
Result<void> zero(void *device, size_t bytes);

/// The registered target CUDA kernels and module functions compile for:
/// `cuda`, or `cuda-emulated` under EIN_CUDA=emulated; or why the device
/// cannot be used.
Result<const Target *> target();

/// Whether the device is usable and is the emulation (EIN_CUDA=emulated),
/// whose "device" memory is host memory.
bool emulated();

/// The device's name ("NVIDIA H100 80GB HBM3 (sm_90)", "emulated CUDA on
/// the CPU"), or why there is none.
Result<std::string> deviceName();

} // namespace ein::api::detail::cudaDevice
