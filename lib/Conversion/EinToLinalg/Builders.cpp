// Shared linalg building for ein-to-linalg: reshapes, generics, casts.
#include "Patterns.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

namespace ein::lowering {

namespace {

bool sameSizes(llvm::ArrayRef<OpFoldResult> x, llvm::ArrayRef<OpFoldResult> y) {
  if (x.size() != y.size())
    return false;
  for (size_t i = 0; i < x.size(); ++i) {
    auto cx = mlir::getConstantIntValue(x[i]);
    auto cy = mlir::getConstantIntValue(y[i]);
    if (cx || cy ? cx != cy : x[i] != y[i])
      return false;
  }
  return true;
}

/// Loop order for the generated loops: the innermost loop runs over the
/// axis that is contiguous (last) in the most operands, reads of an input
/// indexed by every loop counting double, so that LLVM can vectorize it;
/// the others keep their order. (An input broadcast along a loop counts
/// once, as the result: the mean a variance's second pass reads along each
/// row must not turn its loops so that the rows are read down columns.)
std::vector<std::string> orderLoops(std::vector<std::string> loops,
                                    const std::vector<Indexed> &inputs,
                                    const std::vector<std::string> &outAxes) {
  if (loops.size() < 2)
    return loops;
  std::map<std::string, int> score;
  for (auto &in : inputs) {
    std::set<std::string> read(in.axes.begin(), in.axes.end());
    read.erase("");
    bool whole = llvm::all_of(
        loops, [&](const std::string &loop) { return read.count(loop); });
    for (auto it = in.axes.rbegin(); it != in.axes.rend(); ++it)
      if (!it->empty()) { // the last axis that is not a broadcast 1
        score[*it] += whole ? 2 : 1;
        break;
      }
  }
  if (!outAxes.empty())
    score[outAxes.back()] += 1;
  size_t best = loops.size() - 1;
  for (size_t i = 0; i < loops.size(); ++i)
    if (score[loops[i]] > score[loops[best]])
      best = i;
  std::string inner = loops[best];
  loops.erase(loops.begin() + best);
  loops.push_back(inner);
  return loops;
}

} // namespace

mlir::FailureOr<llvm::SmallVector<ResultShape>>
OpLowering::resultShapes(mlir::Operation *op) {
  llvm::SmallVector<ResultShape> results;
  for (Value r : op->getResults()) {
    auto t = sizes.tensorType(r.getType(), op);
    if (mlir::failed(t))
      return mlir::failure();
    auto s = sizes.typeSizes(b, op->getLoc(), r.getType(), op);
    if (mlir::failed(s))
      return mlir::failure();
    results.push_back({*t, *s});
  }
  return results;
}

mlir::LogicalResult
OpLowering::bindAxes(const std::map<std::string, SizeExpr> &axes,
                     mlir::Operation *at) {
  axisSizes.clear();
  for (auto &[name, e] : axes) {
    auto n = sizes.materialize(b, at->getLoc(), e, at);
    if (mlir::failed(n))
      return mlir::failure();
    axisSizes[name] = *n;
  }
  return mlir::success();
}

std::vector<std::string>
OpLowering::flatten(const std::vector<std::vector<std::string>> &groups) const {
  std::vector<std::string> out;
  for (auto &g : groups)
    for (auto &a : g)
      if (!isUnitAxis(a))
        out.push_back(a);
  return out;
}

llvm::SmallVector<OpFoldResult>
OpLowering::sizesOf(const std::vector<std::string> &axes) const {
  llvm::SmallVector<OpFoldResult> out;
  for (auto &a : axes)
    out.push_back(axisSize(a));
  return out;
}

RankedTensorType OpLowering::typeOf(llvm::ArrayRef<OpFoldResult> shape,
                                    Type element) {
  llvm::SmallVector<int64_t> dims;
  for (auto s : shape)
    dims.push_back(
        mlir::getConstantIntValue(s).value_or(mlir::ShapedType::kDynamic));
  return RankedTensorType::get(dims, element);
}

/// Reshapes `v` by merging runs of its dims: target dim j is the product
/// of source dims `targets[j]` (in order; all targets together list the
/// source dims in order), and a target with no source dim has size 1.
/// Source dims of static size 1 may be left out (they are dropped). The
/// grouping is explicit, never inferred from sizes (with dynamic sizes
/// MLIR cannot infer it), and done as one `tensor.collapse_shape` and,
/// for inserted 1s, one `tensor.expand_shape`: views on a fresh result; a
/// strided argument is copied by bufferization only where its strides do
/// not allow the merge.
Value OpLowering::regroup(Location loc, Value v,
                          const std::vector<std::vector<int64_t>> &targets,
                          llvm::ArrayRef<OpFoldResult> targetSizes) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  auto target = typeOf(targetSizes, type.getElementType());
  if (auto *known = sizes.knownSizes(v);
      known && sameSizes(*known, targetSizes))
    return type == target
               ? v
               : b.create<mlir::tensor::CastOp>(loc, target, v).getResult();
  // An empty result has nothing to move (and MLIR 19 folds a merge into a
  // static 0 into a collapse its memref verifier rejects).
  for (auto size : targetSizes)
    if (isStaticSize(size, 0))
      return emptyTensor(loc, targetSizes, type.getElementType());
  int64_t rank = type.getRank();
  // Owner (non-empty target) of each source dim; a dropped unit dim joins
  // the target of its nearest covered neighbour.
  std::vector<int64_t> owner(rank, -1);
  std::vector<int64_t> nonEmpty; // target indices with source dims
  for (size_t j = 0; j < targets.size(); ++j) {
    if (targets[j].empty())
      continue;
    for (int64_t d : targets[j])
      owner[d] = static_cast<int64_t>(nonEmpty.size());
    nonEmpty.push_back(static_cast<int64_t>(j));
  }
  Value collapsed = v;
  if (nonEmpty.empty()) {
    // Every dim is 1: through rank 0.
    if (rank > 0)
      collapsed = b.create<mlir::tensor::CollapseShapeOp>(
          loc, RankedTensorType::get({}, type.getElementType()), v,
          llvm::ArrayRef<mlir::ReassociationIndices>{});
  } else {
    for (int64_t d = 0; d < rank; ++d)
      if (owner[d] < 0)
        owner[d] = d > 0 && owner[d - 1] >= 0 ? owner[d - 1] : -1;
    for (int64_t d = rank - 1; d >= 0; --d)
      if (owner[d] < 0)
        owner[d] = owner[d + 1];
    llvm::SmallVector<mlir::ReassociationIndices> groups(nonEmpty.size());
    for (int64_t d = 0; d < rank; ++d)
      groups[owner[d]].push_back(d);
    if (static_cast<int64_t>(groups.size()) != rank)
      collapsed = b.create<mlir::tensor::CollapseShapeOp>(loc, v, groups);
  }
  auto collapsedType = llvm::cast<RankedTensorType>(collapsed.getType());
  if (collapsedType.getRank() == static_cast<int64_t>(targets.size()))
    return collapsedType == target
               ? collapsed
               : b.create<mlir::tensor::CastOp>(loc, target, collapsed)
                     .getResult();
  // Insert the 1s: each merged dim takes the unit targets before it (the
  // last also those after it).
  llvm::SmallVector<mlir::ReassociationIndices> expand(nonEmpty.size());
  size_t next = 0;
  for (size_t k = 0; k < nonEmpty.size(); ++k) {
    size_t end = k + 1 == nonEmpty.size()
                     ? targets.size()
                     : static_cast<size_t>(nonEmpty[k]) + 1;
    for (; next < end; ++next)
      expand[k].push_back(static_cast<int64_t>(next));
  }
  return expandDims(loc, collapsed, expand, targetSizes);
}

/// MLIR 19 cannot bufferize an expand_shape whose group has two dynamic
/// sizes (it infers the sizes instead of taking them), so such a split is a
/// `tensor.reshape` to the listed sizes (a view of a contiguous buffer;
/// bufferization copies a strided one first).
Value OpLowering::expandDims(Location loc, Value v,
                             llvm::ArrayRef<mlir::ReassociationIndices> groups,
                             llvm::ArrayRef<OpFoldResult> shape) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  auto target = typeOf(shape, type.getElementType());
  bool ambiguous = false;
  for (auto &g : groups) {
    int dynamic = 0;
    for (int64_t d : g)
      dynamic += target.isDynamicDim(d);
    ambiguous |= dynamic > 1;
  }
  if (!ambiguous)
    return b.create<mlir::tensor::ExpandShapeOp>(loc, target, v, groups, shape);
  llvm::SmallVector<Value> values;
  for (auto s : shape)
    values.push_back(asValue(loc, s));
  Value shapeValue = b.create<mlir::tensor::FromElementsOp>(loc, values);
  return b.create<mlir::tensor::ReshapeOp>(loc, target, v, shapeValue);
}

Value OpLowering::regroupAxes(
    Location loc, Value v, const std::vector<std::string> &axes,
    const std::vector<std::vector<std::string>> &groups,
    llvm::ArrayRef<OpFoldResult> targetSizes) {
  std::vector<std::vector<int64_t>> targets;
  size_t next = 0;
  for (auto &g : groups) {
    std::vector<int64_t> dims;
    for (auto &a : g) {
      if (isUnitAxis(a))
        continue;
      while (next < axes.size() && axes[next] != a)
        ++next; // skips the "" dims
      dims.push_back(static_cast<int64_t>(next++));
    }
    targets.push_back(dims);
  }
  return regroup(loc, v, targets, targetSizes);
}

/// Each dim is split into its group's axes (`tensor.expand_shape`, a view
/// whatever the operand's strides), and a dim of size 1 stays, read at
/// index 0 (axis name ""). Nothing is merged, so a strided argument is
/// never copied here.
Indexed
OpLowering::elementary(Location loc, Value v,
                       const std::vector<std::vector<std::string>> &groups) {
  Indexed in;
  llvm::SmallVector<mlir::ReassociationIndices> reassociation;
  llvm::SmallVector<OpFoldResult> shape;
  bool splits = false;
  int64_t next = 0;
  for (auto &g : groups) {
    mlir::ReassociationIndices dims;
    for (auto &a : g)
      if (!isUnitAxis(a)) {
        in.axes.push_back(a);
        shape.push_back(axisSize(a));
        dims.push_back(next++);
      }
    if (dims.empty()) { // a dim of size 1
      in.axes.push_back("");
      shape.push_back(b.getIndexAttr(1));
      dims.push_back(next++);
    }
    splits |= dims.size() > 1;
    reassociation.push_back(dims);
  }
  in.value = v;
  if (splits)
    in.value = expandDims(loc, v, reassociation, shape);
  return in;
}

Value OpLowering::generic(
    Location loc, const std::vector<std::string> &loopsIn,
    const std::vector<Indexed> &inputs, const std::vector<std::string> &outAxes,
    Value init, const std::set<std::string> &reductions,
    llvm::function_ref<Value(OpBuilder &, Location, mlir::ValueRange)> body) {
  std::vector<std::string> loops = orderLoops(loopsIn, inputs, outAxes);
  std::map<std::string, unsigned> loopIndex;
  for (unsigned i = 0; i < loops.size(); ++i)
    loopIndex[loops[i]] = i;
  auto mapOf = [&](const std::vector<std::string> &axes) {
    llvm::SmallVector<mlir::AffineExpr> exprs;
    for (auto &a : axes)
      exprs.push_back(a.empty() ? b.getAffineConstantExpr(0)
                                : b.getAffineDimExpr(loopIndex.at(a)));
    return mlir::AffineMap::get(loops.size(), 0, exprs, b.getContext());
  };
  llvm::SmallVector<mlir::AffineMap> maps;
  llvm::SmallVector<Value> ins;
  for (auto &in : inputs) {
    maps.push_back(mapOf(in.axes));
    ins.push_back(in.value);
  }
  maps.push_back(mapOf(outAxes));
  llvm::SmallVector<mlir::utils::IteratorType> iterators;
  for (auto &l : loops)
    iterators.push_back(reductions.count(l)
                            ? mlir::utils::IteratorType::reduction
                            : mlir::utils::IteratorType::parallel);
  auto op = b.create<mlir::linalg::GenericOp>(
      loc, init.getType(), ins, mlir::ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
        nb.create<mlir::linalg::YieldOp>(nl, body(nb, nl, args));
      });
  if (auto *known = sizes.knownSizes(init)) {
    auto copy = *known; // setKnownSizes may rehash
    sizes.setKnownSizes(op.getResult(0), copy);
  }
  return op.getResult(0);
}

Value OpLowering::emptyTensor(Location loc, llvm::ArrayRef<OpFoldResult> shape,
                              Type element) {
  Value v = b.create<mlir::tensor::EmptyOp>(loc, shape, element);
  sizes.setKnownSizes(v, shape);
  return v;
}

Value OpLowering::filled(Location loc, llvm::ArrayRef<OpFoldResult> shape,
                         Type element, mlir::TypedAttr value) {
  Value init = emptyTensor(loc, shape, element);
  Value scalar = b.create<mlir::arith::ConstantOp>(loc, value);
  Value v = b.create<mlir::linalg::FillOp>(loc, scalar, init).getResult(0);
  sizes.setKnownSizes(v, shape);
  return v;
}

Value OpLowering::mapElements(
    Location loc, Value v, Type to,
    llvm::function_ref<Value(OpBuilder &, Location, Value)> f) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  std::vector<std::string> axes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    axes.push_back("d" + std::to_string(i));
  Value init = emptyTensor(loc, mlir::tensor::getMixedSizes(b, loc, v), to);
  return generic(loc, axes, {{v, axes}}, axes, init, {},
                 [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
                   return f(nb, nl, args[0]);
                 });
}

/// Float to integer, rounding toward zero, saturating: NaN gives 0, values
/// beyond the integer's range its minimum or maximum. (`arith.fptosi` alone
/// is poison there, so the same input could give different answers in the
/// scalar and vector loops.)
Value OpLowering::saturatingFPToSI(Location loc, Value v, Type to) {
  if (v.getType().getIntOrFloatBitWidth() < 32)
    v = b.create<mlir::arith::ExtFOp>(loc, b.getF32Type(), v); // exact
  auto floatType = llvm::cast<mlir::FloatType>(v.getType());
  unsigned width = to.getIntOrFloatBitWidth();
  // -2^(w-1) and 2^(w-1) are exact in f32 and f64.
  double bound = std::ldexp(1.0, static_cast<int>(width) - 1);
  Value lo =
      b.create<mlir::arith::ConstantOp>(loc, b.getFloatAttr(floatType, -bound));
  Value hi =
      b.create<mlir::arith::ConstantOp>(loc, b.getFloatAttr(floatType, bound));
  Value zeroF =
      b.create<mlir::arith::ConstantOp>(loc, b.getFloatAttr(floatType, 0.0));
  using Pred = mlir::arith::CmpFPredicate;
  Value inRange = b.create<mlir::arith::AndIOp>(
      loc, b.create<mlir::arith::CmpFOp>(loc, Pred::OGE, v, lo),
      b.create<mlir::arith::CmpFOp>(loc, Pred::OLT, v, hi));
  Value tooBig = b.create<mlir::arith::CmpFOp>(loc, Pred::OGE, v, hi);
  Value tooSmall = b.create<mlir::arith::CmpFOp>(loc, Pred::OLT, v, lo);
  Value safe = b.create<mlir::arith::SelectOp>(loc, inRange, v, zeroF);
  Value converted = b.create<mlir::arith::FPToSIOp>(loc, to, safe);
  auto intType = llvm::cast<mlir::IntegerType>(to);
  Value maxI = b.create<mlir::arith::ConstantOp>(
      loc, b.getIntegerAttr(intType, llvm::APInt::getSignedMaxValue(width)));
  Value minI = b.create<mlir::arith::ConstantOp>(
      loc, b.getIntegerAttr(intType, llvm::APInt::getSignedMinValue(width)));
  Value high = b.create<mlir::arith::SelectOp>(loc, tooBig, maxI, converted);
  return b.create<mlir::arith::SelectOp>(loc, tooSmall, minI, high);
}

Value OpLowering::cast(Location loc, Value v, Type to) {
  return castElement(loc, v, v.getType(), to);
}

Value OpLowering::castElement(Location loc, Value v, Type einFrom, Type to) {
  if (einFrom == to)
    return v;
  // A bool is stored as one byte, 0 or 1 (Sizes.cpp): to a bool is "not
  // zero", from a bool its 0 or 1 as a number.
  if (to.isInteger(1)) {
    Type from = v.getType();
    bool fromFloat = llvm::isa<mlir::FloatType>(from);
    Value zero = fromFloat ? Value(b.create<mlir::arith::ConstantOp>(
                                 loc, b.getFloatAttr(from, 0.0)))
                           : Value(b.create<mlir::arith::ConstantOp>(
                                 loc, b.getIntegerAttr(from, 0)));
    Value nonZero = fromFloat
                        ? Value(b.create<mlir::arith::CmpFOp>(
                              loc, mlir::arith::CmpFPredicate::UNE, v, zero))
                        : Value(b.create<mlir::arith::CmpIOp>(
                              loc, mlir::arith::CmpIPredicate::ne, v, zero));
    return b.create<mlir::arith::ExtUIOp>(loc, b.getI8Type(), nonZero);
  }
  if (einFrom.isInteger(1)) {
    if (llvm::isa<mlir::FloatType>(to))
      return b.create<mlir::arith::UIToFPOp>(loc, to, v);
    return to.isInteger(8) ? v
                           : Value(b.create<mlir::arith::ExtUIOp>(loc, to, v));
  }
  Type from = v.getType();
  bool fromFloat = llvm::isa<mlir::FloatType>(from);
  bool toFloat = llvm::isa<mlir::FloatType>(to);
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fromFloat && toFloat) {
    if (fw == tw) // bf16 <-> f16: through f32
      return cast(loc, cast(loc, v, b.getF32Type()), to);
    if (fw < tw)
      return b.create<mlir::arith::ExtFOp>(loc, to, v);
    return b.create<mlir::arith::TruncFOp>(loc, to, v);
  }
  if (!fromFloat && toFloat)
    return b.create<mlir::arith::SIToFPOp>(loc, to, v);
  if (fromFloat && !toFloat)
    return saturatingFPToSI(loc, v, to);
  if (fw < tw)
    return b.create<mlir::arith::ExtSIOp>(loc, to, v);
  return b.create<mlir::arith::TruncIOp>(loc, to, v);
}

Value OpLowering::castTensor(Location loc, Value v, Type to) {
  return castTensor(
      loc, v, llvm::cast<RankedTensorType>(v.getType()).getElementType(), to);
}

Value OpLowering::castTensor(Location loc, Value v, Type einFrom, Type to) {
  if (einFrom == to)
    return v;
  Type stored = to.isInteger(1) ? b.getI8Type() : to;
  return mapElements(loc, v, stored, [&](OpBuilder &nb, Location nl, Value x) {
    // The body's builder is `b` itself at another insertion point.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
    return castElement(nl, x, einFrom, to);
  });
}

mlir::TypedAttr OpLowering::identity(ReduceKind kind, Type t) {
  // The fold's identity follows from its combine (ReduceKinds.def).
  ReduceCombine combine = reduceCombine(kind);
  if (auto f = llvm::dyn_cast<mlir::FloatType>(t)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    switch (combine) {
    case ReduceCombine::Add:
      return b.getFloatAttr(t, 0.0);
    case ReduceCombine::Mul:
      return b.getFloatAttr(t, 1.0);
    case ReduceCombine::Max:
      return b.getFloatAttr(t, llvm::APFloat::getInf(sem, /*Negative=*/true));
    case ReduceCombine::Min:
      return b.getFloatAttr(t, llvm::APFloat::getInf(sem, false));
    case ReduceCombine::Or: // bool only: never a float
    case ReduceCombine::And:
      break;
    }
  }
  unsigned w = t.getIntOrFloatBitWidth();
  switch (combine) {
  case ReduceCombine::Or: // on bool bytes: the identity of or
    return b.getIntegerAttr(t, 0);
  case ReduceCombine::And:
    return b.getIntegerAttr(t, 1);
  case ReduceCombine::Add:
    return b.getIntegerAttr(t, 0);
  case ReduceCombine::Mul:
    return b.getIntegerAttr(t, 1);
  case ReduceCombine::Max:
    return b.getIntegerAttr(t, llvm::APInt::getSignedMinValue(w));
  case ReduceCombine::Min:
    return b.getIntegerAttr(t, llvm::APInt::getSignedMaxValue(w));
  }
  return b.getIntegerAttr(t, 0);
}

mlir::arith::FastMathFlags OpLowering::reductionMath() {
  return mlir::arith::FastMathFlags::reassoc |
         mlir::arith::FastMathFlags::contract;
}

Value OpLowering::combine(OpBuilder &nb, Location loc, ReduceKind kind,
                          Value acc, Value x) {
  bool isF = llvm::isa<mlir::FloatType>(acc.getType());
  switch (reduceCombine(kind)) {
  case ReduceCombine::Add:
    return isF ? Value(nb.create<mlir::arith::AddFOp>(loc, acc, x,
                                                      reductionMath()))
               : Value(nb.create<mlir::arith::AddIOp>(loc, acc, x));
  case ReduceCombine::Mul:
    return isF ? Value(nb.create<mlir::arith::MulFOp>(loc, acc, x,
                                                      reductionMath()))
               : Value(nb.create<mlir::arith::MulIOp>(loc, acc, x));
  case ReduceCombine::Max:
    return isF ? Value(nb.create<mlir::arith::MaximumFOp>(loc, acc, x))
               : Value(nb.create<mlir::arith::MaxSIOp>(loc, acc, x));
  case ReduceCombine::Min:
    return isF ? Value(nb.create<mlir::arith::MinimumFOp>(loc, acc, x))
               : Value(nb.create<mlir::arith::MinSIOp>(loc, acc, x));
  case ReduceCombine::Or: // bool bytes are 0 or 1: or is max, and is min
    return nb.create<mlir::arith::MaxUIOp>(loc, acc, x);
  case ReduceCombine::And:
    return nb.create<mlir::arith::MinUIOp>(loc, acc, x);
  }
  return acc;
}

mlir::LogicalResult
replaceOrReport(mlir::ConversionPatternRewriter &rewriter, mlir::Operation *op,
                mlir::FailureOr<llvm::SmallVector<Value>> values) {
  if (mlir::failed(values))
    return op->emitError("cannot lower this op to linalg");
  rewriter.replaceOp(op, *values);
  return mlir::success();
}

} // namespace ein::lowering
