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
#include "ein/Conversion/Passes.h"
#include "ein/Conversion/Pipelines.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassRegistry.h"
#endif

int main(int argc, char **argv) {
  mlir::registerTransformsPasses(); // canonicalize, cse, inline, ...
#ifdef EIN_HAVE_TRANSFORMS
  ein::registerEinPasses();
#endif
#ifdef EIN_HAVE_CONVERSION
  ein::registerEinConversionPasses();
#endif

  mlir::DialectRegistry registry;
  registry.insert<ein::EinDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
#ifdef EIN_HAVE_CONVERSION
  registry.insert<mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect>();
  // einc's whole CPU pipeline, so that tests can lower any verified IR.
  ein::registerCPUPipeline(registry);
  mlir::PassPipelineRegistration<>(
      "ein-lower-to-llvm",
      "einc's CPU pipeline: ein to the LLVM dialect (einc emit --stage=llvm)",
      [](mlir::OpPassManager &pm) {
        if (mlir::failed(mlir::parsePassPipeline(
                ein::cpuPipeline(ein::CPUStage::LLVM), pm, llvm::errs())))
          llvm::report_fatal_error("ein-lower-to-llvm: bad pipeline text");
      });
  // The same pipeline from `ein-tile-contractions` on, for IR that is already
  // on buffers (tests of the contraction and reduction tiling on hand-written
  // memref IR: dynamic sizes, strided layouts).
  mlir::PassPipelineRegistration<>(
      "ein-lower-buffers-to-llvm",
      "einc's CPU pipeline from ein-tile-contractions on: buffers to the LLVM "
      "dialect",
      [](mlir::OpPassManager &pm) {
        std::string full = ein::cpuPipeline(ein::CPUStage::LLVM);
        size_t from = full.find("ein-tile-contractions");
        if (from == std::string::npos ||
            mlir::failed(
                mlir::parsePassPipeline(full.substr(from), pm, llvm::errs())))
          llvm::report_fatal_error(
              "ein-lower-buffers-to-llvm: bad pipeline text");
      });
#endif
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ein optimizer driver\n", registry));
}
