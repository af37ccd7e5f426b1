// What ein-opt registers (dialects, passes, pipelines), as a library
// function so that the tool's main stays a few lines.
#pragma once

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace ein {

/// Registers into `registry` the dialects ein IR uses and, once per process,
/// MLIR's generic passes, the ein passes, the CPU passes and the pipelines
/// ein-opt exposes: `--ein-lower-to-llvm` (einc's CPU pipeline, ein to the
/// LLVM dialect) and `--ein-lower-buffers-to-llvm` (the same from
/// ein-tile-contractions on), both with the `einc --tiles` knobs as options.
void registerEinOptTools(mlir::DialectRegistry &registry);

} // namespace ein
