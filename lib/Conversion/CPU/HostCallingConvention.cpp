// The ein-host-calling-convention pass: results become output parameters
// written in place, and functions get C entry points with noalias arguments.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace ein {

#define GEN_PASS_DEF_HOSTCALLINGCONVENTION
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

struct HostCallingConventionPass
    : impl::HostCallingConventionBase<HostCallingConventionPass> {
  void runOnOperation() override {
    mlir::OpBuilder b(&getContext());
    for (auto fn : getOperation().getOps<mlir::func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      unsigned numInputs = fn.getNumArguments();
      for (unsigned i = 0; i < numInputs; ++i)
        fn.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
      // One output parameter per result, in return order.
      mlir::Block &entry = fn.getBody().front();
      for (mlir::Type t : fn.getResultTypes()) {
        if (!llvm::isa<mlir::RankedTensorType>(t)) {
          fn.emitError() << "ein-host-calling-convention expects tensor "
                            "results, got "
                         << t;
          return signalPassFailure();
        }
        fn.insertArgument(fn.getNumArguments(), t, {}, fn.getLoc());
      }
      fn.walk([&](mlir::func::ReturnOp ret) {
        b.setInsertionPoint(ret);
        // A value returned twice is computed into its first output and
        // copied from there into the others (bufferization could not write
        // one value in place into two buffers).
        llvm::DenseMap<mlir::Value, mlir::Value> first;
        for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
          mlir::Value out = entry.getArgument(numInputs + k);
          mlir::Value value = ret.getOperand(k);
          if (auto it = first.find(value); it != first.end())
            value = it->second;
          auto materialized =
              b.create<mlir::bufferization::MaterializeInDestinationOp>(
                  ret.getLoc(), value, out);
          first.try_emplace(ret.getOperand(k), materialized.getResult());
          ret.setOperand(k, materialized.getResult());
        }
      });
      // Inputs are read-only and outputs overlap neither inputs nor each
      // other (the C header's rule; einc run allocates fresh outputs):
      // telling LLVM lets it vectorize loops that read and write them.
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        fn.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
      // A C entry point (`_mlir_ciface_NAME`) taking memref descriptors.
      fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    }
  }
};

} // namespace
} // namespace ein
