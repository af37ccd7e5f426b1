//===- EinInterfaces.td - ein op interfaces ----------------*- tablegen -*-===//
//
// Op interfaces every ein op implements, after MLIR's InferTypeOpInterface:
// the cost model's view of an op (Ein_CostOpInterface).
//
//===----------------------------------------------------------------------===//

#ifndef EIN_DIALECT_EININTERFACES_TD
#define EIN_DIALECT_EININTERFACES_TD

include "mlir/IR/OpBase.td"

def Ein_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::ein";
  let description = [{
    The analytic cost of an op (FLOPs, bytes read and written, whether it is
    a view), computed by the cost model (`ein::computeCost`,
    lib/Analysis/Cost.cpp) from the op's operand and result types and its
    attributes. Every ein op has it through `Ein_Op`, so an op without a cost
    does not link; `ein-annotate-costs` refuses by name any `ein` op that
    lacks it. The implementations are generated from the op registry
    (include/ein/Sema/Ops.def) in lib/Dialect/EinCost.cpp.
  }];
  let methods = [
    InterfaceMethod<"The op's kind in the op registry (Ops.def).",
      "::ein::OpKind", "getOpKind">,
    InterfaceMethod<[{
        The op's cost with the dims bound in `env`; failure (with an error
        emitted at the op) when the op does not verify.
      }],
      "::mlir::LogicalResult", "computeOpCost",
      (ins "const ::ein::Bindings &":$env, "::ein::OpCost &":$cost)>,
  ];
}

#endif // EIN_DIALECT_EININTERFACES_TD
