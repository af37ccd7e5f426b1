// `einc emit` of a sharded function: its local program with the mesh
// collectives as `mesh` dialect ops, or lowered with them as runtime calls
// (docs/distributed.md §4).
#pragma once

#include "ein/Compile/Compile.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Error.h"
#include "ein/Syntax/AST.h"

#include <ostream>
#include <string>
#include <vector>

namespace ein {

struct MeshProgram;
/// The mesh of `fn` (checked on the whole mesh, `checked`'s axes) and its
/// collectives after the ops `points` gives (collectivePoints): what emit
/// prints and what a sharded run compiles into its one function. A
/// reduce-scatter's dim is the one its declared result splits.
ErrorOr<MeshProgram> meshProgramOf(const CheckedModule &checked,
                                   const CheckedFunction &fn,
                                   const std::vector<size_t> &points);

/// Checks `function` (the only one when empty) of a module with a mesh,
/// then again on its local blocks as a sharded run does (splitNames,
/// collectivePoints), and prints the local program's `ein` IR with a
/// `mesh.mesh @mesh` and each collective after the op it follows, lowered
/// to `stage` (the collectives then runtime calls) for `cpu`.
ErrorOr<void> emitShardedEin(const SourceFile &file, const Module &module,
                             const CheckOptions &check,
                             const std::string &function, IRStage stage,
                             const CPUOptions &cpu, std::ostream &out);

/// The CUDA source (`einc emit --stage=cuda`) of the same local program:
/// each collective a call of the rank's device communicator (NCCL) through
/// the table the in-process loader installs (docs/cuda.md).
ErrorOr<void> emitShardedCUDA(const SourceFile &file, const Module &module,
                              const CheckOptions &check,
                              const std::string &function, std::ostream &out);

} // namespace ein
