// Part of ein-tile-contractions: an elementwise op that reads a
// contraction's result (bias, activation, scale: its epilogue) applied to
// the result's tile in registers, as the kernel stores it.
#pragma once

#include "MatchContraction.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace ein {

/// An elementwise `linalg.generic` whose only reading of a contraction's
/// result C is through its own loops, one for one, and which writes `out`
/// of C's shape in loop order; C is a temporary (a `memref.alloc` zeroed by
/// the contraction's fill) that nothing else reads. The kernel then
/// accumulates into `out` and applies the body on the last block of the
/// sum: C is never allocated.
struct Epilogue {
  mlir::linalg::GenericOp op;
  mlir::memref::AllocOp temporary; // C's buffer, which goes
  mlir::Value out;                 // the epilogue's result buffer
};

/// The epilogue of contraction `c`, if it has one the kernel can apply; its
/// `out` is defined before `c`, or is a `memref.alloc` between the two,
/// which the caller moves before `c`.
std::optional<Epilogue> matchEpilogue(Contraction c);

/// The epilogue's body on vectors of `lanes` lanes: `args` holds a vector
/// per input of the op (the accumulators for C); returns the vector of the
/// value it yields.
mlir::Value vectorizeEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                              Epilogue epilogue,
                              llvm::ArrayRef<mlir::Value> args, int64_t lanes);

} // namespace ein
