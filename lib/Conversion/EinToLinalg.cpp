// The ein-to-linalg pass: every ein op becomes linalg on tensors whose
// sizes are static where ein.dims binds them and dynamic (read from the
// arguments at entry) elsewhere.
#include "ein/Conversion/Passes.h"
#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/Shape/SizeReads.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <set>

namespace ein {

#define GEN_PASS_DEF_EINTOLINALG
#include "ein/Conversion/Passes.h.inc"

namespace {

using mlir::Location;
using mlir::OpBuilder;
using mlir::OpFoldResult;
using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

/// An operand of a generic: a value and the elementary axis of each dim; an
/// empty name is a dim of size 1, read at index 0 (a broadcast).
struct Indexed {
  Value value;
  std::vector<std::string> axes;
};

bool isLowPrecisionFloat(Type t) {
  return llvm::isa<mlir::FloatType>(t) && t.getIntOrFloatBitWidth() < 32;
}

/// Integer division that never traps (language.md §6): it truncates toward
/// zero, `x / 0` is 0 and `INT_MIN / -1` wraps to INT_MIN (numpy's results
/// for these two in `//`). Selects around a safe divisor, no branch, so the
/// loop still vectorizes; a constant divisor folds the selects away.
Value nonTrappingDivSI(OpBuilder &b, Location loc, Value x, Value y) {
  Type t = x.getType();
  unsigned width = t.getIntOrFloatBitWidth();
  auto constant = [&](const llvm::APInt &v) -> Value {
    return b.create<mlir::arith::ConstantOp>(loc, b.getIntegerAttr(t, v));
  };
  auto eq = [&](Value a, Value c) -> Value {
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::eq, a,
                                         c);
  };
  // One statement each: the IR's order must not depend on the order in
  // which a compiler evaluates arguments.
  Value zero = constant(llvm::APInt(width, 0));
  Value one = constant(llvm::APInt(width, 1));
  Value minusOne = constant(llvm::APInt::getAllOnes(width));
  Value minimum = constant(llvm::APInt::getSignedMinValue(width));
  Value byZero = eq(y, zero);
  Value xIsMinimum = eq(x, minimum);
  Value yIsMinusOne = eq(y, minusOne);
  Value overflows = b.create<mlir::arith::AndIOp>(loc, xIsMinimum, yIsMinusOne);
  Value unsafe = b.create<mlir::arith::OrIOp>(loc, byZero, overflows);
  // INT_MIN / 1 is INT_MIN: the wrapped quotient.
  Value divisor = b.create<mlir::arith::SelectOp>(loc, unsafe, one, y);
  Value quotient = b.create<mlir::arith::DivSIOp>(loc, x, divisor);
  return b.create<mlir::arith::SelectOp>(loc, byZero, zero, quotient);
}

/// Integer power that never traps: a negative exponent gives 1 / x**|y| in
/// ein's integer division (1 for x = 1, +-1 for x = -1, 0 otherwise, x = 0
/// included). math.ipowi computes the same except that it divides by zero
/// on purpose for 0 ** negative; a base of 2 stands in for 0 there.
Value nonTrappingIPowI(OpBuilder &b, Location loc, Value x, Value y) {
  Type t = x.getType();
  unsigned width = t.getIntOrFloatBitWidth();
  Value zero = b.create<mlir::arith::ConstantOp>(
      loc, b.getIntegerAttr(t, llvm::APInt(width, 0)));
  Value two = b.create<mlir::arith::ConstantOp>(
      loc, b.getIntegerAttr(t, llvm::APInt(width, 2)));
  Value zeroBase = b.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::eq, x, zero);
  Value negative = b.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::slt, y, zero);
  Value unsafe = b.create<mlir::arith::AndIOp>(loc, zeroBase, negative);
  Value base = b.create<mlir::arith::SelectOp>(loc, unsafe, two, x);
  return b.create<mlir::math::IPowIOp>(loc, base, y);
}

/// Lowers the ops of one function; reports the first failure on the op.
///
/// Sizes are `OpFoldResult`s: an index attribute where `ein.dims` binds every
/// name of the size, else an index value computed at the function's entry
/// from the names read from its arguments' shapes (`planSizeReads`).
class FunctionLowering {
public:
  FunctionLowering(OpBuilder &b, const Bindings &env) : b(b), env(env) {}

  /// The static size of `e` when it evaluates with the module's dims;
  /// kDynamic when it has free names (an error only beyond 2^62).
  mlir::FailureOr<int64_t> staticSize(const SizeExpr &e, mlir::Operation *at) {
    if (e.tooComplex() || e.overflowed()) {
      at->emitError() << "size " << e.str() << " is out of range";
      return mlir::failure();
    }
    auto v = e.evaluate(env);
    if (!v)
      return mlir::ShapedType::kDynamic;
    if (*v < 0 || *v > Int(INT64_MAX) / 2) {
      at->emitError() << "size " << toString(*v) << " is out of range";
      return mlir::failure();
    }
    return static_cast<int64_t>(*v);
  }

  mlir::FailureOr<RankedTensorType> tensorType(Type einType,
                                               mlir::Operation *at) {
    auto t = llvm::cast<EinTensorType>(einType);
    llvm::SmallVector<int64_t> dims;
    for (auto &d : t.getShape()) {
      if (d.isPack()) {
        at->emitError() << "lowering needs the rank of variadic " << d.str()
                        << " (give it with --rank)";
        return mlir::failure();
      }
      auto n = staticSize(d.size, at);
      if (mlir::failed(n))
        return mlir::failure();
      dims.push_back(*n);
    }
    return RankedTensorType::get(dims, t.getElementType());
  }

  /// Reads every free name of the parameters' types from the arguments'
  /// shapes (`tensor.dim` at the entry); fails naming a name that cannot be
  /// read (it appears only inside a product of free names).
  mlir::LogicalResult readSizes(mlir::func::FuncOp fn,
                                mlir::ValueRange arguments) {
    std::vector<Shape> shapes;
    for (Type t : fn.getArgumentTypes())
      shapes.push_back(llvm::cast<EinTensorType>(t).getShape());
    SizeReadPlan plan = planSizeReads(shapes, env);
    if (!plan.unreadable.empty()) {
      auto &[name, where] = plan.unreadable.front();
      return fn.emitError()
             << "size-generic code cannot read '" << name
             << "' from the arguments' sizes (it appears only in " << where
             << "); bind it with --dim";
    }
    Location loc = fn.getLoc();
    for (auto &read : plan.reads) {
      Value size = b.create<mlir::tensor::DimOp>(loc, arguments[read.param],
                                                 read.dim);
      auto offset = materialize(loc, read.offset, fn);
      if (mlir::failed(offset))
        return mlir::failure();
      if (!isZero(*offset))
        size = b.create<mlir::arith::SubIOp>(loc, size, asValue(loc, *offset));
      if (read.scale != 1)
        size = b.create<mlir::arith::DivSIOp>(
            loc, size, index(loc, static_cast<int64_t>(read.scale)));
      symbols[read.symbol] = size;
    }
    for (auto [arg, type] : llvm::zip(arguments, fn.getArgumentTypes())) {
      auto sizes = typeSizes(loc, type, fn);
      if (mlir::failed(sizes))
        return mlir::failure();
      knownSizes[arg] = *sizes;
    }
    return mlir::success();
  }

  /// `e` as an index: an attribute when static, else arithmetic on the
  /// names read at the entry. Quotients are floor divisions whose divisor is
  /// never 0 here (entry checks hold; a 0 divisor gives 0, not a trap).
  mlir::FailureOr<OpFoldResult> materialize(Location loc, const SizeExpr &e,
                                            mlir::Operation *at) {
    auto n = staticSize(e, at);
    if (mlir::failed(n))
      return mlir::failure();
    if (*n != mlir::ShapedType::kDynamic)
      return OpFoldResult(b.getIndexAttr(*n));
    // One value per expression: equal sizes are the same value, so reshapes
    // between equal shapes are recognised and skipped. (Every op is built in
    // the function's one block, in order, so an earlier value dominates.)
    std::string key = e.str();
    if (auto it = materialized.find(key); it != materialized.end())
      return OpFoldResult(it->second);
    auto value = materializeTerms(loc, e, at);
    if (mlir::failed(value))
      return mlir::failure();
    materialized[key] = *value;
    return OpFoldResult(*value);
  }

  mlir::FailureOr<Value> materializeTerms(Location loc, const SizeExpr &e,
                                          mlir::Operation *at) {
    SizeExpr bound = e.substitute(env);
    Value sum;
    for (auto &term : bound.termList()) {
      if (term.coefficient > Int(INT64_MAX) || term.coefficient < -Int(INT64_MAX)) {
        at->emitError() << "size " << e.str() << " is out of range";
        return mlir::failure();
      }
      Value product;
      for (auto &f : term.factors) {
        Value factor;
        if (f.num) {
          auto num = materialize(loc, *f.num, at);
          auto den = materialize(loc, *f.den, at);
          if (mlir::failed(num) || mlir::failed(den))
            return mlir::failure();
          factor = safeFloorDiv(loc, asValue(loc, *num), asValue(loc, *den));
        } else {
          auto it = symbols.find(f.symbol);
          if (it == symbols.end()) {
            at->emitError() << "lowering needs every dim bound to a number "
                               "or read from the arguments: '"
                            << f.symbol << "' is free (bind it with --dim)";
            return mlir::failure();
          }
          factor = it->second;
        }
        for (unsigned p = 0; p < f.power; ++p)
          product = product ? b.create<mlir::arith::MulIOp>(loc, product, factor)
                                  .getResult()
                            : factor;
      }
      int64_t c = static_cast<int64_t>(term.coefficient);
      Value value;
      if (!product)
        value = index(loc, c);
      else if (c == 1)
        value = product;
      else
        value = b.create<mlir::arith::MulIOp>(loc, product, index(loc, c));
      sum = sum ? b.create<mlir::arith::AddIOp>(loc, sum, value).getResult()
                : value;
    }
    if (!sum)
      return index(loc, 0);
    return sum;
  }

  /// The sizes of a value of ein type `einType` (a parameter, a result).
  mlir::FailureOr<llvm::SmallVector<OpFoldResult>>
  typeSizes(Location loc, Type einType, mlir::Operation *at) {
    llvm::SmallVector<OpFoldResult> out;
    for (auto &d : llvm::cast<EinTensorType>(einType).getShape()) {
      if (d.isPack()) {
        at->emitError() << "lowering needs the rank of variadic " << d.str();
        return mlir::failure();
      }
      auto s = materialize(loc, d.size, at);
      if (mlir::failed(s))
        return mlir::failure();
      out.push_back(*s);
    }
    return out;
  }

  mlir::LogicalResult lower(mlir::Operation *op, mlir::IRMapping &map);

private:
  OpBuilder &b;
  const Bindings &env;
  std::map<std::string, Value> symbols; // names read at the entry
  std::map<std::string, Value> materialized; // size expression -> its value
  /// The sizes of values this lowering built, as it built them.
  llvm::DenseMap<Value, llvm::SmallVector<OpFoldResult>> knownSizes;
  std::map<std::string, OpFoldResult> axisSize;

  Value index(Location loc, int64_t v) {
    return b.create<mlir::arith::ConstantIndexOp>(loc, v);
  }
  Value asValue(Location loc, OpFoldResult v) {
    if (auto attr = llvm::dyn_cast_if_present<mlir::Attribute>(v))
      return index(loc, llvm::cast<mlir::IntegerAttr>(attr).getInt());
    return llvm::cast<Value>(v);
  }
  static bool isStatic(OpFoldResult v, int64_t n) {
    auto c = mlir::getConstantIntValue(v);
    return c && *c == n;
  }
  static bool isZero(OpFoldResult v) { return isStatic(v, 0); }
  static bool sameSizes(llvm::ArrayRef<OpFoldResult> x,
                        llvm::ArrayRef<OpFoldResult> y) {
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
  /// num / den rounded down (sizes are non-negative), 0 when den is 0.
  Value safeFloorDiv(Location loc, Value num, Value den) {
    Value zero = index(loc, 0), one = index(loc, 1);
    Value byZero = b.create<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::eq, den, zero);
    Value divisor = b.create<mlir::arith::SelectOp>(loc, byZero, one, den);
    Value q = b.create<mlir::arith::DivUIOp>(loc, num, divisor);
    return b.create<mlir::arith::SelectOp>(loc, byZero, zero, q);
  }
  OpFoldResult mul(Location loc, OpFoldResult x, OpFoldResult y) {
    auto cx = mlir::getConstantIntValue(x), cy = mlir::getConstantIntValue(y);
    if (cx && cy)
      return b.getIndexAttr(*cx * *cy);
    if (cx && *cx == 1)
      return y;
    if (cy && *cy == 1)
      return x;
    return b.create<mlir::arith::MulIOp>(loc, asValue(loc, x), asValue(loc, y))
        .getResult();
  }
  OpFoldResult add(Location loc, OpFoldResult x, OpFoldResult y) {
    auto cx = mlir::getConstantIntValue(x), cy = mlir::getConstantIntValue(y);
    if (cx && cy)
      return b.getIndexAttr(*cx + *cy);
    if (cx && *cx == 0)
      return y;
    if (cy && *cy == 0)
      return x;
    return b.create<mlir::arith::AddIOp>(loc, asValue(loc, x), asValue(loc, y))
        .getResult();
  }
  static RankedTensorType typeOf(llvm::ArrayRef<OpFoldResult> shape,
                                 Type element) {
    llvm::SmallVector<int64_t> dims;
    for (auto s : shape)
      dims.push_back(
          mlir::getConstantIntValue(s).value_or(mlir::ShapedType::kDynamic));
    return RankedTensorType::get(dims, element);
  }

  mlir::LogicalResult bindAxes(const std::map<std::string, SizeExpr> &sizes,
                               mlir::Operation *at) {
    axisSize.clear();
    for (auto &[name, e] : sizes) {
      auto n = materialize(at->getLoc(), e, at);
      if (mlir::failed(n))
        return mlir::failure();
      axisSize[name] = *n;
    }
    return mlir::success();
  }

  bool isUnitAxis(const std::string &a) { return isStatic(axisSize.at(a), 1); }

  /// Elementary axes of a group list, with size-1 axes dropped.
  std::vector<std::string>
  flatten(const std::vector<std::vector<std::string>> &groups) {
    std::vector<std::string> out;
    for (auto &g : groups)
      for (auto &a : g)
        if (!isUnitAxis(a))
          out.push_back(a);
    return out;
  }

  llvm::SmallVector<OpFoldResult> sizesOf(const std::vector<std::string> &axes) {
    llvm::SmallVector<OpFoldResult> out;
    for (auto &a : axes)
      out.push_back(axisSize.at(a));
    return out;
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
  Value regroup(Location loc, Value v,
                const std::vector<std::vector<int64_t>> &targets,
                llvm::ArrayRef<OpFoldResult> targetSizes) {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    auto target = typeOf(targetSizes, type.getElementType());
    if (auto known = knownSizes.find(v);
        known != knownSizes.end() && sameSizes(known->second, targetSizes))
      return type == target ? v
                            : b.create<mlir::tensor::CastOp>(loc, target, v)
                                  .getResult();
    // An empty result has nothing to move (and MLIR 19 folds a merge into a
    // static 0 into a collapse its memref verifier rejects).
    for (auto size : targetSizes)
      if (isZero(size))
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
    llvm::SmallVector<mlir::ReassociationIndices> expand(
        std::max<size_t>(nonEmpty.size(), 0));
    size_t next = 0;
    for (size_t k = 0; k < nonEmpty.size(); ++k) {
      size_t end = k + 1 == nonEmpty.size() ? targets.size()
                                            : static_cast<size_t>(nonEmpty[k]) + 1;
      for (; next < end; ++next)
        expand[k].push_back(static_cast<int64_t>(next));
    }
    return expandDims(loc, collapsed, expand, targetSizes);
  }

  /// Splits dims of `v` (`tensor.expand_shape`, a view). MLIR 19 cannot
  /// bufferize an expand_shape whose group has two dynamic sizes (it infers
  /// the sizes instead of taking them), so such a split is a `tensor.reshape`
  /// to the listed sizes (a view of a contiguous buffer; bufferization copies
  /// a strided one first).
  Value expandDims(Location loc, Value v,
                   llvm::ArrayRef<mlir::ReassociationIndices> groups,
                   llvm::ArrayRef<OpFoldResult> sizes) {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    auto target = typeOf(sizes, type.getElementType());
    bool ambiguous = false;
    for (auto &g : groups) {
      int dynamic = 0;
      for (int64_t d : g)
        dynamic += target.isDynamicDim(d);
      ambiguous |= dynamic > 1;
    }
    if (!ambiguous)
      return b.create<mlir::tensor::ExpandShapeOp>(loc, target, v, groups,
                                                   sizes);
    llvm::SmallVector<Value> values;
    for (auto s : sizes)
      values.push_back(asValue(loc, s));
    Value shape = b.create<mlir::tensor::FromElementsOp>(loc, values);
    return b.create<mlir::tensor::ReshapeOp>(loc, target, v, shape);
  }

  /// Regroups a value whose dims are the elementary axes `axes` ("" for a
  /// dim of size 1) into the dims `groups` (lists of elementary axes).
  Value regroupAxes(Location loc, Value v, const std::vector<std::string> &axes,
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

  /// Float to integer, rounding toward zero, saturating: NaN gives 0, values
  /// beyond the integer's range its minimum or maximum. (`arith.fptosi` alone
  /// is poison there, so the same input could give different answers in the
  /// scalar and vector loops.)
  Value saturatingFPToSI(Location loc, Value v, Type to) {
    if (v.getType().getIntOrFloatBitWidth() < 32)
      v = b.create<mlir::arith::ExtFOp>(loc, b.getF32Type(), v); // exact
    auto floatType = llvm::cast<mlir::FloatType>(v.getType());
    unsigned width = to.getIntOrFloatBitWidth();
    // -2^(w-1) and 2^(w-1) are exact in f32 and f64.
    double bound = std::ldexp(1.0, static_cast<int>(width) - 1);
    Value lo = b.create<mlir::arith::ConstantOp>(
        loc, b.getFloatAttr(floatType, -bound));
    Value hi = b.create<mlir::arith::ConstantOp>(
        loc, b.getFloatAttr(floatType, bound));
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

  Value cast(Location loc, Value v, Type to) {
    Type from = v.getType();
    if (from == to)
      return v;
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

  /// Builds a linalg.generic over `loops`; `body` maps block arguments (one
  /// per input, then the output's current value) to the yielded value.
  /// Loop order for the generated loops: the innermost loop runs over the
  /// axis that is contiguous (last) in the most operands, reads counting
  /// double, so that LLVM can vectorize it; the others keep their order.
  static std::vector<std::string>
  orderLoops(std::vector<std::string> loops, const std::vector<Indexed> &inputs,
             const std::vector<std::string> &outAxes) {
    if (loops.size() < 2)
      return loops;
    std::map<std::string, int> score;
    for (auto &in : inputs)
      for (auto it = in.axes.rbegin(); it != in.axes.rend(); ++it)
        if (!it->empty()) { // the last axis that is not a broadcast 1
          score[*it] += 2;
          break;
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

  Value generic(Location loc, const std::vector<std::string> &loopsIn,
                const std::vector<Indexed> &inputs,
                const std::vector<std::string> &outAxes, Value init,
                const std::set<std::string> &reductions,
                llvm::function_ref<Value(OpBuilder &, Location,
                                         mlir::ValueRange)>
                    body) {
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
    if (auto known = knownSizes.find(init); known != knownSizes.end()) {
      auto sizes = known->second; // a copy: [] may rehash
      knownSizes[op.getResult(0)] = sizes;
    }
    return op.getResult(0);
  }

  Value emptyTensor(Location loc, llvm::ArrayRef<OpFoldResult> shape,
                    Type element) {
    Value v = b.create<mlir::tensor::EmptyOp>(loc, shape, element);
    knownSizes[v] = llvm::SmallVector<OpFoldResult>(shape);
    return v;
  }

  Value filled(Location loc, llvm::ArrayRef<OpFoldResult> shape, Type element,
               mlir::TypedAttr value) {
    Value init = emptyTensor(loc, shape, element);
    Value scalar = b.create<mlir::arith::ConstantOp>(loc, value);
    Value v = b.create<mlir::linalg::FillOp>(loc, scalar, init).getResult(0);
    auto sizes = knownSizes.lookup(init); // a copy: [] may rehash
    knownSizes[v] = sizes;
    return v;
  }

  /// An operand with one dim per elementary axis: each dim is split into its
  /// group's axes (`tensor.expand_shape`, a view whatever the operand's
  /// strides), and a dim of size 1 stays, read at index 0 (axis name "").
  /// Nothing is merged, so a strided argument is never copied here.
  Indexed elementary(Location loc, Value v,
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
          shape.push_back(axisSize.at(a));
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

  mlir::TypedAttr identity(ReduceKind kind, Type t) {
    if (auto f = llvm::dyn_cast<mlir::FloatType>(t)) {
      const llvm::fltSemantics &sem = f.getFloatSemantics();
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Mean:
        return b.getFloatAttr(t, 0.0);
      case ReduceKind::Prod:
        return b.getFloatAttr(t, 1.0);
      case ReduceKind::Max:
        return b.getFloatAttr(t, llvm::APFloat::getInf(sem, /*Negative=*/true));
      case ReduceKind::Min:
        return b.getFloatAttr(t, llvm::APFloat::getInf(sem, false));
      }
    }
    unsigned w = t.getIntOrFloatBitWidth();
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
      return b.getIntegerAttr(t, 0);
    case ReduceKind::Prod:
      return b.getIntegerAttr(t, 1);
    case ReduceKind::Max:
      return b.getIntegerAttr(t, llvm::APInt::getSignedMinValue(w));
    case ReduceKind::Min:
      return b.getIntegerAttr(t, llvm::APInt::getSignedMaxValue(w));
    }
    return b.getIntegerAttr(t, 0);
  }

  /// Reductions may be reassociated (and multiply-adds contracted into
  /// FMAs) so that LLVM vectorizes them; results stay within the tests'
  /// tolerances, as with any BLAS.
  static mlir::arith::FastMathFlags reductionMath() {
    return mlir::arith::FastMathFlags::reassoc |
           mlir::arith::FastMathFlags::contract;
  }

  Value combine(OpBuilder &nb, Location loc, ReduceKind kind, Value acc,
                Value x) {
    bool isF = llvm::isa<mlir::FloatType>(acc.getType());
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
      return isF ? Value(nb.create<mlir::arith::AddFOp>(loc, acc, x, reductionMath()))
                 : Value(nb.create<mlir::arith::AddIOp>(loc, acc, x));
    case ReduceKind::Prod:
      return isF ? Value(nb.create<mlir::arith::MulFOp>(loc, acc, x, reductionMath()))
                 : Value(nb.create<mlir::arith::MulIOp>(loc, acc, x));
    case ReduceKind::Max:
      return isF ? Value(nb.create<mlir::arith::MaximumFOp>(loc, acc, x))
                 : Value(nb.create<mlir::arith::MaxSIOp>(loc, acc, x));
    case ReduceKind::Min:
      return isF ? Value(nb.create<mlir::arith::MinimumFOp>(loc, acc, x))
                 : Value(nb.create<mlir::arith::MinSIOp>(loc, acc, x));
    }
    return acc;
  }

  /// An elementwise map of `v` to element type `to` (identity shapes).
  Value mapElements(Location loc, Value v, Type to,
                    llvm::function_ref<Value(OpBuilder &, Location, Value)> f) {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    std::vector<std::string> axes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      axes.push_back("d" + std::to_string(i));
    Value init =
        emptyTensor(loc, mlir::tensor::getMixedSizes(b, loc, v), to);
    return generic(loc, axes, {{v, axes}}, axes, init, {},
                   [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
                     return f(nb, nl, args[0]);
                   });
  }

  Value castTensor(Location loc, Value v, Type to) {
    if (llvm::cast<RankedTensorType>(v.getType()).getElementType() == to)
      return v;
    return mapElements(loc, v, to, [&](OpBuilder &nb, Location nl, Value x) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
      return cast(nl, x, to);
    });
  }

  /// A result's type and sizes (attributes where static).
  struct ResultShape {
    RankedTensorType type;
    llvm::SmallVector<OpFoldResult> sizes;
  };
  mlir::FailureOr<Value> lowerTransform(mlir::Operation *op, Value input,
                                        const ResultShape &result,
                                        const TransformInfo &info,
                                        PatternUse use, ReduceKind kind);
  mlir::FailureOr<Value> lowerEinsum(EinsumOp op, llvm::ArrayRef<Value> inputs,
                                     const ResultShape &result,
                                     const EinsumInfo &info);
  mlir::FailureOr<Value> lowerElementwise(mlir::Operation *op,
                                          llvm::ArrayRef<Value> inputs,
                                          const ResultShape &result);
};

mlir::FailureOr<Value>
FunctionLowering::lowerTransform(mlir::Operation *op, Value input,
                                 const ResultShape &resultShape,
                                 const TransformInfo &info, PatternUse use,
                                 ReduceKind kind) {
  Location loc = op->getLoc();
  if (mlir::failed(bindAxes(info.axisSizes, op)))
    return mlir::failure();
  Indexed in = elementary(loc, input, info.inputGroups);
  std::vector<std::string> outAxes = flatten(info.outputGroups);
  Type element = resultShape.type.getElementType();
  std::vector<std::string> inAxes; // without the broadcast 1s
  for (auto &a : in.axes)
    if (!a.empty())
      inAxes.push_back(a);
  if (use == PatternUse::Rearrange && inAxes == outAxes)
    return regroupAxes(loc, in.value, in.axes, info.outputGroups,
                       resultShape.sizes); // a view where strides allow

  std::vector<std::string> loops = outAxes;
  std::set<std::string> reductions;
  for (auto &a : inAxes)
    if (std::find(loops.begin(), loops.end(), a) == loops.end()) {
      loops.push_back(a);
      reductions.insert(a);
    }
  Value result;
  if (use != PatternUse::Reduce) {
    Value init = emptyTensor(loc, sizesOf(outAxes), element);
    result = generic(loc, loops, {in}, outAxes, init, {},
                     [](OpBuilder &, Location, mlir::ValueRange args) {
                       return args[0];
                     });
  } else {
    // max and min have no identity: over an empty axis there is no answer
    // (the checker refuses such programs; IR given to ein-opt may not be).
    if (kind == ReduceKind::Max || kind == ReduceKind::Min)
      for (auto &a : reductions)
        if (isZero(axisSize.at(a)))
          return op->emitOpError()
                 << reduceKindName(kind) << " over the empty axis '" << a
                 << "' has no identity";
    Type acc = isLowPrecisionFloat(element) ? Type(b.getF32Type()) : element;
    Value init = filled(loc, sizesOf(outAxes), acc, identity(kind, acc));
    result = generic(loc, loops, {in}, outAxes, init, reductions,
                     [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
                       OpBuilder::InsertionGuard g(b);
                       b.setInsertionPoint(nb.getInsertionBlock(),
                                           nb.getInsertionPoint());
                       return combine(nb, nl, kind, args[1],
                                      cast(nl, args[0], acc));
                     });
    if (kind == ReduceKind::Mean) {
      OpFoldResult count = b.getIndexAttr(1);
      for (auto &a : reductions)
        count = mul(loc, count, axisSize.at(a));
      // The count as a number of the accumulator type, computed once
      // outside the loops (a constant when static).
      Value n;
      if (auto c = mlir::getConstantIntValue(count)) {
        n = llvm::isa<mlir::FloatType>(acc)
                ? b.create<mlir::arith::ConstantOp>(
                       loc, b.getFloatAttr(acc, static_cast<double>(*c)))
                      .getResult()
                : b.create<mlir::arith::ConstantOp>(
                       loc, b.getIntegerAttr(acc, *c))
                      .getResult();
      } else {
        Value i64 = b.create<mlir::arith::IndexCastUIOp>(
            loc, b.getI64Type(), asValue(loc, count));
        n = llvm::isa<mlir::FloatType>(acc)
                ? b.create<mlir::arith::UIToFPOp>(loc, acc, i64).getResult()
                : Value(cast(loc, i64, acc));
      }
      result = mapElements(loc, result, acc, [&](OpBuilder &nb, Location nl, Value x) {
        if (llvm::isa<mlir::FloatType>(acc))
          return Value(nb.create<mlir::arith::DivFOp>(nl, x, n));
        return Value(nb.create<mlir::arith::DivSIOp>(nl, x, n));
      });
    }
    result = castTensor(loc, result, element);
  }
  return regroupAxes(loc, result, outAxes, info.outputGroups,
                     resultShape.sizes);
}

mlir::FailureOr<Value>
FunctionLowering::lowerEinsum(EinsumOp op, llvm::ArrayRef<Value> inputs,
                              const ResultShape &resultShape,
                              const EinsumInfo &info) {
  Location loc = op.getLoc();
  if (mlir::failed(bindAxes(info.axisSizes, op)))
    return mlir::failure();
  Type element = resultShape.type.getElementType();
  Type acc = op.getAcc() ? *op.getAcc()
             : isLowPrecisionFloat(element) ? Type(b.getF32Type())
                                            : element;
  std::vector<Indexed> live;
  for (size_t i = 0; i < inputs.size(); ++i)
    live.push_back(elementary(loc, inputs[i], info.operandGroups[i]));
  std::vector<std::string> outAxes = flatten(info.outputGroups);

  // One contraction of `operands` producing `resultAxes`.
  auto contract = [&](const std::vector<Indexed> &operands,
                      const std::vector<std::string> &resultAxes) {
    std::vector<std::string> loops = resultAxes;
    std::set<std::string> reductions;
    for (auto &o : operands)
      for (auto &a : o.axes)
        if (!a.empty() &&
            std::find(loops.begin(), loops.end(), a) == loops.end()) {
          loops.push_back(a);
          reductions.insert(a);
        }
    Value init = filled(loc, sizesOf(resultAxes), acc,
                        identity(ReduceKind::Sum, acc));
    bool isF = llvm::isa<mlir::FloatType>(acc);
    Value v = generic(loc, loops, operands, resultAxes, init, reductions,
                      [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
                        OpBuilder::InsertionGuard g(b);
                        b.setInsertionPoint(nb.getInsertionBlock(),
                                            nb.getInsertionPoint());
                        Value product = cast(nl, args[0], acc);
                        for (size_t k = 1; k + 1 < args.size(); ++k) {
                          Value x = cast(nl, args[k], acc);
                          product = isF ? Value(nb.create<mlir::arith::MulFOp>(nl, product, x, reductionMath()))
                                        : Value(nb.create<mlir::arith::MulIOp>(nl, product, x));
                        }
                        Value sum = args.back();
                        return isF ? Value(nb.create<mlir::arith::AddFOp>(nl, sum, product, reductionMath()))
                                   : Value(nb.create<mlir::arith::AddIOp>(nl, sum, product));
                      });
    return Indexed{v, resultAxes};
  };

  // An empty operand leaves every sum empty: the result is all zeros (or is
  // itself empty). Pairwise contraction could otherwise build a large
  // intermediate from empty operands ("i j, j k, k l" with j = l = 0 and a
  // large k makes i x k zeros).
  for (auto &operand : live)
    for (auto &a : operand.axes)
      if (!a.empty() && isZero(axisSize.at(a))) {
        Value zeros = filled(loc, sizesOf(outAxes), acc,
                             identity(ReduceKind::Sum, acc));
        return regroupAxes(loc, castTensor(loc, zeros, element), outAxes,
                           info.outputGroups, resultShape.sizes);
      }
  if (live.size() <= 2) {
    Value v = contract(live, outAxes).value;
    v = castTensor(loc, v, element);
    return regroupAxes(loc, v, outAxes, info.outputGroups, resultShape.sizes);
  }
  // Pairwise along the cost model's order; intermediates keep the axes that
  // the output or a later operand still needs.
  for (auto [i, j] : contractionPath(info, env)) {
    std::set<std::string> needed(outAxes.begin(), outAxes.end());
    for (size_t k = 0; k < live.size(); ++k)
      if (k != i && k != j)
        needed.insert(live[k].axes.begin(), live[k].axes.end());
    std::vector<std::string> keep;
    for (auto *side : {&live[i], &live[j]})
      for (auto &a : side->axes)
        if (!a.empty() && needed.count(a) &&
            std::find(keep.begin(), keep.end(), a) == keep.end())
          keep.push_back(a);
    bool last = live.size() == 2;
    Indexed step = contract({live[i], live[j]}, last ? outAxes : keep);
    live = afterContracting(live, i, j, step);
  }
  Value v = castTensor(loc, live[0].value, element);
  return regroupAxes(loc, v, live[0].axes, info.outputGroups,
                     resultShape.sizes);
}

mlir::FailureOr<Value>
FunctionLowering::lowerElementwise(mlir::Operation *op,
                                   llvm::ArrayRef<Value> inputs,
                                   const ResultShape &resultShape) {
  Location loc = op->getLoc();
  if (!llvm::isa<AddOp, SubOp, MulOp, DivOp, PowOp, ExpOp, LogOp, SqrtOp,
                 RsqrtOp, TanhOp, NegOp, ReluOp, CastOp>(op))
    return op->emitOpError("has no lowering to linalg");
  Type element = resultShape.type.getElementType();
  std::vector<std::string> outAxes;
  for (int64_t i = 0; i < resultShape.type.getRank(); ++i)
    outAxes.push_back("d" + std::to_string(i));
  std::vector<Indexed> operands;
  if (inputs.size() == 2) {
    InferContext ctx = getInferContext(op);
    BroadcastAlignment align;
    auto lt = llvm::cast<EinTensorType>(op->getOperand(0).getType());
    auto rt = llvm::cast<EinTensorType>(op->getOperand(1).getType());
    auto shape = inferBroadcast(ctx, lt.getShape(), rt.getShape(), &align);
    if (!shape) {
      op->emitError() << shape.error().message;
      return mlir::failure();
    }
    for (auto [value, where] :
         {std::pair{inputs[0], &align.lhs}, std::pair{inputs[1], &align.rhs}}) {
      auto type = llvm::cast<RankedTensorType>(value.getType());
      Indexed in{value, {}};
      for (size_t d = 0; d < where->size(); ++d) {
        int at = (*where)[d];
        // A dim of size 1 is read at index 0: it broadcasts.
        in.axes.push_back(at < 0 || type.getDimSize(d) == 1 ? ""
                                                            : outAxes[at]);
      }
      operands.push_back(in);
    }
  } else {
    operands.push_back({inputs[0], outAxes});
  }
  Value init = emptyTensor(loc, resultShape.sizes, element);
  bool isF = llvm::isa<mlir::FloatType>(
      llvm::cast<RankedTensorType>(inputs[0].getType()).getElementType());
  auto body = [&](OpBuilder &nb, Location nl, mlir::ValueRange args) -> Value {
    Value x = args[0];
    Value y = args.size() > 2 ? args[1] : Value();
    return llvm::TypeSwitch<mlir::Operation *, Value>(op)
        .Case<AddOp>([&](auto) {
          return isF ? Value(nb.create<mlir::arith::AddFOp>(nl, x, y))
                     : Value(nb.create<mlir::arith::AddIOp>(nl, x, y));
        })
        .Case<SubOp>([&](auto) {
          return isF ? Value(nb.create<mlir::arith::SubFOp>(nl, x, y))
                     : Value(nb.create<mlir::arith::SubIOp>(nl, x, y));
        })
        .Case<MulOp>([&](auto) {
          return isF ? Value(nb.create<mlir::arith::MulFOp>(nl, x, y))
                     : Value(nb.create<mlir::arith::MulIOp>(nl, x, y));
        })
        .Case<DivOp>([&](auto) {
          return isF ? Value(nb.create<mlir::arith::DivFOp>(nl, x, y))
                     : nonTrappingDivSI(nb, nl, x, y);
        })
        .Case<PowOp>([&](auto) {
          return isF ? Value(nb.create<mlir::math::PowFOp>(nl, x, y))
                     : nonTrappingIPowI(nb, nl, x, y);
        })
        .Case<ExpOp>(
            [&](auto) { return Value(nb.create<mlir::math::ExpOp>(nl, x)); })
        .Case<LogOp>(
            [&](auto) { return Value(nb.create<mlir::math::LogOp>(nl, x)); })
        .Case<SqrtOp>(
            [&](auto) { return Value(nb.create<mlir::math::SqrtOp>(nl, x)); })
        .Case<RsqrtOp>(
            [&](auto) { return Value(nb.create<mlir::math::RsqrtOp>(nl, x)); })
        .Case<TanhOp>(
            [&](auto) { return Value(nb.create<mlir::math::TanhOp>(nl, x)); })
        .Case<NegOp>([&](auto) {
          if (isF)
            return Value(nb.create<mlir::arith::NegFOp>(nl, x));
          Value zero = nb.create<mlir::arith::ConstantOp>(nl, nb.getIntegerAttr(x.getType(), 0));
          return Value(nb.create<mlir::arith::SubIOp>(nl, zero, x));
        })
        .Case<ReluOp>([&](auto) {
          if (isF) {
            Value zero = nb.create<mlir::arith::ConstantOp>(nl, nb.getFloatAttr(x.getType(), 0.0));
            return Value(nb.create<mlir::arith::MaximumFOp>(nl, x, zero));
          }
          Value zero = nb.create<mlir::arith::ConstantOp>(nl, nb.getIntegerAttr(x.getType(), 0));
          return Value(nb.create<mlir::arith::MaxSIOp>(nl, x, zero));
        })
        .Case<CastOp>([&](auto) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          return cast(nl, x, element);
        })
        .Default([&](auto) { return Value(); }); // refused above
  };
  // Low-precision floats compute in f32 and round once.
  bool widen = isF && isLowPrecisionFloat(element) && !llvm::isa<CastOp>(op);
  if (!widen)
    return generic(loc, outAxes, operands, outAxes, init, {}, body);
  return generic(loc, outAxes, operands, outAxes, init, {},
                 [&](OpBuilder &nb, Location nl, mlir::ValueRange args) {
                   OpBuilder::InsertionGuard g(b);
                   b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
                   llvm::SmallVector<Value> wide;
                   for (Value a : args)
                     wide.push_back(cast(nl, a, b.getF32Type()));
                   Value r = body(nb, nl, wide);
                   return cast(nl, r, element);
                 });
}

mlir::LogicalResult FunctionLowering::lower(mlir::Operation *op,
                                            mlir::IRMapping &map) {
  Location loc = op->getLoc();
  llvm::SmallVector<Value> inputs;
  for (Value v : op->getOperands())
    inputs.push_back(map.lookup(v));
  llvm::SmallVector<ResultShape> results;
  for (Value r : op->getResults()) {
    auto t = tensorType(r.getType(), op);
    if (mlir::failed(t))
      return mlir::failure();
    auto sizes = typeSizes(loc, r.getType(), op);
    if (mlir::failed(sizes))
      return mlir::failure();
    results.push_back({*t, *sizes});
  }
  mlir::FailureOr<Value> result = mlir::failure();
  if (llvm::isa<RearrangeOp, RepeatOp, ReduceOp>(op)) {
    PatternUse use = llvm::isa<RearrangeOp>(op) ? PatternUse::Rearrange
                     : llvm::isa<RepeatOp>(op)  ? PatternUse::Repeat
                                                : PatternUse::Reduce;
    ReduceKind kind = ReduceKind::Sum;
    if (auto r = llvm::dyn_cast<ReduceOp>(op))
      kind = toReduceKind(r.getKind());
    if (auto info = getTransformInfo(op))
      result = lowerTransform(op, inputs[0], results[0], *info, use, kind);
  } else if (auto e = llvm::dyn_cast<EinsumOp>(op)) {
    if (auto info = getEinsumInfo(e))
      result = lowerEinsum(e, inputs, results[0], *info);
  } else if (auto c = llvm::dyn_cast<ConstantOp>(op)) {
    auto value = llvm::cast<mlir::TypedAttr>(c.getValue());
    result = Value(b.create<mlir::arith::ConstantOp>(
        loc, mlir::DenseElementsAttr::get(results[0].type, value)));
  } else if (auto p = llvm::dyn_cast<PackOp>(op)) {
    auto pattern = p.getPattern().getPattern(PatternUse::Pack);
    if (pattern) {
      // Each input, its packed dims merged into one, goes into a slice of
      // the result along that dim.
      size_t before = pattern->inputs[0].starIndex();
      const ResultShape &r = results[0];
      Value out = emptyTensor(loc, r.sizes, r.type.getElementType());
      OpFoldResult offset = b.getIndexAttr(0);
      size_t after = r.type.getRank() - before - 1;
      for (Value in : inputs) {
        auto t = llvm::cast<RankedTensorType>(in.getType());
        auto inSizes = mlir::tensor::getMixedSizes(b, loc, in);
        llvm::SmallVector<OpFoldResult> shape(inSizes.begin(),
                                              inSizes.begin() + before);
        OpFoldResult star = b.getIndexAttr(1);
        for (int64_t d = before; d < t.getRank() - static_cast<int64_t>(after);
             ++d)
          star = mul(loc, star, inSizes[d]);
        shape.push_back(star);
        shape.append(inSizes.end() - after, inSizes.end());
        std::vector<std::vector<int64_t>> targets;
        for (size_t d = 0; d < before; ++d)
          targets.push_back({static_cast<int64_t>(d)});
        targets.emplace_back();
        for (int64_t d = before; d < t.getRank() - static_cast<int64_t>(after);
             ++d)
          targets.back().push_back(d);
        for (int64_t d = t.getRank() - after; d < t.getRank(); ++d)
          targets.push_back({d});
        Value part = regroup(loc, in, targets, shape);
        llvm::SmallVector<OpFoldResult> offsets(shape.size(),
                                                b.getIndexAttr(0));
        offsets[before] = offset;
        llvm::SmallVector<OpFoldResult> strides(shape.size(),
                                                b.getIndexAttr(1));
        out = b.create<mlir::tensor::InsertSliceOp>(loc, part, out, offsets,
                                                    shape, strides);
        offset = add(loc, offset, star);
      }
      result = out;
    }
  } else if (auto u = llvm::dyn_cast<UnpackOp>(op)) {
    auto pattern = u.getPattern().getPattern(PatternUse::Pack);
    if (!pattern)
      return op->emitError("cannot lower: bad pattern");
    size_t before = pattern->inputs[0].starIndex();
    auto t = llvm::cast<RankedTensorType>(inputs[0].getType());
    auto inSizes = mlir::tensor::getMixedSizes(b, loc, inputs[0]);
    size_t after = t.getRank() - before - 1;
    OpFoldResult offset = b.getIndexAttr(0);
    for (size_t k = 0; k < results.size(); ++k) {
      const ResultShape &r = results[k];
      OpFoldResult star = b.getIndexAttr(1);
      for (int64_t d = before; d < r.type.getRank() - static_cast<int64_t>(after);
           ++d)
        star = mul(loc, star, r.sizes[d]);
      llvm::SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0));
      offsets[before] = offset;
      llvm::SmallVector<OpFoldResult> sizes(inSizes),
          strides(t.getRank(), b.getIndexAttr(1));
      sizes[before] = star;
      Value slice = b.create<mlir::tensor::ExtractSliceOp>(
          loc, typeOf(sizes, t.getElementType()), inputs[0], offsets, sizes,
          strides);
      // The packed dim splits back into the part's dims (none: dropped).
      int64_t parts = r.type.getRank() - static_cast<int64_t>(before + after);
      Value value;
      if (parts == 0) {
        std::vector<std::vector<int64_t>> targets;
        for (int64_t d = 0; d < t.getRank(); ++d)
          if (d != static_cast<int64_t>(before))
            targets.push_back({d});
        value = regroup(loc, slice, targets, r.sizes);
      } else {
        llvm::SmallVector<mlir::ReassociationIndices> split;
        int64_t next = 0;
        for (int64_t d = 0; d < t.getRank(); ++d) {
          int64_t width = d == static_cast<int64_t>(before) ? parts : 1;
          split.emplace_back();
          for (int64_t i = 0; i < width; ++i)
            split.back().push_back(next++);
        }
        if (parts == 1)
          value = slice.getType() == r.type
                      ? slice
                      : b.create<mlir::tensor::CastOp>(loc, r.type, slice)
                            .getResult();
        else
          value = expandDims(loc, slice, split, r.sizes);
      }
      map.map(op->getResult(k), value);
      offset = add(loc, offset, star);
    }
    return mlir::success();
  } else {
    result = lowerElementwise(op, inputs, results[0]);
  }
  if (mlir::failed(result))
    return op->emitError("cannot lower this op to linalg");
  map.map(op->getResult(0), *result);
  return mlir::success();
}

struct EinToLinalgPass : impl::EinToLinalgBase<EinToLinalgPass> {
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    Bindings env = getModuleDims(module);
    OpBuilder b(&getContext());
    llvm::SmallVector<mlir::func::FuncOp> functions;
    for (auto fn : module.getOps<mlir::func::FuncOp>())
      functions.push_back(fn);
    for (auto fn : functions) {
      if (fn.isExternal())
        continue;
      // Only functions over ein tensors are lowered; one without any (already
      // lowered, or never ein) is left alone, and one that mixes them with
      // other types is an error (not a crash).
      auto types = llvm::concat<const Type>(fn.getArgumentTypes(),
                                            fn.getResultTypes());
      bool anyEin = llvm::any_of(
          types, [](Type t) { return llvm::isa<EinTensorType>(t); });
      bool hasEinOps = false;
      fn.walk([&](mlir::Operation *op) {
        hasEinOps |= llvm::isa_and_nonnull<EinDialect>(op->getDialect());
      });
      if (!anyEin && !hasEinOps)
        continue;
      for (Type t : types)
        if (!llvm::isa<EinTensorType>(t)) {
          fn.emitError() << "ein-to-linalg lowers functions over !ein.tensor "
                            "values only; got a parameter or result of type "
                         << t;
          return signalPassFailure();
        }
      FunctionLowering lowering(b, env);
      llvm::SmallVector<Type> params, results;
      for (Type t : fn.getArgumentTypes()) {
        auto rt = lowering.tensorType(t, fn);
        if (mlir::failed(rt))
          return signalPassFailure();
        params.push_back(*rt);
      }
      for (Type t : fn.getResultTypes()) {
        auto rt = lowering.tensorType(t, fn);
        if (mlir::failed(rt))
          return signalPassFailure();
        results.push_back(*rt);
      }
      b.setInsertionPoint(fn);
      auto lowered = b.create<mlir::func::FuncOp>(
          fn.getLoc(), fn.getName(), b.getFunctionType(params, results));
      for (auto attr : fn->getDiscardableAttrs())
        lowered->setAttr(attr.getName(), attr.getValue());
      mlir::Block *entry = lowered.addEntryBlock();
      b.setInsertionPointToStart(entry);
      if (mlir::failed(lowering.readSizes(fn, entry->getArguments())))
        return signalPassFailure();
      mlir::IRMapping map;
      for (auto [from, to] : llvm::zip(fn.getArguments(), entry->getArguments()))
        map.map(from, to);
      for (mlir::Operation &op : fn.getBody().front()) {
        if (auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(op)) {
          llvm::SmallVector<Value> values;
          for (Value v : ret.getOperands())
            values.push_back(map.lookup(v));
          b.create<mlir::func::ReturnOp>(ret.getLoc(), values);
          continue;
        }
        if (mlir::failed(lowering.lower(&op, map)))
          return signalPassFailure();
      }
      lowered.setVisibility(fn.getVisibility());
      fn.erase();
    }
    module->removeAttr("ein.dims");
  }
};

} // namespace
} // namespace ein
