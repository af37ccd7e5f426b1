// The ein conversion passes (declared in Passes.td).
#pragma once

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace linalg {
class LinalgDialect;
}
namespace tensor {
class TensorDialect;
}
namespace arith {
class ArithDialect;
}
namespace math {
class MathDialect;
}
namespace func {
class FuncDialect;
}
namespace memref {
class MemRefDialect;
}
namespace scf {
class SCFDialect;
}
namespace vector {
class VectorDialect;
}
namespace bufferization {
class BufferizationDialect;
}
} // namespace mlir

namespace ein {

#define GEN_PASS_DECL
#include "ein/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ein/Conversion/Passes.h.inc"

} // namespace ein
