// The ein-merged-outputs-in-place pass: a result whose dims merge axes is
// computed straight into a split view of its output parameter, instead of
// into a temporary that a second loop nest copies into the output.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace ein {

#define GEN_PASS_DEF_MERGEDOUTPUTSINPLACE
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace memref = mlir::memref;
using mlir::OpFoldResult;
using mlir::Value;

/// `memref.copy (memref.collapse_shape %tmp) to %out`, where `%tmp` is a
/// fresh buffer that can be replaced by a view of the parameter `%out`.
struct MergedCopy {
  memref::CopyOp copy;
  memref::CollapseShapeOp collapse;
  memref::AllocOp alloc;
};

bool usesValue(mlir::Operation *op, Value v) {
  bool found = false;
  op->walk([&](mlir::Operation *inner) {
    if (llvm::is_contained(inner->getOperands(), v))
      found = true;
  });
  return found;
}

std::optional<MergedCopy> match(memref::CopyOp copy) {
  auto collapse = copy.getSource().getDefiningOp<memref::CollapseShapeOp>();
  // A collapse to rank 0 moves one element: nothing to gain.
  if (!collapse || !collapse->hasOneUse() ||
      collapse.getResultType().getRank() == 0)
    return std::nullopt;
  auto alloc = collapse.getSrc().getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != copy->getBlock() ||
      !alloc.getType().getLayout().isIdentity())
    return std::nullopt;
  // The output: a parameter of the function (so it dominates the temporary),
  // with strides the view can be computed from.
  auto out = llvm::dyn_cast<mlir::BlockArgument>(copy.getTarget());
  if (!out || !out.getOwner()->isEntryBlock() ||
      !llvm::isa<mlir::func::FuncOp>(out.getOwner()->getParentOp()))
    return std::nullopt;
  auto outType = llvm::dyn_cast<mlir::MemRefType>(out.getType());
  if (!outType || !mlir::isStrided(outType))
    return std::nullopt;
  // Every other use of the temporary is an op that takes any layout (a
  // linalg op, a copy; not a view whose type would change) and comes before
  // the copy: a use after it would read the output, which this pass does not
  // prove unchanged by then.
  mlir::Block *block = copy->getBlock();
  for (mlir::Operation *user : alloc->getUsers()) {
    if (user == collapse)
      continue;
    if (!llvm::isa<mlir::linalg::LinalgOp, memref::CopyOp>(user))
      return std::nullopt;
    mlir::Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || !ancestor->isBeforeInBlock(copy))
      return std::nullopt;
  }
  // While the temporary is written, nothing else may read or write the
  // output (it would see the result early, or overwrite it).
  for (mlir::Operation *op = alloc->getNextNode(); op != copy;
       op = op->getNextNode())
    if (usesValue(op, out))
      return std::nullopt;
  return MergedCopy{copy, collapse, alloc};
}

/// The temporary's sizes: attributes where static, its operands otherwise.
llvm::SmallVector<OpFoldResult> allocSizes(mlir::OpBuilder &b,
                                           memref::AllocOp alloc) {
  llvm::SmallVector<OpFoldResult> sizes;
  unsigned next = 0;
  for (int64_t d : alloc.getType().getShape())
    sizes.push_back(mlir::ShapedType::isDynamic(d)
                        ? OpFoldResult(alloc.getDynamicSizes()[next++])
                        : OpFoldResult(b.getIndexAttr(d)));
  return sizes;
}

Value indexValue(mlir::OpBuilder &b, mlir::Location loc, OpFoldResult v) {
  if (auto attr = llvm::dyn_cast_if_present<mlir::Attribute>(v))
    return b.create<mlir::arith::ConstantIndexOp>(
        loc, llvm::cast<mlir::IntegerAttr>(attr).getInt());
  return llvm::cast<Value>(v);
}

/// `out` viewed with the temporary's shape: each dim of `out` split into
/// its group of the collapse.
Value splitView(mlir::OpBuilder &b, MergedCopy m) {
  mlir::Location loc = m.alloc.getLoc();
  Value out = m.copy.getTarget();
  auto outType = llvm::cast<mlir::MemRefType>(out.getType());
  auto tmpType = m.alloc.getType();
  auto groups = m.collapse.getReassociationIndices();
  llvm::SmallVector<OpFoldResult> sizes = allocSizes(b, m.alloc);
  bool expandable = true;
  for (auto &g : groups)
    expandable &= llvm::count_if(g, [&](int64_t d) {
                    return tmpType.isDynamicDim(d);
                  }) <= 1;
  if (expandable) {
    auto type = memref::ExpandShapeOp::computeExpandedType(
        outType, tmpType.getShape(), groups);
    if (mlir::succeeded(type))
      return b.create<memref::ExpandShapeOp>(loc, *type, out, groups, sizes);
  }
  // MLIR 19 cannot lower an expand_shape whose group has two dynamic sizes
  // (expand-strided-metadata infers them and fails), so such a view is a
  // reinterpret_cast with the strides the split gives: within a group, each
  // axis's stride is the next one's times its size, the last axis keeping
  // the stride of the merged dim.
  auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, out);
  llvm::SmallVector<OpFoldResult> strides(tmpType.getRank());
  for (auto [i, g] : llvm::enumerate(groups)) {
    Value stride = meta.getStrides()[i];
    for (size_t k = g.size(); k-- > 0;) {
      strides[g[k]] = stride;
      if (k > 0)
        stride = b.create<mlir::arith::MulIOp>(loc, stride,
                                               indexValue(b, loc, sizes[g[k]]));
    }
  }
  int64_t dynamic = mlir::ShapedType::kDynamic;
  auto layout = mlir::StridedLayoutAttr::get(
      b.getContext(), dynamic,
      llvm::SmallVector<int64_t>(tmpType.getRank(), dynamic));
  auto type =
      mlir::MemRefType::get(tmpType.getShape(), tmpType.getElementType(),
                            layout, outType.getMemorySpace());
  return b.create<memref::ReinterpretCastOp>(loc, type, meta.getBaseBuffer(),
                                             OpFoldResult(meta.getOffset()),
                                             sizes, strides);
}

struct MergedOutputsInPlacePass
    : impl::MergedOutputsInPlaceBase<MergedOutputsInPlacePass> {
  void runOnOperation() override {
    llvm::SmallVector<MergedCopy> found;
    getOperation().walk([&](memref::CopyOp copy) {
      if (auto m = match(copy))
        found.push_back(*m);
    });
    mlir::OpBuilder b(&getContext());
    for (auto &m : found) {
      b.setInsertionPoint(m.alloc);
      Value view = splitView(b, m);
      m.copy.erase();
      m.collapse.erase();
      m.alloc.getResult().replaceAllUsesWith(view);
      m.alloc.erase();
    }
  }
};

} // namespace
} // namespace ein
