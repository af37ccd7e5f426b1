// Part of ein-tile-contractions: which elementwise op after a contraction
// the kernel applies as it stores the result (ContractionEpilogue.h), and
// that op's body on vectors.
#include "ContractionEpilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace ein {

namespace {

namespace linalg = mlir::linalg;
namespace memref = mlir::memref;

/// The buffer `value` views (through subviews, collapsed shapes...).
mlir::Value baseOf(mlir::Value value) {
  while (auto view = value.getDefiningOp<mlir::ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// A scalar type whose ops the body may hold on vectors.
bool isLaneType(mlir::Type type) {
  return llvm::isa<mlir::FloatType>(type) ||
         (llvm::isa<mlir::IntegerType>(type) &&
          type.getIntOrFloatBitWidth() <= 64);
}

/// Whether the body is elementwise work the kernel can run on vectors: pure
/// scalar ops without regions, each with one result, that read block
/// arguments, each other, and scalars defined before `kernel` (constants
/// hoisted out of the body: the kernel broadcasts them).
bool isVectorizableBody(mlir::Block &body, mlir::Operation *kernel,
                        mlir::DominanceInfo &dominance) {
  for (mlir::Operation &op : body) {
    for (mlir::Value operand : op.getOperands())
      if (operand.getParentBlock() != &body &&
          (!isLaneType(operand.getType()) ||
           !dominance.properlyDominates(operand, kernel)))
        return false;
    if (&op == body.getTerminator())
      continue;
    if (op.getNumRegions() != 0 || op.getNumResults() != 1 ||
        !mlir::isPure(&op) || !isLaneType(op.getResult(0).getType()))
      return false;
    if (!llvm::isa<mlir::arith::ConstantOp>(op) &&
        !op.hasTrait<mlir::OpTrait::Elementwise>())
      return false;
  }
  return true;
}

} // namespace

std::optional<Epilogue> matchEpilogue(Contraction c) {
  auto temporary = c.c.getDefiningOp<memref::AllocOp>();
  if (!c.zeroFill || !temporary || temporary->getBlock() != c.op->getBlock() ||
      temporary.getType().getElementType() != c.acc)
    return std::nullopt;
  // One reader besides the contraction, its fill and the deallocations.
  linalg::GenericOp reader;
  for (mlir::Operation *user : temporary->getUsers()) {
    if (user == c.op.getOperation() || user == c.zeroFill.getOperation() ||
        llvm::isa<memref::DeallocOp>(user))
      continue;
    auto generic = llvm::dyn_cast<linalg::GenericOp>(user);
    if (!generic || reader)
      return std::nullopt;
    reader = generic;
  }
  if (!reader || reader->getBlock() != c.op->getBlock() ||
      !c.op->isBeforeInBlock(reader))
    return std::nullopt;
  // Nothing between the two writes memory the reader reads: only
  // allocations and pure ops.
  for (mlir::Operation *op = c.op->getNextNode(); op != reader;
       op = op->getNextNode())
    if (!llvm::isa<memref::AllocOp>(op) && !mlir::isPure(op))
      return std::nullopt;
  // Elementwise over C's shape, writing a buffer of that shape in loop order
  // without reading it.
  auto cType = temporary.getType();
  if (reader.getNumDpsInits() != 1 || reader.getNumReductionLoops() != 0 ||
      reader.hasIndexSemantics() || reader.getNumLoops() != cType.getRank())
    return std::nullopt;
  mlir::OpOperand *init = reader.getDpsInitOperand(0);
  mlir::Value out = init->get();
  auto outType = llvm::dyn_cast<mlir::MemRefType>(out.getType());
  if (!reader.getMatchingIndexingMap(init).isIdentity() ||
      reader.payloadUsesValueFromOperand(init) || !outType ||
      outType.getShape() != cType.getShape() ||
      outType.getElementType() != c.acc || !stridesOf(outType))
    return std::nullopt;
  // The kernel, where the contraction is, reads the epilogue's operands and
  // writes `out`: they are defined before it, or `out` is allocated between
  // the two (moved before it then).
  mlir::DominanceInfo dominance;
  auto outAlloc = out.getDefiningOp<memref::AllocOp>();
  if (!dominance.properlyDominates(out, c.op) &&
      !(outAlloc && outAlloc->getBlock() == c.op->getBlock() &&
        llvm::all_of(outAlloc->getOperands(), [&](mlir::Value size) {
          return dominance.properlyDominates(size, c.op);
        })))
    return std::nullopt;
  // The kernel writes partial sums to `out` before the last block of the
  // sum: no operand of either op may be `out` or a view of it.
  mlir::Value outBase = baseOf(out);
  if (baseOf(c.a) == outBase || baseOf(c.b) == outBase)
    return std::nullopt;
  for (mlir::OpOperand *input : reader.getDpsInputOperands()) {
    mlir::AffineMap map = reader.getMatchingIndexingMap(input);
    if (input->get() == temporary.getResult()) {
      if (!map.isIdentity())
        return std::nullopt;
      continue;
    }
    auto type = llvm::dyn_cast<mlir::MemRefType>(input->get().getType());
    if (!type || !stridesOf(type) || !isLaneType(type.getElementType()) ||
        !dominance.properlyDominates(input->get(), c.op) ||
        !map.isProjectedPermutation() || baseOf(input->get()) == outBase)
      return std::nullopt;
  }
  if (!isVectorizableBody(reader.getRegion().front(), c.op, dominance))
    return std::nullopt;
  return Epilogue{reader, temporary, out};
}

mlir::Value vectorizeEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                              Epilogue epilogue,
                              llvm::ArrayRef<mlir::Value> args, int64_t lanes) {
  mlir::Block &body = epilogue.op.getRegion().front();
  mlir::IRMapping map;
  for (auto [arg, value] : llvm::zip(body.getArguments(), args))
    map.map(arg, value);
  for (mlir::Operation &op : body.without_terminator()) {
    auto vectorType = mlir::VectorType::get({lanes}, op.getResult(0).getType());
    if (llvm::isa<mlir::arith::ConstantOp>(op)) {
      mlir::Value scalar = b.clone(op)->getResult(0);
      map.map(op.getResult(0),
              b.create<mlir::vector::BroadcastOp>(loc, vectorType, scalar));
      continue;
    }
    mlir::OperationState state(op.getLoc(), op.getName());
    for (mlir::Value operand : op.getOperands()) {
      if (!map.contains(operand)) // a scalar from outside the body
        map.map(operand,
                b.create<mlir::vector::BroadcastOp>(
                    loc, mlir::VectorType::get({lanes}, operand.getType()),
                    operand));
      state.operands.push_back(map.lookup(operand));
    }
    state.types.push_back(vectorType);
    state.attributes = op.getAttrs();
    map.map(op.getResult(0), b.create(state)->getResult(0));
  }
  mlir::Value yielded = body.getTerminator()->getOperand(0);
  if (!map.contains(yielded)) // a scalar from outside the body
    return b.create<mlir::vector::BroadcastOp>(
        loc, mlir::VectorType::get({lanes}, yielded.getType()), yielded);
  return map.lookup(yielded);
}

} // namespace ein
