// What the C++ API's library files share: storage, conversions between the
// public and internal types, errors, and the kernel cache (Kernels.cpp).
#pragma once

#include "ein/API/Distributed.h"
#include "ein/API/Module.h"
#include "ein/API/Ops.h"
#include "ein/API/Tensor.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Sema/Program.h"
#include "ein/Shape/Shape.h"
#include "ein/Support/Error.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ein {
struct BuildError;
class Callable;
class Communicator;
struct CheckOptions;
struct Module;
struct ShardedProgram;
struct SourceFile;
} // namespace ein

namespace ein::api {
namespace detail {

/// The bytes of a tensor: owned (freed with the last tensor that shares
/// them) or borrowed from the caller.
struct Storage {
  void *base = nullptr;
  size_t bytes = 0;
  bool owned = false;
  Device device = cpu;
  ~Storage();
};

/// The bytes of a `dtype` tensor of `shape`, or the error (a negative size,
/// an overflow).
Result<size_t> checkedBytes(DType dtype, const std::vector<int64_t> &shape);
/// A new owned C-order tensor in host memory (uninitialised unless `zero`),
/// or the error.
Result<Tensor> allocateHost(DType dtype, const std::vector<int64_t> &shape,
                            bool zero);
/// A new owned C-order tensor on `device` (uninitialised unless `zero`),
/// or the error.
Result<Tensor> allocate(DType dtype, const std::vector<int64_t> &shape,
                        bool zero, Device device = cpu);

/// The one device of `tensors` (what an operation runs on), or an error
/// naming `what` when they are on different devices. CPU 0-d tensors (the
/// API's scalars) go with any device.
Result<Device> deviceOf(const std::string &what,
                        const std::vector<Tensor> &tensors);

/// `t` on `device`: itself, or a copy when it is a CPU 0-d tensor (a
/// scalar) and `device` is CUDA.
Result<Tensor> onDevice(const Tensor &t, Device device);

/// The public dtype as the library's and back: the one conversion between
/// them, checked against DTypes.def row by row (Tensor.cpp).
ein::DType internal(DType t);
DType external(ein::DType t);

/// The options CPU kernels and module functions are compiled with now
/// (set_cpu's target).
CPUOptions compileOptions();
/// A number for set_cpu's target (0: the host), for caches that hold
/// compiled kernels to key them by.
uint32_t compileTargetId();

/// The internal error as the API reports it: the text einc prints (without
/// the tool's name), and its kind.
ErrorInfo toInfo(const ein::Error &error);
/// A usage error (inputs that do not fit), "error: MESSAGE".
ErrorInfo usageError(const std::string &message);
/// A program error (a pattern or source that is wrong), "error: MESSAGE".
ErrorInfo programError(const std::string &message);

/// A compiled function, shared by every call with the same key (the
/// in-memory cache).
struct Kernel {
  /// The cpu target's JIT code, or the CUDA target's in-process library
  /// (called on device pointers).
  std::shared_ptr<Callable> callable;
  /// What it is cached as: a built program's key.
  std::string source;
};

/// The kernel of the built `module` (one function, `kernelName`) for
/// `device`, cached under `key`, which names everything that decides the
/// module (it keys the Engine's disk cache too); compiled through the
/// Engine on first use; thread-safe.
Result<std::shared_ptr<Kernel>> kernelFor(const std::string &key, Device device,
                                          const CheckedModule &module);
/// The kernel cached under `key` for `device`, its module built by `build`
/// only when the cache does not hold it yet.
Result<std::shared_ptr<Kernel>>
kernelFor(const std::string &key, Device device,
          const std::function<Result<CheckedModule>()> &build);
/// The name of the function in every kernel.
inline constexpr const char *kernelName = "kernel";

/// Counts compilations and disk loads of module functions in
/// ein::cache_stats(), beside the kernels'.
void countModuleCompilations(size_t compiled, size_t loaded);

/// Runs `kernel` on `tensors` (parameters then results, all on the device
/// it was compiled for), through their strides.
Result<void> runKernel(const Kernel &kernel,
                       const std::vector<const Tensor *> &tensors);

/// The shape string "a0 a1 ... a{rank-1}" of elementary axis names from
/// `names`.
std::string axesString(const std::vector<std::string> &names);

/// Copies `src` into `dst` (same shape and dtype; any strides) element by
/// element, innermost runs with memcpy when both are contiguous there.
void stridedCopy(const Tensor &src, const Tensor &dst);

/// Copies `src` into `dst` (same shape, dtype and device; any strides): on
/// the CPU stridedCopy, on CUDA a copy kernel.
Result<void> copyInto(const Tensor &src, const Tensor &dst);

/// A user's call as an error shows it: its text, and the column and length
/// of its pattern's start, of each operand and of each keyword size.
struct CallText {
  std::string text;
  size_t pattern = 0;
  std::vector<std::pair<size_t, size_t>> operands, keywords;
};
/// A ProgramBuilder error (ein/Sema/ProgramBuilder.h) as a program error:
/// its message, then the call with a caret under what it is about (in the
/// pattern when it can be).
ErrorInfo callError(const CallText &call, const BuildError &error);

/// A tensor's type for a built program's parameter: its sizes as numbers
/// (`concrete`), or as fresh anonymous dims `_anonN` (numbered from
/// `anonymous`), so a call is checked once for every shape.
TensorType typeOf(const Tensor &t, bool concrete, unsigned &anonymous);

/// A loaded module's parsed source (imports resolved) and the options it
/// was checked with (Module.cpp), for the training loop (Train.cpp).
struct ModuleSource {
  const SourceFile &file;
  const ein::Module &module;
  const CheckOptions &options;
};
ModuleSource moduleSource(const ModuleState &state);
/// The runtime's communicator behind a defined `comm` (Distributed.cpp).
ein::Communicator *runtimeCommunicator(const api::Communicator &comm);
/// Whether a defined `comm` is one of simulated ranks (threads of this
/// process), or a group split from them.
bool isSimulated(const api::Communicator &comm);

/// The module checked symbolically, as loaded (its mesh axes, functions and
/// layouts).
const CheckedModule &checkedModule(const ModuleState &state);
/// The module's sharded program cached under `key` (Distributed.cpp), made
/// by `prepare` on first use; one thread prepares while the others wait.
ErrorOr<std::shared_ptr<const ShardedProgram>> shardedProgram(
    ModuleState &state, const std::string &key,
    const std::function<ErrorOr<std::shared_ptr<const ShardedProgram>>()>
        &prepare);

} // namespace detail
} // namespace ein::api
