// A sharded program's preparation and one rank's run (docs/distributed.md
// §4), the library entry points of Sharded.h (under `einc run --ranks`,
// RunShardedCommand.cpp, and the C++ API's sharded call): each rank (a
// thread or an MPI process) runs the local program's parts on its blocks,
// with the collectives between or inside them.
#include "EmitSharded.h"
#include "LocalProgram.h"
#include "ShardedBlocks.h"
#include "ShardedProgram.h"
#include "UniformValues.h"
#include "ein/Driver/Run.h"
#include "ein/Driver/Sharded.h"
#include "ein/Driver/Train.h"
#include "ein/Engine/Engine.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Sema/EntryBinding.h"
#include "ein/Sema/Layout.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Target/DeviceMemory.h"
#include "ein/Target/DeviceTensor.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <type_traits>

namespace ein {

namespace {

/// Why `fn`'s collectives are not all compiled into one function
/// (all-reduces and reduce-scatters, ein-mesh-to-calls) but run between
/// parts, naming the form; none when they are. EIN_SHARDED_RUN=parts asks
/// for the parts. A program with a part run on the host (a rearrange's
/// all-gather or all-to-all, a reshard adding a split, a vocab-parallel
/// take) or a reduction the compiled collectives refuse and the host
/// completes (f16 and bf16 means, any, all, prod) is cut.
std::optional<std::string> cutIntoParts(const CheckedFunction &fn) {
  if (const char *how = std::getenv("EIN_SHARDED_RUN");
      how && std::string(how) == "parts")
    return "EIN_SHARDED_RUN=parts";
  if (!addedSplits(fn).empty())
    return "a reshard adding a split";
  for (const CheckedOp &op : fn.ops)
    if (vocabParallel(fn, op))
      return "a vocab-parallel take";
  for (const InferredCollective &c : fn.collectives) {
    switch (c.kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::ReduceScatter:
      break;
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
    case CollectiveKind::Broadcast:
      return fmt::format("an {} over {}", collectiveName(c.kind), c.axis);
    }
    std::optional<CollectiveReduction> code = compiledReduction(c.reduction);
    if (!code || collectiveRefusal(
                     runtime::toStorage(fn.values[c.value].type.dtype), code))
      return fmt::format("an all-reduce ({}) of {} over {}",
                         reduceKindName(c.reduction),
                         dtypeName(fn.values[c.value].type.dtype), c.axis);
  }
  return std::nullopt;
}

} // namespace

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

// Declared, with what it does, in ShardedProgram.h.
ErrorOr<std::shared_ptr<const ShardedProgram>>
prepareShardedSized(const SourceFile &file, const Module &module,
                    const CheckOptions &given, const std::string &function,
                    const CPUOptions &cpu, const JITOptions &jit,
                    const WholeShapes &shapesOf,
                    const std::function<std::optional<CheckOptions>()> &sized,
                    const std::string &targetName) {
  auto target = lookupTarget(targetName, TargetUse::Run);
  if (!target)
    return target.error();
  auto memory = (*target)->memory();
  if (!memory)
    return memory.error();
  auto program = std::make_shared<ShardedProgram>(cpu, jit);
  ShardedProgram &p = *program;
  p.memory = *memory;
  Engine &engine = p.engine;

  // The global check: layouts, collectives, the mesh's sizes; again with
  // the inputs' sizes where it needs them.
  CheckOptions check = given;
  CheckOptions global = check;
  global.onlyFunction = function;
  global.loopsMayStaySymbolic = true;
  DiagnosticEngine diags(file);
  p.checked = checkModule(module, global, diags);
  if (diags.hadError()) {
    std::optional<CheckOptions> again = sized ? sized() : std::nullopt;
    if (!again)
      return errorFromDiagnostics(diags);
    check = *again;
    global.dimOverrides = check.dimOverrides;
    DiagnosticEngine againDiags(file);
    p.checked = checkModule(module, global, againDiags);
    if (againDiags.hadError())
      return errorFromDiagnostics(againDiags);
  }
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
  holdUniformResults(p.wholeBound.concrete, function);
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
      if (phaseStart(*bfn, at) <= begin)
        whole.insert(name);
    for (auto &[name, at] : *scattered)
      (phaseStart(*bfn, at) <= begin ? blocked : whole).insert(name);
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
  std::optional<std::string> cut = cutIntoParts(*bfn);
  if (!cut) {
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
  // Between parts, a rearrange's all-gather or all-to-all runs before it
  // (a part starts there); a reshard adding a split slices after it; a
  // vocab-parallel take is a part of its own, taken on the host.
  std::set<size_t> cuts;
  p.slices = addedSplits(*bfn);
  if (!mesh) {
    for (size_t k = 0; k < points->size(); ++k)
      if (!movesOperand(*bfn, bfn->collectives[k]))
        cuts.insert((*points)[k]);
      else if ((*points)[k] > 0)
        cuts.insert((*points)[k] - 1);
    for (const AddedSplit &a : p.slices)
      cuts.insert(a.op);
    for (size_t i = 0; i < bfn->ops.size(); ++i)
      if (vocabParallel(*bfn, bfn->ops[i])) {
        if (i > 0)
          cuts.insert(i - 1);
        cuts.insert(i);
      }
  }
  if (!lfn->ops.empty())
    cuts.insert(lfn->ops.size() - 1);
  std::set<unsigned> finals(lfn->returns.begin(), lfn->returns.end());
  TargetOptions targetOptions;
  targetOptions.cpu = cpu;
  targetOptions.inProcess = !p.memory->isHost();
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
    key += fmt::format("\nmesh {}", fmt::join(p.axisSize, "x"));
    TargetOptions partOptions = targetOptions;
    partOptions.mesh = mesh;
    std::shared_ptr<Callable> callable;
    if (begin != end || !vocabParallel(*bfn, bfn->ops[begin])) {
      auto compiled =
          engine.compile(**target, key, module1, function, partOptions);
      if (!compiled)
        return compiled.error();
      callable = *compiled;
    }
    parts.push_back(
        {callable, pf.params, pf.returns, begin, end, *local, mesh});
    begin = end + 1;
  }
  return std::shared_ptr<const ShardedProgram>(std::move(program));
}

ErrorOr<std::shared_ptr<const ShardedProgram>>
prepareSharded(const SourceFile &file, const Module &module,
               const CheckOptions &check, const std::string &function,
               const CPUOptions &cpu, const JITOptions &jit,
               const WholeShapes &shapesOf) {
  return prepareShardedSized(file, module, check, function, cpu, jit, shapesOf,
                             nullptr, "cpu");
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
  // The values, in the memory the parts run on (a device's: each part reads
  // and writes them there, and the steps between parts run there too).
  std::map<unsigned, DeviceTensor> env;
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
    auto placed = DeviceTensor::place(*p.memory, std::move(blocks[i]));
    if (!placed)
      return placed.error();
    env[bfn->params[i]] = std::move(*placed);
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
  // The groups on the parts' memory: the host groups themselves, or on a
  // device its communicators over them (NCCL), made once for the run.
  std::vector<std::unique_ptr<Communicator>> onDevice;
  std::vector<Communicator *> memoryGroups;
  for (auto &group : groups) {
    if (p.memory->isHost()) {
      memoryGroups.push_back(group.get());
      continue;
    }
    auto comm = p.memory->communicator(*group);
    if (!comm)
      return comm.error();
    onDevice.push_back(std::move(*comm));
    memoryGroups.push_back(onDevice.back().get());
  }
  for (const ShardedProgram::Part &part : p.parts) {
    // A rearrange's all-gathers and all-to-alls, on its operand.
    for (size_t k = 0; k < bfn->collectives.size() && !part.mesh; ++k)
      if (const InferredCollective &c = bfn->collectives[k];
          movesOperand(*bfn, c) && (*points)[k] == part.begin)
        if (auto done = moveBlocks(*memoryGroups[p.axisIndex(c.axis)], *bfn, c,
                                   env.at(movedValue(*bfn, c)));
            !done)
          return done.error();
    std::vector<const DeviceTensor *> ins;
    for (unsigned id : part.params) {
      auto it = env.find(id);
      if (it == env.end())
        return Error::program("a part of a sharded run reads a value no "
                              "part made");
      ins.push_back(&it->second);
    }
    std::vector<DeviceTensor> outputs;
    const CheckedFunction &pfn = part.local->fn;
    for (unsigned id : part.returns) {
      std::vector<int64_t> shape;
      for (auto &d : pfn.ctx.expand(pfn.values[id].type.shape))
        shape.push_back(int64_t(*d.size.evaluate(pfn.ctx.env)));
      auto t = DeviceTensor::create(
          *p.memory, runtime::toStorage(pfn.values[id].type.dtype), shape);
      if (!t)
        return t.error();
      outputs.push_back(std::move(*t));
    }
    std::vector<DeviceTensor *> outs;
    for (auto &t : outputs)
      outs.push_back(&t);
    ErrorOr<void> called = [&]() -> ErrorOr<void> {
      if (!part.callable) {
        // A vocab-parallel take: this rank's rows of the table, taken on
        // the host (a device's table and ids are copied out, the rows in).
        const CheckedOp &op = bfn->ops[part.begin];
        const std::string &axis = bfn->layouts[op.operands[0]].dims[op.axis];
        Shape dims = bfn->ctx.expand(bfn->values[op.operands[0]].type.shape);
        auto vocab = dims.at(op.axis).size.evaluate(bfn->ctx.env);
        if (outputs.empty())
          return {};
        if (!vocab)
          return Error::program("a vocab-parallel take has no vocabulary "
                                "size");
        auto table = env.at(op.operands[0]).toHost();
        if (!table)
          return table.error();
        auto ids = env.at(op.operands[1]).toHost();
        if (!ids)
          return ids.error();
        auto rows =
            runtime::HostTensor::create(outputs[0].type(), outputs[0].shape());
        if (!rows)
          return rows.error();
        TakeSite site{"take", p.wholeBound.concrete.pathOf(op.loc), op.loc.line,
                      op.loc.col, dims.at(op.axis).size};
        if (auto taken =
                takeBlock(*table, *ids, *rows, op.axis,
                          coord[p.axisIndex(axis)] * table->shape[op.axis],
                          int64_t(*vocab), site, bfn->ctx.env);
            !taken)
          return taken;
        auto placed = DeviceTensor::place(*p.memory, std::move(*rows));
        if (!placed)
          return placed.error();
        outputs[0] = std::move(*placed);
        return {};
      }
      int64_t status = 0;
      if (part.mesh) {
        // The ranks meet inside the call: no lock; the scope gives the
        // compiled collectives the rank's groups on the memory and keeps
        // their error.
        CollectiveScope scope(memoryGroups);
        auto ran =
            callOn(*part.callable, ins, outs, part.local->bound.dims, &status);
        if (auto failed = scope.error())
          return *failed;
        return ran;
      }
      std::lock_guard<std::mutex> lock(p.callMutex);
      return callOn(*part.callable, ins, outs, part.local->bound.dims, &status);
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
        if (auto done =
                completeOn(*groups[p.axisIndex(c.axis)],
                           *memoryGroups[p.axisIndex(c.axis)], env.at(c.value),
                           c, bfn->values[c.value].type.dtype);
            !done)
          return done.error();
    for (CollectiveKind kind :
         {CollectiveKind::AllToAll, CollectiveKind::AllGather})
      for (size_t k = 0; k < bfn->collectives.size(); ++k)
        if (const InferredCollective &c = bfn->collectives[k];
            (*points)[k] == part.end && c.kind == kind &&
            !movesOperand(*bfn, c))
          if (auto done = moveBlocks(*memoryGroups[p.axisIndex(c.axis)], *bfn,
                                     c, env.at(c.value));
              !done)
            return done.error();
    // A reshard adding a split: the rank's block of its result.
    for (const AddedSplit &a : p.slices)
      if (a.op == part.end)
        if (auto done = keepBlock(env.at(bfn->ops[a.op].results[0]), a.dim,
                                  coord[p.axisIndex(a.axis)],
                                  p.axisSize[p.axisIndex(a.axis)]);
            !done)
          return done.error();
  }
  std::vector<runtime::HostTensor> results;
  for (unsigned id : bfn->returns) {
    auto result = env.at(id).toHost();
    if (!result)
      return result.error();
    results.push_back(std::move(*result));
  }
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

} // namespace ein
