// `einc run --target=cuda|cuda-emulated`: the function's CUDA source with a
// main(), built by nvcc (or the host C++ compiler, emulated), run on raw
// tensor files in a private temporary directory.
#include "ein/Driver/Run.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Support/Process.h"
#include "ein/Target/CUDA/Build.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {

namespace {

/// The run's directory: private and removed, or EINC_CUDA_SAVE=DIR, kept
/// (scripts/gpu-check.sh carries the sources and inputs to a GPU machine
/// from there).
void useSaveDirectory(TempDir &dir) {
  const char *save = std::getenv("EINC_CUDA_SAVE");
  if (!save || !*save)
    return;
  ::mkdir(save, 0700);
  struct stat info;
  dir.keepAt(::stat(save, &info) == 0 && S_ISDIR(info.st_mode) ? save : "");
}

} // namespace

ErrorOr<void> runCUDA(const CheckedModule &source, const std::string &function,
                      const RunOptions &options,
                      const std::vector<const runtime::HostTensor *> &inputs,
                      const std::vector<runtime::HostTensor *> &outputs,
                      double *seconds, std::string *device,
                      const Bindings &dims, bool *idsOutOfRange) {
  if (idsOutOfRange)
    *idsOutOfRange = false;
  CUDABuild build;
  build.emulated = options.target == "cuda-emulated";
  // Without a GPU there is nothing to run: say so before compiling.
  if (!build.emulated && !hasNvidiaGPU())
    return Error::usage(
        "--target=cuda: this machine has no NVIDIA GPU (no /dev/nvidiactl); "
        "--target=cuda-emulated runs the same CUDA source on the CPU");
  CUDAOptions cuda;
  cuda.mainFunction = function;
  cuda.allowTf32 = options.allowTf32;
  auto text = emitCUDA(source, cuda);
  if (!text)
    return text.error();

  TempDir dir("einc-cuda");
  useSaveDirectory(dir);
  if (dir.path.empty())
    return Error::program(fmt::format("cannot create a temporary directory: {}",
                                      std::strerror(errno)));
  std::string program = dir.file("prog.cu"), binary = dir.file("prog"),
              log = dir.file("log.txt");
  if (!writeFileBytes(program, text->data(), text->size()))
    return Error::program("cannot write the CUDA source to " + program);
  std::string compiler = cudaCompiler(build);
  if (int rc = runProcess(cudaBuildCommand(build, program, binary), log);
      rc != 0)
    return Error::program(fmt::format("{} could not compile the generated CUDA "
                                      "source (exit {}):",
                                      compiler, rc))
        .withContext(lastLines(readFileText(log), 20));

  std::vector<std::string> run = {binary};
  if (seconds)
    run.push_back("--time");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const runtime::HostTensor &t = *inputs[i];
    std::string path = dir.file(fmt::format("in{}.bin", i));
    if (!writeFileBytes(path, t.data.data(), t.data.size()))
      return Error::program("cannot write " + path);
    run.push_back(path);
    for (int64_t s : t.shape)
      run.push_back(std::to_string(s));
    for (int64_t s : t.strides())
      run.push_back(std::to_string(s));
  }
  std::vector<std::string> outPaths;
  for (size_t k = 0; k < outputs.size(); ++k) {
    outPaths.push_back(dir.file(fmt::format("out{}.bin", k)));
    run.push_back(outPaths.back());
    for (int64_t s : outputs[k]->shape)
      run.push_back(std::to_string(s));
  }
  if (dir.keep) { // the run's arguments, paths relative to the directory
    std::string args;
    for (size_t i = 1; i < run.size(); ++i)
      args += (run[i].rfind(dir.path + "/", 0) == 0
                   ? run[i].substr(dir.path.size() + 1)
                   : run[i]) +
              "\n";
    if (!writeFileBytes(dir.path + "/args.txt", args.data(), args.size()))
      return Error::program("cannot write " + dir.path + "/args.txt");
  }
  std::string runLog = dir.file("run.txt");
  int rc = runProcess(run, runLog);
  std::string said = readFileText(runLog);
  if (rc == 4)
    return Error::usage("--target=cuda: no CUDA device is usable: " +
                        lastLines(said, 3));
  if (const CheckedFunction *fn = source.find(function); rc == 5 && fn) {
    Bindings env = fn->ctx.env;
    for (auto &[name, value] : dims)
      env[name] = value;
    if (idsOutOfRange)
      *idsOutOfRange = true;
    return indexError(takeSites(source, *fn), 0, env);
  }
  if (rc != 0)
    return Error::program(fmt::format("the CUDA program failed (exit {}):", rc))
        .withContext(lastLines(said, 20));
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string bytes = readFileText(outPaths[k]);
    if (bytes.size() != outputs[k]->data.size())
      return Error::program(fmt::format(
          "the CUDA program wrote {} bytes for result {}, expected {}",
          bytes.size(), k, outputs[k]->data.size()));
    std::memcpy(outputs[k]->data.data(), bytes.data(), bytes.size());
  }
  if (seconds) {
    *seconds = 0;
    auto at = said.find("ein-time-ms: ");
    if (at != std::string::npos)
      *seconds = std::strtod(said.c_str() + at + 13, nullptr) * 1e-3;
    auto named = said.find("ein-device: ");
    if (device && named != std::string::npos)
      *device = said.substr(named + 12, said.find('\n', named) - named - 12);
  }
  return {};
}

} // namespace ein
