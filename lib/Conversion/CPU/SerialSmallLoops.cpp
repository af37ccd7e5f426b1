// The ein-serial-small-loops pass: a parallel loop nest with little work
// runs on the calling thread, because forking and joining the OpenMP team
// costs microseconds, more than a few thousand iterations take. Work known
// at compile time decides there; work known only at run time decides by a
// run-time test in front of the nest.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <optional>

namespace ein {

#define GEN_PASS_DEF_SERIALSMALLLOOPS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace arith = mlir::arith;
namespace scf = mlir::scf;
using mlir::Value;

/// Marks a parallel loop this pass has looked at (kept parallel, or kept
/// behind a run-time test), so it is not looked at again.
constexpr const char *kChecked = "ein.work_checked";

/// The work of a loop nest: the iterations of its innermost bodies, summed
/// over the loops of each body. A constant when the trip counts are known at
/// compile time, else a value computed in front of the nest. Empty when
/// some trip count depends on the nest's own induction variables (tiles of
/// a remainder), which this pass does not bound.
class WorkEstimate {
public:
  WorkEstimate(mlir::Operation *nest, mlir::PatternRewriter &rewriter)
      : nest(nest), rewriter(rewriter) {}

  /// A value (or a constant) of the work of the loops of `block`: at
  /// least 1, the block itself.
  std::optional<mlir::OpFoldResult> blockWork(mlir::Block &block) {
    std::optional<mlir::OpFoldResult> sum;
    for (mlir::Operation &op : block) {
      std::optional<mlir::OpFoldResult> work;
      if (auto loop = llvm::dyn_cast<scf::ForOp>(op)) {
        auto trips = tripCount(loop.getLowerBound(), loop.getUpperBound(),
                               loop.getStep());
        auto inner = blockWork(*loop.getBody());
        if (!trips || !inner)
          return std::nullopt;
        work = mul(*trips, *inner);
      } else if (auto loop = llvm::dyn_cast<scf::ParallelOp>(op)) {
        work = loopWork(loop);
      } else if (op.getNumRegions() > 0) {
        // scf.if and other regions: the sum of their loops' work (at most
        // one region of an scf.if runs, so this bounds it from above).
        for (mlir::Region &region : op.getRegions())
          for (mlir::Block &inner : region) {
            auto w = blockWork(inner);
            if (!w)
              return std::nullopt;
            work = work ? add(*work, *w) : *w;
          }
      }
      if (op.getNumRegions() > 0 && !work)
        return std::nullopt;
      if (work)
        sum = sum ? add(*sum, *work) : *work;
    }
    if (sum)
      return *sum;
    // An innermost body: one iteration of scalar code, or the elements its
    // vector loads read (a register tile of a transpose moves 64), so that
    // work counts elements whether or not the loops are vectorized.
    int64_t lanes = 0;
    for (mlir::Operation &op : block)
      if (auto load = llvm::dyn_cast<mlir::vector::LoadOp>(op))
        lanes += load.getVectorType().getNumElements();
    return mlir::OpFoldResult(
        rewriter.getIndexAttr(std::max<int64_t>(lanes, 1)));
  }

  std::optional<mlir::OpFoldResult> loopWork(scf::ParallelOp loop) {
    auto work = blockWork(*loop.getBody());
    if (!work)
      return std::nullopt;
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto trips = tripCount(lb, ub, step);
      if (!trips)
        return std::nullopt;
      work = mul(*trips, *work);
    }
    return work;
  }

private:
  mlir::Operation *nest;
  mlir::PatternRewriter &rewriter;

  mlir::Location loc() const { return nest->getLoc(); }

  /// `v` in front of the nest: itself when defined outside it, a clone of
  /// its definition when that is pure (speculatable: no division that could
  /// trap where the nest would not have run it) and reads only values from
  /// outside, empty when it depends on the nest's induction variables.
  std::optional<Value> hoisted(Value v, unsigned depth = 0) {
    mlir::Operation *def = v.getDefiningOp();
    mlir::Block *block = v.getParentBlock();
    if (!nest->isAncestor(block->getParentOp()))
      return v;
    if (!def || depth > 8 || def->getNumRegions() != 0 ||
        def->getNumResults() != 1 ||
        !(mlir::isPure(def) || llvm::isa<mlir::memref::DimOp>(def)))
      return std::nullopt;
    mlir::IRMapping map;
    for (Value operand : def->getOperands()) {
      auto outside = hoisted(operand, depth + 1);
      if (!outside)
        return std::nullopt;
      map.map(operand, *outside);
    }
    return rewriter.clone(*def, map)->getResult(0);
  }

  std::optional<mlir::OpFoldResult> operand(Value v) {
    if (auto c = mlir::getConstantIntValue(v))
      return mlir::OpFoldResult(rewriter.getIndexAttr(*c));
    auto outside = hoisted(v);
    if (!outside)
      return std::nullopt;
    return mlir::OpFoldResult(*outside);
  }

  Value value(mlir::OpFoldResult r) {
    if (auto v = llvm::dyn_cast<Value>(r))
      return v;
    return rewriter.create<arith::ConstantIndexOp>(
        loc(),
        llvm::cast<mlir::IntegerAttr>(r.get<mlir::Attribute>()).getInt());
  }

  /// An upper bound of `v` in front of the nest: `v` itself when it can be
  /// hoisted; for a minimum (a remainder tile, `min(64, n - i)`), the bound
  /// of an operand; for a ceiling division by a positive constant, the
  /// division of the bound.
  std::optional<mlir::OpFoldResult> upper(Value v, unsigned depth = 0) {
    if (auto r = operand(v))
      return r;
    mlir::Operation *def = v.getDefiningOp();
    if (!def || depth > 8)
      return std::nullopt;
    if (llvm::isa<arith::MinSIOp, arith::MinUIOp>(def)) {
      auto a = upper(def->getOperand(0), depth + 1);
      auto b = upper(def->getOperand(1), depth + 1);
      // The tighter of two constants, else a constant, else either.
      if (a && b && mlir::getConstantIntValue(*a) &&
          mlir::getConstantIntValue(*b))
        return *mlir::getConstantIntValue(*a) <= *mlir::getConstantIntValue(*b)
                   ? a
                   : b;
      if (b && (!a || mlir::getConstantIntValue(*b)))
        return b;
      return a;
    }
    if (auto sub = llvm::dyn_cast<arith::SubIOp>(def)) {
      auto a = upper(sub.getLhs(), depth + 1);
      if (!a)
        return a;
      auto slack = subtractedSlack(sub.getRhs());
      if (!slack)
        return std::nullopt;
      return *slack ? add(*a, rewriter.getIndexAttr(*slack)) : *a;
    }
    if (auto div = llvm::dyn_cast<arith::CeilDivSIOp>(def)) {
      auto d = mlir::getConstantIntValue(div.getRhs());
      auto a = upper(div.getLhs(), depth + 1);
      if (!d || *d <= 0 || !a)
        return std::nullopt;
      if (auto c = mlir::getConstantIntValue(*a))
        return mlir::OpFoldResult(
            rewriter.getIndexAttr(*c > 0 ? (*c + *d - 1) / *d : 0));
      Value divisor = rewriter.create<arith::ConstantIndexOp>(loc(), *d);
      return mlir::OpFoldResult(
          rewriter.create<arith::CeilDivSIOp>(loc(), value(*a), divisor)
              .getResult());
    }
    return std::nullopt;
  }

  /// C when `v` is `r % C` with a constant C > 0, signed or unsigned (the
  /// whole-vector end of a packed panel): then -C < v < C.
  static std::optional<int64_t> remainderModulus(Value v) {
    mlir::Operation *rem = v.getDefiningOp();
    auto d = llvm::isa_and_nonnull<arith::RemSIOp, arith::RemUIOp>(rem)
                 ? mlir::getConstantIntValue(rem->getOperand(1))
                 : std::nullopt;
    if (!d || *d <= 0)
      return std::nullopt;
    return d;
  }

  /// How much `x - v` can exceed `x`: 0 when `v` is non-negative, C - 1
  /// when it is a remainder by C (above -C); nothing when not known. The
  /// one rule of upper() and spanBound() for a subtraction.
  static std::optional<int64_t> subtractedSlack(Value v) {
    if (nonNegative(v))
      return 0;
    if (auto d = remainderModulus(v))
      return *d - 1;
    return std::nullopt;
  }

  /// Whether `v` is non-negative in these nests: a constant >= 0, a size,
  /// an induction variable (indices are never negative), a remainder of one
  /// by a positive constant.
  static bool nonNegative(Value v) {
    if (auto c = mlir::getConstantIntValue(v))
      return *c >= 0;
    if (llvm::isa<mlir::BlockArgument>(v))
      return llvm::isa<scf::ForOp, scf::ParallelOp>(
          v.getParentBlock()->getParentOp());
    mlir::Operation *def = v.getDefiningOp();
    if (llvm::isa<mlir::memref::DimOp>(def))
      return true;
    if (llvm::isa<arith::RemSIOp, arith::RemUIOp>(def)) {
      auto d = mlir::getConstantIntValue(def->getOperand(1));
      return d && *d > 0 && nonNegative(def->getOperand(0));
    }
    if (llvm::isa<arith::MinSIOp, arith::MinUIOp, arith::AddIOp>(def))
      return nonNegative(def->getOperand(0)) && nonNegative(def->getOperand(1));
    return false;
  }

  /// A constant bound of `ub - lb` for the loops of a tile, whose bounds
  /// move with the nest's induction variables: `ub = min(lb + C, n)` (C),
  /// less a non-negative value or a remainder (the whole-vector end of a
  /// tile), or `lb = ub - r % C` (the remainder after whole vectors:
  /// C - 1).
  std::optional<int64_t> spanBound(Value ub, Value lb, unsigned depth = 0) {
    if (ub == lb)
      return 0;
    if (depth > 8)
      return std::nullopt;
    // ub - (ub - r % C) = r % C < C, whatever the sign of r.
    if (auto sub = lb.getDefiningOp<arith::SubIOp>(); sub && sub.getLhs() == ub)
      if (auto d = remainderModulus(sub.getRhs()))
        return *d - 1;
    mlir::Operation *def = ub.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto add = llvm::dyn_cast<arith::AddIOp>(def)) {
      for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())})
        if (a == lb)
          if (auto c = mlir::getConstantIntValue(b))
            return *c;
      return std::nullopt;
    }
    if (llvm::isa<arith::MinSIOp, arith::MinUIOp>(def)) {
      auto a = spanBound(def->getOperand(0), lb, depth + 1);
      auto b = spanBound(def->getOperand(1), lb, depth + 1);
      if (a && b)
        return std::min(*a, *b);
      return a ? a : b;
    }
    if (auto sub = llvm::dyn_cast<arith::SubIOp>(def)) {
      auto span = spanBound(sub.getLhs(), lb, depth + 1);
      if (!span)
        return span;
      if (auto slack = subtractedSlack(sub.getRhs()))
        return *span + *slack;
    }
    return std::nullopt;
  }

  /// max(0, ceil((ub - lb) / step)), or a bound of it from above: the
  /// upper bound's bound, a lower bound that depends on the nest taken as
  /// 0 and such a step as 1 (indices and steps of these nests are never
  /// negative). Only the choice of serial or parallel depends on it.
  /// For a tile's loop, the tighter of that and the tile's own bound
  /// (spanBound): a tile of a small tensor runs fewer iterations than a
  /// full one.
  std::optional<mlir::OpFoldResult> tripCount(Value lb, Value ub, Value step) {
    auto trips = boundTrips(lb, ub, step);
    auto cs = mlir::getConstantIntValue(step);
    auto span = spanBound(ub, lb);
    if (!span || !cs || *cs <= 0)
      return trips;
    int64_t tile = *span > 0 ? (*span + *cs - 1) / *cs : 0;
    if (!trips)
      return mlir::OpFoldResult(rewriter.getIndexAttr(tile));
    if (auto c = mlir::getConstantIntValue(*trips))
      return mlir::OpFoldResult(rewriter.getIndexAttr(std::min(*c, tile)));
    Value bound = rewriter.create<arith::ConstantIndexOp>(loc(), tile);
    return mlir::OpFoldResult(
        rewriter.create<arith::MinSIOp>(loc(), value(*trips), bound)
            .getResult());
  }

  /// tripCount's bound from the loop's bounds alone.
  std::optional<mlir::OpFoldResult> boundTrips(Value lb, Value ub, Value step) {
    auto l = operand(lb), u = upper(ub), s = operand(step);
    if (!u)
      return std::nullopt;
    if (!l)
      l = mlir::OpFoldResult(rewriter.getIndexAttr(0));
    if (!s)
      s = mlir::OpFoldResult(rewriter.getIndexAttr(1));
    auto cl = mlir::getConstantIntValue(*l), cu = mlir::getConstantIntValue(*u),
         cs = mlir::getConstantIntValue(*s);
    if (cl && cu && cs) {
      if (*cs <= 0)
        return std::nullopt;
      int64_t trips = *cu > *cl ? (*cu - *cl + *cs - 1) / *cs : 0;
      return mlir::OpFoldResult(rewriter.getIndexAttr(trips));
    }
    Value span = rewriter.create<arith::SubIOp>(loc(), value(*u), value(*l));
    Value trips = rewriter.create<arith::CeilDivSIOp>(loc(), span, value(*s));
    Value zero = rewriter.create<arith::ConstantIndexOp>(loc(), 0);
    return mlir::OpFoldResult(
        rewriter.create<arith::MaxSIOp>(loc(), trips, zero).getResult());
  }

  /// Products and sums saturate at 2^62: work beyond that is only "big".
  static constexpr int64_t kCap = int64_t(1) << 62;

  mlir::OpFoldResult mul(mlir::OpFoldResult a, mlir::OpFoldResult b) {
    auto ca = mlir::getConstantIntValue(a), cb = mlir::getConstantIntValue(b);
    if (ca && cb) {
      int64_t r;
      if (__builtin_mul_overflow(*ca, *cb, &r) || r > kCap)
        r = kCap;
      return rewriter.getIndexAttr(r);
    }
    if ((ca && *ca == 1) || (cb && *cb == 1))
      return ca ? b : a;
    // Trip counts are non-negative; the product of the real loops' trip
    // counts is iterations the code runs, far below 2^63.
    return rewriter.create<arith::MulIOp>(loc(), value(a), value(b))
        .getResult();
  }

  mlir::OpFoldResult add(mlir::OpFoldResult a, mlir::OpFoldResult b) {
    auto ca = mlir::getConstantIntValue(a), cb = mlir::getConstantIntValue(b);
    if (ca && cb)
      return rewriter.getIndexAttr(std::min(*ca + *cb, kCap));
    return rewriter.create<arith::AddIOp>(loc(), value(a), value(b))
        .getResult();
  }
};

/// The loops of `loop` as a nest of scf.for on the calling thread.
void emitSerial(scf::ParallelOp loop, mlir::PatternRewriter &rewriter) {
  mlir::IRMapping map;
  mlir::Location loc = loop.getLoc();
  for (auto [iv, lb, ub, step] :
       llvm::zip(loop.getInductionVars(), loop.getLowerBound(),
                 loop.getUpperBound(), loop.getStep())) {
    auto serial = rewriter.create<scf::ForOp>(loc, map.lookupOrDefault(lb),
                                              map.lookupOrDefault(ub),
                                              map.lookupOrDefault(step));
    map.map(iv, serial.getInductionVar());
    rewriter.setInsertionPointToStart(serial.getBody());
  }
  // The body without its scf.reduce terminator (no reductions here).
  for (mlir::Operation &op : loop.getBody()->without_terminator())
    rewriter.clone(op, map);
}

struct SerializeSmallParallel : mlir::OpRewritePattern<scf::ParallelOp> {
  SerializeSmallParallel(mlir::MLIRContext *context, int64_t minWork)
      : OpRewritePattern(context), minWork(minWork) {}

  mlir::LogicalResult
  matchAndRewrite(scf::ParallelOp loop,
                  mlir::PatternRewriter &rewriter) const override {
    // Only nests that are outermost (what becomes an OpenMP region) and
    // have no reductions (their results would need combining).
    if (loop->hasAttr(kChecked) || loop->getParentOfType<scf::ParallelOp>() ||
        loop.getNumResults() != 0)
      return mlir::failure();
    mlir::OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(loop);
    // Values the estimate computes are created in front of the loop; when
    // it fails they go unused (and the canonicalizer removes them).
    auto work = WorkEstimate(loop, rewriter).loopWork(loop);
    if (!work) {
      rewriter.modifyOpInPlace(
          loop, [&] { loop->setAttr(kChecked, rewriter.getUnitAttr()); });
      return mlir::success();
    }
    if (auto c = mlir::getConstantIntValue(*work)) {
      if (*c >= minWork) {
        rewriter.modifyOpInPlace(
            loop, [&] { loop->setAttr(kChecked, rewriter.getUnitAttr()); });
        return mlir::success();
      }
      emitSerial(loop, rewriter);
      rewriter.eraseOp(loop);
      return mlir::success();
    }
    Value threshold =
        rewriter.create<arith::ConstantIndexOp>(loop.getLoc(), minWork);
    Value big =
        rewriter.create<arith::CmpIOp>(loop.getLoc(), arith::CmpIPredicate::sge,
                                       llvm::cast<Value>(*work), threshold);
    auto branch = rewriter.create<scf::IfOp>(loop.getLoc(), big,
                                             /*withElseRegion=*/true);
    rewriter.setInsertionPointToStart(branch.elseBlock());
    emitSerial(loop, rewriter);
    rewriter.modifyOpInPlace(
        loop, [&] { loop->setAttr(kChecked, rewriter.getUnitAttr()); });
    rewriter.moveOpBefore(loop, branch.thenBlock()->getTerminator());
    return mlir::success();
  }

  int64_t minWork;
};

struct SerialSmallLoopsPass : impl::SerialSmallLoopsBase<SerialSmallLoopsPass> {
  using SerialSmallLoopsBase::SerialSmallLoopsBase;

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<SerializeSmallParallel>(&getContext(), minWork);
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(),
                                                        std::move(patterns))))
      return signalPassFailure();
    // The marks have done their work.
    getOperation()->walk(
        [](scf::ParallelOp loop) { loop->removeAttr(kChecked); });
  }
};

} // namespace

} // namespace ein
