// The CPU pipeline: ein -> linalg -> bufferized loops -> LLVM dialect.
#include "ein/Conversion/Pipelines.h"
#include "ein/Conversion/Passes.h"
#include "ein/Dialect/EinDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <set>

namespace ein {

ErrorOr<void> parseContractionTiles(const std::string &text,
                                    CPUOptions &options) {
  // Bounds keep the generated code sane: the register tile must fit the
  // register file, blocks must fit memory.
  static const std::map<std::string, std::pair<int64_t, int64_t>> keys = {
      {"mr", {1, 32}},
      {"nr-vectors", {1, 16}},
      {"mc", {1, 1 << 16}},
      {"nc", {1, 1 << 16}},
      {"kc", {1, 1 << 16}},
      {"vector-bits", {128, 512}},
      {"work-items", {1, 1 << 16}}};
  std::string result;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(start, end - start);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    auto known = keys.find(key);
    if (eq == std::string::npos || known == keys.end()) {
      std::string names;
      for (auto &[name, range] : keys)
        names += (names.empty() ? "" : ", ") + name;
      return Error::usage(fmt::format(
          "--tiles expects KEY=INT[,KEY=INT]... with keys {}; got '{}'", names,
          item));
    }
    if (!seen.insert(key).second)
      return Error::usage(fmt::format("--tiles sets '{}' twice", key));
    std::string digits = item.substr(eq + 1);
    auto [lo, hi] = known->second;
    // Only plain decimal digits (no sign, no space); six fit every range.
    bool number = !digits.empty() && digits.size() <= 6 &&
                  digits.find_first_not_of("0123456789") == std::string::npos;
    int64_t value = -1;
    if (number)
      std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (value < lo || value > hi)
      return Error::usage(
          fmt::format("--tiles {}: '{}' is not an integer in [{}, {}]", key,
                      digits, lo, hi));
    if (key == "vector-bits" && value != 128 && value != 256 && value != 512)
      return Error::usage(fmt::format(
          "--tiles vector-bits: expects 128, 256 or 512, got {}", digits));
    result += (result.empty() ? "" : " ") + key + "=" + digits;
    start = end + 1;
  }
  options.contractionTiles = result;
  return {};
}

std::string cpuPipeline(CPUStage stage, const CPUOptions &options) {
  std::string p = "ein-split-einsums,ein-to-linalg,canonicalize";
  if (stage == CPUStage::Linalg)
    return p;
  // Bufferize with results written in place into the caller's buffers;
  // contractions become packed, register-tiled micro-kernels; everything else
  // loops whose outermost parallel loop is spread over the cores (OpenMP).
  p += ",one-shot-bufferize{bufferize-function-boundaries=1 "
       "function-boundary-type-conversion=identity-layout-map},"
       "ein-results-from-allocs,buffer-results-to-out-params{hoist-static-"
       "allocs=1},"
       "canonicalize,buffer-deallocation-pipeline,ein-tile-contractions{" +
       options.contractionTiles +
       "},ein-tile-reductions,"
       "convert-linalg-to-affine-loops,func.func(affine-parallelize{max-nested="
       "1}),"
       "lower-affine,canonicalize";
  if (stage == CPUStage::Loops)
    return p;
  p += ",ein-expand-fp8,convert-scf-to-openmp,expand-strided-metadata,lower-"
       "affine,"
       "convert-vector-to-llvm,finalize-memref-to-llvm,convert-scf-to-cf,"
       "arith-expand{include-bf16=1},convert-math-to-funcs,"
       "convert-math-to-llvm,convert-math-to-libm,"
       "convert-arith-to-llvm,convert-openmp-to-llvm,convert-cf-to-llvm,"
       "convert-func-to-llvm,reconcile-unrealized-casts";
  return p;
}

void registerCPUPipeline(mlir::DialectRegistry &registry) {
  registry
      .insert<EinDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
              mlir::math::MathDialect, mlir::linalg::LinalgDialect,
              mlir::tensor::TensorDialect, mlir::memref::MemRefDialect,
              mlir::bufferization::BufferizationDialect, mlir::scf::SCFDialect,
              mlir::affine::AffineDialect, mlir::cf::ControlFlowDialect,
              mlir::LLVM::LLVMDialect, mlir::omp::OpenMPDialect,
              mlir::vector::VectorDialect>();
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerOpenMPDialectTranslation(registry);
  static bool passesRegistered = [] {
    registerEinConversionPasses();
    mlir::registerTransformsPasses();
    mlir::registerLinalgPasses();
    mlir::bufferization::registerBufferizationPasses();
    mlir::bufferization::registerBufferizationPipelines();
    mlir::registerConversionPasses();
    mlir::affine::registerAffinePasses();
    mlir::memref::registerMemRefPasses();
    mlir::arith::registerArithPasses();
    return true;
  }();
  (void)passesRegistered;
}

ErrorOr<void> lowerToStage(mlir::ModuleOp module, CPUStage stage,
                           const CPUOptions &options) {
  mlir::MLIRContext *context = module.getContext();
  mlir::DialectRegistry registry;
  registerCPUPipeline(registry);
  context->appendDialectRegistry(registry);
  context->loadAllAvailableDialects();
  std::string diagnostics;
  llvm::raw_string_ostream errors(diagnostics);
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    errors << d.getLocation() << ": " << d.str() << "\n";
    return mlir::success();
  });
  mlir::PassManager pm(context);
  if (mlir::failed(
          mlir::parsePassPipeline(cpuPipeline(stage, options), pm, errors)) ||
      mlir::failed(pm.run(module)))
    return Error::program("the CPU pipeline failed")
        .withContext(std::move(diagnostics));
  return {};
}

} // namespace ein
