// Part of ein-tile-contractions: merges runs of a contraction's loops that
// are contiguous in every operand into one loop (`... h d, d e -> ... h e`
// becomes one GEMM with m = the product of the leading axes), so the tiled
// kernel sees one large GEMM instead of many small ones.
#include "GroupContractionAxes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace ein {

namespace {

using mlir::OpBuilder;
using mlir::ReassociationIndices;
using mlir::Value;
namespace arith = mlir::arith;
namespace linalg = mlir::linalg;
namespace memref = mlir::memref;
namespace scf = mlir::scf;

/// For each loop, the loop that follows it as the next axis in every operand
/// that uses it, with the same iterator type (-1: none). Runs of such links
/// can become one loop as far as the indexing maps go.
llvm::SmallVector<int> loopLinks(linalg::GenericOp op) {
  auto maps = op.getIndexingMapsArray();
  auto iterators = op.getIteratorTypesArray();
  unsigned loops = op.getNumLoops();
  llvm::SmallVector<int> next(loops, -1);
  for (unsigned d = 0; d < loops; ++d) {
    std::optional<unsigned> candidate;
    bool ok = true;
    for (auto map : maps) {
      auto pos =
          map.getResultPosition(mlir::getAffineDimExpr(d, op.getContext()));
      if (!pos)
        continue;
      if (*pos + 1 >= map.getNumResults()) {
        ok = false;
        break;
      }
      unsigned e = map.getDimPosition(*pos + 1);
      if (candidate && *candidate != e) {
        ok = false;
        break;
      }
      candidate = e;
    }
    if (!ok || !candidate || iterators[d] != iterators[*candidate])
      continue;
    // No operand may use one of the two without the other.
    if (!linalg::areDimSequencesPreserved(
            maps, {ReassociationIndices{int64_t(d), int64_t(*candidate)}}))
      continue;
    next[d] = *candidate;
  }
  return next;
}

/// The chains of linked loops (at least two each), in loop order of their
/// first loop.
llvm::SmallVector<ReassociationIndices> loopGroups(llvm::ArrayRef<int> next) {
  llvm::SmallVector<bool> hasPrev(next.size(), false);
  for (int e : next)
    if (e >= 0)
      hasPrev[e] = true;
  llvm::SmallVector<ReassociationIndices> groups;
  for (unsigned d = 0; d < next.size(); ++d) {
    if (hasPrev[d] || next[d] < 0)
      continue;
    ReassociationIndices group{int64_t(d)};
    for (int e = next[d]; e >= 0 && group.size() <= next.size(); e = next[e])
      group.push_back(e);
    groups.push_back(group);
  }
  return groups;
}

/// The reassociation of `map`'s operand for the loop groups.
llvm::SmallVector<ReassociationIndices>
operandGroups(mlir::AffineMap map, llvm::ArrayRef<int> groupOf,
              llvm::ArrayRef<ReassociationIndices> groups) {
  llvm::SmallVector<ReassociationIndices> out;
  for (unsigned i = 0; i < map.getNumResults();) {
    int g = groupOf[map.getDimPosition(i)];
    int64_t len = g < 0 ? 1 : int64_t(groups[g].size());
    ReassociationIndices r;
    for (int64_t j = 0; j < len; ++j)
      r.push_back(i + j);
    out.push_back(r);
    i += len;
  }
  return out;
}

/// Whether axes `outer` and `outer + 1` of `type` are contiguous (the outer
/// stride is the inner one times the inner size) as far as the type tells:
/// true, false, or std::nullopt where only the run time knows. Exactly so,
/// even where an axis has size 1 and its stride does not matter to the
/// pair: MLIR 19 collapses a run of three or more axes only if its strides
/// chain (a tile's `1x1x3x2` view with strides `[12, 6, 2, 1]` is
/// collapsible two axes at a time but not as `[0, 1, 2]`, and building that
/// collapse made a null layout). Merging a size-1 axis gains nothing.
std::optional<bool> contiguous(mlir::MemRefType type, int64_t outer) {
  if (type.getLayout().isIdentity())
    return true;
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (mlir::failed(mlir::getStridesAndOffset(type, strides, offset)))
    return false;
  int64_t so = strides[outer], si = strides[outer + 1],
          size = type.getDimSize(outer + 1);
  if (mlir::ShapedType::isDynamic(so) || mlir::ShapedType::isDynamic(si) ||
      mlir::ShapedType::isDynamic(size))
    return std::nullopt;
  return so == si * size;
}

} // namespace

void groupContractionAxes(linalg::GenericOp op,
                          llvm::function_ref<bool(linalg::GenericOp)> accept) {
  for (auto map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return;
  if (!op.hasPureBufferSemantics() || op->getNumResults() != 0)
    return;
  for (Value v : op->getOperands())
    if (!llvm::isa<mlir::MemRefType>(v.getType()))
      return;
  // Each link must be contiguous in memory in every operand: one the types
  // rule out is cut; one only the run time knows is checked there.
  auto maps = op.getIndexingMapsArray();
  llvm::SmallVector<int> next = loopLinks(op);
  llvm::SmallVector<std::pair<unsigned, int64_t>> checks; // operand, axis
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto type = llvm::cast<mlir::MemRefType>(v.getType());
    for (unsigned j = 0; j + 1 < maps[i].getNumResults(); ++j) {
      unsigned d = maps[i].getDimPosition(j);
      if (next[d] != int(maps[i].getDimPosition(j + 1)))
        continue;
      std::optional<bool> known = contiguous(type, j);
      if (known == false)
        next[d] = -1;
      else if (!known)
        checks.push_back({unsigned(i), int64_t(j)});
    }
  }
  llvm::erase_if(checks, [&](auto check) {
    return next[maps[check.first].getDimPosition(check.second)] < 0;
  });
  auto groups = loopGroups(next);
  if (groups.empty())
    return;
  llvm::SmallVector<int> groupOf(op.getNumLoops(), -1);
  for (auto [g, group] : llvm::enumerate(groups))
    for (int64_t d : group)
      groupOf[d] = g;
  llvm::SmallVector<llvm::SmallVector<ReassociationIndices>> reassoc;
  for (auto map : maps)
    reassoc.push_back(operandGroups(map, groupOf, groups));

  // The loops of the grouped op: one per group (at its first loop) and one
  // per ungrouped loop, in loop order.
  llvm::SmallVector<int> newDim(op.getNumLoops(), -1);
  llvm::SmallVector<mlir::utils::IteratorType> iterators;
  auto oldIterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < op.getNumLoops(); ++d) {
    int g = groupOf[d];
    if (g >= 0 && groups[g][0] != int64_t(d))
      continue;
    newDim[d] = iterators.size();
    iterators.push_back(oldIterators[d]);
  }
  llvm::SmallVector<mlir::AffineMap> newMaps;
  for (auto map : maps) {
    llvm::SmallVector<mlir::AffineExpr> results;
    for (unsigned i = 0; i < map.getNumResults(); ++i) {
      unsigned d = map.getDimPosition(i);
      if (newDim[d] >= 0)
        results.push_back(mlir::getAffineDimExpr(newDim[d], op.getContext()));
    }
    newMaps.push_back(
        mlir::AffineMap::get(iterators.size(), 0, results, op.getContext()));
  }

  OpBuilder b(op);
  auto loc = op.getLoc();
  // A zero fill right before moves along, so the kernel still folds it.
  auto fill = llvm::dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (fill && fill.getDpsInits()[0] != op.getDpsInits()[0])
    fill = nullptr;
  // The grouped op and the views it reads, right before `op`; kept only
  // where `accept` takes it (a generic left to the generic lowering would
  // become affine loops, which cannot take the sizes of views made inside
  // the scf.if below as bounds).
  llvm::SmallVector<mlir::Operation *> created;
  llvm::SmallVector<Value> operands;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto &r = reassoc[i];
    if (r.size() == size_t(maps[i].getNumResults())) {
      operands.push_back(v);
      continue;
    }
    auto view = b.create<memref::CollapseShapeOp>(loc, v, r);
    created.push_back(view);
    operands.push_back(view);
  }
  unsigned inputs = op.getNumDpsInputs();
  if (fill)
    created.push_back(
        b.create<linalg::FillOp>(loc, fill.getDpsInputs()[0], operands.back()));
  auto grouped = b.create<linalg::GenericOp>(
      loc, mlir::TypeRange{},
      llvm::ArrayRef<Value>(operands).take_front(inputs),
      llvm::ArrayRef<Value>(operands).drop_front(inputs), newMaps, iterators);
  mlir::IRMapping mapping;
  op.getRegion().cloneInto(&grouped.getRegion(), mapping);
  created.push_back(grouped);
  if (!accept(grouped)) {
    for (mlir::Operation *o : llvm::reverse(created))
      o->erase();
    return;
  }
  if (!checks.empty()) {
    // Strides known only at run time: the grouped op where they make every
    // run contiguous, the op as it is otherwise.
    Value all;
    for (auto [i, axis] : checks) {
      auto meta =
          b.create<memref::ExtractStridedMetadataOp>(loc, op->getOperand(i));
      Value expect = b.create<arith::MulIOp>(loc, meta.getStrides()[axis + 1],
                                             meta.getSizes()[axis + 1]);
      Value ok = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                         meta.getStrides()[axis], expect);
      all = all ? b.create<arith::AndIOp>(loc, all, ok) : ok;
    }
    auto ifOp = b.create<scf::IfOp>(loc, all, /*withElseRegion=*/true);
    for (mlir::Operation *o : created)
      o->moveBefore(ifOp.thenBlock()->getTerminator());
    OpBuilder eb(ifOp.elseBlock()->getTerminator());
    if (fill)
      eb.clone(*fill.getOperation());
    eb.clone(*op.getOperation());
  }
  if (fill)
    fill.erase();
  op.erase();
}

} // namespace ein
