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
  let summary = "an einops pattern, stored as its structure";
  let description = [{
    `#ein.pattern<"b s (h d) -> b h s d">`. The attribute holds the pattern's
    structure, not its text: `inputs` is one array per operand and `output`
    one array, each listing the top-level elements of that side; a bare axis
    is a StringAttr (`"b"`, `"..."`, `"*"`, or the digits of an anonymous
    axis) and a parenthesised composition is an ArrayAttr of StringAttrs
    (`["h", "d"]`; `()` is the empty array, a bare `1` the string "1"). `hasArrow` is
    false only for pack patterns (`"b * c"`). It prints and parses as the
    canonical text (`ein::Pattern::str()`); `ein::parsePattern` is the one
    parser, so `getPattern(use)` recovers an `ein::Pattern` for an op's
    grammar. The attribute accepts a pattern that parses for at least one
    use; each op verifier checks the rules of its own use.
  }];
  let parameters = (ins "::mlir::ArrayAttr":$inputs, "::mlir::ArrayAttr":$output,
                        "bool":$hasArrow);
  let hasCustomAssemblyFormat = 1;
  let builders = [
    AttrBuilder<(ins "const ::ein::Pattern &":$pattern)>,
    /// Parses `text` (any use); an unparsable text gives a null attribute.
    AttrBuilder<(ins "::llvm::StringRef":$text)>
  ];
  let skipDefaultBuilders = 0;
  let extraClassDeclaration = [{
    /// The canonical text, rebuilt from the structure.
    std::string getText() const;
    /// Parses the text for `use` (the op's grammar).
    ::ein::Expected<::ein::Pattern> getPattern(::ein::PatternUse use) const;
    /// Parses the text with the use guessed from its form: einsum when it
    /// has several inputs, pack when it has no arrow, else rearrange.
    ::ein::Expected<::ein::Pattern> getPattern() const;
    /// The pattern of `text` if it parses for some use; the error of the
    /// guessed use otherwise.
    static ::ein::Expected<::ein::Pattern> parseAnyUse(::llvm::StringRef text);
    /// The use guessed from the text's form (see getPattern()).
    static ::ein::PatternUse guessUse(::llvm::StringRef text);
  }];
}

def Ein_ReduceKind : I32EnumAttr<"ReduceOpKind", "reduction kind", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"max", 2>,
  I32EnumAttrCase<"min", 3>,
  I32EnumAttrCase<"prod", 4>,
  I32EnumAttrCase<"any", 5>,
  I32EnumAttrCase<"all", 6>,
  I32EnumAttrCase<"var", 7>
]> {
  let cppNamespace = "::ein";
  let genSpecializedAttr = 0;
}

def Ein_ReduceKindAttr : EnumAttr<Ein_Dialect, Ein_ReduceKind, "reduce_kind"> {
  // `#ein.reduce_kind<sum>` on its own; a bare keyword in `ein.reduce sum`.
  let assemblyFormat = "`<` $value `>`";
}

#endif // EIN_DIALECT_EINATTRS_TD
