// Layout inference (docs/distributed.md §3): every value of a function in a
// sharded module gets a layout, op by op through each op's rule (found
// through the op registry), and the collectives the layouts need are
// recorded; results and calls are held to their declared layouts (§2's
// replicated-value check).
#include "LayoutInference.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace ein {

const char *collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all-reduce";
  case CollectiveKind::AllGather:
    return "all-gather";
  case CollectiveKind::ReduceScatter:
    return "reduce-scatter";
  case CollectiveKind::AllToAll:
    return "all-to-all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  }
  return "collective";
}

bool ValueLayout::sharded() const {
  return std::any_of(dims.begin(), dims.end(),
                     [](const std::string &a) { return !a.empty(); });
}

std::string bareDimStr(const Dim &d) {
  Dim bare = d;
  bare.meshAxis.clear();
  return bare.str();
}

std::string layoutStr(const Shape &expanded, const ValueLayout &layout) {
  std::string out;
  for (size_t i = 0; i < expanded.size(); ++i) {
    std::string dim =
        bareDimStr(expanded[i]); // the layout's axis, not the type's
    if (dim.find(' ') != std::string::npos ||
        dim.find('*') != std::string::npos)
      dim = "(" + dim + ")";
    if (i < layout.dims.size() && !layout.dims[i].empty())
      dim += "@" + layout.dims[i];
    out += (out.empty() ? "" : " ") + dim;
  }
  if (!layout.pending.empty()) {
    std::string axes;
    for (auto &a : layout.pending)
      axes += (axes.empty() ? "" : ", ") + a;
    out += fmt::format(" (partial {} over {})",
                       reduceKindName(layout.pendingKind), axes);
  }
  return out;
}

LayoutInference::LayoutInference(CheckedFunction &fn,
                                 const std::vector<std::string> &mesh)
    : fn(fn), mesh(mesh) {
  fn.layouts.assign(fn.values.size(), ValueLayout{});
  fn.collectives.clear();
  producer.assign(fn.values.size(), -1);
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned r : fn.ops[i].results)
      producer[r] = static_cast<int>(i);
  for (size_t v = 0; v < fn.values.size(); ++v)
    fn.layouts[v] = replicatedOf(static_cast<unsigned>(v));
  // A parameter has its declared layout (a `shard` rule's included: the
  // checker wrote it into the type).
  for (unsigned p : fn.params) {
    Shape shape = shapeOf(p);
    for (size_t i = 0; i < shape.size(); ++i)
      fn.layouts[p].dims[i] = shape[i].meshAxis;
  }
  now = fn.layouts;
}

Shape LayoutInference::shapeOf(unsigned value) const {
  return fn.ctx.expand(fn.values[value].type.shape);
}

ValueLayout LayoutInference::replicatedOf(unsigned value) const {
  ValueLayout l;
  if (!fn.values[value].isPackedShapes)
    l.dims.assign(shapeOf(value).size(), "");
  return l;
}

std::optional<Int> LayoutInference::axisSize(const std::string &axis) const {
  return SizeExpr::symbol(axis).evaluate(fn.ctx.env);
}

SizeExpr LayoutInference::localElements(unsigned value,
                                        const ValueLayout &layout) const {
  SizeExpr blocks = SizeExpr::constant(1);
  for (auto &a : layout.dims)
    if (!a.empty())
      blocks = blocks * SizeExpr::symbol(a);
  SizeExpr all = numElements(shapeOf(value));
  if (blocks == SizeExpr::constant(1))
    return all;
  return SizeExpr::quotient(all, blocks);
}

void LayoutInference::record(CollectiveKind kind, const std::string &axis,
                             unsigned value, int afterOp, ReduceKind reduction,
                             const ValueLayout &local, std::string reason) {
  InferredCollective c;
  c.kind = kind;
  c.axis = axis;
  c.reduction = reduction;
  c.value = value;
  c.afterOp = afterOp;
  c.loc = afterOp >= 0 ? fn.ops[afterOp].loc : fn.loc;
  c.elements = localElements(value, local);
  c.dtype = fn.values[value].type.dtype;
  c.reason = std::move(reason);
  fn.collectives.push_back(std::move(c));
}

void LayoutInference::gatherOperandFirst(const CheckedOp &op,
                                         const std::string &axis,
                                         unsigned result,
                                         const ValueLayout &out,
                                         std::string reason, unsigned operand) {
  // Whole along this axis and the ones gathered before it at this op.
  std::set<std::string> gathered{axis};
  for (const InferredCollective &c : fn.collectives)
    if (c.kind == CollectiveKind::AllGather &&
        c.afterOp == static_cast<int>(current) && c.value == result &&
        c.operand == operand)
      gathered.insert(c.axis);
  record(CollectiveKind::AllGather, axis, result, static_cast<int>(current),
         ReduceKind::Sum, out, std::move(reason));
  unsigned moved = op.operands.at(operand);
  ValueLayout operandWhole = now[moved];
  for (std::string &a : operandWhole.dims)
    if (gathered.count(a))
      a.clear();
  fn.collectives.back().operand = operand;
  fn.collectives.back().elements = localElements(moved, operandWhole);
}

const ValueLayout &LayoutInference::operand(unsigned value) {
  ValueLayout &l = now[value];
  if (l.pending.empty())
    return l;
  // The partial results of every rank are completed where they are made.
  for (auto &axis : l.pending)
    record(CollectiveKind::AllReduce, axis, value, producer[value],
           l.pendingKind, l, l.pendingWhy);
  l.pending.clear();
  l.pendingWhy.clear();
  return l;
}

void LayoutInference::setResult(unsigned value, ValueLayout layout) {
  fn.layouts[value] = layout;
  now[value] = std::move(layout);
}

bool LayoutInference::fail(const CheckedOp &op, std::string message) {
  if (!error)
    error = LayoutError{op.loc, std::move(message), 1};
  return false;
}

bool LayoutInference::unsupported(const CheckedOp &op, const std::string &axis,
                                  const std::string &detail) {
  return fail(op, fmt::format("{} of a value sharded on {} is not supported "
                              "yet{}{} (docs/distributed.md §3)",
                              opName(op.kind, op.fn), axis,
                              detail.empty() ? "" : ": ", detail));
}

std::string LayoutInference::shardedAxisOf(const CheckedOp &op) const {
  for (unsigned v : op.operands) {
    const ValueLayout &l = now[v];
    for (auto &a : l.dims)
      if (!a.empty())
        return a;
    if (!l.pending.empty())
      return l.pending.front();
  }
  return "";
}

bool LayoutInference::keep(const CheckedOp &op, unsigned from) {
  ValueLayout l = operand(op.operands[from]);
  for (unsigned r : op.results)
    if (now[r].dims.size() == l.dims.size())
      setResult(r, l);
    else if (l.sharded())
      return unsupported(op, shardedAxisOf(op), "its result has another rank");
  return true;
}

bool LayoutInference::elementwise(const CheckedOp &op) {
  unsigned result = op.results[0];
  ValueLayout out = replicatedOf(result);
  // A sum or difference of partial sums over the same axes is a partial sum
  // of the sums: it stays pending, so that the contributions grad()
  // accumulates into one adjoint (the q, k and v projections' data
  // gradients) are all-reduced once, as Megatron-LM does.
  const ValueLayout &lead = now[op.operands[0]];
  bool linear = op.kind == OpKind::Elementwise &&
                (op.fn == ElementwiseFn::Add || op.fn == ElementwiseFn::Sub) &&
                !lead.pending.empty() && lead.pendingKind == ReduceKind::Sum;
  for (unsigned v : op.operands)
    linear = linear && now[v].pending == lead.pending &&
             now[v].pendingKind == ReduceKind::Sum;
  ValueLayout pending;
  if (linear) {
    pending.pending = lead.pending;
    pending.pendingWhy = lead.pendingWhy;
  }
  Shape outShape;
  bool first = true;
  for (unsigned v : op.operands) {
    const ValueLayout &l = linear ? peek(v) : operand(v);
    Shape shape = shapeOf(v);
    if (first) {
      outShape = shape;
      out.dims = l.dims;
      first = false;
      continue;
    }
    InferContext scratch = fn.ctx;
    BroadcastAlignment align;
    auto joined = inferBroadcast(scratch, outShape, shape, &align);
    if (!joined) {
      if (l.sharded() || out.sharded())
        return unsupported(op, shardedAxisOf(op),
                           "its operands do not broadcast here");
      outShape = shape;
      continue;
    }
    std::vector<std::string> dims(joined->size());
    auto place = [&](const std::vector<int> &at,
                     const std::vector<std::string> &from) {
      for (size_t i = 0; i < at.size() && i < from.size(); ++i)
        if (at[i] >= 0 && !from[i].empty()) {
          std::string &d = dims[at[i]];
          if (!d.empty() && d != from[i])
            return false;
          d = from[i];
        }
      return true;
    };
    if (!place(align.lhs, out.dims) || !place(align.rhs, l.dims)) {
      ValueLayout left;
      left.dims = out.dims;
      return fail(op,
                  fmt::format("{}'s operands are split along different "
                              "mesh axes: \"{}\" and \"{}\"; reshard one "
                              "of them (reshard(x, \"...\"))",
                              opName(op.kind, op.fn), layoutStr(outShape, left),
                              layoutStr(shape, l)));
    }
    outShape = *joined;
    out.dims = std::move(dims);
  }
  if (out.dims.size() != now[result].dims.size()) {
    if (out.sharded())
      return unsupported(op, shardedAxisOf(op), "its result has another rank");
    out = replicatedOf(result);
  }
  out.pending = std::move(pending.pending);
  out.pendingWhy = std::move(pending.pendingWhy);
  setResult(result, std::move(out));
  return true;
}

bool LayoutInference::throughAxes(
    const CheckedOp &op,
    const std::vector<std::vector<std::vector<std::string>>> &inputGroups,
    const std::vector<std::vector<std::string>> &outputGroups,
    const std::map<std::string, SizeExpr> &axisSizes, ReduceKind reduction) {
  const char *name = opName(op.kind, op.fn);
  std::map<std::string, std::string> split; // elementary axis -> mesh axis
  std::map<std::string, std::string> owner; // mesh axis -> elementary axis
  // How messages name a split axis: the operand's dim when it is a lone
  // name (grad()'s patterns name axes ad0, ad1, ...), else the pattern's.
  std::map<std::string, std::string> shown;
  // Operand dims split through a major factor that does not divide.
  struct Uneven {
    unsigned operand;
    std::string axis, factor, size;
  };
  std::vector<Uneven> uneven;
  for (size_t k = 0; k < op.operands.size() && k < inputGroups.size(); ++k) {
    const ValueLayout &l = operand(op.operands[k]);
    if (!l.sharded())
      continue;
    if (inputGroups[k].size() != l.dims.size())
      return unsupported(op, shardedAxisOf(op),
                         "its pattern's dims are not the operand's (a "
                         "variadic of unknown rank)");
    for (size_t j = 0; j < l.dims.size(); ++j) {
      const std::string &a = l.dims[j];
      if (a.empty())
        continue;
      if (inputGroups[k][j].empty())
        return unsupported(op, a, "a dim of size 1 is split");
      const std::string &e = inputGroups[k][j].front();
      // A major factor that does not divide into the blocks (`(h b)` of a
      // split 6 with h = 3 over 2 ranks): a rank's block is not a block of
      // it, so a rearrange, repeat or reduce gathers the operand first and
      // the dim is whole.
      if (op.kind != OpKind::Einsum && axisSizes.count(e)) {
        auto size = axisSizes.at(e).evaluate(fn.ctx.env);
        auto n = axisSize(a);
        if (size && n && *n > 1 && *size % *n != 0) {
          uneven.push_back({static_cast<unsigned>(k), a, e, toString(*size)});
          continue;
        }
      }
      auto [s, newAxis] = split.emplace(e, a);
      if (!newAxis && s->second != a)
        return fail(op, fmt::format("{}'s operands split axis '{}' along "
                                    "different mesh axes ({} and {}); "
                                    "reshard one of them (reshard(x, "
                                    "\"...\"))",
                                    name, e, s->second, a));
      if (!shown.count(e)) {
        Shape shape = shapeOf(op.operands[k]);
        auto lone = j < shape.size() ? shape[j].size.asSymbol() : std::nullopt;
        shown[e] = lone && inputGroups[k][j].size() == 1 ? *lone : e;
      }
      auto [o, newOwner] = owner.emplace(a, e);
      if (!newOwner && o->second != e)
        return fail(op, fmt::format("mesh axis {} splits two axes of this "
                                    "{} ('{}' and '{}'): each rank would "
                                    "hold unmatched blocks; reshard one of "
                                    "the operands (reshard(x, \"...\"))",
                                    a, name, o->second, e));
    }
  }
  unsigned result = op.results[0];
  ValueLayout out = replicatedOf(result);
  for (const Uneven &u : uneven)
    gatherOperandFirst(op, u.axis, result, out,
                       fmt::format("{} splits '{}' ({}) into {} blocks, "
                                   "which does not divide: its operand is "
                                   "gathered first",
                                   name, u.factor, u.size,
                                   toString(*axisSize(u.axis))),
                       u.operand);
  if (split.empty()) {
    setResult(result, std::move(out));
    return true;
  }
  if (outputGroups.size() != out.dims.size())
    return unsupported(op, shardedAxisOf(op),
                       "its result's dims are not the pattern's");
  std::set<std::string> kept;
  struct Moved {
    std::string axis, from, to;
    size_t dim;
  };
  std::vector<Moved> moved;
  for (size_t j = 0; j < outputGroups.size(); ++j) {
    const auto &g = outputGroups[j];
    for (size_t f = 0; f < g.size(); ++f) {
      auto s = split.find(g[f]);
      if (s == split.end())
        continue;
      kept.insert(g[f]);
      if (f == 0) {
        out.dims[j] = s->second;
        continue;
      }
      moved.push_back({s->second, g[f], g.front(), j});
    }
  }
  for (const Moved &m : moved) {
    if (!out.dims[m.dim].empty())
      return unsupported(op, m.axis,
                         fmt::format("'{}' lands inside a dim split on {}",
                                     m.from, out.dims[m.dim]));
    // The split moves to the dim's major axis when it divides into the
    // blocks (an all-to-all), else the dim is gathered whole.
    auto n = axisSize(m.axis);
    // One block is the whole: nothing moves (a sharded run's local
    // program is checked on a mesh of one rank per axis).
    if (n && *n == 1)
      continue;
    // A repeat or reduce gathers its operand first: the op of the whole
    // (the collective's S is the operand's, gathered).
    if (op.kind != OpKind::Rearrange) {
      gatherOperandFirst(op, m.axis, result, out,
                         fmt::format("{} moves '{}@{}' off a dim's major "
                                     "position: its operand is gathered first",
                                     name, m.from, m.axis));
      continue;
    }
    auto size = axisSizes.count(m.to) ? axisSizes.at(m.to).evaluate(fn.ctx.env)
                                      : std::nullopt;
    if (!size || !n)
      return unsupported(op, m.axis,
                         fmt::format("'{}' moves off the major position of a "
                                     "dim whose sizes are not known; bind "
                                     "them (--dim, --mesh) or reshard",
                                     m.from));
    if (*size % *n == 0) {
      out.dims[m.dim] = m.axis;
      record(CollectiveKind::AllToAll, m.axis, result,
             static_cast<int>(current), ReduceKind::Sum, out,
             fmt::format("{} moves '{}@{}' off a dim's major position", name,
                         m.from, m.axis));
    } else {
      ValueLayout whole = out;
      record(CollectiveKind::AllGather, m.axis, result,
             static_cast<int>(current), ReduceKind::Sum, whole,
             fmt::format("{} moves '{}@{}' off a dim's major position and "
                         "'{}' ({}) does not split into {} blocks",
                         name, m.from, m.axis, m.to, toString(*size),
                         toString(*n)));
    }
  }
  for (auto &[e, a] : split) {
    if (kept.count(e))
      continue;
    // A mean of equal blocks is the mean of the blocks' means: an
    // all-reduce averaging (NCCL's avg); any and all of the blocks' are
    // the logical or and and (a max and a min of 0 and 1); a product, the
    // product of the blocks'. A variance is not a function of the blocks'
    // (each block's is about its own mean): the operand is gathered first
    // and the var is the whole's, as a repeat's or reduce's moved split.
    if (reduction == ReduceKind::Var) {
      if (auto n = axisSize(a); n && *n == 1)
        continue;
      gatherOperandFirst(op, a, result, out,
                         fmt::format("{} var over {}@{}: its operand is "
                                     "gathered first",
                                     name, shown[e], a));
      continue;
    }
    if (!out.pending.empty() && out.pendingKind != reduction)
      return unsupported(op, a, "two reductions pending at once");
    out.pending.push_back(a);
    out.pendingKind = reduction;
    out.pendingWhy = op.kind == OpKind::Einsum
                         ? fmt::format("einsum sums {}@{}", shown[e], a)
                         : fmt::format("{} {} over {}@{}", name,
                                       reduceKindName(reduction), shown[e], a);
  }
  setResult(result, std::move(out));
  return true;
}

bool LayoutInference::holdToDeclared(unsigned value, const TensorType &declared,
                                     SourceLoc loc, const std::string &what,
                                     bool exact) {
  Shape want = fn.ctx.expand(declared.shape);
  ValueLayout &l = now[value];
  if (want.size() != l.dims.size())
    return true; // a rank the check has refused already
  int made = producer[value];
  SourceLoc at = made >= 0 ? fn.ops[made].loc : loc;
  std::string source =
      made >= 0 ? fmt::format("the {} at line {} computes it",
                              opName(fn.ops[made].kind, fn.ops[made].fn),
                              fn.ops[made].loc.line)
                : fmt::format("it is parameter '{}' of '{}',",
                              fn.values[value].name, fn.name);
  // Pending results: reduce-scattered onto the dim the declared type splits
  // on their axis, else all-reduced.
  for (auto &axis : l.pending) {
    auto it = std::find_if(want.begin(), want.end(),
                           [&](const Dim &d) { return d.meshAxis == axis; });
    size_t j = static_cast<size_t>(it - want.begin());
    if (it != want.end() && l.dims[j].empty()) {
      ValueLayout input = l;
      input.pending.clear();
      record(CollectiveKind::ReduceScatter, axis, value, made, l.pendingKind,
             input,
             fmt::format("{}, and {} splits {} on {}", l.pendingWhy, what,
                         bareDimStr(want[j]), axis));
      l.dims[j] = axis;
      continue;
    }
    ValueLayout whole = l;
    whole.pending.clear();
    record(CollectiveKind::AllReduce, axis, value, made, l.pendingKind, whole,
           l.pendingWhy);
  }
  l.pending.clear();
  l.pendingWhy.clear();
  for (size_t j = 0; j < want.size(); ++j) {
    const std::string &have = l.dims[j], &need = want[j].meshAxis;
    if (have == need)
      continue;
    ValueLayout declaredLayout;
    for (const Dim &w : want)
      declaredLayout.dims.push_back(w.meshAxis);
    std::string fix = fmt::format(
        "; write reshard(x, \"{}\") to make the collective explicit, or "
        "declare the layout the value has (\"{}\")",
        layoutStr(want, declaredLayout), layoutStr(want, l));
    if (need.empty()) {
      error = LayoutError{
          at,
          fmt::format("{} is declared replicated on {} (dim {}) but {} "
                      "split along {}: each rank would hold a different "
                      "block where the type promises the whole tensor{}",
                      what, have, bareDimStr(want[j]), source, have, fix),
          1};
      return false;
    }
    if (have.empty() && !exact) {
      // A replicated value is split by keeping the rank's block: no data
      // moves.
      l.dims[j] = need;
      continue;
    }
    error = LayoutError{
        loc,
        fmt::format("{} is declared split on {} (dim {}) but {} {}{}", what,
                    need, bareDimStr(want[j]), source,
                    have.empty() ? "replicated" : "split on " + have, fix),
        1};
    return false;
  }
  return true;
}

std::optional<LayoutError> LayoutInference::run() {
  // Where each call's demands apply: its arguments before its first op,
  // its results after its last forward op (a call without ops: at the end).
  std::vector<size_t> first(fn.callSites.size(), fn.ops.size());
  std::vector<size_t> afterForward(fn.callSites.size(), fn.ops.size());
  std::vector<bool> hasForward(fn.callSites.size(), false);
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (int site : fn.callPath(fn.ops[i])) {
      first[site] = std::min(first[site], i);
      if (fn.ops[i].phase == GradPhase::Forward) {
        afterForward[site] =
            hasForward[site] ? std::max(afterForward[site], i + 1) : i + 1;
        hasForward[site] = true;
      }
    }
  std::vector<size_t> at;
  for (const LayoutDemand &d : fn.layoutDemands) {
    size_t site = static_cast<size_t>(d.callSite);
    at.push_back(d.callSite < 0 || site >= fn.callSites.size() ? fn.ops.size()
                 : d.result ? afterForward[site]
                            : first[site]);
  }
  auto demandsAt = [&](size_t position) {
    for (size_t k = 0; k < fn.layoutDemands.size(); ++k) {
      const LayoutDemand &d = fn.layoutDemands[k];
      if (at[k] == position &&
          !holdToDeclared(d.value, d.declared, d.loc, d.what, true))
        return false;
    }
    return true;
  };
  for (current = 0; current < fn.ops.size(); ++current) {
    if (!demandsAt(current))
      return error;
    const CheckedOp &op = fn.ops[current];
    bool ok = true;
    switch (op.kind) {
#define EIN_OP(Kind, Name, OpClass)                                            \
  case OpKind::Kind:                                                           \
    ok = layoutOf##Kind(*this, op);                                            \
    break;
#include "ein/Sema/Ops.def"
    }
    if (!ok)
      return error ? error : LayoutError{op.loc, "layout inference failed", 1};
  }
  if (!demandsAt(fn.ops.size()))
    return error;
  for (size_t i = 0; i < fn.returns.size() && i < fn.results.size(); ++i)
    if (!holdToDeclared(fn.returns[i], fn.results[i], fn.loc,
                        fmt::format("result {} of '{}'", i + 1, fn.name),
                        false))
      return error;
  // In program order: a collective made when a value is first read (or
  // returned) follows the op that made the value.
  std::stable_sort(
      fn.collectives.begin(), fn.collectives.end(),
      [](const InferredCollective &a, const InferredCollective &b) {
        return a.afterOp < b.afterOp;
      });
  return std::nullopt;
}

std::optional<LayoutError> inferLayouts(CheckedFunction &fn,
                                        const std::vector<std::string> &mesh) {
  return LayoutInference(fn, mesh).run();
}

} // namespace ein
