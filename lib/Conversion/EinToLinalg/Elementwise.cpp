// ein-to-linalg's patterns of the elementwise ops, casts and dropout.
#include "Patterns.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

namespace ein::lowering {

namespace {

/// Integer division that never traps (language.md §6): it truncates toward
/// zero, `x / 0` is 0 and `INT_MIN / -1` wraps to INT_MIN (numpy's results
/// for these two in `//`). Selects around a safe divisor, no branch, so the
/// loop still vectorizes; a constant divisor folds the selects away.
Value nonTrappingDivSI(OpBuilder &b, Location loc, Value x, Value y) {
  Type t = x.getType();
  unsigned width = t.getIntOrFloatBitWidth();
  auto constant = [&](const llvm::APInt &v) -> Value {
    return b.create<mlir::arith::ConstantOp>(loc, b.getIntegerAttr(t, v));
  };
  auto eq = [&](Value a, Value c) -> Value {
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::eq, a,
                                         c);
  };
  // One statement each: the IR's order must not depend on the order in
  // which a compiler evaluates arguments.
  Value zero = constant(llvm::APInt(width, 0));
  Value one = constant(llvm::APInt(width, 1));
  Value minusOne = constant(llvm::APInt::getAllOnes(width));
  Value minimum = constant(llvm::APInt::getSignedMinValue(width));
  Value byZero = eq(y, zero);
  Value xIsMinimum = eq(x, minimum);
  Value yIsMinusOne = eq(y, minusOne);
  Value overflows = b.create<mlir::arith::AndIOp>(loc, xIsMinimum, yIsMinusOne);
  Value unsafe = b.create<mlir::arith::OrIOp>(loc, byZero, overflows);
  // INT_MIN / 1 is INT_MIN: the wrapped quotient.
  Value divisor = b.create<mlir::arith::SelectOp>(loc, unsafe, one, y);
  Value quotient = b.create<mlir::arith::DivSIOp>(loc, x, divisor);
  return b.create<mlir::arith::SelectOp>(loc, byZero, zero, quotient);
}

/// Integer power that never traps: a negative exponent gives 1 / x**|y| in
/// ein's integer division (1 for x = 1, +-1 for x = -1, 0 otherwise, x = 0
/// included). math.ipowi computes the same except that it divides by zero
/// on purpose for 0 ** negative; a base of 2 stands in for 0 there.
Value nonTrappingIPowI(OpBuilder &b, Location loc, Value x, Value y) {
  Type t = x.getType();
  unsigned width = t.getIntOrFloatBitWidth();
  Value zero = b.create<mlir::arith::ConstantOp>(
      loc, b.getIntegerAttr(t, llvm::APInt(width, 0)));
  Value two = b.create<mlir::arith::ConstantOp>(
      loc, b.getIntegerAttr(t, llvm::APInt(width, 2)));
  Value zeroBase = b.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::eq, x, zero);
  Value negative = b.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::slt, y, zero);
  Value unsafe = b.create<mlir::arith::AndIOp>(loc, zeroBase, negative);
  Value base = b.create<mlir::arith::SelectOp>(loc, unsafe, two, x);
  return b.create<mlir::math::IPowIOp>(loc, base, y);
}

/// Python's floor division and modulo on integers (numpy's `//` and `%`):
/// the quotient rounds toward minus infinity and the remainder has the
/// divisor's sign; a divisor of 0 gives 0 for both (numpy's results), and
/// nothing traps.
Value integerFloorDivMod(OpBuilder &b, Location loc, Value x, Value y,
                         bool wantMod) {
  using namespace mlir::arith;
  Type t = x.getType();
  Value zero = b.create<mlir::arith::ConstantOp>(loc, b.getIntegerAttr(t, 0));
  Value one = b.create<mlir::arith::ConstantOp>(loc, b.getIntegerAttr(t, 1));
  Value q = nonTrappingDivSI(b, loc, x, y);
  Value qy = b.create<MulIOp>(loc, q, y);
  Value r = b.create<SubIOp>(loc, x, qy);
  Value rNonZero = b.create<CmpIOp>(loc, CmpIPredicate::ne, r, zero);
  Value rNegative = b.create<CmpIOp>(loc, CmpIPredicate::slt, r, zero);
  Value yNegative = b.create<CmpIOp>(loc, CmpIPredicate::slt, y, zero);
  Value signsDiffer = b.create<XOrIOp>(loc, rNegative, yNegative);
  Value adjust = b.create<AndIOp>(loc, rNonZero, signsDiffer);
  Value byZero = b.create<CmpIOp>(loc, CmpIPredicate::eq, y, zero);
  if (wantMod) {
    Value rPlusY = b.create<AddIOp>(loc, r, y);
    Value mod = b.create<SelectOp>(loc, adjust, rPlusY, r);
    return b.create<SelectOp>(loc, byZero, zero, mod);
  }
  Value qMinusOne = b.create<SubIOp>(loc, q, one);
  Value floorQ = b.create<SelectOp>(loc, adjust, qMinusOne, q);
  return b.create<SelectOp>(loc, byZero, zero, floorQ);
}

/// numpy's float floor division and modulo (npy_divmod): from fmod, so
/// that `1 // 0.1` is 9 (not floor(1 / 0.1) = 10) and `a % b` has b's sign.
Value floatFloorDivMod(OpBuilder &b, Location loc, Value x, Value y,
                       bool wantMod) {
  using namespace mlir::arith;
  Type t = x.getType();
  Value zero = b.create<mlir::arith::ConstantOp>(loc, b.getFloatAttr(t, 0.0));
  Value one = b.create<mlir::arith::ConstantOp>(loc, b.getFloatAttr(t, 1.0));
  Value half = b.create<mlir::arith::ConstantOp>(loc, b.getFloatAttr(t, 0.5));
  Value mod = b.create<RemFOp>(loc, x, y);
  Value modNonZero = b.create<CmpFOp>(loc, CmpFPredicate::UNE, mod, zero);
  Value modNegative = b.create<CmpFOp>(loc, CmpFPredicate::OLT, mod, zero);
  Value yNegative = b.create<CmpFOp>(loc, CmpFPredicate::OLT, y, zero);
  Value signsDiffer = b.create<XOrIOp>(loc, modNegative, yNegative);
  Value adjust = b.create<AndIOp>(loc, modNonZero, signsDiffer);
  Value modPlusY = b.create<AddFOp>(loc, mod, y);
  Value adjustedMod = b.create<SelectOp>(loc, adjust, modPlusY, mod);
  if (wantMod) {
    // A zero remainder takes the divisor's sign.
    Value signedZero = b.create<mlir::math::CopySignOp>(loc, zero, y);
    return b.create<SelectOp>(loc, modNonZero, adjustedMod, signedZero);
  }
  Value xMinusMod = b.create<SubFOp>(loc, x, mod);
  Value div = b.create<DivFOp>(loc, xMinusMod, y);
  Value divMinusOne = b.create<SubFOp>(loc, div, one);
  div = b.create<SelectOp>(loc, adjust, divMinusOne, div);
  Value floorDiv = b.create<mlir::math::FloorOp>(loc, div);
  Value fraction = b.create<SubFOp>(loc, div, floorDiv);
  Value roundUp = b.create<CmpFOp>(loc, CmpFPredicate::OGT, fraction, half);
  Value floorPlusOne = b.create<AddFOp>(loc, floorDiv, one);
  floorDiv = b.create<SelectOp>(loc, roundUp, floorPlusOne, floorDiv);
  // A zero quotient keeps the sign of the true quotient; a divisor of 0
  // gives x / 0 (inf or nan), as numpy.
  Value quotient = b.create<DivFOp>(loc, x, y);
  Value signedZero = b.create<mlir::math::CopySignOp>(loc, zero, quotient);
  Value divNonZero = b.create<CmpFOp>(loc, CmpFPredicate::UNE, div, zero);
  Value result = b.create<SelectOp>(loc, divNonZero, floorDiv, signedZero);
  Value yZero = b.create<CmpFOp>(loc, CmpFPredicate::OEQ, y, zero);
  return b.create<SelectOp>(loc, yZero, quotient, result);
}

/// The scalar body of elementwise function `fn` over `args` (bools are the
/// storage i8, 0 or 1; floats of 16 bits or less arrive widened to f32);
/// the result in the type the table gives (a bool result as i8).
Value scalarFunction(OpBuilder &b, Location loc, ElementwiseFn fn,
                     llvm::ArrayRef<Value> args) {
  using namespace mlir::arith;
  namespace math = mlir::math;
  using F = ElementwiseFn;
  Value x = args[0];
  Value y = args.size() > 1 ? args[1] : Value();
  // The value type: the last operand's (where's first is the condition).
  Type t = args.back().getType();
  bool isF = llvm::isa<mlir::FloatType>(t);
  auto constant = [&](double v) -> Value {
    if (isF)
      return b.create<mlir::arith::ConstantOp>(loc, b.getFloatAttr(t, v));
    return b.create<mlir::arith::ConstantOp>(
        loc, b.getIntegerAttr(t, static_cast<int64_t>(v)));
  };
  auto toBool = [&](Value i1) -> Value {
    return b.create<ExtUIOp>(loc, b.getI8Type(), i1);
  };
  auto isTrue = [&](Value i8) -> Value {
    Value zero = b.create<mlir::arith::ConstantOp>(
        loc, b.getIntegerAttr(i8.getType(), 0));
    return b.create<CmpIOp>(loc, CmpIPredicate::ne, i8, zero);
  };
  auto compare = [&](CmpFPredicate f, CmpIPredicate i) -> Value {
    if (isF)
      return toBool(b.create<CmpFOp>(loc, f, x, y));
    return toBool(b.create<CmpIOp>(loc, i, x, y));
  };
  auto sigmoid = [&](Value v) -> Value {
    Value negated = b.create<NegFOp>(loc, v);
    Value e = b.create<math::ExpOp>(loc, negated);
    Value onePlus = b.create<AddFOp>(loc, constant(1.0), e);
    return b.create<DivFOp>(loc, constant(1.0), onePlus);
  };
  switch (fn) {
  case F::Add:
    return isF ? Value(b.create<AddFOp>(loc, x, y))
               : Value(b.create<AddIOp>(loc, x, y));
  case F::Sub:
    return isF ? Value(b.create<SubFOp>(loc, x, y))
               : Value(b.create<SubIOp>(loc, x, y));
  case F::Mul:
    return isF ? Value(b.create<MulFOp>(loc, x, y))
               : Value(b.create<MulIOp>(loc, x, y));
  case F::Div:
    return isF ? Value(b.create<DivFOp>(loc, x, y))
               : nonTrappingDivSI(b, loc, x, y);
  case F::Pow:
    return isF ? Value(b.create<math::PowFOp>(loc, x, y))
               : nonTrappingIPowI(b, loc, x, y);
  case F::FloorDiv:
  case F::Mod:
    return isF ? floatFloorDivMod(b, loc, x, y, fn == F::Mod)
               : integerFloorDivMod(b, loc, x, y, fn == F::Mod);
  case F::Neg:
    return isF ? Value(b.create<NegFOp>(loc, x))
               : Value(b.create<SubIOp>(loc, constant(0), x));
  case F::Minimum:
    return isF ? Value(b.create<MinimumFOp>(loc, x, y))
               : Value(b.create<MinSIOp>(loc, x, y));
  case F::Maximum:
    return isF ? Value(b.create<MaximumFOp>(loc, x, y))
               : Value(b.create<MaxSIOp>(loc, x, y));
  case F::Clip: {
    Value lo = isF ? Value(b.create<MaximumFOp>(loc, x, y))
                   : Value(b.create<MaxSIOp>(loc, x, y));
    return isF ? Value(b.create<MinimumFOp>(loc, lo, args[2]))
               : Value(b.create<MinSIOp>(loc, lo, args[2]));
  }
  case F::Abs:
    return isF ? Value(b.create<math::AbsFOp>(loc, x))
               : Value(b.create<math::AbsIOp>(loc, x));
  case F::Sign: {
    // -1, 0 or 1; a float NaN stays NaN (numpy).
    Value zero = constant(0);
    Value positive =
        isF ? Value(b.create<CmpFOp>(loc, CmpFPredicate::OGT, x, zero))
            : Value(b.create<CmpIOp>(loc, CmpIPredicate::sgt, x, zero));
    Value negative =
        isF ? Value(b.create<CmpFOp>(loc, CmpFPredicate::OLT, x, zero))
            : Value(b.create<CmpIOp>(loc, CmpIPredicate::slt, x, zero));
    Value rest = b.create<SelectOp>(loc, negative, constant(-1), x);
    return b.create<SelectOp>(loc, positive, constant(1), rest);
  }
  case F::Square:
    return isF ? Value(b.create<MulFOp>(loc, x, x))
               : Value(b.create<MulIOp>(loc, x, x));
  case F::Exp:
    return b.create<math::ExpOp>(loc, x);
  case F::Log:
    return b.create<math::LogOp>(loc, x);
  case F::Sqrt:
    return b.create<math::SqrtOp>(loc, x);
  case F::Rsqrt:
    return b.create<math::RsqrtOp>(loc, x);
  case F::Tanh:
    return b.create<math::TanhOp>(loc, x);
  case F::Relu:
    return isF ? Value(b.create<MaximumFOp>(loc, x, constant(0)))
               : Value(b.create<MaxSIOp>(loc, x, constant(0)));
  case F::Sigmoid:
    return sigmoid(x);
  case F::Silu:
    return b.create<MulFOp>(loc, x, sigmoid(x));
  case F::Gelu: {
    Value scaled = b.create<MulFOp>(loc, x, constant(M_SQRT1_2));
    Value e = b.create<math::ErfOp>(loc, scaled);
    Value onePlus = b.create<AddFOp>(loc, constant(1.0), e);
    Value half = b.create<MulFOp>(loc, constant(0.5), x);
    return b.create<MulFOp>(loc, half, onePlus);
  }
  case F::GeluTanh: {
    Value x2 = b.create<MulFOp>(loc, x, x);
    Value x3 = b.create<MulFOp>(loc, x2, x);
    Value cubic = b.create<MulFOp>(loc, constant(0.044715), x3);
    Value inner = b.create<AddFOp>(loc, x, cubic);
    Value scaled = b.create<MulFOp>(loc, constant(0.7978845608028654), inner);
    Value th = b.create<math::TanhOp>(loc, scaled);
    Value onePlus = b.create<AddFOp>(loc, constant(1.0), th);
    Value half = b.create<MulFOp>(loc, constant(0.5), x);
    return b.create<MulFOp>(loc, half, onePlus);
  }
  case F::Softplus: {
    // log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
    Value magnitude = b.create<math::AbsFOp>(loc, x);
    Value negated = b.create<NegFOp>(loc, magnitude);
    Value e = b.create<math::ExpOp>(loc, negated);
    Value l = b.create<math::Log1pOp>(loc, e);
    Value positive = b.create<MaximumFOp>(loc, x, constant(0));
    return b.create<AddFOp>(loc, positive, l);
  }
  case F::Sin:
    return b.create<math::SinOp>(loc, x);
  case F::Cos:
    return b.create<math::CosOp>(loc, x);
  case F::Erf:
    return b.create<math::ErfOp>(loc, x);
  case F::Floor:
    return b.create<math::FloorOp>(loc, x);
  case F::Ceil:
    return b.create<math::CeilOp>(loc, x);
  case F::Round:
    return b.create<math::RoundEvenOp>(loc, x);
  case F::Lt:
    return compare(CmpFPredicate::OLT, CmpIPredicate::slt);
  case F::Le:
    return compare(CmpFPredicate::OLE, CmpIPredicate::sle);
  case F::Gt:
    return compare(CmpFPredicate::OGT, CmpIPredicate::sgt);
  case F::Ge:
    return compare(CmpFPredicate::OGE, CmpIPredicate::sge);
  case F::Eq:
    return compare(CmpFPredicate::OEQ, CmpIPredicate::eq);
  case F::Ne: // NaN != NaN, as numpy
    return compare(CmpFPredicate::UNE, CmpIPredicate::ne);
  case F::And:
    return toBool(b.create<AndIOp>(loc, isTrue(x), isTrue(y)));
  case F::Or:
    return toBool(b.create<OrIOp>(loc, isTrue(x), isTrue(y)));
  case F::Not: {
    Value zero = b.create<mlir::arith::ConstantOp>(
        loc, b.getIntegerAttr(x.getType(), 0));
    return toBool(b.create<CmpIOp>(loc, CmpIPredicate::eq, x, zero));
  }
  case F::Where:
    return b.create<SelectOp>(loc, isTrue(x), y, args[2]);
  }
  return Value();
}

mlir::FailureOr<Value> lowerElementwise(OpLowering &l, ElementwiseOp op,
                                        llvm::ArrayRef<Value> inputs,
                                        const ResultShape &resultShape) {
  Location loc = op->getLoc();
  Type element = resultShape.type.getElementType();
  std::vector<std::string> outAxes;
  for (int64_t i = 0; i < resultShape.type.getRank(); ++i)
    outAxes.push_back("d" + std::to_string(i));
  // Each operand against the result: its dims' positions there.
  InferContext ctx = getInferContext(op);
  auto resultType = llvm::cast<EinTensorType>(op.getResult().getType());
  std::vector<Indexed> operands;
  for (auto [i, value] : llvm::enumerate(inputs)) {
    auto et = llvm::cast<EinTensorType>(op->getOperand(i).getType());
    BroadcastAlignment align;
    auto shape =
        inferBroadcast(ctx, resultType.getShape(), et.getShape(), &align);
    if (!shape) {
      op->emitError() << shape.error().message;
      return mlir::failure();
    }
    auto type = llvm::cast<RankedTensorType>(value.getType());
    Indexed in{value, {}};
    for (size_t d = 0; d < align.rhs.size(); ++d) {
      int at = align.rhs[d];
      // A dim of size 1 is read at index 0: it broadcasts.
      in.axes.push_back(at < 0 || type.getDimSize(d) == 1 ? "" : outAxes[at]);
    }
    operands.push_back(in);
  }
  Value init = l.emptyTensor(loc, resultShape.sizes, element);
  ElementwiseFn fn = op.getInfo().fn;
  // Floats of 16 bits or less compute in f32 and round once.
  return l.generic(
      loc, outAxes, operands, outAxes, init, {},
      [&](OpBuilder &nb, Location nl, mlir::ValueRange args) -> Value {
        OpBuilder::InsertionGuard g(l.b);
        l.b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        llvm::SmallVector<Value> wide;
        for (Value a : args.drop_back())
          wide.push_back(isLowPrecisionFloat(a.getType())
                             ? l.cast(nl, a, l.b.getF32Type())
                             : a);
        Value r = scalarFunction(l.b, nl, fn, wide);
        return r.getType() == element ? r : l.cast(nl, r, element);
      });
}

/// Every elementwise function: one generic over the result's dims.
struct ElementwiseLowering : EinPattern<ElementwiseOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(ElementwiseOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    llvm::SmallVector<Value> inputs(adaptor.getOperands());
    auto v = lowerElementwise(l, op, inputs, (*results)[0]);
    if (mlir::failed(v))
      return replaceOrReport(rewriter, op, mlir::failure());
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{*v});
  }
};

/// A conversion: one generic applying OpLowering::cast.
struct CastLowering : EinPattern<CastOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    // The ein types, which tell a bool (i1, stored as i8) from an i8.
    auto einElement = [](Value x) {
      return llvm::cast<EinTensorType>(x.getType()).getElementType();
    };
    Value v =
        l.castTensor(op.getLoc(), adaptor.getInput(), einElement(op.getInput()),
                     einElement(op.getResult()));
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{v});
  }
};

/// Philox4x64-10 (Random123's philox4x64_R with 10 rounds) of the counter
/// (i, 0, 0, 0) and the key (key, 0): its first output word. Each round
/// multiplies two counter words into 128 bits (arith.mului_extended); the
/// CUDA runtime's ein_philox4x64_10 is the same function.
Value philoxWord0(OpBuilder &b, Location loc, Value i, Value key) {
  Type i64 = b.getI64Type();
  auto c = [&](uint64_t v) -> Value {
    return b.create<mlir::arith::ConstantOp>(
        loc, b.getIntegerAttr(i64, llvm::APInt(64, v)));
  };
  Value m0 = c(0xD2E7470EE14C6C93ull), m1 = c(0xCA5A826395121157ull);
  Value w0 = c(0x9E3779B97F4A7C15ull), w1 = c(0xBB67AE8584CAA73Bull);
  Value zero = c(0);
  Value x0 = i, x1 = zero, x2 = zero, x3 = zero, k0 = key, k1 = zero;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = b.create<mlir::arith::AddIOp>(loc, k0, w0);
      k1 = b.create<mlir::arith::AddIOp>(loc, k1, w1);
    }
    auto p0 = b.create<mlir::arith::MulUIExtendedOp>(loc, m0, x0);
    auto p1 = b.create<mlir::arith::MulUIExtendedOp>(loc, m1, x2);
    Value y0 = b.create<mlir::arith::XOrIOp>(loc, p1.getHigh(), x1);
    y0 = b.create<mlir::arith::XOrIOp>(loc, y0, k0);
    Value y2 = b.create<mlir::arith::XOrIOp>(loc, p0.getHigh(), x3);
    y2 = b.create<mlir::arith::XOrIOp>(loc, y2, k1);
    x0 = y0;
    x1 = p1.getLow();
    x2 = y2;
    x3 = p0.getLow();
  }
  return x0;
}

/// dropout's threshold and scale from a run-time p (a rank-0 float
/// tensor), as the literal form computes them at compile time: in f64,
/// ceil(p * 2^53) (exact: a power of two and a ceil) and 1 / (1 - p)
/// rounded to `wide`, so a p of the same value gives the same bits. A p
/// outside [0, 1) (or NaN) is counted into the function's index status by
/// a generic marked kIndexCountAttr, and replaced by 0 here so that the
/// arithmetic stays defined while the call fails.
std::pair<Value, Value> runTimeRate(mlir::ConversionPatternRewriter &rewriter,
                                    Location loc, Value rate, Type wide) {
  Type f64 = rewriter.getF64Type();
  auto toF64 = [&](OpBuilder &b, Location l, Value v) {
    return v.getType() == f64
               ? v
               : b.create<mlir::arith::ExtFOp>(l, f64, v).getResult();
  };
  auto inRange = [&](OpBuilder &b, Location l, Value p) {
    Value zero = b.create<mlir::arith::ConstantOp>(l, b.getFloatAttr(f64, 0.0));
    Value one = b.create<mlir::arith::ConstantOp>(l, b.getFloatAttr(f64, 1.0));
    Value atLeast = b.create<mlir::arith::CmpFOp>(
        l, mlir::arith::CmpFPredicate::OGE, p, zero);
    Value below = b.create<mlir::arith::CmpFOp>(
        l, mlir::arith::CmpFPredicate::OLT, p, one);
    return b.create<mlir::arith::AndIOp>(l, atLeast, below).getResult();
  };
  // The count: 1 when p is outside [0, 1).
  mlir::TypedAttr zeroCount =
      rewriter.getZeroAttr(RankedTensorType::get({}, rewriter.getI64Type()));
  Value countInit = rewriter.create<mlir::arith::ConstantOp>(loc, zeroCount);
  llvm::SmallVector<mlir::AffineMap> maps(
      2, mlir::AffineMap::get(0, 0, rewriter.getContext()));
  auto count = rewriter.create<mlir::linalg::GenericOp>(
      loc, countInit.getType(), mlir::ValueRange{rate},
      mlir::ValueRange{countInit}, maps,
      llvm::ArrayRef<mlir::utils::IteratorType>{},
      [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
        Value ok = inRange(nb, nl, toF64(nb, nl, args[0]));
        Value bad = nb.create<mlir::arith::XOrIOp>(
            nl, ok,
            nb.create<mlir::arith::ConstantOp>(nl, nb.getBoolAttr(true)));
        Value inc = nb.create<mlir::arith::ExtUIOp>(nl, nb.getI64Type(), bad);
        nb.create<mlir::linalg::YieldOp>(
            nl, Value(nb.create<mlir::arith::AddIOp>(nl, args[1], inc)));
      });
  count->setAttr(kIndexCountAttr, rewriter.getUnitAttr());

  Value p = toF64(
      rewriter, loc,
      rewriter.create<mlir::tensor::ExtractOp>(loc, rate, mlir::ValueRange{}));
  Value zero = rewriter.create<mlir::arith::ConstantOp>(
      loc, rewriter.getF64FloatAttr(0));
  Value one = rewriter.create<mlir::arith::ConstantOp>(
      loc, rewriter.getF64FloatAttr(1));
  p = rewriter.create<mlir::arith::SelectOp>(loc, inRange(rewriter, loc, p), p,
                                             zero);
  Value two53 = rewriter.create<mlir::arith::ConstantOp>(
      loc, rewriter.getF64FloatAttr(std::ldexp(1.0, 53)));
  Value ceil = rewriter.create<mlir::math::CeilOp>(
      loc, rewriter.create<mlir::arith::MulFOp>(loc, p, two53));
  Value threshold =
      rewriter.create<mlir::arith::FPToUIOp>(loc, rewriter.getI64Type(), ceil);
  Value scale = rewriter.create<mlir::arith::DivFOp>(
      loc, one, rewriter.create<mlir::arith::SubFOp>(loc, one, p));
  if (wide != f64)
    scale = rewriter.create<mlir::arith::TruncFOp>(loc, wide, scale);
  return {threshold, scale};
}

/// dropout: one generic over x's dims; each element's C-order index
/// (linalg.index, row-major over the dims' run-time sizes) is Philox's
/// counter, the key read once outside. Kept iff (w0 >> 11) >= ceil(p *
/// 2^53), the exact integer form of (w0 >> 11) * 2^-53 >= p; a kept element
/// is x times 1 / (1 - p) rounded to x's dtype (to f32 for a narrower
/// float, computed there), a dropped one 0.
struct DropoutLowering : EinPattern<DropoutOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    Location loc = op.getLoc();
    const ResultShape &result = (*results)[0];
    Type element = result.type.getElementType();
    Value input = adaptor.getInput();
    int64_t rank = result.type.getRank();
    Type wide = element.isF64() ? element : Type(rewriter.getF32Type());
    Value scaleValue, thresholdValue;
    if (op.getP()) {
      double p = op.getP()->convertToDouble();
      uint64_t threshold = static_cast<uint64_t>(std::ceil(std::ldexp(p, 53)));
      double scale = 1.0 / (1.0 - p);
      scaleValue = rewriter.create<mlir::arith::ConstantOp>(
          loc, element.isF64()
                   ? rewriter.getFloatAttr(wide, scale)
                   : rewriter.getFloatAttr(wide, static_cast<float>(scale)));
      thresholdValue = rewriter.create<mlir::arith::ConstantOp>(
          loc, rewriter.getI64IntegerAttr(static_cast<int64_t>(threshold)));
    } else {
      std::tie(thresholdValue, scaleValue) =
          runTimeRate(rewriter, loc, adaptor.getRate(), wide);
    }
    Value shift = rewriter.create<mlir::arith::ConstantOp>(
        loc, rewriter.getI64IntegerAttr(11));
    Value zeroElement = rewriter.create<mlir::arith::ConstantOp>(
        loc, rewriter.getZeroAttr(element));
    Value key = rewriter.create<mlir::tensor::ExtractOp>(loc, adaptor.getKey(),
                                                         mlir::ValueRange{});
    llvm::SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(rewriter.create<mlir::tensor::DimOp>(loc, input, d));

    Value init = l.emptyTensor(loc, result.sizes, element);
    llvm::SmallVector<mlir::AffineMap> maps{
        rewriter.getMultiDimIdentityMap(rank),
        rewriter.getMultiDimIdentityMap(rank)};
    llvm::SmallVector<mlir::utils::IteratorType> iters(
        rank, mlir::utils::IteratorType::parallel);
    auto generic = rewriter.create<mlir::linalg::GenericOp>(
        loc, init.getType(), mlir::ValueRange{input}, mlir::ValueRange{init},
        maps, iters, [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
          Value linear = indexConstant(nb, nl, 0);
          for (int64_t d = 0; d < rank; ++d) {
            Value at = nb.create<mlir::linalg::IndexOp>(nl, d);
            Value scaled = nb.create<mlir::arith::MulIOp>(nl, linear, dims[d]);
            linear = nb.create<mlir::arith::AddIOp>(nl, scaled, at);
          }
          Value counter = nb.create<mlir::arith::IndexCastUIOp>(
              nl, nb.getI64Type(), linear);
          Value word = philoxWord0(nb, nl, counter, key);
          Value bits = nb.create<mlir::arith::ShRUIOp>(nl, word, shift);
          Value keep = nb.create<mlir::arith::CmpIOp>(
              nl, mlir::arith::CmpIPredicate::uge, bits, thresholdValue);
          Value x = args[0];
          if (wide != element)
            x = nb.create<mlir::arith::ExtFOp>(nl, wide, x);
          Value y = nb.create<mlir::arith::MulFOp>(nl, x, scaleValue);
          if (wide != element)
            y = nb.create<mlir::arith::TruncFOp>(nl, element, y);
          Value v = nb.create<mlir::arith::SelectOp>(nl, keep, y, zeroElement);
          nb.create<mlir::linalg::YieldOp>(nl, v);
        });
    Value v = generic.getResult(0);
    l.sizes.setKnownSizes(v, result.sizes);
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{v});
  }
};

} // namespace

void populateDropoutLowering(mlir::RewritePatternSet &patterns,
                             const mlir::TypeConverter &converter,
                             LoweringState &state) {
  patterns.add<DropoutLowering>(converter, patterns.getContext(), state);
}

void populateElementwiseLowering(mlir::RewritePatternSet &patterns,
                                 const mlir::TypeConverter &converter,
                                 LoweringState &state) {
  patterns.add<ElementwiseLowering>(converter, patterns.getContext(), state);
}

void populateCastLowering(mlir::RewritePatternSet &patterns,
                          const mlir::TypeConverter &converter,
                          LoweringState &state) {
  patterns.add<CastLowering>(converter, patterns.getContext(), state);
}

} // namespace ein::lowering
