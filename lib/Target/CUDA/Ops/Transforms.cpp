// The CUDA target's rearrange, repeat and reduce: what each becomes in the
// generated source (views of the input's elementary axes, ein_merge or a
// copy, ein_reduce) and in the report's CUDA column.
#include "Describe.h"
#ifndef EIN_CUDA_DESCRIBE_ONLY
#include "FunctionEmitter.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace ein {
namespace cuda {

// ------------------------------------------------------------- describe

namespace {

/// Whether a rearrange of a row-major input is a view in the CUDA target:
/// every output dim's axes merge into one strided dim (ein_merge).
bool cudaRearrangeIsView(const CheckedOp &op, const CheckedFunction &fn) {
  if (!op.transform)
    return false;
  const TransformInfo &info = *op.transform;
  std::map<std::string, int64_t> sizes =
      layoutSizes(info.axisSizes, fn.ctx.env);
  std::vector<std::string> axes;
  std::vector<int64_t> strides;
  if (!rowMajorAxes(info.inputGroups, sizes, axes, strides))
    return false;
  auto strideOf = [&](const std::string &x) {
    auto it = std::find(axes.begin(), axes.end(), x);
    return it == axes.end() ? 0 : strides[it - axes.begin()];
  };
  for (auto &group : info.outputGroups) {
    int64_t inner = -1, innerSize = 1;
    for (size_t i = group.size(); i-- > 0;) {
      if (sizes.at(group[i]) == 1)
        continue;
      int64_t st = strideOf(group[i]), expect = 0;
      if (inner >= 0 &&
          (__builtin_mul_overflow(inner, innerSize, &expect) || st != expect))
        return false;
      inner = st;
      innerSize = sizes.at(group[i]);
    }
  }
  return true;
}

} // namespace

std::string describeRearrange(const CheckedOp &op, const CheckedFunction &fn) {
  // The cost model's verdict first: whether the rearrange is a view at all.
  return describedCost(op, fn).view || cudaRearrangeIsView(op, fn)
             ? "view"
             : "ein_copy (tiled transpose)";
}

std::string describeRepeat(const CheckedOp &, const CheckedFunction &) {
  return "ein_copy (stride-0 read)";
}

std::string describeReduce(const CheckedOp &op, const CheckedFunction &) {
  return fmt::format("ein_reduce {}", reduceKindName(op.reduction));
}

#ifndef EIN_CUDA_DESCRIBE_ONLY
// ------------------------------------------------------------- emit

const char *runtimeReduceKind(ReduceKind kind) {
  // any and all on bool are max and min (false < true), with the
  // identities false and true. var is two passes (ein_reduce_var).
  switch (kind) {
  case ReduceKind::Sum:
    return "EIN_REDUCE_SUM";
  case ReduceKind::Mean:
    return "EIN_REDUCE_MEAN";
  case ReduceKind::Max:
  case ReduceKind::Any:
    return "EIN_REDUCE_MAX";
  case ReduceKind::Min:
  case ReduceKind::All:
    return "EIN_REDUCE_MIN";
  case ReduceKind::Prod:
    return "EIN_REDUCE_PROD";
  case ReduceKind::Var:
    return nullptr;
  }
  return nullptr; // every case returns: for GCC's -Wreturn-type
}

void FunctionEmitter::emitTransform(mlir::Operation *op) {
  auto info = getTransformInfo(op);
  if (!info)
    return fail(op, "a pattern whose structure cannot be analysed");
  const ValueView &in = view(op->getOperand(0), op);
  if (auto r = mlir::dyn_cast<ReduceOp>(op)) {
    ReduceKind kind = toReduceKind(r.getKind());
    return emitReduction(r.getResult(), in, info->inputGroups,
                         info->outputGroups, info->axisSizes, kind, op);
  }
  return emitMove(op->getResult(0), in, info->inputGroups, info->outputGroups,
                  info->axisSizes, op);
}

void FunctionEmitter::emitRearrange(RearrangeOp op) { emitTransform(op); }

void FunctionEmitter::emitRepeat(RepeatOp op) { emitTransform(op); }

void FunctionEmitter::emitReduce(ReduceOp op) { emitTransform(op); }

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

void FunctionEmitter::emitReduction(
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
  const char *k = runtimeReduceKind(kind);
  const char *acc = accumulatorType(to);
  if (k)
    fmt::format_to(out(), "  ein_reduce<{}, {}>(stream, {}, {});\n", k, acc,
                   target, p);
  else
    fmt::format_to(out(), "  ein_reduce_var<{}>(stream, {}, {});\n", acc,
                   target, p);
  define(result, w, owner >= 0 ? std::vector<int>{owner} : std::vector<int>{});
}

#endif // EIN_CUDA_DESCRIBE_ONLY

} // namespace cuda
} // namespace ein
