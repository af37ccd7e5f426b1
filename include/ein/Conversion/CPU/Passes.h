// The CPU code-generation passes (declared in Passes.td, in this folder).
#pragma once

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace linalg {
class LinalgDialect;
}
namespace arith {
class ArithDialect;
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
namespace affine {
class AffineDialect;
}
namespace tensor {
class TensorDialect;
}
} // namespace mlir

namespace ein {

#define GEN_PASS_DECL
#include "ein/Conversion/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ein/Conversion/CPU/Passes.h.inc"

} // namespace ein
