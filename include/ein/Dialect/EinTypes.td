//===- EinTypes.td - ein dialect types ---------------------*- tablegen -*-===//

#ifndef EIN_DIALECT_EINTYPES_TD
#define EIN_DIALECT_EINTYPES_TD

include "ein/Dialect/EinDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Ein_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Ein_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Ein_TensorType : Ein_Type<"EinTensor", "tensor"> {
  let summary = "a tensor with a symbolic shape";
  let description = [{
    `!ein.tensor<"batch seq heads*d", bf16>`: the shape is a jaxtyping-style
    string parsed by `ein::parseShape` (names, integers, expressions such as
    `heads*d` or `n+1`, variadic packs `*batch`), stored in canonical form
    (`ein::shapeStr`), so equal shapes are equal types. `""` is a scalar.
    The element type is one of the dtype table's (ein/Shape/DTypes.def):
    f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i1 (bool) or i8.

    The C++ class is `ein::EinTensorType` (`ein::TensorType` is the front
    end's shape-plus-dtype struct).
  }];
  let parameters = (ins StringRefParameter<"canonical shape string">:$shapeText,
                        "::mlir::Type":$elementType);
  let builders = [
    TypeBuilderWithInferredContext<(ins "const ::ein::Shape &":$shape,
                                        "::mlir::Type":$elementType), [{
      return $_get(elementType.getContext(), ::ein::shapeStr(shape),
                   elementType);
    }]>,
    // Canonicalises `shapeText` when it parses; a malformed one is kept as
    // is for the verifier to reject (getChecked).
    TypeBuilder<(ins "::llvm::StringRef":$shapeText,
                     "::mlir::Type":$elementType), [{
      return $_get($_ctxt, canonicalShapeText(shapeText), elementType);
    }]>
  ];
  let skipDefaultBuilders = 1;
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// `shapeStr(parseShape(text))`, or `text` itself when it does not parse.
    static std::string canonicalShapeText(::llvm::StringRef text);
    /// The shape, parsed from the stored text. Every shape prints to text
    /// that parses back to it, and the verifier refuses text that does not
    /// parse; an unverified malformed type is a fatal error here, never a
    /// scalar.
    ::ein::Shape getShape() const;
    /// The element type as the front end's DType.
    ::ein::DType getDType() const;
    /// Rank, or -1 when the shape contains a variadic pack.
    int64_t getRankIfKnown() const;
    /// A type with the same element type and another shape.
    EinTensorType withShape(const ::ein::Shape &shape) const;
    /// A type with the same shape and another element type.
    EinTensorType withElementType(::mlir::Type elementType) const;
  }];
}

#endif // EIN_DIALECT_EINTYPES_TD
