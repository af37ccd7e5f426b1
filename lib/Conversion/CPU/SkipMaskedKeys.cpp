// The ein-skip-masked-keys pass: in a row tile of a causal attention head,
// the keys past the tile's last query row are masked for every row of the
// tile; the tile's ops then run over the keys before them only.
#include "ein/Conversion/CPU/Fusion.h"
#include "ein/Conversion/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <optional>

namespace ein {

#define GEN_PASS_DEF_SKIPMASKEDKEYS
#include "ein/Conversion/CPU/Passes.h.inc"

namespace {

namespace arith = mlir::arith;
namespace linalg = mlir::linalg;
using mlir::Value;

/// The largest fill value `where` may put at a masked score for the keys
/// past the bound to be skipped. The tile's softmax subtracts the row's
/// max, at least the score of an allowed key, so a masked entry becomes
/// exp(fill - max) <= exp(-1e9 - max): exactly 0 in f32 (exp of anything
/// below about -104 is) for any score above -1e9 + 104; the sum of
/// exponentials and `p v` add exact zeros for those keys, and the max never
/// picks the fill. Skipping them leaves every result as it was. (A fill of
/// -1e4, BERT's, is not taken: a row of allowed scores all below -9896,
/// which badly scaled activations can give, would then differ.)
constexpr double kLargestFill = -1e9;

/// The keys (one loop of the tile's contraction) as each tensor of the tile
/// sees them: which of its dims runs over the keys.
using KeyDims = llvm::DenseMap<Value, llvm::SmallVector<bool>>;

bool hasKeyDim(const KeyDims &keys, Value value) {
  auto found = keys.find(value);
  return found != keys.end() && llvm::is_contained(found->second, true);
}

/// Marks dim `dim` of `value` a key dim; whether it was not yet.
bool markKey(KeyDims &keys, Value value, unsigned dim) {
  auto type = llvm::cast<mlir::RankedTensorType>(value.getType());
  auto &dims = keys[value];
  dims.resize(type.getRank(), false);
  if (dims[dim])
    return false;
  dims[dim] = true;
  return true;
}

/// One step of finding the key dims: through a generic's indexing maps (a
/// loop that indexes a key dim of one operand indexes them in every
/// operand), a fill's or an extract_slice's result and operand. Sets
/// `changed` when a dim is newly marked; fails on what it cannot follow (a
/// key dim indexed by an expression, an op of another kind).
mlir::LogicalResult propagateKeys(mlir::Operation *op, KeyDims &keys,
                                  bool &changed) {
  if (auto generic = llvm::dyn_cast<linalg::GenericOp>(op)) {
    llvm::SmallVector<std::pair<Value, mlir::AffineMap>> operands;
    for (mlir::OpOperand &operand : generic->getOpOperands())
      operands.push_back(
          {operand.get(), generic.getMatchingIndexingMap(&operand)});
    for (mlir::OpResult result : generic->getResults())
      operands.push_back(
          {result, generic.getIndexingMapMatchingResult(result)});
    llvm::SmallBitVector loops(generic.getNumLoops());
    for (auto [value, map] : operands) {
      auto found = keys.find(value);
      if (found == keys.end())
        continue;
      for (auto [dim, key] : llvm::enumerate(found->second)) {
        auto expr =
            key ? llvm::dyn_cast<mlir::AffineDimExpr>(map.getResult(dim))
                : nullptr;
        if (key && !expr)
          return mlir::failure();
        if (expr)
          loops.set(expr.getPosition());
      }
    }
    // (One loop over the keys: a tensor read over the keys twice, keys by
    // keys, is not what the bound was proved for.)
    if (loops.count() > 1)
      return mlir::failure();
    for (auto [value, map] : operands)
      for (auto [dim, expr] : llvm::enumerate(map.getResults())) {
        auto loop = llvm::dyn_cast<mlir::AffineDimExpr>(expr);
        if (loop && loops.test(loop.getPosition()))
          changed |= markKey(keys, value, dim);
        else if (!loop && llvm::any_of(loops.set_bits(), [&](unsigned l) {
                   return expr.isFunctionOfDim(l);
                 }))
          return mlir::failure();
      }
    return mlir::success();
  }
  auto tie = [&](Value a, Value b) {
    for (Value from : {a, b})
      if (keys.count(from)) {
        // (A copy: marking the other value may move the map's entries.)
        llvm::SmallVector<bool> dims = keys.lookup(from);
        for (auto [dim, key] : llvm::enumerate(dims))
          if (key)
            changed |= markKey(keys, from == a ? b : a, dim);
      }
  };
  if (auto fill = llvm::dyn_cast<linalg::FillOp>(op)) {
    tie(fill.getDpsInits()[0], fill->getResult(0));
    return mlir::success();
  }
  if (auto slice = llvm::dyn_cast<mlir::tensor::ExtractSliceOp>(op)) {
    if (slice.getSourceType().getRank() != slice.getResultType().getRank())
      return mlir::failure();
    tie(slice.getSource(), slice.getResult());
    return mlir::success();
  }
  if (llvm::isa<mlir::tensor::EmptyOp>(op))
    return mlir::success();
  return mlir::failure();
}

/// Whether `value` is an arange, `generic { index_cast(linalg.index 0 +
/// offset) }` over one loop with no inputs; `offset` is the value added
/// (null: none).
bool isArange(Value value, Value &offset) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumLoops() != 1 || generic.getNumDpsInputs() != 0)
    return false;
  auto yield =
      llvm::cast<linalg::YieldOp>(generic.getRegion().front().getTerminator());
  // (At least 32 bits: a narrower arange wraps, and its comparison with
  // another is not the positions'.)
  auto cast = yield.getValues()[0].getDefiningOp<arith::IndexCastOp>();
  if (!cast || cast.getType().getIntOrFloatBitWidth() < 32)
    return false;
  Value index = cast.getIn();
  offset = nullptr;
  if (auto apply = index.getDefiningOp<mlir::affine::AffineApplyOp>()) {
    // d0 + d1 (either order): the index plus one value.
    mlir::AffineMap map = apply.getAffineMap();
    auto sum = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(map.getResult(0));
    if (map.getNumResults() != 1 || apply.getMapOperands().size() != 2 ||
        !sum || sum.getKind() != mlir::AffineExprKind::Add ||
        !llvm::isa<mlir::AffineDimExpr, mlir::AffineSymbolExpr>(sum.getLHS()) ||
        !llvm::isa<mlir::AffineDimExpr, mlir::AffineSymbolExpr>(sum.getRHS()))
      return false;
    auto operandOf = [&](mlir::AffineExpr expr) {
      auto dim = llvm::dyn_cast<mlir::AffineDimExpr>(expr);
      return dim ? apply.getMapOperands()[dim.getPosition()]
                 : apply.getMapOperands()
                       [map.getNumDims() +
                        llvm::cast<mlir::AffineSymbolExpr>(expr).getPosition()];
    };
    Value lhs = operandOf(sum.getLHS()), rhs = operandOf(sum.getRHS());
    index = lhs.getDefiningOp<linalg::IndexOp>() ? lhs : rhs;
    offset = index == lhs ? rhs : lhs;
  }
  auto loop = index.getDefiningOp<linalg::IndexOp>();
  return loop && loop.getDim() == 0 && loop->getParentOp() == generic;
}

/// The predicate of `b OP a` that is `a OP' b`.
arith::CmpIPredicate swapOperands(arith::CmpIPredicate predicate) {
  using P = arith::CmpIPredicate;
  switch (predicate) {
  case P::eq:
  case P::ne:
    return predicate;
  case P::slt:
    return P::sgt;
  case P::sle:
    return P::sge;
  case P::sgt:
    return P::slt;
  case P::sge:
    return P::sle;
  case P::ult:
    return P::ugt;
  case P::ule:
    return P::uge;
  case P::ugt:
    return P::ult;
  case P::uge:
    return P::ule;
  }
  llvm_unreachable("a comparison predicate");
}

/// A causal mask of the tile, as the where of `where(allowed, scores,
/// fill)` reads it.
struct CausalMask {
  bool strict = false;  // `t < s`: row 0 allows no key
  unsigned rowLoop = 0; // the forall loop whose rows the mask compares
};

/// Whether the i8 or i1 `mask`, read by the tile of `forall` with key dims
/// `keys`, is `keys <= rows` (`<`, or the same written `rows >= keys`):
/// `compare(A[t], B[x])` with A an arange over the keys from 0 and B one
/// over the tile's rows from the forall's index of that loop.
std::optional<CausalMask>
matchCausalMask(Value mask, mlir::scf::ForallOp forall, const KeyDims &keys) {
  auto generic = mask.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 2 ||
      generic->getNumResults() != 1 || !forall->isProperAncestor(generic))
    return std::nullopt;
  mlir::Block &body = generic.getRegion().front();
  Value yielded =
      llvm::cast<linalg::YieldOp>(body.getTerminator()).getValues()[0];
  if (auto ext = yielded.getDefiningOp<arith::ExtUIOp>())
    yielded = ext.getIn();
  auto compare = yielded.getDefiningOp<arith::CmpIOp>();
  if (!compare)
    return std::nullopt;
  auto argument = [&](Value value) -> std::optional<unsigned> {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(value);
    if (!arg || arg.getOwner() != &body || arg.getArgNumber() >= 2)
      return std::nullopt;
    return arg.getArgNumber();
  };
  std::optional<unsigned> lhs = argument(compare.getLhs()),
                          rhs = argument(compare.getRhs());
  if (!lhs || !rhs || *lhs == *rhs)
    return std::nullopt;
  bool keyLeft = hasKeyDim(keys, generic.getDpsInputs()[*lhs]);
  Value keyArange = generic.getDpsInputs()[keyLeft ? *lhs : *rhs];
  Value rowArange = generic.getDpsInputs()[keyLeft ? *rhs : *lhs];
  // The comparison as `key OP row`.
  arith::CmpIPredicate predicate =
      keyLeft ? compare.getPredicate() : swapOperands(compare.getPredicate());
  if (!hasKeyDim(keys, keyArange) || hasKeyDim(keys, rowArange))
    return std::nullopt;
  CausalMask found;
  using P = arith::CmpIPredicate;
  switch (predicate) {
  case P::sle:
  case P::ule:
    break;
  case P::slt:
  case P::ult:
    found.strict = true;
    break;
  case P::eq:
  case P::ne:
  case P::sge:
  case P::sgt:
  case P::uge:
  case P::ugt:
    return std::nullopt;
  }
  Value keyOffset, rowOffset;
  if (!isArange(keyArange, keyOffset) || keyOffset ||
      !isArange(rowArange, rowOffset) || !rowOffset)
    return std::nullopt;
  // The rows' arange starts at the forall's index of one loop and is no
  // longer than that loop's step (it is the tile's slice of an arange over
  // the rows).
  auto ivs = forall.getInductionVars();
  auto loop = llvm::find(ivs, rowOffset);
  if (loop == ivs.end() ||
      mlir::ShapedType::isDynamic(forall.getStaticStep()[loop - ivs.begin()]))
    return std::nullopt;
  found.rowLoop = loop - ivs.begin();
  int64_t length =
      llvm::cast<mlir::RankedTensorType>(rowArange.getType()).getDimSize(0);
  if (!mlir::ShapedType::isDynamic(length) &&
      length > forall.getStaticStep()[found.rowLoop])
    return std::nullopt;
  return found;
}

/// What a value of the tile holds at the keys past the bound, as far as the
/// tile's results depend on it.
enum class Past {
  Row,     // no key dim: the same whether the keys are skipped or not
  Max,     // a row's max over the keys of the fill (at least an allowed score)
  Any,     // values the results do not depend on past the bound
  Fill,    // `where`'s fill, at most kLargestFill
  Shifted, // the fill less a row value (the row's max)
  Zero,    // exactly 0
  Sum,     // a reduction over the keys that skipped keys leave as it is
};

/// Whether `value` is a float constant at most kLargestFill (a scalar, or a
/// splat tensor `where` reads).
bool isLargeNegative(Value value) {
  mlir::FloatAttr scalar;
  mlir::SplatElementsAttr splat;
  if (mlir::matchPattern(value, mlir::m_Constant(&scalar)))
    return scalar.getValueAsDouble() <= kLargestFill;
  if (mlir::matchPattern(value, mlir::m_Constant(&splat)) &&
      llvm::isa<mlir::FloatType>(splat.getElementType()))
    return splat.getSplatValue<llvm::APFloat>().convertToDouble() <=
           kLargestFill;
  return false;
}

/// The tile's causal masks, and what each value holds past the bound.
struct Analysis {
  std::optional<CausalMask> mask;
  llvm::DenseMap<Value, Past> past;

  Past of(Value value, const KeyDims &keys) const {
    auto found = past.find(value);
    if (!hasKeyDim(keys, value))
      return found != past.end() && found->second == Past::Max ? Past::Max
                                                               : Past::Row;
    return found == past.end() ? Past::Any : found->second;
  }
};

/// Whether `op` is `where(mask, x, fill)` with a causal `mask` and a large
/// negative `fill`; records the mask in `analysis`.
bool isCausalWhere(linalg::GenericOp op, mlir::scf::ForallOp forall,
                   const KeyDims &keys, Analysis &analysis) {
  mlir::Block &body = op.getRegion().front();
  auto select = llvm::cast<linalg::YieldOp>(body.getTerminator())
                    .getValues()[0]
                    .getDefiningOp<arith::SelectOp>();
  if (!select || op->getNumResults() != 1)
    return false;
  Value condition = select.getCondition();
  if (auto compare = condition.getDefiningOp<arith::CmpIOp>();
      compare && compare.getPredicate() == arith::CmpIPredicate::ne &&
      mlir::matchPattern(compare.getRhs(), mlir::m_Zero()))
    condition = compare.getLhs();
  auto input = [&](Value value) -> Value {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(value);
    if (!arg || arg.getOwner() != &body ||
        arg.getArgNumber() >= op.getNumDpsInputs())
      return value; // (a constant)
    return op.getDpsInputs()[arg.getArgNumber()];
  };
  Value mask = input(condition);
  if (mask == condition || !isLargeNegative(input(select.getFalseValue())))
    return false;
  std::optional<CausalMask> causal = matchCausalMask(mask, forall, keys);
  if (!causal || (analysis.mask && analysis.mask->rowLoop != causal->rowLoop))
    return false;
  bool strict = causal->strict || (analysis.mask && analysis.mask->strict);
  analysis.mask = causal;
  analysis.mask->strict = strict;
  return true;
}

/// What `op`'s results hold past the bound, from its body; nullopt where
/// skipping the keys could change a result (work on masked values that is
/// not the softmax's, a reduction over the keys of anything but zeros or
/// the fill's max).
std::optional<Past> evaluate(linalg::GenericOp op, const KeyDims &keys,
                             const Analysis &analysis) {
  if (op->getNumResults() != 1)
    return std::nullopt;
  bool keyReduction = false;
  for (auto [loop, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if (type == mlir::utils::IteratorType::reduction)
      for (mlir::OpOperand &operand : op->getOpOperands()) {
        auto found = keys.find(operand.get());
        if (found == keys.end())
          continue;
        for (auto [dim, key] : llvm::enumerate(found->second))
          keyReduction |=
              key && op.getMatchingIndexingMap(&operand).getResult(dim) ==
                         mlir::getAffineDimExpr(loop, op.getContext());
      }
  mlir::Block &body = op.getRegion().front();
  llvm::DenseMap<Value, Past> kinds;
  Value accumulator = body.getArguments().back();
  for (mlir::OpOperand &operand : op->getOpOperands())
    kinds[body.getArgument(operand.getOperandNumber())] =
        analysis.of(operand.get(), keys);
  auto kind = [&](Value value) {
    auto found = kinds.find(value);
    return found == kinds.end() ? Past::Row : found->second; // (a constant)
  };
  auto fillLike = [](Past past) {
    return past == Past::Fill || past == Past::Shifted;
  };
  auto row = [](Past past) { return past == Past::Row || past == Past::Max; };
  bool max = false;
  for (mlir::Operation &inner : body.without_terminator()) {
    if (inner.getNumResults() != 1)
      return std::nullopt;
    llvm::SmallVector<Past> in;
    for (Value operand : inner.getOperands())
      in.push_back(keyReduction && operand == accumulator ? Past::Sum
                                                          : kind(operand));
    Past result;
    if (llvm::all_of(in, row))
      result = Past::Row;
    else if (llvm::all_of(in, [&](Past p) { return row(p) || p == Past::Any; }))
      result = Past::Any;
    else if (llvm::isa<arith::SubFOp>(inner) && fillLike(in[0]) &&
             in[1] == Past::Max)
      result = Past::Shifted;
    else if (llvm::isa<mlir::math::ExpOp>(inner) && fillLike(in[0]))
      result = Past::Zero;
    else if (llvm::isa<arith::DivFOp>(inner) && in[0] == Past::Zero &&
             row(in[1]))
      result = Past::Zero;
    else if (llvm::isa<arith::MulFOp>(inner) &&
             llvm::is_contained(in, Past::Zero) &&
             !llvm::any_of(in, fillLike) && !llvm::is_contained(in, Past::Sum))
      result = Past::Zero; // (v is finite: 0 * v = 0)
    else if (llvm::isa<arith::AddFOp>(inner) && in[0] == Past::Sum &&
             in[1] == Past::Zero)
      result = Past::Sum;
    else if (llvm::isa<arith::AddFOp>(inner) && in[1] == Past::Sum &&
             in[0] == Past::Zero)
      result = Past::Sum;
    else if (llvm::isa<arith::MaximumFOp, arith::MaxNumFOp>(inner) &&
             ((in[0] == Past::Sum && fillLike(in[1])) ||
              (in[1] == Past::Sum && fillLike(in[0])))) {
      result = Past::Sum;
      max = true;
    } else
      return std::nullopt;
    kinds[inner.getResult(0)] = result;
  }
  Past yielded =
      kind(llvm::cast<linalg::YieldOp>(body.getTerminator()).getValues()[0]);
  if (keyReduction)
    return yielded == Past::Sum ? std::optional(max ? Past::Max : Past::Row)
                                : std::nullopt;
  if (yielded == Past::Sum)
    return std::nullopt;
  return yielded == Past::Row ? Past::Any : yielded;
}

/// Whether `op` reads or writes a tensor with a key dim.
bool touchesKeys(mlir::Operation &op, const KeyDims &keys) {
  return llvm::any_of(op.getOperands(),
                      [&](Value v) { return hasKeyDim(keys, v); }) ||
         llvm::any_of(op.getResults(),
                      [&](Value v) { return hasKeyDim(keys, v); });
}

/// Bounds the keys of the row tile `forall` if it is a causal attention
/// head's: its one result is a contraction over the keys (`p v`) of values
/// that are exactly zero past the bound, since they come from a causal
/// `where` through a softmax. Changes nothing where it fails.
mlir::LogicalResult skipMaskedKeys(mlir::scf::ForallOp forall) {
  mlir::Block *body = forall.getBody();
  auto yielding = forall.getTerminator().getYieldingOps();
  if (!llvm::hasSingleElement(yielding))
    return mlir::failure();
  auto insert =
      llvm::dyn_cast<mlir::tensor::ParallelInsertSliceOp>(*yielding.begin());
  auto root =
      insert ? insert.getSource().getDefiningOp<linalg::GenericOp>() : nullptr;
  if (!root || root->getBlock() != body || root.getNumReductionLoops() != 1 ||
      !linalg::isaContractionOpInterface(root))
    return mlir::failure();
  unsigned keyLoop = *llvm::find_if(
      llvm::seq<unsigned>(0, root.getNumLoops()), [&](unsigned loop) {
        return root.getIteratorTypesArray()[loop] ==
               mlir::utils::IteratorType::reduction;
      });
  KeyDims keys;
  mlir::AffineExpr key = mlir::getAffineDimExpr(keyLoop, root.getContext());
  for (mlir::OpOperand *input : root.getDpsInputOperands())
    for (auto [dim, expr] :
         llvm::enumerate(root.getMatchingIndexingMap(input).getResults()))
      if (expr == key)
        markKey(keys, input->get(), dim);
  for (bool changed = true; changed;) {
    changed = false;
    for (mlir::Operation &op : body->without_terminator())
      if (touchesKeys(op, keys) &&
          mlir::failed(propagateKeys(&op, keys, changed)))
        return mlir::failure();
  }
  // Every key dim runs over all the keys, each tensor is read in the tile
  // only, and the tile's values hold what skipping the keys allows.
  int64_t total = root.getStaticLoopRanges()[keyLoop];
  for (auto &[value, dims] : keys) {
    auto type = llvm::cast<mlir::RankedTensorType>(value.getType());
    for (auto [dim, isKey] : llvm::enumerate(dims))
      if (isKey && type.getDimSize(dim) != total)
        return mlir::failure();
    if (llvm::isa<mlir::BlockArgument>(value) &&
        value.getParentRegion() == &forall.getRegion())
      return mlir::failure(); // (the shared outputs: only the root's)
    if (!forall->isAncestor(value.getParentRegion()->getParentOp()))
      continue;
    for (mlir::Operation *user : value.getUsers())
      if (user->getBlock() != body || user == forall.getTerminator())
        return mlir::failure();
  }
  Analysis analysis;
  Value keyArange;
  for (mlir::Operation &op : body->without_terminator()) {
    if (!touchesKeys(op, keys))
      continue;
    if (auto slice = llvm::dyn_cast<mlir::tensor::ExtractSliceOp>(op)) {
      // A slice of all the keys of a tensor from outside (keys, values).
      if (forall->isAncestor(
              slice.getSource().getParentRegion()->getParentOp()))
        return mlir::failure();
      llvm::SmallVector<bool> dims = keys.lookup(slice.getResult());
      for (auto [dim, isKey] : llvm::enumerate(dims))
        if (isKey &&
            (!mlir::isConstantIntValue(slice.getMixedOffsets()[dim], 0) ||
             !mlir::isConstantIntValue(slice.getMixedStrides()[dim], 1)))
          return mlir::failure();
      continue;
    }
    auto generic = llvm::dyn_cast<linalg::GenericOp>(op);
    if (!generic)
      continue; // (a fill or an empty tensor: Any)
    if (isCausalWhere(generic, forall, keys, analysis)) {
      analysis.past[generic->getResult(0)] = Past::Fill;
      continue;
    }
    std::optional<Past> result = evaluate(generic, keys, analysis);
    if (!result)
      return mlir::failure();
    analysis.past[generic->getResult(0)] = *result;
  }
  if (!analysis.mask)
    return mlir::failure();
  // The key count, for a tile of dynamic keys: the size of the first
  // tensor from outside the tile a linalg op of the tile reads over the
  // keys (the keys' arange, read whole), in the tile's order (the IR made
  // does not depend on where values sit in memory).
  llvm::SmallVector<mlir::Operation *> rewritten;
  for (mlir::Operation &op : body->without_terminator())
    if (touchesKeys(op, keys))
      rewritten.push_back(&op);
  Value outside;
  unsigned outsideDim = 0;
  for (mlir::Operation *op : rewritten) {
    if (!llvm::isa<linalg::LinalgOp>(op))
      continue;
    for (Value value : op->getOperands())
      if (!outside && hasKeyDim(keys, value) &&
          !forall->isAncestor(value.getParentRegion()->getParentOp())) {
        llvm::ArrayRef<bool> dims = keys.find(value)->second;
        outside = value;
        outsideDim = llvm::find(dims, true) - dims.begin();
      }
  }
  if (mlir::ShapedType::isDynamic(total) && !outside)
    return mlir::failure();

  // The bound: a tile of rows [r, r + step) allows keys up to its last row
  // only (`t <= s`), and below it with `t < s`, where the tile of row 0,
  // whose row 0 allows no key (its softmax is uniform over all the keys),
  // keeps them all.
  mlir::OpBuilder builder = mlir::OpBuilder::atBlockBegin(body);
  mlir::Location loc = forall.getLoc();
  Value count =
      mlir::ShapedType::isDynamic(total)
          ? builder.create<mlir::tensor::DimOp>(loc, outside, outsideDim)
                .getResult()
          : builder.create<arith::ConstantIndexOp>(loc, total).getResult();
  Value row = forall.getInductionVars()[analysis.mask->rowLoop];
  int64_t step = forall.getStaticStep()[analysis.mask->rowLoop];
  mlir::MLIRContext *context = forall.getContext();
  Value bound = builder.create<mlir::affine::AffineMinOp>(
      loc,
      mlir::AffineMap::get(1, 1,
                           {mlir::getAffineDimExpr(0, context) + step,
                            mlir::getAffineSymbolExpr(0, context)},
                           context),
      mlir::ValueRange{row, count});
  if (analysis.mask->strict) {
    Value first = builder.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::eq, row,
        builder.create<arith::ConstantIndexOp>(loc, 0));
    bound = builder.create<arith::SelectOp>(loc, first, count, bound);
  }
  // Each tensor's key dims take `bound`: empty tensors and slices anew,
  // tensors from outside through a slice, fills and generics their new
  // operands' types.
  auto sizesOf = [&](llvm::SmallVector<mlir::OpFoldResult> sizes,
                     llvm::ArrayRef<bool> dims) {
    for (auto [dim, isKey] : llvm::enumerate(dims))
      if (isKey)
        sizes[dim] = bound;
    return sizes;
  };
  llvm::DenseMap<Value, Value> sliced;
  const KeyDims &original = keys;
  for (mlir::Operation *each : rewritten) {
    mlir::Operation &op = *each;
    builder.setInsertionPoint(&op);
    if (auto empty = llvm::dyn_cast<mlir::tensor::EmptyOp>(op)) {
      auto replacement = builder.create<mlir::tensor::EmptyOp>(
          loc, sizesOf(empty.getMixedSizes(), original.lookup(empty)),
          empty.getType().getElementType());
      empty.replaceAllUsesWith(replacement.getResult());
      empty.erase();
      continue;
    }
    if (auto slice = llvm::dyn_cast<mlir::tensor::ExtractSliceOp>(op)) {
      auto replacement = builder.create<mlir::tensor::ExtractSliceOp>(
          loc, slice.getSource(), slice.getMixedOffsets(),
          sizesOf(slice.getMixedSizes(), original.lookup(slice)),
          slice.getMixedStrides());
      slice.replaceAllUsesWith(replacement.getResult());
      slice.erase();
      continue;
    }
    for (mlir::OpOperand &operand : op.getOpOperands()) {
      Value value = operand.get();
      if (!hasKeyDim(original, value) ||
          forall->isAncestor(value.getParentRegion()->getParentOp()))
        continue;
      Value &slice = sliced[value];
      if (!slice) {
        mlir::OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointAfter(bound.getDefiningOp());
        auto rank =
            llvm::cast<mlir::RankedTensorType>(value.getType()).getRank();
        slice = builder.create<mlir::tensor::ExtractSliceOp>(
            loc, value,
            llvm::SmallVector<mlir::OpFoldResult>(rank,
                                                  builder.getIndexAttr(0)),
            sizesOf(mlir::tensor::getMixedSizes(builder, loc, value),
                    original.lookup(value)),
            llvm::SmallVector<mlir::OpFoldResult>(rank,
                                                  builder.getIndexAttr(1)));
      }
      operand.set(slice);
    }
    auto destination = llvm::cast<mlir::DestinationStyleOpInterface>(op);
    for (mlir::OpResult result : op.getResults())
      result.setType(destination.getTiedOpOperand(result)->get().getType());
  }
  return mlir::success();
}

struct SkipMaskedKeysPass : impl::SkipMaskedKeysBase<SkipMaskedKeysPass> {
  void runOnOperation() override {
    getOperation().walk([](mlir::scf::ForallOp forall) {
      if (forall->hasAttr(kRowTilesAttr))
        (void)skipMaskedKeys(forall);
    });
  }
};

} // namespace

} // namespace ein
