// The cost model: FLOP and byte counts per op (an einsum of 3+ operands
// along the order of ContractionOrder.cpp) and the device table
// (conventions in docs/cost-model.md).
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

SizeExpr bytesOf(const TensorType &t) {
  return numElements(t.shape) * SizeExpr::constant(dtypeBytes(t.dtype));
}

std::vector<std::string> nonUnit(const std::vector<std::string> &axes,
                                 const std::map<std::string, SizeExpr> &sizes) {
  std::vector<std::string> out;
  for (auto &a : axes) {
    auto it = sizes.find(a);
    if (it != sizes.end() && it->second.constantValue() == Int(1))
      continue;
    out.push_back(a);
  }
  return out;
}

/// A rearrange is a view when elementary axes keep their order: it only
/// splits or merges adjacent axes. A repeat is a view when, in addition, each
/// new axis stands in a dim of its own (a stride-0 broadcast).
bool isView(const CostInput &in) {
  const TransformInfo &t = *in.transform;
  std::set<std::string> inputSet(t.inputAxes.begin(), t.inputAxes.end());
  std::vector<std::string> kept;
  for (auto &a : t.outputAxes)
    if (inputSet.count(a))
      kept.push_back(a);
  if (in.kind == OpKind::Repeat) {
    for (auto &group : t.outputGroups) {
      bool hasNew = false, hasOld = false;
      for (auto &a : group)
        (inputSet.count(a) ? hasOld : hasNew) = true;
      if (hasNew && hasOld)
        return false;
    }
  }
  return nonUnit(t.inputAxes, t.axisSizes) == nonUnit(kept, t.axisSizes);
}

/// opt_einsum's count for one contraction over `indices`: the product of
/// their sizes times (terms - 1, at least 1) plus one if something is summed.
SizeExpr contractionFlops(const std::set<std::string> &indices, bool inner,
                          size_t terms,
                          const std::map<std::string, SizeExpr> &sizes) {
  SizeExpr product = SizeExpr::constant(1);
  for (auto &i : indices)
    product = product * sizes.at(i);
  Int factor = std::max<Int>(1, static_cast<Int>(terms) - 1) + (inner ? 1 : 0);
  return product * SizeExpr::constant(factor);
}

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

} // namespace

OpCost computeCost(const CostInput &in, const Bindings &env) {
  OpCost c;
  SizeExpr flops, read, written;
  for (auto &t : in.inputs)
    read = read + bytesOf(t);
  for (auto &t : in.outputs)
    written = written + bytesOf(t);
  SizeExpr outElems =
      in.outputs.empty() ? SizeExpr() : numElements(in.outputs[0].shape);

  switch (in.kind) {
  case OpKind::Rearrange:
  case OpKind::Repeat:
    c.view = in.transform && isView(in);
    if (c.view)
      read = written = SizeExpr();
    break;
  case OpKind::Reduce: {
    SizeExpr inElems = numElements(in.inputs[0].shape);
    // n-1 combining operations per output over n elements: N - M in all,
    // plus what the kind's finish (ReduceKinds.def) costs.
    switch (reduceFinish(in.reduction)) {
    case ReduceFinish::None:
      flops = inElems - outElems;
      break;
    case ReduceFinish::Mean: // one division per output
      flops = inElems - outElems + outElems;
      break;
    case ReduceFinish::Variance:
      // Two passes: the mean (N - M adds, M divisions), then per element a
      // subtraction and a square (2N), their sum and the division (N - M +
      // M): 4N. The second pass reads the input again.
      flops = SizeExpr::constant(4) * inElems;
      read = read + bytesOf(in.inputs[0]);
      break;
    }
    break;
  }
  case OpKind::Einsum: {
    const EinsumInfo &info = *in.einsum;
    std::set<std::string> all;
    for (auto &axes : info.operandAxes)
      all.insert(axes.begin(), axes.end());
    std::set<std::string> out(info.outputAxes.begin(), info.outputAxes.end());
    bool inner = false;
    for (auto &a : all)
      inner |= !out.count(a);
    SizeExpr naive =
        contractionFlops(all, inner, info.operandAxes.size(), info.axisSizes);
    if (info.operandAxes.size() <= 2) {
      flops = naive;
      break;
    }
    c.naiveFlops = Quantity::of(naive, env);
    c.path = contractionOrder(info, env);
    std::vector<std::set<std::string>> live;
    for (auto &axes : info.operandAxes)
      live.emplace_back(axes.begin(), axes.end());
    for (auto &ij : c.path) {
      unsigned i = ij[0], j = ij.back(); // j == i: one operand
      auto step =
          contract(live[i], live[j], neededBy(live, i, j, info.outputAxes),
                   info.axisSizes, i == j ? 1 : 2);
      flops = flops + step.flops;
      live = afterContracting(live, i, j, step.result);
    }
    break;
  }
  case OpKind::Pack:
    break;
  case OpKind::Unpack:
    // Parts of a pack along its leading axis are contiguous slices.
    c.view = in.packAxesBefore == 0;
    if (c.view)
      read = written = SizeExpr();
    break;
  case OpKind::Cast:
    break; // conversion moves data but does no arithmetic
  case OpKind::Constant:
  case OpKind::Size:
    read = written = SizeExpr();
    break;
  case OpKind::Arange:
    break; // writes n numbers; no arithmetic on data, nothing read
  case OpKind::Take: // reads the ids and only the rows gathered, not the table
    read = bytesOf(in.inputs[1]) + written;
    break;
  case OpKind::ScatterAdd: {
    // One add per update. Bytes: the ids and the updates read (the default),
    // plus a read-modify-write of the element each update lands on (an
    // update's size again, read and written: repeated ids are not merged);
    // the zero fill of the whole result written once.
    SizeExpr updates = bytesOf(in.inputs[1]);
    flops = numElements(in.inputs[1].shape);
    read = read + updates;
    written = written + updates;
    break;
  }
  case OpKind::Slice:
    // A slice along the leading dim is a contiguous range of the input: a
    // view. Otherwise the model counts a copy of the selected elements:
    // each read once and written once (docs/cost-model.md).
    c.view = in.packAxesBefore == 0;
    read = written = c.view ? SizeExpr() : bytesOf(in.outputs[0]);
    break;
  case OpKind::Elementwise: // the table's FLOPs per output element
    flops = outElems * SizeExpr::constant(elementwiseInfo(in.fn).flops);
    break;
  }
  c.flops = Quantity::of(flops, env);
  // A reduction over an empty axis (N = 0) does no combining, each output
  // being the identity, where the formula N - M would count -M; a mean still
  // divides each of its M outputs (0/0).
  if (in.kind == OpKind::Reduce && c.flops.value && *c.flops.value < 0)
    c.flops.value = Int(0);
  if (in.kind == OpKind::Reduce &&
      reduceFinish(in.reduction) == ReduceFinish::Mean &&
      numElements(in.inputs[0].shape).evaluate(env) == Int(0))
    c.flops.value = outElems.evaluate(env);
  // var over an empty axis still divides twice per output (0/0).
  if (in.kind == OpKind::Reduce &&
      reduceFinish(in.reduction) == ReduceFinish::Variance &&
      numElements(in.inputs[0].shape).evaluate(env) == Int(0))
    c.flops.value = (SizeExpr::constant(2) * outElems).evaluate(env);
  c.bytesRead = Quantity::of(read, env);
  c.bytesWritten = Quantity::of(written, env);
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

} // namespace ein
