// The CUDA target's column of `einc report --target=cuda`: what each op
// becomes in the generated source (docs/cuda.md), planned by the target's
// own code: a contraction's GEMM roles and the runtime's planner
// (GemmRoles.h), as EmitCUDA and the generated code use them. MLIR-free, so
// that the report's fuzzer compiles it in.
#include "ein/Target/CUDA/DescribeCUDA.h"

#include "ein/Analysis/Cost.h"
#include "ein/Target/CUDA/GemmRoles.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ein {

namespace {

/// The sizes of an op's axes for layout questions: the known ones capped at
/// 2^10 (whether a merge works depends on which sizes are 1, not on how
/// large the others are, and strides stay far from overflow), unknown ones
/// 2 (so that no size 1 merges by accident).
std::map<std::string, int64_t>
layoutSizes(const std::map<std::string, SizeExpr> &axisSizes,
            const Bindings &env) {
  std::map<std::string, int64_t> sizes;
  for (auto &[axis, e] : axisSizes) {
    auto v = e.evaluate(env);
    sizes[axis] = !v                  ? 2
                  : *v > Int(1 << 10) ? 1 << 10
                                      : static_cast<int64_t>(*v);
  }
  return sizes;
}

/// The elementary axes of `groups` with the strides of a row-major tensor
/// whose dims are those groups; false when a stride overflows.
bool rowMajorAxes(const std::vector<std::vector<std::string>> &groups,
                  const std::map<std::string, int64_t> &sizes,
                  std::vector<std::string> &axes,
                  std::vector<int64_t> &strides) {
  axes.clear();
  strides.clear();
  int64_t stride = 1;
  for (size_t d = groups.size(); d-- > 0;)
    for (size_t i = groups[d].size(); i-- > 0;) {
      axes.insert(axes.begin(), groups[d][i]);
      strides.insert(strides.begin(), stride);
      if (__builtin_mul_overflow(stride, sizes.at(groups[d][i]), &stride))
        return false;
    }
  return true;
}

/// What a pairwise einsum becomes on CUDA for row-major operands and
/// result: cuBLASLt, plus the operands ein_gemm_plan has to permute first.
/// (An operand that is a view of a rearrange is planned at run time on its
/// real strides; the report assumes row-major.)
std::string cudaContraction(const CheckedOp &op, const CheckedFunction &fn) {
  const EinsumInfo &info = *op.einsum;
  DType dtype = fn.values[op.operands[0]].type.dtype;
  std::map<std::string, int64_t> sizes =
      layoutSizes(info.axisSizes, fn.ctx.env);
  std::vector<std::string> a, b, c;
  std::vector<int64_t> sa, sb, sc;
  std::string gemm = dtype == DType::I32 || dtype == DType::I64
                         ? "tiled integer GEMM kernel"
                         : "cuBLASLt matmul";
  // The planner multiplies sizes of all the axes (a broadcast copy): they
  // must fit in 64 bits.
  int64_t all = 1;
  for (auto &[axis, size] : sizes)
    if (__builtin_mul_overflow(all, size, &all))
      return gemm;
  if (!rowMajorAxes(info.operandGroups[0], sizes, a, sa) ||
      !rowMajorAxes(info.operandGroups[1], sizes, b, sb) ||
      !rowMajorAxes(info.outputGroups, sizes, c, sc))
    return gemm;
  // The roles and the plan are the CUDA target's own (GemmRoles.h).
  GemmRoles roles = splitGemmRoles(a, b, c);
  bool fp8 = dtype == DType::F8E4M3 || dtype == DType::F8E5M2;
  std::optional<GemmPlanSummary> plan =
      planGemm(roles, {a, sa}, {b, sb}, {c, sc}, sizes, fp8);
  if (!plan)
    return "cuBLASLt matmul";
  int copies = plan->copies;
  std::string text = gemm;
  if (plan->batchLoop)
    text += " (batch loop)";
  // A permute reads and writes the operand once: its bytes, when known.
  const char *names[3] = {"A", "B", "C"};
  const std::vector<std::vector<std::string>> *groups[3] = {
      &info.operandGroups[0], &info.operandGroups[1], &info.outputGroups};
  for (int x = 0; x < 3; ++x) {
    if (!(copies & (1 << x)))
      continue;
    SizeExpr elements = SizeExpr::constant(1);
    for (auto &group : *groups[x])
      for (auto &axis : group)
        elements = elements * info.axisSizes.at(axis);
    auto count = elements.evaluate(fn.ctx.env);
    Int bytes = 0;
    bool known =
        count && !elements.overflowed() &&
        !__builtin_mul_overflow(*count, Int(2 * dtypeBytes(dtype)), &bytes);
    text += known
                ? fmt::format(" + permute {} ({} B)", names[x], toString(bytes))
                : fmt::format(" + permute {}", names[x]);
  }
  return text;
}

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

/// What `op` becomes in the CUDA target's source (docs/cuda.md). A result
/// the function returns is always written (copied) into the output.
std::string cudaLowering(const CheckedOp &op, const CheckedFunction &fn) {
  // The cost model's verdicts: whether a rearrange is a view at all, and
  // whether a one-operand einsum computes anything.
  auto cost = [&] { return computeCost(costInputOf(op, fn), fn.ctx.env); };
  switch (op.kind) {
  case OpKind::Rearrange:
    return cost().view || cudaRearrangeIsView(op, fn)
               ? "view"
               : "ein_copy (tiled transpose)";
  case OpKind::Repeat:
    return "ein_copy (stride-0 read)";
  case OpKind::Reduce:
    return fmt::format("ein_reduce {}", reduceKindName(op.reduction));
  case OpKind::Pack:
    return fmt::format("ein_copy x{} into slices", op.operands.size());
  case OpKind::Unpack:
    return "views";
  case OpKind::Slice:
    return "view (ein_slice)";
  case OpKind::ScatterAdd:
    return "ein_scatter_add (atomicAdd)";
  case OpKind::Einsum: {
    size_t n = op.operands.size();
    if (n == 2 && op.einsum)
      return cudaContraction(op, fn);
    if (n > 2)
      return fmt::format("{} cuBLASLt matmuls", n - 1);
    std::optional<Int> flops = cost().flops.value;
    return flops && *flops == 0 ? "view or ein_copy" : "ein_reduce sum";
  }
  case OpKind::Elementwise:
  case OpKind::Cast:
  case OpKind::Constant:
  case OpKind::Size:
  case OpKind::Arange:
  case OpKind::Take:
    return "ein_map (fused)";
  }
  return ""; // every case returns: for GCC's -Wreturn-type
}

} // namespace

TargetColumn describeCUDA(const CheckedFunction &fn) {
  TargetColumn column;
  column.heading = "CUDA";
  column.field = "cuda";
  column.callCell = "-";
  for (const CheckedOp &op : fn.ops) {
    // Each op planned once (a contraction runs the GEMM planner); the
    // report shows no constant.
    std::string cell =
        op.kind == OpKind::Constant ? std::string() : cudaLowering(op, fn);
    column.values.push_back(cell);
    column.cells.push_back(std::move(cell));
  }
  return column;
}

} // namespace ein
