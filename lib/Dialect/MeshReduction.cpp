// The mesh dialect's reductions of the compiled collectives' (one switch each
// way, no default: a new kind on either side fails to compile).
#include "ein/Dialect/MeshReduction.h"

namespace ein {

mlir::mesh::ReductionKind meshReduction(CollectiveReduction reduction) {
  switch (reduction) {
  case CollectiveReduction::Sum:
    return mlir::mesh::ReductionKind::Sum;
  case CollectiveReduction::Mean:
    return mlir::mesh::ReductionKind::Average;
  case CollectiveReduction::Max:
    return mlir::mesh::ReductionKind::Max;
  case CollectiveReduction::Min:
    return mlir::mesh::ReductionKind::Min;
  }
  llvm_unreachable("a compiled collective reduction");
}

std::optional<CollectiveReduction>
collectiveReduction(mlir::mesh::ReductionKind kind) {
  switch (kind) {
  case mlir::mesh::ReductionKind::Sum:
    return CollectiveReduction::Sum;
  case mlir::mesh::ReductionKind::Average:
    return CollectiveReduction::Mean;
  case mlir::mesh::ReductionKind::Max:
    return CollectiveReduction::Max;
  case mlir::mesh::ReductionKind::Min:
    return CollectiveReduction::Min;
  case mlir::mesh::ReductionKind::Product:
  case mlir::mesh::ReductionKind::BitwiseAnd:
  case mlir::mesh::ReductionKind::BitwiseOr:
  case mlir::mesh::ReductionKind::BitwiseXor:
  case mlir::mesh::ReductionKind::Generic:
    return std::nullopt;
  }
  llvm_unreachable("a mesh reduction kind");
}

} // namespace ein
