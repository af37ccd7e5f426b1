// `einc run --ranks N [--simulate]` of a sharded program
// (docs/distributed.md §4), and its library entry points (Sharded.h, also
// under the C++ API's sharded call): each rank (a thread or an MPI process)
// runs the local program's parts on its blocks, all-reducing between them,
// and rank 0 assembles the results.
#include "EmitSharded.h"
#include "LocalProgram.h"
#include "ein/Driver/Run.h"
#include "ein/Driver/Sharded.h"
#include "ein/Driver/Train.h"
#include "ein/Engine/Engine.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Sema/Layout.h"
#include "ein/Support/Hash.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace ein {

namespace {

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

/// Gathers `value`'s blocks along dim `d` over `group` (ranked by their
/// coordinate on the axis): the group's blocks in rank order, whole along
/// `d`. Any dim, not only the leading one: each rank's block is copied
/// into its place of the whole (the all-gather concatenates flat buffers).
ErrorOr<void> allGather(Communicator &group, runtime::HostTensor &value,
                        size_t d) {
  if (d >= value.shape.size())
    return Error::program("a sharded run's all-gather has no gathered dim");
  int64_t count = value.numElements();
  int64_t n = group.size();
  std::vector<uint8_t> all(value.data.size() * size_t(n));
  if (auto gathered =
          group.allGather(value.data.data(), all.data(), value.type, count);
      !gathered)
    return gathered;
  std::vector<int64_t> shape = value.shape;
  shape[d] *= n;
  auto whole = runtime::HostTensor::create(value.type, shape);
  if (!whole)
    return whole.error();
  for (int64_t q = 0; q < n; ++q) {
    std::memcpy(value.data.data(), all.data() + size_t(q) * value.data.size(),
                value.data.size());
    std::vector<int64_t> offset(shape.size(), 0);
    offset[d] = q * value.shape[d];
    copyBlock(*whole, value, offset, false);
  }
  value = std::move(*whole);
  return {};
}

/// Moves `value`'s split over `group` from dim `from` to dim `to`: block q
/// of this rank's `to` goes to rank q, and the blocks received are placed
/// along `from` in rank order (each copied into its place: any dims).
ErrorOr<void> allToAll(Communicator &group, runtime::HostTensor &value,
                       size_t from, size_t to) {
  int64_t n = group.size();
  size_t rank = value.shape.size();
  if (from >= rank || to >= rank || value.shape[to] % n != 0)
    return Error::program("a sharded run's all-to-all has no dims to move");
  std::vector<int64_t> chunkShape = value.shape;
  chunkShape[to] /= n;
  auto chunk = runtime::HostTensor::create(value.type, chunkShape);
  if (!chunk)
    return chunk.error();
  size_t bytes = chunk->data.size();
  std::vector<uint8_t> send(bytes * size_t(n)), recv(bytes * size_t(n));
  for (int64_t q = 0; q < n; ++q) {
    std::vector<int64_t> offset(rank, 0);
    offset[to] = q * chunkShape[to];
    copyBlock(value, *chunk, offset, true);
    std::memcpy(send.data() + size_t(q) * bytes, chunk->data.data(), bytes);
  }
  if (auto moved = group.allToAll(send.data(), recv.data(), value.type,
                                  chunk->numElements());
      !moved)
    return moved;
  std::vector<int64_t> shape = chunkShape;
  shape[from] *= n;
  auto out = runtime::HostTensor::create(value.type, shape);
  if (!out)
    return out.error();
  for (int64_t r = 0; r < n; ++r) {
    std::memcpy(chunk->data.data(), recv.data() + size_t(r) * bytes, bytes);
    std::vector<int64_t> offset(rank, 0);
    offset[from] = r * chunkShape[from];
    copyBlock(*out, *chunk, offset, false);
  }
  value = std::move(*out);
  return {};
}

/// Whether `fn`'s collectives are all compiled into one function (all-reduces
/// and reduce-scatters, ein-mesh-to-calls) rather than run between parts,
/// unless EIN_SHARDED_RUN=parts asks for the parts.
bool compilesCollectives(const CheckedFunction &fn) {
  if (const char *how = std::getenv("EIN_SHARDED_RUN");
      how && std::string(how) == "parts")
    return false;
  for (const InferredCollective &c : fn.collectives)
    switch (c.kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::ReduceScatter:
      break;
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
    case CollectiveKind::Broadcast:
      return false;
    }
  return true;
}

} // namespace

/// The whole program bound to its inputs' shapes and its local program's
/// parts compiled: what every rank runs (shared by simulated ranks).
struct ShardedProgram {
  /// The local program: the function on a mesh of one rank per axis (so
  /// its sizes are blocks), checked once for every rank; one per set of
  /// names gathered whole so far (those bound to their whole size).
  struct Local {
    BoundCall bound;
    CheckedFunction fn;
    std::vector<std::vector<int64_t>> shapes;
  };
  /// A part of the local program between two collectives: compiled as a
  /// function of the values it reads, returning those read later. With
  /// `mesh`, the one part of a program whose collectives are compiled into
  /// it (ein-mesh-to-calls), run on the rank's groups inside the call.
  struct Part {
    std::shared_ptr<Callable> callable;
    std::vector<unsigned> params, returns;
    size_t end;
    const Local *local;
    std::shared_ptr<const MeshProgram> mesh;
  };

  ShardedProgram(const CPUOptions &cpu, const JITOptions &jit)
      : engine(cpu, jit) {}

  Engine engine;
  /// The global check, and the function bound to the whole shapes.
  CheckedModule checked;
  BoundCall wholeBound;
  const CheckedFunction *bfn = nullptr;
  std::vector<std::vector<int64_t>> wholeShapes;
  /// The size of each mesh axis, in the mesh's order.
  std::vector<int64_t> axisSize;
  std::map<std::string, std::string> split;
  /// Keyed by the names whole and blocked in them ("@" before those);
  /// std::map keeps each in place.
  std::map<std::set<std::string>, Local> locals;
  std::vector<Part> parts;
  /// Where each of bfn->collectives runs (collectivePoints).
  std::vector<size_t> points;
  /// Keeps one compiled call at a time (simulated ranks); collectives run
  /// outside it.
  mutable std::mutex callMutex;

  size_t axisIndex(const std::string &axis) const {
    for (size_t i = 0; i < checked.meshAxes.size(); ++i)
      if (checked.meshAxes[i] == axis)
        return i;
    return size_t(0);
  }
  /// Rank r's coordinate on each axis: row-major, the last axis fastest.
  std::vector<int64_t> coordinate(int64_t r) const {
    std::vector<int64_t> c(axisSize.size());
    for (size_t i = axisSize.size(); i-- > 0;) {
      c[i] = r % axisSize[i];
      r /= axisSize[i];
    }
    return c;
  }
  /// A value's block on a rank: per dim, offset and size; a dim whose name
  /// is in `whole` (gathered by then, or split only later) is whole, one in
  /// `blocked` (split by then) is the block's size (local shapes only).
  std::vector<int64_t>
  blockOf(unsigned id, const std::vector<int64_t> &wholeShape,
          const std::vector<int64_t> &coord, std::vector<int64_t> &offset,
          const std::set<std::string> &whole = {},
          const std::set<std::string> &blocked = {}) const {
    std::vector<int64_t> shape = wholeShape;
    offset.assign(shape.size(), 0);
    const ValueLayout &layout = bfn->layouts[id];
    Shape dims = bfn->ctx.expand(bfn->values[id].type.shape);
    for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d) {
      if (layout.dims[d].empty()) {
        if (d < dims.size())
          if (auto name = dims[d].size.asSymbol(); name && blocked.count(*name))
            shape[d] /= axisSize[axisIndex(split.at(*name))];
        continue;
      }
      if (d < dims.size())
        if (auto name = dims[d].size.asSymbol(); name && whole.count(*name))
          continue;
      size_t a = axisIndex(layout.dims[d]);
      shape[d] /= axisSize[a];
      offset[d] = coord[a] * shape[d];
    }
    return shape;
  }
};

int64_t shardedRanks(const ShardedProgram &program) {
  int64_t product = 1;
  for (int64_t n : program.axisSize)
    product *= n;
  return product;
}

ErrorOr<std::vector<std::vector<int64_t>>>
wholeShapesOfBlocks(const CheckedFunction &fn,
                    const std::map<std::string, Int> &meshSizes,
                    const std::vector<std::vector<int64_t>> &blocks) {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < blocks.size() && i < fn.params.size(); ++i) {
    if (fn.params[i] >= fn.layouts.size())
      return Error::program("a sharded function without layouts");
    const ValueLayout &layout = fn.layouts[fn.params[i]];
    const TensorType &type = fn.values[fn.params[i]].type;
    std::vector<int64_t> shape = blocks[i];
    if (shape.size() != fn.ctx.expand(type.shape).size())
      return Error::usage(fmt::format(
          "the block of input {} ('{}') has {} dim(s); the parameter's "
          "type \"{}\" has {}",
          i, fn.values[fn.params[i]].name, shape.size(), shapeStr(type.shape),
          fn.ctx.expand(type.shape).size()));
    for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d)
      if (!layout.dims[d].empty())
        if (auto it = meshSizes.find(layout.dims[d]); it != meshSizes.end())
          shape[d] *= int64_t(it->second);
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

ErrorOr<std::shared_ptr<const ShardedProgram>>
prepareSharded(const SourceFile &file, const Module &module,
               const CheckOptions &check, const std::string &function,
               const CPUOptions &cpu, const JITOptions &jit,
               const WholeShapes &shapesOf) {
  auto target = lookupTarget("cpu", TargetUse::Run);
  if (!target)
    return target.error();
  auto program = std::make_shared<ShardedProgram>(cpu, jit);
  ShardedProgram &p = *program;
  Engine &engine = p.engine;

  // The global check: layouts, collectives, the mesh's sizes.
  CheckOptions global = check;
  global.onlyFunction = function;
  global.loopsMayStaySymbolic = true;
  DiagnosticEngine diags(file);
  p.checked = checkModule(module, global, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  const CheckedModule &checked = p.checked;
  const CheckedFunction *fn = checked.find(function);
  if (!fn)
    return noFunctionError(file.path, function, module.functionNames());
  int64_t product = 1;
  for (const std::string &axis : checked.meshAxes) {
    auto n = SizeExpr::symbol(axis).evaluate(fn->ctx.env);
    if (!n)
      return Error::usage(fmt::format(
          "a sharded run needs the size of mesh axis {}: give --mesh {}=N",
          axis, axis));
    p.axisSize.push_back(int64_t(*n));
    product *= int64_t(*n);
  }

  // The whole shapes; the global bind runs the entry checks (divisibility
  // included) and gives the results' whole shapes.
  auto shapes = shapesOf(*fn, product);
  if (!shapes)
    return shapes.error();
  p.wholeShapes = *shapes;
  auto bound = engine.bind(file, module, check, checked, function, *shapes,
                           Specialisation::Sizes);
  if (!bound)
    return bound.error();
  p.wholeBound = std::move(*bound);
  const BoundCall *wholeBound = &p.wholeBound;
  const CheckedFunction *bfn = p.bfn = wholeBound->concrete.find(function);
  auto splitFound = splitNames(wholeBound->concrete, *bfn);
  if (!splitFound)
    return splitFound.error();
  p.split = std::move(*splitFound);
  const std::map<std::string, std::string> *split = &p.split;

  auto gathered = gatheredNames(wholeBound->concrete, *bfn);
  if (!gathered)
    return gathered.error();
  auto scattered = scatteredNames(wholeBound->concrete, *bfn);
  if (!scattered)
    return scattered.error();

  using Local = ShardedProgram::Local;
  auto localProgram =
      [&](const std::set<std::string> &whole,
          const std::set<std::string> &blocked) -> ErrorOr<Local> {
    CheckOptions local = global;
    for (const std::string &axis : checked.meshAxes)
      local.meshSizes[axis] = 1;
    // A split name bound by `dim` or --dim is its block's size there.
    for (auto &[name, axis] : *split) {
      auto size = SizeExpr::symbol(name).evaluate(bfn->ctx.env);
      auto n = SizeExpr::symbol(axis).evaluate(fn->ctx.env);
      if (size && n && !whole.count(name) &&
          (checked.dims.count(name) || check.dimOverrides.count(name)))
        local.dimOverrides[name] = *size / *n;
    }
    DiagnosticEngine localDiags(file);
    CheckedModule localChecked = checkModule(module, local, localDiags);
    if (localDiags.hadError())
      return errorFromDiagnostics(localDiags);
    // The local shapes: every rank's blocks have one shape.
    std::vector<std::vector<int64_t>> localShapes;
    std::vector<int64_t> origin(p.axisSize.size(), 0), unused;
    for (size_t i = 0; i < shapes->size(); ++i)
      localShapes.push_back(p.blockOf(bfn->params[i], (*shapes)[i], origin,
                                      unused, whole, blocked));
    auto bound = engine.bind(file, module, local, localChecked, function,
                             localShapes, Specialisation::Sizes);
    if (!bound) {
      Error error = bound.error();
      error.withNote("a sharded run checks the function at its blocks' "
                     "sizes (a dim split on an axis of n ranks has 1/n of "
                     "its size); a number in a pattern or type for a split "
                     "dim is not supported yet");
      return error;
    }
    if (bound->concrete.find(function)->ops.size() != bfn->ops.size() ||
        bound->concrete.find(function)->values.size() != bfn->values.size())
      return Error::program("the local program of a sharded run does not "
                            "have the whole program's ops");
    // A size read as a number (grad()'s count of a mean) is the whole's: a
    // constant in the local program, as Specialise folds known sizes.
    CheckedFunction localFn = *bound->concrete.find(function);
    if (foldWholeSizes(localFn, *bfn, *split))
      return Error::program("a size of a sharded run is not known");
    return Local{std::move(*bound), std::move(localFn), std::move(localShapes)};
  };
  auto &locals = p.locals;
  auto localFor = [&](size_t begin) -> ErrorOr<const Local *> {
    // Whole: gathered before `begin` or split by an all-to-all after it;
    // blocked: split by an all-to-all before it.
    std::set<std::string> whole, blocked;
    for (auto &[name, at] : *gathered)
      if (at < begin)
        whole.insert(name);
    for (auto &[name, at] : *scattered)
      (at < begin ? blocked : whole).insert(name);
    std::set<std::string> key = whole;
    for (const std::string &name : blocked)
      key.insert("@" + name);
    if (auto it = locals.find(key); it != locals.end())
      return &it->second;
    auto made = localProgram(whole, blocked);
    if (!made)
      return made.error();
    return &locals.emplace(key, std::move(*made)).first->second;
  };
  auto first = localFor(0);
  if (!first)
    return first.error();
  const CheckedFunction *lfn = &(*first)->fn;
  // Cut after each op an all-reduce or all-gather follows: each part is
  // compiled as a function of the values it reads, returning those read
  // later, from the local program of the names gathered before it.
  std::vector<ShardedProgram::Part> &parts = p.parts;
  auto points = collectivePoints(wholeBound->concrete, *bfn);
  if (!points)
    return points.error();
  p.points = *points;
  // All-reduces and reduce-scatters only: the whole local program is one
  // function with its collectives inside. A reduce-scatter runs there as
  // an all-reduce, as between parts: declaredResultBlocks cuts the block.
  std::shared_ptr<const MeshProgram> mesh;
  if (compilesCollectives(*bfn)) {
    auto made = meshProgramOf(checked, *bfn, *points);
    if (!made)
      return made.error();
    made->sizes = p.axisSize;
    for (size_t k = 0; k < made->collectives.size(); ++k) {
      made->collectives[k].kind = CollectiveKind::AllReduce;
      made->scatterDims[k] = -1;
    }
    mesh = std::make_shared<const MeshProgram>(std::move(*made));
  }
  std::set<size_t> cuts;
  if (!mesh)
    cuts.insert(points->begin(), points->end());
  if (!lfn->ops.empty())
    cuts.insert(lfn->ops.size() - 1);
  std::set<unsigned> finals(lfn->returns.begin(), lfn->returns.end());
  TargetOptions targetOptions;
  targetOptions.cpu = cpu;
  size_t begin = 0;
  for (size_t end : cuts) {
    auto local = localFor(begin);
    if (!local)
      return local.error();
    lfn = &(*local)->fn;
    CheckedModule module1 = (*local)->bound.concrete;
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
    for (auto &shape : (*local)->shapes)
      for (int64_t n : shape)
        key += fmt::format("{},", n);
    TargetOptions partOptions = targetOptions;
    partOptions.mesh = mesh;
    auto callable =
        engine.compile(**target, key, module1, function, partOptions);
    if (!callable)
      return callable.error();
    parts.push_back({*callable, pf.params, pf.returns, end, *local, mesh});
    begin = end + 1;
  }
  return std::shared_ptr<const ShardedProgram>(std::move(program));
}

ErrorOr<std::vector<runtime::HostTensor>>
runShardedRank(const ShardedProgram &program, Communicator &world,
               std::vector<runtime::HostTensor> blocks, AxisGroups *kept) {
  const ShardedProgram &p = program;
  const CheckedFunction *bfn = p.bfn;
  const std::vector<size_t> *points = &p.points;
  int64_t rank = world.rank();
  if (world.size() != shardedRanks(p))
    return Error::usage(
        fmt::format("a sharded run of {} rank(s) on a communicator of {}",
                    shardedRanks(p), world.size()));
  if (blocks.size() != bfn->params.size())
    return Error::usage(fmt::format("'{}' takes {} input(s), not {}", bfn->name,
                                    bfn->params.size(), blocks.size()));
  // One rank: its blocks, the parts in turn with the all-reduces between
  // them on the axes' groups; returns its blocks of the results.
  std::vector<int64_t> coord = p.coordinate(rank);
  std::map<unsigned, runtime::HostTensor> env;
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::vector<int64_t> offset;
    auto shape = p.blockOf(bfn->params[i], p.wholeShapes[i], coord, offset);
    const TensorType &type = bfn->values[bfn->params[i]].type;
    if (blocks[i].shape != shape ||
        blocks[i].type != runtime::toStorage(type.dtype))
      return Error::usage(fmt::format(
          "rank {}'s block of input {} ('{}') is {} {}, not the {} {} block "
          "of the whole {}",
          rank, i, bfn->values[bfn->params[i]].name,
          runtime::storageName(blocks[i].type),
          runtime::shapeTupleStr(blocks[i].shape), dtypeName(type.dtype),
          runtime::shapeTupleStr(shape),
          runtime::shapeTupleStr(p.wholeShapes[i])));
    env[bfn->params[i]] =
        blocks[i].isCOrder() ? std::move(blocks[i]) : blocks[i].toCOrder();
  }
  // Every axis's group, made by every rank in the same order (or kept in
  // `kept` from an earlier run on `world` over a mesh of this shape).
  std::vector<std::unique_ptr<Communicator>> made;
  if (!kept || !kept->count(p.axisSize))
    for (size_t a = 0; a < p.axisSize.size(); ++a) {
      auto group = meshAxisGroup(world, p.axisSize, a);
      if (!group)
        return group.error();
      made.push_back(std::move(*group));
    }
  if (kept && !kept->count(p.axisSize))
    (*kept)[p.axisSize] = std::move(made);
  const std::vector<std::unique_ptr<Communicator>> &groups =
      kept ? kept->at(p.axisSize) : made;
  for (const ShardedProgram::Part &part : p.parts) {
    std::vector<const runtime::HostTensor *> ins;
    for (unsigned id : part.params) {
      auto it = env.find(id);
      if (it == env.end())
        return Error::program("a part of a sharded run reads a value no "
                              "part made");
      ins.push_back(&it->second);
    }
    std::vector<runtime::HostTensor> outputs;
    const CheckedFunction &pfn = part.local->fn;
    for (unsigned id : part.returns) {
      std::vector<int64_t> shape;
      for (auto &d : pfn.ctx.expand(pfn.values[id].type.shape))
        shape.push_back(int64_t(*d.size.evaluate(pfn.ctx.env)));
      auto t = runtime::HostTensor::create(
          runtime::toStorage(pfn.values[id].type.dtype), shape);
      if (!t)
        return t.error();
      outputs.push_back(std::move(*t));
    }
    std::vector<runtime::HostTensor *> outs;
    for (auto &t : outputs)
      outs.push_back(&t);
    ErrorOr<void> called = [&]() -> ErrorOr<void> {
      int64_t status = 0;
      if (part.mesh) {
        // The ranks meet inside the call: no lock; the scope gives the
        // compiled collectives the rank's groups and keeps their error.
        std::vector<Communicator *> axisGroups;
        for (auto &group : groups)
          axisGroups.push_back(group.get());
        CollectiveScope scope(std::move(axisGroups));
        auto ran =
            part.callable->call(ins, outs, part.local->bound.dims, &status);
        if (auto failed = scope.error())
          return *failed;
        return ran;
      }
      std::lock_guard<std::mutex> lock(p.callMutex);
      return part.callable->call(ins, outs, part.local->bound.dims, &status);
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
    if (part.mesh)
      continue; // its collectives ran inside it
    // The all-reduces first: a reshard completing partial sums and
    // dropping a split gathers the completed blocks.
    for (size_t k = 0; k < bfn->collectives.size(); ++k)
      if (const InferredCollective &c = bfn->collectives[k];
          (*points)[k] == part.end && c.kind != CollectiveKind::AllGather &&
          c.kind != CollectiveKind::AllToAll)
        if (auto done = allReduce(*groups[p.axisIndex(c.axis)], env.at(c.value),
                                  c, bfn->values[c.value].type.dtype);
            !done)
          return done.error();
    for (size_t k = 0; k < bfn->collectives.size(); ++k)
      if (const InferredCollective &c = bfn->collectives[k];
          (*points)[k] == part.end && c.kind == CollectiveKind::AllToAll)
        if (auto done = allToAll(*groups[p.axisIndex(c.axis)], env.at(c.value),
                                 gatheredDim(*bfn, c), scatteredDim(*bfn, c));
            !done)
          return done.error();
    for (size_t k = 0; k < bfn->collectives.size(); ++k)
      if (const InferredCollective &c = bfn->collectives[k];
          (*points)[k] == part.end && c.kind == CollectiveKind::AllGather)
        if (auto done = allGather(*groups[p.axisIndex(c.axis)], env.at(c.value),
                                  gatheredDim(*bfn, c));
            !done)
          return done.error();
  }
  std::vector<runtime::HostTensor> results;
  for (unsigned id : bfn->returns)
    results.push_back(env.at(id));
  return results;
}

ErrorOr<std::vector<runtime::HostTensor>>
declaredResultBlocks(const ShardedProgram &program, int64_t rank,
                     std::vector<runtime::HostTensor> results) {
  const ShardedProgram &p = program;
  std::vector<int64_t> coord = p.coordinate(rank);
  for (size_t k = 0; k < results.size() && k < p.bfn->results.size(); ++k) {
    const Shape &dims = p.bfn->results[k].shape;
    const std::vector<int64_t> &whole = p.wholeBound.resultShapes[k];
    runtime::HostTensor &value = results[k];
    std::vector<int64_t> shape = value.shape, offset(shape.size(), 0);
    for (size_t d = 0; d < dims.size() && d < shape.size(); ++d) {
      if (dims[d].meshAxis.empty() || shape[d] != whole[d])
        continue;
      size_t a = p.axisIndex(dims[d].meshAxis);
      shape[d] /= p.axisSize[a];
      offset[d] = coord[a] * shape[d];
    }
    if (shape == value.shape)
      continue;
    auto block = runtime::HostTensor::create(value.type, shape);
    if (!block)
      return block.error();
    copyBlock(value, *block, offset, true);
    value = std::move(*block);
  }
  return results;
}

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

  // Inputs, whole, read once the function's parameters are known.
  std::vector<runtime::HostTensor> inputs;
  auto prepared = prepareSharded(
      file, module, check, options.function, options.cpu, options.jit,
      [&](const CheckedFunction &fn,
          int64_t product) -> ErrorOr<std::vector<std::vector<int64_t>>> {
        if (product != options.ranks)
          return Error::usage(fmt::format(
              "--ranks {} does not match the mesh ({} rank(s): the product "
              "of its axes' sizes)",
              options.ranks, product));
        auto read = readInputs(fn, options.function, options.inputs);
        if (!read)
          return read.error();
        inputs = std::move(*read);
        std::vector<std::vector<int64_t>> shapes;
        for (runtime::HostTensor &t : inputs) {
          t = t.toCOrder();
          shapes.push_back(t.shape);
        }
        if (options.outputs.size() != fn.results.size())
          return Error::usage(fmt::format(
              "function '{}' returns {} value(s): give one --out for each "
              "(got {})",
              options.function, fn.results.size(), options.outputs.size()));
        return shapes;
      });
  if (!prepared)
    return prepared.error();
  const ShardedProgram &p = **prepared;
  const CheckedFunction *bfn = p.bfn;

  // One rank: its blocks of the inputs, its part of the run, then the
  // results' blocks gathered to rank 0, which assembles them.
  std::vector<runtime::HostTensor> results(bfn->returns.size());
  auto runRank = [&](Communicator &world) -> ErrorOr<void> {
    int64_t rank = world.rank();
    std::vector<int64_t> coord = p.coordinate(rank);
    std::vector<runtime::HostTensor> blocks;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<int64_t> offset;
      auto shape = p.blockOf(bfn->params[i], inputs[i].shape, coord, offset);
      auto block = runtime::HostTensor::create(inputs[i].type, shape);
      if (!block)
        return block.error();
      copyBlock(inputs[i], *block, offset, true);
      blocks.push_back(std::move(*block));
    }
    auto local = runShardedRank(p, world, std::move(blocks));
    if (!local)
      return local.error();
    // The results: each rank's block gathered, assembled on rank 0.
    for (size_t k = 0; k < bfn->returns.size(); ++k) {
      runtime::HostTensor &block = (*local)[k];
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
          runtime::HostTensor::create(block.type, p.wholeBound.resultShapes[k]);
      if (!whole)
        return whole.error();
      for (int64_t q = 0; q < world.size(); ++q) {
        std::vector<int64_t> offset;
        auto shape =
            p.blockOf(bfn->returns[k], whole->shape, p.coordinate(q), offset);
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
  // Each rank compiled and read the inputs itself: all must run the same
  // einc on the same command line, program and input bytes (a rank given
  // another file of the same name would compute other blocks).
  uint64_t hash = fnv1a(file.text);
  for (const std::string &word : options.argv)
    hash = fnv1a(word + '\n', hash);
  for (const runtime::HostTensor &t : inputs) {
    hash = fnv1a(fmt::format("{} {}\n", runtime::storageName(t.type),
                             fmt::join(t.shape, "x")),
                 hash);
    hash = fnv1a({reinterpret_cast<const char *>(t.data.data()), t.data.size()},
                 hash);
  }
  if (auto same = checkSameRunOnAllRanks(
          **world, hash, "the program, the command line and the inputs");
      !same) {
    abandonMPI();
    return same.error();
  }
  if (auto ran = runRank(**world); !ran) {
    abandonMPI();
    return ran.error();
  }
  if ((*world)->rank() != 0)
    return {};
  return writeRunOutputs(*bfn, options, results);
}

} // namespace ein
