// The CUDA target: ein IR (after ein-split-einsums) to one CUDA C++ source.
//
// Every op becomes one call of the runtime (lib/Target/CUDA/Runtime) on
// strided views: an op's elementary axes are a view of its operand
// (`ein_split`), any permutation, diagonal or broadcast of them another one
// (`ein_pick`), so that rearrange and repeat are views until a merge of axes
// needs a copy (`ein_merge`, decided at run time, when strides are known),
// reductions are `ein_reduce`, pairwise einsums `ein_contract` (cuBLASLt),
// pack and unpack copies into and views of slices, and each tree of
// elementwise ops one `ein_map` with a generated functor. See docs/cuda.md.
#include "ein/Target/CUDA/EmitCUDA.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Shape/SizeReads.h"
#include "ein/Target/CEntry.h"
#include "ein/Target/CUDA/GemmRoles.h"
#include "ein/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/TypeSwitch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace ein {

namespace {

/// The runtime's files, in the order they are pasted (RuntimeText.inc is
/// generated from lib/Target/CUDA/Runtime by EmbedRuntime.cmake).
struct RuntimeFile {
  const char *name;
  const char *text;
};
const RuntimeFile runtimeFiles[] = {
#include "RuntimeText.inc"
};

const char *storageType(DType t) { return dtypeInfo(t).cudaType; }

bool isLowFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3 ||
         t == DType::F8E5M2;
}
bool isFp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

/// An op that cannot be emitted: the reason, anchored at the op. (The
/// project builds without exceptions: the emitter records the first error
/// and finishes its walk on placeholders; the text is then discarded.)
struct EmitError {
  mlir::Operation *op = nullptr;
  std::string what;
};

bool isElementwise(mlir::Operation *op) {
  return mlir::isa<ElementwiseOp, CastOp, ConstantOp>(op);
}

EinTensorType tensorType(mlir::Value v) {
  return mlir::cast<EinTensorType>(v.getType());
}

/// A tensor value of the function as the generated code holds it: a
/// variable `EinView<const T, R> name`, and the temporaries it reads.
struct ValueView {
  std::string name;
  DType dtype = DType::F32;
  size_t rank = 0;
  std::vector<int> owners;
};

/// Emits one function.
class FunctionEmitter {
public:
  FunctionEmitter(const CheckedFunction &fn, mlir::func::FuncOp func,
                  const CUDAOptions &options, std::string &functors,
                  int &functorCount)
      : fn(fn), func(func), options(options), functors(functors),
        functorCount(functorCount),
        entry(cEntry(fn, ",\n    cudaStream_t stream")) {}

  std::string emit();
  /// The first error, if any (then emit's text is meaningless).
  const std::optional<EmitError> &error() const { return firstError; }

private:
  void fail(mlir::Operation *op, std::string what) {
    if (!firstError)
      firstError = EmitError{op, std::move(what)};
  }
  std::optional<EmitError> firstError;
  // ---- text helpers
  std::string fresh(const char *prefix) {
    return fmt::format("{}{}", prefix, counter++);
  }
  std::string size(const SizeExpr &e, mlir::Operation *at) {
    SizeExpr bound = e.substitute(fn.ctx.env);
    for (const std::string &name : bound.symbols())
      if (!entry.sizes.names.count(name)) {
        fail(at, fmt::format("the size {} is not known from the function's "
                             "parameters",
                             e.str()));
        return "0";
      }
    return entry.sizes.expr(bound);
  }
  /// `const int64_t zN[] = {...};` (one extra element: never empty).
  std::string sizeArray(const std::vector<std::string> &sizes) {
    std::string name = fresh("z");
    fmt::format_to(out(), "  const int64_t {}[] = {{{}{}0}};\n", name,
                   fmt::join(sizes, ", "), sizes.empty() ? "" : ", ");
    return name;
  }
  std::string intArray(const std::vector<int> &values) {
    std::string name = fresh("d");
    fmt::format_to(out(), "  const int {}[] = {{{}{}0}};\n", name,
                   fmt::join(values, ", "), values.empty() ? "" : ", ");
    return name;
  }
  std::back_insert_iterator<std::string> out() {
    return std::back_inserter(*chunk);
  }
  std::vector<std::string> shapeSizes(EinTensorType t, mlir::Operation *at) {
    std::vector<std::string> sizes;
    for (const Dim &d : t.getShape()) {
      if (d.isPack()) {
        fail(at, "a variadic of unknown rank");
        sizes.push_back("0");
        continue;
      }
      sizes.push_back(size(d.size, at));
    }
    return sizes;
  }
  std::string viewType(DType t, size_t rank, bool isConst = true) {
    return fmt::format("EinView<{}{}, {}>", isConst ? "const " : "",
                       storageType(t), rank);
  }

  // ---- values and destinations
  const ValueView &view(mlir::Value v, mlir::Operation *at) {
    auto it = values.find(v.getAsOpaquePointer());
    if (it == values.end()) {
      fail(at, "an operand the CUDA target has not computed");
      static const ValueView placeholder;
      return placeholder;
    }
    return it->second;
  }
  /// Where the op computing `result` writes: the caller's output when the
  /// function returns it (the first return of it), else a new temporary.
  /// Declares `EinView<T, R> w` and returns its name; `owner` gets the
  /// temporary (-1 for an output).
  std::string destination(mlir::Value result, int &owner) {
    EinTensorType t = tensorType(result);
    auto sizes = shapeSizes(t, result.getDefiningOp());
    auto direct = directOutput.find(result.getAsOpaquePointer());
    std::string w = fresh("w");
    if (direct != directOutput.end()) {
      written.insert(direct->second);
      fmt::format_to(out(), "  {} {} = o{};\n",
                     viewType(t.getDType(), sizes.size(), false), w,
                     direct->second);
      owner = -1;
      return w;
    }
    owner = newOwner();
    std::string z = sizeArray(sizes);
    fmt::format_to(out(),
                   "  {0} {1} = ein_temp<{2}, {3}>(stream, {4}, &t{5});\n",
                   viewType(t.getDType(), sizes.size(), false), w,
                   storageType(t.getDType()), sizes.size(), z, owner);
    return w;
  }
  int newOwner() {
    int k = static_cast<int>(ownerLastUse.size());
    ownerLastUse.push_back(opIndex);
    fmt::format_to(out(), "  void *t{} = nullptr;\n", k);
    return k;
  }
  /// Records `result` as the const view of the written `w`.
  void define(mlir::Value result, const std::string &w,
              std::vector<int> owners) {
    EinTensorType t = tensorType(result);
    ValueView v;
    v.name = fresh("v");
    v.dtype = t.getDType();
    v.rank = t.getShape().size();
    v.owners = std::move(owners);
    fmt::format_to(out(), "  {} {} = ein_const_view({});\n",
                   viewType(v.dtype, v.rank), v.name, w);
    values[result.getAsOpaquePointer()] = v;
  }

  // ---- elementary axes
  /// `ein_split` of the view `name` (of `dtype`, const or writable) into
  /// the axes of `groups` (per dim, its elementary axes); `axes` receives
  /// the axis names in order.
  std::string split(const std::string &name, DType dtype, bool isConst,
                    const std::vector<std::vector<std::string>> &groups,
                    const std::map<std::string, SizeExpr> &axisSizes,
                    std::vector<std::string> &axes, mlir::Operation *at) {
    std::vector<int> dimOf;
    std::vector<std::string> sizes;
    axes.clear();
    for (size_t d = 0; d < groups.size(); ++d)
      for (auto &a : groups[d]) {
        auto it = axisSizes.find(a);
        dimOf.push_back(static_cast<int>(d));
        if (it == axisSizes.end())
          fail(at, fmt::format("no size for axis '{}'", a));
        sizes.push_back(it == axisSizes.end() ? "0" : size(it->second, at));
        axes.push_back(a);
      }
    std::string dims = intArray(dimOf), z = sizeArray(sizes);
    std::string e = fresh("e");
    fmt::format_to(out(), "  {} {} = ein_split<{}>({}, {}, {});\n",
                   viewType(dtype, axes.size(), isConst), e, axes.size(), name,
                   dims, z);
    return e;
  }
  /// `ein_pick` of the axes `rows` from a view whose axes are `axes` (a
  /// row matches every equal axis: diagonals; none: a broadcast of size
  /// `sizeOf(row)`).
  std::string pick(const std::string &e, DType dtype,
                   const std::vector<std::string> &axes,
                   const std::vector<std::string> &rows,
                   const std::vector<std::string> &rowSizes,
                   bool isConst = true) {
    std::string mask;
    for (auto &r : rows)
      for (auto &a : axes)
        mask += a == r ? '1' : '0';
    std::string z = sizeArray(rowSizes);
    std::string p = fresh("p");
    fmt::format_to(out(), "  {} {} = ein_pick<{}>({}, \"{}\", {});\n",
                   viewType(dtype, rows.size(), isConst), p, rows.size(), e,
                   mask, z);
    return p;
  }
  std::vector<std::string>
  axisSizeTexts(const std::vector<std::string> &axes,
                const std::map<std::string, SizeExpr> &axisSizes,
                mlir::Operation *at) {
    std::vector<std::string> sizes;
    for (auto &a : axes) {
      auto it = axisSizes.find(a);
      if (it == axisSizes.end())
        fail(at, fmt::format("no size for axis '{}'", a));
      sizes.push_back(it == axisSizes.end() ? "0" : size(it->second, at));
    }
    return sizes;
  }

  // ---- ops
  void emitOp(mlir::Operation *op);
  void emitMove(mlir::Value result, const ValueView &in,
                const std::vector<std::vector<std::string>> &inGroups,
                const std::vector<std::vector<std::string>> &outGroups,
                const std::map<std::string, SizeExpr> &axisSizes,
                mlir::Operation *op);
  void emitReduce(mlir::Value result, const ValueView &in,
                  const std::vector<std::vector<std::string>> &inGroups,
                  const std::vector<std::vector<std::string>> &outGroups,
                  const std::map<std::string, SizeExpr> &axisSizes,
                  ReduceKind kind, mlir::Operation *op);
  void emitEinsum(EinsumOp op);
  void emitContraction(EinsumOp op, const EinsumInfo &info);
  void emitPack(PackOp op);
  std::string packedPart(const std::string &packed, size_t packedRank,
                         size_t before, const std::string &offset,
                         mlir::Value part, std::string &count,
                         mlir::Operation *op);
  void emitUnpack(UnpackOp op);
  void emitElementwise(mlir::Operation *root);
  void emitConstant(ConstantOp op);
  /// A size read at run time (a dim used as a value): a scalar.
  void emitSize(SizeOp op);
  /// arange: 0, 1, ..., n-1 written by a kernel into the result.
  void emitArange(ArangeOp op);
  /// take: a gather kernel (ids clamped), after a kernel counting the ids
  /// out of range into the function's index status (`ein_status`).
  void emitTake(TakeOp op);
  /// scatter_add (take's gradient): a zero fill, then an atomicAdd kernel
  /// over the updates (f32 and f64: the atomics every target has).
  void emitScatterAdd(ScatterAddOp op);
  /// slice: a view of the input (ein_slice), copied only when returned.
  void emitSlice(SliceOp op);
  /// A value of dtype `to` holding `v` converted (a new temporary).
  ValueView castTo(const ValueView &v, DType to);

  // Elementwise fusion (see planFusion).
  void planFusion();
  std::string
  expression(mlir::Operation *op,
             std::vector<std::pair<mlir::Value, std::vector<int>>> &leaves,
             const std::vector<int> &identity);
  std::vector<int> alignment(mlir::Operation *op, unsigned operand);
  std::set<std::pair<const void *, std::vector<int>>>
  leafSet(mlir::Operation *op);

  const CheckedFunction &fn;
  mlir::func::FuncOp func;
  const CUDAOptions &options;
  std::string &functors;
  int &functorCount;
  CEntry entry;

  std::string *chunk = nullptr;
  int counter = 0;
  size_t opIndex = 0;
  std::map<const void *, ValueView> values;
  std::map<const void *, size_t> directOutput; // value -> output index
  std::set<size_t> written;                    // outputs written directly
  std::vector<size_t> ownerLastUse;            // per temporary
  std::set<mlir::Operation *> fused;           // inlined into their user
};

// ------------------------------------------------------------- fusion

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

void FunctionEmitter::emitElementwise(mlir::Operation *root) {
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

// ------------------------------------------------------------- data movement

void FunctionEmitter::emitMove(
    mlir::Value result, const ValueView &in,
    const std::vector<std::vector<std::string>> &inGroups,
    const std::vector<std::vector<std::string>> &outGroups,
    const std::map<std::string, SizeExpr> &axisSizes, mlir::Operation *op) {
  EinTensorType rt = tensorType(result);
  DType to = rt.getDType();
  std::vector<std::string> inAxes, outAxes;
  std::string e =
      split(in.name, in.dtype, true, inGroups, axisSizes, inAxes, op);
  std::vector<int> outDimOf, counts, positions;
  for (size_t d = 0; d < outGroups.size(); ++d) {
    counts.push_back(static_cast<int>(outGroups[d].size()));
    for (auto &a : outGroups[d]) {
      positions.push_back(static_cast<int>(outAxes.size()));
      outAxes.push_back(a);
      outDimOf.push_back(static_cast<int>(d));
    }
  }
  auto outSizes = axisSizeTexts(outAxes, axisSizes, op);
  std::string p = pick(e, in.dtype, inAxes, outAxes, outSizes);
  std::vector<int> owners = in.owners;
  size_t rank = rt.getShape().size();
  if (directOutput.count(result.getAsOpaquePointer()) || to != in.dtype) {
    int owner;
    std::string w = destination(result, owner);
    std::string dims = intArray(outDimOf), z = sizeArray(outSizes);
    std::string target =
        fmt::format("ein_split<{}>({}, {}, {})", outAxes.size(), w, dims, z);
    if (to == in.dtype)
      fmt::format_to(out(), "  ein_move(stream, {}, {});\n", target, p);
    else
      fmt::format_to(out(), "  ein_map(stream, EinCastTo<{}>(), {}, {});\n",
                     storageType(to), target, p);
    define(result, w,
           owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
    return;
  }
  // A view when the strides allow; otherwise a copy.
  ValueView v;
  v.name = fresh("v");
  v.dtype = to;
  v.rank = rank;
  int owner = newOwner();
  owners.push_back(owner);
  v.owners = owners;
  std::string countArray = intArray(counts), posArray = intArray(positions);
  auto resultSizes = shapeSizes(rt, op);
  std::string zr = sizeArray(resultSizes), zo = sizeArray(outSizes),
              dims = intArray(outDimOf), w = fresh("w");
  fmt::format_to(
      out(),
      "  {0} {1};\n"
      "  if (!ein_merge<{2}>({3}, {4}, {5}, &{1})) {{\n"
      "    {6} {7} = ein_temp<{8}, {2}>(stream, {9}, &t{10});\n"
      "    ein_move(stream, ein_split<{11}>({7}, {12}, {13}), {3});\n"
      "    {1} = ein_const_view({7});\n  }}\n",
      viewType(to, rank), v.name, rank, p, countArray, posArray,
      viewType(to, rank, false), w, storageType(to), zr, owner, outAxes.size(),
      dims, zo);
  values[result.getAsOpaquePointer()] = v;
}

void FunctionEmitter::emitReduce(
    mlir::Value result, const ValueView &in,
    const std::vector<std::vector<std::string>> &inGroups,
    const std::vector<std::vector<std::string>> &outGroups,
    const std::map<std::string, SizeExpr> &axisSizes, ReduceKind kind,
    mlir::Operation *op) {
  EinTensorType rt = tensorType(result);
  DType to = rt.getDType();
  std::vector<std::string> inAxes, outAxes, reduced;
  std::string e =
      split(in.name, in.dtype, true, inGroups, axisSizes, inAxes, op);
  for (auto &group : outGroups)
    outAxes.insert(outAxes.end(), group.begin(), group.end());
  for (auto &a : inAxes)
    if (std::find(outAxes.begin(), outAxes.end(), a) == outAxes.end() &&
        std::find(reduced.begin(), reduced.end(), a) == reduced.end())
      reduced.push_back(a);
  std::vector<std::string> rows = outAxes;
  rows.insert(rows.end(), reduced.begin(), reduced.end());
  auto rowSizes = axisSizeTexts(rows, axisSizes, op);
  std::string p = pick(e, in.dtype, inAxes, rows, rowSizes);
  int owner;
  std::string w = destination(result, owner);
  std::vector<std::string> splitAxes;
  std::string we = split(w, to, false, outGroups, axisSizes, splitAxes, op);
  std::vector<std::string> ones(rowSizes.begin(),
                                rowSizes.begin() + outAxes.size());
  ones.resize(rows.size(), "1");
  std::string target = pick(we, to, outAxes, rows, ones, false);
  // any and all on bool are max and min (false < true), with the
  // identities false and true. var is two passes of its own runtime
  // function (ein_reduce_var).
  const char *k = nullptr;
  switch (kind) {
  case ReduceKind::Sum:
    k = "EIN_REDUCE_SUM";
    break;
  case ReduceKind::Mean:
    k = "EIN_REDUCE_MEAN";
    break;
  case ReduceKind::Max:
  case ReduceKind::Any:
    k = "EIN_REDUCE_MAX";
    break;
  case ReduceKind::Min:
  case ReduceKind::All:
    k = "EIN_REDUCE_MIN";
    break;
  case ReduceKind::Prod:
    k = "EIN_REDUCE_PROD";
    break;
  case ReduceKind::Var:
    break;
  }
  const char *acc = isLowFloat(to) ? "float" : storageType(to);
  if (k)
    fmt::format_to(out(), "  ein_reduce<{}, {}>(stream, {}, {});\n", k, acc,
                   target, p);
  else
    fmt::format_to(out(), "  ein_reduce_var<{}>(stream, {}, {});\n", acc,
                   target, p);
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

ValueView FunctionEmitter::castTo(const ValueView &v, DType to) {
  int owner = newOwner();
  std::string w = fresh("w");
  fmt::format_to(out(),
                 "  {0} {1} = ein_temp<{2}, {3}>(stream, {4}.size, &t{5});\n"
                 "  ein_map(stream, EinCastTo<{2}>(), {1}, {4});\n",
                 viewType(to, v.rank, false), w, storageType(to), v.rank,
                 v.name, owner);
  ValueView c;
  c.name = fresh("v");
  c.dtype = to;
  c.rank = v.rank;
  c.owners = {owner};
  fmt::format_to(out(), "  {} {} = ein_const_view({});\n", viewType(to, v.rank),
                 c.name, w);
  return c;
}

// ------------------------------------------------------------- einsum

void FunctionEmitter::emitEinsum(EinsumOp op) {
  auto info = getEinsumInfo(op);
  if (!info)
    return fail(op, "an einsum whose structure cannot be analysed");
  if (op.getInputs().size() == 2)
    return emitContraction(op, *info);
  if (op.getInputs().size() != 1) {
    // ein-split-einsums leaves an einsum with an axis of size 0: its result
    // is all zeros (or empty).
    bool empty = false;
    Bindings env = getModuleDims(op);
    for (auto &[axis, size] : info->axisSizes)
      empty = empty || size.evaluate(env) == Int(0);
    if (!empty)
      return fail(op, "an einsum of more than two operands (ein-split-einsums "
                      "did not run)");
    int owner;
    mlir::Value result = op.getResult();
    std::string w = destination(result, owner);
    fmt::format_to(
        out(), "  ein_map(stream, EinZeroOf<{}>(), {}, ein_const_view({}));\n",
        storageType(tensorType(result).getDType()), w, w);
    return define(result, w,
                  owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
  }
  mlir::Value result = op.getResult();
  const ValueView &in = view(op.getInputs()[0], op);
  std::set<std::string> outSet;
  for (auto &g : info->outputGroups)
    outSet.insert(g.begin(), g.end());
  bool reduces = false;
  for (auto &a : info->operandAxes[0])
    reduces = reduces || !outSet.count(a);
  if (reduces)
    emitReduce(result, in, info->operandGroups[0], info->outputGroups,
               info->axisSizes, ReduceKind::Sum, op);
  else
    emitMove(result, in, info->operandGroups[0], info->outputGroups,
             info->axisSizes, op);
}

/// C[batch, m, n] = sum_k A[batch, m, k] B[batch, k, n] over the elementary
/// axes; an axis of one operand alone is a k axis the other reads with
/// stride 0.
void FunctionEmitter::emitContraction(EinsumOp op, const EinsumInfo &info) {
  mlir::Value result = op.getResult();
  DType to = tensorType(result).getDType();
  ValueView a = view(op.getInputs()[0], op), b = view(op.getInputs()[1], op);
  DType ti = a.dtype;
  // The GEMM's operand and result types (cuBLASLt's combinations).
  DType gemmIn = ti, gemmOut = to;
  if (!isFloat(ti)) {
    gemmIn = gemmOut = to; // integers: one dtype, wrapping
  } else if (to == DType::F64 || ti == DType::F64) {
    gemmIn = gemmOut = DType::F64;
  } else if (ti == DType::F8E5M2) {
    gemmIn = DType::F16; // e5m2 x e5m2 has no cuBLASLt kernel; exact in f16
    gemmOut = DType::F32;
  } else if (!(ti == to && !isFp8(to)) &&
             !(isLowFloat(ti) && to == DType::F32)) {
    gemmOut = DType::F32;
  }
  if (gemmIn != ti) {
    a = castTo(a, gemmIn);
    b = castTo(b, gemmIn);
  }
  std::vector<std::string> aAxes, bAxes, outAxes;
  std::string ea = split(a.name, a.dtype, true, info.operandGroups[0],
                         info.axisSizes, aAxes, op);
  std::string eb = split(b.name, b.dtype, true, info.operandGroups[1],
                         info.axisSizes, bAxes, op);
  for (auto &group : info.outputGroups)
    outAxes.insert(outAxes.end(), group.begin(), group.end());
  GemmRoles gemmRoles = splitGemmRoles(aAxes, bAxes, outAxes);
  auto rowsA = gemmRoles.rowsA(), rowsB = gemmRoles.rowsB(),
       rowsC = gemmRoles.rowsC();
  std::string pa =
      pick(ea, a.dtype, aAxes, rowsA, axisSizeTexts(rowsA, info.axisSizes, op));
  std::string pb =
      pick(eb, b.dtype, bAxes, rowsB, axisSizeTexts(rowsB, info.axisSizes, op));
  // The result: written in place when its type is the GEMM's, else through
  // a temporary of the GEMM's type converted once.
  int owner = -1;
  std::string w;
  std::string gemmTarget;
  int gemmOwner = -1;
  w = destination(result, owner);
  std::vector<std::string> splitAxes;
  std::string we =
      split(w, to, false, info.outputGroups, info.axisSizes, splitAxes, op);
  if (gemmOut != to) {
    gemmOwner = newOwner();
    gemmTarget = fresh("g");
    fmt::format_to(out(),
                   "  {0} {1} = ein_temp<{2}, {3}>(stream, {4}.size, &t{5});\n",
                   viewType(gemmOut, outAxes.size(), false), gemmTarget,
                   storageType(gemmOut), outAxes.size(), we, gemmOwner);
  } else {
    gemmTarget = we;
  }
  std::string pc = pick(gemmTarget, gemmOut, outAxes, rowsC,
                        axisSizeTexts(rowsC, info.axisSizes, op), false);
  if (rowsA.size() > 16 || rowsB.size() > 16 || rowsC.size() > 16)
    fail(op, "a contraction of more than 16 axes per operand");
  std::string roles = fresh("roles");
  fmt::format_to(out(), "  static const EinGemmRoles {} = {{{}, {}, {}, {}",
                 roles, gemmRoles.batch.size(), gemmRoles.m.size(),
                 gemmRoles.n.size(), gemmRoles.k.size());
  for (const std::vector<int> &positions : gemmRoles.positions())
    fmt::format_to(out(), ", {{{}}}", fmt::join(positions, ", "));
  fmt::format_to(out(), "}};\n");
  fmt::format_to(out(),
                 "  {{\n    size_t bytes = 0;\n    void *workspace = "
                 "ein_workspace(&bytes);\n    ein_contract(stream, {}, {}, {}, "
                 "{}, {}, workspace, bytes);\n  }}\n",
                 roles, pa, pb, pc, options.allowTf32 ? "true" : "false");
  if (gemmOut != to)
    fmt::format_to(out(),
                   "  ein_map(stream, EinCastTo<{}>(), {}, "
                   "ein_const_view({}));\n",
                   storageType(to), we, gemmTarget);
  std::vector<int> owners;
  if (owner >= 0)
    owners.push_back(owner);
  define(result, w, owners);
  (void)gemmOwner; // freed with the ops' other temporaries after this op
}

// ------------------------------------------------------------- pack

/// The view, in the packed tensor `packed` (of rank `packedRank`, the `*`
/// axis at `before`), of the part `part` that starts at `offset` along it:
/// the slice split into the part's dims. `count` receives the variable
/// holding the part's length along the `*` axis.
std::string FunctionEmitter::packedPart(const std::string &packed,
                                        size_t packedRank, size_t before,
                                        const std::string &offset,
                                        mlir::Value part, std::string &count,
                                        mlir::Operation *op) {
  auto sizes = shapeSizes(tensorType(part), op);
  size_t after = packedRank - before - 1;
  std::vector<int> dimOf;
  std::string length = "INT64_C(1)";
  for (size_t d = 0; d < sizes.size(); ++d) {
    bool inStar = d >= before && d < sizes.size() - after;
    dimOf.push_back(static_cast<int>(d < before ? d
                                     : inStar
                                         ? before
                                         : d - (sizes.size() - packedRank)));
    if (inStar)
      length = fmt::format("ein_mul_({}, {}, &ovf)", length, sizes[d]);
  }
  count = fresh("n");
  fmt::format_to(out(), "  int64_t {} = {};\n", count, length);
  std::string dims = intArray(dimOf), z = sizeArray(sizes);
  return fmt::format("ein_split<{}>(ein_slice({}, {}, {}, {}), {}, {})",
                     sizes.size(), packed, before, offset, count, dims, z);
}

void FunctionEmitter::emitPack(PackOp op) {
  auto pattern = op.getPattern().getPattern(PatternUse::Pack);
  if (!pattern)
    return fail(op, "a pack pattern that does not parse");
  size_t before = pattern->inputs[0].starIndex();
  mlir::Value result = op.getResult();
  EinTensorType rt = tensorType(result);
  size_t rank = rt.getShape().size();
  int owner;
  std::string w = destination(result, owner);
  std::string offset = fresh("off");
  fmt::format_to(out(), "  int64_t {} = 0;\n", offset);
  for (mlir::Value input : op.getInputs()) {
    const ValueView &in = view(input, op);
    std::string count;
    std::string part = packedPart(w, rank, before, offset, input, count, op);
    fmt::format_to(out(), "  ein_move(stream, {}, {});\n  {} += {};\n", part,
                   in.name, offset, count);
  }
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

void FunctionEmitter::emitUnpack(UnpackOp op) {
  auto pattern = op.getPattern().getPattern(PatternUse::Pack);
  if (!pattern)
    return fail(op, "an unpack pattern that does not parse");
  size_t before = pattern->inputs[0].starIndex();
  const ValueView in = view(op.getInput(), op);
  std::string offset = fresh("off");
  fmt::format_to(out(), "  int64_t {} = 0;\n", offset);
  for (mlir::Value result : op.getResults()) {
    std::string count;
    std::string part =
        packedPart(in.name, in.rank, before, offset, result, count, op);
    // The part is a view of the slice at the current offset.
    ValueView v;
    v.name = fresh("v");
    v.dtype = in.dtype;
    v.rank = tensorType(result).getShape().size();
    v.owners = in.owners;
    fmt::format_to(out(), "  {} {} = {};\n  {} += {};\n",
                   viewType(v.dtype, v.rank), v.name, part, offset, count);
    if (directOutput.count(result.getAsOpaquePointer())) {
      int owner;
      std::string w = destination(result, owner);
      fmt::format_to(out(), "  ein_move(stream, {}, {});\n", w, v.name);
      define(result, w, {});
      continue;
    }
    values[result.getAsOpaquePointer()] = v;
  }
}

void FunctionEmitter::emitConstant(ConstantOp op) {
  DType t = tensorType(op.getResult()).getDType();
  int owner = newOwner();
  std::string w = fresh("w");
  fmt::format_to(
      out(), "  EinView<{0}, 0> {1} = ein_scalar<{0}>(stream, {2}, &t{3});\n",
      storageType(t), w, literal(op, t), owner);
  // Returned, it is copied into the output like any other view.
  define(op.getResult(), w, {owner});
}

void FunctionEmitter::emitSize(SizeOp op) {
  DType t = tensorType(op.getResult()).getDType();
  Expected<SizeExpr> size = parseSizeExpr(op.getSize().str());
  if (!size)
    return fail(op, size.error().message);
  int owner = newOwner();
  std::string w = fresh("w");
  fmt::format_to(out(),
                 "  EinView<{0}, 0> {1} = ein_scalar<{0}>(stream, "
                 "ein_cvt<{0}>(int64_t({2})), &t{3});\n",
                 storageType(t), w, this->size(*size, op), owner);
  define(op.getResult(), w, {owner});
}

void FunctionEmitter::emitArange(ArangeOp op) {
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_arange(stream, {});\n", w);
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

void FunctionEmitter::emitTake(TakeOp op) {
  const ValueView table = view(op.getTable(), op);
  const ValueView ids = view(op.getIds(), op);
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_take(stream, {}, {}, {}, {}, ein_status);\n", w,
                 table.name, ids.name, op.getAxis());
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

void FunctionEmitter::emitScatterAdd(ScatterAddOp op) {
  DType t = tensorType(op.getResult()).getDType();
  // atomicAdd on f16/bf16 needs sm_70/sm_80 and the emulation has none; an
  // integer gradient does not arise.
  if (t != DType::F32 && t != DType::F64)
    return fail(op, fmt::format("the gradient of take (a scatter-add) in {}: "
                                "the CUDA target adds with atomicAdd in f32 "
                                "and f64 only",
                                dtypeName(t)));
  const ValueView ids = view(op.getIds(), op);
  const ValueView updates = view(op.getUpdates(), op);
  mlir::Value result = op.getResult();
  int owner;
  std::string w = destination(result, owner);
  fmt::format_to(out(), "  ein_scatter_add(stream, {}, {}, {}, {});\n", w,
                 updates.name, ids.name, op.getAxis());
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

void FunctionEmitter::emitSlice(SliceOp op) {
  const ValueView in = view(op.getInput(), op);
  Expected<SizeExpr> start = parseSizeExpr(op.getStart().str());
  Expected<SizeExpr> stop = parseSizeExpr(op.getStop().str());
  if (!start || !stop)
    return fail(op, "a slice whose bounds do not parse");
  mlir::Value result = op.getResult();
  // The entry checked 0 <= start <= stop <= size: the view stays inside.
  ValueView v;
  v.name = fresh("v");
  v.dtype = in.dtype;
  v.rank = in.rank;
  v.owners = in.owners;
  fmt::format_to(out(), "  {} {} = ein_slice({}, {}, {}, {});\n",
                 viewType(v.dtype, v.rank), v.name, in.name, op.getDimIndex(),
                 size(*start, op), size(*stop - *start, op));
  if (directOutput.count(result.getAsOpaquePointer())) {
    int owner;
    std::string w = destination(result, owner);
    fmt::format_to(out(), "  ein_move(stream, {}, {});\n", w, v.name);
    define(result, w, {});
    return;
  }
  values[result.getAsOpaquePointer()] = v;
}

// ------------------------------------------------------------- dispatch

void FunctionEmitter::emitOp(mlir::Operation *op) {
  if (fused.count(op))
    return;
  if (auto c = mlir::dyn_cast<ConstantOp>(op)) {
    // Literals inside functors; a tensor only for other users.
    bool other = directOutput.count(c.getResult().getAsOpaquePointer()) > 0;
    for (mlir::Operation *user : c.getResult().getUsers())
      other = other || !isElementwise(user);
    if (other)
      emitConstant(c);
    return;
  }
  if (isElementwise(op))
    return emitElementwise(op);
  if (auto size = mlir::dyn_cast<SizeOp>(op))
    return emitSize(size);
  if (auto arange = mlir::dyn_cast<ArangeOp>(op))
    return emitArange(arange);
  if (auto take = mlir::dyn_cast<TakeOp>(op))
    return emitTake(take);
  if (auto slice = mlir::dyn_cast<SliceOp>(op))
    return emitSlice(slice);
  if (auto scatter = mlir::dyn_cast<ScatterAddOp>(op))
    return emitScatterAdd(scatter);
  if (auto e = mlir::dyn_cast<EinsumOp>(op))
    return emitEinsum(e);
  if (auto p = mlir::dyn_cast<PackOp>(op))
    return emitPack(p);
  if (auto u = mlir::dyn_cast<UnpackOp>(op))
    return emitUnpack(u);
  if (mlir::isa<RearrangeOp, RepeatOp, ReduceOp>(op)) {
    auto info = getTransformInfo(op);
    if (!info)
      return fail(op, "a pattern whose structure cannot be analysed");
    const ValueView &in = view(op->getOperand(0), op);
    if (auto r = mlir::dyn_cast<ReduceOp>(op)) {
      ReduceKind kind = toReduceKind(r.getKind());
      return emitReduce(r.getResult(), in, info->inputGroups,
                        info->outputGroups, info->axisSizes, kind, op);
    }
    return emitMove(op->getResult(0), in, info->inputGroups, info->outputGroups,
                    info->axisSizes, op);
  }
  fail(op, fmt::format("the op '{}' has no CUDA lowering",
                       op->getName().getStringRef().str()));
}

std::string FunctionEmitter::emit() {
  std::vector<std::string> chunks;
  std::string head;
  chunk = &head;
  fmt::format_to(out(), "extern \"C\" {} {{\n{}", entry.signature,
                 entry.checks);
  // A function with a take counts its ids out of range on the device; the
  // entry then waits for its stream to read the count (EIN_ERR_INDEX).
  if (fn.hasIndexStatus())
    *chunk += "  unsigned long long *ein_status = ein_status_begin(stream);\n";
  mlir::Block &body = func.getBody().front();
  auto ret = mlir::cast<mlir::func::ReturnOp>(body.getTerminator());
  for (auto [k, v] : llvm::enumerate(ret.getOperands()))
    if (v.getDefiningOp() && !directOutput.count(v.getAsOpaquePointer()))
      directOutput[v.getAsOpaquePointer()] = k;
  // Views of the arguments (device pointers) and of the outputs.
  size_t nParams = fn.params.size();
  for (size_t i = 0; i < entry.tensors.size(); ++i) {
    bool isOut = i >= nParams;
    DType t = isOut ? fn.values[fn.returns[i - nParams]].type.dtype
                    : fn.values[fn.params[i]].type.dtype;
    const std::string &name = entry.tensors[i];
    std::string var = isOut ? fmt::format("o{}", i - nParams) : fresh("v");
    fmt::format_to(out(),
                   "  {0} {1} = ein_make_view<{2}{3}, {4}>(({2}{3} *){5}_data, "
                   "{5}_sizes, {5}_strides);\n",
                   viewType(t, entry.ranks[i], !isOut), var,
                   isOut ? "" : "const ", storageType(t), entry.ranks[i], name);
    if (!isOut) {
      ValueView v;
      v.name = var;
      v.dtype = t;
      v.rank = entry.ranks[i];
      values[body.getArgument(i).getAsOpaquePointer()] = v;
    }
  }
  planFusion();
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : body.without_terminator())
    ops.push_back(&op);
  chunks.resize(ops.size() + 1);
  for (opIndex = 0; opIndex < ops.size(); ++opIndex) {
    chunk = &chunks[opIndex];
    emitOp(ops[opIndex]);
  }
  // Results not written in place: copies into the outputs.
  chunk = &chunks[ops.size()];
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    if (written.count(k))
      continue;
    const ValueView &value = view(v, ret);
    fmt::format_to(out(), "  ein_move(stream, o{}, {});\n", k, value.name);
  }
  // Temporaries are freed after their last reader.
  // An op inlined into a functor reads its operands where its root runs.
  std::map<mlir::Operation *, size_t> index;
  for (size_t i = 0; i < ops.size(); ++i)
    index[ops[i]] = i;
  auto readAt = [&](mlir::Operation *op) {
    while (fused.count(op) && !op->getResult(0).use_empty())
      op = *op->getResult(0).getUsers().begin();
    auto it = index.find(op);
    return it == index.end() ? ops.size() : it->second;
  };
  for (size_t i = 0; i < ops.size(); ++i)
    for (mlir::Value operand : ops[i]->getOperands())
      if (values.count(operand.getAsOpaquePointer()))
        for (int o : values[operand.getAsOpaquePointer()].owners)
          ownerLastUse[o] = std::max(ownerLastUse[o], readAt(ops[i]));
  for (mlir::Value operand : ret.getOperands())
    for (int o : values[operand.getAsOpaquePointer()].owners)
      ownerLastUse[o] = ops.size();
  std::string text = head;
  for (size_t i = 0; i <= ops.size(); ++i) {
    text += chunks[i];
    for (size_t o = 0; o < ownerLastUse.size(); ++o)
      if (ownerLastUse[o] == i || (i == ops.size() && ownerLastUse[o] > i))
        text += fmt::format("  ein_free(stream, t{});\n", o);
  }
  if (fn.hasIndexStatus())
    text += "  if (ein_status_end(stream, ein_status)) return EIN_ERR_INDEX;\n";
  text += "  return EIN_OK;\n}\n";
  return text;
}

std::string mainFunction(const CheckedFunction &fn, const CEntry &entry) {
  std::string s;
  auto out = std::back_inserter(s);
  size_t nParams = fn.params.size();
  std::vector<std::string> args, ranks, bytes;
  for (size_t i = 0; i < entry.tensors.size(); ++i) {
    bool isOut = i >= nParams;
    DType t = isOut ? fn.values[fn.returns[i - nParams]].type.dtype
                    : fn.values[fn.params[i]].type.dtype;
    args.push_back(fmt::format("({}{} *)data[{}], {}, sizes[{}], strides[{}]",
                               isOut ? "" : "const ", cType(t), i,
                               entry.ranks[i], i, i));
    ranks.push_back(std::to_string(entry.ranks[i]));
    bytes.push_back(std::to_string(dtypeBytes(t)));
  }
  fmt::format_to(
      out,
      "\nstatic int ein_main_call(void *const *data, const int64_t "
      "*const *sizes,\n    const int64_t *const *strides, "
      "cudaStream_t stream) {{\n  return ein_{}({}{}stream);\n}}\n\n"
      "int main(int argc, char **argv) {{\n"
      "  static const int ranks[] = {{{}{}0}}, bytes[] = {{{}{}0}};\n"
      "  EinMainSpec spec = {{\"{}\", {}, {}, ranks, bytes, "
      "ein_main_call}};\n  return ein_main(argc, argv, spec);\n}}\n",
      cName(fn.name), fmt::join(args, ",\n      "), args.empty() ? "" : ", ",
      fmt::join(ranks, ", "), ranks.empty() ? "" : ", ", fmt::join(bytes, ", "),
      bytes.empty() ? "" : ", ", cName(fn.name), nParams, fn.returns.size());
  return s;
}

/// Why size-generic code cannot know some size of `fn` at its entry (a name
/// that appears only in a product of free names, as `h*d`), if it cannot:
/// the entry point reads every size from its arguments.
std::optional<std::string> unreadableSize(const CheckedFunction &fn) {
  std::vector<Shape> params;
  for (unsigned id : fn.params)
    params.push_back(fn.ctx.expand(fn.values[id].type.shape));
  SizeReadPlan plan = planSizeReads(params, fn.ctx.env);
  if (!plan.unreadable.empty())
    return fmt::format("size-generic code cannot read '{}' from the arguments' "
                       "sizes (it appears only in {}); bind it with --dim",
                       plan.unreadable.front().first,
                       plan.unreadable.front().second);
  std::set<std::string> known;
  for (auto &r : plan.reads)
    known.insert(r.symbol);
  auto check = [&](const SizeExpr &e) -> std::optional<std::string> {
    for (const std::string &name : e.substitute(fn.ctx.env).symbols())
      if (!known.count(name))
        return fmt::format("size-generic code cannot compute '{}' from the "
                           "arguments' sizes; bind it with --dim",
                           name);
    return std::nullopt;
  };
  for (unsigned id : fn.returns)
    for (const Dim &d : fn.ctx.expand(fn.values[id].type.shape))
      if (auto why = d.isPack() ? std::nullopt : check(d.size))
        return why;
  for (const Constraint &c : fn.ctx.constraints) {
    if (auto why = check(c.lhs))
      return why;
    if (auto why = check(c.rhs))
      return why;
  }
  return std::nullopt;
}

} // namespace

ErrorOr<std::string> emitCUDA(const CheckedModule &module,
                              const CUDAOptions &options) {
  if (std::string clash = cNameClash(module); !clash.empty())
    return Error::program("cannot emit CUDA: " + clash);
  mlir::MLIRContext context;
  auto ir = buildVerifiedEinModule(context, module);
  if (!ir)
    return ir.error();
  mlir::PassManager pm(&context);
  pm.addPass(createSplitEinsums());
  if (mlir::failed(pm.run(**ir)))
    return Error::program("cannot emit CUDA: ein-split-einsums failed");

  // The runtime comes first, the same text in every file (the module's
  // name follows it), so that scripts/gpu-check.sh can keep it once.
  std::string source =
      "// Generated by einc build --target=cuda: CUDA C++ for nvcc\n"
      "// (-std=c++17 -lcublasLt; --fmad=false for the CPU's roundings), or\n"
      "// for a host C++17 compiler, where the CUDA built-ins are emulated.\n";
  for (const RuntimeFile &file : runtimeFiles) {
    bool isMain = std::string(file.name) == "ein_cuda_main.h";
    if (isMain && options.mainFunction.empty())
      continue;
    source += fmt::format("\n// ---- {}\n", file.name);
    source += file.text;
  }
  // The module's part can follow another's in one translation unit (the
  // runtime has include guards; functors are named after their function).
  source += fmt::format("\n// ---- the module\n// {}\n#ifndef "
                        "EIN_ENTRY_PREAMBLE\n#define EIN_ENTRY_PREAMBLE\n",
                        module.path);
  source += cEntryPreamble();
  source += "#endif\n";
  std::string functors, functions;
  for (const CheckedFunction &fn : module.functions) {
    if (auto why = unreadableSize(fn))
      return Error::at(ErrorKind::Program, module.path, fn.loc.line,
                       fn.loc.col, *why);
    int functorCount = 0;
    auto func = (*ir)->lookupSymbol<mlir::func::FuncOp>(fn.name);
    if (!func)
      return Error::program(
          fmt::format("cannot emit CUDA: no IR for function '{}'", fn.name));
    FunctionEmitter emitter(fn, func, options, functors, functorCount);
    functions += "\n" + emitter.emit();
    if (const auto &e = emitter.error()) {
      // An op inlined from a call sits in a CallSiteLoc: report it where it
      // is written (maybe in an imported file) and name the outermost call.
      mlir::Location where = e->op->getLoc();
      std::optional<mlir::FileLineColLoc> call;
      while (auto site = mlir::dyn_cast<mlir::CallSiteLoc>(where)) {
        if (!call)
          call = mlir::dyn_cast<mlir::FileLineColLoc>(site.getCaller());
        where = site.getCallee();
      }
      if (auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(where))
        return Error::at(
            ErrorKind::Program, loc.getFilename().str(), loc.getLine(),
            loc.getColumn(),
            fmt::format("cannot emit CUDA for '{}'{}: {}",
                        e->op->getName().getStringRef().str(),
                        call ? fmt::format(" (inlined into '{}' from the call "
                                           "at {}:{}:{})",
                                           fn.name, call->getFilename().str(),
                                           call->getLine(), call->getColumn())
                             : std::string(),
                        e->what));
      return Error::program(fmt::format("cannot emit CUDA for '{}' in '{}': {}",
                                        e->op->getName().getStringRef().str(),
                                        fn.name, e->what));
    }
  }
  source += functors;
  source += functions;
  if (!options.mainFunction.empty()) {
    const CheckedFunction *fn = module.find(options.mainFunction);
    if (!fn)
      return Error::program(
          fmt::format("no function named '{}'", options.mainFunction));
    source += mainFunction(*fn, cEntry(*fn));
  }
  return source;
}

std::string cudaHeader(const CheckedModule &module, const std::string &guard) {
  std::string h = fmt::format(
      "/* Generated by einc build --target=cuda from {}: C entry points of\n"
      " * the CUDA source built with it. Each tensor is passed as (data, "
      "rank,\n"
      " * sizes, strides) with data a device pointer, strides in elements "
      "(any\n"
      " * non-negative values); the work is queued on `stream`. Every "
      "function\n"
      " * returns 0, or an EIN_ERR_* code before queuing anything, except\n"
      " * EIN_ERR_INDEX: a function with a take waits for its stream and\n"
      " * returns it when an id was out of range (the outputs then hold\n"
      " * unspecified values; nothing outside the tensors is read). */\n"
      "#ifndef {}\n#define {}\n\n#include <stdint.h>\n"
      "/* Under the source's CUDA emulation (a host compiler), its "
      "cudaStream_t. */\n"
      "#ifndef EIN_CUDA_EMU_H\n#include <cuda_runtime.h>\n#endif\n\n"
      "#ifdef __cplusplus\nextern \"C\" {{\n"
      "#endif\n\n#define EIN_OK 0\n#define EIN_ERR_SIZE 1\n"
      "#define EIN_ERR_STRIDE 2\n#define EIN_ERR_NULL 3\n#define EIN_ERR_ALIAS "
      "4\n"
      "#define EIN_ERR_RANK 5\n#define EIN_ERR_INDEX 6\n\n",
      module.path, guard, guard);
  for (const CheckedFunction &fn : module.functions)
    h += cEntry(fn, ",\n    cudaStream_t stream").signature + ";\n\n";
  h += "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return h;
}

} // namespace ein
