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
#include "ein/Sema/EntryBinding.h"
#include "ein/Sema/Layout.h"
#include "ein/Support/Hash.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
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

/// Whether `fn`'s collectives are all compiled into one function (all-reduces
/// and reduce-scatters, ein-mesh-to-calls) rather than run between parts,
/// unless EIN_SHARDED_RUN=parts asks for the parts. A program with a part
/// run on the host (a rearrange's all-gather or all-to-all, a reshard adding
/// a split, a vocab-parallel take) or a reduction the compiled collectives
/// refuse and the host completes (f16 and bf16 means, any, all, prod) is cut.
bool compilesCollectives(const CheckedFunction &fn) {
  if (const char *how = std::getenv("EIN_SHARDED_RUN");
      how && std::string(how) == "parts")
    return false;
  if (!addedSplits(fn).empty())
    return false;
  for (const CheckedOp &op : fn.ops)
    if (vocabParallel(fn, op))
      return false;
  for (const InferredCollective &c : fn.collectives) {
    switch (c.kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::ReduceScatter:
      break;
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
    case CollectiveKind::Broadcast:
      return false;
    }
    std::optional<CollectiveReduction> code =
        c.reduction == ReduceKind::Sum   ? CollectiveReduction::Sum
        : c.reduction == ReduceKind::Max ? CollectiveReduction::Max
        : c.reduction == ReduceKind::Min ? CollectiveReduction::Min
        : c.reduction == ReduceKind::Mean
            ? CollectiveReduction::Mean
            : std::optional<CollectiveReduction>();
    if (!code || collectiveRefusal(
                     runtime::toStorage(fn.values[c.value].type.dtype), code))
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
  /// Without `callable`, a vocab-parallel take run on the host (takeBlock).
  struct Part {
    std::shared_ptr<Callable> callable;
    std::vector<unsigned> params, returns;
    size_t begin, end;
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
  /// The splits reshards add (keepBlock after their op).
  std::vector<AddedSplit> slices;
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

namespace {

/// prepareSharded, with `sized` giving the check again with the inputs'
/// sizes where the global check fails (withInputSizes; null: none).
ErrorOr<std::shared_ptr<const ShardedProgram>>
prepareShardedSized(const SourceFile &file, const Module &module,
                    const CheckOptions &given, const std::string &function,
                    const CPUOptions &cpu, const JITOptions &jit,
                    const WholeShapes &shapesOf,
                    const std::function<std::optional<CheckOptions>()> &sized) {
  auto target = lookupTarget("cpu", TargetUse::Run);
  if (!target)
    return target.error();
  auto program = std::make_shared<ShardedProgram>(cpu, jit);
  ShardedProgram &p = *program;
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

} // namespace

ErrorOr<std::shared_ptr<const ShardedProgram>>
prepareSharded(const SourceFile &file, const Module &module,
               const CheckOptions &check, const std::string &function,
               const CPUOptions &cpu, const JITOptions &jit,
               const WholeShapes &shapesOf) {
  return prepareShardedSized(file, module, check, function, cpu, jit, shapesOf,
                             nullptr);
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
    // A rearrange's all-gathers and all-to-alls, on its operand.
    for (size_t k = 0; k < bfn->collectives.size() && !part.mesh; ++k)
      if (const InferredCollective &c = bfn->collectives[k];
          movesOperand(*bfn, c) && (*points)[k] == part.begin)
        if (auto done = moveBlocks(*groups[p.axisIndex(c.axis)], *bfn, c,
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
        TakeSite site{"take", p.wholeBound.concrete.pathOf(op.loc), op.loc.line,
                      op.loc.col, dims.at(op.axis).size};
        return takeBlock(table, env.at(op.operands[1]), outputs[0], op.axis,
                         coord[p.axisIndex(axis)] * table.shape[op.axis],
                         int64_t(*vocab), site, bfn->ctx.env);
      }
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
    for (CollectiveKind kind :
         {CollectiveKind::AllToAll, CollectiveKind::AllGather})
      for (size_t k = 0; k < bfn->collectives.size(); ++k)
        if (const InferredCollective &c = bfn->collectives[k];
            (*points)[k] == part.end && c.kind == kind &&
            !movesOperand(*bfn, c))
          if (auto done = moveBlocks(*groups[p.axisIndex(c.axis)], *bfn, c,
                                     env.at(c.value));
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

  // Inputs, whole, read once the function's parameters are known.
  std::vector<runtime::HostTensor> inputs;
  auto prepared = prepareShardedSized(
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
      },
      [&] { return withInputSizes(module, file, check, options); });
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
  if (auto ran = runTimed(**world); !ran) {
    abandonMPI();
    return ran.error();
  }
  if ((*world)->rank() != 0)
    return {};
  return writeResults();
}

} // namespace ein
