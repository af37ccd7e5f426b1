// How generated CUDA source is built: nvcc for a GPU, or the host C++
// compiler under the runtime's emulation; one place for both command lines.
#pragma once

#include <string>
#include <vector>

namespace ein {

struct CUDABuild {
  /// Build with the host C++ compiler ($CXX, else c++) under the emulation
  /// header: the code runs on the CPU over host memory.
  bool emulated = false;
  /// A shared library (-fPIC -shared) instead of a program.
  bool sharedLibrary = false;
  /// nvcc's -arch (ignored when emulated); "native" is this machine's GPU.
  std::string arch = "native";
};

/// Whether this machine has an NVIDIA GPU driver (/dev/nvidiactl).
bool hasNvidiaGPU();

/// The compiler a build uses: $CXX or c++ when emulated; else $NVCC, else
/// /usr/local/cuda/bin/nvcc when present, else nvcc from PATH.
std::string cudaCompiler(const CUDABuild &build);

/// The command line that compiles the CUDA source file `source` into
/// `output` (a program, or a shared library). nvcc builds use --fmad=false
/// (bit-identical to the CPU back end; docs/cuda.md) and link cuBLASLt and
/// the shared CUDA runtime, so libraries loaded into one process share it.
std::vector<std::string> cudaBuildCommand(const CUDABuild &build,
                                          const std::string &source,
                                          const std::string &output);

} // namespace ein
