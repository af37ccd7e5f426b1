// The CPU compilation pipeline, stage by stage, as library functions.
#pragma once

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

/// The blocking of ein-tile-contractions (§3.1 of docs/lowering.md); an
/// unset field keeps the pass's default.
struct ContractionTiles {
#define EIN_TILE_KNOB(Field, ...) std::optional<int64_t> Field;
#include "ein/Conversion/CPU/TileKnobs.def"
  /// "mr=6 kc=128": the fields that are set, for cache keys and messages.
  std::string str() const;
};

/// Knobs of the CPU pipeline that users may set.
struct CPUOptions {
  /// The CPU compiled for (`--cpu`, `--cpu-features`; default the host):
  /// LLVM's target machine, the vector width of the tiles, and for a named
  /// CPU the common caches (HostCPU.h), so its code is the same from any
  /// host.
  TargetCPU target;
  /// Set from `einc --tiles` by parseContractionTiles.
  ContractionTiles tiles;
  /// Whether ops fuse: row tiles (ein-fuse-rows), elementwise ops into the
  /// ops that read them (ein-fuse-elementwise), epilogues into contraction
  /// kernels (ein-tile-contractions); `--no-fusion` clears it.
  bool fusion = true;
  /// Allocations call MLIR's generic allocation functions
  /// (`_mlir_memref_to_llvm_alloc`, ...) instead of malloc and free: the
  /// JIT resolves them to ein's caching allocator, an object defines weak
  /// ones (docs/lowering.md §4, §5). Off for IR that mlir-cpu-runner runs.
  bool genericAllocation = false;
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
