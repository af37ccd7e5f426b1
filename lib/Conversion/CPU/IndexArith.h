// The CPU back end's emitters' index arithmetic: constants, sums, products,
// minimums and comparisons of index values, folded where they can be.
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace ein {

/// A builder at an op and its location, with the index arithmetic and the
/// plain loop every loop-nest emitter writes (ein-tile-contractions,
/// ein-tile-transposes, the int8 GEMM) in one place.
struct IndexArith {
  explicit IndexArith(mlir::Operation *at) : b(at), loc(at->getLoc()) {}

  mlir::OpBuilder b;
  mlir::Location loc;

  mlir::Value cst(int64_t v) {
    return b.create<mlir::arith::ConstantIndexOp>(loc, v);
  }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return b.createOrFold<mlir::arith::AddIOp>(loc, x, y);
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return b.createOrFold<mlir::arith::SubIOp>(loc, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return b.createOrFold<mlir::arith::MulIOp>(loc, x, y);
  }
  mlir::Value min(mlir::Value x, mlir::Value y) {
    return b.createOrFold<mlir::arith::MinSIOp>(loc, x, y);
  }
  mlir::Value max(mlir::Value x, mlir::Value y) {
    return b.createOrFold<mlir::arith::MaxSIOp>(loc, x, y);
  }
  mlir::Value ceilDiv(mlir::Value x, mlir::Value y) {
    return b.createOrFold<mlir::arith::CeilDivSIOp>(loc, x, y);
  }
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return b.createOrFold<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::slt, x, y);
  }
  /// scf.for from lb to ub by step; `body` gets the induction variable.
  void loop(mlir::Value lb, mlir::Value ub, mlir::Value step,
            llvm::function_ref<void(mlir::Value)> body) {
    auto f = b.create<mlir::scf::ForOp>(loc, lb, ub, step);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(f.getBody()->getTerminator());
    body(f.getInductionVar());
  }
};

} // namespace ein
