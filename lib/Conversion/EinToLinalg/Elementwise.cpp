// ein-to-linalg's patterns of the elementwise ops, casts and constants.
#include "Patterns.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

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

/// The scalar body of elementwise op `op`: `x` (and `y` for a binary op)
/// to the result; `isF` when the operands are floats.
Value scalarOp(OpLowering &l, mlir::Operation *op, OpBuilder &nb, Location nl,
               Value x, Value y, bool isF, Type element) {
  return llvm::TypeSwitch<mlir::Operation *, Value>(op)
      .Case<AddOp>([&](auto) {
        return isF ? Value(nb.create<mlir::arith::AddFOp>(nl, x, y))
                   : Value(nb.create<mlir::arith::AddIOp>(nl, x, y));
      })
      .Case<SubOp>([&](auto) {
        return isF ? Value(nb.create<mlir::arith::SubFOp>(nl, x, y))
                   : Value(nb.create<mlir::arith::SubIOp>(nl, x, y));
      })
      .Case<MulOp>([&](auto) {
        return isF ? Value(nb.create<mlir::arith::MulFOp>(nl, x, y))
                   : Value(nb.create<mlir::arith::MulIOp>(nl, x, y));
      })
      .Case<DivOp>([&](auto) {
        return isF ? Value(nb.create<mlir::arith::DivFOp>(nl, x, y))
                   : nonTrappingDivSI(nb, nl, x, y);
      })
      .Case<PowOp>([&](auto) {
        return isF ? Value(nb.create<mlir::math::PowFOp>(nl, x, y))
                   : nonTrappingIPowI(nb, nl, x, y);
      })
      .Case<ExpOp>(
          [&](auto) { return Value(nb.create<mlir::math::ExpOp>(nl, x)); })
      .Case<LogOp>(
          [&](auto) { return Value(nb.create<mlir::math::LogOp>(nl, x)); })
      .Case<SqrtOp>(
          [&](auto) { return Value(nb.create<mlir::math::SqrtOp>(nl, x)); })
      .Case<RsqrtOp>(
          [&](auto) { return Value(nb.create<mlir::math::RsqrtOp>(nl, x)); })
      .Case<TanhOp>(
          [&](auto) { return Value(nb.create<mlir::math::TanhOp>(nl, x)); })
      .Case<NegOp>([&](auto) {
        if (isF)
          return Value(nb.create<mlir::arith::NegFOp>(nl, x));
        Value zero = nb.create<mlir::arith::ConstantOp>(
            nl, nb.getIntegerAttr(x.getType(), 0));
        return Value(nb.create<mlir::arith::SubIOp>(nl, zero, x));
      })
      .Case<ReluOp>([&](auto) {
        if (isF) {
          Value zero = nb.create<mlir::arith::ConstantOp>(
              nl, nb.getFloatAttr(x.getType(), 0.0));
          return Value(nb.create<mlir::arith::MaximumFOp>(nl, x, zero));
        }
        Value zero = nb.create<mlir::arith::ConstantOp>(
            nl, nb.getIntegerAttr(x.getType(), 0));
        return Value(nb.create<mlir::arith::MaxSIOp>(nl, x, zero));
      })
      .Case<CastOp>([&](auto) {
        OpBuilder::InsertionGuard g(l.b);
        l.b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        return l.cast(nl, x, element);
      })
      .Default([&](auto) { return Value(); }); // no pattern is registered
}

mlir::FailureOr<Value> lowerElementwise(OpLowering &l, mlir::Operation *op,
                                        llvm::ArrayRef<Value> inputs,
                                        const ResultShape &resultShape) {
  OpBuilder &b = l.b;
  Location loc = op->getLoc();
  Type element = resultShape.type.getElementType();
  std::vector<std::string> outAxes;
  for (int64_t i = 0; i < resultShape.type.getRank(); ++i)
    outAxes.push_back("d" + std::to_string(i));
  std::vector<Indexed> operands;
  if (inputs.size() == 2) {
    InferContext ctx = getInferContext(op);
    BroadcastAlignment align;
    auto lt = llvm::cast<EinTensorType>(op->getOperand(0).getType());
    auto rt = llvm::cast<EinTensorType>(op->getOperand(1).getType());
    auto shape = inferBroadcast(ctx, lt.getShape(), rt.getShape(), &align);
    if (!shape) {
      op->emitError() << shape.error().message;
      return mlir::failure();
    }
    for (auto [value, where] :
         {std::pair{inputs[0], &align.lhs}, std::pair{inputs[1], &align.rhs}}) {
      auto type = llvm::cast<RankedTensorType>(value.getType());
      Indexed in{value, {}};
      for (size_t d = 0; d < where->size(); ++d) {
        int at = (*where)[d];
        // A dim of size 1 is read at index 0: it broadcasts.
        in.axes.push_back(at < 0 || type.getDimSize(d) == 1 ? "" : outAxes[at]);
      }
      operands.push_back(in);
    }
  } else {
    operands.push_back({inputs[0], outAxes});
  }
  Value init = l.emptyTensor(loc, resultShape.sizes, element);
  bool isF = llvm::isa<mlir::FloatType>(
      llvm::cast<RankedTensorType>(inputs[0].getType()).getElementType());
  auto body = [&](OpBuilder &nb, Location nl, mlir::ValueRange args) -> Value {
    Value x = args[0];
    Value y = args.size() > 2 ? args[1] : Value();
    return scalarOp(l, op, nb, nl, x, y, isF, element);
  };
  // Low-precision floats compute in f32 and round once.
  bool widen = isF && isLowPrecisionFloat(element) && !llvm::isa<CastOp>(op);
  if (!widen)
    return l.generic(loc, outAxes, operands, outAxes, init, {}, body);
  return l.generic(loc, outAxes, operands, outAxes, init, {},
                   [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
                     OpBuilder::InsertionGuard g(b);
                     b.setInsertionPoint(nb.getInsertionBlock(),
                                         nb.getInsertionPoint());
                     llvm::SmallVector<Value> wide;
                     for (Value a : args)
                       wide.push_back(l.cast(nl, a, b.getF32Type()));
                     Value r = body(nb, nl, wide);
                     return l.cast(nl, r, element);
                   });
}

/// Every elementwise op: one generic over the result's dims.
template <typename OpT> struct ElementwiseLowering : EinPattern<OpT> {
  using EinPattern<OpT>::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, this->state.sizesOf(op));
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

/// A scalar constant: a splat of the result type.
struct ConstantLowering : EinPattern<ConstantOp> {
  using EinPattern::EinPattern;

  mlir::LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    OpLowering l(rewriter, state.sizesOf(op));
    auto results = l.resultShapes(op);
    if (mlir::failed(results))
      return mlir::failure();
    auto value = llvm::cast<mlir::TypedAttr>(op.getValue());
    Value c = rewriter.create<mlir::arith::ConstantOp>(
        op.getLoc(), mlir::DenseElementsAttr::get((*results)[0].type, value));
    return replaceOrReport(rewriter, op, llvm::SmallVector<Value>{c});
  }
};

} // namespace

void populateElementwisePatterns(mlir::RewritePatternSet &patterns,
                                 const mlir::TypeConverter &converter,
                                 LoweringState &state) {
  patterns.add<ElementwiseLowering<AddOp>, ElementwiseLowering<SubOp>,
               ElementwiseLowering<MulOp>, ElementwiseLowering<DivOp>,
               ElementwiseLowering<PowOp>, ElementwiseLowering<ExpOp>,
               ElementwiseLowering<LogOp>, ElementwiseLowering<SqrtOp>,
               ElementwiseLowering<RsqrtOp>, ElementwiseLowering<TanhOp>,
               ElementwiseLowering<NegOp>, ElementwiseLowering<ReluOp>,
               ElementwiseLowering<CastOp>, ConstantLowering>(
      converter, patterns.getContext(), state);
}

} // namespace ein::lowering
