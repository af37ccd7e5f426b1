// Part of ein-tile-contractions: the emitter of the loop nest that replaces
// one contraction (its blocking, the packing copies, the register-tiled
// micro-kernel); TileContractions.cpp emits the nest,
// ContractionMicroKernel.cpp the packing and the micro-kernel.
#pragma once

#include "ContractionEpilogue.h"
#include "IndexArith.h"
#include "MatchContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <optional>

namespace ein::tiling {

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
  int64_t mChunks;     // parallel blocks of m wanted with no outer loops
  int64_t minItemWork; // multiply-adds per block at least (0: no minimum)
  bool serial;         // inside a fused tile, which already runs on one core
  bool pairDot;        // bf16 k pairs on vdpbf16ps (PairDot.h); else FMAs
};

/// Emits the loop nest that replaces one contraction.
class KernelEmitter : IndexArith {
public:
  KernelEmitter(const Contraction &contraction, const Blocking &blocking,
                std::optional<Epilogue> epilogue)
      : IndexArith(mlir::linalg::GenericOp(contraction.op).getOperation()),
        c(contraction), blk(blocking), epi(epilogue) {}

  void emit();

private:
  Contraction c;
  Blocking blk;
  std::optional<Epilogue> epi; // applied as the last block of the sum is stored
  llvm::SmallVector<Value> size; // the trip count of every loop
  // Blocking for these sizes (emitBlocked): parallel items are `outer`
  // outer iterations times `chunks` chunks of `chunk` rows of m.
  Value outer, chunks, chunk, mc, nc, kc;
  // A read in place (`direct`) or packed; the contiguous tile for C when
  // its n has no unit stride (`scratch`; null when the type says it has).
  Value scratch;
  bool direct = false;

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

  using IndexArith::loop;
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

} // namespace ein::tiling
