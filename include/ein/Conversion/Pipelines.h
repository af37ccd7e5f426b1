// The CPU compilation pipeline, stage by stage, as library functions.
#pragma once

#include "ein/Support/Error.h"

#include <string>

namespace mlir {
class DialectRegistry;
class ModuleOp;
class MLIRContext;
} // namespace mlir

namespace ein {

/// Stages of CPU compilation that `einc emit --stage=` can print.
enum class CPUStage {
  Linalg, // linalg on static tensors
  Loops,  // bufferized, scf loops over memrefs
  LLVM,   // the LLVM dialect, ready for translation to LLVM IR
};

/// Knobs of the CPU pipeline that users may set.
struct CPUOptions {
  /// Options of ein-tile-contractions in pass-option syntax ("mr=6 kc=128");
  /// empty keeps its defaults. Set from `einc --tiles` by
  /// parseContractionTiles.
  std::string contractionTiles;
};

/// Parses `--tiles` text, KEY=INT[,KEY=INT]... with the keys of
/// ein-tile-contractions (mr, nr-vectors, mc, nc, kc, vector-bits,
/// work-items), into `options`; a usage error names the bad item.
ErrorOr<void> parseContractionTiles(const std::string &text,
                                    CPUOptions &options);

/// The textual pass pipeline (passes on builtin.module, comma-separated,
/// without the anchor) that lowers `ein` IR to `stage`.
std::string cpuPipeline(CPUStage stage, const CPUOptions &options = {});

/// Registers the dialects, interfaces and passes the CPU pipeline uses.
void registerCPUPipeline(mlir::DialectRegistry &registry);

/// Runs the CPU pipeline on `module` up to `stage`. An error carries MLIR's
/// diagnostics (one per line) as its context.
ErrorOr<void> lowerToStage(mlir::ModuleOp module, CPUStage stage,
                           const CPUOptions &options = {});

} // namespace ein
