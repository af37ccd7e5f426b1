// The ein-annotate-costs pass: attaches each op's analytic cost to the IR.
#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

namespace ein {

#define GEN_PASS_DEF_ANNOTATECOSTS
#include "ein/Transforms/Passes.h.inc"

namespace {

std::optional<OpKind> kindOf(mlir::Operation *op) {
  return llvm::TypeSwitch<mlir::Operation *, std::optional<OpKind>>(op)
      .Case<RearrangeOp>([](auto) { return OpKind::Rearrange; })
      .Case<ReduceOp>([](auto) { return OpKind::Reduce; })
      .Case<RepeatOp>([](auto) { return OpKind::Repeat; })
      .Case<EinsumOp>([](auto) { return OpKind::Einsum; })
      .Case<PackOp>([](auto) { return OpKind::Pack; })
      .Case<UnpackOp>([](auto) { return OpKind::Unpack; })
      .Case<ElementwiseOp>([](auto) { return OpKind::Elementwise; })
      .Case<CastOp>([](auto) { return OpKind::Cast; })
      .Case<ConstantOp>([](auto) { return OpKind::Constant; })
      .Case<SizeOp>([](auto) { return OpKind::Size; })
      .Case<ArangeOp>([](auto) { return OpKind::Arange; })
      .Case<TakeOp>([](auto) { return OpKind::Take; })
      .Case<SliceOp>([](auto) { return OpKind::Slice; })
      .Case<ScatterAddOp>([](auto) { return OpKind::ScatterAdd; })
      .Default([](auto) { return std::nullopt; });
}

TensorType frontEndType(mlir::Value v) {
  auto t = llvm::cast<EinTensorType>(v.getType());
  return TensorType{t.getShape(), t.getDType()};
}

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
        auto kind = kindOf(op);
        if (!kind)
          return;
        Bindings env = getModuleDims(op);
        CostInput in;
        in.kind = *kind;
        for (mlir::Value v : op->getOperands())
          in.inputs.push_back(frontEndType(v));
        for (mlir::Value v : op->getResults())
          in.outputs.push_back(frontEndType(v));
        std::optional<TransformInfo> transform = getTransformInfo(op);
        std::optional<EinsumInfo> einsum;
        bool ok = true;
        if (llvm::isa<RearrangeOp, RepeatOp, ReduceOp>(op)) {
          ok = transform.has_value();
          if (ok)
            in.transform = &*transform;
          if (auto r = llvm::dyn_cast<ReduceOp>(op))
            in.reduction = toReduceKind(r.getKind());
        } else if (auto e = llvm::dyn_cast<EinsumOp>(op)) {
          einsum = getEinsumInfo(e);
          ok = einsum.has_value();
          if (ok)
            in.einsum = &*einsum;
        } else if (auto e = llvm::dyn_cast<ElementwiseOp>(op)) {
          in.fn = e.getInfo().fn;
        } else if (auto u = llvm::dyn_cast<UnpackOp>(op)) {
          auto pattern = u.getPattern().getPattern(PatternUse::Pack);
          ok = static_cast<bool>(pattern);
          if (ok)
            in.packAxesBefore = pattern->inputs[0].starIndex();
        } else if (auto s = llvm::dyn_cast<SliceOp>(op)) {
          in.packAxesBefore = s.getDimIndex();
        }
        if (!ok) {
          op->emitOpError("cannot compute the cost of an op that does not verify");
          failedAny = true;
          return;
        }
        OpCost cost = computeCost(in, env);
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
