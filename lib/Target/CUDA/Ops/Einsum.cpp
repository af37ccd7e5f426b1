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

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
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
  std::string gemm =
      !isFloat(dtype) ? "tiled integer GEMM kernel" : "cuBLASLt matmul";
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

namespace {

/// The GEMM's operand and result types for operands `ti` and result `to`
/// (cuBLASLt's combinations).
std::pair<DType, DType> gemmTypes(DType ti, DType to) {
  if (!isFloat(ti))
    return {to, to}; // integers: one dtype, wrapping
  if (to == DType::F64 || ti == DType::F64)
    return {DType::F64, DType::F64};
  if (ti == DType::F8E5M2) // e5m2 x e5m2 has no cuBLASLt kernel; exact in f16
    return {DType::F16, DType::F32};
  if (!(ti == to && !isFp8(to)) && !(isLowFloat(ti) && to == DType::F32))
    return {ti, DType::F32};
  return {ti, to};
}

/// The value of a constant, if `v` is one (a finite float or an integer).
std::optional<double> constantValue(mlir::Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(c.getValue()))
    return double(i.getValue().getSExtValue());
  double d = mlir::cast<mlir::FloatAttr>(c.getValue()).getValueAsDouble();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

} // namespace

/// Chooses the elementwise ops each float contraction computes in its
/// epilogue (EinEpilogue, ein_cuda_contract.cuh: cuBLASLt's
/// CUBLASLT_MATMUL_DESC_EPILOGUE where it fits, else one kernel over C):
/// from the product up, each step the single reader of the last, of its
/// shape and dtype, optionally `* s` (s a constant: alpha; in f16/bf16 a
/// power of two, exact in the dtype as ein's product rounds it), then
/// `+ bias` (a tensor computed before the contraction that broadcasts
/// into C), then `relu`. gelu is not folded: cuBLASLt's GELU epilogue is
/// the tanh approximation, and its f32 formula is not ein_gelu_tanh's.
void FunctionEmitter::planEpilogues() {
  if (!options.fusion)
    return;
  for (mlir::Operation &o : func.getBody().front()) {
    auto op = mlir::dyn_cast<EinsumOp>(o);
    if (!op || op.getInputs().size() != 2)
      continue;
    DType ti = tensorType(op.getInputs()[0]).getDType();
    DType to = tensorType(op.getResult()).getDType();
    auto [gemmIn, gemmOut] = gemmTypes(ti, to);
    if (gemmIn != ti || gemmOut != to ||
        !(to == DType::F32 || to == DType::F16 || to == DType::BF16))
      continue;
    Epilogue epi;
    mlir::Value cur = op.getResult();
    // The single elementwise reader of `cur` reading it in place, if its
    // function is `name`.
    auto next = [&](const char *name) -> ElementwiseOp {
      if (!cur.hasOneUse())
        return nullptr;
      auto user = mlir::dyn_cast<ElementwiseOp>(*cur.getUsers().begin());
      if (!user || user.getInfo().name != name ||
          tensorType(user.getResult()).getDType() != to ||
          !readsInPlace(user, cur))
        return nullptr;
      return user;
    };
    if (auto mul = next("mul")) {
      mlir::Value other = mul.getInputs()[mul.getInputs()[0] == cur ? 1 : 0];
      auto s = constantValue(other);
      int exponent = 0;
      bool exact =
          s && (to == DType::F32 || (std::frexp(*s, &exponent) == 0.5 &&
                                     exponent > -13 && exponent < 16));
      if (exact && other != cur) {
        epi.alpha = to == DType::F32 ? double(float(*s)) : *s;
        epi.ops.push_back(mul);
        cur = mul.getResult();
      }
    }
    if (auto add = next("add")) {
      unsigned k = add.getInputs()[0] == cur ? 1 : 0;
      mlir::Value bias = add.getInputs()[k];
      mlir::Operation *def = bias.getDefiningOp();
      auto al = alignment(add, k);
      bool aligned = std::find(al.begin(), al.end(), -1) == al.end();
      if (bias != cur && aligned && (!def || def->isBeforeInBlock(op)) &&
          !(def && mlir::isa<ConstantOp>(def))) {
        epi.bias = bias;
        epi.biasAlignment = al;
        epi.ops.push_back(add);
        cur = add.getResult();
      }
    }
    if (auto relu = next("relu")) {
      epi.relu = true;
      epi.ops.push_back(relu);
      cur = relu.getResult();
    }
    if (epi.ops.empty())
      continue;
    for (mlir::Operation *member : epi.ops)
      inEpilogue.insert(member);
    epi.result = cur;
    epilogues[op] = epi;
  }
}

/// C[batch, m, n] = sum_k A[batch, m, k] B[batch, k, n] over the elementary
/// axes; an axis of one operand alone is a k axis the other reads with
/// stride 0.
void FunctionEmitter::emitContraction(EinsumOp op, const EinsumInfo &info) {
  auto epilogue = epilogues.find(op);
  mlir::Value result =
      epilogue == epilogues.end() ? op.getResult() : epilogue->second.result;
  DType to = tensorType(result).getDType();
  ValueView a = view(op.getInputs()[0], op), b = view(op.getInputs()[1], op);
  DType ti = a.dtype;
  auto [gemmIn, gemmOut] = gemmTypes(ti, to);
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
  std::string epi;
  if (epilogue != epilogues.end()) {
    epi = ", " + emitEpilogue(epilogue->second, info, rowsC, op);
  }
  fmt::format_to(out(),
                 "  {{\n    size_t bytes = 0;\n    void *workspace = "
                 "ein_workspace(&bytes);\n    ein_contract(stream, {}, {}, {}, "
                 "{}, {}, workspace, bytes{});\n  }}\n",
                 roles, pa, pb, pc, options.allowTf32 ? "true" : "false", epi);
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

/// Declares the EinEpilogue of a contraction writing C picked as the
/// elementary axes `rowsC`; returns its name.
std::string FunctionEmitter::emitEpilogue(const Epilogue &epi,
                                          const EinsumInfo &info,
                                          const std::vector<std::string> &rowsC,
                                          mlir::Operation *op) {
  DType to = tensorType(epi.result).getDType();
  std::string name = fresh("epi");
  fmt::format_to(out(), "  EinEpilogue<{}, {}> {};\n", storageType(to),
                 rowsC.size(), name);
  std::vector<std::string> bits;
  if (epi.bias)
    bits.push_back("EIN_EPI_BIAS");
  if (epi.relu)
    bits.push_back("EIN_EPI_RELU");
  if (bits.empty())
    bits.push_back("0");
  fmt::format_to(out(), "  {}.bits = {};\n  {}.alpha = {:a};\n", name,
                 fmt::join(bits, " | "), name, epi.alpha);
  if (epi.bias) {
    // The bias split into the axes of the output dims it lands on, then
    // picked as C (stride 0 along the axes it lacks).
    const ValueView &bias = view(epi.bias, op);
    std::vector<std::vector<std::string>> groups;
    for (int d : epi.biasAlignment)
      groups.push_back(info.outputGroups[d]);
    std::vector<std::string> axes;
    std::string e =
        split(bias.name, bias.dtype, true, groups, info.axisSizes, axes, op);
    std::string p = pick(e, bias.dtype, axes, rowsC,
                         axisSizeTexts(rowsC, info.axisSizes, op));
    fmt::format_to(out(), "  {}.bias = {};\n", name, p);
  }
  return name;
}

#endif // EIN_CUDA_DESCRIBE_ONLY

} // namespace cuda
} // namespace ein
