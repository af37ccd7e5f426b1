// CUDA device tensors of the C++ API: device memory, copies and kernels run
// through the CUDA back end's generated source (docs/cpp-api.md, 'Devices').
#pragma once

#include "ein/API/Tensor.h"
#include "ein/Sema/Program.h"

#include <string>
#include <vector>

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

/// Runs the one-function kernel of generated .ein `source` (function
/// `kernel`) on device tensors: parameters, then results. The source is
/// emitted as CUDA, built once (nvcc, or the host compiler when emulated)
/// and cached in memory and on disk.
Result<void> runSource(const std::string &source,
                       const std::vector<const Tensor *> &tensors);

/// Runs `function` of a checked module (`key` names its text, imports and
/// options) on device tensors, parameters then results.
Result<void> runModule(const std::string &key, const CheckedModule &module,
                       const std::string &function,
                       const std::vector<const Tensor *> &tensors);

/// The device's name ("NVIDIA H100 80GB HBM3 (sm_90)", "emulated CUDA on
/// the CPU"), or why there is none.
Result<std::string> deviceName();

/// Counts of CUDA libraries built and loaded from the disk cache.
void counts(size_t &built, size_t &loaded);

} // namespace ein::api::detail::cudaDevice
