// The CUDA targets: the function's CUDA source with a main(), built by nvcc
// (`cuda`) or by the host C++ compiler under the runtime's emulation
// (`cuda-emulated`), run on raw tensor files in a private temporary
// directory, or (TargetOptions::inProcess) built into a shared library
// called on device pointers (SharedLibrary.cpp); and `einc build
// --target=cuda`'s source and header.
#include "CUDATargets.h"
#include "CUDAMemory.h"
#include "SharedLibrary.h"

#include "ein/Execution/JIT.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Runtime/OutputFiles.h"
#include "ein/Support/Process.h"
#include "ein/Target/CEntry.h"
#include "ein/Target/CUDA/Build.h"
#include "ein/Target/CUDA/DescribeCUDA.h"
#include "ein/Target/CUDA/EmitCUDA.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {

namespace {

/// The CUDA column (describeCUDA) with each op the source computes together
/// with others marked by its group, numbered per kind as the CPU's fused
/// column numbers its loop nests: "ein_rows rows#1" for the ops of a row
/// kernel, "... epilogue#1" after a contraction's cell and "GEMM
/// epilogue#1" for the ops its GEMM applies, "ein_map elementwise#1" for
/// the ops of one functor (an op recomputed in two: both).
TargetColumn describeCUDAFusion(const CheckedModule &module,
                                const CheckedFunction &fn, bool fusion) {
  TargetColumn column = describeCUDA(fn);
  column.functionField = "fusion";
  if (!fusion) {
    column.functionValue = "off";
    column.notes.push_back(
        "fusion: off (--no-fusion): every op is its own kernel or GEMM");
    return column;
  }
  CUDAOptions options;
  auto groups = cudaFusionGroups(module, fn, options);
  if (!groups) {
    std::string why = groups.error().message;
    column.functionValue = "unknown: " + why;
    column.notes.push_back(fmt::format("fusion: unknown ({})", why));
    return column;
  }
  column.functionValue = "cuda";
  std::map<std::string, int> counts;
  std::vector<std::vector<std::string>> labels(fn.ops.size());
  std::vector<std::string> base = column.cells;
  for (const FusedLoopNest &group : *groups) {
    std::string name = fmt::format("{}#{}", group.kind, ++counts[group.kind]);
    for (size_t i : group.ops) {
      if (i >= fn.ops.size())
        continue;
      labels[i].push_back(name);
      bool contraction = fn.ops[i].kind == OpKind::Einsum;
      if (group.kind == "rows")
        base[i] = "ein_rows";
      else if (group.kind == "elementwise")
        base[i] = "ein_map";
      else if (!contraction)
        base[i] = "GEMM";
    }
  }
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    if (labels[i].empty())
      continue;
    column.cells[i] = fmt::format("{} {}", base[i], fmt::join(labels[i], ","));
    column.values[i] = column.cells[i];
  }
  return column;
}

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

/// Why `--target=cuda` cannot run here.
Error noGPU() {
  return Error::usage(
      "--target=cuda: this machine has no NVIDIA GPU (no /dev/nvidiactl); "
      "--target=cuda-emulated runs the same CUDA source on the CPU");
}

/// A built program: the function's source with a main() running it on raw
/// tensor files (ein_cuda_main.h).
struct ProgramArtifact final : Artifact {
  std::unique_ptr<TempDir> dir;
  std::string binary;
  CheckedModule source;
  std::string function;
  bool emulated = false;
  ArtifactKind kind() const override { return ArtifactKind::Executable; }
};

struct ProgramCallable final : Callable {
  std::shared_ptr<ProgramArtifact> program;

  /// Runs the program once (with --time when `seconds`), filling `outputs`.
  ErrorOr<void> run(const std::vector<const runtime::HostTensor *> &inputs,
                    const std::vector<runtime::HostTensor *> &outputs,
                    const Bindings &dims, int64_t *indexStatus, double *seconds,
                    std::string *device) {
    if (indexStatus)
      *indexStatus = 0;
    TempDir &dir = *program->dir;
    std::vector<std::string> run = {program->binary};
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
    const CheckedFunction *fn = program->source.find(program->function);
    if (rc == 5 && fn) {
      Bindings env = fn->ctx.env;
      for (auto &[name, value] : dims)
        env[name] = value;
      if (indexStatus)
        *indexStatus = -1;
      return indexError(takeSites(program->source, *fn), 0, env);
    }
    if (rc != 0)
      return Error::program(
                 fmt::format("the CUDA program failed (exit {}):", rc))
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

  ErrorOr<void> call(const std::vector<const runtime::HostTensor *> &inputs,
                     const std::vector<runtime::HostTensor *> &outputs,
                     const Bindings &dims, int64_t *indexStatus) override {
    return run(inputs, outputs, dims, indexStatus, nullptr, nullptr);
  }

  ErrorOr<Timing> time(const std::vector<const runtime::HostTensor *> &inputs,
                       const std::vector<runtime::HostTensor *> &outputs,
                       const Bindings &dims) override {
    Timing timing;
    if (program->emulated) {
      timing.notMeasured = "cuda-emulated runs the kernels on the CPU";
      return timing;
    }
    if (auto ran = run(inputs, outputs, dims, nullptr, &timing.seconds,
                       &timing.device);
        !ran)
      return ran.error();
    timing.how = "median of CUDA-event-timed calls, each a CUDA Graph "
                 "launch, transfers excluded";
    timing.fromDeviceTable = true;
    return timing;
  }
};

class CUDATarget final : public Target {
public:
  explicit CUDATarget(bool emulated) : emulated(emulated) {}

  std::string name() const override {
    return emulated ? "cuda-emulated" : "cuda";
  }
  unsigned uses() const override {
    return emulated ? unsigned(TargetUse::Run)
                    : unsigned(TargetUse::Run) | unsigned(TargetUse::Build) |
                          unsigned(TargetUse::Report);
  }
  std::vector<DType> supportedDTypes() const override {
    // Every dtype (what cuBLASLt lacks is widened, docs/cuda.md).
    return ein::allDTypes();
  }
  std::string outputName() const override { return "SOURCE.cu"; }
  bool acceptsMain() const override { return !emulated; }
  /// A sharded local program's collectives: calls of the rank's device
  /// communicators (NCCL) from the in-process library (Ops/Collectives.cpp).
  bool compilesCollectives() const override { return true; }
  /// The CUDA column: the kernel or cuBLASLt call per op (DescribeCUDA.cpp).
  std::optional<TargetColumn>
  describe(const CheckedModule &module, const CheckedFunction &fn, Described,
           const TargetOptions &options) const override {
    return describeCUDAFusion(module, fn, options.cpu.fusion);
  }

  ErrorOr<std::shared_ptr<Artifact>>
  build(const CheckedModule &module, const std::string &function,
        const TargetOptions &options) const override {
    CUDABuild build;
    build.emulated = emulated;
    // Without a GPU there is nothing to run: say so before compiling.
    if (!build.emulated && !hasNvidiaGPU())
      return noGPU();
    // In this process, on device memory (the C++ API's device tensors).
    if (options.mesh && !options.inProcess)
      return Error::program(fmt::format(
          "a sharded function on --target={} is built into this process (its "
          "collectives run on the rank's communicators), not as a program",
          name()));
    if (options.inProcess)
      return buildSharedLibrary(module, function, options, emulated);
    CUDAOptions cuda;
    cuda.mainFunction = function;
    cuda.allowTf32 = options.allowTf32;
    cuda.fusion = options.cpu.fusion;
    auto text = emitCUDA(module, cuda);
    if (!text)
      return text.error();

    auto artifact = std::make_shared<ProgramArtifact>();
    artifact->dir = std::make_unique<TempDir>("einc-cuda");
    TempDir &dir = *artifact->dir;
    useSaveDirectory(dir);
    if (dir.path.empty())
      return Error::program(fmt::format(
          "cannot create a temporary directory: {}", std::strerror(errno)));
    std::string binary = dir.file("prog");
    if (auto built =
            compileCUDASource(build, *text, dir.file("prog.cu"), binary);
        !built)
      return built.error();
    artifact->binary = binary;
    artifact->source = module;
    artifact->function = function;
    artifact->emulated = emulated;
    return std::shared_ptr<Artifact>(std::move(artifact));
  }

  ErrorOr<std::shared_ptr<Callable>>
  load(std::shared_ptr<Artifact> artifact) const override {
    if (auto library = sharedLibraryCallable(artifact))
      return library;
    auto program = std::dynamic_pointer_cast<ProgramArtifact>(artifact);
    if (!program)
      return Error::program(fmt::format(
          "the {} target cannot load another target's artifact", name()));
    auto callable = std::make_shared<ProgramCallable>();
    callable->program = std::move(program);
    return std::shared_ptr<Callable>(std::move(callable));
  }

  /// Device memory: what the in-process libraries read and write.
  ErrorOr<DeviceMemory *> memory() const override {
    if (!emulated && !hasNvidiaGPU())
      return noGPU();
    return cudaMemory(emulated);
  }

  ErrorOr<void> buildFiles(const CheckedModule &module,
                           const std::string &sourcePath,
                           const std::string &outputPath,
                           const std::string &headerPath,
                           const TargetOptions &options) const override {
    CUDAOptions cuda;
    cuda.allowTf32 = options.allowTf32;
    cuda.fusion = options.cpu.fusion;
    cuda.mainFunction = options.mainFunction;
    auto source = emitCUDA(module, cuda);
    if (!source)
      return source.error().inFileNamed(sourcePath);
    std::string guard = headerGuard("EIN_GENERATED_CUDA_", headerPath, module);
    std::vector<std::string> texts = {*source, cudaHeader(module, guard)};
    auto plan = runtime::planOutputs({outputPath, headerPath});
    if (!plan)
      return Error::usage(plan.error().message);
    auto written =
        runtime::writeOutputs(*plan, [&](size_t i, int fd) -> ErrorOr<void> {
          return runtime::writeAll(
              fd, reinterpret_cast<const uint8_t *>(texts[i].data()),
              texts[i].size());
        });
    if (!written)
      return Error::inFile(ErrorKind::Program, sourcePath,
                           "cannot build: " + written.error().message);
    return {};
  }

private:
  bool emulated;
};

} // namespace

void addCUDATargets(std::vector<std::unique_ptr<Target>> &targets) {
  targets.push_back(std::make_unique<CUDATarget>(false));
  targets.push_back(std::make_unique<CUDATarget>(true));
}

} // namespace ein
