// How generated CUDA source is built: nvcc for a GPU, the host C++ compiler
// under the runtime's emulation (its runtime precompiled once).
#include "ein/Target/CUDA/Build.h"
#include "ein/Engine/ObjectCache.h"
#include "ein/Support/Files.h"
#include "ein/Support/Process.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {

bool hasNvidiaGPU() { return ::access("/dev/nvidiactl", F_OK) == 0; }

std::string cudaCompiler(const CUDABuild &build) {
  if (build.emulated) {
    // $CXX, else clang++-19 where installed (scripts/setup.sh installs it):
    // its -O0 build of a program against the precompiled runtime takes
    // about 40% less CPU time than g++'s, and the execution corpus on the
    // emulation is CI's longest test (docs/cuda.md).
    if (const char *cxx = std::getenv("CXX"); cxx && *cxx)
      return cxx;
    return ::access("/usr/bin/clang++-19", X_OK) == 0 ? "/usr/bin/clang++-19"
                                                      : "c++";
  }
  if (const char *nvcc = std::getenv("NVCC"); nvcc && *nvcc)
    return nvcc;
  return ::access("/usr/local/cuda/bin/nvcc", X_OK) == 0
             ? "/usr/local/cuda/bin/nvcc"
             : "nvcc";
}

namespace {

/// The host compiler's options of an emulated build, the precompiled
/// runtime's included: -O0, for an emulated program is compiled for one run
/// on small tensors, where -O1's optimization costs more than it saves
/// (docs/cuda.md).
std::vector<std::string> emulatedOptions(const CUDABuild &build) {
  std::vector<std::string> argv{cudaCompiler(build), "-std=c++17", "-O0", "-w"};
  if (build.sharedLibrary)
    argv.push_back("-fPIC");
  return argv;
}

} // namespace

std::vector<std::string> cudaBuildCommand(const CUDABuild &build,
                                          const std::string &source,
                                          const std::string &output,
                                          const std::string &prefixHeader) {
  if (build.emulated) {
    std::vector<std::string> argv = emulatedOptions(build);
    if (build.sharedLibrary)
      argv.push_back("-shared");
    if (!prefixHeader.empty())
      argv.insert(argv.end(), {"-include", prefixHeader});
    argv.insert(argv.end(), {"-x", "c++", source, "-o", output});
    return argv;
  }
  std::vector<std::string> argv{cudaCompiler(build), "-std=c++17"};
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

std::vector<std::string> cudaPrecompileCommand(const CUDABuild &build,
                                               const std::string &header,
                                               const std::string &output) {
  std::vector<std::string> argv = emulatedOptions(build);
  argv.insert(argv.end(), {"-x", "c++-header", header, "-o", output});
  return argv;
}

std::string cudaBuildStamp(const CUDABuild &build) {
  std::string stamp = "cuda-library\n";
  for (const std::string &arg : cudaBuildCommand(build, "SRC", "OUT"))
    stamp += arg + " ";
  std::string compiler = cudaCompiler(build);
  struct stat info;
  if (::stat(compiler.c_str(), &info) == 0)
    stamp += fmt::format("\n{} {}", info.st_size, info.st_mtim.tv_sec);
  return stamp;
}

namespace {

/// The precompiled runtime `prefix` of an emulated build: HEADER (its text)
/// and HEADER.gch side by side in the disk cache, built on first use; the
/// header's path, or nothing (the source is then compiled whole) when the
/// cache is off or the header does not build. The header is written
/// before its precompiled form is stored and its key last, so a process
/// that finds the key finds both.
std::optional<std::string> precompiledRuntime(const CUDABuild &build,
                                              const std::string &prefix) {
  std::string key =
      "cuda-runtime-pch\n" + prefix + "\n" + cudaBuildStamp(build);
  auto gch = ObjectCache::entryPath(key, ".h.gch");
  if (!gch)
    return std::nullopt;
  std::string header = gch->substr(0, gch->size() - 4);
  // The key (the prefix whole, compared whole) is written last, after the
  // header: found, both are there.
  if (ObjectCache::findFile(key, ".h.gch") &&
      ::access(header.c_str(), R_OK) == 0)
    return header;
  if (!writeFileAtomically(header, prefix))
    return std::nullopt;
  TempDir dir("ein-cuda-pch");
  if (dir.path.empty())
    return std::nullopt;
  std::string built = dir.file("runtime.h.gch");
  if (runProcess(cudaPrecompileCommand(build, header, built),
                 dir.file("log.txt")) != 0)
    return std::nullopt;
  if (ObjectCache::storeFile(key, ".h.gch", built) != *gch)
    return std::nullopt;
  return header;
}

} // namespace

ErrorOr<void> compileCUDASource(const CUDABuild &build, const std::string &text,
                                const std::string &source,
                                const std::string &output) {
  if (!writeFileBytes(source, text.data(), text.size()))
    return Error::program("cannot write the generated CUDA source to " +
                          source);
  std::string compiled = source, header;
  size_t marker = text.find(kCUDAModuleMarker);
  if (build.emulated && marker != std::string::npos)
    if (auto pch = precompiledRuntime(build, text.substr(0, marker))) {
      std::string rest = text.substr(marker);
      compiled = source + ".module.cu";
      if (writeFileBytes(compiled, rest.data(), rest.size()))
        header = *pch;
      else
        compiled = source;
    }
  std::string log = source + ".log";
  if (int rc =
          runProcess(cudaBuildCommand(build, compiled, output, header), log);
      rc != 0)
    return Error::program(fmt::format("{} could not compile the generated "
                                      "CUDA source (exit {}):",
                                      cudaCompiler(build), rc))
        .withContext(lastLines(readFileText(log), 20));
  return {};
}

} // namespace ein
