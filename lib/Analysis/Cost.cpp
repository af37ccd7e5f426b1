// The cost model: FLOP and byte counts per op (each op's rule in its family
// file, lib/Sema/Ops; an einsum of 3+ operands along the order of
// lib/Shape/ContractionOrder.cpp) and the device table (conventions in
// docs/cost-model.md).
#include "ein/Analysis/Cost.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace ein {

Quantity Quantity::of(const SizeExpr &e, const Bindings &env) {
  return Quantity{e, e.evaluate(env)};
}

std::string Quantity::str() const {
  return value ? toString(*value) : expr.str();
}

Quantity OpCost::bytes() const {
  Quantity q;
  q.expr = bytesRead.expr + bytesWritten.expr;
  if (bytesRead.value && bytesWritten.value)
    q.value = checkedAdd(*bytesRead.value, *bytesWritten.value);
  return q;
}

namespace {

struct PathStep {
  std::set<std::string> result;
  SizeExpr flops;
};

/// Contracting operands a and b (`terms` 2), or summing a alone (`terms` 1,
/// b == a), given what the rest still needs.
PathStep contract(const std::set<std::string> &a,
                  const std::set<std::string> &b,
                  const std::set<std::string> &needed,
                  const std::map<std::string, SizeExpr> &sizes, size_t terms) {
  std::set<std::string> all = a;
  all.insert(b.begin(), b.end());
  PathStep step;
  for (auto &i : all)
    if (needed.count(i))
      step.result.insert(i);
  step.flops =
      contractionFlops(all, step.result.size() != all.size(), terms, sizes);
  return step;
}

std::set<std::string> neededBy(const std::vector<std::set<std::string>> &ops,
                               size_t skipA, size_t skipB,
                               const std::vector<std::string> &output) {
  std::set<std::string> needed(output.begin(), output.end());
  for (size_t k = 0; k < ops.size(); ++k)
    if (k != skipA && k != skipB)
      needed.insert(ops[k].begin(), ops[k].end());
  return needed;
}

/// An einsum of 3+ operands counts along its contraction order, not as one
/// loop nest (the rule's count, kept as the naive one).
void countAlongContractionOrder(const EinsumInfo &info, const Bindings &env,
                                CostCounts &counts, OpCost &c) {
  c.naiveFlops = Quantity::of(counts.flops, env);
  c.path = contractionOrder(info, env);
  std::vector<std::set<std::string>> live;
  for (auto &axes : info.operandAxes)
    live.emplace_back(axes.begin(), axes.end());
  SizeExpr flops;
  for (auto &ij : c.path) {
    unsigned i = ij[0], j = ij.back(); // j == i: one operand
    auto step =
        contract(live[i], live[j], neededBy(live, i, j, info.outputAxes),
                 info.axisSizes, i == j ? 1 : 2);
    flops = flops + step.flops;
    live = afterContracting(live, i, j, step.result);
  }
  counts.flops = flops;
}

} // namespace

OpCost computeCost(const CostInput &in, const Bindings &env) {
  OpCost c;
  CostCounts counts;
  for (auto &t : in.inputs)
    counts.read = counts.read + bytesOf(t);
  for (auto &t : in.outputs)
    counts.written = counts.written + bytesOf(t);
  // The op's own rule, in its family file (include/ein/Sema/OpCost.h).
  switch (in.kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    costOf##Kind(in, env, counts);                                             \
    break;
#include "ein/Sema/Ops.def"
  }
  if (in.kind == OpKind::Einsum && in.einsum->operandAxes.size() > 2)
    countAlongContractionOrder(*in.einsum, env, counts, c);
  c.view = counts.view;
  c.flops = Quantity::of(counts.flops, env);
  if (counts.overridesFlopsValue)
    c.flops.value = counts.flopsValue;
  c.bytesRead = Quantity::of(counts.read, env);
  c.bytesWritten = Quantity::of(counts.written, env);
  return c;
}

double DeviceSpec::peakFor(DType dtype) const {
  switch (dtypeInfo(dtype).peak) {
  case PeakSlot::F64:
    return peakF64;
  case PeakSlot::F32:
    return peakF32;
  case PeakSlot::F16:
    return peakF16;
  case PeakSlot::BF16:
    return peakBF16;
  case PeakSlot::F8:
    return peakF8 > 0 ? peakF8 : peakF16; // no fp8 units: runs at 16-bit rate
  }
  return peakF32;
}

const std::vector<DeviceSpec> &deviceTable() {
  // Dense (no sparsity) tensor-core peaks of the SXM parts, from NVIDIA's
  // data sheets; f32 is the non-tensor-core rate (no TF32).
  static const std::vector<DeviceSpec> table = {
      {"a100", "NVIDIA A100 SXM 80GB", 19.5e12, 19.5e12, 312e12, 312e12, 0,
       2.039e12},
      {"h100", "NVIDIA H100 SXM 80GB", 67e12, 67e12, 989.4e12, 989.4e12,
       1978.9e12, 3.35e12},
      {"h200", "NVIDIA H200 SXM 141GB", 67e12, 67e12, 989.4e12, 989.4e12,
       1978.9e12, 4.8e12},
  };
  return table;
}

const DeviceSpec *findDevice(const std::string &name) {
  for (auto &d : deviceTable())
    if (d.name == name)
      return &d;
  return nullptr;
}

const DeviceSpec &defaultDevice() { return deviceTable()[1]; }

std::string deviceNames(const std::string &separator, bool markDefault) {
  std::string out;
  for (auto &d : deviceTable()) {
    out += (out.empty() ? "" : separator) + d.name;
    if (markDefault && &d == &defaultDevice())
      out += " (default)";
  }
  return out;
}

const DeviceSpec *findDeviceForGPU(const std::string &gpuName) {
  const DeviceSpec *spec = nullptr;
  for (const DeviceSpec &d : deviceTable()) {
    std::string key = d.name; // "h100" is in "NVIDIA H100 80GB HBM3"
    for (char &c : key)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (gpuName.find(key) != std::string::npos)
      spec = &d;
  }
  return spec;
}

double rooflineSeconds(double flops, double bytes, double peak,
                       double bandwidth) {
  double compute = peak > 0 ? flops / peak : 0;
  double memory = bandwidth > 0 ? bytes / bandwidth : 0;
  return std::max(compute, memory);
}

CostInput costInputOf(const CheckedOp &op, const CheckedFunction &fn) {
  CostInput in;
  in.kind = op.kind;
  in.fn = op.fn;
  // Variadics of known rank count as their dims (as in the IR), not as
  // one symbol standing for their product.
  auto expanded = [&](unsigned id) {
    const TensorType &t = fn.values[id].type;
    return TensorType{fn.ctx.expand(t.shape), t.dtype};
  };
  for (unsigned id : op.operands)
    in.inputs.push_back(expanded(id));
  for (unsigned id : op.results)
    in.outputs.push_back(expanded(id));
  if (op.transform)
    in.transform = &*op.transform;
  if (op.einsum)
    in.einsum = &*op.einsum;
  in.reduction = op.reduction;
  if (op.kind == OpKind::Unpack)
    in.packAxesBefore = op.parsed.inputs[0].starIndex();
  if (op.kind == OpKind::Slice)
    in.packAxesBefore = op.sliceAxis >= 0
                            ? op.sliceAxis
                            : op.sliceAxis + in.inputs[0].shape.size();
  return in;
}

namespace {

SizeExpr splitSize(const SizeExpr &size, const std::string &axis) {
  return SizeExpr::quotient(size, SizeExpr::symbol(axis));
}

/// Divides the sizes of the elementary axes that an operand dim split on a
/// mesh axis splits (its major one), once each.
void splitAxes(const CheckedOp &op, const CheckedFunction &fn,
               const std::vector<std::vector<std::vector<std::string>>> &groups,
               std::map<std::string, SizeExpr> &sizes) {
  std::set<std::string> done;
  for (size_t k = 0; k < op.operands.size() && k < groups.size(); ++k) {
    const ValueLayout &l = fn.layouts[op.operands[k]];
    for (size_t j = 0; j < l.dims.size() && j < groups[k].size(); ++j) {
      if (l.dims[j].empty() || groups[k][j].empty())
        continue;
      const std::string &e = groups[k][j].front();
      if (done.insert(e).second && sizes.count(e))
        sizes[e] = splitSize(sizes[e], l.dims[j]);
    }
  }
}

} // namespace

OpCost perRankCost(const CheckedOp &op, const CheckedFunction &fn) {
  CostInput in = costInputOf(op, fn);
  if (fn.layouts.size() != fn.values.size())
    return computeCost(in, fn.ctx.env);
  auto local = [&](TensorType &t, unsigned id) {
    const ValueLayout &l = fn.layouts[id];
    if (l.dims.size() != t.shape.size())
      return;
    for (size_t i = 0; i < l.dims.size(); ++i)
      if (!l.dims[i].empty())
        t.shape[i].size = splitSize(t.shape[i].size, l.dims[i]);
  };
  for (size_t k = 0; k < op.operands.size(); ++k)
    local(in.inputs[k], op.operands[k]);
  for (size_t k = 0; k < op.results.size(); ++k)
    local(in.outputs[k], op.results[k]);
  std::optional<EinsumInfo> einsum;
  std::optional<TransformInfo> transform;
  if (op.einsum) {
    einsum = *op.einsum;
    splitAxes(op, fn, einsum->operandGroups, einsum->axisSizes);
    in.einsum = &*einsum;
  }
  if (op.transform) {
    transform = *op.transform;
    splitAxes(op, fn, {transform->inputGroups}, transform->axisSizes);
    in.transform = &*transform;
  }
  return computeCost(in, fn.ctx.env);
}

} // namespace ein
