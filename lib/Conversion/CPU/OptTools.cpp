// ein-opt's registrations (include/ein/Conversion/CPU/OptTools.h): the
// dialects, the passes and einc's CPU pipeline as ein-opt pipelines.
#include "ein/Conversion/CPU/OptTools.h"
#include "ein/Conversion/CPU/Passes.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Conversion/Passes.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace {
/// The options of einc's CPU pipeline as ein-opt pipeline options: the
/// contraction blocking of `einc --tiles`.
struct CPUPipelineOptions : mlir::PassPipelineOptions<CPUPipelineOptions> {
#define EIN_TILE_KNOB(Field, Key, Min, Max, Help)                              \
  Option<int64_t> Field{*this, Key, llvm::cl::desc(Help)};
#include "ein/Conversion/CPU/TileKnobs.def"
  ein::CPUOptions toCPUOptions() const {
    ein::CPUOptions options;
    auto set = [](const Option<int64_t> &o, std::optional<int64_t> &field) {
      if (o.hasValue())
        field = o.getValue();
    };
#define EIN_TILE_KNOB(Field, ...) set(Field, options.tiles.Field);
#include "ein/Conversion/CPU/TileKnobs.def"
    return options;
  }
};

/// The passes and pipelines live in process-wide registries, which refuse a
/// pipeline registered twice: this runs once.
void registerPassesAndPipelines() {
  mlir::registerTransformsPasses(); // canonicalize, cse, inline, ...
  ein::registerEinPasses();
  ein::registerEinConversionPasses();
  ein::registerCPUPasses();
  mlir::PassPipelineRegistration<CPUPipelineOptions>(
      "ein-lower-to-llvm",
      "einc's CPU pipeline: ein to the LLVM dialect (einc emit --stage=llvm)",
      [](mlir::OpPassManager &pm, const CPUPipelineOptions &options) {
        ein::buildCPUPipeline(pm, ein::CPUStage::LLVM, options.toCPUOptions());
      });
  // The same pipeline from `ein-tile-contractions` on, for IR that is already
  // on buffers (tests of the contraction and reduction tiling on hand-written
  // memref IR: dynamic sizes, strided layouts).
  mlir::PassPipelineRegistration<CPUPipelineOptions>(
      "ein-lower-buffers-to-llvm",
      "einc's CPU pipeline from ein-tile-contractions on: buffers to the LLVM "
      "dialect",
      [](mlir::OpPassManager &pm, const CPUPipelineOptions &options) {
        ein::buildCPUPipeline(pm, ein::CPUStage::LLVM, options.toCPUOptions(),
                              ein::CPUStart::Buffers);
      });
}
} // namespace

void ein::registerEinOptTools(mlir::DialectRegistry &registry) {
  static bool registered = (registerPassesAndPipelines(), true);
  (void)registered;
  registry
      .insert<EinDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
              mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect,
              mlir::math::MathDialect, mlir::memref::MemRefDialect,
              mlir::mesh::MeshDialect>(); // einc emit of a sharded program
  // einc's whole CPU pipeline, so that tests can lower any verified IR.
  registerCPUPipeline(registry);
}
