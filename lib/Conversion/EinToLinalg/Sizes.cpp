// ein-to-linalg's sizes: tensor types, entry size reads, index arithmetic.
#include "Patterns.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace ein::lowering {

bool isLowPrecisionFloat(Type t) {
  return llvm::isa<mlir::FloatType>(t) && t.getIntOrFloatBitWidth() < 32;
}

namespace {

/// The static size of `e` with `env`, kDynamic when it has free names;
/// fails (reporting on `at` when given) beyond kMaxDimSize.
mlir::FailureOr<int64_t> staticSizeOf(const SizeExpr &e, const Bindings &env,
                                      mlir::Operation *at) {
  if (e.tooComplex() || e.overflowed()) {
    if (at)
      at->emitError() << "size " << e.str() << " is out of range";
    return mlir::failure();
  }
  auto v = e.evaluate(env);
  if (!v)
    return mlir::ShapedType::kDynamic;
  if (*v < 0 || *v > kMaxDimSize) {
    if (at)
      at->emitError() << "size " << toString(*v) << " is out of range";
    return mlir::failure();
  }
  return static_cast<int64_t>(*v);
}

/// num / den rounded down (sizes are non-negative), 0 when den is 0.
Value safeFloorDiv(OpBuilder &b, Location loc, Value num, Value den) {
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  Value byZero = b.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::eq, den, zero);
  Value divisor = b.create<mlir::arith::SelectOp>(loc, byZero, one, den);
  Value q = b.create<mlir::arith::DivUIOp>(loc, num, divisor);
  return b.create<mlir::arith::SelectOp>(loc, byZero, zero, q);
}

} // namespace

mlir::FailureOr<RankedTensorType>
convertTensorType(EinTensorType t, const Bindings &env, mlir::Operation *at) {
  llvm::SmallVector<int64_t> dims;
  for (auto &d : t.getShape()) {
    if (d.isPack()) {
      if (at)
        at->emitError() << "lowering needs the rank of variadic " << d.str()
                        << " (give it with --rank)";
      return mlir::failure();
    }
    auto n = staticSizeOf(d.size, env, at);
    if (mlir::failed(n))
      return mlir::failure();
    dims.push_back(*n);
  }
  // A bool is stored as one byte, 0 or 1, as numpy stores it (a vector of
  // i1 would be bit-packed in memory).
  Type element = t.getElementType();
  if (element.isInteger(1))
    element = mlir::IntegerType::get(t.getContext(), 8);
  return RankedTensorType::get(dims, element);
}

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return b.create<mlir::arith::ConstantIndexOp>(loc, v);
}

Value clampedIndex(OpBuilder &b, Location loc, Value id, Value last,
                   Value zero) {
  Value index = b.create<mlir::arith::IndexCastOp>(loc, b.getIndexType(), id);
  return b.create<mlir::arith::MaxSIOp>(
      loc, b.create<mlir::arith::MinSIOp>(loc, index, last), zero);
}

Value asIndexValue(OpBuilder &b, Location loc, OpFoldResult v) {
  if (auto attr = llvm::dyn_cast_if_present<mlir::Attribute>(v))
    return indexConstant(b, loc, llvm::cast<mlir::IntegerAttr>(attr).getInt());
  return llvm::cast<Value>(v);
}

bool isStaticSize(OpFoldResult v, int64_t n) {
  auto c = mlir::getConstantIntValue(v);
  return c && *c == n;
}

OpFoldResult mulSizes(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y) {
  auto cx = mlir::getConstantIntValue(x), cy = mlir::getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx * *cy);
  if (cx && *cx == 1)
    return y;
  if (cy && *cy == 1)
    return x;
  return b
      .create<mlir::arith::MulIOp>(loc, asIndexValue(b, loc, x),
                                   asIndexValue(b, loc, y))
      .getResult();
}

OpFoldResult addSizes(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y) {
  auto cx = mlir::getConstantIntValue(x), cy = mlir::getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx + *cy);
  if (cx && *cx == 0)
    return y;
  if (cy && *cy == 0)
    return x;
  return b
      .create<mlir::arith::AddIOp>(loc, asIndexValue(b, loc, x),
                                   asIndexValue(b, loc, y))
      .getResult();
}

mlir::FailureOr<int64_t> FunctionSizes::staticSize(const SizeExpr &e,
                                                   mlir::Operation *at) {
  return staticSizeOf(e, env, at);
}

mlir::FailureOr<RankedTensorType>
FunctionSizes::tensorType(Type einType, mlir::Operation *at) {
  return convertTensorType(llvm::cast<EinTensorType>(einType), env, at);
}

mlir::LogicalResult FunctionSizes::planReads(mlir::func::FuncOp fn,
                                             llvm::ArrayRef<Type> einParams) {
  std::vector<Shape> shapes;
  for (Type t : einParams)
    shapes.push_back(llvm::cast<EinTensorType>(t).getShape());
  SizeReadPlan plan = planSizeReads(shapes, env);
  if (!plan.unreadable.empty()) {
    auto &[name, where] = plan.unreadable.front();
    return fn.emitError() << "size-generic code cannot read '" << name
                          << "' from the arguments' sizes (it appears only in "
                          << where << "); bind it with --dim";
  }
  reads = std::move(plan.reads);
  return mlir::success();
}

mlir::LogicalResult FunctionSizes::readSizes(OpBuilder &b,
                                             mlir::func::FuncOp fn,
                                             llvm::ArrayRef<Type> einParams,
                                             mlir::ValueRange arguments) {
  Location loc = fn.getLoc();
  for (auto &read : reads) {
    Value size =
        b.create<mlir::tensor::DimOp>(loc, arguments[read.param], read.dim);
    auto offset = materialize(b, loc, read.offset, fn);
    if (mlir::failed(offset))
      return mlir::failure();
    if (!isStaticSize(*offset, 0))
      size = b.create<mlir::arith::SubIOp>(loc, size,
                                           asIndexValue(b, loc, *offset));
    if (read.scale != 1)
      size = b.create<mlir::arith::DivSIOp>(
          loc, size, indexConstant(b, loc, static_cast<int64_t>(read.scale)));
    symbols[read.symbol] = size;
  }
  for (auto [arg, type] : llvm::zip(arguments, einParams)) {
    auto argSizes = typeSizes(b, loc, type, fn);
    if (mlir::failed(argSizes))
      return mlir::failure();
    known[arg] = *argSizes;
  }
  return mlir::success();
}

mlir::FailureOr<OpFoldResult> FunctionSizes::materialize(OpBuilder &b,
                                                         Location loc,
                                                         const SizeExpr &e,
                                                         mlir::Operation *at) {
  auto n = staticSize(e, at);
  if (mlir::failed(n))
    return mlir::failure();
  if (*n != mlir::ShapedType::kDynamic)
    return OpFoldResult(b.getIndexAttr(*n));
  // One value per expression: equal sizes are the same value, so reshapes
  // between equal shapes are recognised and skipped. (The ops of a function
  // are lowered in order into its one block, so an earlier value dominates.)
  std::string key = e.str();
  if (auto it = materialized.find(key); it != materialized.end())
    return OpFoldResult(it->second);
  auto value = materializeTerms(b, loc, e, at);
  if (mlir::failed(value))
    return mlir::failure();
  materialized[key] = *value;
  return OpFoldResult(*value);
}

/// Quotients are floor divisions whose divisor is never 0 here (entry
/// checks hold; a 0 divisor gives 0, not a trap).
mlir::FailureOr<Value> FunctionSizes::materializeTerms(OpBuilder &b,
                                                       Location loc,
                                                       const SizeExpr &e,
                                                       mlir::Operation *at) {
  SizeExpr bound = e.substitute(env);
  Value sum;
  for (auto &term : bound.termList()) {
    if (term.coefficient > Int(INT64_MAX) ||
        term.coefficient < -Int(INT64_MAX)) {
      at->emitError() << "size " << e.str() << " is out of range";
      return mlir::failure();
    }
    Value product;
    for (auto &f : term.factors) {
      Value factor;
      if (f.num) {
        auto num = materialize(b, loc, *f.num, at);
        auto den = materialize(b, loc, *f.den, at);
        if (mlir::failed(num) || mlir::failed(den))
          return mlir::failure();
        factor = safeFloorDiv(b, loc, asIndexValue(b, loc, *num),
                              asIndexValue(b, loc, *den));
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
      value = indexConstant(b, loc, c);
    else if (c == 1)
      value = product;
    else
      value =
          b.create<mlir::arith::MulIOp>(loc, product, indexConstant(b, loc, c));
    sum = sum ? b.create<mlir::arith::AddIOp>(loc, sum, value).getResult()
              : value;
  }
  if (!sum)
    return indexConstant(b, loc, 0);
  return sum;
}

mlir::FailureOr<llvm::SmallVector<OpFoldResult>>
FunctionSizes::typeSizes(OpBuilder &b, Location loc, Type einType,
                         mlir::Operation *at) {
  llvm::SmallVector<OpFoldResult> out;
  for (auto &d : llvm::cast<EinTensorType>(einType).getShape()) {
    if (d.isPack()) {
      at->emitError() << "lowering needs the rank of variadic " << d.str();
      return mlir::failure();
    }
    auto s = materialize(b, loc, d.size, at);
    if (mlir::failed(s))
      return mlir::failure();
    out.push_back(*s);
  }
  return out;
}

const llvm::SmallVector<OpFoldResult> *
FunctionSizes::knownSizes(Value v) const {
  auto it = known.find(v);
  return it == known.end() ? nullptr : &it->second;
}

void FunctionSizes::setKnownSizes(Value v, llvm::ArrayRef<OpFoldResult> s) {
  known[v] = llvm::SmallVector<OpFoldResult>(s);
}

FunctionSizes &LoweringState::sizesOf(mlir::Operation *op) {
  auto fn = llvm::isa<mlir::func::FuncOp>(op)
                ? op
                : op->getParentOfType<mlir::func::FuncOp>().getOperation();
  auto &sizes = functions[fn];
  if (!sizes)
    sizes = std::make_unique<FunctionSizes>(env);
  return *sizes;
}

} // namespace ein::lowering
