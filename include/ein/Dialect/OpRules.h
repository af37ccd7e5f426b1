//===- OpRules.h - the IR layer's rules of each registry op -----*- C++ -*-===//
//
// What the IR layer needs of each op beyond its ODS and verifier, declared
// once per row of the op registry (include/ein/Sema/Ops.def) and defined
// beside the op's verifier in its op family's file,
// lib/Dialect/Ops/<Family>.cpp (Transforms, Einsum, Pack, Elementwise,
// Values, Indexing): how MLIRGen builds it from a checked op, and what the
// cost model needs from its attributes. MLIRGen and the cost interface
// (lib/Dialect/EinCost.cpp) dispatch with code generated from the same
// registry, so neither names an op, and a row without its rules fails to
// link, naming the missing function.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ein/Dialect/EinDialect.h"

namespace ein {

struct CheckedOp; // ein/Sema/Program.h
struct CostInput; // ein/Analysis/Cost.h

/// What a CostInput points to (an op's elementary-axis structure), kept
/// alive by the caller of fillCostInput until the cost is computed.
struct CostInputStorage {
  std::optional<TransformInfo> transform;
  std::optional<EinsumInfo> einsum;
};

/// buildFooOp builds a FooOp at `loc` with the checked op's result types
/// `results` over `operands`, its attributes from `op`.
#define EIN_OP(Kind, Name, OpClass)                                            \
  mlir::Operation *build##OpClass(                                             \
      mlir::OpBuilder &builder, mlir::Location loc, mlir::TypeRange results,   \
      mlir::ValueRange operands, const CheckedOp &op);
#include "ein/Sema/Ops.def"

/// fillCostInput(FooOp, ...) fills in what the cost of a FooOp needs from its
/// attributes (the caller has set the kind and the operand and result
/// types), pointing `input` into `storage` where it needs a structure; most
/// ops need nothing. Failure, without a diagnostic, when the attributes do
/// not parse (the op does not verify).
#define EIN_OP(Kind, Name, OpClass)                                            \
  mlir::LogicalResult fillCostInput(OpClass op, CostInput &input,              \
                                    CostInputStorage &storage);
#include "ein/Sema/Ops.def"

} // namespace ein
