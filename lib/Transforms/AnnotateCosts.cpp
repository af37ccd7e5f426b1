// The ein-annotate-costs pass: attaches each op's analytic cost to the IR.
#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ein {

#define GEN_PASS_DEF_ANNOTATECOSTS
#include "ein/Transforms/Passes.h.inc"

namespace {

mlir::Attribute valueAttr(mlir::Builder &b, const std::optional<Int> &v) {
  if (!v)
    return nullptr;
  unsigned __int128 u = static_cast<unsigned __int128>(*v);
  uint64_t words[2] = {static_cast<uint64_t>(u), static_cast<uint64_t>(u >> 64)};
  return b.getIntegerAttr(b.getIntegerType(128), llvm::APInt(128, words));
}

struct AnnotateCostsPass : impl::AnnotateCostsBase<AnnotateCostsPass> {
  void runOnOperation() override {
    mlir::Builder b(&getContext());
    bool failedAny = false;
    getOperation().walk([&](mlir::func::FuncOp fn) {
      SizeExpr total;
      std::optional<Int> totalValue = Int(0);
      fn.walk([&](mlir::Operation *op) {
        auto costed = llvm::dyn_cast<CostOpInterface>(op);
        if (!costed) {
          // Every ein op has a cost (Ein_Op declares the interface); an op
          // of the dialect without one is refused, never left uncosted.
          if (llvm::isa_and_nonnull<EinDialect>(op->getDialect())) {
            op->emitOpError("has no cost: it does not implement "
                            "Ein_CostOpInterface");
            failedAny = true;
          }
          return;
        }
        OpCost cost;
        if (mlir::failed(costed.computeOpCost(getModuleDims(op), cost))) {
          failedAny = true;
          return;
        }
        llvm::SmallVector<mlir::NamedAttribute> fields;
        auto add = [&](const char *name, const Quantity &q) {
          fields.push_back(b.getNamedAttr(name, b.getStringAttr(q.expr.str())));
          if (auto v = valueAttr(b, q.value))
            fields.push_back(b.getNamedAttr(std::string(name) + "_value", v));
        };
        add("flops", cost.flops);
        add("bytes_read", cost.bytesRead);
        add("bytes_written", cost.bytesWritten);
        if (cost.naiveFlops)
          add("naive_flops", *cost.naiveFlops);
        fields.push_back(b.getNamedAttr("view", b.getBoolAttr(cost.view)));
        op->setAttr("ein.cost", b.getDictionaryAttr(fields));
        total = total + cost.flops.expr;
        if (totalValue && cost.flops.value)
          totalValue = checkedAdd(*totalValue, *cost.flops.value);
        else
          totalValue = std::nullopt;
      });
      fn->setAttr("ein.total_flops", b.getStringAttr(total.str()));
      if (auto v = valueAttr(b, totalValue))
        fn->setAttr("ein.total_flops_value", v);
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

} // namespace ein
