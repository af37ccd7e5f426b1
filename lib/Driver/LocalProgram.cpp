// The local program of a sharded run (docs/distributed.md §4): the split
// names and what the one-binding-per-name local program refuses, by name.
#include "LocalProgram.h"
#include "UniformValues.h"
#include "ein/Sema/Layout.h"

#include <fmt/format.h>

#include <set>

namespace ein {

namespace {

/// The index of the op that makes `id`, or -1 for a parameter.
int producerOf(const CheckedFunction &fn, unsigned id) {
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (unsigned r : fn.ops[i].results)
      if (r == id)
        return int(i);
  return -1;
}

/// The names dim `d` of value `id` is split through: a lone name, else the
/// major factor of a composition (the type's, or the pattern's of the
/// transform that made it, through elementwise ops of the same dim), else
/// every name of its size (not known which).
std::set<std::string> splitThrough(const CheckedFunction &fn, unsigned id,
                                   const Dim &dim, size_t d) {
  if (auto name = dim.size.asSymbol())
    return {*name};
  if (auto major = dim.meshMajor.asSymbol())
    return {*major};
  for (int made = producerOf(fn, id); made >= 0;) {
    const CheckedOp &op = fn.ops[size_t(made)];
    if (op.transform) {
      const TransformInfo &t = *op.transform;
      if (d < t.outputGroups.size() && !t.outputGroups[d].empty())
        if (auto it = t.axisSizes.find(t.outputGroups[d].front());
            it != t.axisSizes.end())
          if (auto major = it->second.asSymbol();
              major && dim.size.symbols().count(*major))
            return {*major};
      break;
    }
    if (op.kind != OpKind::Elementwise && op.kind != OpKind::Cast)
      break;
    // The operand of the same rank whose dim d is this one, split.
    made = -1;
    for (unsigned o : op.operands) {
      if (o >= fn.layouts.size() || fn.values[o].isPackedShapes)
        continue;
      Shape shape = fn.ctx.expand(fn.values[o].type.shape);
      if (shape.size() == fn.layouts[id].dims.size() && d < shape.size() &&
          shape[d].size == dim.size && d < fn.layouts[o].dims.size() &&
          !fn.layouts[o].dims[d].empty()) {
        made = producerOf(fn, o);
        break;
      }
    }
  }
  return dim.size.symbols();
}

/// A reshard's or a rearrange's all-gather or all-to-all.
bool movesData(const CheckedFunction &fn, const InferredCollective &c) {
  return reshardMoves(fn, c) || movesOperand(fn, c);
}

/// The dim `d` of value `id` when it is a lone name (`f`, not `(h e)` or
/// `8`): the name a reshard's or a rearrange's collective moves.
std::optional<std::string> loneNameAt(const CheckedFunction &fn, unsigned id,
                                      size_t d) {
  Shape shape = fn.ctx.expand(fn.values[id].type.shape);
  if (d < shape.size())
    return shape[d].size.asSymbol();
  return std::nullopt;
}

/// "reshard", "rearrange", "repeat" or "reduce": what op `at` that gathers
/// or splits a name is, for messages.
std::string moverName(const CheckedFunction &fn, size_t at) {
  return fn.ops[at].reshardTo ? "reshard" : opKindName(fn.ops[at].kind);
}

/// The dims a `reshard` splits that its operand has whole and that no
/// all-to-all moves a split onto: each rank keeps its block (a local slice).
std::vector<std::pair<size_t, size_t>> addedSplitsAt(const CheckedFunction &fn,
                                                     size_t i) {
  std::vector<std::pair<size_t, size_t>> out;
  const CheckedOp &op = fn.ops[i];
  if (!op.reshardTo || op.operands.empty() || op.results.empty() ||
      op.results[0] >= fn.layouts.size())
    return out;
  const ValueLayout &from = fn.layouts.at(op.operands[0]);
  const ValueLayout &to = fn.layouts.at(op.results[0]);
  for (size_t d = 0; d < from.dims.size() && d < to.dims.size(); ++d) {
    if (to.dims[d].empty() || !from.dims[d].empty())
      continue;
    bool moved = false;
    for (const InferredCollective &c : fn.collectives)
      moved |= c.kind == CollectiveKind::AllToAll && c.afterOp == int(i) &&
               c.axis == to.dims[d];
    if (!moved)
      out.push_back({i, d});
  }
  return out;
}

} // namespace

/// Whether value `id`'s layout splits a dim through `name`.
bool splitAlong(const CheckedFunction &fn, unsigned id,
                const std::string &name) {
  if (id >= fn.layouts.size() || fn.values[id].isPackedShapes)
    return false;
  Shape shape = fn.ctx.expand(fn.values[id].type.shape);
  const ValueLayout &layout = fn.layouts[id];
  for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d)
    if (!layout.dims[d].empty() &&
        splitThrough(fn, id, shape[d], d).count(name))
      return true;
  return false;
}

Error shardedError(const CheckedModule &m, SourceLoc loc, std::string what) {
  return Error::at(ErrorKind::Program, m.pathOf(loc), loc.line, loc.col,
                   std::move(what));
}

bool reshardMoves(const CheckedFunction &fn, const InferredCollective &c) {
  return (c.kind == CollectiveKind::AllGather ||
          c.kind == CollectiveKind::AllToAll) &&
         c.afterOp >= 0 && fn.ops[size_t(c.afterOp)].reshardTo;
}

bool movesOperand(const CheckedFunction &fn, const InferredCollective &c) {
  if ((c.kind != CollectiveKind::AllGather &&
       c.kind != CollectiveKind::AllToAll) ||
      c.afterOp < 0)
    return false;
  const CheckedOp &op = fn.ops[size_t(c.afterOp)];
  return (op.kind == OpKind::Rearrange || op.kind == OpKind::Repeat ||
          op.kind == OpKind::Reduce || op.kind == OpKind::TakeAlong ||
          op.kind == OpKind::Dropout || op.kind == OpKind::Pack ||
          op.kind == OpKind::Unpack) &&
         !op.reshardTo;
}

unsigned movedValue(const CheckedFunction &fn, const InferredCollective &c) {
  return movesOperand(fn, c) ? fn.ops[size_t(c.afterOp)].operands.at(c.operand)
                             : c.value;
}

bool vocabParallel(const CheckedFunction &fn, const CheckedOp &op) {
  if (op.kind != OpKind::Take || op.operands.empty() ||
      op.operands[0] >= fn.layouts.size())
    return false;
  const ValueLayout &table = fn.layouts[op.operands[0]];
  return op.axis < table.dims.size() && !table.dims[op.axis].empty();
}

size_t phaseStart(const CheckedFunction &fn, size_t at) {
  return fn.ops[at].reshardTo ? at + 1 : at;
}

std::vector<AddedSplit> addedSplits(const CheckedFunction &fn) {
  std::vector<AddedSplit> out;
  for (size_t i = 0; i < fn.ops.size(); ++i)
    for (auto [op, d] : addedSplitsAt(fn, i))
      out.push_back({op, d, fn.layouts.at(fn.ops[op].results[0]).dims[d]});
  return out;
}

size_t scatteredDim(const CheckedFunction &fn, const InferredCollective &c) {
  const CheckedOp &op = fn.ops.at(size_t(c.afterOp));
  const ValueLayout &from = fn.layouts.at(op.operands.at(0));
  if (movesOperand(fn, c)) {
    // The operand's dim whose major axis is the major axis of the result
    // dim the split moves to.
    const ValueLayout &result = fn.layouts.at(c.value);
    if (!op.transform)
      return from.dims.size();
    const TransformInfo &t = *op.transform;
    for (size_t j = 0; j < result.dims.size() && j < t.outputGroups.size(); ++j)
      if (result.dims[j] == c.axis && !t.outputGroups[j].empty())
        for (size_t d = 0; d < t.inputGroups.size() && d < from.dims.size();
             ++d)
          if (t.inputGroups[d].size() == 1 &&
              t.inputGroups[d][0] == t.outputGroups[j][0])
            return d;
    return from.dims.size();
  }
  const ValueLayout &to = fn.layouts.at(c.value);
  for (size_t d = 0; d < from.dims.size() && d < to.dims.size(); ++d)
    if (to.dims[d] == c.axis && from.dims[d].empty())
      return d;
  return from.dims.size();
}

ErrorOr<std::map<std::string, size_t>>
scatteredNames(const CheckedModule &m, const CheckedFunction &fn) {
  std::map<std::string, size_t> scattered;
  auto add = [&](const std::string &name, size_t at,
                 SourceLoc loc) -> ErrorOr<void> {
    if (!scattered.emplace(name, at).second)
      return shardedError(
          m, loc,
          fmt::format("a sharded run splitting {} twice is not supported yet",
                      name));
    return {};
  };
  for (const InferredCollective &c : fn.collectives) {
    if (c.kind != CollectiveKind::AllToAll || !movesData(fn, c))
      continue;
    std::optional<std::string> name =
        loneNameAt(fn, movedValue(fn, c), scatteredDim(fn, c));
    if (!name)
      return shardedError(m, c.loc,
                          fmt::format("a sharded run of an all-to-all over {} "
                                      "onto a dim that is not a lone name "
                                      "({}) is not supported yet",
                                      c.axis, c.reason));
    if (auto added = add(*name, size_t(c.afterOp), c.loc); !added)
      return added.error();
  }
  for (const AddedSplit &a : addedSplits(fn)) {
    const CheckedOp &op = fn.ops[a.op];
    std::optional<std::string> name = loneNameAt(fn, op.results[0], a.dim);
    if (!name)
      return shardedError(m, op.loc,
                          fmt::format("a sharded run of a reshard splitting "
                                      "on {} a dim that is not a lone name "
                                      "is not supported yet",
                                      a.axis));
    if (auto added = add(*name, a.op, op.loc); !added)
      return added.error();
  }
  // Before the all-to-all the name is whole: such a value read after it
  // would need the whole binding in a part that binds the block's.
  for (auto &[name, at] : scattered)
    for (size_t i = at + 1; i < fn.ops.size(); ++i)
      for (unsigned id : fn.ops[i].operands) {
        if (producerOf(fn, id) >= int(at) || fn.values[id].isPackedShapes)
          continue;
        Shape shape = fn.ctx.expand(fn.values[id].type.shape);
        bool has = false;
        for (const Dim &d : shape)
          has |= d.size.symbols().count(name) > 0;
        if (has)
          return shardedError(
              m, fn.ops[i].loc,
              fmt::format("a sharded run where {} reads a value whole along "
                          "{} made before a {} split {} is not "
                          "supported yet",
                          opKindName(fn.ops[i].kind), name, moverName(fn, at),
                          name));
      }
  return scattered;
}

size_t gatheredDim(const CheckedFunction &fn, const InferredCollective &c) {
  const CheckedOp &op = fn.ops.at(size_t(c.afterOp));
  const ValueLayout &from = fn.layouts.at(op.operands.at(c.operand));
  const ValueLayout &to = fn.layouts.at(c.value);
  for (size_t d = 0; d < from.dims.size(); ++d)
    if (from.dims[d] == c.axis &&
        (movesOperand(fn, c) || (d < to.dims.size() && to.dims[d].empty())))
      return d;
  return from.dims.size();
}

ErrorOr<std::map<std::string, size_t>>
gatheredNames(const CheckedModule &m, const CheckedFunction &fn) {
  std::map<std::string, size_t> gathered;
  for (const InferredCollective &c : fn.collectives) {
    if (!movesData(fn, c))
      continue; // refused by collectivePoints
    std::optional<std::string> name =
        loneNameAt(fn, movedValue(fn, c), gatheredDim(fn, c));
    if (!name)
      return shardedError(m, c.loc,
                          fmt::format("a sharded run of an all-gather over {} "
                                      "of a dim that is not a lone name ({}) "
                                      "is not supported yet",
                                      c.axis, c.reason));
    // pack's tensors split along one name are gathered at the same op.
    if (auto [it, fresh] = gathered.emplace(*name, size_t(c.afterOp));
        !fresh && it->second != size_t(c.afterOp))
      return shardedError(
          m, c.loc,
          fmt::format("a sharded run gathering {} twice is not supported yet",
                      *name));
  }
  // After its gather a name is whole: a value split along it made or read
  // later would need the block's binding in the same part.
  for (auto &[name, at] : gathered)
    for (size_t i = at + 1; i < fn.ops.size(); ++i)
      for (auto *ids : {&fn.ops[i].operands, &fn.ops[i].results})
        for (unsigned id : *ids)
          if (splitAlong(fn, id, name))
            return shardedError(
                m, fn.ops[i].loc,
                fmt::format(
                    "a sharded run where {} reads or makes a value split "
                    "along {} after a {} gathered {} whole is not "
                    "supported yet",
                    opKindName(fn.ops[i].kind), name, moverName(fn, at), name));
  return gathered;
}

ErrorOr<std::map<std::string, std::string>>
splitNames(const CheckedModule &m, const CheckedFunction &fn) {
  std::map<std::string, std::string> split;
  auto gathered = gatheredNames(m, fn);
  if (!gathered)
    return gathered.error();
  // Whether value `id` is made at or after the reshard that gathers `name`.
  auto afterGather = [&](unsigned id, const std::string &name) {
    auto it = gathered->find(name);
    return it != gathered->end() && producerOf(fn, id) >= int(it->second);
  };
  auto scattered = scatteredNames(m, fn);
  if (!scattered)
    return scattered.error();
  for (auto &[name, at] : *scattered)
    if (gathered->count(name))
      return shardedError(m, fn.ops[at].loc,
                          fmt::format("a sharded run where a reshard splits "
                                      "{} and one gathers it is not "
                                      "supported yet",
                                      name));
  // Whether value `id` is made before the reshard that splits `name`.
  auto beforeScatter = [&](unsigned id, const std::string &name) {
    auto it = scattered->find(name);
    return it != scattered->end() && producerOf(fn, id) < int(it->second);
  };
  // Names along which a value is whole and not uniform (id: the first).
  std::map<std::string, unsigned> whole;
  // Per value, the names along which it is the same at every position:
  // its local block is the value computed with the block's size, so it may
  // stay whole where the name is split elsewhere (grad()'s broadcast of a
  // mean's gradient). A result is never: it is assembled by its layout
  // (holdUniformResults gives the split one to those that hold a block).
  std::vector<std::set<std::string>> uniform = uniformNames(fn);
  for (unsigned r : fn.returns)
    if (r < uniform.size())
      uniform[r].clear();
  std::set<std::string> axes(m.meshAxes.begin(), m.meshAxes.end());
  auto valueLoc = [&](unsigned id) {
    for (const CheckedOp &op : fn.ops)
      for (unsigned r : op.results)
        if (r == id)
          return op.loc;
    return fn.loc;
  };
  // Split dims whose size is a product (`(heads@tp e)`): resolved after
  // the lone names, through their major factor.
  struct Compound {
    unsigned id;
    Dim dim;
    size_t d;
    std::string axis;
  };
  std::vector<Compound> compounds;
  for (unsigned id = 0; id < fn.values.size() && id < fn.layouts.size(); ++id) {
    const Value &v = fn.values[id];
    if (v.isPackedShapes)
      continue;
    Shape shape = fn.ctx.expand(v.type.shape);
    const ValueLayout &layout = fn.layouts[id];
    for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d) {
      const std::string &axis = layout.dims[d];
      for (const std::string &s : shape[d].size.symbols())
        if (axes.count(s))
          return shardedError(m, valueLoc(id),
                              fmt::format("a sharded run of a value whose size "
                                          "names the mesh axis {} is not "
                                          "supported yet",
                                          s));
      if (axis.empty()) {
        for (const std::string &s : shape[d].size.symbols())
          if (!uniform[id].count(s) && !afterGather(id, s) &&
              !beforeScatter(id, s))
            whole.emplace(s, id);
        continue;
      }
      auto name = shape[d].size.asSymbol();
      if (!name) {
        compounds.push_back({id, shape[d], d, axis});
        continue;
      }
      auto [it, fresh] = split.emplace(*name, axis);
      if (!fresh && it->second != axis)
        return shardedError(
            m, valueLoc(id),
            fmt::format("a sharded run of {} split on {} in one value and "
                        "on {} in another is not supported yet",
                        *name, it->second, axis));
    }
  }
  for (const Compound &c : compounds) {
    // The factor the axis splits: the type's or the pattern's major
    // factor, else the one name of the product split on the axis
    // elsewhere.
    std::optional<std::string> major;
    if (auto through = splitThrough(fn, c.id, c.dim, c.d); through.size() == 1)
      major = *through.begin();
    if (!major)
      for (const std::string &s : c.dim.size.symbols())
        if (auto it = split.find(s); it != split.end() && it->second == c.axis)
          major = s;
    // Sound when the size is linear in the factor and names no other split
    // size (one gathered whole by then is whole): then the block's size is
    // the size with the factor's block.
    std::optional<SizeExpr> rest;
    if (major)
      rest = c.dim.size.divideExact(SizeExpr::symbol(*major));
    bool linear = rest && !rest->symbols().count(*major);
    if (linear)
      for (const std::string &s : rest->symbols())
        linear &= !split.count(s) || s == *major || afterGather(c.id, s);
    // Or the factor over a number k (`(h 2) -> h` of a split h*2): the
    // block's size (f/n)/k is the whole's block (f/k)/n when k*n divides f.
    if (!linear && major) {
      auto whole = SizeExpr::symbol(*major).evaluate(fn.ctx.env);
      auto size = c.dim.size.evaluate(fn.ctx.env);
      auto n = SizeExpr::symbol(c.axis).evaluate(fn.ctx.env);
      if (whole && size && n && *size > 0 && *whole % *size == 0) {
        Int k = *whole / *size;
        linear = c.dim.size == SizeExpr::quotient(SizeExpr::symbol(*major),
                                                  SizeExpr::constant(k)) &&
                 *whole % (k * *n) == 0;
      }
    }
    if (!linear)
      return shardedError(
          m, valueLoc(c.id),
          fmt::format("a sharded run of a dim split on {} whose size ({}) "
                      "is not a product through a split name is not "
                      "supported yet",
                      c.axis, bareDimStr(c.dim)));
    auto [it, fresh] = split.emplace(*major, c.axis);
    if (!fresh && it->second != c.axis)
      return shardedError(
          m, valueLoc(c.id),
          fmt::format("a sharded run of {} split on {} in one value and "
                      "on {} in another is not supported yet",
                      *major, it->second, c.axis));
  }
  // On an axis of one rank a block is the whole: a name split on it may be
  // whole elsewhere.
  auto oneBlock = [&](const std::string &axis) {
    auto n = SizeExpr::symbol(axis).evaluate(fn.ctx.env);
    return n && *n == 1;
  };
  for (auto &[name, axis] : split)
    if (auto it = whole.find(name); it != whole.end() && !oneBlock(axis))
      return shardedError(
          m, valueLoc(it->second),
          fmt::format("a sharded run of '{}' where {} is split on {} in "
                      "some values and whole in others (a value of the "
                      "whole size made inside the function, not by a "
                      "reshard or a rearrange's collective) "
                      "is not supported yet",
                      fn.name, name, axis));
  // A value kept whole along a split name only because it is uniform is
  // computed at the block's size: it may only meet split values
  // elementwise (a reduce or einsum over its dim would count the block).
  auto wholeAlong = [&](unsigned id, const std::string &name) {
    if (id >= fn.layouts.size())
      return false;
    Shape shape = fn.ctx.expand(fn.values[id].type.shape);
    const ValueLayout &layout = fn.layouts[id];
    for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d)
      if (layout.dims[d].empty() && shape[d].size.symbols().count(name))
        return true;
    return false;
  };
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    const CheckedOp &op = fn.ops[i];
    for (unsigned o : op.operands) {
      if (o >= uniform.size())
        continue;
      for (const std::string &name : uniform[o]) {
        // Computed at the block's size before a gather of its name, read
        // after it where the name is bound whole.
        if (auto g = gathered->find(name);
            g != gathered->end() && i > g->second && wholeAlong(o, name) &&
            !afterGather(o, name))
          return shardedError(
              m, op.loc,
              fmt::format("a sharded run of a {} reading a value whole along "
                          "{} made before a {} gathered {} is not "
                          "supported yet",
                          opKindName(op.kind), name, moverName(fn, g->second),
                          name));
        auto it = split.find(name);
        if (it == split.end() || !wholeAlong(o, name) || afterGather(o, name) ||
            beforeScatter(o, name))
          continue;
        bool keeps = !op.results.empty();
        for (unsigned r : op.results)
          keeps &= fn.values[r].isPackedShapes ||
                   (r < uniform.size() &&
                    (!wholeAlong(r, name) || uniform[r].count(name)));
        if (!positionwise(fn, op, name) || !keeps)
          return shardedError(
              m, op.loc,
              fmt::format("a sharded run of a {} reading a value whole "
                          "along {} (split on {} elsewhere) is not "
                          "supported yet",
                          opKindName(op.kind), name, it->second));
      }
    }
  }
  // Ops that read a size as a number, or draw random numbers per element,
  // would see the block's size, not the whole's.
  auto mentionsSplit = [&](const SizeExpr &e) {
    for (const std::string &s : e.symbols())
      if (split.count(s))
        return true;
    return false;
  };
  auto touchesSplit = [&](const CheckedOp &op) {
    for (auto *ids : {&op.operands, &op.results})
      for (unsigned id : *ids)
        if (id < fn.layouts.size() && fn.layouts[id].sharded())
          return true;
    return false;
  };
  // Whether `op`'s operand is gathered along `axis` before it (layout
  // inference's answer to such a factor on the operand's side).
  auto gatheredFirst = [&](const CheckedOp &op, const std::string &axis) {
    for (const InferredCollective &c : fn.collectives)
      if (c.afterOp >= 0 && &fn.ops[size_t(c.afterOp)] == &op &&
          c.kind == CollectiveKind::AllGather && c.operand == 0 &&
          c.axis == axis && movesOperand(fn, c))
        return true;
    return false;
  };
  // Whether a number given for pattern axis `axis` would be read as the
  // block's size: the axis is the major factor (the one split) of a split
  // dim of the operand or the result. A minor factor or a new axis has its
  // whole size in the block too. Ops without a transform: always.
  auto numberSizesSplit = [&](const CheckedOp &op, const std::string &axis) {
    if (!op.transform || op.operands.empty() || op.results.empty())
      return true;
    auto splits = [&](unsigned id,
                      const std::vector<std::vector<std::string>> &groups) {
      if (id >= fn.layouts.size())
        return true;
      const ValueLayout &layout = fn.layouts[id];
      if (layout.dims.size() != groups.size())
        return layout.sharded();
      for (size_t d = 0; d < groups.size(); ++d)
        if (!layout.dims[d].empty() && !groups[d].empty() &&
            groups[d].front() == axis &&
            !(id == op.operands[0] && gatheredFirst(op, layout.dims[d])))
          return true;
      return false;
    };
    return splits(op.operands[0], op.transform->inputGroups) ||
           splits(op.results[0], op.transform->outputGroups);
  };
  // A split dim of a transform's operand or result whose pattern group's
  // major factor does not divide into the axis's blocks: a rank's block
  // would not be a block of that factor.
  auto unevenMajor = [&](const CheckedOp &op) -> std::optional<std::string> {
    if (!op.transform || op.operands.empty() || op.results.empty())
      return std::nullopt;
    const TransformInfo &t = *op.transform;
    for (auto [id, groups] : {std::pair{op.operands[0], &t.inputGroups},
                              std::pair{op.results[0], &t.outputGroups}}) {
      if (id >= fn.layouts.size() ||
          fn.layouts[id].dims.size() != groups->size())
        continue;
      for (size_t d = 0; d < groups->size(); ++d) {
        const std::string &axis = fn.layouts[id].dims[d];
        if (axis.empty() || (*groups)[d].empty() ||
            (id == op.operands[0] && gatheredFirst(op, axis)))
          continue;
        auto it = t.axisSizes.find((*groups)[d].front());
        if (it == t.axisSizes.end())
          continue;
        auto size = it->second.evaluate(fn.ctx.env);
        auto n = SizeExpr::symbol(axis).evaluate(fn.ctx.env);
        if (!size || !n || *n <= 0)
          continue;
        if (*size % *n != 0)
          return toString(*size);
      }
    }
    return std::nullopt;
  };
  // The table a scatter_add writes, split along the ids' axis (a take's
  // is vocab-parallel: the run takes it on the host).
  auto splitTable = [&](const CheckedOp &op) {
    if (op.kind != OpKind::ScatterAdd)
      return false;
    const std::vector<unsigned> &ids =
        op.kind == OpKind::Take ? op.operands : op.results;
    if (ids.empty() || ids[0] >= fn.layouts.size())
      return true;
    const ValueLayout &table = fn.layouts[ids[0]];
    return op.axis >= table.dims.size() || !table.dims[op.axis].empty();
  };
  for (const CheckedOp &op : fn.ops) {
    std::string what;
    if (op.kind == OpKind::Arange && mentionsSplit(op.sizeValue))
      what = "arange of a split size";
    else if (op.kind == OpKind::Slice &&
             (mentionsSplit(op.sliceStart) || mentionsSplit(op.sliceStop)))
      what = "a slice bounded by a split size";
    else if (splitTable(op))
      what = "scatter_add into a table split along the ids' axis (the "
             "gradient of a vocab-parallel take)";
    else if (auto major = unevenMajor(op))
      what = fmt::format("a {} splitting a dim through a major factor of "
                         "size {}, which does not divide into the blocks",
                         opKindName(op.kind), *major);
    else if (touchesSplit(op)) {
      for (const SizeArg &size : op.sizes) {
        if (!size.value.asSymbol() && mentionsSplit(size.value))
          what = fmt::format("a {}'s keyword size {}={} of a split value",
                             opKindName(op.kind), size.name, size.value.str());
        else if (size.value.isConstant() && numberSizesSplit(op, size.name))
          what = fmt::format("a {}'s keyword size {}={} (a number) on a split "
                             "value; name the dim instead",
                             opKindName(op.kind), size.name, size.value.str());
      }
    }
    if (!what.empty())
      return shardedError(
          m, op.loc,
          fmt::format("a sharded run of {} is not supported yet", what));
  }
  if (auto points = collectivePoints(m, fn); !points)
    return points.error();
  return split;
}

const CheckedOp *
foldWholeSizes(CheckedFunction &local, const CheckedFunction &whole,
               const std::map<std::string, std::string> &split) {
  for (size_t i = 0; i < local.ops.size(); ++i) {
    CheckedOp &op = local.ops[i];
    // A constant the checker folded from a size is the whole's (one not
    // from a size is the same in both).
    if (op.kind == OpKind::Constant && whole.ops[i].kind == OpKind::Constant) {
      op.constant = whole.ops[i].constant;
      op.constantIsInt = whole.ops[i].constantIsInt;
      op.constantInt = whole.ops[i].constantInt;
      continue;
    }
    if (op.kind != OpKind::Size)
      continue;
    bool readsSplit = false;
    for (const std::string &symbol : op.sizeValue.symbols())
      readsSplit |= split.count(symbol) > 0;
    if (!readsSplit)
      continue;
    auto known = op.sizeValue.evaluate(whole.ctx.env);
    if (!known)
      return &op;
    DType dtype = local.values[op.results.at(0)].type.dtype;
    op.kind = OpKind::Constant;
    op.sizeValue = SizeExpr();
    op.constant = static_cast<double>(*known);
    op.constantIsInt = true;
    if (!isFloat(dtype) && dtype != DType::Bool)
      op.constantInt = static_cast<int64_t>(*known);
  }
  return nullptr;
}

} // namespace ein
