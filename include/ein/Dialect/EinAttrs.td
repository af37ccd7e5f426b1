//===- EinAttrs.td - ein dialect attributes ----------------*- tablegen -*-===//

#ifndef EIN_DIALECT_EINATTRS_TD
#define EIN_DIALECT_EINATTRS_TD

include "ein/Dialect/EinDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class Ein_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Ein_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Ein_PatternAttr : Ein_Attr<"Pattern", "pattern"> {
  let summary = "an einops pattern";
  let description = [{
    `#ein.pattern<"b s (h d) -> b h s d">`. Stored as the canonical text
    (`ein::Pattern::str()`, single spaces); `ein::parsePattern` is the one
    parser, so the structure is recovered with `getPattern(use)`, which keeps
    token offsets for diagnostics. The attribute checks that the text parses
    for at least one use (rearrange, reduce, repeat, einsum, pack); each op
    verifier checks the rules of its own use.
  }];
  let parameters = (ins StringRefParameter<"canonical pattern text">:$text);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "const ::ein::Pattern &":$pattern), [{
      return $_get($_ctxt, pattern.str());
    }]>
  ];
  let extraClassDeclaration = [{
    /// Parses the text for `use` (the op's grammar).
    ::ein::Expected<::ein::Pattern> getPattern(::ein::PatternUse use) const;
    /// Parses the text with the use guessed from its form: einsum when it
    /// has several inputs, pack when it has no arrow, else rearrange.
    ::ein::Expected<::ein::Pattern> getPattern() const;
    /// Canonical text of `text` if it parses for some use; the error of the
    /// guessed use otherwise.
    static ::ein::Expected<std::string> canonicalize(::llvm::StringRef text);
    /// The use guessed from the text's form (see getPattern()).
    static ::ein::PatternUse guessUse(::llvm::StringRef text);
  }];
}

def Ein_ReduceKind : I32EnumAttr<"ReduceOpKind", "reduction kind", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"max", 2>,
  I32EnumAttrCase<"min", 3>,
  I32EnumAttrCase<"prod", 4>
]> {
  let cppNamespace = "::ein";
  let genSpecializedAttr = 0;
}

def Ein_ReduceKindAttr : EnumAttr<Ein_Dialect, Ein_ReduceKind, "reduce_kind"> {
  // `#ein.reduce_kind<sum>` on its own; a bare keyword in `ein.reduce sum`.
  let assemblyFormat = "`<` $value `>`";
}

#endif // EIN_DIALECT_EINATTRS_TD
