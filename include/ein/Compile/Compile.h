// From a checked program through the CPU pipeline to IR at a stage: what
// `einc emit` prints, and the loop nests the CPU fusion passes made (the
// report's fused column). Above MLIRGen, which only builds IR; no MLIR
// header here.
#pragma once

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Sema/Program.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ein {

/// Compilation stages that can be printed (`einc emit --stage=`).
enum class IRStage { Ein, Linalg, Loops, LLVM };
/// "ein", "linalg", "loops", "llvm": how --stage spells it.
const char *irStageName(IRStage stage);
/// The stage --stage spells `name` (not "ast", which has no IR).
std::optional<IRStage> irStageOf(const std::string &name);

/// Builds the `ein` IR of `module`, verifies it, lowers it to `stage`, and
/// prints it to `os`. An error carries MLIR's diagnostics as its context.
ErrorOr<void> emitIR(const CheckedModule &module, IRStage stage,
                     std::ostream &os, const CPUOptions &options = {});
struct MeshProgram;
/// `einc emit` of a sharded function: its local program (`local`, one
/// function) with the mesh's collectives as `mesh` ops (`stage` ein), or
/// lowered with them as runtime calls (ein-mesh-to-calls) to `stage`.
ErrorOr<void> emitShardedIR(const CheckedModule &local, const MeshProgram &mesh,
                            IRStage stage, std::ostream &os,
                            const CPUOptions &options = {});

/// A loop nest the CPU pipeline's fusion passes made (docs/lowering.md
/// §3.6): `kind` is "rows" (an `ein.row_tiles` loop: every op inside it) or
/// "elementwise" (an op on tensors whose location is an `ein.fused`
/// FusedLoc); `ops` are the indices in CheckedFunction::ops of the source
/// ops it computes (by source location and call sites), ascending.
struct FusedLoopNest {
  std::string kind;
  std::vector<size_t> ops;
};

/// Compiles `fn` alone (it has no calls left: they are inlined) through the
/// CPU pipeline up to its fusion passes (CPUStage::Fused) and reads their
/// loop nests back, in IR order. An error (MLIR's diagnostics as context)
/// when the function does not lower.
ErrorOr<std::vector<FusedLoopNest>> fusedLoopNests(const CheckedModule &module,
                                                   const CheckedFunction &fn,
                                                   const CPUOptions &options);

} // namespace ein
