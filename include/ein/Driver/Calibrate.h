// `einc calibrate`: this CPU's peak figures, stored for `einc run --time`.
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Support/Error.h"

#include <optional>
#include <string>

namespace ein {

/// Peak figures of this machine.
struct Calibration {
  double peakFlops = 0;     // f32 FLOP/s: cores x clock x SIMD FMA width
  double bandwidth = 0;     // bytes/s read+write, measured by a JIT'd copy
  double matmulFlops = 0;   // f32 FLOP/s ein's own matmul reached
  std::string description;  // how peakFlops was derived
};

/// The file the figures live in: $XDG_CACHE_HOME/ein/calibration.json, or
/// ~/.cache/ein/calibration.json.
std::string calibrationPath();
/// Reads stored figures; nullopt when there are none or they are malformed.
std::optional<Calibration> loadCalibration();

/// Measures and stores the figures, with the kernels compiled for `cpu`
/// (the host by default; its vector width sets the theoretical peak);
/// returns the text that reports them.
ErrorOr<std::string> runCalibrate(const CPUOptions &cpu = {});

} // namespace ein
