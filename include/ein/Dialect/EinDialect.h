//===- EinDialect.h - the ein dialect ---------------------------*- C++ -*-===//
//
// The one header to include for the ein dialect: dialect, types, attributes,
// ops, and the helpers that connect them to the front end's shape library.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ein/Shape/Elementwise.h"
#include "ein/Shape/Infer.h"
#include "ein/Shape/Shape.h"
#include "ein/Syntax/Pattern.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {
enum class OpKind; // ein/Sema/Program.h (not included: its ein::Value
                   // would shadow mlir::Value in the dialect)
struct OpCost;     // ein/Analysis/Cost.h
} // namespace ein

#include "ein/Dialect/EinDialect.h.inc"
#include "ein/Dialect/EinEnums.h.inc"
#include "ein/Dialect/EinInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ein/Dialect/EinTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ein/Dialect/EinAttrs.h.inc"

#define GET_OP_CLASSES
#include "ein/Dialect/EinOps.h.inc"

namespace ein {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// The DType of a builtin element type (a row of ein/Shape/DTypes.def);
/// nullopt for anything else.
std::optional<DType> toDType(mlir::Type type);
/// The builtin element type of a DType.
mlir::Type toMLIRType(mlir::MLIRContext *context, DType dtype);

/// `!ein.tensor` of a front-end tensor type.
EinTensorType toMLIRType(mlir::MLIRContext *context, const TensorType &type);

//===----------------------------------------------------------------------===//
// Reduce kinds
//===----------------------------------------------------------------------===//

ReduceKind toReduceKind(ReduceOpKind kind);
ReduceOpKind toReduceOpKind(ReduceKind kind);

//===----------------------------------------------------------------------===//
// Index status
//===----------------------------------------------------------------------===//

/// A unit attribute on a func.func with an `ein.take` (MLIRGen sets it when
/// CheckedFunction::hasIndexStatus): ein-to-linalg gives the function one
/// more result, a tensor<1xi64> counting the ids out of range, which the
/// host calling convention makes its last output (the JIT and the C entry
/// read it after the call: an error when non-zero).
inline constexpr llvm::StringLiteral kIndexStatusAttr = "ein.index_status";

//===----------------------------------------------------------------------===//
// Sizes and compile-time dims
//===----------------------------------------------------------------------===//

/// The `sizes` dictionary of `args`: name -> StringAttr of the expression.
mlir::DictionaryAttr getSizesAttr(mlir::MLIRContext *context,
                                  const std::vector<SizeArg> &args);
/// The size arguments of a `sizes` dictionary (null gives none). Values are
/// StringAttr size expressions or integers.
Expected<std::vector<SizeArg>> getSizeArgs(mlir::DictionaryAttr sizes);

/// The `parts` attribute of `ein.unpack`: one shape string per result.
mlir::ArrayAttr getPartsAttr(mlir::MLIRContext *context,
                             const std::vector<Shape> &parts);
/// The shapes of a `parts` attribute (verified ops only).
std::vector<Shape> getParts(mlir::ArrayAttr parts);

/// The compile-time sizes in the `ein.dims` attribute of `op`'s enclosing
/// module (or of `op` itself when it is a module); empty when absent.
Bindings getModuleDims(mlir::Operation *op);
/// Sets the `ein.dims` attribute of `module` to `dims`.
void setModuleDims(mlir::ModuleOp module, const Bindings &dims);
/// An inference context whose env holds `getModuleDims(op)`.
InferContext getInferContext(mlir::Operation *op);

/// The elementary-axis structure of a verified `ein.rearrange`,
/// `ein.reduce` or `ein.repeat` (nullopt for other ops), as the cost model
/// and the lowering read it.
std::optional<TransformInfo> getTransformInfo(mlir::Operation *op);
/// The elementary-axis structure of a verified `ein.einsum`.
std::optional<EinsumInfo> getEinsumInfo(EinsumOp op);

} // namespace ein
