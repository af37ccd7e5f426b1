// The ein-approximate-math pass: exp, log, log1p, tanh and erf on f32 (and
// on f16/bf16, through f32) become branch-free polynomial code that LLVM
// vectorizes, instead of one libm call per element.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace ein {

#define GEN_PASS_DEF_APPROXIMATEMATH
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

using mlir::Type;
using mlir::Value;

/// The element type of a scalar or vector type.
Type elementOf(Type type) {
  if (auto vector = llvm::dyn_cast<mlir::VectorType>(type))
    return vector.getElementType();
  return type;
}

/// `type` (a scalar or a vector) with its element type replaced.
Type withElement(Type type, Type element) {
  if (auto vector = llvm::dyn_cast<mlir::VectorType>(type))
    return vector.clone(element);
  return element;
}

/// A float constant of `type`'s shape (splatted for vectors).
Value floatConstant(mlir::OpBuilder &b, mlir::Location loc, Type type,
                    double value) {
  mlir::TypedAttr scalar = b.getFloatAttr(elementOf(type), value);
  if (auto vector = llvm::dyn_cast<mlir::VectorType>(type))
    return b.create<mlir::arith::ConstantOp>(
        loc, mlir::DenseElementsAttr::get(vector, scalar));
  return b.create<mlir::arith::ConstantOp>(loc, scalar);
}

/// An op of the approximated set on f16 or bf16 computes in f32: the
/// operand is extended exactly, the result rounded once. (f32 carries more
/// than twice their precision, so the f32 approximation's few ulps vanish
/// in that rounding except next to a tie.)
template <typename Op> struct ThroughF32 : mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(Op op, mlir::PatternRewriter &rewriter) const override {
    Type type = op.getType();
    Type element = elementOf(type);
    if (!element.isF16() && !element.isBF16())
      return mlir::failure();
    mlir::Location loc = op.getLoc();
    Type wide = withElement(type, rewriter.getF32Type());
    Value x = rewriter.create<mlir::arith::ExtFOp>(loc, wide, op.getOperand());
    Value y = rewriter.create<Op>(loc, x, op.getFastmathAttr());
    rewriter.replaceOpWithNewOp<mlir::arith::TruncFOp>(op, type, y);
    return mlir::success();
  }
};

/// MLIR's f32 log and log2 clamp their argument to the smallest normal
/// number, so a subnormal argument would give log(FLT_MIN). A subnormal is
/// scaled by 2^23 into the normal range first and log(2^23) (or 23)
/// subtracted after: the result is then accurate down to the smallest
/// subnormal. The marker attribute keeps the pattern from matching twice.
template <typename Op> struct SubnormalLog : mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  static constexpr llvm::StringLiteral kDone = "ein.subnormal_scaled";
  mlir::LogicalResult
  matchAndRewrite(Op op, mlir::PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!elementOf(type).isF32() || op->hasAttr(kDone))
      return mlir::failure();
    mlir::Location loc = op.getLoc();
    Value x = op.getOperand();
    Value smallestNormal = floatConstant(rewriter, loc, type, 0x1p-126);
    Value small = rewriter.create<mlir::arith::CmpFOp>(
        loc, mlir::arith::CmpFPredicate::OLT, x, smallestNormal);
    Value scaled = rewriter.create<mlir::arith::MulFOp>(
        loc, x, floatConstant(rewriter, loc, type, 0x1p23));
    Value argument =
        rewriter.create<mlir::arith::SelectOp>(loc, small, scaled, x);
    auto log = rewriter.create<Op>(loc, argument, op.getFastmathAttr());
    log->setAttr(kDone, rewriter.getUnitAttr());
    double shift = std::is_same_v<Op, mlir::math::Log2Op> ? 23.0 : 23.0 * M_LN2;
    Value unscaled = rewriter.create<mlir::arith::SubFOp>(
        loc, log, floatConstant(rewriter, loc, type, shift));
    rewriter.replaceOpWithNewOp<mlir::arith::SelectOp>(op, small, unscaled,
                                                       log);
    return mlir::success();
  }
};

/// MLIR's f32 exp flushes a result below the smallest normal number to
/// zero, and loses up to 5 ulps in its last binade before overflow. There
/// (x below log(2^-126), or above 88) it is computed as exp(x/2)^2: x/2 is
/// exact, exp(x/2) within 1 ulp, and the square rounds once, into the
/// subnormal range or to inf as the true value does (2.5 ulps at worst).
struct SubnormalExp : mlir::OpRewritePattern<mlir::math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;
  static constexpr llvm::StringLiteral kDone = "ein.subnormal_squared";
  mlir::LogicalResult
  matchAndRewrite(mlir::math::ExpOp op,
                  mlir::PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!elementOf(type).isF32() || op->hasAttr(kDone))
      return mlir::failure();
    namespace arith = mlir::arith;
    mlir::Location loc = op.getLoc();
    Value x = op.getOperand();
    // The float just above log(2^-126) = -87.336544...
    Value threshold = floatConstant(rewriter, loc, type, -87.33654022216797);
    Value small = rewriter.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT,
                                                 x, threshold);
    Value large = rewriter.create<arith::CmpFOp>(
        loc, arith::CmpFPredicate::OGT, x,
        floatConstant(rewriter, loc, type, 88.0));
    Value edge = rewriter.create<arith::OrIOp>(loc, small, large);
    // One polynomial, of x or x/2 (both exact), not both computed and one
    // selected: a vector of lanes costs one exp, whatever its mix.
    Value scale = rewriter.create<arith::SelectOp>(
        loc, edge, floatConstant(rewriter, loc, type, 0.5),
        floatConstant(rewriter, loc, type, 1.0));
    Value scaled = rewriter.create<arith::MulFOp>(loc, x, scale);
    auto root = rewriter.create<mlir::math::ExpOp>(loc, scaled);
    root->setAttr(kDone, rewriter.getUnitAttr());
    Value square = rewriter.create<arith::MulFOp>(loc, root, root);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, edge, square, root);
    return mlir::success();
  }
};

/// MLIR's f32 erf loses the sign of a zero: erf is odd, so the result takes
/// the sign of x (a NaN stays NaN).
struct SignedErf : mlir::OpRewritePattern<mlir::math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  static constexpr llvm::StringLiteral kDone = "ein.signed";
  mlir::LogicalResult
  matchAndRewrite(mlir::math::ErfOp op,
                  mlir::PatternRewriter &rewriter) const override {
    if (!elementOf(op.getType()).isF32() || op->hasAttr(kDone))
      return mlir::failure();
    auto erf = rewriter.create<mlir::math::ErfOp>(op.getLoc(), op.getOperand());
    erf->setAttr(kDone, rewriter.getUnitAttr());
    rewriter.replaceOpWithNewOp<mlir::math::CopySignOp>(op, erf,
                                                        op.getOperand());
    return mlir::success();
  }
};

/// f64 log1p: MLIR's math-to-llvm would lower it to log(1 + x), which
/// loses every digit for small x (softplus of large negative x is then 0).
/// Goldberg's formula instead: with u = 1 + x, log1p(x) = x when u == 1,
/// else log(u) * x / (u - 1), the rounding error of u cancelling in the
/// ratio (a few ulps; libm's log stays the one call); u = inf gives inf.
struct AccurateLog1p : mlir::OpRewritePattern<mlir::math::Log1pOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::math::Log1pOp op,
                  mlir::PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!elementOf(type).isF64())
      return mlir::failure();
    namespace arith = mlir::arith;
    mlir::Location loc = op.getLoc();
    Value x = op.getOperand();
    Value one = floatConstant(rewriter, loc, type, 1.0);
    Value u = rewriter.create<arith::AddFOp>(loc, one, x);
    Value log = rewriter.create<mlir::math::LogOp>(loc, u);
    Value ratio = rewriter.create<arith::DivFOp>(
        loc, x, rewriter.create<arith::SubFOp>(loc, u, one));
    Value scaled = rewriter.create<arith::MulFOp>(loc, log, ratio);
    Value exact =
        rewriter.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, u, one);
    Value inf = rewriter.create<arith::CmpFOp>(
        loc, arith::CmpFPredicate::OEQ, u,
        floatConstant(rewriter, loc, type, INFINITY));
    Value general = rewriter.create<arith::SelectOp>(loc, inf, log, scaled);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, exact, x, general);
    return mlir::success();
  }
};

struct ApproximateMathPass : impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    mlir::MLIRContext *context = &getContext();
    // Step 1: f16/bf16 through f32, and the subnormal scaling of log.
    {
      mlir::RewritePatternSet patterns(context);
      patterns
          .add<ThroughF32<mlir::math::ExpOp>, ThroughF32<mlir::math::LogOp>,
               ThroughF32<mlir::math::Log2Op>, ThroughF32<mlir::math::Log1pOp>,
               ThroughF32<mlir::math::ExpM1Op>, ThroughF32<mlir::math::TanhOp>,
               ThroughF32<mlir::math::ErfOp>, SubnormalLog<mlir::math::LogOp>,
               AccurateLog1p, SubnormalExp, SignedErf,
               SubnormalLog<mlir::math::Log2Op>>(context);
      if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(),
                                                          std::move(patterns))))
        return signalPassFailure();
    }
    // Step 2: MLIR's polynomial approximations, for the ops whose accuracy
    // test/run/math-accuracy.test measures. sin and cos are left out (their
    // range reduction in f32 loses every digit past |x| of a few hundred),
    // as are pow and f64 (no approximation: libm).
    mlir::RewritePatternSet all(context);
    mlir::populateMathPolynomialApproximationPatterns(all);
    static const llvm::StringRef kept[] = {
        "math.exp",   "math.expm1", "math.log", "math.log2",
        "math.log1p", "math.tanh",  "math.erf"};
    mlir::RewritePatternSet patterns(context);
    for (std::unique_ptr<mlir::RewritePattern> &pattern :
         all.getNativePatterns()) {
      std::optional<mlir::OperationName> root = pattern->getRootKind();
      if (root && llvm::is_contained(kept, root->getStringRef()))
        patterns.add(std::move(pattern));
    }
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(),
                                                        std::move(patterns))))
      return signalPassFailure();
    getOperation().walk([](mlir::Operation *op) {
      op->removeAttr(SubnormalLog<mlir::math::LogOp>::kDone);
      op->removeAttr(SubnormalExp::kDone);
      op->removeAttr(SignedErf::kDone);
    });
  }
};

} // namespace
} // namespace ein
