// The gradient of a softmax as one rule, and its probabilities recomputed in
// the backward instead of saved, as FlashAttention's backward does: a
// softmax written exp(z - max(z)) / sum(exp(...)) over some axes is
// differentiated as a whole, dz = y * (dy - sum(dy * y)), reading only its
// output y; y is then computed again where the backward reads it, from z and
// the row max and row sum, and z too when it comes from values the backward
// holds anyway (an attention's scores from q and k), so that an attention
// saves q, k, v and two numbers per row, not the b h s t probabilities. A
// log-softmax, z - max - log(sum(exp(z - max))), is one rule too, reading
// its output alone (what torch's log_softmax saves).
#include "Differentiator.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ein {

using F = ElementwiseFn;

namespace {

const CheckedOp *producerOf(const CheckedFunction &fn, unsigned v) {
  for (const CheckedOp &op : fn.ops)
    for (unsigned r : op.results)
      if (r == v)
        return &op;
  return nullptr;
}

bool produces(const CheckedOp &op, unsigned v) {
  return op.results.size() == 1 && op.results[0] == v;
}

bool isElementwise(const CheckedOp *op, F fn, size_t operands) {
  return op && op->phase == GradPhase::Forward &&
         op->kind == OpKind::Elementwise && op->fn == fn &&
         op->operands.size() == operands && op->results.size() == 1;
}

bool isReduce(const CheckedOp *op, ReduceKind how, unsigned of) {
  return op && op->phase == GradPhase::Forward && op->kind == OpKind::Reduce &&
         op->reduction == how && op->transform && op->operands.size() == 1 &&
         op->operands[0] == of && op->results.size() == 1;
}

/// Per output dim of a reduce, the input dim it keeps, or -1 for a `1`;
/// none unless every dim is one axis (a composition is not a row).
std::optional<std::vector<int>> keptDims(const TransformInfo &info) {
  std::map<std::string, int> at;
  for (size_t i = 0; i < info.inputGroups.size(); ++i) {
    if (info.inputGroups[i].size() != 1)
      return std::nullopt;
    at[info.inputGroups[i][0]] = static_cast<int>(i);
  }
  std::vector<int> kept;
  for (const auto &group : info.outputGroups) {
    if (group.empty()) {
      kept.push_back(-1);
      continue;
    }
    auto it = group.size() == 1 ? at.find(group[0]) : at.end();
    if (it == at.end())
      return std::nullopt;
    kept.push_back(it->second);
  }
  return kept;
}

bool sameShape(const CheckedFunction &fn, unsigned a, unsigned b) {
  Shape x = fn.ctx.expand(fn.values[a].type.shape);
  Shape y = fn.ctx.expand(fn.values[b].type.shape);
  if (x.size() != y.size())
    return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].isPack() || y[i].isPack() ||
        fn.ctx.prove(x[i].size, y[i].size) != InferContext::Proof::Equal)
      return false;
  return true;
}

/// Whether `full OP row`, `row` a reduce of a value shaped as `full`
/// keeping `kept`, broadcasts each row back along the dims it was reduced
/// over (each kept dim meets the dim it came from): only then is
/// `p / sum(p)` a softmax.
bool alignedAsReduced(const CheckedFunction &fn, unsigned full, unsigned row,
                      const std::vector<int> &kept) {
  InferContext scratch = fn.ctx;
  BroadcastAlignment align;
  Shape fullShape = fn.ctx.expand(fn.values[full].type.shape);
  auto joined =
      inferBroadcast(scratch, fullShape, fn.values[row].type.shape, &align);
  if (!joined || joined->size() != fullShape.size() ||
      align.rhs.size() != kept.size())
    return false;
  for (size_t i = 0; i < align.lhs.size(); ++i)
    if (align.lhs[i] != static_cast<int>(i))
      return false;
  for (size_t j = 0; j < kept.size(); ++j)
    if (kept[j] >= 0 && align.rhs[j] != kept[j])
      return false;
  return true;
}

/// The max (of z, giving mx) and the sum (of `full`, giving `row`) reduce
/// the same dims, and each result broadcasts back along them.
bool reduceSameRows(const CheckedFunction &fn, const CheckedOp &max,
                    const CheckedOp &sum, unsigned z, unsigned mx,
                    unsigned full, unsigned row) {
  auto keptMax = keptDims(*max.transform);
  auto keptSum = keptDims(*sum.transform);
  return keptMax && keptSum && *keptMax == *keptSum &&
         max.transform->inputGroups.size() ==
             sum.transform->inputGroups.size() &&
         alignedAsReduced(fn, z, mx, *keptMax) &&
         alignedAsReduced(fn, full, row, *keptSum);
}

/// Each step of a chain is read only by the ops that make the values listed
/// with it: the rule replaces the steps' gradients, so no other reader may
/// need them.
bool readOnlyWithin(
    const CheckedFunction &fn,
    const std::vector<std::pair<unsigned, std::vector<unsigned>>> &readers) {
  for (const CheckedOp &op : fn.ops)
    for (unsigned v : op.operands)
      for (const auto &[step, allowed] : readers)
        if (v == step &&
            std::none_of(allowed.begin(), allowed.end(),
                         [&](unsigned r) { return produces(op, r); }))
          return false;
  return true;
}

} // namespace

std::optional<SoftmaxChain> matchSoftmax(const CheckedFunction &fn,
                                         const CheckedOp &div) {
  if (!isElementwise(&div, F::Div, 2))
    return std::nullopt;
  SoftmaxChain s;
  s.p = div.operands[0];
  s.den = div.operands[1];
  s.y = div.results[0];
  const CheckedOp *sum = producerOf(fn, s.den);
  if (!isReduce(sum, ReduceKind::Sum, s.p))
    return std::nullopt;
  const CheckedOp *exp = producerOf(fn, s.p);
  if (!isElementwise(exp, F::Exp, 1))
    return std::nullopt;
  s.t = exp->operands[0];
  const CheckedOp *sub = producerOf(fn, s.t);
  if (!isElementwise(sub, F::Sub, 2))
    return std::nullopt;
  s.z = sub->operands[0];
  s.mx = sub->operands[1];
  const CheckedOp *max = producerOf(fn, s.mx);
  if (!isReduce(max, ReduceKind::Max, s.z))
    return std::nullopt;
  DType t = fn.values[s.y].type.dtype;
  for (unsigned v : {s.z, s.mx, s.t, s.p, s.den})
    if (fn.values[v].type.dtype != t)
      return std::nullopt;
  if (!isFloat(t) || !sameShape(fn, s.z, s.t) || !sameShape(fn, s.t, s.y))
    return std::nullopt;
  if (!reduceSameRows(fn, *max, *sum, s.z, s.mx, s.p, s.den))
    return std::nullopt;
  // The steps between z and y feed nothing else (the max's gradient is
  // zero: a softmax does not change when a row is shifted).
  if (!readOnlyWithin(
          fn,
          {{s.t, {s.p}}, {s.p, {s.den, s.y}}, {s.mx, {s.t}}, {s.den, {s.y}}}))
    return std::nullopt;
  s.sumPattern = sum->parsed;
  s.sumSizes = sum->sizes;
  return s;
}

bool gradientOfSoftmax(Differentiator &d, const CheckedOp &div,
                       const SoftmaxChain &s) {
  std::optional<unsigned> dy = d.adjointOf(s.y);
  if (!dy || !d.isActive(s.z))
    return true;
  d.target(div, s.z);
  // The softmax's Jacobian y_i (delta_ij - y_j) applied to dy, as torch's
  // softmax backward computes it: reads y alone (recomputeSoftmax then
  // computes y again instead of saving it).
  auto weighted = d.ew(F::Mul, {*dy, s.y});
  auto rows =
      weighted
          ? d.built(d.build().transform(OpKind::Reduce, *weighted, s.sumPattern,
                                        s.sumSizes, ReduceKind::Sum))
          : std::nullopt;
  auto centred = rows ? d.ew(F::Sub, {*dy, *rows}) : std::nullopt;
  auto dz = centred ? d.ew(F::Mul, {s.y, *centred}) : std::nullopt;
  return dz && d.accumulate(s.z, *dz);
}

std::optional<SoftmaxChain> matchLogSoftmax(const CheckedFunction &fn,
                                            const CheckedOp &sub) {
  if (!isElementwise(&sub, F::Sub, 2))
    return std::nullopt;
  SoftmaxChain s;
  s.t = sub.operands[0];
  s.lg = sub.operands[1];
  s.y = sub.results[0];
  const CheckedOp *log = producerOf(fn, *s.lg);
  if (!isElementwise(log, F::Log, 1))
    return std::nullopt;
  s.den = log->operands[0];
  const CheckedOp *shift = producerOf(fn, s.t);
  if (!isElementwise(shift, F::Sub, 2))
    return std::nullopt;
  s.z = shift->operands[0];
  s.mx = shift->operands[1];
  const CheckedOp *max = producerOf(fn, s.mx);
  const CheckedOp *sum = producerOf(fn, s.den);
  if (!isReduce(max, ReduceKind::Max, s.z) || !sum || sum->operands.size() != 1)
    return std::nullopt;
  s.p = sum->operands[0];
  const CheckedOp *exp = producerOf(fn, s.p);
  if (!isReduce(sum, ReduceKind::Sum, s.p) || !isElementwise(exp, F::Exp, 1) ||
      exp->operands[0] != s.t)
    return std::nullopt;
  DType t = fn.values[s.y].type.dtype;
  for (unsigned v : {s.z, s.mx, s.t, s.p, s.den, *s.lg})
    if (fn.values[v].type.dtype != t)
      return std::nullopt;
  if (!isFloat(t) || !sameShape(fn, s.z, s.t) || !sameShape(fn, s.t, s.y) ||
      !sameShape(fn, s.t, s.p))
    return std::nullopt;
  if (!reduceSameRows(fn, *max, *sum, s.z, s.mx, s.t, *s.lg))
    return std::nullopt;
  // t is read by exp and by y alone, the others by the next step alone.
  if (!readOnlyWithin(fn, {{s.t, {s.p, s.y}},
                           {s.p, {s.den}},
                           {s.mx, {s.t}},
                           {s.den, {*s.lg}},
                           {*s.lg, {s.y}}}))
    return std::nullopt;
  s.sumPattern = sum->parsed;
  s.sumSizes = sum->sizes;
  return s;
}

bool gradientOfLogSoftmax(Differentiator &d, const CheckedOp &sub,
                          const SoftmaxChain &s) {
  std::optional<unsigned> dy = d.adjointOf(s.y);
  if (!dy || !d.isActive(s.z))
    return true;
  d.target(sub, s.z);
  // dz = dy - exp(y) * sum(dy), torch's log_softmax backward: reads y
  // alone, so neither z nor exp(z - max) is saved for it.
  auto rows = d.built(d.build().transform(OpKind::Reduce, *dy, s.sumPattern,
                                          s.sumSizes, ReduceKind::Sum));
  auto probs = rows ? d.ew(F::Exp, {s.y}) : std::nullopt;
  auto spread = probs ? d.ew(F::Mul, {*probs, *rows}) : std::nullopt;
  auto dz = spread ? d.ew(F::Sub, {*dy, *spread}) : std::nullopt;
  return dz && d.accumulate(s.z, *dz);
}

namespace {

/// The most forward ops repeated for one softmax's probabilities (its sub,
/// exp and div, an attention's scores, scale and mask).
constexpr size_t kMaxRecomputedOps = 12;

/// Recomputes `s.y` before the first backward op reading it, when the fused
/// rule differentiated it and z comes from values the backward holds
/// anyway; returns whether it did.
bool recomputeProbabilities(CheckedFunction &fn, const SoftmaxChain &s) {
  auto isBackward = [](const CheckedOp &op) {
    return op.phase != GradPhase::Forward;
  };
  size_t first = fn.ops.size();
  std::set<unsigned> held; // what the backward reads anyway
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (isBackward(fn.ops[i]))
      for (unsigned v : fn.ops[i].operands) {
        if (v == s.y)
          first = std::min(first, i);
        else
          held.insert(v);
      }
  if (first == fn.ops.size())
    return false;
  // The per-op rules (not the fused one) read the steps: leave them.
  for (unsigned v : {s.t, s.p, s.mx, s.den})
    if (held.count(v))
      return false;
  held.insert(s.mx); // the row max and row sum are saved instead
  held.insert(s.den);
  std::set<unsigned> inputs(fn.params.begin(), fn.params.end());
  std::set<unsigned> wrt(fn.gradWrt.begin(), fn.gradWrt.end());
  std::map<unsigned, size_t> producer;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned r : fn.ops[i].results)
      producer[r] = i;
  std::set<size_t> repeat; // forward op indices
  std::function<bool(unsigned)> plan = [&](unsigned v) {
    if (held.count(v) || inputs.count(v))
      return true;
    auto it = producer.find(v);
    if (it == producer.end())
      return false;
    const CheckedOp &op = fn.ops[it->second];
    if (op.phase != GradPhase::Forward || op.results.size() != 1)
      return false;
    if (op.kind == OpKind::Constant || op.kind == OpKind::Size ||
        repeat.count(it->second))
      return true;
    // Elementwise work and views, and a contraction between activations
    // (attention's scores), never one with a parameter: that would repeat
    // a layer's matmul.
    bool cheap = op.kind == OpKind::Elementwise ||
                 op.kind == OpKind::Rearrange || op.kind == OpKind::Repeat ||
                 op.kind == OpKind::Cast || op.kind == OpKind::Arange ||
                 (op.kind == OpKind::Einsum &&
                  std::none_of(op.operands.begin(), op.operands.end(),
                               [&](unsigned x) { return wrt.count(x) > 0; }));
    if (!cheap || repeat.size() >= kMaxRecomputedOps)
      return false;
    for (unsigned x : op.operands)
      if (!plan(x))
        return false;
    repeat.insert(it->second);
    return true;
  };
  if (!plan(s.y))
    return false;
  // Named for the report's list of saved values when the program did not
  // name them (a reduce written inline).
  auto label = [&](unsigned v) {
    const std::string &name = fn.values[v].name;
    return name.empty() ? "%" + std::to_string(v) : name;
  };
  if (fn.values[s.mx].name.empty())
    fn.values[s.mx].name = "max(" + label(s.z) + ")";
  if (fn.values[s.den].name.empty())
    fn.values[s.den].name = "sum(" + label(s.p) + ")";
  // The copies, in forward order, before the first backward reader of y.
  std::map<unsigned, unsigned> copyOf;
  std::vector<CheckedOp> copies;
  for (size_t i : repeat) {
    const CheckedOp forward = fn.ops[i]; // a copy: fn.values grows below
    copies.push_back(recomputedCopy(fn, forward, copyOf));
  }
  unsigned y = copyOf.at(s.y);
  for (size_t i = first; i < fn.ops.size(); ++i)
    if (isBackward(fn.ops[i]))
      std::replace(fn.ops[i].operands.begin(), fn.ops[i].operands.end(), s.y,
                   y);
  fn.ops.insert(fn.ops.begin() + static_cast<std::ptrdiff_t>(first),
                std::make_move_iterator(copies.begin()),
                std::make_move_iterator(copies.end()));
  return true;
}

} // namespace

size_t recomputeSoftmax(CheckedFunction &fn) {
  size_t count = 0;
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    if (fn.ops[i].phase != GradPhase::Forward)
      continue;
    if (auto s = matchSoftmax(fn, fn.ops[i]))
      count += recomputeProbabilities(fn, *s) ? 1 : 0;
  }
  return count;
}

} // namespace ein
