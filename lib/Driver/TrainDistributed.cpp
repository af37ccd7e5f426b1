// Data-parallel `einc train` (docs/training.md, "Data parallel"): the
// batch dim split over the ranks, the bucketed all-reduce of the gradients,
// and `--ranks N`'s launch of mpirun.
#include "TrainState.h"
#include "ein/Analysis/DataParallel.h"
#include "ein/Driver/Train.h"
#include "ein/Support/Hash.h"
#include "ein/Support/Library.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace ein {

using runtime::HostTensor;
using runtime::StorageType;

namespace {

/// The name of a shape string's leading dim (`"B d"` -> "B"), without its
/// `@axis`; empty when it leads with a number, a composition or nothing.
std::string leadingDim(const std::string &shape) {
  size_t begin = shape.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return "";
  size_t end = shape.find_first_of(" \t@", begin);
  std::string name = shape.substr(begin, end - begin);
  bool identifier = !name.empty() && (std::isalpha(name[0]) || name[0] == '_');
  for (char c : name)
    identifier &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  return identifier ? name : "";
}

std::string divisorsOf(int64_t n) {
  std::string out;
  for (int64_t d = 1; d <= n && out.size() < 200; ++d)
    if (n % d == 0)
      out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

} // namespace

ErrorOr<void> splitBatchOverRanks(const Module &module, CheckOptions &check,
                                  const TrainRunOptions &options,
                                  int64_t ranks) {
  const Function *fn = nullptr;
  for (const Function &f : module.functions)
    if (f.name == options.function)
      fn = &f;
  if (!fn)
    return Error::usage(
        fmt::format("no function '{}' to train", options.function));
  auto paramShape = [&](const std::string &name) -> const std::string * {
    for (const Param &p : fn->params)
      if (p.name == name)
        return &p.type.shape;
    return nullptr;
  };
  std::string dim = options.dpDim;
  for (const TrainData &d : options.data) {
    const std::string *shape = paramShape(d.param);
    if (!shape)
      continue; // prepareTraining names it
    std::string lead = leadingDim(*shape);
    if (dim.empty()) {
      if (lead.empty())
        return Error::usage(fmt::format(
            "--ranks {}: the batch of --data {} (\"{}\") does not lead with a "
            "named dim to split over the ranks; name it with --dp-dim",
            ranks, d.param, *shape));
      dim = lead;
    }
    if (lead != dim)
      return Error::usage(fmt::format(
          "--ranks {}: each rank takes its share of the batch dim '{}', but "
          "--data {} (\"{}\") does not lead with it",
          ranks, dim, d.param, *shape));
  }
  // The whole batch's size: --dim, else a `dim` declaration's number.
  std::optional<int64_t> size;
  if (auto it = check.dimOverrides.find(dim); it != check.dimOverrides.end())
    size = static_cast<int64_t>(it->second);
  else
    for (const DimDecl &decl : module.dims)
      if (decl.name == dim && decl.value && decl.value->kind == Expr::Kind::Int)
        size = std::strtoll(decl.value->text.c_str(), nullptr, 10);
  if (!size)
    return Error::usage(fmt::format(
        "--ranks {}: the size of the batch dim '{}' must be known to split "
        "it: give --dim {}=B (the whole batch, over all ranks)",
        ranks, dim, dim));
  if (*size % ranks != 0)
    return Error::usage(fmt::format(
        "--ranks {}: the batch dim {} = {} does not split into {} equal "
        "shares; the ranks may be {} (the divisors of {})",
        ranks, dim, *size, ranks, divisorsOf(*size), *size));
  check.dimOverrides[dim] = *size / ranks;
  return {};
}

ErrorOr<std::unique_ptr<Communicator>>
startRanks(const Module &module, CheckOptions &check, TrainRunOptions &options,
           const std::vector<std::string> &arguments, bool &launchedJob) {
  launchedJob = false;
  int launched = launcherWorldSize();
  bool cuda = options.target == "cuda" || options.target == "cuda-emulated";
  if ((options.ranks > 0 || launched > 0) && options.target != "cpu" && !cuda)
    return Error::usage(fmt::format("--ranks runs ranks on --target=cpu (MPI), "
                                    "cuda or cuda-emulated (NCCL), not on "
                                    "--target={}",
                                    options.target));
  if (options.ranks > 0 && launched == 0) {
    // The batch's split is checked here, once, before any rank starts.
    CheckOptions split = check;
    if (auto ok = splitBatchOverRanks(module, split, options, options.ranks);
        !ok)
      return ok.error();
    if (auto ok = launchRanks(options.ranks, arguments); !ok)
      return ok.error();
    launchedJob = true;
    return std::unique_ptr<Communicator>();
  }
  if (launched == 0)
    return std::unique_ptr<Communicator>();
  if (options.ranks > 0 && options.ranks != launched)
    return Error::usage(fmt::format("--ranks {} under an mpirun of {} ranks",
                                    options.ranks, launched));
  auto world = mpiWorld();
  if (!world)
    return world.error();
  if ((*world)->size() > 1) {
    options.comm = world->get();
    if (auto split =
            splitBatchOverRanks(module, check, options, (*world)->size());
        !split)
      return split.error();
  }
  return std::move(*world);
}

ErrorOr<void> TrainingState::allReduceGradients() {
  // One bucket per dtype (the gradients are f32 or f64); a gradient at
  // least a bucket's size is reduced where it is, in bucket-sized pieces.
  // The gradients and buckets are in `memory` (a device's under a CUDA
  // target, summed there by deviceComm).
  Communicator &group = deviceComm ? *deviceComm : *comm;
  std::map<StorageType, std::vector<HostTensor *>> pending;
  std::map<StorageType, size_t> filled;
  auto flush = [&](StorageType type) -> ErrorOr<void> {
    char *bucket = static_cast<char *>(gradBuckets[type]);
    size_t bytes = filled[type], elem = runtime::storageBytes(type);
    if (!bytes)
      return {};
    size_t at = 0;
    for (HostTensor *g : pending[type]) {
      if (auto r = memory->copyWithin(bucket + at, on(*g), g->byteSize()); !r)
        return r;
      at += g->byteSize();
    }
    if (auto r =
            group.allReduce(bucket, type, int64_t(bytes / elem), ReduceOp::Sum);
        !r)
      return r;
    at = 0;
    for (HostTensor *g : pending[type]) {
      if (auto r = memory->copyWithin(on(*g), bucket + at, g->byteSize()); !r)
        return r;
      at += g->byteSize();
    }
    pending[type].clear();
    filled[type] = 0;
    return {};
  };
  for (TrainedParam &p : trained) {
    HostTensor &g = p.grad;
    size_t bytes = g.byteSize(), elem = runtime::storageBytes(g.type);
    if (bytes >= bucketBytes) {
      int64_t piece = int64_t(bucketBytes / elem), n = g.numElements();
      char *data = static_cast<char *>(on(g));
      for (int64_t at = 0; at < n; at += piece)
        if (auto r = group.allReduce(data + at * elem, g.type,
                                     std::min(piece, n - at), ReduceOp::Sum);
            !r)
          return r;
      continue;
    }
    if (filled[g.type] + bytes > bucketBytes)
      if (auto r = flush(g.type); !r)
        return r;
    if (!gradBuckets[g.type]) {
      auto bucket = memory->allocate(bucketBytes);
      if (!bucket)
        return bucket.error();
      gradBuckets[g.type] = *bucket;
    }
    pending[g.type].push_back(&g);
    filled[g.type] += bytes;
  }
  for (auto &[type, list] : pending)
    if (auto r = flush(type); !r)
      return r;
  return {};
}

void TrainingState::shardOptimizerStates() {
  zero = 1;
  std::vector<TrainedParam *> order;
  for (TrainedParam &p : trained)
    order.push_back(&p);
  std::stable_sort(order.begin(), order.end(),
                   [](const TrainedParam *a, const TrainedParam *b) {
                     return a->value.numElements() > b->value.numElements();
                   });
  std::vector<int64_t> load(dpRanks, 0);
  for (TrainedParam *p : order) {
    int least = int(std::min_element(load.begin(), load.end()) - load.begin());
    p->owner = least;
    load[least] += p->value.numElements();
  }
  dropUnownedStates();
}

void TrainingState::dropUnownedStates() {
  // On a device, the state's device copy goes too (the host's copy of a
  // gathered state has none).
  for (TrainedParam &p : trained)
    if (p.owner >= 0 && p.owner != dpRank)
      for (HostTensor &st : p.states)
        drop(st);
}

ErrorOr<void> TrainingState::broadcastParameters() {
  // Where the values live: on a device, through its communicator (NCCL).
  Communicator &group = deviceComm ? *deviceComm : *comm;
  for (TrainedParam &p : trained)
    if (auto r = group.broadcast(on(p.value), p.value.type,
                                 p.value.numElements(), p.owner);
        !r)
      return r;
  return {};
}

ErrorOr<void> TrainingState::gatherOptimizerStates() {
  // On the host: an owner's states come back from its device first.
  for (TrainedParam &p : trained)
    for (HostTensor &st : p.states) {
      if (p.owner == dpRank)
        if (auto r = download(st); !r)
          return r;
      st.data.resize(st.byteSize());
      if (auto r = comm->broadcast(st.data.data(), st.type, st.numElements(),
                                   p.owner);
          !r)
        return r;
    }
  return {};
}

const char *zeroShardedParts(int64_t stage) {
  return stage >= 3   ? "the parameters, gradients and optimizer states"
         : stage == 2 ? "the gradients and optimizer states"
                      : "the optimizer states";
}

std::string TrainingState::dataParallelSummary() const {
  const char *how[] = {
      "",
      "; ZeRO-1: each rank holds and updates the optimizer states of its "
      "parameters",
      "; ZeRO-2: each rank holds and updates 1/N of every gradient and "
      "optimizer state (reduce-scatter, then all-gather of the updated "
      "parameters)",
      "; ZeRO-3: each rank holds and updates 1/N of every parameter, "
      "gradient and optimizer state (the parameters all-gathered for each "
      "step, then dropped)"};
  std::string text = fmt::format(
      "data parallel over {}: each rank trains on {} rows of every batch; "
      "the gradients are averaged in buckets of {:.3g} MiB{}{}\n",
      comm->name(),
      data.front().batch.shape.empty() ? int64_t(1)
                                       : data.front().batch.shape[0],
      double(bucketBytes) / (1 << 20),
      deviceComm ? " on the device through " + deviceComm->name()
                 : std::string(),
      how[zero]);
  // What this rank holds between steps beside what `einc report --train
  // --ranks N --zero K` counts (its even split: ZeRO-1's by parameter
  // differs).
  DataParallelModel model;
  model.states = unsigned(stateNames.size());
  for (const TrainedParam &p : trained)
    model.params.push_back(
        {p.value.numElements(),
         runtime::storageBytes(p.master ? p.model.type : p.value.type)});
  RankMemory report = rankMemory(model, allStrategies()[zero], dpRanks);
  HeldState held = heldState();
  return text +
         fmt::format("rank {} holds between steps: parameters {} B, gradients "
                     "{} B, optimizer states {} B (report --train --ranks {} "
                     "--zero {}: {} B, {} B, {} B)\n",
                     dpRank, held.parameters, held.gradients,
                     held.optimizerStates, dpRanks, zero,
                     toString(report.parameters), toString(report.gradients),
                     toString(report.optimizerStates));
}

ErrorOr<void> checkSameRunOnAllRanks(Communicator &comm, uint64_t hash,
                                     const std::string &what) {
  auto binary = binaryIdentity();
  if (!binary)
    return binary.error();
  if (auto same = checkSameOnAllRanks(
          comm, fnv1a(*binary),
          fmt::format("the einc binary (this rank's: {})", *binary));
      !same)
    return same;
  return checkSameOnAllRanks(comm, hash, what);
}

ErrorOr<void> launchRanks(int64_t ranks,
                          const std::vector<std::string> &arguments) {
  if (!haveMPI())
    return mpiWorld().error(); // names the missing MPI
  auto mpirun = mpirunSelf(ranks);
  if (!mpirun)
    return Error::usage("--ranks: " + mpirun.error().message);
  std::vector<std::string> words = std::move(*mpirun);
  for (const std::string &a : arguments)
    words.push_back(a);
  std::vector<char *> argv;
  for (std::string &w : words)
    argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (int code =
          posix_spawnp(&pid, "mpirun", nullptr, nullptr, argv.data(), environ);
      code != 0)
    return Error::usage(fmt::format(
        "--ranks {} launches mpirun, which did not start ({}); install "
        "OpenMPI (scripts/setup.sh) or run under mpirun yourself",
        ranks, std::strerror(code)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return {};
  // mpirun exits with the first failed rank's status: 128 + N when a
  // signal N ended it.
  std::string how = "killed by a signal";
  if (int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1; code > 128)
    how = fmt::format("exit status {}: a rank ended by signal {}, {}", code,
                      code - 128, strsignal(code - 128));
  else if (code >= 0)
    how = fmt::format("exit status {}", code);
  return Error::program(fmt::format(
      "the {} ranks under mpirun failed ({}); their errors are above", ranks,
      how));
}

} // namespace ein
