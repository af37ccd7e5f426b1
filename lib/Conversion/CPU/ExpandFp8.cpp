// The ein-expand-fp8 pass: fp8 arithmetic runs in f32, fp8 <-> f32/f64
// conversions become integer bit manipulation that LLVM 19 can compile.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <optional>

namespace ein {

#define GEN_PASS_DEF_EXPANDFP8
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

using mlir::Type;
using mlir::Value;

/// The two fp8 encodings, described like lib/Runtime/FloatConvert.cpp's
/// formats so that compiled code and the .npy runtime round identically.
struct Fp8Format {
  unsigned expBits;
  unsigned manBits;
  int64_t bias;
  /// true: an all-ones exponent is inf/NaN (e5m2). false: the "FN"
  /// convention of e4m3fn (no inf; only S.1111.111 is NaN).
  bool ieee;
};

std::optional<Fp8Format> fp8Format(Type type) {
  Type element = mlir::getElementTypeOrSelf(type);
  if (llvm::isa<mlir::Float8E4M3FNType>(element))
    return Fp8Format{4, 3, 7, false};
  if (llvm::isa<mlir::Float8E5M2Type>(element))
    return Fp8Format{5, 2, 15, true};
  return std::nullopt;
}

bool isFp8(Type type) { return fp8Format(type).has_value(); }

/// `type` (a scalar or a vector) with its element type replaced.
Type withElement(Type type, Type element) {
  if (auto vector = llvm::dyn_cast<mlir::VectorType>(type))
    return vector.clone(element);
  return element;
}

/// Builds integer and float arithmetic of one shape (a scalar or a vector):
/// every constant is splatted to it.
class ShapedBuilder {
public:
  ShapedBuilder(mlir::OpBuilder &b, mlir::Location loc, Type shape)
      : b(b), loc(loc), shape(shape) {}

  Type typeOf(Type element) const { return withElement(shape, element); }
  Type intType(unsigned width) const { return typeOf(b.getIntegerType(width)); }

  Value intConst(unsigned width, uint64_t value) {
    Type element = b.getIntegerType(width);
    mlir::TypedAttr attr = b.getIntegerAttr(element, llvm::APInt(width, value));
    return constant(attr);
  }
  Value floatConst(Type element, double value) {
    return constant(b.getFloatAttr(element, value));
  }

  template <typename Op, typename... Args> Value op(Args &&...args) {
    return b.create<Op>(loc, std::forward<Args>(args)...);
  }
  Value cmp(mlir::arith::CmpIPredicate pred, Value x, Value y) {
    return op<mlir::arith::CmpIOp>(pred, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return op<mlir::arith::SelectOp>(c, x, y);
  }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
  Type shape;

  Value constant(mlir::TypedAttr scalar) {
    if (auto vector = llvm::dyn_cast<mlir::VectorType>(shape))
      return b.create<mlir::arith::ConstantOp>(
          loc,
          mlir::DenseElementsAttr::get(vector.clone(scalar.getType()), scalar));
    return b.create<mlir::arith::ConstantOp>(loc, scalar);
  }
};

/// fp8 `x` -> f32, exactly, through f16, which holds every fp8 value and
/// which x86 widens in one instruction (vcvtph2ps): e5m2 is the top byte of
/// an f16; e4m3fn's exponent and mantissa bits placed in an f16 read as the
/// value times 2^-8 (subnormals included), and its one NaN pattern is
/// selected apart. No f32 subnormal is ever formed, so code running with
/// denormals-are-zero still widens exactly. About 3 (e5m2) and 8 (e4m3fn)
/// vector instructions per conversion.
Value widenToF32(mlir::OpBuilder &b, mlir::Location loc, Value x,
                 const Fp8Format &f) {
  using namespace mlir::arith;
  ShapedBuilder s(b, loc, x.getType());
  Type f16 = s.typeOf(b.getF16Type());
  Type f32 = s.typeOf(b.getF32Type());
  Value bits = s.op<ExtUIOp>(s.intType(16), s.op<BitcastOp>(s.intType(8), x));
  if (f.ieee) // e5m2: sign, exponent and mantissa are f16's top byte
    return s.op<ExtFOp>(
        f32, s.op<BitcastOp>(f16, s.op<ShLIOp>(bits, s.intConst(16, 8))));
  const uint64_t magnitudeMask = (1u << (f.expBits + f.manBits)) - 1;
  Value magnitude = s.op<AndIOp>(bits, s.intConst(16, magnitudeMask));
  Value asF16 = s.op<BitcastOp>(
      f16, s.op<ShLIOp>(magnitude, s.intConst(16, 10 - f.manBits)));
  // f16's bias is 15; scale by 2^(15 - bias), exact in f32.
  Value value = s.op<MulFOp>(
      s.op<ExtFOp>(f32, asF16),
      s.floatConst(b.getF32Type(),
                   std::ldexp(1.0, static_cast<int>(15 - f.bias))));
  Value isNaN =
      s.cmp(CmpIPredicate::eq, magnitude, s.intConst(16, magnitudeMask));
  Value valueBits = s.select(isNaN, s.intConst(32, 0x7FC00000),
                             s.op<BitcastOp>(s.intType(32), value));
  Value sign = s.op<ShLIOp>(
      s.op<ExtUIOp>(s.intType(32),
                    s.op<ShRUIOp>(bits, s.intConst(16, f.expBits + f.manBits))),
      s.intConst(32, 31));
  return s.op<BitcastOp>(f32, s.op<OrIOp>(sign, valueBits));
}

/// f32 or f64 `x` -> fp8, rounded to nearest even in one step (the runtime's
/// narrow(), generalised to an f64 source so f64 -> fp8 rounds only once).
Value narrowFromFloat(mlir::OpBuilder &b, mlir::Location loc, Value x,
                      Type fp8Type, const Fp8Format &f) {
  using namespace mlir::arith;
  ShapedBuilder s(b, loc, x.getType());
  const bool f64 = mlir::getElementTypeOrSelf(x.getType()).isF64();
  const unsigned w = f64 ? 64 : 32;         // source width
  const unsigned p = f64 ? 52 : 23;         // source mantissa bits
  const int64_t srcBias = f64 ? 1023 : 127; // source exponent bias
  const uint64_t srcExpMask = f64 ? 0x7FF : 0xFF;
  const uint64_t expMask = (1u << f.expBits) - 1;
  const uint64_t manMask = (1u << f.manBits) - 1;
  auto c = [&](uint64_t v) { return s.intConst(w, v); };

  Value bits = s.op<BitcastOp>(s.intType(w), x);
  Value sign =
      s.op<ShLIOp>(s.op<ShRUIOp>(bits, c(w - 1)), c(f.expBits + f.manBits));
  Value magnitude = s.op<AndIOp>(bits, c((uint64_t(1) << (w - 1)) - 1));
  Value exp = s.op<ShRUIOp>(magnitude, c(p));
  Value man = s.op<AndIOp>(magnitude, c((uint64_t(1) << p) - 1));
  Value isNaN = s.cmp(CmpIPredicate::ugt, magnitude, c(srcExpMask << p));

  // value = sig * 2^(max(exp, 1) - srcBias - p); te is the target's biased
  // exponent. Normal targets keep p - manBits fewer bits, and the implicit
  // one carries into the exponent field of ((te - 1) << manBits); below the
  // normal range the result is in units of the smallest subnormal.
  Value implicit =
      s.select(s.cmp(CmpIPredicate::ne, exp, c(0)), c(uint64_t(1) << p), c(0));
  Value sig = s.op<OrIOp>(man, implicit);
  Value te = s.op<AddIOp>(s.op<MaxUIOp>(exp, c(1)),
                          c(static_cast<uint64_t>(f.bias - srcBias)));
  Value isNormal = s.cmp(CmpIPredicate::sgt, te, c(0));
  Value base = s.select(
      isNormal, s.op<ShLIOp>(s.op<SubIOp>(te, c(1)), c(f.manBits)), c(0));
  Value extra = s.select(isNormal, c(0), s.op<SubIOp>(c(1), te));
  // Past p + 2 every sig (< 2^(p+1)) is below half an ulp: the result is 0;
  // the clamp keeps the shifts inside the integer's width.
  Value shift = s.op<MinUIOp>(s.op<AddIOp>(extra, c(p - f.manBits)), c(p + 2));
  Value q = s.op<AddIOp>(base, s.op<ShRUIOp>(sig, shift));
  Value one = c(1);
  Value rem = s.op<AndIOp>(sig, s.op<SubIOp>(s.op<ShLIOp>(one, shift), one));
  Value half = s.op<ShLIOp>(one, s.op<SubIOp>(shift, one));
  Value odd = s.cmp(CmpIPredicate::ne, s.op<AndIOp>(q, one), c(0));
  Value roundUp =
      s.op<OrIOp>(s.cmp(CmpIPredicate::ugt, rem, half),
                  s.op<AndIOp>(s.cmp(CmpIPredicate::eq, rem, half), odd));
  q = s.op<AddIOp>(q, s.op<ExtUIOp>(s.intType(w), roundUp));

  uint64_t maxFinite, overflow, nan;
  if (f.ieee) {
    maxFinite = ((expMask - 1) << f.manBits) | manMask;
    overflow = expMask << f.manBits; // infinity
  } else {
    maxFinite = (expMask << f.manBits) | (manMask - 1);
    overflow = (expMask << f.manBits) | manMask; // NaN
  }
  q = s.select(s.cmp(CmpIPredicate::ugt, q, c(maxFinite)), c(overflow), q);
  Value nanCode;
  if (f.ieee) { // quiet or not, the payload's top bits, never zero
    Value payload = s.op<MaxUIOp>(s.op<ShRUIOp>(man, c(p - f.manBits)), c(1));
    nanCode = s.op<OrIOp>(c(expMask << f.manBits), payload);
  } else {
    nan = (expMask << f.manBits) | manMask;
    nanCode = c(nan);
  }
  q = s.select(isNaN, nanCode, q);
  Value code = s.op<TruncIOp>(s.intType(8), s.op<OrIOp>(sign, q));
  return s.op<BitcastOp>(fp8Type, code);
}

/// Runs `op` (an arith or math op touching fp8) in f32: fp8 operands are
/// extended, fp8 results computed in f32 and rounded once. For + - * / this
/// is exact rounding: f32 holds more than twice fp8's precision plus two.
void promoteToF32(mlir::Operation *op) {
  mlir::OpBuilder b(op);
  mlir::Location loc = op->getLoc();
  llvm::SmallVector<Value> operands;
  for (Value v : op->getOperands())
    operands.push_back(
        isFp8(v.getType())
            ? Value(b.create<mlir::arith::ExtFOp>(
                  loc, withElement(v.getType(), b.getF32Type()), v))
            : v);
  llvm::SmallVector<Type> types;
  for (Type t : op->getResultTypes())
    types.push_back(isFp8(t) ? withElement(t, b.getF32Type()) : t);
  mlir::OperationState state(loc, op->getName(), operands, types,
                             op->getAttrs());
  mlir::Operation *promoted = b.create(state);
  for (auto [old, now] : llvm::zip(op->getResults(), promoted->getResults())) {
    Value replacement = now;
    if (old.getType() != now.getType())
      replacement = b.create<mlir::arith::TruncFOp>(loc, old.getType(), now);
    old.replaceAllUsesWith(replacement);
  }
  op->erase();
}

/// arith.extf from fp8 / arith.truncf to fp8 as bit manipulation. Other
/// float types go through f32, which holds every fp8 value exactly.
void expandConversion(mlir::Operation *op) {
  mlir::OpBuilder b(op);
  mlir::Location loc = op->getLoc();
  Value in = op->getOperand(0);
  Type to = op->getResult(0).getType();
  Type f32 = withElement(in.getType(), b.getF32Type());
  Value out;
  if (auto f = fp8Format(in.getType())) { // extf fp8 -> wider
    out = widenToF32(b, loc, in, *f);
    Type toElement = mlir::getElementTypeOrSelf(to);
    if (toElement.getIntOrFloatBitWidth() > 32)
      out = b.create<mlir::arith::ExtFOp>(loc, to, out);
    else if (!toElement.isF32()) // f16, bf16: exact
      out = b.create<mlir::arith::TruncFOp>(loc, to, out);
  } else { // truncf wider -> fp8
    Type fromElement = mlir::getElementTypeOrSelf(in.getType());
    if (fromElement.getIntOrFloatBitWidth() < 32) // f16, bf16: exact
      in = b.create<mlir::arith::ExtFOp>(loc, f32, in);
    out = narrowFromFloat(b, loc, in, to, *fp8Format(to));
  }
  op->getResult(0).replaceAllUsesWith(out);
  op->erase();
}

/// An fp8 constant becomes its bit pattern, bitcast back to fp8.
void expandConstant(mlir::arith::ConstantOp op) {
  mlir::OpBuilder b(op);
  Type type = op.getType();
  Type bitsType = withElement(type, b.getIntegerType(8));
  mlir::TypedAttr bits;
  if (auto f = llvm::dyn_cast<mlir::FloatAttr>(op.getValue()))
    bits = b.getIntegerAttr(b.getIntegerType(8), f.getValue().bitcastToAPInt());
  else if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(op.getValue()))
    bits = dense.bitcast(b.getIntegerType(8));
  else
    return;
  Value code = b.create<mlir::arith::ConstantOp>(op.getLoc(), bitsType, bits);
  op.replaceAllUsesWith(
      b.create<mlir::arith::BitcastOp>(op.getLoc(), type, code).getResult());
  op.erase();
}

bool touchesFp8(mlir::Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isFp8) ||
         llvm::any_of(op->getResultTypes(), isFp8);
}

/// Ops that only move fp8 bits: LLVM sees them as i8.
bool movesBits(mlir::Operation *op) {
  return llvm::isa<mlir::arith::BitcastOp, mlir::arith::SelectOp,
                   mlir::arith::ConstantOp>(op);
}

struct ExpandFp8Pass : impl::ExpandFp8Base<ExpandFp8Pass> {
  void runOnOperation() override {
    auto isArithOrMath = [](mlir::Operation *op) {
      auto *dialect = op->getDialect();
      return dialect && (llvm::isa<mlir::arith::ArithDialect>(dialect) ||
                         llvm::isa<mlir::math::MathDialect>(dialect));
    };
    llvm::SmallVector<mlir::Operation *> promote, convert;
    llvm::SmallVector<mlir::arith::ConstantOp> constants;
    getOperation()->walk([&](mlir::Operation *op) {
      if (!isArithOrMath(op) || !touchesFp8(op))
        return;
      if (auto c = llvm::dyn_cast<mlir::arith::ConstantOp>(op))
        constants.push_back(c);
      else if (!movesBits(op) &&
               !llvm::isa<mlir::arith::ExtFOp, mlir::arith::TruncFOp>(op))
        promote.push_back(op);
    });
    for (mlir::Operation *op : promote)
      promoteToF32(op); // adds extf / truncf
    getOperation()->walk([&](mlir::Operation *op) {
      if (llvm::isa<mlir::arith::ExtFOp, mlir::arith::TruncFOp>(op) &&
          touchesFp8(op))
        convert.push_back(op);
    });
    for (mlir::Operation *op : convert)
      expandConversion(op);
    for (mlir::arith::ConstantOp op : constants)
      expandConstant(op);
  }
};

} // namespace
} // namespace ein
