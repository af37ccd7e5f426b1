// The CUDA targets' DeviceMemory (Target::memory of `cuda` and
// `cuda-emulated`).
#pragma once

#include "ein/Target/DeviceMemory.h"

namespace ein {

/// The memory of this process's CUDA device (emulated: host memory behind
/// the emulated runtime), loaded on first use; or why it cannot be used.
ErrorOr<DeviceMemory *> cudaMemory(bool emulated);

} // namespace ein
