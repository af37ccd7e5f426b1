// The CUDA target's elementwise functions and astype: what they become in
// the generated source (each tree of them one ein_map with a generated
// functor: the fusion plan, the functor's expression, constants as
// literals) and in the report's CUDA column.
#include "Describe.h"
#ifndef EIN_CUDA_DESCRIBE_ONLY
#include "FunctionEmitter.h"
#endif

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <map>
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

/// The distinct tensor inputs of the functor rooted at `op` (its fused
/// operands inlined), keyed by value and alignment to the root.
std::set<std::pair<const void *, std::vector<int>>>
FunctionEmitter::leafSet(mlir::Operation *op) {
  std::set<std::pair<const void *, std::vector<int>>> set;
  std::set<mlir::Operation *> seen;
  std::vector<mlir::Operation *> work = {op};
  while (!work.empty()) {
    mlir::Operation *o = work.back();
    work.pop_back();
    if (!seen.insert(o).second)
      continue;
    for (unsigned i = 0; i < o->getNumOperands(); ++i) {
      mlir::Value v = o->getOperand(i);
      mlir::Operation *def = v.getDefiningOp();
      if (def && mlir::isa<ConstantOp>(def))
        continue;
      if (def && fused.count(def))
        work.push_back(def);
      else
        set.insert({v.getAsOpaquePointer(), alignment(o, i)});
    }
  }
  return set;
}

/// Whether every use of `v` by `user` reads it element for element: the
/// user's shape, no broadcast.
bool FunctionEmitter::readsInPlace(mlir::Operation *user, mlir::Value v) {
  if (tensorType(v).getShape() != tensorType(user->getResult(0)).getShape())
    return false;
  for (unsigned i = 0; i < user->getNumOperands(); ++i) {
    if (user->getOperand(i) != v)
      continue;
    auto al = alignment(user, i);
    for (size_t d = 0; d < al.size(); ++d)
      if (al[d] != static_cast<int>(d))
        return false;
  }
  return true;
}

/// Chooses the elementwise ops computed inside another op's functor, so
/// that a chain or DAG of elementwise ops over one iteration space is one
/// ein_map and its intermediates never reach memory. Walking backwards, an
/// op joins the functor of its users when every user is an elementwise op
/// of that one functor that reads it in place (same shape, no broadcast)
/// and the function does not return it; a value read more than once is
/// computed once, into a local of the functor (expression). An op read so
/// by two functors is computed in both. The functor
/// takes at most 4 inputs (ein_map): an op whose joining would exceed that
/// is computed apart. Constants are literals in every elementwise user.
/// `--no-fusion` (CUDAOptions::fusion) keeps every op its own ein_map.
void FunctionEmitter::planFusion() {
  if (!options.fusion)
    return;
  std::map<mlir::Operation *, mlir::Operation *> rootOf;
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : func.getBody().front().without_terminator())
    ops.push_back(&op);
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    mlir::Operation *op = *it;
    if (!isElementwise(op) || mlir::isa<ConstantOp>(op) ||
        inEpilogue.count(op) || inRows.count(op) || rowGroups.count(op))
      continue;
    rootOf[op] = op;
    mlir::Value v = op->getResult(0);
    if (v.use_empty() || directOutput.count(v.getAsOpaquePointer()))
      continue;
    // The functors reading v (null: an op recomputed in its readers).
    std::set<mlir::Operation *> roots;
    bool inPlace = true;
    for (mlir::Operation *user : v.getUsers()) {
      auto r = rootOf.find(user);
      inPlace =
          inPlace && r != rootOf.end() && r->second && readsInPlace(user, v);
      if (!inPlace)
        break;
      roots.insert(r->second);
    }
    // Read by one functor: computed there. Read by two: recomputed in both
    // (reading its inputs twice costs no more than writing it once and
    // reading it twice), and then not a functor its operands can join.
    if (!inPlace || roots.size() > 2)
      continue;
    fused.insert(op);
    bool fits = true;
    for (mlir::Operation *root : roots)
      fits = fits && leafSet(root).size() <= 4;
    if (!fits) {
      fused.erase(op);
      continue;
    }
    rootOf[op] = roots.size() == 1 ? *roots.begin() : nullptr;
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
std::string FunctionEmitter::expression(mlir::Operation *op,
                                        FunctorBody &body) {
  DType t = tensorType(op->getResult(0)).getDType();
  const char *T = storageType(t);
  if (auto c = mlir::dyn_cast<ConstantOp>(op))
    return literal(c, t);
  std::vector<std::string> args;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    args.push_back(operandText(op, i, body));
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

/// A fused operand read more than once is computed once into a local
/// (`const T xN = ...;` appended to `lets`, `locals` naming it).
std::string FunctionEmitter::operandText(mlir::Operation *op, unsigned i,
                                         FunctorBody &body) {
  mlir::Value v = op->getOperand(i);
  mlir::Operation *def = v.getDefiningOp();
  if (def && mlir::isa<ConstantOp>(def))
    return expression(def, body);
  if (def && body.rows) {
    auto result = body.rows->results.find(def);
    if (result != body.rows->results.end()) {
      body.readsRows = true;
      return result->second;
    }
  }
  bool inlined = def && (body.rows ? body.rows->members.count(def) != 0
                                   : fused.count(def) != 0);
  if (inlined) {
    if (v.hasOneUse())
      return expression(def, body);
    auto local = body.locals.find(def);
    if (local == body.locals.end()) {
      std::string e = expression(def, body);
      std::string name = fmt::format("x{}", body.locals.size());
      body.lets.push_back(fmt::format(
          "const {} {} = {};",
          storageType(tensorType(def->getResult(0)).getDType()), name, e));
      local = body.locals.emplace(def, name).first;
    }
    return local->second;
  }
  auto al = body.rows ? rowAlignment(*body.rows, op, i) : alignment(op, i);
  size_t k = 0;
  while (k < body.leaves.size() &&
         !(body.leaves[k].first == v && body.leaves[k].second == al))
    ++k;
  if (k == body.leaves.size())
    body.leaves.push_back({v, al});
  body.used.insert(k);
  return fmt::format("a{}", k);
}

void FunctionEmitter::functorInputs(const FunctorBody &body, size_t rank,
                                    const std::string &z, mlir::Operation *at,
                                    std::vector<std::string> &types,
                                    std::vector<std::string> &views) {
  for (auto &[value, al] : body.leaves) {
    const ValueView &leaf = view(value, at);
    types.push_back(storageType(leaf.dtype));
    std::string mask;
    for (size_t j = 0; j < rank; ++j)
      for (size_t i = 0; i < leaf.rank; ++i)
        mask += al[i] == static_cast<int>(j) ? '1' : '0';
    views.push_back(
        fmt::format("ein_pick<{}>({}, \"{}\", {})", rank, leaf.name, mask, z));
  }
}

void FunctionEmitter::emitFusedTree(mlir::Operation *root) {
  mlir::Value result = root->getResult(0);
  EinTensorType rt = tensorType(result);
  size_t rank = rt.getShape().size();
  FunctorBody body;
  std::string value = expression(root, body);
  std::string functor =
      fmt::format("ein_{}_fn{}", cName(fn.name), functorCount++);
  std::vector<std::string> params, views;
  auto rootSizes = shapeSizes(rt, root);
  std::string z = sizeArray(rootSizes);
  functorInputs(body, rank, z, root, params, views);
  for (size_t k = 0; k < params.size(); ++k)
    params[k] += fmt::format(" a{}", k);
  std::string lets;
  for (auto &l : body.lets)
    lets += "    " + l + "\n";
  if (body.leaves.empty()) { // only constants: read one dummy element
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
                 "{}    return {};\n  }}\n}};\n",
                 functor, storageType(rt.getDType()), fmt::join(params, ", "),
                 lets, value);
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
