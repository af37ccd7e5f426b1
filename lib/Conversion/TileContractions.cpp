// The ein-tile-contractions pass: GEMM-shaped linalg.generic contractions on
// buffers become packed, cache-blocked loops around a register-tiled vector
// micro-kernel (the BLIS structure), parallel over independent blocks.
#include "ein/Conversion/HostCPU.h"
#include "ein/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace ein {

#define GEN_PASS_DEF_TILECONTRACTIONS
#include "ein/Conversion/Passes.h.inc"

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
  int64_t mc, nc, kc; // cache blocks of packed A (mc x kc) and B (kc x nc)
  int64_t workItems;  // parallel blocks wanted (a few per core)
};

/// A generic that computes C[..] += A[..] * B[..] summed over its reduction
/// loops, with the roles of its loops decided.
struct Contraction {
  linalg::GenericOp op;
  Value a, b, c; // `a` carries m, `b` carries n
  mlir::AffineMap mapA, mapB, mapC;
  unsigned m, n, k; // loop dims: register rows, vector lanes, inner sum
  llvm::SmallVector<unsigned> outerParallel, outerReduction;
  llvm::SmallVector<int64_t> ranges;
  mlir::FloatType acc;
  linalg::FillOp zeroFill; // a zero fill of C folded into the kernel
  bool directA = false;    // the kernel reads A in place, unpacked
};

/// The loop that indexes the operand's last (contiguous) axis; the maps are
/// projected permutations.
unsigned innermostLoop(mlir::AffineMap map) {
  return map.getDimPosition(map.getNumResults() - 1);
}

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

bool hasUnitInnerStride(mlir::MemRefType type) {
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(mlir::getStridesAndOffset(type, strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
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
  if (!typeA || !typeB || !typeC || !typeC.hasStaticShape() ||
      !hasUnitInnerStride(typeC))
    return std::nullopt;
  c.acc = llvm::dyn_cast<mlir::FloatType>(typeC.getElementType());
  if (!c.acc || (c.acc.getWidth() != 32 && c.acc.getWidth() != 64))
    return std::nullopt;
  for (auto t : {typeA, typeB}) {
    auto e = llvm::dyn_cast<mlir::FloatType>(t.getElementType());
    if (!e || e.getWidth() > c.acc.getWidth())
      return std::nullopt;
  }
  c.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(c.ranges, [](int64_t r) { return r < 1; })) // or dynamic
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
    if (!reduction && ina && !inb && (!m || c.ranges[d] > c.ranges[*m]))
      m = d;
    if (reduction && ina && inb && (!k || c.ranges[d] > c.ranges[*k]))
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
  // A already in the accumulator type with k contiguous is read in place:
  // each register row streams along its own row of A, which the hardware
  // prefetches as well as a packed panel, and the copy is saved.
  c.directA = typeA.getElementType() == c.acc && hasUnitInnerStride(typeA) &&
              innermostLoop(c.mapA) == c.k;
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

/// Emits the loop nest that replaces one contraction.
class KernelEmitter {
public:
  KernelEmitter(const Contraction &contraction, const Blocking &blocking)
      : c(contraction), blk(blocking), b(c.op.getOperation()),
        loc(c.op->getLoc()) {}

  void emit();

private:
  Contraction c;
  Blocking blk;
  OpBuilder b;
  Location loc;

  Value cst(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulIOp>(loc, x, y); }
  Value min(Value x, Value y) { return b.create<arith::MinSIOp>(loc, x, y); }
  Value lt(Value x, Value y) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x, y);
  }
  Value zero() {
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(c.acc, 0.0));
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
  void loop(Value lb, Value ub, int64_t step,
            llvm::function_ref<void(Value)> body) {
    auto f = b.create<scf::ForOp>(loc, lb, ub, cst(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(f.getBody()->getTerminator());
    body(f.getInductionVar());
  }

  void pack(Value packed, Value source, mlir::AffineMap map,
            llvm::SmallVector<Value> iv, unsigned lanesDim, int64_t lanes,
            Value lanesLo, Value lanesCount, Value lanesEnd, Value kLo,
            Value kCount);
  void microKernel(llvm::SmallVector<Value> iv, Value ap, Value bp,
                   Value panelA, Value panelB, Value mLo, Value rows, Value nLo,
                   Value cols, Value kLo, Value kCount, Value startAtZero);
};

/// Copies the block of `source` with `lanesCount` values of loop `lanesDim`
/// from `lanesLo` and `kCount` of loop k from `kLo` into `packed`
/// [panel][p][lane] (panels of `lanes`), converted to the accumulator type;
/// lanes at or past `lanesEnd` are zero. The loop over the source's
/// contiguous axis is innermost.
void KernelEmitter::pack(Value packed, Value source, mlir::AffineMap map,
                         llvm::SmallVector<Value> iv, unsigned lanesDim,
                         int64_t lanes, Value lanesLo, Value lanesCount,
                         Value lanesEnd, Value kLo, Value kCount) {
  unsigned inner = innermostLoop(map);
  Value panels = b.create<arith::CeilDivSIOp>(loc, lanesCount, cst(lanes));
  Value last = b.create<arith::SubIOp>(loc, lanesEnd, cst(1));
  // Only the last panel can run past `lanesEnd`: the others copy without
  // the bounds check, so LLVM vectorizes them.
  auto copy = [&](Value panel, bool checked) {
    auto element = [&](Value p, Value lane) {
      Value at = add(lanesLo, add(mul(panel, cst(lanes)), lane));
      Value valid = checked ? lt(at, lanesEnd) : Value();
      iv[lanesDim] =
          checked ? b.create<arith::SelectOp>(loc, valid, at, last) : at;
      iv[c.k] = add(kLo, p);
      Value v = b.create<memref::LoadOp>(loc, source, indices(map, iv));
      if (v.getType() != c.acc)
        v = b.create<arith::ExtFOp>(loc, c.acc, v);
      if (checked)
        v = b.create<arith::SelectOp>(loc, valid, v, zero());
      b.create<memref::StoreOp>(loc, v, packed,
                                mlir::ValueRange{panel, p, lane});
    };
    if (inner == lanesDim) {
      loop(cst(0), kCount, 1, [&](Value p) {
        loop(cst(0), cst(lanes), 1, [&](Value lane) { element(p, lane); });
      });
    } else {
      loop(cst(0), cst(lanes), 1, [&](Value lane) {
        loop(cst(0), kCount, 1, [&](Value p) { element(p, lane); });
      });
    }
  };
  loop(cst(0), panels, 1, [&](Value panel) {
    Value end = add(lanesLo, mul(add(panel, cst(1)), cst(lanes)));
    Value full =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, end, lanesEnd);
    auto ifOp = b.create<scf::IfOp>(loc, full, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    copy(panel, false);
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    copy(panel, true);
  });
}

/// C[mLo + r, nLo + j] (+)= sum_p Ap[panelA][p][r] * Bp[panelB][p][j] for
/// r < rows, j < cols, with mr x nr accumulators in vector registers.
void KernelEmitter::microKernel(llvm::SmallVector<Value> iv, Value ap, Value bp,
                                Value panelA, Value panelB, Value mLo,
                                Value rows, Value nLo, Value cols, Value kLo,
                                Value kCount, Value startAtZero) {
  auto vecType = mlir::VectorType::get({blk.vl}, c.acc);
  auto maskType = mlir::VectorType::get({blk.vl}, b.getI1Type());
  int64_t vectors = blk.nr / blk.vl;
  llvm::SmallVector<Value> masks;
  for (int64_t v = 0; v < vectors; ++v) {
    Value left = b.create<arith::SubIOp>(loc, cols, cst(v * blk.vl));
    Value count = b.create<arith::MaxSIOp>(loc, min(left, cst(blk.vl)), cst(0));
    masks.push_back(b.create<vector::CreateMaskOp>(loc, maskType, count));
  }
  auto rowIndices = [&](int64_t r, int64_t v) {
    iv[c.m] = add(mLo, cst(r));
    iv[c.n] = add(nLo, cst(v * blk.vl));
    return indices(c.mapC, iv);
  };
  llvm::SmallVector<Type> rowTypes(vectors, vecType);
  Value zeros = b.create<vector::SplatOp>(loc, vecType, zero());

  // Accumulators: zero, or the current C (rows past `rows` are not read).
  llvm::SmallVector<Value> init;
  for (int64_t r = 0; r < blk.mr; ++r) {
    Value read = b.create<arith::AndIOp>(
        loc, lt(cst(r), rows),
        b.create<arith::XOrIOp>(
            loc, startAtZero,
            b.create<arith::ConstantOp>(loc, b.getBoolAttr(true))));
    auto ifOp = b.create<scf::IfOp>(loc, rowTypes, read, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      llvm::SmallVector<Value> row;
      for (int64_t v = 0; v < vectors; ++v)
        row.push_back(b.create<vector::MaskedLoadOp>(
            loc, vecType, c.c, rowIndices(r, v), masks[v], zeros));
      b.create<scf::YieldOp>(loc, row);
      b.setInsertionPointToStart(ifOp.elseBlock());
      b.create<scf::YieldOp>(loc, llvm::SmallVector<Value>(vectors, zeros));
    }
    init.append(ifOp.getResults().begin(), ifOp.getResults().end());
  }

  auto sum = b.create<scf::ForOp>(
      loc, cst(0), kCount, cst(1), init,
      [&](OpBuilder &nb, Location nl, Value p, mlir::ValueRange accs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        llvm::SmallVector<Value> bs, next;
        for (int64_t v = 0; v < vectors; ++v)
          bs.push_back(b.create<vector::LoadOp>(
              loc, vecType, bp, mlir::ValueRange{panelB, p, cst(v * blk.vl)}));
        for (int64_t r = 0; r < blk.mr; ++r) {
          Value x;
          if (c.directA) {
            // Rows past the edge read the last row; their results are not
            // stored.
            iv[c.m] = min(add(mLo, cst(r)), cst(c.ranges[c.m] - 1));
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

  for (int64_t r = 0; r < blk.mr; ++r) {
    auto ifOp = b.create<scf::IfOp>(loc, lt(cst(r), rows), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    for (int64_t v = 0; v < vectors; ++v)
      b.create<vector::MaskedStoreOp>(loc, c.c, rowIndices(r, v), masks[v],
                                      sum.getResult(r * vectors + v));
  }
}

void KernelEmitter::emit() {
  int64_t M = c.ranges[c.m], N = c.ranges[c.n], K = c.ranges[c.k];
  auto roundUp = [](int64_t x, int64_t to) { return (x + to - 1) / to * to; };
  // Parallel work: the outer parallel loops, then chunks of m if they are
  // too few.
  int64_t outer = 1;
  for (unsigned d : c.outerParallel)
    outer *= c.ranges[d];
  int64_t chunks = std::clamp<int64_t>((blk.workItems + outer - 1) / outer, 1,
                                       (M + blk.mr - 1) / blk.mr);
  int64_t chunk = roundUp((M + chunks - 1) / chunks, blk.mr);
  chunks = (M + chunk - 1) / chunk;
  int64_t mc = std::min(blk.mc, chunk);
  int64_t nc = std::min(blk.nc, roundUp(N, blk.nr));
  int64_t kc = std::min(blk.kc, K);
  auto packedType = [&](int64_t lanes, int64_t block) {
    return mlir::MemRefType::get({block / lanes, kc, lanes}, c.acc);
  };

  auto parallel = b.create<scf::ParallelOp>(
      loc, mlir::ValueRange{cst(0)}, mlir::ValueRange{cst(outer * chunks)},
      mlir::ValueRange{cst(1)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(parallel.getBody()->getTerminator());
  llvm::SmallVector<Value> iv(c.ranges.size());
  Value item = parallel.getInductionVars()[0];
  Value mLo = mul(b.create<arith::RemUIOp>(loc, item, cst(chunks)), cst(chunk));
  Value mEnd = min(add(mLo, cst(chunk)), cst(M));
  Value rest = b.create<arith::DivUIOp>(loc, item, cst(chunks));
  for (unsigned d : llvm::reverse(c.outerParallel)) {
    iv[d] = b.create<arith::RemUIOp>(loc, rest, cst(c.ranges[d]));
    rest = b.create<arith::DivUIOp>(loc, rest, cst(c.ranges[d]));
  }
  auto align = b.getI64IntegerAttr(64);
  Value ap = c.directA
                 ? Value()
                 : b.create<memref::AllocOp>(
                       loc, packedType(blk.mr, roundUp(mc, blk.mr)), align);
  Value bp = b.create<memref::AllocOp>(loc, packedType(blk.nr, nc), align);

  // Outer reductions run sequentially inside one work item; C starts at
  // zero (when its fill was folded) on the first of them and the first k
  // block.
  std::function<void(size_t, Value)> reductions = [&](size_t i, Value first) {
    if (i < c.outerReduction.size()) {
      unsigned d = c.outerReduction[i];
      loop(cst(0), cst(c.ranges[d]), 1, [&](Value r) {
        iv[d] = r;
        Value isFirst =
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, r, cst(0));
        reductions(i + 1, b.create<arith::AndIOp>(loc, first, isFirst));
      });
      return;
    }
    loop(cst(0), cst(N), nc, [&](Value jc) {
      Value ncCount = min(cst(nc), b.create<arith::SubIOp>(loc, cst(N), jc));
      loop(cst(0), cst(K), kc, [&](Value pc) {
        Value kCount = min(cst(kc), b.create<arith::SubIOp>(loc, cst(K), pc));
        Value atZero = b.create<arith::AndIOp>(
            loc, first,
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, pc, cst(0)));
        pack(bp, c.b, c.mapB, iv, c.n, blk.nr, jc, ncCount, cst(N), pc, kCount);
        loop(mLo, mEnd, mc, [&](Value ic) {
          Value mcCount = min(cst(mc), b.create<arith::SubIOp>(loc, mEnd, ic));
          if (!c.directA)
            pack(ap, c.a, c.mapA, iv, c.m, blk.mr, ic, mcCount, mEnd, pc,
                 kCount);
          loop(cst(0), ncCount, blk.nr, [&](Value jr) {
            Value cols =
                min(cst(blk.nr), b.create<arith::SubIOp>(loc, ncCount, jr));
            Value panelB = b.create<arith::DivUIOp>(loc, jr, cst(blk.nr));
            loop(cst(0), mcCount, blk.mr, [&](Value ir) {
              Value rows =
                  min(cst(blk.mr), b.create<arith::SubIOp>(loc, mcCount, ir));
              Value panelA = b.create<arith::DivUIOp>(loc, ir, cst(blk.mr));
              microKernel(iv, ap, bp, panelA, panelB, add(ic, ir), rows,
                          add(jc, jr), cols, pc, kCount, atZero);
            });
          });
        });
      });
    });
  };
  reductions(0, b.create<arith::ConstantOp>(
                    loc, b.getBoolAttr(static_cast<bool>(c.zeroFill))));
  if (ap)
    b.create<memref::DeallocOp>(loc, ap);
  b.create<memref::DeallocOp>(loc, bp);
}

struct TileContractionsPass : impl::TileContractionsBase<TileContractionsPass> {
  using TileContractionsBase::TileContractionsBase;

  void runOnOperation() override {
    int64_t bits = vectorBits > 0 ? int64_t(vectorBits) : hostVectorBits();
    int64_t threads = workItems > 0 ? int64_t(workItems) : defaultWorkItems();
    std::vector<Contraction> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto c = matchContraction(op))
        found.push_back(*c);
    });
    for (Contraction &c : found) {
      Blocking blk;
      blk.vl = bits / c.acc.getWidth();
      blk.mr = mr;
      // A narrow output needs fewer vectors per row than the default tile.
      int64_t n = c.ranges[c.n];
      // 6 x 4 accumulators fit AVX-512's 32 registers; AVX2 and SSE have
      // 16, which take 6 x 2.
      int64_t vectors = nrVectors > 0 ? int64_t(nrVectors)
                        : bits >= 512 ? 4
                                      : 2;
      blk.nr = std::min<int64_t>(vectors, (n + blk.vl - 1) / blk.vl) * blk.vl;
      // Cache blocks are given for f32; f64 halves the element counts.
      int64_t scale = c.acc.getWidth() / 32;
      blk.mc = std::max<int64_t>(blk.mr, mc / scale / blk.mr * blk.mr);
      blk.nc = std::max<int64_t>(blk.nr, nc / scale / blk.nr * blk.nr);
      blk.kc = std::max<int64_t>(1, kc / scale);
      blk.workItems = threads;
      KernelEmitter(c, blk).emit();
      c.op.erase();
      if (c.zeroFill)
        c.zeroFill.erase();
    }
  }
};

} // namespace
} // namespace ein
