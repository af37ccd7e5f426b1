// The CUDA target's elementwise functions and astype: what they become in
// the generated source (each tree of them one ein_map with a generated
// functor: the fusion plan, the functor's expression, constants as
// literals) and in the report's CUDA column.
#include "Describe.h"
#ifndef EIN_CUDA_DESCRIBE_ONLY
#include "FunctionEmitter.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ein {
namespace cuda {

// ------------------------------------------------------------- describe

std::string describeElementwise(const CheckedOp &, const CheckedFunction &) {
  return "ein_map (fused)";
}

std::string describeCast(const CheckedOp &, const CheckedFunction &) {
  return "ein_map (fused)";
}

std::string describeDropout(const CheckedOp &, const CheckedFunction &) {
  return "ein_dropout (Philox4x64-10)"; // emitDropout: its own kernel
}

#ifndef EIN_CUDA_DESCRIBE_ONLY
// ------------------------------------------------------------- emit

/// Where each dim of operand `operand` of elementwise `op` lands in op's
/// result (-1: a size-1 dim that broadcasts).
std::vector<int> FunctionEmitter::alignment(mlir::Operation *op,
                                            unsigned operand) {
  EinTensorType in = tensorType(op->getOperand(operand));
  size_t rank = in.getShape().size();
  if (!mlir::isa<ElementwiseOp>(op)) {
    std::vector<int> id(rank);
    for (size_t i = 0; i < rank; ++i)
      id[i] = static_cast<int>(i);
    return id;
  }
  InferContext ctx = fn.ctx;
  BroadcastAlignment al;
  auto shape = inferBroadcast(ctx, tensorType(op->getResult(0)).getShape(),
                              in.getShape(), &al);
  if (!shape) {
    fail(op, "operands that do not broadcast: " + shape.error().message);
    return std::vector<int>(rank, -1);
  }
  return al.rhs;
}

/// The distinct tensor inputs of the tree rooted at `op` (its fused
/// operands inlined), keyed by value and alignment to the root.
std::set<std::pair<const void *, std::vector<int>>>
FunctionEmitter::leafSet(mlir::Operation *op) {
  std::set<std::pair<const void *, std::vector<int>>> set;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    mlir::Value v = op->getOperand(i);
    mlir::Operation *def = v.getDefiningOp();
    if (def && mlir::isa<ConstantOp>(def))
      continue;
    if (def && fused.count(def)) {
      auto inner = leafSet(def);
      set.insert(inner.begin(), inner.end());
    } else {
      set.insert({v.getAsOpaquePointer(), alignment(op, i)});
    }
  }
  return set;
}

/// Chooses the elementwise ops computed inside their user's functor: a
/// single-use result of the user's own shape that the function does not
/// return. A functor takes at most 4 inputs (ein_map): when inlining would
/// exceed that, the operands with the most inputs are computed apart.
/// Constants are literals in every elementwise user.
void FunctionEmitter::planFusion() {
  for (mlir::Operation &op : func.getBody().front()) {
    if (!isElementwise(&op) || mlir::isa<ConstantOp>(op))
      continue;
    std::vector<mlir::Operation *> candidates;
    for (unsigned i = 0; i < op.getNumOperands(); ++i) {
      mlir::Value v = op.getOperand(i);
      mlir::Operation *def = v.getDefiningOp();
      if (!def || !isElementwise(def) || mlir::isa<ConstantOp>(def) ||
          !v.hasOneUse() || directOutput.count(v.getAsOpaquePointer()))
        continue;
      if (tensorType(v).getShape() != tensorType(op.getResult(0)).getShape())
        continue;
      auto al = alignment(&op, i);
      bool identity = true;
      for (size_t d = 0; d < al.size(); ++d)
        identity = identity && al[d] == static_cast<int>(d);
      if (identity)
        candidates.push_back(def);
    }
    for (auto *c : candidates)
      fused.insert(c);
    while (leafSet(&op).size() > 4 && !candidates.empty()) {
      auto widest =
          std::max_element(candidates.begin(), candidates.end(),
                           [&](mlir::Operation *a, mlir::Operation *b) {
                             return leafSet(a).size() < leafSet(b).size();
                           });
      fused.erase(*widest);
      candidates.erase(widest);
    }
  }
}

std::string literal(ConstantOp op, DType dtype) {
  mlir::Attribute value = op.getValue();
  if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(value)) {
    int64_t v = i.getValue().getSExtValue();
    if (!isFloat(dtype))
      return v == INT64_MIN
                 ? fmt::format("{}(INT64_MIN)", storageType(dtype))
                 : fmt::format("{}(INT64_C({}))", storageType(dtype), v);
    return fmt::format("ein_cvt<{}>(double({}))", storageType(dtype), v);
  }
  double v = mlir::cast<mlir::FloatAttr>(value).getValueAsDouble();
  if (std::isnan(v))
    return fmt::format("ein_cvt<{}>(ein_bits_float(0x{}u))", storageType(dtype),
                       std::signbit(v) ? "ffc00000" : "7fc00000");
  if (std::isinf(v))
    return fmt::format("ein_cvt<{}>(ein_bits_float(0x{}u))", storageType(dtype),
                       v < 0 ? "ff800000" : "7f800000");
  return fmt::format("ein_cvt<{}>({:a})", storageType(dtype), v);
}

/// The C++ expression computing `op`'s element (in its storage type) from
/// the functor's parameters `a0, a1, ...`; `leaves` collects the inputs.
std::string FunctionEmitter::expression(
    mlir::Operation *op,
    std::vector<std::pair<mlir::Value, std::vector<int>>> &leaves,
    const std::vector<int> &identity) {
  DType t = tensorType(op->getResult(0)).getDType();
  const char *T = storageType(t);
  if (auto c = mlir::dyn_cast<ConstantOp>(op))
    return literal(c, t);
  std::vector<std::string> args;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    mlir::Value v = op->getOperand(i);
    mlir::Operation *def = v.getDefiningOp();
    if (def && (mlir::isa<ConstantOp>(def) || fused.count(def))) {
      args.push_back(expression(def, leaves, identity));
      continue;
    }
    auto al = alignment(op, i);
    size_t k = 0;
    while (k < leaves.size() &&
           !(leaves[k].first == v && leaves[k].second == al))
      ++k;
    if (k == leaves.size())
      leaves.push_back({v, al});
    args.push_back(fmt::format("a{}", k));
  }
  if (mlir::isa<CastOp>(op))
    return fmt::format("ein_cvt<{}>({})", T, args[0]);
  // The runtime names each function of the table ein_NAME
  // (ein_cuda_program.cuh, ein_cuda_types.cuh).
  std::string fnName =
      fmt::format("ein_{}", mlir::cast<ElementwiseOp>(op).getInfo().name);
  std::vector<std::string> loaded;
  for (auto &a : args)
    loaded.push_back(fmt::format("ein_load({})", a));
  return fmt::format("ein_store<{}>({}({}))", T, fnName,
                     fmt::join(loaded, ", "));
}

void FunctionEmitter::emitFusedTree(mlir::Operation *root) {
  mlir::Value result = root->getResult(0);
  EinTensorType rt = tensorType(result);
  size_t rank = rt.getShape().size();
  std::vector<int> identity(rank);
  for (size_t d = 0; d < rank; ++d)
    identity[d] = static_cast<int>(d);
  std::vector<std::pair<mlir::Value, std::vector<int>>> leaves;
  std::string body = expression(root, leaves, identity);
  std::string functor =
      fmt::format("ein_{}_fn{}", cName(fn.name), functorCount++);
  std::vector<std::string> params, views;
  auto rootSizes = shapeSizes(rt, root);
  std::string z = sizeArray(rootSizes);
  for (size_t k = 0; k < leaves.size(); ++k) {
    const ValueView &leaf = view(leaves[k].first, root);
    params.push_back(fmt::format("{} a{}", storageType(leaf.dtype), k));
    std::string mask;
    for (size_t j = 0; j < rank; ++j)
      for (size_t i = 0; i < leaf.rank; ++i)
        mask += leaves[k].second[i] == static_cast<int>(j) ? '1' : '0';
    views.push_back(
        fmt::format("ein_pick<{}>({}, \"{}\", {})", rank, leaf.name, mask, z));
  }
  if (leaves.empty()) { // only constants: read one dummy element
    int owner = newOwner();
    std::string s = fresh("s");
    fmt::format_to(out(),
                   "  EinView<float, 0> {} = ein_scalar<float>(stream, 0.0f, "
                   "&t{});\n",
                   s, owner);
    params.push_back("float");
    views.push_back(
        fmt::format("ein_pick<{}>(ein_const_view({}), \"\", {})", rank, s, z));
  }
  fmt::format_to(std::back_inserter(functors),
                 "struct {} {{\n  EIN_HD {} operator()({}) const {{\n"
                 "    return {};\n  }}\n}};\n",
                 functor, storageType(rt.getDType()), fmt::join(params, ", "),
                 body);
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_map(stream, {}(), {}, {});\n", functor, w,
                 fmt::join(views, ", "));
  std::vector<int> owners;
  if (owner >= 0)
    owners.push_back(owner);
  define(result, w, owners);
}

void FunctionEmitter::emitElementwise(ElementwiseOp op) { emitFusedTree(op); }

void FunctionEmitter::emitCast(CastOp op) { emitFusedTree(op); }

/// dropout: ein_dropout's kernel, the mask's threshold ceil(p * 2^53) and
/// the scale 1 / (1 - p) as the CPU lowering computes them (exact literals).
/// A run-time p: the kernel reads it and computes both on the device, and
/// counts a p outside [0, 1) into the function's index status.
void FunctionEmitter::emitDropout(DropoutOp op) {
  const ValueView input = view(op.getInput(), op);
  const ValueView key = view(op.getKey(), op);
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  if (op.getRate()) {
    const ValueView rate = view(op.getRate(), op);
    fmt::format_to(out(),
                   "  ein_dropout(stream, {}, {}, {}, {}, ein_status);\n", w,
                   input.name, key.name, rate.name);
  } else {
    double p = op.getP()->convertToDouble();
    auto threshold = static_cast<uint64_t>(std::ceil(std::ldexp(p, 53)));
    fmt::format_to(
        out(), "  ein_dropout(stream, {}, {}, {}, uint64_t({}ull), {:a});\n", w,
        input.name, key.name, threshold, 1.0 / (1.0 - p));
  }
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

#endif // EIN_CUDA_DESCRIBE_ONLY

} // namespace cuda
} // namespace ein
