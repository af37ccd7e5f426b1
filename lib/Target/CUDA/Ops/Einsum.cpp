// The CUDA target's einsum (after ein-split-einsums: one or two operands):
// what it becomes in the generated source (a pairwise einsum ein_contract
// on cuBLASLt with the GEMM roles of GemmRoles.h, one operand a move or a
// sum) and in the report's CUDA column, planned by the same GEMM planner.
#include "Describe.h"
#include "ein/Target/CUDA/GemmRoles.h"
#ifndef EIN_CUDA_DESCRIBE_ONLY
#include "FunctionEmitter.h"
#endif

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ein {
namespace cuda {

// ------------------------------------------------------------- describe

namespace {

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

} // namespace

std::string describeEinsum(const CheckedOp &op, const CheckedFunction &fn) {
  size_t n = op.operands.size();
  if (n == 2 && op.einsum)
    return cudaContraction(op, fn);
  if (n > 2)
    return fmt::format("{} cuBLASLt matmuls", n - 1);
  // The cost model's verdict: whether a one-operand einsum computes
  // anything.
  std::optional<Int> flops = describedCost(op, fn).flops.value;
  return flops && *flops == 0 ? "view or ein_copy" : "ein_reduce sum";
}

#ifndef EIN_CUDA_DESCRIBE_ONLY
// ------------------------------------------------------------- emit

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
    emitReduction(result, in, info->operandGroups[0], info->outputGroups,
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

#endif // EIN_CUDA_DESCRIBE_ONLY

} // namespace cuda
} // namespace ein
