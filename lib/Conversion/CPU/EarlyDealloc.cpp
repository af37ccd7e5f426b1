// The ein-early-dealloc pass: each temporary is freed right after its last
// use instead of at the end of its block, where MLIR's ownership-based
// deallocation places it.
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace ein {

#define GEN_PASS_DEF_EARLYDEALLOC
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace memref = mlir::memref;
using mlir::Operation;
using mlir::Value;

/// The memref results through which `user` may reach the buffer that its
/// operand `alias` points into, when `user` is a view of `alias`; nullopt
/// when `user` is not a view.
std::optional<llvm::SmallVector<Value>> viewResults(Operation *user,
                                                    Value alias) {
  auto view = llvm::dyn_cast<mlir::ViewLikeOpInterface>(user);
  auto transpose = llvm::dyn_cast<memref::TransposeOp>(user);
  bool isView = (view && view.getViewSource() == alias) ||
                (transpose && transpose.getIn() == alias);
  if (!isView)
    return std::nullopt;
  // Every memref result (extract_strided_metadata's base buffer; its sizes
  // and strides are indices, not pointers). A result of another type is not
  // understood: the op is then treated as any unknown op.
  llvm::SmallVector<Value> results;
  for (Value r : user->getResults())
    if (llvm::isa<mlir::BaseMemRefType>(r.getType()))
      results.push_back(r);
    else if (!r.getType().isIndex())
      return std::nullopt;
  return results;
}

/// Whether `user` reads, writes or measures the buffer through its operand
/// `use` and keeps no pointer to it after it returns (no result aliases it,
/// nothing stores the pointer).
bool usesWithoutCapture(mlir::OpOperand &use) {
  Operation *user = use.getOwner();
  // Buffer semantics: a linalg op on memrefs has no results.
  if (auto linalgOp = llvm::dyn_cast<mlir::linalg::LinalgOp>(user))
    return linalgOp.hasPureBufferSemantics() && user->getNumResults() == 0;
  if (auto store = llvm::dyn_cast<memref::StoreOp>(user))
    return use.get() == store.getMemRef();
  if (auto store = llvm::dyn_cast<mlir::affine::AffineStoreOp>(user))
    return use.get() == store.getMemRef();
  if (auto write = llvm::dyn_cast<mlir::vector::TransferWriteOp>(user))
    return use.get() == write.getSource();
  if (auto store = llvm::dyn_cast<mlir::vector::StoreOp>(user))
    return use.get() == store.getBase();
  // Results that are element values, vectors or sizes, never pointers.
  return llvm::isa<memref::LoadOp, memref::CopyOp, memref::DimOp,
                   memref::AtomicRMWOp, memref::PrefetchOp,
                   mlir::affine::AffineLoadOp, mlir::vector::TransferReadOp,
                   mlir::vector::LoadOp>(user);
}

/// Whether an op's regions have all run, and left nothing running, when the
/// op returns (structured control flow and linalg bodies), so that a use
/// inside them is over once the op is.
bool regionsEndWithOp(Operation *op) {
  return llvm::isa<mlir::scf::ForOp, mlir::scf::ParallelOp, mlir::scf::IfOp,
                   mlir::scf::WhileOp, mlir::scf::ForallOp,
                   mlir::scf::IndexSwitchOp, mlir::scf::ExecuteRegionOp,
                   mlir::scf::ReduceOp, mlir::affine::AffineForOp,
                   mlir::affine::AffineParallelOp, mlir::affine::AffineIfOp,
                   mlir::linalg::LinalgOp, memref::GenericAtomicRMWOp,
                   memref::AllocaScopeOp>(op);
}

/// The op of `dealloc`'s block after which its buffer is no longer used,
/// or null when that cannot be proved (the dealloc then stays).
Operation *lastUse(memref::DeallocOp dealloc) {
  auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
  mlir::Block *block = dealloc->getBlock();
  if (!alloc || alloc->getBlock() != block)
    return nullptr;
  Operation *last = alloc;
  llvm::SmallVector<Value> aliases = {alloc.getResult()};
  llvm::SmallPtrSet<Value, 8> seen = {alloc.getResult()};
  while (!aliases.empty()) {
    Value alias = aliases.pop_back_val();
    for (mlir::OpOperand &use : alias.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc)
        continue;
      // A use in another block (reached by dominance), or one after the
      // dealloc (already a use after free): nothing is proved.
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || !ancestor->isBeforeInBlock(dealloc))
        return nullptr;
      for (Operation *op = user->getParentOp(); op != ancestor->getParentOp();
           op = op->getParentOp())
        if (!regionsEndWithOp(op))
          return nullptr;
      if (auto views = viewResults(user, alias)) {
        for (Value v : *views)
          if (seen.insert(v).second)
            aliases.push_back(v);
      } else if (!usesWithoutCapture(use)) {
        // Returned, yielded, passed to a call, freed elsewhere, stored, or
        // an op this pass does not know.
        return nullptr;
      }
      if (last->isBeforeInBlock(ancestor))
        last = ancestor;
    }
  }
  return last;
}

struct EarlyDeallocPass : impl::EarlyDeallocBase<EarlyDeallocPass> {
  void runOnOperation() override {
    llvm::SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk(
        [&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    // Moving one dealloc changes no other's uses: each is placed from its
    // own buffer's uses alone.
    for (memref::DeallocOp dealloc : deallocs)
      if (Operation *last = lastUse(dealloc);
          last && last->getNextNode() != dealloc)
        dealloc->moveAfter(last);
  }
};

} // namespace
} // namespace ein
