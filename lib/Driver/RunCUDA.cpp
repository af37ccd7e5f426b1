// `einc run --target=cuda|cuda-emulated`: the function's CUDA source with a
// main(), built by nvcc (or the host C++ compiler, emulated), run on raw
// tensor files in a private temporary directory.
#include "ein/Driver/Run.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ein {

namespace {

/// A private temporary directory, removed with everything in it.
class TempDir {
public:
  TempDir() {
    // EINC_CUDA_SAVE=DIR: work in DIR and keep it (scripts/gpu-check.sh
    // carries the sources and inputs to a GPU machine from there).
    if (const char *save = std::getenv("EINC_CUDA_SAVE"); save && *save) {
      ::mkdir(save, 0700);
      struct stat info;
      if (::stat(save, &info) == 0 && S_ISDIR(info.st_mode))
        path = save;
      keep = true;
      return;
    }
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        fmt::format("{}/einc-cuda-XXXXXX", base && *base ? base : "/tmp");
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back(0);
    if (::mkdtemp(buffer.data()))
      path = buffer.data();
  }
  ~TempDir() {
    if (path.empty() || keep)
      return;
    for (auto &f : files)
      ::unlink((path + "/" + f).c_str());
    ::rmdir(path.c_str());
  }
  std::string file(const std::string &name) {
    files.push_back(name);
    return path + "/" + name;
  }
  std::string path;
  bool keep = false;

private:
  std::vector<std::string> files;
};

bool writeFile(const std::string &path, const void *data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char *>(data),
            static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs argv with stdout and stderr into `log`; the exit status, or -1 when
/// it could not start or died by a signal.
int runProcess(const std::vector<std::string> &argv, const std::string &log) {
  pid_t pid = ::fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    std::vector<char *> args;
    for (auto &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string tail(const std::string &text, size_t lines) {
  size_t pos = text.size(), n = 0;
  while (pos > 0 && n <= lines)
    if (text[--pos] == '\n')
      ++n;
  return text.substr(pos == 0 ? 0 : pos + 1);
}

bool executable(const std::string &path) {
  return ::access(path.c_str(), X_OK) == 0;
}

} // namespace

ErrorOr<void> runCUDA(const CheckedModule &source, const std::string &function,
                      const RunOptions &options,
                      const std::vector<const runtime::HostTensor *> &inputs,
                      const std::vector<runtime::HostTensor *> &outputs,
                      double *seconds, std::string *device,
                      const Bindings &dims) {
  bool emulated = options.target == "cuda-emulated";
  std::string compiler;
  if (emulated) {
    const char *cxx = std::getenv("CXX");
    compiler = cxx && *cxx ? cxx : "c++";
  } else {
    // Without a GPU there is nothing to run: say so before compiling.
    if (::access("/dev/nvidiactl", F_OK) != 0)
      return Error::usage(
          "--target=cuda: this machine has no NVIDIA GPU (no /dev/nvidiactl); "
          "--target=cuda-emulated runs the same CUDA source on the CPU");
    const char *nvcc = std::getenv("NVCC");
    compiler = nvcc && *nvcc ? nvcc
               : executable("/usr/local/cuda/bin/nvcc")
                   ? "/usr/local/cuda/bin/nvcc"
                   : "nvcc";
  }
  CUDAOptions cuda;
  cuda.mainFunction = function;
  cuda.allowTf32 = options.allowTf32;
  auto text = emitCUDA(source, cuda);
  if (!text)
    return text.error();

  TempDir dir;
  if (dir.path.empty())
    return Error::program(fmt::format("cannot create a temporary directory: {}",
                                      std::strerror(errno)));
  std::string program = dir.file("prog.cu"), binary = dir.file("prog"),
              log = dir.file("log.txt");
  if (!writeFile(program, text->data(), text->size()))
    return Error::program("cannot write the CUDA source to " + program);
  std::vector<std::string> build =
      emulated
          ? std::vector<std::string>{compiler, "-std=c++17", "-O1", "-w",  "-x",
                                     "c++",    program,      "-o",  binary}
          : std::vector<std::string>{compiler,       "-std=c++17",   "-O3",
                                     "--fmad=false", "-arch=native", "-x",
                                     "cu",           program,        "-o",
                                     binary,         "-lcublasLt"};
  if (int rc = runProcess(build, log); rc != 0)
    return Error::program(fmt::format("{} could not compile the generated CUDA "
                                      "source (exit {}):",
                                      compiler, rc))
        .withContext(tail(readFile(log), 20));

  std::vector<std::string> run = {binary};
  if (seconds)
    run.push_back("--time");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const runtime::HostTensor &t = *inputs[i];
    std::string path = dir.file(fmt::format("in{}.bin", i));
    if (!writeFile(path, t.data.data(), t.data.size()))
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
    if (!writeFile(dir.path + "/args.txt", args.data(), args.size()))
      return Error::program("cannot write " + dir.path + "/args.txt");
  }
  std::string runLog = dir.file("run.txt");
  int rc = runProcess(run, runLog);
  std::string said = readFile(runLog);
  if (rc == 4)
    return Error::usage("--target=cuda: no CUDA device is usable: " +
                        tail(said, 3));
  if (const CheckedFunction *fn = source.find(function); rc == 5 && fn) {
    Bindings env = fn->ctx.env;
    for (auto &[name, value] : dims)
      env[name] = value;
    return indexError(takeSites(source, *fn), 0, env);
  }
  if (rc != 0)
    return Error::program(fmt::format("the CUDA program failed (exit {}):", rc))
        .withContext(tail(said, 20));
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string bytes = readFile(outPaths[k]);
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
