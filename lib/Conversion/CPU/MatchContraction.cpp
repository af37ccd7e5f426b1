// Part of ein-tile-contractions: matches GEMM-shaped linalg.generic
// contractions on buffers and decides the roles of their loops (m, n, k and
// the outer loops).
#include "MatchContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace ein {

using mlir::Value;
namespace arith = mlir::arith;
namespace linalg = mlir::linalg;

namespace {

bool uses(mlir::AffineMap map, unsigned dim) {
  return map.isFunctionOfDim(dim);
}

/// `v` is block argument `arg` of the body, or its arith.extf to `acc`.
bool isOperand(Value v, mlir::BlockArgument arg) {
  if (v == arg)
    return true;
  auto ext = v.getDefiningOp<arith::ExtFOp>();
  return ext && ext.getIn() == arg;
}

/// Orders trip counts for the choice of m and k: a size known only at run
/// time counts as larger than any number.
bool larger(int64_t x, int64_t y) {
  if (x == kDynamic || y == kDynamic)
    return x == kDynamic && y != kDynamic;
  return x > y;
}

} // namespace

/// Matches a body `yield out + cast(in0) * cast(in1)` (either order).
bool isMultiplyAccumulate(linalg::GenericOp op) {
  mlir::Block &body = op.getRegion().front();
  if (body.getOperations().size() > 5)
    return false;
  auto yield = llvm::cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  auto in0 = body.getArgument(0), in1 = body.getArgument(1);
  return (isOperand(mul.getLhs(), in0) && isOperand(mul.getRhs(), in1)) ||
         (isOperand(mul.getLhs(), in1) && isOperand(mul.getRhs(), in0));
}

/// The strides of a strided memref type, kDynamic where only the run time
/// knows them; std::nullopt for a layout that is not strided.
std::optional<llvm::SmallVector<int64_t>> stridesOf(mlir::MemRefType type) {
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(mlir::getStridesAndOffset(type, strides, offset)))
    return std::nullopt;
  return strides;
}

/// The position of loop `dim` among `map`'s results (a projected
/// permutation that uses it).
unsigned axisOf(mlir::AffineMap map, unsigned dim) {
  return *map.getResultPosition(mlir::getAffineDimExpr(dim, map.getContext()));
}

/// Decides whether `op` is a contraction the micro-kernel handles, and the
/// roles of its loops; std::nullopt leaves it to the generic lowering.
std::optional<Contraction> matchContraction(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 0 || !isMultiplyAccumulate(op))
    return std::nullopt;
  Contraction c;
  c.op = op;
  c.a = op.getDpsInputs()[0];
  c.b = op.getDpsInputs()[1];
  c.c = op.getDpsInits()[0];
  auto maps = op.getIndexingMapsArray();
  c.mapA = maps[0];
  c.mapB = maps[1];
  c.mapC = maps[2];
  for (auto map : maps)
    if (!map.isProjectedPermutation() || map.getNumResults() == 0)
      return std::nullopt;
  auto typeC = llvm::dyn_cast<mlir::MemRefType>(c.c.getType());
  auto typeA = llvm::dyn_cast<mlir::MemRefType>(c.a.getType());
  auto typeB = llvm::dyn_cast<mlir::MemRefType>(c.b.getType());
  // Any sizes and any strided layout: the emitter reads sizes and strides at
  // run time where the types do not give them.
  if (!typeA || !typeB || !typeC || !stridesOf(typeA) || !stridesOf(typeB) ||
      !stridesOf(typeC))
    return std::nullopt;
  c.acc = llvm::dyn_cast<mlir::FloatType>(typeC.getElementType());
  if (!c.acc || (c.acc.getWidth() != 32 && c.acc.getWidth() != 64))
    return std::nullopt;
  for (auto t : {typeA, typeB}) {
    auto e = llvm::dyn_cast<mlir::FloatType>(t.getElementType());
    if (!e || e.getWidth() > c.acc.getWidth())
      return std::nullopt;
  }
  // Each loop's trip count from any operand that has it statically.
  c.ranges.assign(op.getNumLoops(), kDynamic);
  for (auto [value, map] :
       {std::pair{c.a, c.mapA}, {c.b, c.mapB}, {c.c, c.mapC}}) {
    auto type = llvm::cast<mlir::MemRefType>(value.getType());
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      if (!type.isDynamicDim(i))
        c.ranges[map.getDimPosition(i)] = type.getDimSize(i);
  }
  // An empty loop known at compile time is left to the generic lowering;
  // one known only at run time is checked there (KernelEmitter::emit).
  if (llvm::any_of(c.ranges, [](int64_t r) { return r != kDynamic && r < 1; }))
    return std::nullopt;

  // n: the output's contiguous axis; it must come from one operand only.
  c.n = innermostLoop(c.mapC);
  bool inA = uses(c.mapA, c.n), inB = uses(c.mapB, c.n);
  if (inA == inB)
    return std::nullopt;
  if (inA) {
    std::swap(c.a, c.b);
    std::swap(c.mapA, c.mapB);
  }
  auto iterators = op.getIteratorTypesArray();
  std::optional<unsigned> m, k;
  for (unsigned d = 0; d < c.ranges.size(); ++d) {
    if (d == c.n)
      continue;
    bool reduction = iterators[d] == mlir::utils::IteratorType::reduction;
    bool ina = uses(c.mapA, d), inb = uses(c.mapB, d);
    // The largest A-only parallel loop gives the register rows, the largest
    // shared reduction the inner sum; the rest are outer loops.
    if (!reduction && ina && !inb && (!m || larger(c.ranges[d], c.ranges[*m])))
      m = d;
    if (reduction && ina && inb && (!k || larger(c.ranges[d], c.ranges[*k])))
      k = d;
  }
  if (!m || !k)
    return std::nullopt;
  c.m = *m;
  c.k = *k;
  for (unsigned d = 0; d < c.ranges.size(); ++d) {
    if (d == c.m || d == c.n || d == c.k)
      continue;
    if (iterators[d] == mlir::utils::IteratorType::reduction)
      c.outerReduction.push_back(d);
    else
      c.outerParallel.push_back(d);
  }
  // A already in the accumulator type is read in place if its type gives
  // its k axis unit stride (emitBlocked).
  c.directCandidate =
      llvm::cast<mlir::MemRefType>(c.a.getType()).getElementType() == c.acc;
  // A zero fill of C right before the contraction: the kernel starts its
  // accumulators at zero instead of reading C.
  if (auto fill = llvm::dyn_cast_or_null<linalg::FillOp>(op->getPrevNode()))
    if (fill.getDpsInits()[0] == c.c)
      if (auto zero = fill.getDpsInputs()[0].getDefiningOp<arith::ConstantOp>())
        if (auto f = llvm::dyn_cast<mlir::FloatAttr>(zero.getValue()))
          if (f.getValue().isPosZero())
            c.zeroFill = fill;
  return c;
}

} // namespace ein
