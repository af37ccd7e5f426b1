// The command lines that build generated CUDA source: nvcc for a GPU, the
// host C++ compiler under the runtime's emulation.
#include "ein/Target/CUDA/Build.h"

#include <cstdlib>
#include <unistd.h>

namespace ein {

bool hasNvidiaGPU() { return ::access("/dev/nvidiactl", F_OK) == 0; }

std::string cudaCompiler(const CUDABuild &build) {
  if (build.emulated) {
    const char *cxx = std::getenv("CXX");
    return cxx && *cxx ? cxx : "c++";
  }
  if (const char *nvcc = std::getenv("NVCC"); nvcc && *nvcc)
    return nvcc;
  return ::access("/usr/local/cuda/bin/nvcc", X_OK) == 0
             ? "/usr/local/cuda/bin/nvcc"
             : "nvcc";
}

std::vector<std::string> cudaBuildCommand(const CUDABuild &build,
                                          const std::string &source,
                                          const std::string &output) {
  std::vector<std::string> argv{cudaCompiler(build), "-std=c++17"};
  if (build.emulated) {
    // -O0: an emulated program is compiled for one run on small tensors,
    // where -O1's optimization costs more than it saves (docs/cuda.md).
    argv.insert(argv.end(), {"-O0", "-w"});
    if (build.sharedLibrary)
      argv.insert(argv.end(), {"-fPIC", "-shared"});
    argv.insert(argv.end(), {"-x", "c++", source, "-o", output});
    return argv;
  }
  argv.insert(argv.end(), {"-O3", "--fmad=false", "-arch=" + build.arch});
  if (build.sharedLibrary) {
    argv.insert(argv.end(),
                {"-Xcompiler", "-fPIC", "-shared", "-cudart", "shared"});
    // A library loaded by dlopen finds the toolkit's libcudart and
    // libcublasLt beside the nvcc that built it (lib64/ or lib/).
    const std::string &nvcc = argv[0];
    if (auto bin = nvcc.rfind("/bin/"); bin != std::string::npos) {
      std::string root = nvcc.substr(0, bin);
      argv.insert(argv.end(),
                  {"-Xlinker", "-rpath=" + root + "/lib64:" + root + "/lib"});
    }
  }
  argv.insert(argv.end(), {"-x", "cu", source, "-o", output, "-lcublasLt"});
  return argv;
}

} // namespace ein
