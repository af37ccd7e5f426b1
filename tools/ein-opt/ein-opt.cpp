//===- ein-opt.cpp - MlirOptMain with the ein dialect ---------------------===//
//
// Registers the dialects ein IR uses one by one (registerAllDialects is not
// exported by libMLIR.so), MLIR's generic passes, and the ein passes.
//
//===----------------------------------------------------------------------===//

#include "ein/Dialect/EinDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

// Hook for the ein passes: tools/ein-opt/CMakeLists.txt defines
// EIN_HAVE_TRANSFORMS when the EinTransforms library exists.
#ifdef EIN_HAVE_TRANSFORMS
#include "ein/Transforms/Passes.h"
#endif
#ifdef EIN_HAVE_CONVERSION
#include "ein/Conversion/CPU/Passes.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Conversion/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassRegistry.h"
#endif

#ifdef EIN_HAVE_CONVERSION
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
} // namespace
#endif

int main(int argc, char **argv) {
  mlir::registerTransformsPasses(); // canonicalize, cse, inline, ...
#ifdef EIN_HAVE_TRANSFORMS
  ein::registerEinPasses();
#endif
#ifdef EIN_HAVE_CONVERSION
  ein::registerEinConversionPasses();
  ein::registerCPUPasses();
#endif

  mlir::DialectRegistry registry;
  registry.insert<ein::EinDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
#ifdef EIN_HAVE_CONVERSION
  registry.insert<mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect>();
  // einc's whole CPU pipeline, so that tests can lower any verified IR.
  ein::registerCPUPipeline(registry);
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
#endif
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ein optimizer driver\n", registry));
}
