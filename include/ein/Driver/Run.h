// `einc run`: JIT-compile one function, run it on .npy or safetensors
// inputs, write .npy or safetensors outputs.
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Execution/JIT.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Sema/Checker.h"
#include "ein/Syntax/AST.h"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace ein {

struct RunOptions {
  std::string function;
  /// --in: (parameter, path); a safetensors file's parameter is the
  /// tensor's name in it, or empty: each of the file's tensors binds the
  /// parameter of its name.
  std::vector<std::pair<std::string, std::string>> inputs;
  /// --out, one per result in order: (tensor name, path); the name is for a
  /// safetensors file (empty: the returned value's name) and empty for .npy.
  std::vector<std::pair<std::string, std::string>> outputs;
  bool time = false;
  /// Compile without the inputs' sizes (size-generic code, as `einc build`
  /// makes), then call with them; otherwise specialise to them.
  bool sizeGeneric = false;
  double peakFlops = 0, bandwidth = 0;
  CPUOptions cpu;
  /// The --target spelling of a registered target that runs code
  /// (TargetRegistry.h): cpu (JIT), cuda (nvcc, this machine's GPU) or
  /// cuda-emulated (the same CUDA source built by the host C++ compiler).
  std::string target = "cpu";
  bool allowTf32 = false;
  JITOptions jit; // perf/gdb listeners: off unless asked for
  /// --ranks N of a sharded program (a file with a mesh): 0 for an
  /// unsharded run; with `simulate` (--simulate), N ranks in this process.
  int64_t ranks = 0;
  bool simulate = false;
  /// The command line after the tool's name: MPI ranks relaunch it under
  /// mpirun.
  std::vector<std::string> argv;
};

/// The input of each parameter of `fn` (named `function`) in parameter
/// order, from `--in` pairs (RunOptions::inputs): a .npy file, the tensor
/// of the parameter's name in a safetensors file, or every tensor of a
/// safetensors file given without a name, each binding the parameter of its
/// name (as torch's strict load_state_dict: a tensor that names no
/// parameter is an error). Read in the parameter's dtype when `convert`
/// (Npy.h's and convertTensor's rules), else in the file's. A usage error
/// (exit 2) for a name that is no parameter, one given twice, a parameter
/// without one, or a file that does not read.
ErrorOr<std::vector<runtime::HostTensor>>
readInputs(const CheckedFunction &fn, const std::string &function,
           const std::vector<std::pair<std::string, std::string>> &inputs,
           bool convert = true);

/// Runs `options.function` of the parsed `module`; the `--time` figures go
/// to `out`. The error's kind gives the exit code: 1 a compile error in the
/// file or an output that cannot be written, 2 bad inputs (missing or
/// malformed .npy, shapes that do not bind the signature, a failed entry
/// check). Outputs are written to temporaries and renamed into place only
/// when all are written. `symbolic`, when given, is the module checked with
/// `check` for `options.function` only (Engine::check's result), which the
/// caller has already made: it is not checked again.
ErrorOr<void> runFunction(const SourceFile &file, const Module &module,
                          const CheckOptions &check, const RunOptions &options,
                          std::ostream &out,
                          const CheckedModule *symbolic = nullptr);

/// Writes `results` (one per result of `fn`, whole) to `options.outputs`:
/// all replaced or none, as runFunction does.
ErrorOr<void> writeRunOutputs(const CheckedFunction &fn,
                              const RunOptions &options,
                              std::vector<runtime::HostTensor> &results);

/// `einc run --ranks N --simulate` of a file with a mesh
/// (docs/distributed.md §4): each simulated rank runs the function on its
/// blocks of the inputs (sliced by the parameters' layouts), the results'
/// all-reduces and reduce-scatters complete them, and the whole results
/// are assembled from the ranks' blocks. Refuses by name what the local
/// program cannot do yet (a collective inside the function, a split size
/// read as a number, MPI ranks, a CUDA target).
ErrorOr<void> runSharded(const SourceFile &file, const Module &module,
                         const CheckOptions &check, const RunOptions &options,
                         std::ostream &out);

} // namespace ein
