// Part of ein-tile-contractions: i8 x i8 -> i32 contractions (an i8 einsum
// with acc=i32) on integer pair dot products: vpdpwssd (AVX512_VNNI), else
// vpmaddwd + vpaddd (AVX-512BW, or AVX2 on 256-bit vectors).
#pragma once

#include "ein/Conversion/CPU/HostCPU.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace ein {

/// Replaces `op` by the int8 GEMM when it is one and `dot` is not None:
/// C[m n] += sum over k of sext(A[m k]) * sext(B[k n]), A and B i8 buffers,
/// C an i32 buffer, any strided layouts and loop order; `serial` when it
/// already runs on one core (inside a fused tile). Returns whether it
/// replaced (and erased) `op`.
bool rewriteInt8Contraction(mlir::linalg::GenericOp op, Int8Dot dot,
                            bool serial);

} // namespace ein
