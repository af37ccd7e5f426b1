// The ein-min-max-reductions pass: a float max or min reduction runs on
// integer keys ordered like the floats, an integer max/min that LLVM's loop
// vectorizer widens, with IEEE maximum/minimum's NaN and signed-zero rules.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace ein {

#define GEN_PASS_DEF_MINMAXREDUCTIONS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace arith = mlir::arith;
namespace linalg = mlir::linalg;
using mlir::Value;
using mlir::utils::IteratorType;

/// A reduction `acc = maximumf(acc, f(inputs))` (or minimumf): `f` is any
/// elementwise work on the inputs that does not read the accumulator (an
/// `extf` of the one input: f16 and bf16 reductions accumulate in f32; a
/// scale that ein-fuse-elementwise moved in: attention's `max(s * 0.125)`).
struct Candidate {
  linalg::GenericOp op;
  mlir::Operation *combine; // the max (min) the body yields
  bool isMax;
};

std::optional<Candidate> match(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || !op.hasPureBufferSemantics() ||
      op.getNumReductionLoops() == 0)
    return std::nullopt;
  auto out = llvm::dyn_cast<mlir::MemRefType>(op.getDpsInits()[0].getType());
  if (!out || !llvm::isa<mlir::FloatType>(out.getElementType()))
    return std::nullopt;
  unsigned width = out.getElementTypeBitWidth();
  if (width != 16 && width != 32 && width != 64)
    return std::nullopt;
  // The combine is the value yielded; nothing else reads the accumulator.
  mlir::Block &body = op.getRegion().front();
  Value acc = body.getArguments().back();
  mlir::Operation *combine =
      body.getTerminator()->getOperand(0).getDefiningOp();
  if (!combine || combine->getBlock() != &body)
    return std::nullopt;
  bool isMax = llvm::isa<arith::MaximumFOp>(combine);
  if (!isMax && !llvm::isa<arith::MinimumFOp>(combine))
    return std::nullopt;
  auto operands = combine->getOperands();
  if ((operands[0] == acc) == (operands[1] == acc))
    return std::nullopt;
  for (mlir::OpOperand &use : acc.getUses())
    if (use.getOwner() != combine)
      return std::nullopt;
  for (mlir::Operation &inner : body.without_terminator())
    if (inner.getNumRegions() != 0 || !mlir::isPure(&inner))
      return std::nullopt;
  return Candidate{op, combine, isMax};
}

/// Builds the key of a float, and back. `bits ^ ((bits >>s (w-1)) & MAX)`
/// leaves a positive float's bits and flips a negative one's magnitude
/// bits: as signed integers the keys are ordered like the floats, with
/// -0 < +0. A NaN of either sign becomes the integer that wins (MAX for a
/// max, MIN for a min), so a NaN anywhere is the result. The map is its own
/// inverse: MAX reads back as a quiet NaN, MIN as a negative quiet NaN.
struct Keys {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::IntegerType key;
  bool isMax;

  Value intConst(const llvm::APInt &v) {
    return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(key, v));
  }
  Value flip(Value bits) {
    unsigned w = key.getWidth();
    Value sign =
        b.create<arith::ShRSIOp>(loc, bits, intConst(llvm::APInt(w, w - 1)));
    Value mask = b.create<arith::AndIOp>(
        loc, sign, intConst(llvm::APInt::getSignedMaxValue(w)));
    return b.create<arith::XOrIOp>(loc, bits, mask);
  }
  Value toKey(Value f) {
    unsigned w = key.getWidth();
    Value bits = b.create<arith::BitcastOp>(loc, key, f);
    Value isNaN = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, f, f);
    Value winner = intConst(isMax ? llvm::APInt::getSignedMaxValue(w)
                                  : llvm::APInt::getSignedMinValue(w));
    return b.create<arith::SelectOp>(loc, isNaN, winner, flip(bits));
  }
  Value fromKey(Value k, mlir::Type floatType) {
    return b.create<arith::BitcastOp>(loc, floatType, flip(k));
  }
  Value combine(Value acc, Value k) {
    return isMax ? Value(b.create<arith::MaxSIOp>(loc, acc, k))
                 : Value(b.create<arith::MinSIOp>(loc, acc, k));
  }
};

/// The key of a constant float, folded at compile time.
llvm::APInt constantKey(const llvm::APFloat &f, bool isMax) {
  llvm::APInt bits = f.bitcastToAPInt();
  unsigned w = bits.getBitWidth();
  if (f.isNaN())
    return isMax ? llvm::APInt::getSignedMaxValue(w)
                 : llvm::APInt::getSignedMinValue(w);
  if (bits.isNegative())
    return bits ^ llvm::APInt::getSignedMaxValue(w);
  return bits;
}

void rewrite(Candidate c) {
  linalg::GenericOp op = c.op;
  mlir::OpBuilder b(op);
  mlir::Location loc = op.getLoc();
  Value out = op.getDpsInits()[0];
  auto fill = llvm::dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  mlir::FloatAttr fillValue;
  if (fill && fill.getDpsInits()[0] == out)
    if (auto cst = fill.getDpsInputs()[0].getDefiningOp<arith::ConstantOp>())
      fillValue = llvm::dyn_cast<mlir::FloatAttr>(cst.getValue());
  auto outType = llvm::cast<mlir::MemRefType>(out.getType());
  mlir::Type floatType = outType.getElementType();
  auto keyType = b.getIntegerType(outType.getElementTypeBitWidth());
  int64_t rank = outType.getRank();
  llvm::SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    if (outType.isDynamicDim(d))
      sizes.push_back(b.create<mlir::memref::DimOp>(loc, out, d));
  auto keysType = mlir::MemRefType::get(outType.getShape(), keyType);
  Value keys = b.create<mlir::memref::AllocOp>(loc, keysType, sizes);
  auto identity = b.getMultiDimIdentityMap(rank);
  llvm::SmallVector<IteratorType> parallel(rank, IteratorType::parallel);
  auto elementwise = [&](Value from, Value to, auto body) {
    b.create<linalg::GenericOp>(
        loc, mlir::TypeRange{}, mlir::ValueRange{from}, mlir::ValueRange{to},
        llvm::ArrayRef<mlir::AffineMap>{identity, identity}, parallel,
        [&](mlir::OpBuilder &nb, mlir::Location l, mlir::ValueRange args) {
          Keys k{nb, l, keyType, c.isMax};
          nb.create<linalg::YieldOp>(l, body(k, args[0]));
        });
  };
  // The accumulator's start: a fill of the output right before becomes a
  // fill of the keys (the output is overwritten whole at the end, so the
  // fill is dead), else the output's keys.
  if (fillValue) {
    Value start = b.create<arith::ConstantOp>(
        loc,
        b.getIntegerAttr(keyType, constantKey(fillValue.getValue(), c.isMax)));
    b.create<linalg::FillOp>(loc, start, keys);
    fill.erase();
  } else {
    elementwise(out, keys, [](Keys &k, Value f) { return k.toKey(f); });
  }
  // The reduction itself, over the same loops and maps: the body's work on
  // the inputs as it was, then the combine on keys.
  mlir::Block &body = op.getRegion().front();
  mlir::Operation *combine = c.combine;
  Value acc = body.getArguments().back();
  Value x = combine->getOperand(0) == acc ? combine->getOperand(1)
                                          : combine->getOperand(0);
  b.create<linalg::GenericOp>(
      loc, mlir::TypeRange{}, op.getDpsInputs(), mlir::ValueRange{keys},
      op.getIndexingMapsArray(), op.getIteratorTypesArray(),
      [&](mlir::OpBuilder &nb, mlir::Location l, mlir::ValueRange args) {
        mlir::IRMapping map;
        map.map(body.getArguments().drop_back(), args.drop_back());
        for (mlir::Operation &inner : body.without_terminator())
          if (&inner != combine)
            nb.clone(inner, map);
        Keys k{nb, l, keyType, c.isMax};
        nb.create<linalg::YieldOp>(
            l, k.combine(args.back(), k.toKey(map.lookupOrDefault(x))));
      });
  elementwise(keys, out,
              [&](Keys &k, Value key) { return k.fromKey(key, floatType); });
  b.create<mlir::memref::DeallocOp>(loc, keys);
  op.erase();
}

struct MinMaxReductionsPass : impl::MinMaxReductionsBase<MinMaxReductionsPass> {
  void runOnOperation() override {
    std::vector<Candidate> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto c = match(op))
        found.push_back(*c);
    });
    for (Candidate &c : found)
      rewrite(c);
  }
};

} // namespace
} // namespace ein
