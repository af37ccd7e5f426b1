// The ein-copies-to-linalg pass: memref.copy becomes a linalg.generic copy,
// lowered to parallel, vectorizable loops like every other op.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace ein {

#define GEN_PASS_DEF_COPIESTOLINALG
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

struct CopiesToLinalgPass : impl::CopiesToLinalgBase<CopiesToLinalgPass> {
  void runOnOperation() override {
    llvm::SmallVector<mlir::memref::CopyOp> copies;
    getOperation().walk([&](mlir::memref::CopyOp c) { copies.push_back(c); });
    mlir::OpBuilder b(&getContext());
    for (auto copy : copies) {
      mlir::Value from = copy.getSource(), to = copy.getTarget();
      auto type = llvm::dyn_cast<mlir::MemRefType>(from.getType());
      if (from == to) {
        copy.erase();
        continue;
      }
      if (!type || !llvm::isa<mlir::MemRefType>(to.getType()))
        continue; // unranked: left to the runtime's memrefCopy
      b.setInsertionPoint(copy);
      auto identity = b.getMultiDimIdentityMap(type.getRank());
      llvm::SmallVector<mlir::utils::IteratorType> iterators(
          type.getRank(), mlir::utils::IteratorType::parallel);
      b.create<mlir::linalg::GenericOp>(
          copy.getLoc(), mlir::TypeRange{}, mlir::ValueRange{from},
          mlir::ValueRange{to},
          llvm::ArrayRef<mlir::AffineMap>{identity, identity}, iterators,
          [](mlir::OpBuilder &nb, mlir::Location loc, mlir::ValueRange args) {
            nb.create<mlir::linalg::YieldOp>(loc, args[0]);
          });
      copy.erase();
    }
  }
};

} // namespace
} // namespace ein
