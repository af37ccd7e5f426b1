// The engine: checks, binds and compiles functions into callable executables,
// cached in memory by signature, and calls them with strided host tensors.
#pragma once

#include "ein/Conversion/CPU/CPUOptions.h"
#include "ein/Execution/JITOptions.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Sema/Checker.h"
#include "ein/Sema/EntryBinding.h"
#include "ein/Syntax/AST.h"
#include "ein/Syntax/Diagnostics.h"
#include "ein/Target/Target.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ein {

/// How a function is compiled for a call.
enum class Specialisation {
  /// Every size of the inputs is compiled in (one compilation per shape).
  Sizes,
  /// Only `dim`, --dim and `#` dims given size 1 are numbers; every other
  /// size is read from the arguments (one compilation for every shape). A
  /// function with a loop over a size left free is refused: the loop is
  /// unrolled, so its count must be a number.
  Generic,
  /// Generic, except a function with a loop over a size left free, whose
  /// sizes are compiled in (the C++ API's calls: the loop is unrolled).
  GenericUnlessLoops,
};

/// A call of one function on inputs of known shapes, checked and compiled.
struct BoundCall {
  /// The code compiled for the target bind was given (null without one).
  std::shared_ptr<Callable> callable;
  /// Every dim of the function, bound by the inputs (entry checks hold).
  Bindings dims;
  /// The function checked for these sizes (for costs and result shapes):
  /// the symbolic check specialised for them, or checked again with them
  /// (Sema/Specialise.h).
  CheckedModule concrete;
  /// What was (or, when bind did not compile, would be) compiled: the
  /// concrete module, or the symbolic one for size-generic calls. Set only
  /// when bind did not compile (the caller compiles it for its target).
  CheckedModule source;
  /// The shape of each result, in return order.
  std::vector<std::vector<int64_t>> resultShapes;
  /// Runs the callable on `inputs` into preallocated `outputs`.
  /// `indexStatus` as for Callable::call.
  ErrorOr<void> call(const std::vector<const runtime::HostTensor *> &inputs,
                     const std::vector<runtime::HostTensor *> &outputs,
                     int64_t *indexStatus = nullptr) const {
    return callable->call(inputs, outputs, dims, indexStatus);
  }
};

/// Checks and binds functions and compiles them for any registered target
/// (TargetRegistry.h) through one cache; `cpu` and `jit` are the options of
/// the code it compiles (each target reads its own).
class Engine {
public:
  explicit Engine(CPUOptions cpu = {}, JITOptions jit = {})
      : cpu(std::move(cpu)), jit(jit) {}

  /// The symbolic check of `function` (others are skipped), as `einc check`
  /// does; the error is the file's diagnostics, or "no function named".
  ErrorOr<CheckedModule> check(const SourceFile &file, const Module &module,
                               const CheckOptions &options,
                               const std::string &function) const;

  /// Binds `function`'s dims from the input shapes (one per parameter),
  /// evaluates its entry checks, specialises the symbolic check for those
  /// sizes (or checks it again with them where it cannot: Specialise.h) and
  /// compiles it for `target` (or takes the cached callable of the same
  /// signature); without a target it only binds, and `source` holds what
  /// to compile. `symbolic` is what `check` returned for the same options
  /// and function.
  /// Errors about the inputs are usage errors (exit 2); a function that
  /// cannot be compiled a program error.
  ErrorOr<BoundCall> bind(const SourceFile &file, const Module &module,
                          const CheckOptions &options,
                          const CheckedModule &symbolic,
                          const std::string &function,
                          const std::vector<std::vector<int64_t>> &shapes,
                          Specialisation specialisation,
                          const Target *target = nullptr);

  /// Builds `function` of `checked` for `target` and loads it, or returns
  /// the callable built before for the same target, source, function,
  /// bound sizes and options: the one cache every target's clients share.
  /// With the disk cache on, the target may keep its artifact on disk
  /// (TargetOptions::diskCacheKey).
  ErrorOr<std::shared_ptr<Callable>> compile(const Target &target,
                                             const SourceFile &file,
                                             const CheckedModule &checked,
                                             const std::string &function,
                                             TargetOptions options);
  /// compile() of a program that has no source file (one a client built,
  /// as the C++ API's pattern kernels): `key` names everything that decides
  /// `checked` (it keys the memory and disk caches in place of the file's
  /// text); `options.cpu` is the CPU code is compiled for.
  ErrorOr<std::shared_ptr<Callable>> compile(const Target &target,
                                             const std::string &key,
                                             const CheckedModule &checked,
                                             const std::string &function,
                                             TargetOptions options);

  /// `einc build`: writes every entry point of `module` for `target` to
  /// `outputPath` and `headerPath`, both or neither (Target::buildFiles;
  /// errors about the module are in `sourcePath`). Files are not cached:
  /// the Engine is the door to every target, not only to compiled code.
  ErrorOr<void> buildFiles(const Target &target, const CheckedModule &module,
                           const std::string &sourcePath,
                           const std::string &outputPath,
                           const std::string &headerPath,
                           const TargetOptions &options) const;

  /// `einc report --target`: `target`'s column (Target::describe) of each
  /// function of `module` (only `function` when not empty), by name; a
  /// function the target adds no column to is left out.
  std::map<std::string, TargetColumn>
  describe(const Target &target, const CheckedModule &module,
           const std::string &function, Described what,
           const TargetOptions &options) const;

  /// The error of a call of `function` bound as `call` whose index status
  /// counted `count` ids out of range on `inputs`, explained: the take
  /// whose ids hold one (the first in the function's order), its first id
  /// out of range and that id's position (takeIdError). On this error path
  /// only, it compiles and runs a probe: the function with each take's ids
  /// as its results (ids may be computed). `original` when the probe cannot
  /// say.
  Error explainIndexError(const BoundCall &call, const std::string &function,
                          const std::vector<StridedArgument> &inputs,
                          int64_t count, Error original);

  /// Executables compiled so far (the cache's size).
  size_t compilations() const { return compiled; }
  /// Executables loaded from the disk cache so far.
  size_t loads() const { return loaded; }
  /// Whether compile() also lets targets use the disk cache (ObjectCache.h),
  /// keyed by the source (with the files it imports) and the signature. Off by
  /// default: einc never writes outside the paths it is given.
  void useDiskCache(bool on) { diskCache = on; }
  /// Whether bind() asks targets for code this process calls on its own
  /// memory (TargetOptions::inProcess): the C++ API's CUDA calls, on device
  /// tensors. Off by default: `einc run --target=cuda` runs a program.
  void buildInProcess(bool on) { inProcess = on; }

private:
  CPUOptions cpu;
  JITOptions jit;
  std::map<std::string, std::shared_ptr<Callable>> callables;
  size_t compiled = 0, loaded = 0;
  bool diskCache = false, inProcess = false;

  /// Builds and loads for compile(): the callable cached under `key`, or
  /// built with the disk cache keyed by `diskKey` (when it is on).
  ErrorOr<std::shared_ptr<Callable>>
  buildAndLoad(const Target &target, const std::string &key,
               const std::string &diskKey, const CheckedModule &checked,
               const std::string &function, TargetOptions options);
};

} // namespace ein
