// Ein_CostOpInterface for every op of the registry (Ops.def): its kind, and its
// cost from the cost model.
#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Sema/Program.h"

#include "ein/Dialect/EinInterfaces.cpp.inc"

using namespace mlir;

namespace ein {

namespace {

TensorType frontEndType(mlir::Value v) {
  auto t = llvm::cast<EinTensorType>(v.getType());
  return TensorType{t.getShape(), t.getDType()};
}

/// The cost of `op`, of registry kind `kind`: the operand and result types,
/// plus what the kind's count needs from the op's attributes. One case per
/// kind and no default, so a new row of Ops.def is a -Wswitch warning here.
LogicalResult costOf(Operation *op, OpKind kind, const Bindings &env,
                     OpCost &cost) {
  CostInput in;
  in.kind = kind;
  for (mlir::Value v : op->getOperands())
    in.inputs.push_back(frontEndType(v));
  for (mlir::Value v : op->getResults())
    in.outputs.push_back(frontEndType(v));
  std::optional<TransformInfo> transform;
  std::optional<EinsumInfo> einsum;
  bool ok = true;
  switch (kind) {
  case OpKind::Rearrange:
  case OpKind::Repeat:
  case OpKind::Reduce:
    transform = getTransformInfo(op);
    ok = transform.has_value();
    if (ok)
      in.transform = &*transform;
    if (auto r = llvm::dyn_cast<ReduceOp>(op))
      in.reduction = toReduceKind(r.getKind());
    break;
  case OpKind::Einsum:
    einsum = getEinsumInfo(llvm::cast<EinsumOp>(op));
    ok = einsum.has_value();
    if (ok)
      in.einsum = &*einsum;
    break;
  case OpKind::Elementwise:
    in.fn = llvm::cast<ElementwiseOp>(op).getInfo().fn;
    break;
  case OpKind::Unpack: {
    auto pattern =
        llvm::cast<UnpackOp>(op).getPattern().getPattern(PatternUse::Pack);
    ok = static_cast<bool>(pattern);
    if (ok)
      in.packAxesBefore = pattern->inputs[0].starIndex();
    break;
  }
  case OpKind::Slice:
    in.packAxesBefore = llvm::cast<SliceOp>(op).getDimIndex();
    break;
  case OpKind::Pack:
  case OpKind::Cast:
  case OpKind::Constant:
  case OpKind::Size:
  case OpKind::Arange:
  case OpKind::Take:
  case OpKind::ScatterAdd:
    break; // operand and result types are all the count needs
  }
  if (!ok)
    return op->emitOpError(
        "cannot compute the cost of an op that does not verify");
  cost = computeCost(in, env);
  return success();
}

} // namespace

// Each registry row's op class implements the interface; a row whose class
// is missing, or an op class without a row, fails to compile or to link.
#define EIN_OP(Kind, Name, OpClass)                                            \
  OpKind OpClass::getOpKind() { return OpKind::Kind; }                         \
  LogicalResult OpClass::computeOpCost(const Bindings &env, OpCost &cost) {    \
    return costOf(getOperation(), OpKind::Kind, env, cost);                    \
  }
#include "ein/Sema/Ops.def"

} // namespace ein
