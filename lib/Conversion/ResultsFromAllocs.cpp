// The ein-results-from-allocs pass: every returned buffer is its own alloc.
#include "ein/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

#include <set>

namespace ein {

#define GEN_PASS_DEF_RESULTSFROMALLOCS
#include "ein/Conversion/Passes.h.inc"

namespace {

struct ResultsFromAllocsPass
    : impl::ResultsFromAllocsBase<ResultsFromAllocsPass> {
  void runOnOperation() override {
    getOperation().walk([](mlir::func::ReturnOp ret) {
      mlir::OpBuilder b(ret);
      std::set<mlir::Operation *> seen;
      for (mlir::OpOperand &operand : ret->getOpOperands()) {
        mlir::Value v = operand.get();
        auto type = llvm::dyn_cast<mlir::MemRefType>(v.getType());
        if (!type)
          continue;
        auto alloc = v.getDefiningOp<mlir::memref::AllocOp>();
        if (alloc && seen.insert(alloc).second)
          continue;
        auto fresh = b.create<mlir::memref::AllocOp>(
            ret.getLoc(),
            mlir::MemRefType::get(type.getShape(), type.getElementType()));
        b.create<mlir::memref::CopyOp>(ret.getLoc(), v, fresh);
        operand.set(fresh);
        seen.insert(fresh);
      }
    });
  }
};

} // namespace
} // namespace ein
