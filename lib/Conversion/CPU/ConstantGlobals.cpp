// The ein-constant-globals pass: the memref.global of every tensor constant
// created in program order, so that one-shot bufferization (which visits
// functions in a pointer-hash order) names and places them the same on every
// run.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/Transforms/BufferUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace ein {

#define GEN_PASS_DEF_CONSTANTGLOBALS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

struct ConstantGlobals : impl::ConstantGlobalsBase<ConstantGlobals> {
  using ConstantGlobalsBase::ConstantGlobalsBase;

  void runOnOperation() override {
    // The same constants one-shot bufferization makes globals of (ranked
    // tensors; it refuses unranked ones itself), through the same function,
    // so that its own call finds each global by value and alignment.
    auto result = getOperation().walk([&](mlir::arith::ConstantOp op) {
      if (!llvm::isa<mlir::RankedTensorType>(op.getType()))
        return mlir::WalkResult::advance();
      if (mlir::failed(mlir::bufferization::getGlobalFor(op, alignment)))
        return mlir::WalkResult::interrupt();
      return mlir::WalkResult::advance();
    });
    if (result.wasInterrupted()) {
      getOperation().emitError("ein-constant-globals: no memref.global for a "
                               "tensor constant");
      signalPassFailure();
    }
  }
};

} // namespace
} // namespace ein
