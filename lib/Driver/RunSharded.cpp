// `einc run --ranks N --simulate` of a sharded program (docs/distributed.md
// §4): each simulated rank runs the local program on its blocks, the
// collectives on the results complete them, the blocks are assembled.
#include "ein/Driver/Run.h"
#include "ein/Driver/Train.h"
#include "ein/Engine/Engine.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Sema/Layout.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace ein {

namespace {

Error shardedError(const CheckedModule &m, SourceLoc loc, std::string what) {
  return Error::at(ErrorKind::Program, m.pathOf(loc), loc.line, loc.col,
                   std::move(what));
}

/// The local program is the function itself with every split name bound to
/// its block's size: sound only when a name split on an axis is split on it
/// in every value that has it, and nothing reads a split size as a number.
/// Returns the split names (name -> axis), or why the program cannot be run
/// that way, by name.
ErrorOr<std::map<std::string, std::string>>
splitNames(const CheckedModule &m, const CheckedFunction &fn) {
  std::map<std::string, std::string> split;
  // Names along which a value is whole and not uniform (id: the first).
  std::map<std::string, unsigned> whole;
  // Per value, the names along which it is the same at every position (a
  // fill, a repeat's new dim, arithmetic of such): its local block is the
  // value computed with the block's size, so it may stay whole where the
  // name is split elsewhere (grad()'s broadcast of a mean's gradient). A
  // result is never: it is assembled by its layout.
  std::vector<std::set<std::string>> uniform(fn.values.size());
  auto symbolsOf = [&](unsigned id) {
    std::set<std::string> out;
    for (const Dim &d : fn.ctx.expand(fn.values[id].type.shape))
      for (const std::string &s : d.size.symbols())
        out.insert(s);
    return out;
  };
  for (const CheckedOp &op : fn.ops) {
    if (op.results.size() != 1 || op.results[0] >= uniform.size())
      continue;
    std::set<std::string> mine = symbolsOf(op.results[0]),
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
          if (o < uniform.size() && symbolsOf(o).count(name) &&
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
          if (!uniform[id].count(s))
            whole.emplace(s, id);
        continue;
      }
      auto name = shape[d].size.asSymbol();
      if (!name) {
        compounds.push_back({id, shape[d], axis});
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
    // The factor the axis splits: the type's major factor, else the one
    // name of the product split on the axis elsewhere.
    std::optional<std::string> major = c.dim.meshMajor.asSymbol();
    if (!major)
      for (const std::string &s : c.dim.size.symbols())
        if (auto it = split.find(s); it != split.end() && it->second == c.axis)
          major = s;
    // Sound when the size is linear in the factor and names no other split
    // size: then the block's size is the size with the factor's block.
    std::optional<SizeExpr> rest;
    if (major)
      rest = c.dim.size.divideExact(SizeExpr::symbol(*major));
    bool linear = rest && !rest->symbols().count(*major);
    if (linear)
      for (const std::string &s : rest->symbols())
        linear &= !split.count(s) || s == *major;
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
  for (auto &[name, axis] : split)
    if (auto it = whole.find(name); it != whole.end())
      return shardedError(
          m, valueLoc(it->second),
          fmt::format("a sharded run of '{}' where {} is split on {} in "
                      "some values and whole in others (an all-gather, "
                      "or a value of the whole size, inside the function) "
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
  for (const CheckedOp &op : fn.ops)
    for (unsigned o : op.operands) {
      if (o >= uniform.size())
        continue;
      for (const std::string &name : uniform[o]) {
        auto it = split.find(name);
        if (it == split.end() || !wholeAlong(o, name))
          continue;
        bool elementwise =
            op.kind == OpKind::Elementwise || op.kind == OpKind::Cast;
        bool keeps = !op.results.empty() && op.results[0] < uniform.size() &&
                     (!wholeAlong(op.results[0], name) ||
                      uniform[op.results[0]].count(name));
        if (!elementwise || !keeps)
          return shardedError(
              m, op.loc,
              fmt::format("a sharded run of a {} reading a value whole "
                          "along {} (split on {} elsewhere) is not "
                          "supported yet",
                          opKindName(op.kind), name, it->second));
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
  // The table a take reads or a scatter_add writes, split along the ids'
  // axis.
  auto splitTable = [&](const CheckedOp &op) {
    if (op.kind != OpKind::Take && op.kind != OpKind::ScatterAdd)
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
      what = fmt::format("{} on a table split along the ids' axis (a "
                         "vocab-parallel lookup: the local take needs the "
                         "ids shifted and masked)",
                         opKindName(op.kind));
    else if (op.kind == OpKind::Dropout && touchesSplit(op))
      what = "dropout of a split value (each rank would draw its own mask)";
    else if (touchesSplit(op)) {
      for (const SizeArg &size : op.sizes) {
        if (!size.value.asSymbol() && mentionsSplit(size.value))
          what = fmt::format("a {}'s keyword size {}={} of a split value",
                             opKindName(op.kind), size.name, size.value.str());
        else if (size.value.isConstant())
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
  // An all-reduce runs between two parts of the local program (after the
  // op that made the partial sums); a reduce-scatter only on a result
  // nothing reads after it (completed as an all-reduce whose blocks the
  // assembly takes). Others change a value's local shape.
  for (const InferredCollective &c : fn.collectives) {
    bool returned = false;
    for (unsigned r : fn.returns)
      returned |= r == c.value;
    bool readAfter = false;
    for (size_t i = c.afterOp < 0 ? 0 : size_t(c.afterOp) + 1;
         i < fn.ops.size(); ++i)
      for (unsigned o : fn.ops[i].operands)
        readAfter |= o == c.value;
    bool kindOk =
        c.afterOp >= 0 &&
        (c.kind == CollectiveKind::AllReduce ||
         (c.kind == CollectiveKind::ReduceScatter && returned && !readAfter));
    bool reductionOk =
        c.reduction == ReduceKind::Sum || c.reduction == ReduceKind::Mean ||
        c.reduction == ReduceKind::Max || c.reduction == ReduceKind::Min;
    if (!kindOk || !reductionOk)
      return shardedError(
          m, c.loc,
          fmt::format("a sharded run of an {} ({}) over {} ({}) is not "
                      "supported yet: all-reduces and the results' "
                      "reduce-scatters of sum, mean, max and min run",
                      collectiveName(c.kind), reduceKindName(c.reduction),
                      c.axis, c.reason));
  }
  return split;
}

/// Copies between a whole C-order tensor and one block of it: the block
/// starts at `offset` and has `block`'s shape. `toBlock` copies whole ->
/// block, else block -> whole.
void copyBlock(runtime::HostTensor &whole, runtime::HostTensor &block,
               const std::vector<int64_t> &offset, bool toBlock) {
  size_t rank = whole.shape.size();
  size_t bytes = whole.elementBytes();
  if (block.numElements() == 0)
    return;
  std::vector<int64_t> ws = whole.strides(), bs = block.strides();
  // The innermost dim is copied as one run.
  size_t run = rank ? size_t(block.shape[rank - 1]) * bytes : bytes;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t w = 0, b = 0;
    for (size_t d = 0; d < rank; ++d) {
      w += (index[d] + offset[d]) * ws[d];
      b += index[d] * bs[d];
    }
    uint8_t *wp = whole.data.data() + w * int64_t(bytes);
    uint8_t *bp = block.data.data() + b * int64_t(bytes);
    std::memcpy(toBlock ? bp : wp, toBlock ? wp : bp, run);
    // Next index over all but the innermost dim.
    size_t d = rank ? rank - 1 : 0;
    bool done = true;
    while (d-- > 0) {
      if (++index[d] < block.shape[d]) {
        done = false;
        break;
      }
      index[d] = 0;
    }
    if (done)
      return;
  }
}

template <typename T> void scale(runtime::HostTensor &t, double by) {
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    T a;
    std::memcpy(&a, t.data.data() + i * sizeof(T), sizeof(T));
    a = static_cast<T>(a / static_cast<T>(by));
    std::memcpy(t.data.data() + i * sizeof(T), &a, sizeof(T));
  }
}

/// Completes `c`'s partial results in `value` over `group` (the ranks
/// that differ only on the collective's axis): sum, max or min in place;
/// a mean is a sum divided by the group's size.
ErrorOr<void> allReduce(Communicator &group, runtime::HostTensor &value,
                        const InferredCollective &c, DType dtype) {
  runtime::StorageType type = value.type;
  bool wide =
      type == runtime::StorageType::F32 || type == runtime::StorageType::F64;
  // The communicator sums f16 and bf16 in f32, rounded once, and integers
  // exactly; a mean's division is done here in f32 and f64 only.
  if (!isReducibleType(type) || (c.reduction == ReduceKind::Mean && !wide))
    return Error::usage(fmt::format(
        "a sharded run's {} ({}) of a {} value is not supported yet",
        collectiveName(c.kind), reduceKindName(c.reduction), dtypeName(dtype)));
  ReduceOp op = c.reduction == ReduceKind::Max   ? ReduceOp::Max
                : c.reduction == ReduceKind::Min ? ReduceOp::Min
                                                 : ReduceOp::Sum;
  if (auto done =
          group.allReduce(value.data.data(), type, value.numElements(), op);
      !done)
    return done;
  if (c.reduction == ReduceKind::Mean) {
    if (type == runtime::StorageType::F32)
      scale<float>(value, double(group.size()));
    else
      scale<double>(value, double(group.size()));
  }
  return {};
}

} // namespace

ErrorOr<void> runSharded(const SourceFile &file, const Module &module,
                         const CheckOptions &check, const RunOptions &options,
                         std::ostream &out) {
  (void)out;
  // MPI ranks: outside mpirun, launch the job (this command again under
  // `mpirun -n N`, as einc train --ranks does); each rank then runs below.
  if (!options.simulate && launcherWorldSize() == 0)
    return launchRanks(options.ranks, options.argv);
  if (options.target != "cpu")
    return Error::usage(fmt::format(
        "a sharded run on --target={} is not supported yet: collectives on "
        "the CUDA target need NCCL (issue 30, step 5); use --target=cpu",
        options.target));
  if (options.time || options.sizeGeneric)
    return Error::usage("--time and --size-generic are not supported yet by "
                        "a sharded run (--ranks)");
  auto target = lookupTarget(options.target, TargetUse::Run);
  if (!target)
    return target.error();

  // The global check: layouts, collectives, the mesh's sizes.
  Engine engine(options.cpu, options.jit);
  CheckOptions global = check;
  global.onlyFunction = options.function;
  global.loopsMayStaySymbolic = true;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, global, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  const CheckedFunction *fn = checked.find(options.function);
  if (!fn)
    return noFunctionError(file.path, options.function, module.functionNames());
  std::vector<int64_t> axisSize;
  int64_t product = 1;
  for (const std::string &axis : checked.meshAxes) {
    auto n = SizeExpr::symbol(axis).evaluate(fn->ctx.env);
    if (!n)
      return Error::usage(fmt::format(
          "a sharded run needs the size of mesh axis {}: give --mesh {}=N",
          axis, axis));
    axisSize.push_back(int64_t(*n));
    product *= int64_t(*n);
  }
  if (product != options.ranks)
    return Error::usage(fmt::format(
        "--ranks {} does not match the mesh ({} rank(s): the product of its "
        "axes' sizes)",
        options.ranks, product));

  // Inputs, whole; the global bind runs the entry checks (divisibility
  // included) and gives the results' whole shapes.
  auto inputs = readInputs(*fn, options.function, options.inputs);
  if (!inputs)
    return inputs.error();
  std::vector<std::vector<int64_t>> shapes;
  for (runtime::HostTensor &t : *inputs) {
    t = t.toCOrder();
    shapes.push_back(t.shape);
  }
  if (options.outputs.size() != fn->results.size())
    return Error::usage(fmt::format(
        "function '{}' returns {} value(s): give one --out for each (got {})",
        options.function, fn->results.size(), options.outputs.size()));
  auto wholeBound = engine.bind(file, module, check, checked, options.function,
                                shapes, Specialisation::Sizes);
  if (!wholeBound)
    return wholeBound.error();
  const CheckedFunction *bfn = wholeBound->concrete.find(options.function);
  auto split = splitNames(wholeBound->concrete, *bfn);
  if (!split)
    return split.error();

  // The local program: the function on a mesh of one rank per axis (so
  // its sizes are blocks), checked once for every rank.
  CheckOptions local = global;
  for (const std::string &axis : checked.meshAxes)
    local.meshSizes[axis] = 1;
  // A split name bound by `dim` or --dim is its block's size there.
  for (auto &[name, axis] : *split) {
    auto size = SizeExpr::symbol(name).evaluate(bfn->ctx.env);
    auto n = SizeExpr::symbol(axis).evaluate(fn->ctx.env);
    if (size && n &&
        (checked.dims.count(name) || check.dimOverrides.count(name)))
      local.dimOverrides[name] = *size / *n;
  }
  DiagnosticEngine localDiags(file);
  CheckedModule localChecked = checkModule(module, local, localDiags);
  if (localDiags.hadError())
    return errorFromDiagnostics(localDiags);

  auto axisIndex = [&](const std::string &axis) {
    for (size_t i = 0; i < checked.meshAxes.size(); ++i)
      if (checked.meshAxes[i] == axis)
        return i;
    return size_t(0);
  };
  // Rank r's coordinate on each axis: row-major, the last axis fastest.
  auto coordinate = [&](int64_t r) {
    std::vector<int64_t> c(axisSize.size());
    for (size_t i = axisSize.size(); i-- > 0;) {
      c[i] = r % axisSize[i];
      r /= axisSize[i];
    }
    return c;
  };
  // A value's block on a rank: per dim, offset and size.
  auto blockOf = [&](unsigned id, const std::vector<int64_t> &wholeShape,
                     const std::vector<int64_t> &coord,
                     std::vector<int64_t> &offset) {
    std::vector<int64_t> shape = wholeShape;
    offset.assign(shape.size(), 0);
    const ValueLayout &layout = bfn->layouts[id];
    for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d) {
      if (layout.dims[d].empty())
        continue;
      size_t a = axisIndex(layout.dims[d]);
      shape[d] /= axisSize[a];
      offset[d] = coord[a] * shape[d];
    }
    return shape;
  };

  // The local shapes: every rank's blocks have one shape.
  std::vector<std::vector<int64_t>> localShapes;
  std::vector<int64_t> origin(axisSize.size(), 0), unused;
  for (size_t i = 0; i < inputs->size(); ++i)
    localShapes.push_back(
        blockOf(bfn->params[i], (*inputs)[i].shape, origin, unused));
  auto bound = engine.bind(file, module, local, localChecked, options.function,
                           localShapes, Specialisation::Sizes);
  if (!bound) {
    Error error = bound.error();
    error.withNote("a sharded run checks the function at its blocks' sizes "
                   "(a dim split on an axis of n ranks has 1/n of its size); "
                   "a number in a pattern or type for a split dim is not "
                   "supported yet");
    return error;
  }
  if (bound->concrete.find(options.function)->ops.size() != bfn->ops.size() ||
      bound->concrete.find(options.function)->values.size() !=
          bfn->values.size())
    return Error::program("the local program of a sharded run does not have "
                          "the whole program's ops");
  // A size read as a number (grad()'s count of a mean) is the whole's: a
  // constant in the local program, as Specialise folds known sizes.
  CheckedFunction localFn = *bound->concrete.find(options.function);
  const CheckedFunction *lfn = &localFn;
  for (size_t i = 0; i < localFn.ops.size(); ++i) {
    CheckedOp &op = localFn.ops[i];
    // Specialise folded the sizes it knew into constants: the whole
    // program's are the right ones (a constant not from a size is the same
    // in both).
    if (op.kind == OpKind::Constant && bfn->ops[i].kind == OpKind::Constant) {
      op.constant = bfn->ops[i].constant;
      op.constantIsInt = bfn->ops[i].constantIsInt;
      op.constantInt = bfn->ops[i].constantInt;
      continue;
    }
    if (op.kind != OpKind::Size)
      continue;
    bool readsSplit = false;
    for (const std::string &name : op.sizeValue.symbols())
      readsSplit |= split->count(name) > 0;
    auto known = op.sizeValue.evaluate(bfn->ctx.env);
    if (!readsSplit)
      continue;
    if (!known)
      return Error::program("a size of a sharded run is not known");
    DType dtype = localFn.values[op.results.at(0)].type.dtype;
    op.kind = OpKind::Constant;
    op.sizeValue = SizeExpr();
    op.constant = static_cast<double>(*known);
    op.constantIsInt = true;
    if (!isFloat(dtype) && dtype != DType::Bool)
      op.constantInt = static_cast<int64_t>(*known);
  }
  // Cut after each op an all-reduce follows: each part is compiled as a
  // function of the values it reads, returning those read later.
  struct Part {
    std::shared_ptr<Callable> callable;
    std::vector<unsigned> params, returns;
    size_t end;
  };
  std::vector<Part> parts;
  std::set<size_t> cuts;
  for (const InferredCollective &c : bfn->collectives)
    cuts.insert(size_t(c.afterOp));
  if (!lfn->ops.empty())
    cuts.insert(lfn->ops.size() - 1);
  std::set<unsigned> finals(lfn->returns.begin(), lfn->returns.end());
  TargetOptions targetOptions;
  targetOptions.cpu = options.cpu;
  size_t begin = 0;
  for (size_t end : cuts) {
    CheckedModule module1 = bound->concrete;
    module1.meshAxes.clear(); // one rank's program: no collective in it
    module1.functions = {*lfn};
    CheckedFunction &pf = module1.functions.front();
    pf.layouts.clear();
    pf.collectives.clear();
    pf.layoutDemands.clear();
    pf.ops.assign(lfn->ops.begin() + long(begin),
                  lfn->ops.begin() + long(end) + 1);
    std::set<unsigned> made, read;
    for (const CheckedOp &op : pf.ops) {
      for (unsigned o : op.operands)
        if (!made.count(o))
          read.insert(o);
      for (unsigned o : op.results)
        made.insert(o);
    }
    std::set<unsigned> later(finals);
    for (size_t i = end + 1; i < lfn->ops.size(); ++i)
      for (unsigned o : lfn->ops[i].operands)
        later.insert(o);
    pf.params.assign(read.begin(), read.end());
    pf.returns.clear();
    pf.results.clear();
    for (unsigned id : made)
      if (later.count(id)) {
        pf.returns.push_back(id);
        pf.results.push_back(pf.values[id].type);
      }
    std::string key = fmt::format("sharded part {}-{} of {}\n{}", begin, end,
                                  file.path, file.text);
    for (auto &shape : localShapes)
      for (int64_t n : shape)
        key += fmt::format("{},", n);
    auto callable =
        engine.compile(**target, key, module1, options.function, targetOptions);
    if (!callable)
      return callable.error();
    parts.push_back({*callable, pf.params, pf.returns, end});
    begin = end + 1;
  }

  // One rank: its blocks, the parts in turn with the all-reduces between
  // them on the axes' groups, then the results' blocks gathered to rank 0,
  // which assembles them. `callMutex` (simulated ranks) keeps one compiled
  // call at a time; collectives run outside it.
  std::vector<runtime::HostTensor> results(bfn->returns.size());
  std::mutex callMutex;
  auto runRank = [&](Communicator &world) -> ErrorOr<void> {
    int64_t rank = world.rank();
    std::vector<int64_t> coord = coordinate(rank);
    std::map<unsigned, runtime::HostTensor> env;
    for (size_t i = 0; i < inputs->size(); ++i) {
      std::vector<int64_t> offset;
      auto shape = blockOf(bfn->params[i], (*inputs)[i].shape, coord, offset);
      auto block = runtime::HostTensor::create((*inputs)[i].type, shape);
      if (!block)
        return block.error();
      copyBlock((*inputs)[i], *block, offset, true);
      env[bfn->params[i]] = std::move(*block);
    }
    // Every axis's group, made by every rank in the same order.
    std::vector<std::unique_ptr<Communicator>> groups;
    for (size_t a = 0; a < axisSize.size(); ++a) {
      auto group = meshAxisGroup(world, axisSize, a);
      if (!group)
        return group.error();
      groups.push_back(std::move(*group));
    }
    for (const Part &part : parts) {
      std::vector<const runtime::HostTensor *> ins;
      for (unsigned id : part.params) {
        auto it = env.find(id);
        if (it == env.end())
          return Error::program("a part of a sharded run reads a value no "
                                "part made");
        ins.push_back(&it->second);
      }
      std::vector<runtime::HostTensor> outputs;
      for (unsigned id : part.returns) {
        std::vector<int64_t> shape;
        for (auto &d : lfn->ctx.expand(lfn->values[id].type.shape))
          shape.push_back(int64_t(*d.size.evaluate(lfn->ctx.env)));
        auto t = runtime::HostTensor::create(
            runtime::toStorage(lfn->values[id].type.dtype), shape);
        if (!t)
          return t.error();
        outputs.push_back(std::move(*t));
      }
      std::vector<runtime::HostTensor *> outs;
      for (auto &t : outputs)
        outs.push_back(&t);
      ErrorOr<void> called = [&] {
        std::lock_guard<std::mutex> lock(callMutex);
        int64_t status = 0;
        return part.callable->call(ins, outs, bound->dims, &status);
      }();
      // A call may fail on one rank only (an id out of range in its
      // block): every rank learns it here and leaves, instead of the
      // others waiting in the next collective until its timeout.
      int64_t failed = called ? 0 : 1;
      if (auto agreed = world.allReduce(&failed, runtime::StorageType::I64, 1,
                                        ReduceOp::Max);
          !agreed)
        return agreed.error();
      if (!called)
        return called.error();
      if (failed)
        return Error::usage(
            fmt::format("rank {} stopped: another rank failed", rank));
      for (size_t k = 0; k < part.returns.size(); ++k)
        env[part.returns[k]] = std::move(outputs[k]);
      for (const InferredCollective &c : bfn->collectives)
        if (size_t(c.afterOp) == part.end)
          if (auto done = allReduce(*groups[axisIndex(c.axis)], env.at(c.value),
                                    c, bfn->values[c.value].type.dtype);
              !done)
            return done.error();
    }
    // The results: each rank's block gathered, assembled on rank 0.
    for (size_t k = 0; k < bfn->returns.size(); ++k) {
      runtime::HostTensor &block = env.at(bfn->returns[k]);
      int64_t count = block.numElements();
      std::vector<uint8_t> all(size_t(count) * block.elementBytes() *
                               size_t(world.size()));
      if (auto gathered =
              world.allGather(block.data.data(), all.data(), block.type, count);
          !gathered)
        return gathered.error();
      if (rank != 0)
        continue;
      auto whole =
          runtime::HostTensor::create(block.type, wholeBound->resultShapes[k]);
      if (!whole)
        return whole.error();
      for (int64_t q = 0; q < world.size(); ++q) {
        std::vector<int64_t> offset;
        auto shape =
            blockOf(bfn->returns[k], whole->shape, coordinate(q), offset);
        if (shape != block.shape)
          return Error::program(fmt::format(
              "result {} of rank {} has not the block's shape", k + 1, q));
        runtime::HostTensor theirs = block;
        std::memcpy(theirs.data.data(),
                    all.data() + size_t(q) * theirs.data.size(),
                    theirs.data.size());
        copyBlock(*whole, theirs, offset, false);
      }
      results[k] = std::move(*whole);
    }
    return {};
  };

  if (options.simulate) {
    auto comms = simulatedRanks(int(options.ranks));
    std::vector<std::optional<Error>> errors(comms.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < comms.size(); ++r)
      threads.emplace_back([&, r] {
        if (auto ran = runRank(*comms[r]); !ran)
          errors[r] = ran.error();
      });
    for (std::thread &t : threads)
      t.join();
    for (auto &e : errors)
      if (e && e->message.find("another rank failed") == std::string::npos)
        return *e;
    for (auto &e : errors)
      if (e)
        return *e;
    return writeRunOutputs(*bfn, options, results);
  }
  auto world = mpiWorld();
  if (!world)
    return world.error();
  if ((*world)->size() != options.ranks)
    return Error::usage(fmt::format("--ranks {} under an mpirun of {} ranks",
                                    options.ranks, (*world)->size()));
  if (auto ran = runRank(**world); !ran) {
    abandonMPI();
    return ran.error();
  }
  if ((*world)->rank() != 0)
    return {};
  return writeRunOutputs(*bfn, options, results);
}

} // namespace ein
