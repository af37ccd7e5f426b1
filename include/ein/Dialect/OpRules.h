//===- OpRules.h - the IR layer's rules of each registry op -----*- C++ -*-===//
//
// What the IR layer needs of each op beyond its ODS and verifier, declared
// once per row of the op registry (include/ein/Sema/Ops.def) and defined
// beside the op's verifier in lib/Dialect/EinOps.cpp: how MLIRGen builds it
// from a checked op. MLIRGen dispatches with a switch generated from the same
// registry, so it names no op, and a row without its rule fails to link,
// naming the missing function.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ein/Dialect/EinDialect.h"

namespace ein {

struct CheckedOp; // ein/Sema/Program.h

/// buildFooOp builds a FooOp at `loc` with the checked op's result types
/// `results` over `operands`, its attributes from `op`.
#define EIN_OP(Kind, Name, OpClass)                                            \
  mlir::Operation *build##OpClass(                                             \
      mlir::OpBuilder &builder, mlir::Location loc, mlir::TypeRange results,   \
      mlir::ValueRange operands, const CheckedOp &op);
#include "ein/Sema/Ops.def"

} // namespace ein
