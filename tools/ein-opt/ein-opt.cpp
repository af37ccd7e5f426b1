//===- ein-opt.cpp - MlirOptMain with ein's dialects, passes, pipelines ---===//
//
// What it registers lives in the library (ein::registerEinOptTools,
// lib/Conversion/CPU/OptTools.cpp), as IREE's iree-opt does.
//
//===----------------------------------------------------------------------===//

#include "ein/Conversion/CPU/OptTools.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  ein::registerEinOptTools(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ein optimizer driver\n", registry));
}
