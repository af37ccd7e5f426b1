// The ein-tile-contractions pass: GEMM-shaped linalg.generic contractions on
// buffers become packed, cache-blocked loops around a register-tiled vector
// micro-kernel (the BLIS structure), parallel over independent blocks; sizes
// and strides may be known only at run time.
#include "ContractionEpilogue.h"
#include "GroupContractionAxes.h"
#include "MatchContraction.h"
#include "PairDot.h"
#include "ein/Conversion/CPU/HostCPU.h"
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace ein {

#define GEN_PASS_DEF_TILECONTRACTIONS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

using mlir::Location;
using mlir::OpBuilder;
using mlir::Type;
using mlir::Value;
namespace arith = mlir::arith;
namespace linalg = mlir::linalg;
namespace memref = mlir::memref;
namespace scf = mlir::scf;
namespace vector = mlir::vector;

/// Sizes of the blocking, in elements of the accumulator type.
struct Blocking {
  int64_t mr, nr,
      vl; // register tile rows, columns, vector length (nr % vl == 0)
  int64_t mc, nc, kc;  // cache blocks of packed A (mc x kc) and B (kc x nc)
  int64_t workItems;   // parallel blocks wanted (a few per core)
  int64_t minItemWork; // multiply-adds per block at least (0: no minimum)
  bool serial;         // inside a fused tile, which already runs on one core
  bool pairDot;        // bf16 k pairs on vdpbf16ps (PairDot.h); else FMAs
};

/// Multiply-adds per parallel work item at least (64^3): below that, the
/// fork and join of the threads costs more than the work it splits.
constexpr int64_t kMinItemWork = 64 * 64 * 64;

/// A memref type like `type` whose stride along `axis` is 1: the type of the
/// view that the fast version reads through once the run time has checked
/// that stride.
mlir::MemRefType unitStrideType(mlir::MemRefType type, unsigned axis) {
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  (void)mlir::getStridesAndOffset(type, strides, offset);
  strides[axis] = 1;
  return mlir::MemRefType::get(
      type.getShape(), type.getElementType(),
      mlir::StridedLayoutAttr::get(type.getContext(), offset, strides),
      type.getMemorySpace());
}

/// Emits the loop nest that replaces one contraction.
class KernelEmitter {
public:
  KernelEmitter(const Contraction &contraction, const Blocking &blocking,
                std::optional<Epilogue> epilogue)
      : c(contraction), blk(blocking), epi(epilogue), b(c.op.getOperation()),
        loc(c.op->getLoc()) {}

  void emit();

private:
  Contraction c;
  Blocking blk;
  std::optional<Epilogue> epi; // applied as the last block of the sum is stored
  OpBuilder b;
  Location loc;
  llvm::SmallVector<Value> size; // the trip count of every loop
  // Blocking for these sizes (emitBlocked): parallel items are `outer`
  // outer iterations times `chunks` chunks of `chunk` rows of m.
  Value outer, chunks, chunk, mc, nc, kc;
  // A read in place (`direct`) or packed; the contiguous tile for C when
  // its n has no unit stride (`scratch`; null when the type says it has).
  Value scratch;
  bool direct = false;

  Value cst(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  Value add(Value x, Value y) {
    return b.createOrFold<arith::AddIOp>(loc, x, y);
  }
  Value sub(Value x, Value y) {
    return b.createOrFold<arith::SubIOp>(loc, x, y);
  }
  Value mul(Value x, Value y) {
    return b.createOrFold<arith::MulIOp>(loc, x, y);
  }
  Value min(Value x, Value y) {
    return b.createOrFold<arith::MinSIOp>(loc, x, y);
  }
  Value max(Value x, Value y) {
    return b.createOrFold<arith::MaxSIOp>(loc, x, y);
  }
  Value ceilDiv(Value x, Value y) {
    return b.createOrFold<arith::CeilDivSIOp>(loc, x, y);
  }
  Value lt(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x, y);
  }
  Value zero(Type type) {
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(type, 0.0));
  }
  Value zero() { return zero(c.acc); }
  /// The type of the packed panels: bf16 for pair dot products, else the
  /// accumulator's.
  Type packedType() {
    return blk.pairDot ? Type(b.getBF16Type()) : Type(c.acc);
  }

  /// Indices of `map`'s operand for the loop values `iv` (one per loop).
  llvm::SmallVector<Value> indices(mlir::AffineMap map,
                                   llvm::ArrayRef<Value> iv) {
    llvm::SmallVector<Value> out;
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      out.push_back(iv[map.getDimPosition(i)]);
    return out;
  }

  /// scf.for from lb to ub by step; `body` gets the induction variable.
  void loop(Value lb, Value ub, Value step,
            llvm::function_ref<void(Value)> body) {
    auto f = b.create<scf::ForOp>(loc, lb, ub, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(f.getBody()->getTerminator());
    body(f.getInductionVar());
  }
  void loop(Value lb, Value ub, int64_t step,
            llvm::function_ref<void(Value)> body) {
    loop(lb, ub, cst(step), body);
  }

  llvm::SmallVector<Value>
  versions(Value mem, unsigned axis, mlir::TypeRange types,
           llvm::function_ref<llvm::SmallVector<Value>(Value)> unit,
           llvm::function_ref<llvm::SmallVector<Value>()> other);
  void emitBlocked();
  void emitNest(bool readDirect);
  Value allocPacked(int64_t lanes, Value panels);
  void pack(Value packed, Value source, mlir::AffineMap map,
            llvm::SmallVector<Value> iv, unsigned lanesDim, int64_t lanes,
            Value lanesLo, Value lanesCount, Value lanesEnd, Value kLo,
            Value kCount);
  void microKernel(llvm::SmallVector<Value> iv, Value ap, Value bp,
                   Value panelA, Value panelB, Value mLo, Value rows, Value nLo,
                   Value cols, Value kLo, Value kCount, Value startAtZero,
                   Value lastBlock);
  /// Where value `p` of k and `lane` of `panel` go in a packed buffer.
  llvm::SmallVector<Value> packedAt(Value panel, Value p, Value lane) {
    if (!blk.pairDot)
      return {panel, p, lane};
    Value half = b.createOrFold<arith::DivUIOp>(loc, p, cst(2));
    Value low = b.createOrFold<arith::RemUIOp>(loc, p, cst(2));
    return {panel, half, add(mul(lane, cst(2)), low)};
  }
  Value epilogueInput(mlir::OpOperand *input, llvm::SmallVector<Value> iv,
                      Value row, Value col, Value mask);
  void emitEmptyEpilogue();
};

/// Emits `unit(view)` for `mem` with a unit stride along `axis` and `other()`
/// for any other stride: one of them when the type says which, else both,
/// under an scf.if on the stride read at run time; there `view` is `mem`
/// reinterpreted with a type that states the unit stride, so the accesses
/// through it are known to be contiguous. A stride the type does not give is
/// never taken as 1 without that check. Both yield values of `types` (their
/// results, returned), or nothing.
llvm::SmallVector<Value> KernelEmitter::versions(
    Value mem, unsigned axis, mlir::TypeRange types,
    llvm::function_ref<llvm::SmallVector<Value>(Value)> unit,
    llvm::function_ref<llvm::SmallVector<Value>()> other) {
  auto type = llvm::cast<mlir::MemRefType>(mem.getType());
  int64_t stride = (*stridesOf(type))[axis];
  if (stride == 1)
    return unit(mem);
  if (stride != kDynamic)
    return other();
  auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, mem);
  Value isUnit = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                         meta.getStrides()[axis], cst(1));
  auto ifOp = b.create<scf::IfOp>(loc, types, isUnit, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  auto branch = [&](mlir::Block *block, auto body) {
    if (types.empty()) {
      b.setInsertionPoint(block->getTerminator());
      body();
    } else {
      b.setInsertionPointToStart(block);
      b.create<scf::YieldOp>(loc, body());
    }
  };
  // A reinterpret_cast, not a memref.cast: canonicalization folds casts
  // into their loads, and the type that says "contiguous" with them.
  auto mixed = [&](llvm::ArrayRef<int64_t> known, mlir::ValueRange values) {
    llvm::SmallVector<mlir::OpFoldResult> out;
    for (auto [k, v] : llvm::zip(known, values))
      out.push_back(k == kDynamic ? mlir::OpFoldResult(v) : b.getIndexAttr(k));
    return out;
  };
  branch(ifOp.thenBlock(), [&] {
    mlir::MemRefType viewType = unitStrideType(type, axis);
    llvm::SmallVector<int64_t> strides;
    int64_t offset;
    (void)mlir::getStridesAndOffset(viewType, strides, offset);
    return unit(b.create<memref::ReinterpretCastOp>(
        loc, viewType, meta.getBaseBuffer(),
        mixed({offset}, meta.getOffset()).front(),
        mixed(type.getShape(), meta.getSizes()),
        mixed(strides, meta.getStrides())));
  });
  branch(ifOp.elseBlock(), [&] { return other(); });
  return ifOp.getResults();
}

/// A 64-byte-aligned buffer of `panels` packed panels of `kc` x `lanes`
/// values (with pair dot products `kc / 2` x `2 * lanes`, k pairs
/// adjacent); static where the sizes are.
Value KernelEmitter::allocPacked(int64_t lanes, Value panels) {
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<Value> dynamicSizes;
  Value depth = blk.pairDot ? ceilDiv(kc, cst(2)) : kc;
  for (Value v : {panels, depth}) {
    if (auto known = mlir::getConstantIntValue(v)) {
      shape.push_back(*known);
    } else {
      shape.push_back(kDynamic);
      dynamicSizes.push_back(v);
    }
  }
  shape.push_back(blk.pairDot ? 2 * lanes : lanes);
  return b.create<memref::AllocOp>(loc,
                                   mlir::MemRefType::get(shape, packedType()),
                                   dynamicSizes, b.getI64IntegerAttr(64));
}

/// Copies the block of `source` with `lanesCount` values of loop `lanesDim`
/// from `lanesLo` and `kCount` of loop k from `kLo` into `packed`
/// [panel][p][lane] (panels of `lanes`), converted to the accumulator type
/// (with pair dot products: bf16 at [panel][p / 2][2 * lane + p % 2], an odd
/// `kCount`'s last pair completed with a zero); lanes at or past `lanesEnd`
/// are zero. The copy's inner loop runs along
/// the lanes where they have unit stride (checked at run time when the type
/// does not say, and then read through a view that says so, so the copy
/// vectorizes), else along k where k has or may have unit stride, else along
/// the source's last axis.
void KernelEmitter::pack(Value packed, Value source, mlir::AffineMap map,
                         llvm::SmallVector<Value> iv, unsigned lanesDim,
                         int64_t lanes, Value lanesLo, Value lanesCount,
                         Value lanesEnd, Value kLo, Value kCount) {
  Value panels = ceilDiv(lanesCount, cst(lanes));
  Value last = sub(lanesEnd, cst(1));
  // Only the last panel can run past `lanesEnd`: the others copy without
  // the bounds check, so LLVM vectorizes them.
  auto copy = [&](Value from, bool alongLanes, Value panel, bool checked) {
    auto element = [&](Value p, Value lane) {
      Value at = add(lanesLo, add(mul(panel, cst(lanes)), lane));
      Value valid = checked ? lt(at, lanesEnd) : Value();
      iv[lanesDim] =
          checked ? b.create<arith::SelectOp>(loc, valid, at, last) : at;
      iv[c.k] = add(kLo, p);
      Value v = b.create<memref::LoadOp>(loc, from, indices(map, iv));
      if (v.getType() != packedType())
        v = b.create<arith::ExtFOp>(loc, packedType(), v);
      if (checked)
        v = b.create<arith::SelectOp>(loc, valid, v, zero(packedType()));
      b.create<memref::StoreOp>(loc, v, packed, packedAt(panel, p, lane));
    };
    // With pair dot products, both values of a k pair in one iteration:
    // their stores interleave into whole vectors.
    auto step = [&](Value q, Value lane) {
      if (!blk.pairDot)
        return element(q, lane);
      element(mul(q, cst(2)), lane);
      element(add(mul(q, cst(2)), cst(1)), lane);
    };
    Value steps = blk.pairDot
                      ? b.createOrFold<arith::DivUIOp>(loc, kCount, cst(2))
                      : kCount;
    // A full panel of lanes that are the source's contiguous last axis:
    // per k pair, two vector loads interleaved into one store (LLVM does
    // not vectorize the pairs' interleaving stores itself).
    if (blk.pairDot && alongLanes && !checked &&
        axisOf(map, lanesDim) + 1 == map.getNumResults()) {
      auto rowType = mlir::VectorType::get({lanes}, packedType());
      loop(cst(0), steps, 1, [&](Value q) {
        iv[lanesDim] = add(lanesLo, mul(panel, cst(lanes)));
        llvm::SmallVector<Value> rows;
        for (int64_t half = 0; half < 2; ++half) {
          iv[c.k] = add(kLo, add(mul(q, cst(2)), cst(half)));
          rows.push_back(
              b.create<vector::LoadOp>(loc, rowType, from, indices(map, iv)));
        }
        Value pairs = b.create<vector::InterleaveOp>(loc, rows[0], rows[1]);
        b.create<vector::StoreOp>(loc, pairs, packed,
                                  mlir::ValueRange{panel, q, cst(0)});
      });
    } else if (alongLanes) {
      loop(cst(0), steps, 1, [&](Value q) {
        loop(cst(0), cst(lanes), 1, [&](Value lane) { step(q, lane); });
      });
    } else {
      loop(cst(0), cst(lanes), 1, [&](Value lane) {
        loop(cst(0), steps, 1, [&](Value q) { step(q, lane); });
      });
    }
    if (!blk.pairDot)
      return;
    // An odd k block: its last value, paired with a zero.
    Value odd = b.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::eq,
        b.createOrFold<arith::RemUIOp>(loc, kCount, cst(2)), cst(1));
    auto ifOdd = b.create<scf::IfOp>(loc, odd, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOdd.thenBlock()->getTerminator());
    loop(cst(0), cst(lanes), 1, [&](Value lane) {
      element(sub(kCount, cst(1)), lane);
      b.create<memref::StoreOp>(loc, zero(packedType()), packed,
                                packedAt(panel, kCount, lane));
    });
  };
  // The order for strides other than 1 along the lanes: along k where it
  // has unit stride or may have at run time, else along the source's last
  // axis if that is the lanes. The partial last panel always takes the order
  // that the type's strides call for.
  unsigned lanesAxis = axisOf(map, lanesDim), kAxis = axisOf(map, c.k);
  auto strides = *stridesOf(llvm::cast<mlir::MemRefType>(source.getType()));
  bool lanesLast = innermostLoop(map) == lanesDim;
  bool otherOrder =
      strides[kAxis] == 1 || strides[kAxis] == kDynamic ? false : lanesLast;
  bool partialOrder = strides[lanesAxis] == 1 ? true
                      : strides[kAxis] == 1   ? false
                                              : lanesLast;
  loop(cst(0), panels, 1, [&](Value panel) {
    Value end = add(lanesLo, mul(add(panel, cst(1)), cst(lanes)));
    Value full =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, end, lanesEnd);
    auto ifOp = b.create<scf::IfOp>(loc, full, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    versions(
        source, lanesAxis, {},
        [&](Value view) {
          copy(view, /*alongLanes=*/true, panel, false);
          return llvm::SmallVector<Value>();
        },
        [&] {
          copy(source, otherOrder, panel, false);
          return llvm::SmallVector<Value>();
        });
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    copy(source, partialOrder, panel, true);
  });
}

/// C[mLo + r, nLo + j] (+)= sum_p A[mLo + r][kLo + p] * Bp[panelB][p][j] for
/// r < rows, j < cols, with mr x nr accumulators in vector registers; A is
/// read in place or from its packed panel Ap[panelA][p][r].
void KernelEmitter::microKernel(llvm::SmallVector<Value> iv, Value ap, Value bp,
                                Value panelA, Value panelB, Value mLo,
                                Value rows, Value nLo, Value cols, Value kLo,
                                Value kCount, Value startAtZero,
                                Value lastBlock) {
  auto vecType = mlir::VectorType::get({blk.vl}, c.acc);
  auto maskType = mlir::VectorType::get({blk.vl}, b.getI1Type());
  int64_t vectors = blk.nr / blk.vl;
  llvm::SmallVector<Value> masks;
  for (int64_t v = 0; v < vectors; ++v) {
    Value left = sub(cols, cst(v * blk.vl));
    Value count = max(min(left, cst(blk.vl)), cst(0));
    masks.push_back(b.create<vector::CreateMaskOp>(loc, maskType, count));
  }
  auto cIndices = [&](Value row, Value col) {
    iv[c.m] = add(mLo, row);
    iv[c.n] = add(nLo, col);
    return indices(c.mapC, iv);
  };
  // C's tile goes to and from vector registers with vector accesses on C
  // where its n has unit stride (known from the type, or checked at run
  // time, per tile), else through the scratch tile [mr][nr], copied from and
  // to C element by element through C's strides.
  auto rowIndices = [&](Value tile, int64_t r,
                        int64_t v) -> llvm::SmallVector<Value> {
    if (tile == scratch)
      return {cst(r), cst(v * blk.vl)};
    return cIndices(cst(r), cst(v * blk.vl));
  };
  auto copyTile = [&](bool toScratch) {
    loop(cst(0), rows, 1, [&](Value i) {
      loop(cst(0), cols, 1, [&](Value j) {
        llvm::SmallVector<Value> at = cIndices(i, j);
        llvm::SmallVector<Value> inTile{i, j};
        if (toScratch)
          b.create<memref::StoreOp>(loc, b.create<memref::LoadOp>(loc, c.c, at),
                                    scratch, inTile);
        else
          b.create<memref::StoreOp>(
              loc, b.create<memref::LoadOp>(loc, scratch, inTile), c.c, at);
      });
    });
  };
  Value readC = b.create<arith::XOrIOp>(
      loc, startAtZero, b.create<arith::ConstantOp>(loc, b.getBoolAttr(true)));
  llvm::SmallVector<Type> rowTypes(vectors, vecType);
  Value zeros = b.create<vector::SplatOp>(loc, vecType, zero());

  // C is read and written with plain vector accesses when the tile is
  // `nr` columns wide, masked ones only at the edge (masked stores are slow
  // on some CPUs, e.g. AMD's, and their masks are only known at run time).
  Value full = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                             cols, cst(blk.nr));
  // `body(masked)` in both branches; it yields `types` (none: the branches
  // end in the yield scf.if adds).
  auto ifFull = [&](llvm::ArrayRef<Type> types,
                    llvm::function_ref<void(bool)> body) {
    auto ifOp = b.create<scf::IfOp>(loc, types, full, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body(false);
    b.setInsertionPointToStart(ifOp.elseBlock());
    body(true);
    return ifOp;
  };

  // Accumulators: zero, or the current C (rows past `rows` are not read).
  auto load = [&](Value tile) {
    if (tile == scratch) {
      auto ifOp = b.create<scf::IfOp>(loc, readC, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      copyTile(/*toScratch=*/true);
    }
    llvm::SmallVector<Value> init;
    for (int64_t r = 0; r < blk.mr; ++r) {
      Value read = b.create<arith::AndIOp>(loc, lt(cst(r), rows), readC);
      auto ifOp = b.create<scf::IfOp>(loc, rowTypes, read, true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        auto loads = ifFull(rowTypes, [&](bool masked) {
          llvm::SmallVector<Value> row;
          for (int64_t v = 0; v < vectors; ++v)
            row.push_back(
                masked ? Value(b.create<vector::MaskedLoadOp>(
                             loc, vecType, tile, rowIndices(tile, r, v),
                             masks[v], zeros))
                       : Value(b.create<vector::LoadOp>(
                             loc, vecType, tile, rowIndices(tile, r, v))));
          b.create<scf::YieldOp>(loc, row);
        });
        b.create<scf::YieldOp>(loc, loads.getResults());
        b.setInsertionPointToStart(ifOp.elseBlock());
        b.create<scf::YieldOp>(loc, llvm::SmallVector<Value>(vectors, zeros));
      }
      init.append(ifOp.getResults().begin(), ifOp.getResults().end());
    }
    return init;
  };
  unsigned nAxis = axisOf(c.mapC, c.n);
  llvm::SmallVector<Type> accTypes(blk.mr * vectors, vecType);
  llvm::SmallVector<Value> init =
      versions(c.c, nAxis, accTypes, load, [&] { return load(scratch); });

  Value lastRow = sub(size[c.m], cst(1));
  // With pair dot products, one step per k pair (PairDot.h): A's pair of
  // each row broadcast, times B's pairs of each vector's columns.
  Value steps = blk.pairDot ? ceilDiv(kCount, cst(2)) : kCount;
  auto sum = b.create<scf::ForOp>(
      loc, cst(0), steps, cst(1), init,
      [&](OpBuilder &nb, Location nl, Value p, mlir::ValueRange accs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        llvm::SmallVector<Value> bs, next;
        if (blk.pairDot) {
          auto pairsType = mlir::VectorType::get({2 * blk.vl}, b.getBF16Type());
          for (int64_t v = 0; v < vectors; ++v)
            bs.push_back(b.create<vector::LoadOp>(
                loc, pairsType, bp,
                mlir::ValueRange{panelB, p, cst(2 * v * blk.vl)}));
          for (int64_t r = 0; r < blk.mr; ++r) {
            Value pair = broadcastPair(b, loc, ap, {panelA, p, cst(2 * r)});
            for (int64_t v = 0; v < vectors; ++v)
              next.push_back(
                  pairDot(b, loc, accs[r * vectors + v], pair, bs[v]));
          }
          b.create<scf::YieldOp>(loc, next);
          return;
        }
        for (int64_t v = 0; v < vectors; ++v)
          bs.push_back(b.create<vector::LoadOp>(
              loc, vecType, bp, mlir::ValueRange{panelB, p, cst(v * blk.vl)}));
        for (int64_t r = 0; r < blk.mr; ++r) {
          Value x;
          if (direct) {
            // Rows past the edge read the last row; their results are not
            // stored.
            iv[c.m] = min(add(mLo, cst(r)), lastRow);
            iv[c.k] = add(kLo, p);
            x = b.create<memref::LoadOp>(loc, c.a, indices(c.mapA, iv));
          } else {
            x = b.create<memref::LoadOp>(loc, ap,
                                         mlir::ValueRange{panelA, p, cst(r)});
          }
          Value splat = b.create<vector::BroadcastOp>(loc, vecType, x);
          for (int64_t v = 0; v < vectors; ++v)
            next.push_back(b.create<vector::FMAOp>(loc, splat, bs[v],
                                                   accs[r * vectors + v]));
        }
        b.create<scf::YieldOp>(loc, next);
      });

  // The values stored: the sums, or on the last block of the sum the
  // epilogue applied to them (rows past the edge read the last row's
  // operands; their results are not stored).
  llvm::SmallVector<Value> results(sum.getResults());
  if (epi) {
    auto ifOp = b.create<scf::IfOp>(loc, accTypes, lastBlock, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    llvm::SmallVector<Value> applied;
    for (int64_t r = 0; r < blk.mr; ++r) {
      Value row = min(add(mLo, cst(r)), lastRow);
      for (int64_t v = 0; v < vectors; ++v) {
        llvm::SmallVector<Value> args;
        for (mlir::OpOperand *input : epi->op.getDpsInputOperands())
          args.push_back(input->get() == epi->temporary.getResult()
                             ? sum.getResult(r * vectors + v)
                             : epilogueInput(input, iv, row,
                                             add(nLo, cst(v * blk.vl)),
                                             masks[v]));
        applied.push_back(vectorizeEpilogue(b, loc, *epi, args, blk.vl));
      }
    }
    b.create<scf::YieldOp>(loc, applied);
    b.setInsertionPointToStart(ifOp.elseBlock());
    b.create<scf::YieldOp>(loc, sum.getResults());
    results.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  }
  auto store = [&](Value tile) {
    for (int64_t r = 0; r < blk.mr; ++r) {
      auto ifOp = b.create<scf::IfOp>(loc, lt(cst(r), rows), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      ifFull({}, [&](bool masked) {
        for (int64_t v = 0; v < vectors; ++v) {
          Value acc = results[r * vectors + v];
          if (masked)
            b.create<vector::MaskedStoreOp>(loc, tile, rowIndices(tile, r, v),
                                            masks[v], acc);
          else
            b.create<vector::StoreOp>(loc, acc, tile, rowIndices(tile, r, v));
        }
      });
    }
    if (tile == scratch)
      copyTile(/*toScratch=*/false);
    return llvm::SmallVector<Value>();
  };
  versions(c.c, nAxis, {}, store, [&] { return store(scratch); });
}

/// The vector of epilogue operand `input` (not C) at C's row `row` and the
/// `blk.vl` columns from `col`: a masked vector load where the columns are
/// the operand's last axis with unit stride in its type, else one value per
/// lane (columns past the edge read the last one), or one value broadcast
/// where the operand does not depend on the column.
Value KernelEmitter::epilogueInput(mlir::OpOperand *input,
                                   llvm::SmallVector<Value> iv, Value row,
                                   Value col, Value mask) {
  Value source = input->get();
  auto type = llvm::cast<mlir::MemRefType>(source.getType());
  auto vecType = mlir::VectorType::get({blk.vl}, type.getElementType());
  // The epilogue's loops are C's axes, one for one.
  mlir::AffineMap map = epi->op.getMatchingIndexingMap(input);
  iv[c.m] = row;
  iv[c.n] = col;
  llvm::SmallVector<Value> at;
  std::optional<unsigned> lanesAxis;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    unsigned loopDim = c.mapC.getDimPosition(map.getDimPosition(i));
    if (loopDim == c.n)
      lanesAxis = i;
    at.push_back(iv[loopDim]);
  }
  if (!lanesAxis)
    return b.create<vector::BroadcastOp>(
        loc, vecType, b.create<memref::LoadOp>(loc, source, at));
  if (*lanesAxis + 1 == map.getNumResults() &&
      (*stridesOf(type))[*lanesAxis] == 1) {
    Value zeros =
        b.create<arith::ConstantOp>(loc, vecType, b.getZeroAttr(vecType));
    return b.create<vector::MaskedLoadOp>(loc, vecType, source, at, mask,
                                          zeros);
  }
  Value lastCol = sub(size[c.n], cst(1));
  Value vec = b.create<arith::ConstantOp>(loc, vecType, b.getZeroAttr(vecType));
  for (int64_t lane = 0; lane < blk.vl; ++lane) {
    at[*lanesAxis] = min(add(col, cst(lane)), lastCol);
    Value x = b.create<memref::LoadOp>(loc, source, at);
    vec = b.create<vector::InsertOp>(loc, x, vec, lane);
  }
  return vec;
}

/// Where a loop is empty at run time, C is zero: the epilogue runs as it
/// was, on a zeroed temporary (allocated only then).
void KernelEmitter::emitEmptyEpilogue() {
  mlir::IRMapping map;
  Value temporary = b.clone(*epi->temporary, map)->getResult(0);
  b.create<linalg::FillOp>(loc, c.zeroFill.getDpsInputs()[0], temporary);
  b.clone(*epi->op, map);
  b.create<memref::DeallocOp>(loc, temporary);
}

void KernelEmitter::emit() {
  // Trip counts: numbers where the types give them, memref.dim otherwise.
  Value nonEmpty;
  for (unsigned d = 0; d < c.ranges.size(); ++d) {
    if (c.ranges[d] != kDynamic) {
      size.push_back(cst(c.ranges[d]));
      continue;
    }
    for (auto [value, map] :
         {std::pair{c.a, c.mapA}, {c.b, c.mapB}, {c.c, c.mapC}}) {
      if (map.isFunctionOfDim(d)) {
        size.push_back(b.create<memref::DimOp>(loc, value, axisOf(map, d)));
        break;
      }
    }
    Value positive = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt,
                                             size.back(), cst(0));
    nonEmpty =
        nonEmpty ? b.create<arith::AndIOp>(loc, nonEmpty, positive) : positive;
  }
  if (!nonEmpty)
    return emitBlocked();
  // A loop that is empty at run time leaves nothing to accumulate, but a
  // folded zero fill must still zero C.
  auto ifOp = b.create<scf::IfOp>(loc, nonEmpty,
                                  /*withElseRegion=*/bool(c.zeroFill));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  emitBlocked();
  if (epi) {
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    emitEmptyEpilogue();
  } else if (c.zeroFill) {
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    // On the buffer a grouped C views (GroupContractionAxes.cpp): the view
    // may be made inside an scf.if, whose values the affine loops that the
    // fill becomes cannot take as bounds.
    Value target = c.c;
    if (auto view = c.c.getDefiningOp<memref::CollapseShapeOp>())
      target = view.getSrc();
    b.create<linalg::FillOp>(loc, c.zeroFill.getDpsInputs()[0], target);
  }
}

/// The blocking for the sizes (numbers where they are known, index
/// arithmetic at run time otherwise), then the nest.
void KernelEmitter::emitBlocked() {
  Value M = size[c.m], N = size[c.n], K = size[c.k];
  // Parallel work: the outer parallel loops, then chunks of m if they are
  // too few.
  outer = cst(1);
  for (unsigned d : c.outerParallel)
    outer = mul(outer, size[d]);
  Value mr = cst(blk.mr), nr = cst(blk.nr);
  // Small problems take fewer items (unless `work-items` is given): at
  // least kMinItemWork multiply-adds each, as a fork and join of the threads
  // costs about as much as that (one item: no scf.parallel left once
  // canonicalized, where sizes are static).
  Value items = cst(blk.workItems);
  if (blk.minItemWork > 0) {
    Value work = mul(outer, mul(M, mul(N, K)));
    for (unsigned d : c.outerReduction)
      work = mul(work, size[d]);
    items = max(cst(1), min(items, ceilDiv(work, cst(blk.minItemWork))));
  }
  chunks = max(cst(1), min(ceilDiv(items, outer), ceilDiv(M, mr)));
  chunk = mul(ceilDiv(ceilDiv(M, chunks), mr), mr);
  chunks = ceilDiv(M, chunk);
  mc = min(cst(blk.mc), chunk);
  nc = min(cst(blk.nc), mul(ceilDiv(N, nr), nr));
  kc = min(cst(blk.kc), K);

  // A is read in place where it is in the accumulator type and its type
  // gives k unit stride, else packed. (A k stride known only at run time
  // gets no in-place version under a run-time check: one measured no faster
  // than packing A; bench/README.md.)
  auto typeA = llvm::cast<mlir::MemRefType>(c.a.getType());
  emitNest(!blk.pairDot && c.directCandidate &&
           (*stridesOf(typeA))[axisOf(c.mapA, c.k)] == 1);
}

/// The parallel loop nest: A read in place (`readDirect`) or packed.
void KernelEmitter::emitNest(bool readDirect) {
  direct = readDirect;
  Value N = size[c.n], K = size[c.k];
  // The work items: in parallel, or one after the other in a fused tile
  // (ein-fuse-rows), which ein-parallel-tiles runs on one core.
  OpBuilder::InsertionGuard guard(b);
  Value item;
  if (blk.serial) {
    auto serial = b.create<scf::ForOp>(loc, cst(0), mul(outer, chunks), cst(1));
    b.setInsertionPoint(serial.getBody()->getTerminator());
    item = serial.getInductionVar();
  } else {
    auto parallel = b.create<scf::ParallelOp>(
        loc, mlir::ValueRange{cst(0)}, mlir::ValueRange{mul(outer, chunks)},
        mlir::ValueRange{cst(1)});
    b.setInsertionPoint(parallel.getBody()->getTerminator());
    item = parallel.getInductionVars()[0];
  }
  llvm::SmallVector<Value> iv(c.ranges.size());
  Value mLo = mul(b.createOrFold<arith::RemUIOp>(loc, item, chunks), chunk);
  Value mEnd = min(add(mLo, chunk), size[c.m]);
  Value rest = b.createOrFold<arith::DivUIOp>(loc, item, chunks);
  for (unsigned d : llvm::reverse(c.outerParallel)) {
    iv[d] = b.createOrFold<arith::RemUIOp>(loc, rest, size[d]);
    rest = b.createOrFold<arith::DivUIOp>(loc, rest, size[d]);
  }
  Value ap = direct ? Value() : allocPacked(blk.mr, ceilDiv(mc, cst(blk.mr)));
  Value bp = allocPacked(blk.nr, ceilDiv(nc, cst(blk.nr)));
  // C's n without unit stride in its type: the micro-kernel may need the
  // contiguous scratch tile.
  unsigned nAxis = axisOf(c.mapC, c.n);
  auto typeC = llvm::cast<mlir::MemRefType>(c.c.getType());
  scratch = (*stridesOf(typeC))[nAxis] == 1
                ? Value()
                : b.create<memref::AllocOp>(
                      loc, mlir::MemRefType::get({blk.mr, blk.nr}, c.acc),
                      b.getI64IntegerAttr(64));

  // Outer reductions run sequentially inside one work item; C starts at
  // zero (when its fill was folded) on the first of them and the first k
  // block.
  // The epilogue is applied on the last of them and the last k block.
  std::function<void(size_t, Value, Value)> reductions = [&](size_t i,
                                                             Value first,
                                                             Value last) {
    if (i < c.outerReduction.size()) {
      unsigned d = c.outerReduction[i];
      loop(cst(0), size[d], 1, [&](Value r) {
        iv[d] = r;
        Value isFirst =
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, r, cst(0));
        Value isLast = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, r,
                                               sub(size[d], cst(1)));
        reductions(i + 1, b.create<arith::AndIOp>(loc, first, isFirst),
                   b.create<arith::AndIOp>(loc, last, isLast));
      });
      return;
    }
    loop(cst(0), N, nc, [&](Value jc) {
      Value ncCount = min(nc, sub(N, jc));
      loop(cst(0), K, kc, [&](Value pc) {
        Value kCount = min(kc, sub(K, pc));
        Value atZero = b.create<arith::AndIOp>(
            loc, first,
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, pc, cst(0)));
        Value atEnd = b.create<arith::AndIOp>(
            loc, last,
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                    add(pc, kCount), K));
        pack(bp, c.b, c.mapB, iv, c.n, blk.nr, jc, ncCount, N, pc, kCount);
        loop(mLo, mEnd, mc, [&](Value ic) {
          Value mcCount = min(mc, sub(mEnd, ic));
          if (!direct)
            pack(ap, c.a, c.mapA, iv, c.m, blk.mr, ic, mcCount, mEnd, pc,
                 kCount);
          loop(cst(0), ncCount, blk.nr, [&](Value jr) {
            Value cols = min(cst(blk.nr), sub(ncCount, jr));
            Value panelB = b.createOrFold<arith::DivUIOp>(loc, jr, cst(blk.nr));
            loop(cst(0), mcCount, blk.mr, [&](Value ir) {
              Value rows = min(cst(blk.mr), sub(mcCount, ir));
              Value panelA =
                  b.createOrFold<arith::DivUIOp>(loc, ir, cst(blk.mr));
              microKernel(iv, ap, bp, panelA, panelB, add(ic, ir), rows,
                          add(jc, jr), cols, pc, kCount, atZero, atEnd);
            });
          });
        });
      });
    });
  };
  reductions(0,
             b.create<arith::ConstantOp>(
                 loc, b.getBoolAttr(static_cast<bool>(c.zeroFill))),
             b.create<arith::ConstantOp>(loc, b.getBoolAttr(true)));
  if (ap)
    b.create<memref::DeallocOp>(loc, ap);
  b.create<memref::DeallocOp>(loc, bp);
  if (scratch)
    b.create<memref::DeallocOp>(loc, scratch);
}

struct TileContractionsPass : impl::TileContractionsBase<TileContractionsPass> {
  using TileContractionsBase::TileContractionsBase;

  void runOnOperation() override {
    int64_t bits = vectorBits > 0 ? int64_t(vectorBits) : hostVectorBits();
    int64_t threads = workItems > 0 ? int64_t(workItems) : defaultWorkItems();
    // Unset sizes come from the host's caches and vector width (HostCPU.h);
    // a vector width that is set picks the model's tile for that width.
    GemmTiles model = hostGemmTiles();
    if (vectorBits > 0 || l1Bytes > 0 || l1Ways > 0 || l2Bytes > 0 ||
        l3Bytes > 0) {
      HostCaches caches = hostCaches();
      int64_t threads = std::max<int64_t>(1, defaultWorkItems() / 2);
      if (l1Bytes > 0)
        caches.l1d.bytes = l1Bytes;
      if (l1Ways > 0)
        caches.l1d.ways = l1Ways;
      if (l2Bytes > 0)
        caches.l2.bytes = l2Bytes;
      if (l3Bytes > 0)
        caches.l3 = {l3Bytes, 16, 1};
      model = gemmTiles(caches, bits, 4, threads);
    }
    // Runs of loops contiguous in every operand become one loop first, so
    // that `... h d, d e -> ... h e` is one GEMM rather than many.
    std::vector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1 &&
          isMultiplyAccumulate(op))
        candidates.push_back(op);
    });
    for (linalg::GenericOp op : candidates)
      groupContractionAxes(op, [](linalg::GenericOp grouped) {
        return matchContraction(grouped).has_value();
      });
    std::vector<std::pair<Contraction, std::optional<Epilogue>>> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto c = matchContraction(op))
        found.push_back({*c, std::nullopt});
    });
    // An epilogue found before any op is rewritten (an epilogue may be a
    // contraction's reader and the next one's operand).
    for (auto &[c, epilogue] : found) {
      epilogue = epilogues ? matchEpilogue(c) : std::nullopt;
      if (!epilogue)
        continue;
      c.c = epilogue->out;
      if (auto alloc = epilogue->out.getDefiningOp<memref::AllocOp>())
        if (c.op->isBeforeInBlock(alloc))
          alloc->moveBefore(c.op);
    }
    for (auto &[c, epilogue] : found) {
      Blocking blk;
      blk.vl = bits / c.acc.getWidth();
      blk.mr = mr > 0 ? int64_t(mr) : model.mr;
      // A narrow output needs fewer vectors per row than the default tile
      // (a width known only at run time gets the default).
      int64_t n = c.ranges[c.n] == kDynamic ? INT64_MAX / 2 : c.ranges[c.n];
      int64_t vectors = nrVectors > 0 ? int64_t(nrVectors) : model.nrVectors;
      blk.nr = std::min<int64_t>(vectors, (n + blk.vl - 1) / blk.vl) * blk.vl;
      // Cache blocks are given for f32; f64 halves the element counts.
      int64_t scale = c.acc.getWidth() / 32;
      int64_t mcF32 = mc > 0 ? int64_t(mc) : model.mc;
      int64_t ncF32 = nc > 0 ? int64_t(nc) : model.nc;
      int64_t kcF32 = kc > 0 ? int64_t(kc) : model.kc;
      blk.mc = std::max<int64_t>(blk.mr, mcF32 / scale / blk.mr * blk.mr);
      blk.nc = std::max<int64_t>(blk.nr, ncF32 / scale / blk.nr * blk.nr);
      blk.kc = std::max<int64_t>(1, kcF32 / scale);
      blk.pairDot = usesPairDot(c, bf16Dot, blk.vl);
      if (blk.pairDot) // whole k pairs in every block but the last
        blk.kc += blk.kc % 2;
      blk.serial = bool(c.op->getParentOfType<scf::ForallOp>());
      blk.workItems = blk.serial ? 1 : threads;
      blk.minItemWork = workItems > 0 || blk.serial ? 0 : kMinItemWork;
      KernelEmitter(c, blk, epilogue).emit();
      c.op.erase();
      if (c.zeroFill)
        c.zeroFill.erase();
      if (epilogue) {
        epilogue->op.erase();
        for (mlir::Operation *user :
             llvm::make_early_inc_range(epilogue->temporary->getUsers()))
          user->erase(); // its deallocations
        epilogue->temporary.erase();
      }
    }
  }
};

} // namespace
} // namespace ein
