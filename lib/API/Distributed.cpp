// The C++ API's communicator (the runtime's, ein/Runtime/Communicator.h),
// its collectives on tensors, and call_sharded: a module function with a
// mesh run on one rank's blocks by the driver's sharded run (Sharded.h).
#include "Internal.h"

#include "ein/API/Distributed.h"
#include "ein/Driver/Sharded.h"
#include "ein/Driver/Train.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Support/Hash.h"
#include "ein/Support/Spelling.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>

namespace ein::api {
namespace detail {

struct CommState {
  std::unique_ptr<ein::Communicator> comm;
  /// Simulated ranks (threads of this process), or a group split from them.
  bool simulated = false;
  /// The mesh axes' groups of call_sharded's earlier calls, by mesh shape:
  /// every rank makes the same calls, so every rank keeps the same ones.
  AxisGroups axisGroups;
};

ein::Communicator *runtimeCommunicator(const api::Communicator &comm) {
  return comm.state()->comm.get();
}

bool isSimulated(const api::Communicator &comm) {
  return comm.state()->simulated;
}

namespace {

/// The communicator behind `comm`, or the error naming `what`.
Result<ein::Communicator *> commOf(const api::Communicator &comm,
                                   const char *what) {
  if (!comm.defined())
    return usageError(fmt::format("{} on an undefined communicator", what));
  return comm.state()->comm.get();
}

/// `t`'s storage type after the checks every collective makes: a defined
/// CPU tensor.
Result<runtime::StorageType> collectiveInput(const Tensor &t,
                                             const char *what) {
  if (!t.defined())
    return usageError(fmt::format("{} of an undefined tensor", what));
  if (t.device() != cpu)
    return usageError(fmt::format(
        "{} takes CPU tensors; the API's collectives on CUDA tensors (NCCL) "
        "are not supported yet: move it with .to(ein::cpu)",
        what));
  return runtime::toStorage(internal(t.dtype()));
}

/// What every collective checks first: a defined communicator and a
/// defined CPU tensor; gives the runtime's communicator and the tensor's
/// storage type.
struct CollectiveCall {
  ein::Communicator *comm;
  runtime::StorageType type;
};
Result<CollectiveCall> collectiveCall(const api::Communicator &comm,
                                      const Tensor &t, const char *what) {
  auto c = commOf(comm, what);
  if (!c)
    return c.error();
  auto type = collectiveInput(t, what);
  if (!type)
    return type.error();
  return CollectiveCall{*c, *type};
}

/// The runtime's reduction of `op`: sum, max and min; the others refused
/// by name.
Result<ReduceOp> reduceOpOf(Reduction op, const char *what) {
  switch (op) {
  case Reduction::Sum:
    return ReduceOp::Sum;
  case Reduction::Max:
    return ReduceOp::Max;
  case Reduction::Min:
    return ReduceOp::Min;
  case Reduction::Mean:
  case Reduction::Prod:
  case Reduction::Any:
  case Reduction::All:
  case Reduction::Var:
    break;
  }
  return usageError(fmt::format("{} takes sum, max or min", what));
}

/// `dim` in [-rank, rank) as an index (negative counts from the end, as
/// torch's dims), or the error.
Result<size_t> dimIndex(const Tensor &t, int64_t dim, const char *what) {
  int64_t rank = t.rank();
  if (dim < -rank || dim >= rank || rank == 0)
    return usageError(
        fmt::format("{}: dim {} of a tensor of {} dim(s)", what, dim, rank));
  return size_t(dim < 0 ? dim + rank : dim);
}

/// The view of `whole` (any strides) that is its `q`-th block of `block`
/// elements along `d`.
Tensor blockView(const Tensor &whole, size_t d, int64_t block, int64_t q) {
  std::vector<int64_t> shape = whole.shape();
  shape[d] = block;
  return Tensor(whole.storage(), whole.dtype(), whole.device(), shape,
                whole.strides(),
                whole.offset() + q * block * whole.strides()[d]);
}

/// `t` when it is C-order, else a C-order copy (the library's form of
/// Tensor::contiguous, which raises).
Result<Tensor> dense(const Tensor &t) {
  if (t.is_contiguous())
    return t;
  return nothrow::clone(t);
}

/// Runs `collective` on a C-order copy of `t` (or `t` itself when it is
/// C-order) and copies the result back into `t`'s elements.
Result<void> inPlace(const Tensor &t,
                     const std::function<ErrorOr<void>(void *)> &collective) {
  auto flat = dense(t);
  if (!flat)
    return flat.error();
  if (auto done = collective(flat->data()); !done)
    return toInfo(done.error());
  if (!flat->shares_storage(t))
    stridedCopy(*flat, t);
  return {};
}

/// What every rank of a sharded call checks alone: the module has a mesh,
/// `function` is one of its functions, the blocks fit its parameters'
/// count and dtypes, `mesh` sizes every axis and spans the communicator.
/// Gives the mesh's sizes in `sizes`, the blocks in host tensors in
/// `host`, and what the ranks must agree on in `key`.
Result<void> checkShardedCall(const ModuleState &state,
                              const std::string &function,
                              const std::vector<Tensor> &blocks,
                              const ein::Communicator &world, const Sizes &mesh,
                              std::map<std::string, Int> &sizes,
                              std::vector<runtime::HostTensor> &host,
                              std::string &key) {
  const CheckedModule &checked = checkedModule(state);
  const std::string &path = moduleSource(state).file.path;
  std::string axes = fmt::format("{}", fmt::join(checked.meshAxes, ", "));
  if (checked.meshAxes.empty())
    return toInfo(ein::Error::inFile(
        ErrorKind::Usage, path,
        fmt::format("call_sharded of '{}': the file declares no mesh "
                    "(docs/distributed.md §1); call its functions with "
                    "Module::call",
                    function)));
  const CheckedFunction *fn = checked.find(function);
  if (!fn)
    return toInfo(noFunctionError(path, function,
                                  moduleSource(state).module.functionNames()));
  if (blocks.size() != fn->params.size())
    return usageError(fmt::format("call_sharded: '{}' takes {} input(s), got "
                                  "{} block(s)",
                                  function, fn->params.size(), blocks.size()));
  key = function;
  for (auto &[name, n] : mesh) {
    auto known = std::find(checked.meshAxes.begin(), checked.meshAxes.end(),
                           name) != checked.meshAxes.end();
    if (!known) {
      auto near = closestName(name, checked.meshAxes, 2);
      return usageError(fmt::format(
          "call_sharded: '{}' is not an axis of the mesh ({}){}", name, axes,
          near ? fmt::format("; did you mean '{}'?", *near) : ""));
    }
    if (n < 1)
      return usageError(fmt::format("call_sharded: mesh size {}={}: an axis "
                                    "spans at least 1 rank",
                                    name, n));
    if (!sizes.emplace(name, Int(n)).second)
      return usageError(
          fmt::format("call_sharded: the mesh sizes name '{}' twice", name));
  }
  int64_t product = 1;
  for (const std::string &axis : checked.meshAxes) {
    auto it = sizes.find(axis);
    if (it == sizes.end())
      return usageError(fmt::format("call_sharded: no size for mesh axis "
                                    "'{}' (the file's mesh is {}): give "
                                    "{{\"{}\", N}}",
                                    axis, axes, axis));
    product *= int64_t(it->second);
    key += fmt::format("|{}={}", axis, int64_t(it->second));
  }
  if (product != world.size())
    return usageError(fmt::format("call_sharded: the mesh's sizes make {} "
                                  "rank(s); the communicator has {} ({})",
                                  product, world.size(), world.name()));
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Tensor &t = blocks[i];
    const std::string &param = fn->values[fn->params[i]].name;
    auto type = collectiveInput(t, "call_sharded");
    if (!type)
      return type.error();
    ein::DType want = fn->values[fn->params[i]].type.dtype;
    if (internal(t.dtype()) != want)
      return usageError(fmt::format("call_sharded: '{}': the block of input "
                                    "{} ('{}') is {}, the parameter is {}",
                                    function, i, param, name(t.dtype()),
                                    dtypeName(want)));
    auto block = runtime::HostTensor::create(*type, t.shape());
    if (!block)
      return toInfo(block.error());
    auto view = nothrow::view(block->data.data(), t.dtype(), t.shape());
    if (!view)
      return view.error();
    stridedCopy(t, *view);
    host.push_back(std::move(*block));
    key += fmt::format("|{}{}", name(t.dtype()),
                       runtime::shapeTupleStr(t.shape()));
  }
  return {};
}

} // namespace
} // namespace detail

using namespace detail;

int Communicator::rank() const { return state_ ? state_->comm->rank() : -1; }
int Communicator::size() const { return state_ ? state_->comm->size() : 0; }
std::string Communicator::name() const {
  return state_ ? state_->comm->name() : "an undefined communicator";
}

namespace nothrow {

Result<std::vector<Communicator>> simulated_ranks(int n) {
  if (n < 1)
    return usageError(
        fmt::format("simulated ranks: {} rank(s); a group has at least 1", n));
  std::vector<Communicator> ranks;
  for (auto &comm : simulatedRanks(n))
    ranks.emplace_back(
        std::make_shared<CommState>(CommState{std::move(comm), true}));
  return ranks;
}

Result<Communicator> mpi_world() {
  // One world per process (MPI initialises once), shared by every handle.
  static std::mutex worldMutex;
  static std::weak_ptr<CommState> world;
  std::lock_guard<std::mutex> lock(worldMutex);
  if (auto held = world.lock())
    return Communicator(held);
  if (!haveMPI())
    return usageError("mpi_world: this build of ein has no MPI (it was "
                      "configured without an MPI library); use "
                      "Communicator::simulated(n) for ranks as threads");
  if (launcherWorldSize() == 0)
    return usageError("mpi_world: this process was not started by mpirun "
                      "(neither OMPI_COMM_WORLD_SIZE nor PMI_SIZE is set); "
                      "run the program under mpirun -n N, or use "
                      "Communicator::simulated(n) for ranks as threads");
  auto comm = mpiWorld();
  if (!comm)
    return toInfo(comm.error());
  auto state = std::make_shared<CommState>(CommState{std::move(*comm), false});
  world = state;
  return Communicator(state);
}

Result<Communicator> split(const Communicator &comm, int color, int key) {
  auto c = commOf(comm, "split");
  if (!c)
    return c.error();
  auto part = (*c)->split(color, key);
  if (!part)
    return toInfo(part.error());
  return Communicator(std::make_shared<CommState>(
      CommState{std::move(*part), comm.state()->simulated}));
}

Result<void> all_reduce(const Communicator &comm, const Tensor &t,
                        Reduction op) {
  auto call = collectiveCall(comm, t, "all_reduce");
  if (!call)
    return call.error();
  ein::Communicator *c = call->comm;
  runtime::StorageType type = call->type;
  auto rop = reduceOpOf(op, "all_reduce");
  if (!rop)
    return rop.error();
  return inPlace(
      t, [&](void *data) { return c->allReduce(data, type, t.numel(), *rop); });
}

Result<void> broadcast(const Communicator &comm, const Tensor &t, int root) {
  auto call = collectiveCall(comm, t, "broadcast");
  if (!call)
    return call.error();
  ein::Communicator *c = call->comm;
  runtime::StorageType type = call->type;
  if (root < 0 || root >= c->size())
    return usageError(fmt::format("broadcast from rank {} of a group of {}",
                                  root, c->size()));
  return inPlace(
      t, [&](void *data) { return c->broadcast(data, type, t.numel(), root); });
}

Result<Tensor> all_gather(const Communicator &comm, const Tensor &t,
                          int64_t dim) {
  auto call = collectiveCall(comm, t, "all_gather");
  if (!call)
    return call.error();
  ein::Communicator *c = call->comm;
  runtime::StorageType type = call->type;
  auto d = dimIndex(t, dim, "all_gather");
  if (!d)
    return d.error();
  int64_t n = c->size();
  // The ranks' blocks stacked (rank-major), then each copied into its
  // place along `dim` (a view when `dim` is the leading one).
  auto flat = dense(t);
  if (!flat)
    return flat.error();
  std::vector<int64_t> stackedShape = t.shape();
  stackedShape[0] *= n;
  auto stacked = allocateHost(t.dtype(), stackedShape, false);
  if (!stacked)
    return stacked.error();
  if (auto done = c->allGather(flat->data(), stacked->data(), type, t.numel());
      !done)
    return toInfo(done.error());
  if (*d == 0)
    return *stacked;
  std::vector<int64_t> shape = t.shape();
  shape[*d] *= n;
  auto whole = allocateHost(t.dtype(), shape, false);
  if (!whole)
    return whole.error();
  for (int64_t q = 0; q < n; ++q)
    stridedCopy(blockView(*stacked, 0, t.shape()[0], q),
                blockView(*whole, *d, t.shape()[*d], q));
  return *whole;
}

Result<Tensor> reduce_scatter(const Communicator &comm, const Tensor &t,
                              Reduction op, int64_t dim) {
  auto call = collectiveCall(comm, t, "reduce_scatter");
  if (!call)
    return call.error();
  ein::Communicator *c = call->comm;
  runtime::StorageType type = call->type;
  auto rop = reduceOpOf(op, "reduce_scatter");
  if (!rop)
    return rop.error();
  auto d = dimIndex(t, dim, "reduce_scatter");
  if (!d)
    return d.error();
  int64_t n = c->size();
  if (t.shape()[*d] % n != 0)
    return usageError(fmt::format(
        "reduce_scatter: dim {} has size {}, which does not divide into {} "
        "blocks (one per rank)",
        dim, t.shape()[*d], n));
  std::vector<int64_t> shape = t.shape();
  shape[*d] /= n;
  // Block q along `dim` goes to rank q: the blocks laid out one after
  // the other (a view of `t` when `dim` is the leading one).
  Tensor send;
  if (*d == 0) {
    auto flat = dense(t);
    if (!flat)
      return flat.error();
    send = *flat;
  } else {
    std::vector<int64_t> stackedShape = shape;
    stackedShape[0] *= n;
    auto stacked = allocateHost(t.dtype(), stackedShape, false);
    if (!stacked)
      return stacked.error();
    for (int64_t q = 0; q < n; ++q)
      stridedCopy(blockView(t, *d, shape[*d], q),
                  blockView(*stacked, 0, shape[0], q));
    send = *stacked;
  }
  auto out = allocateHost(t.dtype(), shape, false);
  if (!out)
    return out.error();
  if (auto done =
          c->reduceScatter(send.data(), out->data(), type, t.numel(), *rop);
      !done)
    return toInfo(done.error());
  return *out;
}

Result<std::vector<Tensor>> call_sharded(const Module &module,
                                         const std::string &function,
                                         const std::vector<Tensor> &blocks,
                                         const Communicator &comm,
                                         const Sizes &mesh) {
  ModuleState *state = module.state().get();
  if (!state)
    return usageError("call_sharded on an empty module");
  auto c = commOf(comm, "call_sharded");
  if (!c)
    return c.error();
  ein::Communicator &world = **c;
  // Each rank's own checks, then one agreement: a rank with bad input
  // stops every rank at once, not at the first collective's timeout.
  std::map<std::string, Int> sizes;
  std::vector<runtime::HostTensor> host;
  std::string key;
  Result<void> checked =
      checkShardedCall(*state, function, blocks, world, mesh, sizes, host, key);
  int64_t firstFailed = checked ? world.size() : world.rank();
  if (auto agreed = world.allReduce(&firstFailed, runtime::StorageType::I64, 1,
                                    ReduceOp::Min);
      !agreed)
    return toInfo(agreed.error());
  if (!checked)
    return checked.error();
  if (firstFailed < world.size())
    return usageError(fmt::format("call_sharded of '{}' stopped: rank {} "
                                  "failed (its error is reported there)",
                                  function, firstFailed));
  std::string what = key + "\n" + moduleSource(*state).file.text;
  // The binary too (libein.so's build id): ranks of MPI processes may run
  // different builds of the library.
  if (auto same = checkSameRunOnAllRanks(
          world, fnv1a(what),
          "the module's source, the function, the mesh's sizes and the "
          "blocks' dtypes and shapes");
      !same)
    return toInfo(same.error());
  // Prepared once per module and key; simulated ranks share it.
  ModuleSource source = moduleSource(*state);
  auto program = shardedProgram(*state, key, [&] {
    CheckOptions check = source.options;
    check.meshSizes = sizes;
    std::vector<std::vector<int64_t>> shapes;
    for (const runtime::HostTensor &t : host)
      shapes.push_back(t.shape);
    return prepareSharded(
        source.file, source.module, check, function, compileOptions(),
        JITOptions::fromEnvironment(), [&](const CheckedFunction &fn, int64_t) {
          return wholeShapesOfBlocks(fn, check.meshSizes, shapes);
        });
  });
  int64_t failed = program ? 0 : 1;
  if (auto agreed =
          world.allReduce(&failed, runtime::StorageType::I64, 1, ReduceOp::Max);
      !agreed)
    return toInfo(agreed.error());
  if (!program)
    return toInfo(program.error());
  if (failed)
    return usageError(fmt::format("call_sharded of '{}' stopped: another "
                                  "rank failed to compile it",
                                  function));
  auto ran = runShardedRank(**program, world, std::move(host),
                            &comm.state()->axisGroups);
  if (!ran)
    return toInfo(ran.error());
  auto results = declaredResultBlocks(**program, world.rank(), std::move(*ran));
  if (!results)
    return toInfo(results.error());
  const CheckedFunction *fn = checkedModule(*state).find(function);
  std::vector<Tensor> out;
  for (size_t i = 0; i < results->size(); ++i) {
    const runtime::HostTensor &r = (*results)[i];
    DType dtype = external(fn->values[fn->returns[i]].type.dtype);
    auto t = allocateHost(dtype, r.shape, false);
    if (!t)
      return t.error();
    std::memcpy(t->data(), r.data.data(), r.data.size());
    out.push_back(*t);
  }
  return out;
}

} // namespace nothrow
} // namespace ein::api
