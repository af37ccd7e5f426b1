//===- EinDialect.cpp - the ein dialect -----------------------------------===//
//
// Dialect registration, the `ein.dims` module attribute, and the helpers that
// connect the dialect to the front end's shape library.
//
//===----------------------------------------------------------------------===//

#include "ein/Dialect/EinDialect.h"
#include "ein/Syntax/Unicode.h"
#include "llvm/ADT/StringExtras.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

#include "ein/Dialect/EinDialect.cpp.inc"

void ein::EinDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "ein/Dialect/EinOps.cpp.inc"
      >();
}

LogicalResult
ein::EinDialect::verifyOperationAttribute(Operation *op,
                                          NamedAttribute attribute) {
  if (attribute.getName() != getDimsAttrName())
    return success(); // other `ein.*` annotations are free-form
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << getDimsAttrName()
                           << "' is only valid on a module";
  auto dims = dyn_cast<DictionaryAttr>(attribute.getValue());
  if (!dims)
    return op->emitError() << "'" << getDimsAttrName()
                           << "' must be a dictionary of integer sizes";
  for (NamedAttribute dim : dims) {
    // Dim names are identifiers (fresh names such as `_anon0` included).
    StringRef name = dim.getName().getValue();
    if (!ein::unicode::isIdentifier(name.str()))
      return op->emitError() << "'" << getDimsAttrName() << "': invalid name '"
                             << name << "': not an identifier";
    auto size = dyn_cast<IntegerAttr>(dim.getValue());
    // 0 is an empty axis; negative sizes are meaningless.
    if (!size || size.getValue().isNegative() ||
        size.getValue().getActiveBits() > 63)
      return op->emitError()
             << "'" << getDimsAttrName() << "': size of '" << name
             << "' must be a non-negative 64-bit integer"
             << (size ? ", got " + llvm::toString(size.getValue(), 10, true)
                      : std::string());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace ein {

std::optional<TransformInfo> getTransformInfo(Operation *op) {
  PatternAttr attr;
  DictionaryAttr sizes;
  PatternUse use;
  if (auto r = dyn_cast<RearrangeOp>(op))
    attr = r.getPattern(), sizes = r.getSizesAttr(), use = PatternUse::Rearrange;
  else if (auto r = dyn_cast<RepeatOp>(op))
    attr = r.getPattern(), sizes = r.getSizesAttr(), use = PatternUse::Repeat;
  else if (auto r = dyn_cast<ReduceOp>(op))
    attr = r.getPattern(), sizes = r.getSizesAttr(), use = PatternUse::Reduce;
  else
    return std::nullopt;
  auto pattern = attr.getPattern(use);
  auto args = getSizeArgs(sizes);
  if (!pattern || !args)
    return std::nullopt;
  InferContext ctx = getInferContext(op);
  auto shape = cast<EinTensorType>(op->getOperand(0).getType()).getShape();
  auto info = analyzeTransform(ctx, use, *pattern, shape, *args);
  if (!info)
    return std::nullopt;
  return *info;
}

std::optional<EinsumInfo> getEinsumInfo(EinsumOp op) {
  auto pattern = op.getPattern().getPattern(PatternUse::Einsum);
  auto args = getSizeArgs(op.getSizesAttr());
  if (!pattern || !args)
    return std::nullopt;
  std::vector<Shape> shapes;
  for (Value v : op.getInputs())
    shapes.push_back(cast<EinTensorType>(v.getType()).getShape());
  InferContext ctx = getInferContext(op);
  auto info = analyzeEinsum(ctx, *pattern, shapes, *args);
  if (!info)
    return std::nullopt;
  return *info;
}

} // namespace ein

std::optional<ein::DType> ein::toDType(Type type) {
  if (!type)
    return std::nullopt;
  // MLIR types are uniqued, so equality with each row's type decides.
  for (DType dtype : allDTypes())
    if (type == toMLIRType(type.getContext(), dtype))
      return dtype;
  return std::nullopt;
}

Type ein::toMLIRType(MLIRContext *context, DType dtype) {
  Builder b(context);
  switch (dtype) {
#define EIN_DTYPE(Enum, Name, Bytes, Kind, CType, CUDAType, NpyDescr, MLIR,    \
                  ...)                                                         \
  case DType::Enum:                                                            \
    return b.MLIR();
#include "ein/Shape/DTypes.def"
  }
  llvm_unreachable("unknown DType");
}

ein::EinTensorType ein::toMLIRType(MLIRContext *context,
                                   const ein::TensorType &type) {
  return EinTensorType::get(type.shape, toMLIRType(context, type.dtype));
}

// One case per row of ReduceKinds.def in both directions: a row without an
// ODS case fails to compile, an ODS case without a row is a -Wswitch warning.
ein::ReduceKind ein::toReduceKind(ReduceOpKind kind) {
  switch (kind) {
#define EIN_REDUCE_KIND(Kind, name, ...)                                       \
  case ReduceOpKind::name:                                                     \
    return ReduceKind::Kind;
#include "ein/Shape/ReduceKinds.def"
  }
  llvm_unreachable("unknown ReduceOpKind");
}

ein::ReduceOpKind ein::toReduceOpKind(ReduceKind kind) {
  switch (kind) {
#define EIN_REDUCE_KIND(Kind, name, ...)                                       \
  case ReduceKind::Kind:                                                       \
    return ReduceOpKind::name;
#include "ein/Shape/ReduceKinds.def"
  }
  llvm_unreachable("unknown ReduceKind");
}

DictionaryAttr ein::getSizesAttr(MLIRContext *context,
                                 const std::vector<SizeArg> &args) {
  Builder b(context);
  SmallVector<NamedAttribute> entries;
  for (const SizeArg &arg : args)
    entries.push_back(
        b.getNamedAttr(arg.name, b.getStringAttr(arg.value.str())));
  return b.getDictionaryAttr(entries);
}

ein::Expected<std::vector<ein::SizeArg>>
ein::getSizeArgs(DictionaryAttr sizes) {
  std::vector<SizeArg> args;
  if (!sizes)
    return args;
  for (NamedAttribute entry : sizes) {
    std::string name = entry.getName().str();
    if (auto text = dyn_cast<StringAttr>(entry.getValue())) {
      Expected<SizeExpr> value = parseSizeExpr(text.str());
      if (!value)
        return ShapeError::atKwarg("size of '" + name + "' (\"" + text.str() +
                                       "\"): " + value.error().message,
                                   args.size());
      args.push_back({name, *value});
    } else if (auto number = dyn_cast<IntegerAttr>(entry.getValue())) {
      if (number.getValue().isNegative() ||
          number.getValue().getActiveBits() > 63)
        return ShapeError::atKwarg(
            "size of '" + name + "' must be a non-negative 64-bit integer",
            args.size());
      args.push_back(
          {name, SizeExpr::constant(Int(number.getValue().getZExtValue()))});
    } else {
      return ShapeError::atKwarg(
          "size of '" + name +
              "' must be a string size expression or an integer",
          args.size());
    }
  }
  return args;
}

ArrayAttr ein::getPartsAttr(MLIRContext *context,
                            const std::vector<Shape> &parts) {
  SmallVector<Attribute> texts;
  for (const Shape &part : parts)
    texts.push_back(StringAttr::get(context, shapeStr(part)));
  return ArrayAttr::get(context, texts);
}

std::vector<ein::Shape> ein::getParts(ArrayAttr parts) {
  std::vector<Shape> shapes;
  for (StringRef text : parts.getAsValueRange<StringAttr>()) {
    Expected<Shape> shape = parseShape(text.str());
    shapes.push_back(shape ? *shape : Shape{});
  }
  return shapes;
}

ein::Bindings ein::getModuleDims(Operation *op) {
  Bindings env;
  auto module = dyn_cast_or_null<ModuleOp>(op);
  if (!module && op)
    module = op->getParentOfType<ModuleOp>();
  // Nested modules: the innermost module with `ein.dims` wins.
  for (; module; module = module->getParentOfType<ModuleOp>()) {
    auto dims =
        module->getAttrOfType<DictionaryAttr>(EinDialect::getDimsAttrName());
    if (!dims)
      continue;
    for (NamedAttribute dim : dims)
      if (auto size = dyn_cast<IntegerAttr>(dim.getValue());
          size && size.getValue().getActiveBits() <= 63)
        env.emplace(dim.getName().str(), Int(size.getValue().getSExtValue()));
  }
  return env;
}

void ein::setModuleDims(ModuleOp module, const Bindings &dims) {
  Builder b(module.getContext());
  SmallVector<NamedAttribute> entries;
  for (const auto &[name, value] : dims) {
    if (value >= Int(INT64_MIN) && value <= Int(INT64_MAX)) {
      entries.push_back(
          b.getNamedAttr(name, b.getI64IntegerAttr(static_cast<int64_t>(value))));
      continue;
    }
    // Checked programs may bind dims beyond 64 bits (sizes are 128-bit): keep
    // the exact value, which the verifier then refuses, instead of
    // truncating it to a different size that would compile.
    auto bits = static_cast<unsigned __int128>(value);
    uint64_t words[2] = {static_cast<uint64_t>(bits),
                         static_cast<uint64_t>(bits >> 64)};
    entries.push_back(b.getNamedAttr(
        name, b.getIntegerAttr(b.getIntegerType(128), llvm::APInt(128, words))));
  }
  module->setAttr(EinDialect::getDimsAttrName(), b.getDictionaryAttr(entries));
}

ein::InferContext ein::getInferContext(Operation *op) {
  InferContext ctx;
  ctx.env = getModuleDims(op);
  // The function's divisibility entry checks (`N % D == 0`, as MLIRGen
  // writes them): its quotients divide evenly, so `(N/D)*D` is `N` here as
  // in the checker (InferContext::simplify).
  for (Operation *p = op; p; p = p->getParentOp()) {
    auto checks = p->getAttrOfType<ArrayAttr>("ein.entry_checks");
    if (!checks)
      continue;
    for (Attribute check : checks) {
      auto text = dyn_cast<StringAttr>(check);
      if (!text)
        continue;
      llvm::StringRef s = text.getValue();
      auto [lhs, rest] = s.split(" % ");
      if (rest.empty() || !rest.consume_back(" == 0"))
        continue;
      auto num = parseSizeExpr(lhs.str()), den = parseSizeExpr(rest.str());
      if (num && den)
        ctx.constraints.push_back(
            {Constraint::Kind::Divisible, *num, *den, "entry check"});
    }
    break;
  }
  return ctx;
}
