// What the C++ API's library files share: storage, conversions between the
// public and internal types, errors, and the kernel cache (Kernels.cpp).
#pragma once

#include "ein/API/Module.h"
#include "ein/API/Ops.h"
#include "ein/API/Tensor.h"
#include "ein/Execution/JIT.h"
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
}

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
  std::shared_ptr<JITFunction> function;
  /// What it is cached as: the generated source, or a built program's key.
  std::string source;
};

/// The kernel of the built `module` (one function, `kernelName`), cached
/// under `key`, which names everything that decides the module (it keys the
/// disk cache too); compiled on first use; thread-safe.
Result<std::shared_ptr<Kernel>> kernelFor(const std::string &key,
                                          const CheckedModule &module);
/// The kernel cached under `key`, its module built by `build` only when
/// the cache does not hold it yet.
Result<std::shared_ptr<Kernel>>
kernelFor(const std::string &key,
          const std::function<Result<CheckedModule>()> &build);
/// The name of the function in every kernel.
inline constexpr const char *kernelName = "kernel";

/// Generated `source` parsed and checked; errors are compiler errors
/// (program). Only cudaDevice::runSource still takes .ein text (nothing in
/// lib/API calls it now: every kernel is built with the ProgramBuilder).
Result<CheckedModule> checkSource(const std::string &source);

/// Counts compilations and disk loads of module functions in
/// ein::cache_stats(), beside the kernels'.
void countModuleCompilations(size_t compiled, size_t loaded);

/// Runs `function` on `tensors` (parameters then results), through their
/// strides.
Result<void> runKernel(JITFunction &function,
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

/// Runs the built kernel `module` (cached as `key`) on `tensors`
/// (parameters then results), all on `device`: `cpuKernel` (its compiled
/// CPU kernel; only read on the CPU) on the CPU, the CUDA back end's code
/// on CUDA.
Result<void> runOn(Device device, const std::string &key,
                   const CheckedModule &module, const Kernel *cpuKernel,
                   const std::vector<const Tensor *> &tensors);

/// A tensor's type for a built program's parameter: its sizes as numbers
/// (`concrete`), or as fresh anonymous dims `_anonN` (numbered from
/// `anonymous`), so a call is checked once for every shape.
TensorType typeOf(const Tensor &t, bool concrete, unsigned &anonymous);

} // namespace detail
} // namespace ein::api
