// The ein-tile-transposes pass: copies that transpose (the output's
// contiguous axis is not the input's) run in cache-sized 2-D tiles, each made
// of small square tiles transposed in registers by vector shuffles. Sizes and
// strides may be known only at run time.
#include "IndexArith.h"
#include "RegisterTranspose.h"
#include "ein/Conversion/CPU/HostCPU.h"
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <optional>

namespace ein {

#define GEN_PASS_DEF_TILETRANSPOSES
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace arith = mlir::arith;
namespace linalg = mlir::linalg;
namespace memref = mlir::memref;
namespace scf = mlir::scf;
namespace vector = mlir::vector;
using mlir::Value;
using mlir::utils::IteratorType;
constexpr int64_t kDynamic = mlir::ShapedType::kDynamic;

/// A copy that transposes: loop `li` runs along the input's last axis, loop
/// `lo` along the output's, and they differ.
struct Transpose {
  linalg::GenericOp op;
  unsigned li, lo;
  int64_t lanes; // the side of the register tile
};

std::optional<llvm::SmallVector<int64_t>> stridesOf(mlir::MemRefType type) {
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(mlir::getStridesAndOffset(type, strides, offset)))
    return std::nullopt;
  return strides;
}

/// Element types moved as vectors: integers and the usual floats of 8 to 64
/// bits (not i1, whose vectors pack bits, and not fp8, which ein-expand-fp8
/// rewrites later element by element).
bool movable(mlir::Type type) {
  if (auto i = llvm::dyn_cast<mlir::IntegerType>(type))
    return llvm::is_contained({8u, 16u, 32u, 64u}, i.getWidth());
  return type.isF16() || type.isBF16() || type.isF32() || type.isF64();
}

std::optional<Transpose> match(linalg::GenericOp op, int64_t vectorBits) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() < 2)
    return std::nullopt;
  if (llvm::any_of(op.getIteratorTypesArray(),
                   [](IteratorType t) { return t != IteratorType::parallel; }))
    return std::nullopt;
  // The body only forwards the input element.
  mlir::Block *body = op.getBody();
  auto yield = llvm::dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || body->getOperations().size() != 1 ||
      yield.getNumOperands() != 1 ||
      yield.getOperand(0) != body->getArgument(0))
    return std::nullopt;
  auto in = llvm::dyn_cast<mlir::MemRefType>(op.getDpsInputs()[0].getType());
  auto out = llvm::dyn_cast<mlir::MemRefType>(op.getDpsInits()[0].getType());
  if (!in || !out || in.getElementType() != out.getElementType() ||
      !movable(in.getElementType()) || in.getRank() < 2)
    return std::nullopt;
  auto inStrides = stridesOf(in), outStrides = stridesOf(out);
  if (!inStrides || !outStrides)
    return std::nullopt;
  // Both last axes contiguous, or possibly so (checked at run time): a
  // static stride other than 1 there is some other layout, left alone.
  auto unitOrDynamic = [](int64_t s) { return s == 1 || s == kDynamic; };
  if (!unitOrDynamic(inStrides->back()) || !unitOrDynamic(outStrides->back()))
    return std::nullopt;
  mlir::AffineMap inMap = op.getIndexingMapsArray()[0];
  mlir::AffineMap outMap = op.getIndexingMapsArray()[1];
  if (!inMap.isProjectedPermutation() || !outMap.isPermutation())
    return std::nullopt;
  unsigned li = inMap.getDimPosition(inMap.getNumResults() - 1);
  unsigned lo = outMap.getDimPosition(outMap.getNumResults() - 1);
  auto lo_ = mlir::getAffineDimExpr(lo, op.getContext());
  if (li == lo || !inMap.getResultPosition(lo_))
    return std::nullopt;
  int64_t bits = in.getElementTypeBitWidth();
  int64_t lanes = std::clamp<int64_t>(vectorBits / bits, 2, 8);
  // Axes shorter than a register tile known at compile time: nothing to
  // transpose in registers (a size-1 axis is no transpose at all).
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if ((ranges[li] != kDynamic && ranges[li] < lanes) ||
      (ranges[lo] != kDynamic && ranges[lo] < lanes))
    return std::nullopt;
  return Transpose{op, li, lo, lanes};
}

/// Emits the tiled transpose of one copy.
class Emitter : IndexArith {
public:
  Emitter(Transpose t, int64_t block)
      : IndexArith(t.op.getOperation()), t(t), block(block) {}

  void emit() {
    auto ranges = llvm::cast<linalg::LinalgOp>(t.op.getOperation())
                      .createLoopRanges(b, loc);
    for (auto &r : ranges)
      sizes.push_back(mlir::getValueOrCreateConstantIndexOp(b, loc, r.size));
    Value in = t.op.getDpsInputs()[0], out = t.op.getDpsInits()[0];
    // The fast version needs both last axes contiguous: when a type does
    // not say so, the strides are checked at run time and the copy as it
    // was (strided loops) runs otherwise.
    llvm::SmallVector<Value> checks;
    for (Value mem : {in, out}) {
      auto type = llvm::cast<mlir::MemRefType>(mem.getType());
      if (stridesOf(type)->back() != kDynamic)
        continue;
      auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, mem);
      checks.push_back(b.create<arith::CmpIOp>(
          loc, arith::CmpIPredicate::eq, meta.getStrides().back(), cst(1)));
    }
    if (checks.empty()) {
      emitTiles(in, out);
      return;
    }
    Value all = checks[0];
    for (Value c : llvm::drop_begin(checks))
      all = b.create<arith::AndIOp>(loc, all, c);
    auto ifOp = b.create<scf::IfOp>(loc, all, /*withElseRegion=*/true);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    emitTiles(unitView(in), unitView(out));
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    b.clone(*t.op.getOperation());
  }

private:
  /// `mem` reinterpreted with a type that states a unit last stride (checked
  /// before), so vector accesses through it are contiguous. A
  /// reinterpret_cast, not a memref.cast, which canonicalization would fold
  /// away with the knowledge.
  Value unitView(Value mem) {
    auto type = llvm::cast<mlir::MemRefType>(mem.getType());
    llvm::SmallVector<int64_t> strides;
    int64_t offset;
    (void)mlir::getStridesAndOffset(type, strides, offset);
    if (strides.back() != kDynamic)
      return mem;
    strides.back() = 1;
    auto viewType = mlir::MemRefType::get(
        type.getShape(), type.getElementType(),
        mlir::StridedLayoutAttr::get(type.getContext(), offset, strides),
        type.getMemorySpace());
    auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, mem);
    auto mixed = [&](llvm::ArrayRef<int64_t> known, mlir::ValueRange values) {
      llvm::SmallVector<mlir::OpFoldResult> res;
      for (auto [k, v] : llvm::zip(known, values))
        res.push_back(k == kDynamic ? mlir::OpFoldResult(v)
                                    : b.getIndexAttr(k));
      return res;
    };
    return b.create<memref::ReinterpretCastOp>(
        loc, viewType, meta.getBaseBuffer(),
        mixed({offset}, meta.getOffset()).front(),
        mixed(type.getShape(), meta.getSizes()),
        mixed(strides, meta.getStrides()));
  }

  /// The indices of `map`'s operand at loop values `loops`.
  llvm::SmallVector<Value> indices(mlir::AffineMap map,
                                   llvm::ArrayRef<Value> loops) {
    llvm::SmallVector<Value> res;
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      res.push_back(loops[map.getDimPosition(r)]);
    return res;
  }

  /// Copies the elements of loops li in [i0, i1), lo in [o0, o1) one by one,
  /// lo innermost (the output's contiguous axis).
  void emitScalar(Value in, Value out, llvm::SmallVector<Value> loops, Value i0,
                  Value i1, Value o0, Value o1) {
    auto maps = t.op.getIndexingMapsArray();
    Value one = cst(1);
    b.create<scf::ForOp>(
        loc, i0, i1, one, mlir::ValueRange{},
        [&](mlir::OpBuilder &nb, mlir::Location, Value i, mlir::ValueRange) {
          Enter enter(b, nb);
          loops[t.li] = i;
          b.create<scf::ForOp>(
              loc, o0, o1, one, mlir::ValueRange{},
              [&](mlir::OpBuilder &nb, mlir::Location, Value o,
                  mlir::ValueRange) {
                Enter enter(b, nb);
                loops[t.lo] = o;
                Value x =
                    b.create<memref::LoadOp>(loc, in, indices(maps[0], loops));
                b.create<memref::StoreOp>(loc, x, out, indices(maps[1], loops));
                b.create<scf::YieldOp>(loc);
              });
          b.create<scf::YieldOp>(loc);
        });
  }

  /// One lanes x lanes tile: `lanes` vectors read along li (one per lo),
  /// transposed by log2(lanes) rounds of interleaving shuffles, written along
  /// lo (one per li).
  void emitRegisterTile(Value in, Value out, llvm::SmallVector<Value> loops,
                        Value i, Value o) {
    auto maps = t.op.getIndexingMapsArray();
    int64_t n = t.lanes;
    auto elem = llvm::cast<mlir::MemRefType>(in.getType()).getElementType();
    auto vecType = mlir::VectorType::get({n}, elem);
    llvm::SmallVector<Value> rows;
    loops[t.li] = i;
    for (int64_t r = 0; r < n; ++r) {
      loops[t.lo] = add(o, cst(r));
      rows.push_back(
          b.create<vector::LoadOp>(loc, vecType, in, indices(maps[0], loops)));
    }
    rows = transposeSquare(b, loc, rows);
    loops[t.lo] = o;
    for (int64_t r = 0; r < n; ++r) {
      loops[t.li] = add(i, cst(r));
      b.create<vector::StoreOp>(loc, rows[r], out, indices(maps[1], loops));
    }
  }

  /// The tiles: a parallel loop over every other loop and over blocks of
  /// `block` x `block` elements of (li, lo); in a block, register tiles with
  /// lo inner (each output row is written in order) and scalar edges.
  void emitTiles(Value in, Value out) {
    unsigned rank = sizes.size();
    llvm::SmallVector<Value> lbs(rank, cst(0)), ubs(sizes), steps(rank, cst(1));
    steps[t.li] = steps[t.lo] = cst(block);
    Value lanes = cst(t.lanes);
    b.create<scf::ParallelOp>(
        loc, lbs, ubs, steps,
        [&](mlir::OpBuilder &nb, mlir::Location, mlir::ValueRange ivs) {
          Enter enter(b, nb);
          llvm::SmallVector<Value> loops(ivs);
          Value i0 = ivs[t.li], o0 = ivs[t.lo];
          Value i1 = min(add(i0, cst(block)), sizes[t.li]);
          Value o1 = min(add(o0, cst(block)), sizes[t.lo]);
          // The ends of the whole register tiles.
          auto whole = [&](Value lo, Value hi) {
            Value n = sub(hi, lo);
            return sub(hi, b.createOrFold<arith::RemSIOp>(loc, n, lanes));
          };
          Value iw = whole(i0, i1), ow = whole(o0, o1);
          b.create<scf::ForOp>(loc, i0, iw, lanes, mlir::ValueRange{},
                               [&](mlir::OpBuilder &nb, mlir::Location, Value i,
                                   mlir::ValueRange) {
                                 Enter enter(b, nb);
                                 b.create<scf::ForOp>(
                                     loc, o0, ow, lanes, mlir::ValueRange{},
                                     [&](mlir::OpBuilder &nb, mlir::Location,
                                         Value o, mlir::ValueRange) {
                                       Enter enter(b, nb);
                                       emitRegisterTile(in, out, loops, i, o);
                                       b.create<scf::YieldOp>(loc);
                                     });
                                 b.create<scf::YieldOp>(loc);
                               });
          // Edges: the columns past the whole tiles, then the rows.
          emitScalar(in, out, loops, i0, iw, ow, o1);
          emitScalar(in, out, loops, iw, i1, o0, o1);
          b.create<scf::ReduceOp>(loc);
        });
  }

  /// Moves `b` into a body being built by `nb`, and back at the end.
  struct Enter {
    Enter(mlir::OpBuilder &b, mlir::OpBuilder &nb) : guard(b) {
      b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
    }
    mlir::OpBuilder::InsertionGuard guard;
  };

  Transpose t;
  int64_t block;
  llvm::SmallVector<Value> sizes;
};

struct TileTransposesPass : impl::TileTransposesBase<TileTransposesPass> {
  using TileTransposesBase::TileTransposesBase;

  void runOnOperation() override {
    int64_t bits = vectorBits > 0 ? int64_t(vectorBits) : hostVectorBits();
    std::vector<Transpose> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto t = match(op, bits))
        found.push_back(*t);
    });
    for (Transpose &t : found) {
      // A block a whole number of register tiles.
      int64_t side = std::max<int64_t>(t.lanes, block / t.lanes * t.lanes);
      Emitter(t, side).emit();
      t.op.erase();
    }
  }
};

} // namespace
} // namespace ein
