// `einc run --ranks N [--simulate]` of a sharded program
// (docs/distributed.md §4): each rank (a thread or an MPI process) runs the
// local program's parts on its blocks, all-reducing between them, and rank
// 0 assembles the results.
#include "LocalProgram.h"
#include "ein/Driver/Run.h"
#include "ein/Driver/Train.h"
#include "ein/Engine/Engine.h"
#include "ein/Execution/JIT.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Sema/EntryBinding.h"
#include "ein/Sema/Layout.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

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

/// The type a product of T is computed in: an integer's unsigned type,
/// which wraps as the unsharded product does.
template <typename T, bool = std::is_integral_v<T>> struct Wrapping {
  using type = T;
};
template <typename T> struct Wrapping<T, true> {
  using type = std::make_unsigned_t<T>;
};

/// The product over `group` of `value`'s partial products, in rank order.
template <typename T>
ErrorOr<void> multiplyAll(Communicator &group, runtime::HostTensor &value) {
  int64_t n = value.numElements();
  std::vector<T> all(size_t(n) * size_t(group.size()));
  if (auto gathered =
          group.allGather(value.data.data(), all.data(), value.type, n);
      !gathered)
    return gathered;
  for (int64_t i = 0; i < n; ++i) {
    using Wide = typename Wrapping<T>::type;
    Wide product = Wide(all[size_t(i)]);
    for (int64_t q = 1; q < group.size(); ++q)
      product = Wide(product * Wide(all[size_t(q * n + i)]));
    T out = T(product);
    std::memcpy(value.data.data() + size_t(i) * sizeof(T), &out, sizeof(T));
  }
  return {};
}

/// Completes `c`'s partial results in `value` over `group` (the ranks
/// that differ only on the collective's axis): sum, max or min in place;
/// a mean is a sum divided by the group's size. f16 and bf16 are widened to
/// f32, reduced (and divided) there and rounded back once; fp8 is refused
/// (each rank's partial sum, rounded to 3 or 2 mantissa bits, would not
/// sum to the unsharded result).
ErrorOr<void> allReduce(Communicator &group, runtime::HostTensor &value,
                        const InferredCollective &c, DType dtype) {
  runtime::StorageType type = value.type;
  bool wide =
      type == runtime::StorageType::F32 || type == runtime::StorageType::F64;
  if (!wide && isFloat(dtype) && isReducibleType(type)) {
    auto widened = runtime::convertTensor(value, runtime::StorageType::F32);
    if (!widened)
      return widened.error();
    if (auto done = allReduce(group, *widened, c, DType::F32); !done)
      return done;
    auto narrowed = runtime::convertTensor(*widened, type);
    if (!narrowed)
      return narrowed.error();
    value = std::move(*narrowed);
    return {};
  }
  // any and all of bool: a max and a min of 0 and 1, in i32.
  if (type == runtime::StorageType::Bool) {
    if (c.reduction != ReduceKind::Any && c.reduction != ReduceKind::All)
      return Error::usage(fmt::format(
          "a sharded run's {} ({}) of a bool value is not supported yet",
          collectiveName(c.kind), reduceKindName(c.reduction)));
    int64_t n = value.numElements();
    std::vector<int32_t> flags(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      flags[size_t(i)] = value.data[size_t(i)] != 0;
    if (auto done = group.allReduce(
            flags.data(), runtime::StorageType::I32, n,
            c.reduction == ReduceKind::Any ? ReduceOp::Max : ReduceOp::Min);
        !done)
      return done;
    for (int64_t i = 0; i < n; ++i)
      value.data[size_t(i)] = uint8_t(flags[size_t(i)]);
    return {};
  }
  // A product: the blocks' gathered and multiplied in rank order.
  if (c.reduction == ReduceKind::Prod) {
    switch (type) {
    case runtime::StorageType::F32:
      return multiplyAll<float>(group, value);
    case runtime::StorageType::F64:
      return multiplyAll<double>(group, value);
    case runtime::StorageType::I32:
      return multiplyAll<int32_t>(group, value);
    case runtime::StorageType::I64:
      return multiplyAll<int64_t>(group, value);
    case runtime::StorageType::F16:
    case runtime::StorageType::BF16:
    case runtime::StorageType::F8E4M3:
    case runtime::StorageType::F8E5M2:
    case runtime::StorageType::Bool:
      break;
    }
    return Error::usage(fmt::format(
        "a sharded run's {} (prod) of a {} value is not supported yet",
        collectiveName(c.kind), dtypeName(dtype)));
  }
  // Integers are summed exactly; a mean's division is done in f32 and f64
  // only.
  if (!isReducibleType(type) || (c.reduction == ReduceKind::Mean && !wide))
    return Error::usage(fmt::format(
        "a sharded run's {} ({}) of a {} value is not supported yet",
        collectiveName(c.kind), reduceKindName(c.reduction), dtypeName(dtype)));
  ReduceOp op =
      c.reduction == ReduceKind::Max || c.reduction == ReduceKind::Any
          ? ReduceOp::Max
      : c.reduction == ReduceKind::Min || c.reduction == ReduceKind::All
          ? ReduceOp::Min
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

/// Runs a reshard's or a rearrange's all-gather or all-to-all `c` on
/// `value` (movedValue(fn, c)) over `group`.
ErrorOr<void> moveBlocks(Communicator &group, const CheckedFunction &fn,
                         const InferredCollective &c,
                         runtime::HostTensor &value) {
  if (c.kind == CollectiveKind::AllToAll)
    return allToAll(group, value, gatheredDim(fn, c), scatteredDim(fn, c));
  return allGather(group, value, gatheredDim(fn, c));
}

/// Keeps block `q` of `n` along dim `d` of `value` (a split a reshard adds:
/// no communication).
ErrorOr<void> keepBlock(runtime::HostTensor &value, size_t d, int64_t q,
                        int64_t n) {
  if (d >= value.shape.size() || value.shape[d] % n != 0)
    return Error::program("a sharded run's local slice has no dim to split");
  std::vector<int64_t> shape = value.shape, offset(shape.size(), 0);
  shape[d] /= n;
  offset[d] = q * shape[d];
  auto block = runtime::HostTensor::create(value.type, shape);
  if (!block)
    return block.error();
  copyBlock(value, *block, offset, true);
  value = std::move(*block);
  return {};
}

/// A vocab-parallel take on one rank (vocabParallel): `table` is the
/// rank's block along `axis`, rows [lo, lo + block) of the whole; each id's
/// row where the block holds it, zeros elsewhere, into `out` (C order).
/// An id outside [0, vocab) of the whole is the compiled take's error.
ErrorOr<void> takeBlock(const runtime::HostTensor &table,
                        const runtime::HostTensor &ids,
                        runtime::HostTensor &out, size_t axis, int64_t lo,
                        int64_t vocab, const TakeSite &site,
                        const Bindings &env) {
  bool wide = ids.type == runtime::StorageType::I64;
  if ((!wide && ids.type != runtime::StorageType::I32) ||
      axis >= table.shape.size())
    return Error::program("a vocab-parallel take's ids are not integers");
  int64_t pre = 1, post = 1, block = table.shape[axis];
  for (size_t d = 0; d < table.shape.size(); ++d)
    (d < axis ? pre : post) *= d == axis ? 1 : table.shape[d];
  int64_t n = ids.numElements();
  size_t row = size_t(post) * table.elementBytes();
  if (out.data.size() != size_t(pre * n) * row)
    return Error::program("a vocab-parallel take's result has not its size");
  int64_t bad = 0, firstBad = -1, firstId = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t id =
        wide ? ids.dataAs<int64_t>()[k] : int64_t(ids.dataAs<int32_t>()[k]);
    if (id < 0 || id >= vocab) {
      if (bad++ == 0)
        firstBad = k, firstId = id;
      continue;
    }
    for (int64_t p = 0; p < pre; ++p) {
      uint8_t *to = out.data.data() + size_t(p * n + k) * row;
      if (id >= lo && id < lo + block)
        std::memcpy(to, table.data.data() + size_t(p * block + id - lo) * row,
                    row);
      else
        std::memset(to, 0, row);
    }
  }
  if (bad == 0)
    return {};
  std::vector<int64_t> position(ids.shape.size());
  for (size_t d = ids.shape.size(); d-- > 0;) {
    position[d] = firstBad % ids.shape[d];
    firstBad /= ids.shape[d];
  }
  return takeIdError(site, firstId, position, bad, env);
}

/// `check` with the sizes the inputs give their parameters' named dims,
/// as --dim would bind them: for a layout that needs them (a rearrange
/// moving a split off a dim's major position; an all-gather or an
/// all-to-all as they divide). The parameters are read from a check on a
/// mesh of one rank per axis, where no split moves. Null when that check
/// or the inputs fail (the caller reports the first check's error, else
/// the second's).
std::optional<CheckOptions> withInputSizes(const Module &module,
                                           const SourceFile &file,
                                           const CheckOptions &check,
                                           const RunOptions &options) {
  CheckOptions probe = check;
  probe.onlyFunction = options.function;
  probe.loopsMayStaySymbolic = true;
  for (const MeshDecl &mesh : module.meshes)
    for (auto &[axis, loc] : mesh.axes)
      probe.meshSizes[axis] = 1;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, probe, diags);
  const CheckedFunction *fn = checked.find(options.function);
  if (diags.hadError() || !fn)
    return std::nullopt;
  auto inputs = readInputs(*fn, options.function, options.inputs);
  if (!inputs)
    return std::nullopt;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < fn->params.size() && i < inputs->size(); ++i) {
    names.push_back(fn->values[fn->params[i]].name);
    shapes.push_back((*inputs)[i].shape);
  }
  EntryBinding binding = bindEntryShapes(*fn, names, shapes);
  if (!binding.ok || !binding.packRanks.empty())
    return std::nullopt;
  CheckOptions sized = check;
  std::set<std::string> axes(checked.meshAxes.begin(), checked.meshAxes.end());
  for (const auto &[name, size] : binding.dims)
    if (!axes.count(name) && !isAnonymousName(name) &&
        !checked.dims.count(name))
      sized.dimOverrides[name] = size;
  return sized;
}

} // namespace

ErrorOr<void> runSharded(const SourceFile &file, const Module &module,
                         const CheckOptions &given, const RunOptions &options,
                         std::ostream &out) {
  // MPI ranks: outside mpirun, launch the job (this command again under
  // `mpirun -n N`, as einc train --ranks does); each rank then runs below.
  if (!options.simulate && launcherWorldSize() == 0)
    return launchRanks(options.ranks, options.argv);
  if (options.target != "cpu")
    return Error::usage(fmt::format(
        "a sharded run on --target={} is not supported yet: collectives on "
        "the CUDA target need NCCL (issue 30, step 5); use --target=cpu",
        options.target));
  if (options.sizeGeneric)
    return Error::usage("--size-generic is not supported yet by a sharded "
                        "run (--ranks): each part is compiled for its "
                        "blocks' sizes");
  auto target = lookupTarget(options.target, TargetUse::Run);
  if (!target)
    return target.error();

  // The global check: layouts, collectives, the mesh's sizes; again with
  // the inputs' sizes where it needs them.
  Engine engine(options.cpu, options.jit);
  CheckOptions check = given;
  CheckOptions global = check;
  global.onlyFunction = options.function;
  global.loopsMayStaySymbolic = true;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, global, diags);
  if (diags.hadError()) {
    auto sized = withInputSizes(module, file, check, options);
    if (!sized)
      return errorFromDiagnostics(diags);
    check = *sized;
    global.dimOverrides = check.dimOverrides;
    DiagnosticEngine again(file);
    checked = checkModule(module, global, again);
    if (again.hadError())
      return errorFromDiagnostics(again);
  }
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

  auto gathered = gatheredNames(wholeBound->concrete, *bfn);
  if (!gathered)
    return gathered.error();
  auto scattered = scatteredNames(wholeBound->concrete, *bfn);
  if (!scattered)
    return scattered.error();

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
  // A value's block on a rank: per dim, offset and size; a dim whose name
  // is in `whole` (gathered by then, or split only later) is whole, one in
  // `blocked` (split by then) is the block's size (local shapes only).
  auto blockOf = [&](unsigned id, const std::vector<int64_t> &wholeShape,
                     const std::vector<int64_t> &coord,
                     std::vector<int64_t> &offset,
                     const std::set<std::string> &whole = {},
                     const std::set<std::string> &blocked = {}) {
    std::vector<int64_t> shape = wholeShape;
    offset.assign(shape.size(), 0);
    const ValueLayout &layout = bfn->layouts[id];
    Shape dims = bfn->ctx.expand(bfn->values[id].type.shape);
    for (size_t d = 0; d < shape.size() && d < layout.dims.size(); ++d) {
      if (layout.dims[d].empty()) {
        if (d < dims.size())
          if (auto name = dims[d].size.asSymbol(); name && blocked.count(*name))
            shape[d] /= axisSize[axisIndex(split->at(*name))];
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
  };

  // The local program: the function on a mesh of one rank per axis (so
  // its sizes are blocks), checked once for every rank; one per set of
  // names gathered whole so far (those bound to their whole size).
  struct Local {
    BoundCall bound;
    CheckedFunction fn;
    std::vector<std::vector<int64_t>> shapes;
  };
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
    std::vector<int64_t> origin(axisSize.size(), 0), unused;
    for (size_t i = 0; i < inputs->size(); ++i)
      localShapes.push_back(blockOf(bfn->params[i], (*inputs)[i].shape, origin,
                                    unused, whole, blocked));
    auto bound =
        engine.bind(file, module, local, localChecked, options.function,
                    localShapes, Specialisation::Sizes);
    if (!bound) {
      Error error = bound.error();
      error.withNote("a sharded run checks the function at its blocks' "
                     "sizes (a dim split on an axis of n ranks has 1/n of "
                     "its size); a number in a pattern or type for a split "
                     "dim is not supported yet");
      return error;
    }
    if (bound->concrete.find(options.function)->ops.size() != bfn->ops.size() ||
        bound->concrete.find(options.function)->values.size() !=
            bfn->values.size())
      return Error::program("the local program of a sharded run does not "
                            "have the whole program's ops");
    // A size read as a number (grad()'s count of a mean) is the whole's: a
    // constant in the local program, as Specialise folds known sizes.
    CheckedFunction localFn = *bound->concrete.find(options.function);
    if (foldWholeSizes(localFn, *bfn, *split))
      return Error::program("a size of a sharded run is not known");
    return Local{std::move(*bound), std::move(localFn), std::move(localShapes)};
  };
  // Keyed by the names whole and blocked in them ("@" before those);
  // std::map keeps each in place.
  std::map<std::set<std::string>, Local> locals;
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
  struct Part {
    std::shared_ptr<Callable> callable;
    std::vector<unsigned> params, returns;
    size_t begin, end;
    const Local *local;
  };
  std::vector<Part> parts;
  auto points = collectivePoints(wholeBound->concrete, *bfn);
  if (!points)
    return points.error();
  // A rearrange's all-gather or all-to-all runs before it: a part starts
  // there. A reshard adding a split slices after it.
  std::set<size_t> cuts;
  for (size_t k = 0; k < points->size(); ++k)
    if (!movesOperand(*bfn, bfn->collectives[k]))
      cuts.insert((*points)[k]);
    else if ((*points)[k] > 0)
      cuts.insert((*points)[k] - 1);
  std::vector<AddedSplit> slices = addedSplits(*bfn);
  for (const AddedSplit &a : slices)
    cuts.insert(a.op);
  // A vocab-parallel take is a part of its own, taken on the host.
  for (size_t i = 0; i < bfn->ops.size(); ++i)
    if (vocabParallel(*bfn, bfn->ops[i])) {
      if (i > 0)
        cuts.insert(i - 1);
      cuts.insert(i);
    }
  if (!lfn->ops.empty())
    cuts.insert(lfn->ops.size() - 1);
  std::set<unsigned> finals(lfn->returns.begin(), lfn->returns.end());
  TargetOptions targetOptions;
  targetOptions.cpu = options.cpu;
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
    std::shared_ptr<Callable> callable;
    if (begin != end || !vocabParallel(*bfn, bfn->ops[begin])) {
      auto compiled = engine.compile(**target, key, module1, options.function,
                                     targetOptions);
      if (!compiled)
        return compiled.error();
      callable = *compiled;
    }
    parts.push_back({callable, pf.params, pf.returns, begin, end, *local});
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
      // A rearrange's all-gathers and all-to-alls, on its operand.
      for (size_t k = 0; k < bfn->collectives.size(); ++k)
        if (const InferredCollective &c = bfn->collectives[k];
            movesOperand(*bfn, c) && (*points)[k] == part.begin)
          if (auto done = moveBlocks(*groups[axisIndex(c.axis)], *bfn, c,
                                     env.at(movedValue(*bfn, c)));
              !done)
            return done.error();
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
        if (!part.callable) {
          // A vocab-parallel take: this rank's rows of the table.
          const CheckedOp &op = bfn->ops[part.begin];
          const std::string &axis = bfn->layouts[op.operands[0]].dims[op.axis];
          const runtime::HostTensor &table = env.at(op.operands[0]);
          Shape dims = bfn->ctx.expand(bfn->values[op.operands[0]].type.shape);
          auto vocab = dims.at(op.axis).size.evaluate(bfn->ctx.env);
          if (outputs.empty())
            return {};
          if (!vocab)
            return Error::program("a vocab-parallel take has no vocabulary "
                                  "size");
          TakeSite site{"take", wholeBound->concrete.pathOf(op.loc),
                        op.loc.line, op.loc.col, dims.at(op.axis).size};
          return takeBlock(table, env.at(op.operands[1]), outputs[0], op.axis,
                           coord[axisIndex(axis)] * table.shape[op.axis],
                           int64_t(*vocab), site, bfn->ctx.env);
        }
        std::lock_guard<std::mutex> lock(callMutex);
        int64_t status = 0;
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
      // The all-reduces first: a reshard completing partial sums and
      // dropping a split gathers the completed blocks.
      for (size_t k = 0; k < bfn->collectives.size(); ++k)
        if (const InferredCollective &c = bfn->collectives[k];
            (*points)[k] == part.end && c.kind != CollectiveKind::AllGather &&
            c.kind != CollectiveKind::AllToAll)
          if (auto done = allReduce(*groups[axisIndex(c.axis)], env.at(c.value),
                                    c, bfn->values[c.value].type.dtype);
              !done)
            return done.error();
      for (CollectiveKind kind :
           {CollectiveKind::AllToAll, CollectiveKind::AllGather})
        for (size_t k = 0; k < bfn->collectives.size(); ++k)
          if (const InferredCollective &c = bfn->collectives[k];
              (*points)[k] == part.end && c.kind == kind &&
              !movesOperand(*bfn, c))
            if (auto done = moveBlocks(*groups[axisIndex(c.axis)], *bfn, c,
                                       env.at(c.value));
                !done)
              return done.error();
      // A reshard adding a split: the rank's block of its result.
      for (const AddedSplit &a : slices)
        if (a.op == part.end)
          if (auto done = keepBlock(env.at(bfn->ops[a.op].results[0]), a.dim,
                                    coord[axisIndex(a.axis)],
                                    axisSize[axisIndex(a.axis)]);
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

  // --time: every rank runs again, kTimedRuns times, each from a barrier
  // (an all-reduce); rank 0's wall clock to its assembled results (which
  // wait for every rank's blocks) is a run's time.
  constexpr int kTimedRuns = 5;
  std::vector<double> seconds;
  auto runTimed = [&](Communicator &world) -> ErrorOr<void> {
    if (auto ran = runRank(world); !ran)
      return ran;
    for (int k = 0; options.time && k < kTimedRuns; ++k) {
      int64_t zero = 0;
      if (auto barrier = world.allReduce(&zero, runtime::StorageType::I64, 1,
                                         ReduceOp::Sum);
          !barrier)
        return barrier;
      auto start = std::chrono::steady_clock::now();
      if (auto ran = runRank(world); !ran)
        return ran;
      if (world.rank() == 0)
        seconds.push_back(std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
    }
    return {};
  };
  auto writeResults = [&]() -> ErrorOr<void> {
    if (options.time && !seconds.empty()) {
      std::sort(seconds.begin(), seconds.end());
      out << fmt::format(
          "time: {:.6g} ms (median of {} runs on {} {} ranks: rank 0 from a "
          "barrier to the assembled results, the collectives included)\n",
          seconds[seconds.size() / 2] * 1e3, seconds.size(), options.ranks,
          options.simulate ? "simulated" : "MPI");
    }
    return writeRunOutputs(*bfn, options, results);
  };
  if (options.simulate) {
    auto comms = simulatedRanks(int(options.ranks));
    std::vector<std::optional<Error>> errors(comms.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < comms.size(); ++r)
      threads.emplace_back([&, r] {
        if (auto ran = runTimed(*comms[r]); !ran)
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
    return writeResults();
  }
  auto world = mpiWorld();
  if (!world)
    return world.error();
  if ((*world)->size() != options.ranks)
    return Error::usage(fmt::format("--ranks {} under an mpirun of {} ranks",
                                    options.ranks, (*world)->size()));
  if (auto ran = runTimed(**world); !ran) {
    abandonMPI();
    return ran.error();
  }
  if ((*world)->rank() != 0)
    return {};
  return writeResults();
}

} // namespace ein
