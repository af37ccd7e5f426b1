// JIT compilation of a checked .ein function to native code, and calling it.
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Execution/JITOptions.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"
#include "ein/Target/Target.h"

#include <memory>
#include <string>
#include <vector>

namespace ein {

struct MeshProgram;

/// A take (or take_along) of a compiled function, for the error when its
/// ids are out of range: which op, where it is and the size of the axis it
/// indexes; or a dropout with a run-time p (op "dropout", no size), for the
/// error when p is outside [0, 1).
struct TakeSite {
  std::string op = "take";
  std::string file;
  unsigned line = 0, col = 0;
  SizeExpr size;
  /// A dropout's run-time p rather than a take's ids.
  bool isDropoutRate() const { return op == "dropout"; }
};
/// The takes, take_alongs and dropouts with a run-time p of `fn` (its ops
/// that check values, CheckedOp::checksIds), in order.
std::vector<TakeSite> takeSites(const CheckedModule &module,
                                const CheckedFunction &fn);
/// The error of a call whose index status counted `count` ids out of range
/// (exit 2: the inputs do not fit the program), at the take (or the first
/// of several, all named); `env` gives the sizes of the call.
Error indexError(const std::vector<TakeSite> &takes, int64_t count,
                 const Bindings &env);
/// The same error when the failing take is known: `take`, its first id out
/// of range `id`, at `position` in its ids (C order), of `count` ids out of
/// range in the call (all its takes).
Error takeIdError(const TakeSite &take, int64_t id,
                  const std::vector<int64_t> &position, int64_t count,
                  const Bindings &env);
/// The error when the failing dropout is known: its run-time p is `p`.
Error dropoutRateError(const TakeSite &dropout, double p);

/// A function compiled for this CPU: dims bound to numbers are compiled in,
/// the others are read from the arguments at each call.
class JITFunction {
public:
  /// Compiles `function` of `module` (variadic ranks known) through
  /// the CPU pipeline. The error says "cannot compile 'NAME':" with the
  /// compiler's messages as its context (a program error, exit 1).
  /// With `mesh`, `module` holds a sharded function's local program and
  /// the function is compiled with its collectives as calls
  /// (ein-mesh-to-calls): it is then called only inside a CollectiveScope
  /// (ein/Runtime/CollectiveCalls.h), and a reduce-scattered result has its
  /// block's shape (meshResultTypes).
  static ErrorOr<std::unique_ptr<JITFunction>>
  compile(const CheckedModule &module, const std::string &function,
          const CPUOptions &options = {}, const JITOptions &jit = {},
          const MeshProgram *mesh = nullptr);
  /// The function of `module` from object code that compile() wrote
  /// (JITOptions::objectFile, a bundle of objects) for the same module,
  /// options and CPU: linked into a fresh JIT without running the pipeline
  /// or LLVM's code generator. The caller vouches that the objects are that
  /// function's; a file that is not a whole bundle (cut short, altered) is
  /// an error.
  static ErrorOr<std::unique_ptr<JITFunction>>
  loadObject(const CheckedModule &module, const std::string &function,
             const std::string &objectFile);
  ~JITFunction();

  /// Runs the function: `inputs` in parameter order, `outputs` preallocated
  /// with the result types (in return order). Shapes and storage types must
  /// match the compiled signature, whose free dims (size-generic code) take
  /// their values from `dims` (the inputs' binding, `bindEntryShapes`, whose
  /// entry checks the caller has evaluated); otherwise the error (a usage
  /// error, exit 2: the inputs do not fit) says which tensor differs and how.
  /// Tensors may be in any layout a HostTensor has (isConsistent: C order,
  /// Fortran order, any dense permutation): each one's strides() go to the
  /// compiled code in its memref descriptor, without a copy.
  /// When `indexStatus` is given, it receives the count of ids out of
  /// range that a function with takes reported (0 otherwise), for a caller
  /// that explains the error (Engine::explainIndexError).
  ErrorOr<void> call(const std::vector<const runtime::HostTensor *> &inputs,
                     const std::vector<runtime::HostTensor *> &outputs,
                     const Bindings &dims = {}, int64_t *indexStatus = nullptr);

  /// One tensor of callStrided: the address of element (0, 0, ...), and
  /// `rank` sizes and strides in elements (any strides >= 0, 0 included).
  using StridedArgument = ein::StridedArgument;
  /// Runs the function on `count` tensors, the parameters then the results,
  /// without call()'s checks of shapes and storage (the C++ API's checked
  /// fast path): only the count and ranks are checked. Outputs must not
  /// overlap inputs or each other. `dims`, when given, are the sizes the
  /// inputs bind (for a size-generic function, the error of an id out of
  /// range names its bound's number); `indexStatus` is as for call().
  ErrorOr<void> callStrided(const StridedArgument *args, size_t count,
                            const Bindings *dims = nullptr,
                            int64_t *indexStatus = nullptr);

  struct Impl;

private:
  explicit JITFunction(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace ein
