// Part of ein-tile-contractions: the bf16 pair dot product micro-kernel step
// (vdpbf16ps, avx512bf16) and when a contraction takes it.
#include "PairDot.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace ein {

bool usesPairDot(const Contraction &c, bool bf16Dot, int64_t lanes) {
  auto element = [](mlir::Value v) {
    return llvm::cast<mlir::MemRefType>(v.getType()).getElementType();
  };
  return bf16Dot && lanes == kPairDotLanes && c.acc.isF32() &&
         element(c.a).isBF16() && element(c.b).isBF16();
}

mlir::Value broadcastPair(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value packed, mlir::ValueRange at) {
  // The pair as one i32, broadcast, seen as bf16 again: LLVM makes it one
  // vpbroadcastd from memory.
  auto pairType = mlir::VectorType::get({2}, b.getBF16Type());
  mlir::Value pair = b.create<mlir::vector::LoadOp>(loc, pairType, packed, at);
  mlir::Value word = b.create<mlir::vector::BitCastOp>(
      loc, mlir::VectorType::get({1}, b.getI32Type()), pair);
  mlir::Value scalar = b.create<mlir::vector::ExtractOp>(loc, word, 0);
  mlir::Value words = b.create<mlir::vector::BroadcastOp>(
      loc, mlir::VectorType::get({kPairDotLanes}, b.getI32Type()), scalar);
  return b.create<mlir::vector::BitCastOp>(
      loc, mlir::VectorType::get({2 * kPairDotLanes}, b.getBF16Type()), words);
}

mlir::Value pairDot(mlir::OpBuilder &b, mlir::Location loc, mlir::Value acc,
                    mlir::Value a, mlir::Value bv) {
  // MLIR 19's x86vector has no bf16 dot: the LLVM intrinsic, called on the
  // builtin vector types (valid LLVM dialect types) directly.
  return b
      .create<mlir::LLVM::CallIntrinsicOp>(
          loc, acc.getType(),
          llvm::StringRef("llvm.x86.avx512bf16.dpbf16ps.512"),
          mlir::ValueRange{acc, a, bv}, mlir::LLVM::FastmathFlags::none)
      .getResult(0);
}

} // namespace ein
