// libFuzzer target: programs that check, with every size bound, go through
// MLIRGen, the verifier and the whole CPU pipeline to LLVM IR (nothing runs).
// Free sizes are bound to small values derived from the input (as `einc run`
// binds them from its inputs); `#! dim NAME=INT` and `#! tiles ...` lines
// act as `--dim` and `--tiles`.
//
// Oracles beyond "no crash, no sanitizer report": a program the checker
// accepts with all sizes bound must
//   shape-roundtrip have types that print and parse back (see FuzzFrontEnd);
//   verify      build as `ein` IR that verifies;
//   ir-roundtrip print as IR that parses back and prints the same;
//   lower       lower through the CPU pipeline to the LLVM dialect;
//   translate   translate to LLVM IR that the LLVM verifier accepts.
#include "FuzzSupport.h"

#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Sema/Checker.h"
#include "ein/Syntax/Parser.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

using namespace ein;

namespace {

/// Every size of every value is a number (no pack of unknown rank).
bool allSizesBound(const CheckedModule &module) {
  for (auto &fn : module.functions) {
    Bindings env = fn.ctx.env;
    env.insert(fn.ctx.inferred.begin(), fn.ctx.inferred.end());
    for (auto &value : fn.values) {
      if (value.isPackedShapes)
        continue;
      for (auto &dim : fn.ctx.expand(value.type.shape))
        if (dim.isPack() || !dim.size.evaluate(env))
          return false;
    }
  }
  return true;
}

/// Whether some dim binds to a value beyond int64 (a `dim` computed from
/// others, `dim n = a * b`).
bool boundBeyond64Bits(const CheckedModule &module) {
  for (auto &[name, value] : module.dims)
    if (value > Int(INT64_MAX))
      return true;
  for (auto &fn : module.functions)
    for (auto &[name, value] : fn.ctx.env)
      if (value > Int(INT64_MAX))
        return true;
  return false;
}

std::string print(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SourceFile file{"fuzz.ein", std::string(reinterpret_cast<const char *>(data), size)};
  if (file.text.find('\0') != std::string::npos)
    return -1; // einc refuses NUL bytes
  uint64_t seed = fuzz::hashBytes(file.text);
  fuzz::Directives directives = fuzz::parseDirectives(file.text);
  Module module;
  {
    DiagnosticEngine diags(file);
    module = parseModule(file, diags);
    if (diags.hadError())
      return 0;
  }
  CheckOptions options;
  options.dimOverrides = directives.dims;
  CheckedModule checked;
  {
    DiagnosticEngine diags(file);
    checked = checkModule(module, options, diags);
    if (diags.hadError())
      return 0;
  }
  // Free sizes (`_` and `...` included) get small values, as inputs would
  // give them in `einc run`.
  auto names = fuzz::freeSizeNames(checked);
  if (!names.empty()) {
    static const int kSmall[] = {1, 2, 3, 4, 5, 8};
    for (auto &name : names)
      options.entryDims[name] = kSmall[fuzz::hashBytes(name, seed) % 6];
    DiagnosticEngine diags(file);
    checked = checkModule(module, options, diags);
    if (diags.hadError())
      return 0;
  }
  if (!allSizesBound(checked))
    return 0;
  // A type that does not print and parse back cannot become a dialect type
  // (the dialect parses the printed shape); the front-end target reports it.
  if (!fuzz::checkShapesRoundTrip(checked))
    return 0;

  CPUOptions cpu;
  if (!directives.tiles.empty() && !parseContractionTiles(directives.tiles, cpu))
    cpu = CPUOptions();

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  auto verified = buildVerifiedEinModule(context, checked);
  if (!verified) {
    // Sizes beyond 64 bits check and cost, but compiled code cannot hold
    // them: the IR refuses them (docs/dialect.md) instead of truncating.
    if (verified.error().context.find("must be a non-negative 64-bit "
                                      "integer, got") != std::string::npos &&
        boundBeyond64Bits(checked))
      return 0;
    if (fuzz::ignored("verify"))
      return 0;
    fuzz::finding("verify", "a checked program does not verify:\n" +
                                verified.error().context);
  }
  mlir::OwningOpRef<mlir::ModuleOp> ir = std::move(*verified);
  if (!fuzz::ignored("ir-roundtrip")) {
    std::string text = print(*ir);
    mlir::ParserConfig config(&context);
    auto again = mlir::parseSourceString<mlir::ModuleOp>(text, config);
    if (!again)
      fuzz::finding("ir-roundtrip", "the printed ein IR does not parse back:\n" + text);
    std::string textAgain = print(*again);
    if (textAgain != text)
      fuzz::finding("ir-roundtrip", "the ein IR reprints differently:\n" + text +
                                        "\n---\n" + textAgain);
  }
  // As `einc build` does: a function named like a C library function
  // (free, malloc, pow) must not clash with the calls of the lowered code.
  for (auto f : ir->getOps<mlir::func::FuncOp>())
    f.setSymName(("ein_impl_" + f.getName()).str());
  if (auto lowered = lowerToStage(*ir, CPUStage::LLVM, cpu); !lowered) {
    if (fuzz::ignored("lower"))
      return 0;
    fuzz::finding("lower", "a checked, verified program does not lower:\n" +
                               lowered.error().context);
  }
  llvm::LLVMContext llvmContext;
  auto llvmModule = mlir::translateModuleToLLVMIR(*ir, llvmContext);
  if (!llvmModule) {
    if (fuzz::ignored("translate"))
      return 0;
    fuzz::finding("translate", "the lowered module does not translate to LLVM IR");
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*llvmModule, &os) && !fuzz::ignored("translate"))
    fuzz::finding("translate", "the LLVM IR does not verify:\n" + problems);
  return 0;
}
