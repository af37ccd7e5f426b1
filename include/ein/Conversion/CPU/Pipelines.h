// The CPU compilation pipeline, stage by stage, as library functions.
#pragma once

#include "ein/Conversion/CPU/CPUOptions.h"
#include "ein/Conversion/CPU/HostCPU.h"
#include "ein/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class DialectRegistry;
class ModuleOp;
class MLIRContext;
class OpPassManager;
} // namespace mlir

namespace ein {

/// Stages of CPU compilation that `einc emit --stage=` can print.
enum class CPUStage {
  Linalg, // linalg on static tensors
  Fused,  // linalg after the fusion passes, before bufferization (what
          // `einc report` reads to mark fused ops)
  Loops,  // bufferized, scf loops over memrefs
  LLVM,   // the LLVM dialect, ready for translation to LLVM IR
};

/// Parses `--tiles` text, KEY=INT[,KEY=INT]... with the keys of
/// TileKnobs.def (mr, nr-vectors, mc, nc, kc, vector-bits, work-items),
/// into `options`; a usage error names the bad item.
ErrorOr<void> parseContractionTiles(const std::string &text,
                                    CPUOptions &options);

/// Where a pipeline starts: at `ein` IR, or on buffers at the contraction
/// tiling (for tests of the CPU passes on hand-written memref IR).
enum class CPUStart { Ein, Buffers };

/// Adds the passes that lower `ein` IR (or buffers) to `stage`, with typed
/// options, to `pm` (a pass manager on builtin.module). `options.target`
/// must resolve (resolveCPU; lowerToStage checks it first).
void buildCPUPipeline(mlir::OpPassManager &pm, CPUStage stage,
                      const CPUOptions &options = {},
                      CPUStart start = CPUStart::Ein);

/// Registers the dialects, interfaces and passes the CPU pipeline uses.
void registerCPUPipeline(mlir::DialectRegistry &registry);

/// Runs the CPU pipeline on `module` up to `stage`. An error carries MLIR's
/// diagnostics (one per line) as its context.
ErrorOr<void> lowerToStage(mlir::ModuleOp module, CPUStage stage,
                           const CPUOptions &options = {});

} // namespace ein
