// The ein-to-linalg pass: conversion target, type converter, signatures.
#include "Patterns.h"

#include "ein/Conversion/Passes.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace ein {

#define GEN_PASS_DEF_EINTOLINALG
#include "ein/Conversion/Passes.h.inc"

namespace lowering {
namespace {

/// Converts a function's signature to builtin tensors and reads its free
/// sizes at the top of the new entry block, before any op is lowered (the
/// conversion visits a function before its body): this is where the
/// function's `FunctionSizes` gets its names. What `populateFunctionOp-
/// InterfaceTypeConversionPattern` does, plus the reads, which need the
/// converted arguments and must precede every op pattern's use of them.
struct FuncSignatureLowering : EinPattern<mlir::func::FuncOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(mlir::func::FuncOp fn, OpAdaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    FunctionSizes &sizes = state.sizesOf(fn);
    // Converted here, with errors on the function, rather than by the type
    // converter, which cannot report.
    auto convert = [&](Type t) -> mlir::FailureOr<Type> {
      if (!llvm::isa<EinTensorType>(t))
        return t; // only in a declaration (a body mixing types is refused)
      auto rt = sizes.tensorType(t, fn);
      if (mlir::failed(rt))
        return mlir::failure();
      return Type(*rt);
    };
    llvm::SmallVector<Type> einParams(fn.getArgumentTypes());
    mlir::TypeConverter::SignatureConversion signature(einParams.size());
    for (auto [i, t] : llvm::enumerate(einParams)) {
      auto converted = convert(t);
      if (mlir::failed(converted))
        return mlir::failure();
      signature.addInputs(i, *converted);
    }
    llvm::SmallVector<Type> results;
    for (Type t : fn.getResultTypes()) {
      auto converted = convert(t);
      if (mlir::failed(converted))
        return mlir::failure();
      results.push_back(*converted);
    }
    if (!fn.isExternal() && mlir::failed(sizes.planReads(fn, einParams)))
      return mlir::failure();
    rewriter.modifyOpInPlace(fn, [&] {
      fn.setType(
          rewriter.getFunctionType(signature.getConvertedTypes(), results));
    });
    if (fn.isExternal())
      return mlir::success();
    mlir::Block *entry = rewriter.applySignatureConversion(
        &fn.getBody().front(), signature, getTypeConverter());
    rewriter.setInsertionPointToStart(entry);
    return sizes.readSizes(rewriter, fn, einParams, entry->getArguments());
  }
};

/// A cast between an ein tensor and a builtin one (MLIRGen's around a
/// sharded program's `mesh` collectives, which take builtin tensors): once
/// the ein tensor is converted, the builtin tensor itself (a tensor.cast
/// where one side has a static size the other has not).
struct BuiltinTensorCast
    : mlir::OpConversionPattern<mlir::UnrealizedConversionCastOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::UnrealizedConversionCastOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    if (op->getNumOperands() != 1 || op->getNumResults() != 1)
      return mlir::failure();
    Type to = getTypeConverter()->convertType(op.getResult(0).getType());
    Value from = adaptor.getOperands()[0];
    if (!to || !llvm::isa<mlir::RankedTensorType>(to) ||
        !llvm::isa<mlir::RankedTensorType>(from.getType()) ||
        !mlir::tensor::CastOp::areCastCompatible(from.getType(), to))
      return mlir::failure();
    if (from.getType() == to)
      rewriter.replaceOp(op, from);
    else
      rewriter.replaceOpWithNewOp<mlir::tensor::CastOp>(op, to, from);
    return mlir::success();
  }
};

/// Any other op over ein tensors (a ein op has its own pattern): an error
/// naming it, after the checks of its result types that every op gets.
struct NoLowering : mlir::ConversionPattern {
  NoLowering(const mlir::TypeConverter &converter, mlir::MLIRContext *context,
             LoweringState &state)
      : mlir::ConversionPattern(converter, mlir::Pattern::MatchAnyOpTypeTag(),
                                /*benefit=*/0, context),
        state(state) {}

  mlir::LogicalResult
  matchAndRewrite(mlir::Operation *op, llvm::ArrayRef<Value>,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    if (llvm::isa<mlir::func::FuncOp, mlir::func::ReturnOp, mlir::func::CallOp>(
            op) ||
        llvm::isa_and_nonnull<EinDialect>(op->getDialect()))
      return mlir::failure(); // their own patterns failed, and said why
    if (llvm::all_of(op->getResultTypes(), llvm::IsaPred<EinTensorType>)) {
      OpLowering l(rewriter, state.sizesOf(op));
      if (mlir::failed(l.resultShapes(op)))
        return mlir::failure();
    }
    op->emitOpError("has no lowering to linalg");
    return op->emitError("cannot lower this op to linalg");
  }

  LoweringState &state;
};

/// Only functions over ein tensors are lowered; one without any (already
/// lowered, or never ein) is left alone, and one that mixes them with other
/// types is an error (not a crash).
mlir::LogicalResult checkSignatures(mlir::ModuleOp module) {
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    auto types =
        llvm::concat<const Type>(fn.getArgumentTypes(), fn.getResultTypes());
    bool anyEin = llvm::any_of(types, llvm::IsaPred<EinTensorType>);
    bool hasEinOps = false;
    fn.walk([&](mlir::Operation *op) {
      hasEinOps |= llvm::isa_and_nonnull<EinDialect>(op->getDialect());
    });
    if (!anyEin && !hasEinOps)
      continue;
    for (Type t : types)
      if (!llvm::isa<EinTensorType>(t))
        return fn.emitError()
               << "ein-to-linalg lowers functions over !ein.tensor "
                  "values only; got a parameter or result of type "
               << t;
  }
  return mlir::success();
}

} // namespace
} // namespace lowering

namespace {

struct EinToLinalgPass : impl::EinToLinalgBase<EinToLinalgPass> {
  void runOnOperation() override {
    using namespace lowering;
    mlir::ModuleOp module = getOperation();
    mlir::MLIRContext *context = &getContext();
    if (mlir::failed(checkSignatures(module)))
      return signalPassFailure();
    LoweringState state(getModuleDims(module));

    // `!ein.tensor` to a ranked tensor, static where ein.dims binds a size;
    // every other type is already legal.
    mlir::TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([&state](EinTensorType t) -> std::optional<Type> {
      auto rt = convertTensorType(t, state.getEnv(), /*at=*/nullptr);
      if (mlir::failed(rt))
        return Type(); // a failure; the patterns have reported it
      return Type(*rt);
    });

    mlir::ConversionTarget target(*context);
    target.addIllegalDialect<EinDialect>();
    target.addLegalDialect<
        mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect,
        mlir::arith::ArithDialect, mlir::math::MathDialect>();
    // take's gather skips a table with an empty axis under an scf.if;
    // scatter_add is a loop nest of scf.for.
    target.addLegalDialect<mlir::scf::SCFDialect>();
    target.addLegalOp<mlir::ModuleOp>();
    target.addDynamicallyLegalOp<mlir::func::FuncOp>(
        [&](mlir::func::FuncOp fn) {
          return converter.isSignatureLegal(fn.getFunctionType());
        });
    // func.return, func.call and any other op: legal once no operand or
    // result is an ein tensor.
    target.markUnknownOpDynamicallyLegal(
        [&](mlir::Operation *op) { return converter.isLegal(op); });

    mlir::RewritePatternSet patterns(context);
    patterns.add<FuncSignatureLowering, NoLowering>(converter, context, state);
    patterns.add<BuiltinTensorCast>(converter, context);
    mlir::populateReturnOpTypeConversionPattern(patterns, converter);
    mlir::populateCallOpTypeConversionPattern(patterns, converter);
    // Every op of the registry, each by its own file's function: the ops'
    // patterns match different ops, so their order here does not matter.
#define EIN_OP(Kind, Name, OpClass)                                            \
  populate##Kind##Lowering(patterns, converter, state);
#include "ein/Sema/Ops.def"

    // A pattern that fails reports why on the op (the messages the lit tests
    // check); the conversion then adds "failed to legalize operation" on the
    // same op, which would only repeat it, so that one is dropped.
    bool reported = false;
    mlir::ScopedDiagnosticHandler dropRepeats(
        context, [&](mlir::Diagnostic &diag) {
          if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
            return mlir::failure(); // passed on
          if (reported && llvm::StringRef(diag.str())
                              .starts_with("failed to legalize operation"))
            return mlir::success(); // dropped
          reported = true;
          return mlir::failure();
        });
    // Partial: ops of other dialects in the module (and the module itself)
    // stay as they are.
    if (mlir::failed(
            mlir::applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    module->removeAttr("ein.dims");
    for (auto fn : module.getOps<mlir::func::FuncOp>())
      addIndexStatus(fn);
  }
};

} // namespace
} // namespace ein
