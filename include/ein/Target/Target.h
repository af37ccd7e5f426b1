// The back-end seam (after IREE's TargetBackend): a Target builds a checked
// function into an artifact and loads it as something callable on tensors;
// every target is registered once (TargetRegistry.h) and named by --target.
#pragma once

#include "ein/Conversion/CPU/CPUOptions.h"
#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ein {

class DeviceMemory;
struct MeshProgram;
namespace runtime {
struct HostTensor;
}

/// What a client asks of a target: `einc run` (and the API) load and call
/// it, `einc build` writes its files, `einc report --target` reads its plan.
enum class TargetUse : unsigned { Run = 1, Build = 2, Report = 4 };

/// The options every target reads from (each reads only its own).
struct TargetOptions {
  /// Code generation for the CPU targets.
  CPUOptions cpu;
  /// The JIT's profiler and debugger listeners (JITOptions).
  bool perfListener = false, gdbListener = false;
  /// Let f32 GEMMs use TF32 tensor cores (the CUDA targets).
  bool allowTf32 = false;
  /// `einc build --main NAME` (a target that acceptsMain()).
  std::string mainFunction;
  /// The file errors in the module are reported in.
  std::string sourcePath;
  /// When not empty, the Engine's disk-cache key of this build (the source,
  /// its imports and the signature): a target may keep its artifact on disk
  /// under it (Engine/ObjectCache.h) and load it in a later process.
  std::string diskCacheKey;
  /// Build what this process calls on its own memory, where a target has
  /// such an artifact: the CUDA targets then build a shared library
  /// (ArtifactKind::SharedLibrary) whose callStrided takes device pointers,
  /// instead of the program `einc run` runs (and EINC_CUDA_SAVE keeps).
  /// The CPU targets always run in this process and ignore it.
  bool inProcess = false;
  /// A sharded function's mesh and collectives (docs/distributed.md §4):
  /// the module is its local program, built with the collectives inside (a
  /// target that compilesCollectives(); the Engine refuses the others).
  std::shared_ptr<const MeshProgram> mesh;
};

/// A target's column in `einc report --target=NAME`: what each op of one
/// function becomes on it (Target::describe). The report prints it as it
/// is, so that no target's plan is spelled outside its own folder.
struct TargetColumn {
  /// The column's heading in the table ("CUDA") and its field in each op's
  /// JSON object ("cuda").
  std::string heading, field;
  /// Per op of CheckedFunction::ops (same index): its cell in the table,
  /// and its value in the JSON (a string, or null when nullopt).
  std::vector<std::string> cells;
  std::vector<std::optional<std::string>> values;
  /// The cell of a line that totals a call's ops (the call is not an op).
  std::string callCell;
  /// Lines under the function's table, after its totals.
  std::vector<std::string> notes;
  /// A field of the function's JSON object and its string value ("fusion":
  /// "cpu"); none when `functionField` is empty.
  std::string functionField, functionValue;
};

/// What a report column describes.
enum class Described {
  /// A function as written (`einc report`).
  Function,
  /// The step `einc report --train` assembles around a function (its
  /// gradients added as results) for its account: a target describes such a
  /// step op by op, or not at all (it is not the function a target builds).
  TrainingStep,
};

/// The kinds of artifact a target's build() makes.
enum class ArtifactKind {
  /// Code compiled into this process (the CPU JIT).
  JITModule,
  /// A program built from generated source, run as a process.
  Executable,
  /// A shared library loaded with dlopen.
  SharedLibrary,
};

/// What build() made; load() turns it into a Callable.
class Artifact {
public:
  virtual ~Artifact();
  virtual ArtifactKind kind() const = 0;
  /// Whether build() found it in the disk cache rather than compiling it.
  bool fromDiskCache = false;
};

/// How `einc run --time` measured a callable.
struct Timing {
  /// Median seconds per call (0 when not measured).
  double seconds = 0;
  /// How, for the report: "median of 12 runs".
  std::string how;
  /// Minor page faults per timed call (the host's), or -1 when not counted.
  double faults = -1;
  /// The device that ran the calls as the device table names it in its
  /// descriptions ("NVIDIA H100 80GB HBM3"); empty for this host's CPU.
  std::string device;
  /// Whether the peaks to compare with are the device table's entry for
  /// `device` (a GPU), rather than this host's calibration.
  bool fromDeviceTable = false;
  /// Why nothing was measured; empty when `seconds` holds a time.
  std::string notMeasured;
};

/// One tensor of a strided call: the address of element (0, 0, ...), and
/// `rank` sizes and strides in elements (any strides >= 0, 0 included).
struct StridedArgument {
  void *data;
  const int64_t *sizes;
  const int64_t *strides;
  size_t rank;
};

/// A loaded artifact, callable on host tensors.
class Callable {
public:
  virtual ~Callable();
  /// Runs the function: `inputs` in parameter order, `outputs` preallocated
  /// with the result shapes; `dims` are the sizes the inputs bind. When
  /// `indexStatus` is given, it receives the count of take ids out of range
  /// (-1 when the target knows only that some were), 0 otherwise.
  virtual ErrorOr<void>
  call(const std::vector<const runtime::HostTensor *> &inputs,
       const std::vector<runtime::HostTensor *> &outputs, const Bindings &dims,
       int64_t *indexStatus = nullptr) = 0;
  /// Runs the function on `count` tensors, the parameters then the results,
  /// without call()'s checks of shapes and storage (the C++ API's checked
  /// fast path). By default refused by name: a target that has such a path
  /// overrides it.
  virtual ErrorOr<void> callStrided(const StridedArgument *args, size_t count,
                                    const Bindings *dims, int64_t *indexStatus);
  /// Times calls on the same tensors. By default the median wall-clock time
  /// of call() after a warm-up call (medianSeconds).
  virtual ErrorOr<Timing>
  time(const std::vector<const runtime::HostTensor *> &inputs,
       const std::vector<runtime::HostTensor *> &outputs, const Bindings &dims);
};

/// A back end. Subclasses live in their own folder (lib/Target/CPU,
/// lib/Target/CUDA) and are registered once in TargetRegistry.cpp.
class Target {
public:
  virtual ~Target();
  /// The registry's name of the target ("cpu", "cpu-object", "cuda").
  virtual std::string name() const = 0;
  /// How --target spells it; targets for different uses may share one
  /// spelling (cpu runs with the JIT and builds objects).
  virtual std::string flag() const { return name(); }
  /// The uses (TargetUse bits) the target serves.
  virtual unsigned uses() const = 0;
  bool serves(TargetUse use) const {
    return (uses() & static_cast<unsigned>(use)) != 0;
  }
  /// The dtypes its code handles.
  virtual std::vector<DType> supportedDTypes() const = 0;
  /// Whether build() compiles a sharded function's collectives into its
  /// code (TargetOptions::mesh).
  virtual bool compilesCollectives() const { return false; }

  /// Whether this host can run what the target builds with `options`,
  /// checked before anything is read or compiled (a usage error if not).
  virtual ErrorOr<void> checkRunnable(const TargetOptions &options) const;
  /// Builds `function` of `module` (sizes bound or size-generic) for
  /// running in this process.
  virtual ErrorOr<std::shared_ptr<Artifact>>
  build(const CheckedModule &module, const std::string &function,
        const TargetOptions &options) const;
  /// The callable of an artifact that this target's build() made.
  virtual ErrorOr<std::shared_ptr<Callable>>
  load(std::shared_ptr<Artifact> artifact) const;
  /// The memory that what build() makes with `inProcess` reads and
  /// writes: the host's (the default, the CPU targets), or a device's,
  /// loaded on first use (the CUDA targets; a usage error when the device
  /// cannot be used). `einc train` keeps its state there between steps.
  virtual ErrorOr<DeviceMemory *> memory() const;

  /// `einc build`: writes every entry point of `module` to `outputPath` (an
  /// object file or a source file) and `headerPath`, both or neither; errors
  /// about the module are in `sourcePath`.
  virtual ErrorOr<void> buildFiles(const CheckedModule &module,
                                   const std::string &sourcePath,
                                   const std::string &outputPath,
                                   const std::string &headerPath,
                                   const TargetOptions &options) const;
  /// What `einc build` writes, for its usage error ("OBJECT.o").
  virtual std::string outputName() const { return "OUTPUT"; }
  /// Whether `einc build --main NAME` applies (a main() in the output).
  virtual bool acceptsMain() const { return false; }

  /// `einc report --target`: what each op of `fn` (a function of `module`,
  /// as `what` says) becomes on this target, from the target's own planning
  /// code (after IREE's TargetBackend). A whole function at a time, since
  /// what an op becomes may depend on its neighbours (the CPU's fusion).
  /// nullopt (the default) when the target adds no column. Never fails: a
  /// function the target cannot plan says so in its column.
  virtual std::optional<TargetColumn>
  describe(const CheckedModule &module, const CheckedFunction &fn,
           Described what, const TargetOptions &options) const;
};

/// Median seconds per call of `call` after one warm-up call, over at least
/// 0.2 s of calls (and up to five calls while under 2 s). `calls` receives
/// the number of timed calls; `faults`, when given, the process's minor
/// page faults per timed call (getrusage).
ErrorOr<double> medianSeconds(const std::function<ErrorOr<void>()> &call,
                              size_t &calls, double *faults = nullptr);

} // namespace ein
