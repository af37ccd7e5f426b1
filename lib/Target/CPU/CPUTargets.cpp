// The CPU targets: the MLIR pipeline's code, JIT-compiled into this process
// (`cpu`) or written as an object file and a C header (`cpu-object`).
#include "CPUTargets.h"

#include "ein/Engine/ObjectCache.h"
#include "ein/Execution/AOT.h"
#include "ein/Execution/JIT.h"
#include "ein/Target/CPU/DescribeCPU.h"

namespace ein {

namespace {

ErrorOr<void> hostCanRun(const TargetOptions &options) {
  auto cpu = resolveCPU(options.cpu.target);
  if (!cpu)
    return Error::usage(cpu.error().message);
  if (auto runnable = checkHostCanRun(*cpu); !runnable)
    return Error::usage(runnable.error().message);
  return {};
}

struct JITArtifact final : Artifact {
  std::shared_ptr<JITFunction> function;
  ArtifactKind kind() const override { return ArtifactKind::JITModule; }
};

struct JITCallable final : Callable {
  std::shared_ptr<JITFunction> function;
  ErrorOr<void> call(const std::vector<const runtime::HostTensor *> &inputs,
                     const std::vector<runtime::HostTensor *> &outputs,
                     const Bindings &dims, int64_t *indexStatus) override {
    return function->call(inputs, outputs, dims, indexStatus);
  }
  ErrorOr<void> callStrided(const StridedArgument *args, size_t count,
                            const Bindings *dims,
                            int64_t *indexStatus) override {
    return function->callStrided(args, count, dims, indexStatus);
  }
};

class CPUJITTarget final : public Target {
public:
  std::string name() const override { return "cpu"; }
  unsigned uses() const override {
    return unsigned(TargetUse::Run) | unsigned(TargetUse::Report);
  }
  std::vector<DType> supportedDTypes() const override {
    // Every dtype (fp8 and bf16 through f32).
    return ein::allDTypes();
  }
  bool compilesCollectives() const override { return true; }
  ErrorOr<void> checkRunnable(const TargetOptions &options) const override {
    return hostCanRun(options);
  }
  /// The fused column: how the CPU pipeline groups the function's ops. The
  /// training step of `--train` is not the function the pipeline compiles,
  /// so it has no column.
  std::optional<TargetColumn>
  describe(const CheckedModule &module, const CheckedFunction &fn,
           Described what, const TargetOptions &options) const override {
    if (what == Described::TrainingStep)
      return std::nullopt;
    return fusionColumn(fn, analyzeFusion(module, fn, options.cpu));
  }

  ErrorOr<std::shared_ptr<Artifact>>
  build(const CheckedModule &module, const std::string &function,
        const TargetOptions &options) const override {
    JITOptions jit;
    jit.perfListener = options.perfListener;
    jit.gdbListener = options.gdbListener;
    auto artifact = std::make_shared<JITArtifact>();
    bool fromDisk = false;
    // A sharded function's code (its collectives inside) is not kept on
    // disk: the object cache's key does not hold the mesh.
    auto compiled =
        options.mesh ? JITFunction::compile(module, function, options.cpu, jit,
                                            options.mesh.get())
        : options.diskCacheKey.empty()
            ? JITFunction::compile(module, function, options.cpu, jit)
            : ObjectCache::compileOrLoad(options.diskCacheKey, module, function,
                                         options.cpu, jit, &fromDisk);
    if (!compiled)
      return compiled.error().inFileNamed(options.sourcePath);
    artifact->function = std::move(*compiled);
    artifact->fromDiskCache = fromDisk;
    return std::shared_ptr<Artifact>(std::move(artifact));
  }

  ErrorOr<std::shared_ptr<Callable>>
  load(std::shared_ptr<Artifact> artifact) const override {
    auto *jit = dynamic_cast<JITArtifact *>(artifact.get());
    if (!jit)
      return Error::program("the cpu target cannot load another target's "
                            "artifact");
    auto callable = std::make_shared<JITCallable>();
    callable->function = jit->function;
    return std::shared_ptr<Callable>(std::move(callable));
  }
};

class CPUObjectTarget final : public Target {
public:
  std::string name() const override { return "cpu-object"; }
  std::string flag() const override { return "cpu"; }
  unsigned uses() const override { return unsigned(TargetUse::Build); }
  std::vector<DType> supportedDTypes() const override {
    // Every dtype (fp8 and bf16 through f32).
    return ein::allDTypes();
  }
  std::string outputName() const override { return "OBJECT.o"; }

  ErrorOr<void> buildFiles(const CheckedModule &module,
                           const std::string &sourcePath,
                           const std::string &outputPath,
                           const std::string &headerPath,
                           const TargetOptions &options) const override {
    auto built = compileToObject(module, outputPath, headerPath, options.cpu);
    if (!built)
      return built.error().inFileNamed(sourcePath);
    return {};
  }
};

} // namespace

void addCPUTargets(std::vector<std::unique_ptr<Target>> &targets) {
  targets.push_back(std::make_unique<CPUJITTarget>());
  targets.push_back(std::make_unique<CPUObjectTarget>());
}

std::shared_ptr<JITFunction> jitFunctionOf(const Callable &callable) {
  if (auto *jit = dynamic_cast<const JITCallable *>(&callable))
    return jit->function;
  return nullptr;
}

} // namespace ein
