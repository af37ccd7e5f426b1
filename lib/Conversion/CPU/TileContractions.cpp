// The ein-tile-contractions pass: GEMM-shaped linalg.generic contractions on
// buffers become packed, cache-blocked loops around a register-tiled vector
// micro-kernel (the BLIS structure), parallel over independent blocks; sizes
// and strides may be known only at run time.
#include "ContractionKernel.h"
#include "GroupContractionAxes.h"
#include "Int8Gemm.h"
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

namespace tiling {

namespace {

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

} // namespace

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
  // One contraction with no outer parallel loops splits m into
  // `mChunks` (one per thread): every chunk packs all of B again, so more
  // chunks than threads only repeat that copy (the items run on a static
  // schedule, so more of them balance nothing).
  Value single = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                               outer, cst(1));
  Value wanted = b.createOrFold<arith::SelectOp>(
      loc, single, min(items, cst(blk.mChunks)), ceilDiv(items, outer));
  chunks = max(cst(1), min(wanted, ceilDiv(M, mr)));
  chunk = mul(ceilDiv(ceilDiv(M, chunks), mr), mr);
  chunks = ceilDiv(M, chunk);
  // Blocks of m of equal size (whole register tiles): a chunk of 1026 rows
  // is 3 blocks of 342, not 510, 510 and 6, whose last would stream all of
  // packed B for one register tile.
  // (At most blk.mc, a multiple of mr, as the min says: ein-serial-small-
  // loops bounds a tiny contraction's work by it, and keeps the calling
  // thread for it instead of forking; test/cpp-api/no-fork.test.)
  Value mBlocks = ceilDiv(chunk, cst(blk.mc));
  mc = min(cst(blk.mc), mul(ceilDiv(ceilDiv(chunk, mBlocks), mr), mr));
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

} // namespace tiling

namespace {

using namespace tiling;

/// Multiply-adds per parallel work item at least (64^3): below that, the
/// fork and join of the threads costs more than the work it splits.
constexpr int64_t kMinItemWork = 64 * 64 * 64;

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
    // i8 x i8 -> i32 contractions: the int8 GEMM (Int8Gemm.h).
    std::optional<Int8Dot> dot = parseInt8Dot(int8Dot);
    if (!dot) {
      getOperation().emitError()
          << "ein-tile-contractions: int8-dot '" << int8Dot
          << "' is not none, avx2, avx512bw or vnni";
      return signalPassFailure();
    }
    std::vector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics)
      rewriteInt8Contraction(op, *dot,
                             bool(op->getParentOfType<scf::ForallOp>()));
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
      // A given `work-items` is the chunks' count too; else one per thread.
      blk.mChunks = blk.serial      ? 1
                    : workItems > 0 ? int64_t(workItems)
                                    : std::max<int64_t>(1, threads / 2);
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
