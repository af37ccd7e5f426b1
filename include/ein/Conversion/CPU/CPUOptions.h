// The options of CPU code generation that users set (--cpu, --tiles,
// --no-fusion), apart from the pipeline that reads them: the Target and
// Engine headers take these without pulling in the CPU back end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ein {

/// The CPU to compile for, as the user names it: an LLVM CPU name
/// (`znver3`, `skylake-avx512`, `x86-64-v3`, ...) and features added to or
/// removed from it (`+avx512f,-avx512bw`). Both empty: the host, whose
/// features are read from the processor itself (HostCPU.h resolves it).
struct TargetCPU {
  std::string name;
  std::string features;
  bool isHost() const { return name.empty() && features.empty(); }
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
  /// Set from `einc --tiles` by parseContractionTiles (Pipelines.h).
  ContractionTiles tiles;
  /// Whether ops fuse: row tiles (ein-fuse-rows; a causal head's keys
  /// bounded by ein-skip-masked-keys), elementwise ops into the
  /// ops that read them (ein-fuse-elementwise), epilogues into contraction
  /// kernels (ein-tile-contractions); `--no-fusion` clears it.
  bool fusion = true;
  /// Allocations call MLIR's generic allocation functions
  /// (`_mlir_memref_to_llvm_alloc`, ...) instead of malloc and free: the
  /// JIT resolves them to ein's caching allocator, an object defines weak
  /// ones (docs/lowering.md §4, §5). Off for IR that mlir-cpu-runner runs.
  bool genericAllocation = false;
};

} // namespace ein
