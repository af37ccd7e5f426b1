// The CUDA target: one self-contained CUDA C++ source per .ein module (the
// runtime of lib/Target/CUDA/Runtime, kernels instantiated per op, cuBLASLt
// GEMMs, one C-ABI entry point per function) and its C header.
#pragma once

#include "ein/Compile/Compile.h"
#include "ein/Sema/Program.h"
#include "ein/Support/Error.h"

#include <memory>
#include <string>

namespace ein {

struct MeshProgram;

/// The line that ends the runtime every generated source starts with (the
/// same text in every file) and begins the module's part: what the
/// emulated build precompiles once (compileCUDASource) and
/// scripts/gpu-check.sh keeps once.
inline constexpr const char *kCUDAModuleMarker = "\n// ---- the module\n";

struct CUDAOptions {
  /// Append a main() that runs `mainFunction` on raw tensor files (what
  /// `einc run --target=cuda` compiles; ein_cuda_main.h).
  std::string mainFunction;
  /// Let f32 GEMMs use TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32).
  bool allowTf32 = false;
  /// Fuse elementwise ops over one iteration space into one ein_map
  /// (`--no-fusion` clears it: every op its own kernel).
  bool fusion = true;
  /// A sharded function's local program (the module's one function) and
  /// its collectives (docs/distributed.md §4): each all-reduce or
  /// reduce-scatter becomes a call, through the table the source's loader
  /// installs (ein_api_set_collectives), of the rank's device communicator.
  std::shared_ptr<const MeshProgram> mesh;
};

/// The CUDA C++ source of every function of `module` (all variadic ranks
/// fixed). It compiles with nvcc alone (link -lcublasLt) and, with the
/// emulation its runtime carries, with a host C++17 compiler. Each function
/// becomes
///
///   extern "C" int ein_NAME(<the CPU header's tensor parameters>,
///                           cudaStream_t stream);
///
/// taking device pointers; it returns an EIN_ERR_* code before launching
/// anything when the arguments do not fit. An error names the op that
/// cannot be emitted ("cannot emit CUDA:").
ErrorOr<std::string> emitCUDA(const CheckedModule &module,
                              const CUDAOptions &options = {});

/// The ops of `fn` (a function of `module`) the CUDA target computes in one
/// kernel or GEMM call: per group its kind ("rows": a row kernel,
/// "epilogue": a contraction and the ops its GEMM applies, "elementwise":
/// one ein_map's functor) and the indices in CheckedFunction::ops, in the
/// order the source computes them. An error when `fn` does not emit.
ErrorOr<std::vector<FusedLoopNest>>
cudaFusionGroups(const CheckedModule &module, const CheckedFunction &fn,
                 const CUDAOptions &options);

/// The C header declaring the entry points of emitCUDA's source.
std::string cudaHeader(const CheckedModule &module, const std::string &guard);

} // namespace ein
