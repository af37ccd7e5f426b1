//===- EinDialect.td - the ein dialect ---------------------*- tablegen -*-===//
//
// The `ein` dialect: einops-style tensor operations on tensors whose shapes
// are symbolic (`"batch seq heads*d"`). Op verifiers are the static shape
// checker: they re-run the front end's shape inference (ein/Shape/Infer.h).
//
//===----------------------------------------------------------------------===//

#ifndef EIN_DIALECT_EINDIALECT_TD
#define EIN_DIALECT_EINDIALECT_TD

include "mlir/IR/OpBase.td"
include "ein/Dialect/EinInterfaces.td"

def Ein_Dialect : Dialect {
  let name = "ein";
  let cppNamespace = "::ein";
  let summary = "einops-style tensor programs with symbolic shapes";
  let description = [{
    Values are `!ein.tensor<"shape", elt>` where the shape is a string of
    symbolic dimensions (`"batch seq heads*d"`, `""` for a scalar).
    Operations mirror einops (`ein.rearrange`, `ein.reduce`, `ein.repeat`,
    `ein.einsum`, `ein.pack`, `ein.unpack`) plus elementwise arithmetic with
    broadcasting by dimension name. Sizes known at compile time live in the
    module attribute `ein.dims = {heads = 8 : i64}`; verifiers use them.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the module attribute holding compile-time sizes.
    static constexpr ::llvm::StringLiteral getDimsAttrName() {
      return ::llvm::StringLiteral("ein.dims");
    }
  private:
    void registerTypes();
    void registerAttributes();
  public:
  }];
}

// Every ein op has a cost (EinInterfaces.td), so one without a cost does not
// link.
class Ein_Op<string mnemonic, list<Trait> traits = []>
    : Op<Ein_Dialect, mnemonic,
         !listconcat(traits, [DeclareOpInterfaceMethods<Ein_CostOpInterface>])>;

#endif // EIN_DIALECT_EINDIALECT_TD
