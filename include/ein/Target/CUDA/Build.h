// How generated CUDA source is built: nvcc for a GPU, or the host C++
// compiler under the runtime's emulation; one place for both command lines.
#pragma once

#include "ein/Support/Error.h"

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
/// Under the emulation, `prefixHeader` (when given) is included first: the
/// precompiled runtime (cudaPrecompileCommand) the source's rest follows.
std::vector<std::string> cudaBuildCommand(const CUDABuild &build,
                                          const std::string &source,
                                          const std::string &output,
                                          const std::string &prefixHeader = "");

/// The command line that precompiles `header` (the runtime a generated
/// source starts with) into `output` for the emulated build `build`: the
/// flags of its compile, so that the compiler accepts the header for it.
std::vector<std::string> cudaPrecompileCommand(const CUDABuild &build,
                                               const std::string &header,
                                               const std::string &output);

/// What a build's outputs depend on besides its source: the command line
/// (without its paths) and the compiler's identity (size, time).
std::string cudaBuildStamp(const CUDABuild &build);

/// Compiles the generated CUDA `text` into `output` (a program or a
/// shared library), writing it to `source` first; errors carry the
/// compiler's last lines. Under the emulation the runtime that starts
/// every generated source (up to kCUDAModuleMarker) is parsed once: its
/// precompiled header is kept in the disk cache (ein/Engine/ObjectCache.h),
/// and the rest (`source` + ".module.cu") is compiled against it.
ErrorOr<void> compileCUDASource(const CUDABuild &build, const std::string &text,
                                const std::string &source,
                                const std::string &output);

} // namespace ein
