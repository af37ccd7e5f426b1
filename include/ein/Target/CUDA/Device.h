// This process's CUDA device, as the CUDA targets' shared libraries
// (ArtifactKind::SharedLibrary) and the C++ API's device tensors use it: a
// support library of memory, copy and naming functions, built once per mode
// from the CUDA runtime and loaded with dlopen.
#pragma once

#include "ein/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace ein {

struct CUDADevice {
  bool emulated = false;
  /// "NVIDIA H100 80GB HBM3 (sm_90)", or "emulated CUDA on the CPU".
  std::string name;
  /// nvcc's -arch for this device's kernels ("sm_90"); empty when emulated.
  std::string arch;
  /// The support library's functions; each returns 0 or a cudaError_t.
  int (*malloc)(void **, size_t) = nullptr;
  int (*free)(void *) = nullptr;
  /// `kind` is cudaMemcpyKind: 1 host to device, 2 back, 3 device to device.
  int (*copy)(void *, const void *, size_t, int) = nullptr;
  int (*zero)(void *, size_t) = nullptr;
  const char *(*errorString)(int) = nullptr;
  /// The training loop's element-wise steps (CUDAMemory.cpp); `type` is 0
  /// f32, 1 f64, 2 bf16, 3 f16. Each waits for its kernel.
  int (*trainScale)(void *, int64_t, int, double) = nullptr;
  int (*trainAccumulate)(void *, const void *, int64_t, int, int) = nullptr;
  int (*trainNarrow)(void *, const void *, int64_t, int) = nullptr;
  /// The sum of squares into a device double.
  int (*trainSquares)(const void *, int64_t, int, double *) = nullptr;
  /// cudaStreamQuery of the default stream, the one every kernel and NCCL
  /// call runs on: 0 done, 600 (cudaErrorNotReady) still running.
  int (*streamQuery)() = nullptr;
  /// Device work runs one call at a time: emulated blocks keep __shared__
  /// arrays in static storage, and the runtime's GEMM descriptor cache is
  /// not locked. Kernel calls (the shared libraries' callStrided) and
  /// copies take it.
  std::mutex running;
};

/// The device (emulated: the CUDA source built by the host compiler and run
/// on the CPU over host memory), loaded on first use and kept for the
/// process; or why it cannot be used, as a usage error: its support library
/// did not build, or no device is usable. Callers that can say in their own
/// words that the machine has no GPU (hasNvidiaGPU) say so first.
ErrorOr<CUDADevice *> loadCUDADevice(bool emulated);

} // namespace ein
