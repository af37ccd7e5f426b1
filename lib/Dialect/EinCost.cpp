// Ein_CostOpInterface for every op of the registry (Ops.def): its kind, and its
// cost from the cost model, with what the op's attributes add to it from the
// op's fillCostInput (lib/Dialect/Ops/<Family>.cpp). Names no op.
#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Dialect/OpRules.h"
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
/// plus what `fill` (the op's fillCostInput, beside its verifier in its
/// family's file, lib/Dialect/Ops/) takes from its attributes.
template <typename FillFn>
LogicalResult costOf(Operation *op, OpKind kind, const Bindings &env,
                     OpCost &cost, FillFn fill) {
  CostInput in;
  in.kind = kind;
  for (mlir::Value v : op->getOperands())
    in.inputs.push_back(frontEndType(v));
  for (mlir::Value v : op->getResults())
    in.outputs.push_back(frontEndType(v));
  CostInputStorage storage;
  if (failed(fill(in, storage)))
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
    return costOf(getOperation(), OpKind::Kind, env, cost,                     \
                  [&](CostInput &in, CostInputStorage &storage) {              \
                    return fillCostInput(*this, in, storage);                  \
                  });                                                          \
  }
#include "ein/Sema/Ops.def"

} // namespace ein
