// The ein-to-linalg pass: every ein op becomes linalg on static tensors.
#include "ein/Conversion/Passes.h"
#include "ein/Analysis/Cost.h"
#include "ein/Dialect/EinDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <set>

namespace ein {

#define GEN_PASS_DEF_EINTOLINALG
#include "ein/Conversion/Passes.h.inc"

namespace {

using mlir::Location;
using mlir::OpBuilder;
using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

/// An operand of a generic: a value and the elementary axis of each dim.
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
class FunctionLowering {
public:
  FunctionLowering(OpBuilder &b, const Bindings &env) : b(b), env(env) {}

  mlir::FailureOr<int64_t> sizeOf(const SizeExpr &e, mlir::Operation *at) {
    auto v = e.evaluate(env);
    if (!v) {
      std::string free;
      for (auto &s : e.substitute(env).symbols())
        free += (free.empty() ? "'" : ", '") + s + "'";
      at->emitError() << "lowering needs every dim bound to a number: "
                      << free << " is free (bind it with --dim)";
      return mlir::failure();
    }
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
        at->emitError() << "lowering needs the rank of variadic " << d.str();
        return mlir::failure();
      }
      auto n = sizeOf(d.size, at);
      if (mlir::failed(n))
        return mlir::failure();
      dims.push_back(*n);
    }
    return RankedTensorType::get(dims, t.getElementType());
  }

  mlir::LogicalResult lower(mlir::Operation *op, mlir::IRMapping &map);

private:
  OpBuilder &b;
  const Bindings &env;
  std::map<std::string, int64_t> axisSize;

  mlir::LogicalResult bindAxes(const std::map<std::string, SizeExpr> &sizes,
                               mlir::Operation *at) {
    axisSize.clear();
    for (auto &[name, e] : sizes) {
      auto n = sizeOf(e, at);
      if (mlir::failed(n))
        return mlir::failure();
      axisSize[name] = *n;
    }
    return mlir::success();
  }

  /// Elementary axes of a group list, with size-1 axes dropped.
  std::vector<std::string>
  flatten(const std::vector<std::vector<std::string>> &groups) {
    std::vector<std::string> out;
    for (auto &g : groups)
      for (auto &a : g)
        if (axisSize.at(a) != 1)
          out.push_back(a);
    return out;
  }

  llvm::SmallVector<int64_t> sizesOf(const std::vector<std::string> &axes) {
    llvm::SmallVector<int64_t> out;
    for (auto &a : axes)
      out.push_back(axisSize.at(a));
    return out;
  }

  /// Reshapes `v` (contiguous, static) to `shape`: a view after bufferization.
  Value reshape(Location loc, Value v, llvm::ArrayRef<int64_t> shape) {
    auto type = llvm::cast<RankedTensorType>(v.getType());
    if (type.getShape() == shape)
      return v;
    auto target = RankedTensorType::get(shape, type.getElementType());
    if (type.getRank() == 0)
      return b.create<mlir::tensor::ExpandShapeOp>(
          loc, target, v, llvm::ArrayRef<mlir::ReassociationIndices>{});
    if (shape.empty())
      return b.create<mlir::tensor::CollapseShapeOp>(
          loc, target, v, llvm::ArrayRef<mlir::ReassociationIndices>{});
    Value flat = v;
    if (type.getRank() > 1) {
      mlir::ReassociationIndices all;
      for (int64_t i = 0; i < type.getRank(); ++i)
        all.push_back(i);
      flat = b.create<mlir::tensor::CollapseShapeOp>(
          loc, RankedTensorType::get({type.getNumElements()}, type.getElementType()),
          v, llvm::ArrayRef<mlir::ReassociationIndices>{all});
    }
    if (shape.size() == 1)
      return flat;
    mlir::ReassociationIndices all;
    for (size_t i = 0; i < shape.size(); ++i)
      all.push_back(static_cast<int64_t>(i));
    return b.create<mlir::tensor::ExpandShapeOp>(
        loc, target, flat, llvm::ArrayRef<mlir::ReassociationIndices>{all});
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
      return b.create<mlir::arith::FPToSIOp>(loc, to, v);
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
      if (!in.axes.empty())
        score[in.axes.back()] += 2;
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
        exprs.push_back(b.getAffineDimExpr(loopIndex.at(a)));
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
    return op.getResult(0);
  }

  Value emptyTensor(Location loc, llvm::ArrayRef<int64_t> shape, Type element) {
    return b.create<mlir::tensor::EmptyOp>(loc, shape, element);
  }

  Value filled(Location loc, llvm::ArrayRef<int64_t> shape, Type element,
               mlir::TypedAttr value) {
    Value init = emptyTensor(loc, shape, element);
    Value scalar = b.create<mlir::arith::ConstantOp>(loc, value);
    return b.create<mlir::linalg::FillOp>(loc, scalar, init).getResult(0);
  }

  /// An operand reshaped to its elementary (non-unit) axes.
  Indexed elementary(Location loc, Value v,
                     const std::vector<std::vector<std::string>> &groups) {
    Indexed in;
    in.axes = flatten(groups);
    in.value = reshape(loc, v, sizesOf(in.axes));
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
    Value init = emptyTensor(loc, type.getShape(), to);
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

  mlir::FailureOr<Value> lowerTransform(mlir::Operation *op, Value input,
                                        RankedTensorType resultType,
                                        const TransformInfo &info,
                                        PatternUse use, ReduceKind kind);
  mlir::FailureOr<Value> lowerEinsum(EinsumOp op, llvm::ArrayRef<Value> inputs,
                                     RankedTensorType resultType,
                                     const EinsumInfo &info);
  mlir::FailureOr<Value> lowerElementwise(mlir::Operation *op,
                                          llvm::ArrayRef<Value> inputs,
                                          RankedTensorType resultType);
};

mlir::FailureOr<Value>
FunctionLowering::lowerTransform(mlir::Operation *op, Value input,
                                 RankedTensorType resultType,
                                 const TransformInfo &info, PatternUse use,
                                 ReduceKind kind) {
  Location loc = op->getLoc();
  if (mlir::failed(bindAxes(info.axisSizes, op)))
    return mlir::failure();
  Indexed in = elementary(loc, input, info.inputGroups);
  std::vector<std::string> outAxes = flatten(info.outputGroups);
  Type element = resultType.getElementType();
  if (use == PatternUse::Rearrange && in.axes == outAxes)
    return reshape(loc, in.value, resultType.getShape()); // a view

  std::vector<std::string> loops = outAxes;
  std::set<std::string> reductions;
  for (auto &a : in.axes)
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
        if (axisSize.at(a) == 0)
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
      int64_t count = 1;
      for (auto &a : reductions)
        count *= axisSize.at(a);
      result = mapElements(loc, result, acc, [&](OpBuilder &nb, Location nl, Value x) {
        if (llvm::isa<mlir::FloatType>(acc)) {
          Value n = nb.create<mlir::arith::ConstantOp>(
              nl, nb.getFloatAttr(acc, static_cast<double>(count)));
          return Value(nb.create<mlir::arith::DivFOp>(nl, x, n));
        }
        Value n = nb.create<mlir::arith::ConstantOp>(nl, nb.getIntegerAttr(acc, count));
        return Value(nb.create<mlir::arith::DivSIOp>(nl, x, n));
      });
    }
    result = castTensor(loc, result, element);
  }
  return reshape(loc, result, resultType.getShape());
}

mlir::FailureOr<Value>
FunctionLowering::lowerEinsum(EinsumOp op, llvm::ArrayRef<Value> inputs,
                              RankedTensorType resultType,
                              const EinsumInfo &info) {
  Location loc = op.getLoc();
  if (mlir::failed(bindAxes(info.axisSizes, op)))
    return mlir::failure();
  Type element = resultType.getElementType();
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
        if (std::find(loops.begin(), loops.end(), a) == loops.end()) {
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
      if (axisSize.at(a) == 0) {
        Value zeros = filled(loc, sizesOf(outAxes), acc,
                             identity(ReduceKind::Sum, acc));
        return reshape(loc, castTensor(loc, zeros, element),
                       resultType.getShape());
      }
  if (live.size() <= 2) {
    Value v = contract(live, outAxes).value;
    v = castTensor(loc, v, element);
    return reshape(loc, v, resultType.getShape());
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
        if (needed.count(a) && std::find(keep.begin(), keep.end(), a) == keep.end())
          keep.push_back(a);
    bool last = live.size() == 2;
    Indexed step = contract({live[i], live[j]}, last ? outAxes : keep);
    live = afterContracting(live, i, j, step);
  }
  Value v = castTensor(loc, live[0].value, element);
  return reshape(loc, v, resultType.getShape());
}

mlir::FailureOr<Value>
FunctionLowering::lowerElementwise(mlir::Operation *op,
                                   llvm::ArrayRef<Value> inputs,
                                   RankedTensorType resultType) {
  Location loc = op->getLoc();
  Type element = resultType.getElementType();
  std::vector<std::string> outAxes;
  for (int64_t i = 0; i < resultType.getRank(); ++i)
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
      Indexed in;
      llvm::SmallVector<int64_t> kept;
      for (size_t d = 0; d < where->size(); ++d) {
        int at = (*where)[d];
        if (at < 0 || type.getDimSize(d) == 1)
          continue; // a broadcast size-1 dim
        in.axes.push_back(outAxes[at]);
        kept.push_back(type.getDimSize(d));
      }
      in.value = reshape(loc, value, kept);
      operands.push_back(in);
    }
  } else {
    operands.push_back({inputs[0], outAxes});
  }
  Value init = emptyTensor(loc, resultType.getShape(), element);
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
        .Default([&](auto) { return x; });
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
  llvm::SmallVector<RankedTensorType> results;
  for (Value r : op->getResults()) {
    auto t = tensorType(r.getType(), op);
    if (mlir::failed(t))
      return mlir::failure();
    results.push_back(*t);
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
        loc, mlir::DenseElementsAttr::get(results[0], value)));
  } else if (auto p = llvm::dyn_cast<PackOp>(op)) {
    auto pattern = p.getPattern().getPattern(PatternUse::Pack);
    if (pattern) {
      size_t before = pattern->inputs[0].starIndex();
      Value out = emptyTensor(loc, results[0].getShape(), results[0].getElementType());
      int64_t offset = 0;
      for (Value in : inputs) {
        auto t = llvm::cast<RankedTensorType>(in.getType());
        size_t after = results[0].getRank() - before - 1;
        llvm::SmallVector<int64_t> shape(t.getShape().begin(), t.getShape().begin() + before);
        int64_t star = 1;
        for (int64_t d = before; d < t.getRank() - static_cast<int64_t>(after); ++d)
          star *= t.getDimSize(d);
        shape.push_back(star);
        shape.append(t.getShape().end() - after, t.getShape().end());
        Value part = reshape(loc, in, shape);
        llvm::SmallVector<mlir::OpFoldResult> offsets(shape.size(), b.getIndexAttr(0));
        offsets[before] = b.getIndexAttr(offset);
        llvm::SmallVector<mlir::OpFoldResult> sizes, strides(shape.size(), b.getIndexAttr(1));
        for (int64_t s : shape)
          sizes.push_back(b.getIndexAttr(s));
        out = b.create<mlir::tensor::InsertSliceOp>(loc, part, out, offsets, sizes, strides);
        offset += star;
      }
      result = out;
    }
  } else if (auto u = llvm::dyn_cast<UnpackOp>(op)) {
    auto pattern = u.getPattern().getPattern(PatternUse::Pack);
    if (!pattern)
      return op->emitError("cannot lower: bad pattern");
    size_t before = pattern->inputs[0].starIndex();
    auto t = llvm::cast<RankedTensorType>(inputs[0].getType());
    int64_t offset = 0;
    for (size_t k = 0; k < results.size(); ++k) {
      auto rt = results[k];
      size_t after = t.getRank() - before - 1;
      int64_t star = 1;
      for (int64_t d = before; d < rt.getRank() - static_cast<int64_t>(after); ++d)
        star *= rt.getDimSize(d);
      llvm::SmallVector<mlir::OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0));
      offsets[before] = b.getIndexAttr(offset);
      llvm::SmallVector<mlir::OpFoldResult> sizes, strides(t.getRank(), b.getIndexAttr(1));
      llvm::SmallVector<int64_t> sliceShape;
      for (int64_t d = 0; d < t.getRank(); ++d) {
        int64_t s = d == static_cast<int64_t>(before) ? star : t.getDimSize(d);
        sizes.push_back(b.getIndexAttr(s));
        sliceShape.push_back(s);
      }
      Value slice = b.create<mlir::tensor::ExtractSliceOp>(
          loc, RankedTensorType::get(sliceShape, t.getElementType()), inputs[0],
          offsets, sizes, strides);
      map.map(op->getResult(k), reshape(loc, slice, rt.getShape()));
      offset += star;
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
      // A C entry point (`_mlir_ciface_NAME`) taking memref descriptors.
      lowered->setAttr("llvm.emit_c_interface", b.getUnitAttr());
      // Inputs are read-only and never alias the outputs the caller passes
      // (einc run allocates them; the AOT header documents it): telling
      // LLVM lets it vectorize loops that read inputs and write results.
      for (unsigned i = 0; i < lowered.getNumArguments(); ++i)
        lowered.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
      fn.erase();
    }
    module->removeAttr("ein.dims");
  }
};

} // namespace
} // namespace ein
