// Part of ein-tile-contractions: the int8 GEMM (Int8Gemm.h). A and B are
// packed as k pairs widened to i16, a pair as one i32 word (odd k completed
// with 0); per pair step of an mr x nv-vector register tile, one broadcast
// word of A meets nv vectors of B's words through the CPU's pair dot
// product (vpdpwssd, or vpmaddwd + vpaddd). Products of i8 values sum
// exactly: a pair is at most 2 * 128 * 128 = 32768, never saturating.
#include "Int8Gemm.h"
#include "ContractionKernel.h" // the tiling namespace's names
#include "IndexArith.h"
#include "MatchContraction.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace ein {

namespace {

using namespace tiling;

/// An int8 contraction: `a` carries m and k, `b` k and n, `c` m and n; the
/// loop dims of the three roles.
struct Int8Match {
  Value a, b, c;
  mlir::AffineMap mapA, mapB, mapC;
  unsigned m, n, k;
};

bool isExtOf(Value v, Value arg) {
  auto ext = v.getDefiningOp<arith::ExtSIOp>();
  return ext && ext.getIn() == arg;
}

bool hasElement(Value v, unsigned bits) {
  auto type = llvm::dyn_cast<mlir::MemRefType>(v.getType());
  return type && type.getElementType().isSignlessInteger(bits) &&
         stridesOf(type);
}

std::optional<Int8Match> matchInt8(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 0 || op.getNumLoops() != 3)
    return std::nullopt;
  // yield out + sext(in0) * sext(in1), either order.
  mlir::Block &body = op.getRegion().front();
  if (body.getOperations().size() != 5)
    return std::nullopt;
  auto yield = llvm::cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddIOp>();
  if (!add)
    return std::nullopt;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulIOp>() : nullptr;
  Value in0 = body.getArgument(0), in1 = body.getArgument(1);
  if (!mul || !((isExtOf(mul.getLhs(), in0) && isExtOf(mul.getRhs(), in1)) ||
                (isExtOf(mul.getLhs(), in1) && isExtOf(mul.getRhs(), in0))))
    return std::nullopt;
  Int8Match x;
  x.a = op.getDpsInputs()[0];
  x.b = op.getDpsInputs()[1];
  x.c = op.getDpsInits()[0];
  if (!hasElement(x.a, 8) || !hasElement(x.b, 8) || !hasElement(x.c, 32))
    return std::nullopt;
  auto maps = op.getIndexingMapsArray();
  for (auto map : maps)
    if (!map.isProjectedPermutation() || map.getNumResults() == 0)
      return std::nullopt;
  x.mapA = maps[0];
  x.mapB = maps[1];
  x.mapC = maps[2];
  // k: the one reduction; n: C's innermost loop, from one operand only.
  auto iterators = op.getIteratorTypesArray();
  auto reductions =
      llvm::count(iterators, mlir::utils::IteratorType::reduction);
  if (reductions != 1)
    return std::nullopt;
  x.k = std::find(iterators.begin(), iterators.end(),
                  mlir::utils::IteratorType::reduction) -
        iterators.begin();
  x.n = innermostLoop(x.mapC);
  if (x.n == x.k)
    return std::nullopt;
  x.m = 3 - x.k - x.n;
  if (x.mapA.isFunctionOfDim(x.n)) {
    std::swap(x.a, x.b);
    std::swap(x.mapA, x.mapB);
  }
  auto exactly = [](mlir::AffineMap map, std::initializer_list<unsigned> dims) {
    if (map.getNumResults() != dims.size())
      return false;
    for (unsigned d : dims)
      if (!map.isFunctionOfDim(d))
        return false;
    return true;
  };
  if (!exactly(x.mapA, {x.m, x.k}) || !exactly(x.mapB, {x.k, x.n}) ||
      !exactly(x.mapC, {x.m, x.n}))
    return std::nullopt;
  return x;
}

class Int8GemmEmitter : IndexArith {
public:
  Int8GemmEmitter(const Int8Match &match, Int8Dot dot, bool serial,
                  mlir::Operation *op)
      : IndexArith(op), x(match), dot(dot), serial(serial) {
    lanes = dot == Int8Dot::Avx2 ? 8 : 16;
    // The register tile: mr x nv vectors of accumulators, plus nv of B and
    // one broadcast (32 registers with AVX-512, 16 with AVX2).
    mr = dot == Int8Dot::Avx2 ? 4 : 6;
    nv = dot == Int8Dot::Avx2 ? 2 : 4;
  }

  void emit();

private:
  Int8Match x;
  Int8Dot dot;
  bool serial;
  int64_t lanes, mr, nv;
  Value M, N, K, pairs, panels, ap, bp;

  Value i32(int64_t v) {
    return b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(v));
  }
  mlir::VectorType words() {
    return mlir::VectorType::get({lanes}, b.getI32Type());
  }

  /// The size of loop `loop` from `mem`, which `map` indexes.
  Value size(Value mem, mlir::AffineMap map, unsigned loop) {
    return b.createOrFold<memref::DimOp>(loc, mem, axisOf(map, loop));
  }
  /// `mem`'s indices for the loop values `m`, `n`, `k`.
  llvm::SmallVector<Value> at(mlir::AffineMap map, Value m, Value n, Value k) {
    llvm::SmallVector<Value> iv(3);
    iv[x.m] = m, iv[x.n] = n, iv[x.k] = k;
    llvm::SmallVector<Value> out;
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      out.push_back(iv[map.getDimPosition(i)]);
    return out;
  }
  /// The i8 at `idx` sign-extended to i32, or 0 where `inside` is false.
  Value loadOrZero(Value mem, llvm::SmallVector<Value> idx, Value inside) {
    auto branch = b.create<scf::IfOp>(loc, b.getI32Type(), inside,
                                      /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&branch.getThenRegion().front());
    Value v = b.create<memref::LoadOp>(loc, mem, idx);
    b.create<scf::YieldOp>(
        loc, Value(b.create<arith::ExtSIOp>(loc, b.getI32Type(), v)));
    b.setInsertionPointToStart(&branch.getElseRegion().front());
    b.create<scf::YieldOp>(loc, i32(0));
    return branch.getResult(0);
  }
  /// The k pair (lo, hi), both sign-extended i32, as one word of two i16.
  Value word(Value lo, Value hi) {
    Value low = b.create<arith::AndIOp>(loc, lo, i32(0xFFFF));
    Value high = b.create<arith::ShLIOp>(loc, hi, i32(16));
    return b.create<arith::OrIOp>(loc, low, high);
  }

  Value pairDot(Value acc, Value a, Value bv);
  void packA();
  void packB();
  void tiles(int64_t rows, Value r0);
  void tile(int64_t rows, int64_t vectors, Value r0, Value panel);
  void store(Value acc, Value row, Value col0);
  void storeLanes(Value acc, Value row, Value col0, Value count);
};

Value Int8GemmEmitter::pairDot(Value acc, Value a, Value bv) {
  // MLIR 19's x86vector has neither: the LLVM intrinsics, on the builtin
  // vector types (LLVM 19's vpdpwssd takes its pairs as i32 words).
  auto call = [&](llvm::StringRef name, mlir::Type result,
                  mlir::ValueRange args) -> Value {
    return b
        .create<mlir::LLVM::CallIntrinsicOp>(loc, result, name, args,
                                             mlir::LLVM::FastmathFlags::none)
        .getResult(0);
  };
  if (dot == Int8Dot::Vnni)
    return call("llvm.x86.avx512.vpdpwssd.512", words(), {acc, a, bv});
  auto halves = mlir::VectorType::get({2 * lanes}, b.getI16Type());
  Value ah = b.create<vector::BitCastOp>(loc, halves, a);
  Value bh = b.create<vector::BitCastOp>(loc, halves, bv);
  Value sums = call(dot == Int8Dot::Avx2 ? "llvm.x86.avx2.pmadd.wd"
                                         : "llvm.x86.avx512.pmaddw.d.512",
                    words(), {ah, bh});
  return b.create<arith::AddIOp>(loc, acc, sums);
}

void Int8GemmEmitter::packA() {
  // ap[r][p] = (A[r][2p], A[r][2p+1]); the second 0 past K.
  loop(cst(0), M, cst(1), [&](Value r) {
    loop(cst(0), pairs, cst(1), [&](Value p) {
      Value k0 = mul(p, cst(2)), k1 = add(k0, cst(1));
      Value lo = b.create<arith::ExtSIOp>(
          loc, b.getI32Type(),
          b.create<memref::LoadOp>(loc, x.a, at(x.mapA, r, Value(), k0)));
      Value hi = loadOrZero(x.a, at(x.mapA, r, Value(), k1), lt(k1, K));
      b.create<memref::StoreOp>(loc, word(lo, hi), ap, mlir::ValueRange{r, p});
    });
  });
}

void Int8GemmEmitter::packB() {
  // bp[j / lanes][p][j % lanes] = (B[2p][j], B[2p+1][j]); 0 past N and K.
  loop(cst(0), pairs, cst(1), [&](Value p) {
    Value k0 = mul(p, cst(2)), k1 = add(k0, cst(1));
    Value hasHi = lt(k1, K);
    loop(cst(0), mul(panels, cst(lanes)), cst(1), [&](Value j) {
      Value inside = lt(j, N);
      Value lo = loadOrZero(x.b, at(x.mapB, Value(), j, k0), inside);
      Value hi = loadOrZero(x.b, at(x.mapB, Value(), j, k1),
                            b.create<arith::AndIOp>(loc, inside, hasHi));
      Value panel = b.createOrFold<arith::DivUIOp>(loc, j, cst(lanes));
      Value lane = b.createOrFold<arith::RemUIOp>(loc, j, cst(lanes));
      b.create<memref::StoreOp>(loc, word(lo, hi), bp,
                                mlir::ValueRange{panel, p, lane});
    });
  });
}

void Int8GemmEmitter::store(Value acc, Value row, Value col0) {
  // C += acc over the columns inside N: C's old value is kept (a zero fill
  // before the contraction stays where it was).
  Value count = min(cst(lanes), sub(N, col0));
  auto typeC = llvm::cast<mlir::MemRefType>(x.c.getType());
  if ((*stridesOf(typeC))[axisOf(x.mapC, x.n)] == 1) {
    // Contiguous along n: a whole vector at once where it fits.
    Value whole = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, count,
                                          cst(lanes));
    auto branch = b.create<scf::IfOp>(loc, whole, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    auto idx = at(x.mapC, row, col0, Value());
    Value old = b.create<vector::LoadOp>(loc, words(), x.c, idx);
    b.create<vector::StoreOp>(loc, b.create<arith::AddIOp>(loc, old, acc), x.c,
                              idx);
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    storeLanes(acc, row, col0, count);
    return;
  }
  storeLanes(acc, row, col0, count);
}

void Int8GemmEmitter::storeLanes(Value acc, Value row, Value col0,
                                 Value count) {
  loop(cst(0), count, cst(1), [&](Value lane) {
    Value v = b.create<vector::ExtractElementOp>(loc, acc, lane);
    auto idx = at(x.mapC, row, add(col0, lane), Value());
    Value old = b.create<memref::LoadOp>(loc, x.c, idx);
    b.create<memref::StoreOp>(loc, b.create<arith::AddIOp>(loc, old, v), x.c,
                              idx);
  });
}

void Int8GemmEmitter::tile(int64_t rows, int64_t vectors, Value r0,
                           Value panel) {
  Value zero = b.create<arith::ConstantOp>(
      loc, mlir::DenseElementsAttr::get(words(), b.getI32IntegerAttr(0)));
  llvm::SmallVector<Value> init(rows * vectors, zero);
  auto sum = b.create<scf::ForOp>(
      loc, cst(0), pairs, cst(1), init,
      [&](OpBuilder &nb, Location, Value p, mlir::ValueRange accs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        llvm::SmallVector<Value> bv;
        for (int64_t v = 0; v < vectors; ++v)
          bv.push_back(b.create<vector::LoadOp>(
              loc, words(), bp,
              mlir::ValueRange{add(panel, cst(v)), p, cst(0)}));
        llvm::SmallVector<Value> next;
        for (int64_t r = 0; r < rows; ++r) {
          Value a = b.create<memref::LoadOp>(
              loc, ap, mlir::ValueRange{add(r0, cst(r)), p});
          Value broadcast = b.create<vector::BroadcastOp>(loc, words(), a);
          for (int64_t v = 0; v < vectors; ++v)
            next.push_back(pairDot(accs[r * vectors + v], broadcast, bv[v]));
        }
        b.create<scf::YieldOp>(loc, next);
      });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vectors; ++v)
      store(sum.getResult(r * vectors + v), add(r0, cst(r)),
            mul(add(panel, cst(v)), cst(lanes)));
}

void Int8GemmEmitter::tiles(int64_t rows, Value r0) {
  // Whole groups of nv panels, then the panels left one at a time.
  Value grouped =
      mul(b.createOrFold<arith::DivUIOp>(loc, panels, cst(nv)), cst(nv));
  loop(cst(0), grouped, cst(nv), [&](Value j) { tile(rows, nv, r0, j); });
  loop(grouped, panels, cst(1), [&](Value j) { tile(rows, 1, r0, j); });
}

void Int8GemmEmitter::emit() {
  M = size(x.a, x.mapA, x.m);
  N = size(x.b, x.mapB, x.n);
  K = size(x.a, x.mapA, x.k);
  pairs = b.createOrFold<arith::CeilDivUIOp>(loc, K, cst(2));
  panels = b.createOrFold<arith::CeilDivUIOp>(loc, N, cst(lanes));
  auto i32Type = b.getI32Type();
  ap = b.create<memref::AllocOp>(
      loc, mlir::MemRefType::get({kDynamic, kDynamic}, i32Type),
      mlir::ValueRange{M, pairs}, b.getI64IntegerAttr(64));
  bp = b.create<memref::AllocOp>(
      loc, mlir::MemRefType::get({kDynamic, kDynamic, lanes}, i32Type),
      mlir::ValueRange{panels, pairs}, b.getI64IntegerAttr(64));
  packA();
  packB();
  // Blocks of mr rows in parallel (one thread's when already inside a
  // parallel tile); the last block's rows one at a time.
  Value blocks = b.createOrFold<arith::CeilDivUIOp>(loc, M, cst(mr));
  auto block = [&](Value rb) {
    Value r0 = mul(rb, cst(mr));
    Value full = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle,
                                         add(r0, cst(mr)), M);
    auto branch = b.create<scf::IfOp>(loc, full, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    tiles(mr, r0);
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    loop(r0, M, cst(1), [&](Value r) { tiles(1, r); });
  };
  if (serial) {
    loop(cst(0), blocks, cst(1), block);
  } else {
    auto parallel = b.create<scf::ParallelOp>(loc, mlir::ValueRange{cst(0)},
                                              mlir::ValueRange{blocks},
                                              mlir::ValueRange{cst(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(parallel.getBody()->getTerminator());
    block(parallel.getInductionVars()[0]);
  }
  b.create<memref::DeallocOp>(loc, ap);
  b.create<memref::DeallocOp>(loc, bp);
}

} // namespace

bool rewriteInt8Contraction(linalg::GenericOp op, Int8Dot dot, bool serial) {
  if (dot == Int8Dot::None)
    return false;
  std::optional<Int8Match> match = matchInt8(op);
  if (!match)
    return false;
  Int8GemmEmitter(*match, dot, serial, op).emit();
  op.erase();
  return true;
}

} // namespace ein
