// The CUDA back end's targets: `cuda` (nvcc, this machine's GPU; also
// einc build's .cu and header, and the report's CUDA column) and
// `cuda-emulated` (the same source built by the host C++ compiler).
#pragma once

#include "ein/Target/Target.h"

#include <memory>
#include <vector>

namespace ein {

/// Appends the CUDA targets (TargetRegistry.cpp's one line for them).
void addCUDATargets(std::vector<std::unique_ptr<Target>> &targets);

} // namespace ein
