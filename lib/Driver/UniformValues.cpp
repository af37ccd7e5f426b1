// The values of a sharded run that are the same at every position along a
// dim name (docs/distributed.md §4): computed at the block's size, where
// they may meet split values, and results held to their declared split.
#include "UniformValues.h"
#include "LocalProgram.h"

#include <map>

namespace ein {

namespace {

/// The names dim sizes of value `id` mention.
std::set<std::string> symbolsOf(const CheckedFunction &fn, unsigned id) {
  std::set<std::string> out;
  for (const Dim &d : fn.ctx.expand(fn.values[id].type.shape))
    for (const std::string &s : d.size.symbols())
      out.insert(s);
  return out;
}

} // namespace

std::vector<std::set<std::string>> uniformNames(const CheckedFunction &fn) {
  std::vector<std::set<std::string>> uniform(fn.values.size());
  for (const CheckedOp &op : fn.ops) {
    if (op.results.size() != 1 || op.results[0] >= uniform.size())
      continue;
    std::set<std::string> mine = symbolsOf(fn, op.results[0]),
                          &out = uniform[op.results[0]];
    switch (op.kind) {
    case OpKind::Constant:
      out = mine;
      break;
    case OpKind::Repeat:
    case OpKind::Elementwise:
    case OpKind::Cast:
      // A name the operand lacks is new (a repeat) or broadcast; one it
      // has must be uniform in it.
      for (const std::string &name : mine) {
        bool same = true;
        for (unsigned o : op.operands)
          if (o < uniform.size() && symbolsOf(fn, o).count(name) &&
              !uniform[o].count(name))
            same = false;
        if (same)
          out.insert(name);
      }
      break;
    case OpKind::Rearrange:
    case OpKind::Reduce:
    case OpKind::Einsum:
    case OpKind::Pack:
    case OpKind::Unpack:
    case OpKind::Size:
    case OpKind::Arange:
    case OpKind::Take:
    case OpKind::Slice:
    case OpKind::ScatterAdd:
    case OpKind::TakeAlong:
    case OpKind::Dropout:
      break;
    }
  }
  return uniform;
}

bool positionwise(const CheckedFunction &fn, const CheckedOp &op,
                  const std::string &name) {
  if (op.kind == OpKind::Elementwise || op.kind == OpKind::Cast)
    return true;
  if ((op.kind != OpKind::Pack && op.kind != OpKind::Unpack) ||
      op.parsed.inputs.empty() || op.parsed.inputs[0].hasEllipsis())
    return false;
  const PatternSide &side = op.parsed.inputs[0];
  size_t before = side.starIndex();
  if (before >= side.groups.size())
    return false;
  size_t after = side.groups.size() - before - 1;
  for (auto *ids : {&op.operands, &op.results})
    for (unsigned id : *ids) {
      if (fn.values[id].isPackedShapes)
        continue;
      Shape shape = fn.ctx.expand(fn.values[id].type.shape);
      if (shape.size() < before + after)
        return false;
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d].size.symbols().count(name) &&
            (shape[d].size.asSymbol() != name ||
             (d >= before && d < shape.size() - after)))
          return false;
    }
  return true;
}

void holdUniformResults(CheckedModule &m, const std::string &function) {
  for (CheckedFunction &fn : m.functions) {
    if (fn.name != function)
      continue;
    std::vector<std::set<std::string>> uniform = uniformNames(fn);
    // A name a collective gathers or splits is bound twice: left as it is.
    std::set<std::string> moved;
    for (auto names : {gatheredNames(m, fn), scatteredNames(m, fn)})
      if (names)
        for (auto &[name, at] : *names)
          moved.insert(name);
    // Read by an op, it would be read as the whole layout inference saw.
    std::set<unsigned> read;
    for (const CheckedOp &op : fn.ops)
      read.insert(op.operands.begin(), op.operands.end());
    // Per returned value, the axis each dim is declared on (every return of
    // it must agree).
    std::map<unsigned, std::vector<std::string>> declared;
    std::set<unsigned> disagree;
    for (size_t k = 0; k < fn.returns.size() && k < fn.results.size(); ++k) {
      std::vector<std::string> axes;
      for (const Dim &d : fn.ctx.expand(fn.results[k].shape))
        axes.push_back(d.meshAxis);
      auto [it, fresh] = declared.emplace(fn.returns[k], axes);
      if (!fresh && it->second != axes)
        disagree.insert(fn.returns[k]);
    }
    for (auto &[r, axes] : declared) {
      if (read.count(r) || disagree.count(r) || r >= fn.layouts.size() ||
          fn.values[r].isPackedShapes)
        continue;
      Shape shape = fn.ctx.expand(fn.values[r].type.shape);
      ValueLayout &layout = fn.layouts[r];
      if (shape.size() != axes.size() || layout.dims.size() != axes.size() ||
          !layout.pending.empty())
        continue;
      for (size_t d = 0; d < shape.size(); ++d) {
        auto name = shape[d].size.asSymbol();
        if (!name || axes[d].empty() || !layout.dims[d].empty() ||
            !uniform[r].count(*name) || moved.count(*name))
          continue;
        // The name's one dim here, and split in some other value (else
        // the local program binds it whole and the run cuts the block).
        bool alone = true, elsewhere = false;
        for (size_t d2 = 0; d2 < shape.size(); ++d2)
          alone &= d2 == d || !shape[d2].size.symbols().count(*name);
        for (unsigned id = 0; id < fn.layouts.size() && !elsewhere; ++id)
          elsewhere = id != r && splitAlong(fn, id, *name);
        if (alone && elsewhere)
          layout.dims[d] = axes[d];
      }
    }
  }
}

} // namespace ein
