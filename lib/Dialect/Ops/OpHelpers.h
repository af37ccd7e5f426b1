//===- OpHelpers.h - what the ein ops' rules share -------------*- C++ -*-===//
//
// Private to lib/Dialect: the verifier and builder helpers that the op family
// files (Ops/<Family>.cpp) share, defined in EinOps.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ein/Dialect/EinDialect.h"
#include "ein/Dialect/OpRules.h"
#include "ein/Sema/Program.h"
#include "ein/Shape/DTypeRules.h"

namespace ein::oprules {

/// The op's error for a shape rule's failure.
mlir::LogicalResult fail(mlir::Operation *op, const ShapeError &error);

EinTensorType tensorType(mlir::Value value);

/// Checks that `result` has the inferred shape and element type.
mlir::LogicalResult checkResult(mlir::Operation *op, InferContext &ctx,
                                EinTensorType result, const Shape &inferred,
                                mlir::Type elementType,
                                llvm::StringRef what = "result");

/// The dtype rule `rule` applied to each tensor operand.
mlir::LogicalResult checkOperandDTypes(mlir::Operation *op,
                                       const DTypeRule &rule);
/// The dtype rule of `op` (by its name without `ein.`) applied to each
/// tensor operand.
mlir::LogicalResult checkOperandDTypes(mlir::Operation *op);

/// `acc`, when present, must be a supported element type the rule admits.
mlir::LogicalResult checkAcc(mlir::Operation *op, const DTypeRule &rule,
                             mlir::Type acc);

/// Parses the op's pattern for `use`.
Expected<ein::Pattern> opPattern(PatternAttr attr, PatternUse use);

/// Checks that all `values` share one element type, returned in `common`.
mlir::LogicalResult sameElementTypes(mlir::Operation *op,
                                     mlir::ValueRange values,
                                     mlir::Type &common);

/// The pattern of a checked pattern op, as parsed by the checker.
PatternAttr checkedPattern(mlir::OpBuilder &builder, const CheckedOp &op);
/// The `sizes` dictionary of a checked pattern op, or null without sizes.
mlir::DictionaryAttr checkedSizes(mlir::OpBuilder &builder,
                                  const CheckedOp &op);
/// The `acc` type of a checked reduce or einsum, or null without one.
mlir::TypeAttr checkedAcc(mlir::OpBuilder &builder, const CheckedOp &op);

/// Verifies `op` through the builder (ProgramBuilder::build): builds the op
/// `attributes` describe (its CheckedOp, read back from its attributes by
/// the family file's checkedOf) of parameters of the operands' types, in
/// getInferContext(op), and checks the op's result types against the built
/// ones as checkResult does. The builder's refusal is the op's error.
mlir::LogicalResult verifyThroughBuilder(mlir::Operation *op,
                                         const CheckedOp &attributes);
/// The same of what checkedOf read, or failure when it could not read the
/// attributes back (and said why).
mlir::LogicalResult verifyThroughBuilder(mlir::Operation *op,
                                         mlir::FailureOr<CheckedOp> attributes);

} // namespace ein::oprules
