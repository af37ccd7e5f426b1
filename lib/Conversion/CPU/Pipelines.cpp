// The CPU pipeline: ein -> linalg -> bufferized loops -> LLVM dialect.
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Conversion/CPU/Passes.h"
#include "ein/Conversion/Passes.h"
#include "ein/Dialect/DiagnosticText.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Transforms/Passes.h"

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
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
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
  struct Knob {
    std::optional<int64_t> ContractionTiles::*field;
    int64_t lo, hi;
  };
  static const std::map<std::string, Knob> keys = {
#define EIN_TILE_KNOB(Field, Key, Min, Max, Help)                              \
  {Key, {&ContractionTiles::Field, Min, Max}},
#include "ein/Conversion/CPU/TileKnobs.def"
  };
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
      for (auto &[name, knob] : keys)
        names += (names.empty() ? "" : ", ") + name;
      return Error::usage(fmt::format(
          "--tiles expects KEY=INT[,KEY=INT]... with keys {}; got '{}'", names,
          item));
    }
    if (!seen.insert(key).second)
      return Error::usage(fmt::format("--tiles sets '{}' twice", key));
    std::string digits = item.substr(eq + 1);
    auto [field, lo, hi] = known->second;
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
    options.tiles.*field = value;
    start = end + 1;
  }
  return {};
}

std::string ContractionTiles::str() const {
  std::string out;
  for (auto [name, value] : {
#define EIN_TILE_KNOB(Field, Key, ...) std::pair{Key, Field},
#include "ein/Conversion/CPU/TileKnobs.def"
       })
    if (value)
      out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, *value);
  return out;
}

void buildCPUPipeline(mlir::OpPassManager &pm, CPUStage stage,
                      const CPUOptions &options, CPUStart start) {
  if (start == CPUStart::Ein) {
    // The contraction order in IR: einsums of 3+ operands become pairwise
    // einsums (shared by every back end).
    pm.addPass(createSplitEinsums());
    pm.addPass(createEinToLinalg());
    // A sharded program's collectives (mesh ops) become runtime calls on
    // buffers, before fusion and bufferization see them.
    pm.addPass(createMeshToCalls());
    pm.addPass(mlir::createCanonicalizerPass());
    if (stage == CPUStage::Linalg)
      return;
    if (options.fusion) {
      // Row tiles first, on unfused ops: inside a tile a value read twice
      // (softmax's exponentials) is then kept in a tile buffer in cache
      // rather than computed twice.
      pm.addPass(createFuseRows());
      pm.addPass(createSkipMaskedKeys());
      pm.addPass(mlir::createCanonicalizerPass());
      pm.addPass(createFuseElementwise());
      pm.addPass(mlir::createCanonicalizerPass());
    }
    if (stage == CPUStage::Fused)
      return;
    // Results become output parameters written in place (the op computing
    // a result writes into the caller's buffer); arguments take any strides
    // (fully dynamic layouts), intermediates are identity-layout buffers.
    pm.addPass(createHostCallingConvention());
    pm.addPass(mlir::bufferization::createEmptyTensorEliminationPass());
    mlir::bufferization::OneShotBufferizationOptions bufferization;
    bufferization.bufferizeFunctionBoundaries = true;
    bufferization.setFunctionBoundaryTypeConversion(
        mlir::bufferization::LayoutMapOption::FullyDynamicLayoutMap);
    bufferization.unknownTypeConverterFn =
        [](mlir::Value value, mlir::Attribute memorySpace,
           const mlir::bufferization::BufferizationOptions &) {
          return mlir::bufferization::getMemRefTypeWithStaticIdentityLayout(
              llvm::cast<mlir::TensorType>(value.getType()), memorySpace);
        };
    // The globals of tensor constants, in program order: one-shot
    // bufferization creates them in its order of functions, which is a
    // pointer-hash order in MLIR 19 (output that changed between runs).
    ConstantGlobalsOptions globals;
    globals.alignment = bufferization.bufferAlignment;
    pm.addPass(createConstantGlobals(globals));
    pm.addPass(mlir::bufferization::createOneShotBufferizePass(bufferization));
    pm.addPass(mlir::bufferization::createDropEquivalentBufferResultsPass());
    pm.addPass(mlir::createCanonicalizerPass());
    // A result with merged dims is written through a split view of its
    // output, not into a temporary copied there (before deallocation: the
    // temporary then has no dealloc yet).
    pm.addPass(createMergedOutputsInPlace());
    mlir::bufferization::buildBufferDeallocationPipeline(
        pm, mlir::bufferization::BufferDeallocationPipelineOptions());
    // MLIR frees each buffer at the end of its block; each temporary is
    // freed after its last use instead, so that a step holds its live
    // tensors, not all of them (docs/lowering.md, "Memory model").
    pm.addPass(createEarlyDealloc());
  }
  // Contractions become packed, register-tiled micro-kernels; everything
  // else loops whose outermost parallel loop is spread over the cores.
  TileContractionsOptions tiles;
  const ContractionTiles &t = options.tiles;
  // The vector width and caches of the CPU compiled for: the host's (the
  // pass's defaults) or, for a named CPU, its width and the common caches.
  auto target = resolveCPU(options.target);
  if (!target)
    llvm::report_fatal_error(llvm::Twine("unresolved --cpu reached the "
                                         "pipeline: ") +
                             target.error().message);
  if (!target->host) {
    tiles.vectorBits = target->vectorBits;
    HostCaches caches = commonCaches();
    tiles.l1Bytes = caches.l1d.bytes;
    tiles.l1Ways = caches.l1d.ways;
    tiles.l2Bytes = caches.l2.bytes;
    // Per thread, as for an L3 shared by 8 cores.
    tiles.l3Bytes = caches.l3.bytes / 8;
  }
  // --tiles overrides the target's vector width and the pass's defaults.
#define EIN_TILE_KNOB(Field, ...) tiles.Field = t.Field.value_or(tiles.Field);
#include "ein/Conversion/CPU/TileKnobs.def"
  tiles.epilogues = options.fusion;
  tiles.bf16Dot = target->bf16Dot;
  tiles.int8Dot = int8DotName(target->int8Dot);
  pm.addPass(createTileContractions(tiles));
  // Float max/min reductions on integer keys, which vectorize.
  pm.addPass(createMinMaxReductions());
  pm.addPass(createTileReductions());
  pm.addPass(createCopiesToLinalg());
  // After the copies are linalg ops too (bufferization copies inside a
  // fused tile), before the other ops become affine loops; the transposes
  // left are the ones outside tiles.
  pm.addPass(createParallelTiles());
  TileTransposesOptions transposes;
  transposes.vectorBits = target->host ? 0 : target->vectorBits;
  pm.addPass(createTileTransposes(transposes));
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::createConvertLinalgToAffineLoopsPass());
  // MLIR 19 has no factory taking AffineParallelizeOptions: the option is
  // set through the pass's own option parser.
  auto parallelize = mlir::affine::createAffineParallelizePass();
  if (mlir::failed(parallelize->initializeOptions(
          "max-nested=1", [](const llvm::Twine &) { return mlir::failure(); })))
    llvm::report_fatal_error("affine-parallelize rejects max-nested=1");
  pm.addNestedPass<mlir::func::FuncOp>(std::move(parallelize));
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createCanonicalizerPass());
  // Adjacent parallel nests over the same rows, each iteration reading only
  // what the same iteration of the one before wrote (a reduction's fill,
  // the reduction, a mean's division or a max's keys mapped back), become
  // one: one fork instead of three, and each row's value stays in cache.
  pm.addNestedPass<mlir::func::FuncOp>(createFuseParallelLoops());
  if (stage == CPUStage::Loops)
    return;
  pm.addPass(createExpandFp8());
  // exp, log, tanh, erf, ... on f32/f16/bf16 as vectorizable polynomials.
  pm.addPass(createApproximateMath());
  // A nest with little work runs on the calling thread: an OpenMP fork and
  // join costs microseconds.
  pm.addPass(createSerialSmallLoops());
  pm.addPass(mlir::createConvertSCFToOpenMPPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  // With genericAllocation, allocations call MLIR's generic allocation
  // functions, not malloc and free: the JIT resolves them to ein's caching
  // allocator (temporaries reused across calls), an object defines weak
  // ones over malloc (§4, §5 of docs/lowering.md).
  mlir::FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = options.genericAllocation;
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(mlir::createConvertSCFToCFPass());
  mlir::arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(mlir::arith::createArithExpandOpsPass(expand));
  pm.addPass(mlir::createConvertMathToFuncs());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  // math-to-libm calls libm once per lane of a vector op (f64 tanh, erf in
  // a contraction's epilogue), through vector.extract and vector.insert
  // that the conversion of vectors above has not seen.
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertOpenMPToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
}

void registerCPUPipeline(mlir::DialectRegistry &registry) {
  registry
      .insert<EinDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
              mlir::math::MathDialect, mlir::linalg::LinalgDialect,
              mlir::tensor::TensorDialect, mlir::memref::MemRefDialect,
              mlir::bufferization::BufferizationDialect, mlir::scf::SCFDialect,
              mlir::affine::AffineDialect, mlir::cf::ControlFlowDialect,
              mlir::LLVM::LLVMDialect, mlir::omp::OpenMPDialect,
              mlir::vector::VectorDialect, mlir::mesh::MeshDialect>();
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // ein-fuse-rows tiles and fuses linalg ops through TilingInterface.
  mlir::linalg::registerTilingInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerOpenMPDialectTranslation(registry);
  static bool passesRegistered = [] {
    registerEinConversionPasses();
    registerCPUPasses();
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
  if (auto target = resolveCPU(options.target); !target)
    return target.error();
  mlir::MLIRContext *context = module.getContext();
  mlir::DialectRegistry registry;
  registerCPUPipeline(registry);
  context->appendDialectRegistry(registry);
  context->loadAllAvailableDialects();
  std::string diagnostics;
  llvm::raw_string_ostream errors(diagnostics);
  // The message and its location, not a dump of the operation.
  context->printOpOnDiagnostic(false);
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    errors << diagnosticText(d);
    return mlir::success();
  });
  mlir::PassManager pm(context);
  buildCPUPipeline(pm, stage, options);
  if (mlir::failed(pm.run(module)))
    return Error::program("the CPU pipeline failed")
        .withContext(std::move(diagnostics));
  return {};
}

} // namespace ein
