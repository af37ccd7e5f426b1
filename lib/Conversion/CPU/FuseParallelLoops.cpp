// The ein-fuse-parallel-loops pass: adjacent scf.parallel nests over the
// same iterations become one when each iteration of the second reads only
// what the same iteration of the first wrote (MLIR's parallel loop fusion),
// with the calling convention's guarantee that distinct parameters marked
// llvm.noalias never overlap, which MLIR's alias analysis does not read.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Analysis/AliasAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace ein {

#define GEN_PASS_DEF_FUSEPARALLELLOOPS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

/// The buffer `v` is a view of: through view-like ops and the base buffer
/// of memref.extract_strided_metadata (ein-tile-transposes' unit-stride
/// views).
mlir::Value rootBuffer(mlir::Value v) {
  for (unsigned depth = 0; depth < 16; ++depth) {
    mlir::Operation *def = v.getDefiningOp();
    if (auto view = llvm::dyn_cast_or_null<mlir::ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else if (auto meta =
                 llvm::dyn_cast_or_null<mlir::memref::ExtractStridedMetadataOp>(
                     def))
      v = meta.getSource();
    else
      break;
  }
  return v;
}

/// A parameter of `fn` marked llvm.noalias (ein-host-calling-convention).
bool isNoAliasParameter(mlir::Value v, mlir::func::FuncOp fn) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
  return arg && arg.getOwner() == &fn.getBody().front() &&
         fn.getArgAttr(arg.getArgNumber(),
                       mlir::LLVM::LLVMDialect::getNoAliasAttrName());
}

struct FuseParallelLoopsPass
    : impl::FuseParallelLoopsBase<FuseParallelLoopsPass> {
  void runOnOperation() override {
    mlir::func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    auto &aliases = getAnalysis<mlir::AliasAnalysis>();
    auto mayAlias = [&](mlir::Value a, mlir::Value b) {
      mlir::Value ra = rootBuffer(a), rb = rootBuffer(b);
      if (ra != rb && isNoAliasParameter(ra, fn) && isNoAliasParameter(rb, fn))
        return false;
      return !aliases.alias(a, b).isNo();
    };
    fn.walk([&](mlir::Operation *op) {
      for (mlir::Region &region : op->getRegions())
        mlir::scf::naivelyFuseParallelOps(region, mayAlias);
    });
  }
};

} // namespace
} // namespace ein
