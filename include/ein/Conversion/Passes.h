// The ein conversion passes of no particular target (declared in Passes.td);
// the CPU back end's are in CPU/Passes.h.
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
