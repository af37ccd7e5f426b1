// ZeRO-2 and ZeRO-3 in `einc train --ranks N --zero 2|3` (docs/training.md,
// "Data parallel"): each parameter's gradient, optimizer states and (ZeRO-3)
// value sharded evenly over the ranks, moved by bucketed reduce-scatters and
// all-gathers.
#include "TrainState.h"
#include "ein/Analysis/DataParallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>

namespace ein {

using runtime::HostTensor;
using runtime::StorageType;

namespace {

/// The elements of rank `r`'s shard of a parameter of `elements` that are
/// the parameter's (the rest is padding): min(shard, elements - r·shard),
/// at least 0.
int64_t partOf(int64_t elements, int64_t shard, int r) {
  return std::clamp<int64_t>(elements - int64_t(r) * shard, 0, shard);
}

using Pick = TrainingState::PickShard;

/// A bucket of the sharded collectives: parameters of one dtype, each
/// rank's block holding their shards one after another.
struct ShardBucket {
  StorageType type = StorageType::F32;
  std::vector<TrainedParam *> params;
  std::vector<int64_t> offsets; // of each parameter's shard in a block
  int64_t block = 0;            // elements of one rank's block
};

/// The buckets of the tensors `pick` names (the parameters it skips left
/// out): the parameters in reverse order (the backward's), one open bucket
/// per dtype, closed once its padded bytes (ranks · block) reach
/// `capBytes`, as the report's bucketBytes closes them.
std::vector<ShardBucket> shardBuckets(std::vector<TrainedParam> &trained,
                                      const Pick &pick, int ranks,
                                      size_t capBytes) {
  std::vector<ShardBucket> closed;
  std::map<StorageType, ShardBucket> open;
  for (size_t i = trained.size(); i-- > 0;) {
    TrainedParam &p = trained[i];
    runtime::HostTensor *shard = pick(p).second;
    if (!shard)
      continue;
    ShardBucket &b = open[shard->type];
    b.type = shard->type;
    b.params.push_back(&p);
    b.offsets.push_back(b.block);
    b.block += shard->numElements();
    if (size_t(ranks * b.block) * runtime::storageBytes(b.type) >= capBytes) {
      closed.push_back(std::move(b));
      open.erase(shard->type);
    }
  }
  for (auto &[type, b] : open)
    closed.push_back(std::move(b));
  return closed;
}

/// Where a loop tensor's data lives (TrainingState::on): the host's, or its
/// device copy.
using At = std::function<void *(const HostTensor &)>;

/// `shard` = rank `r`'s shard of `whole`, its padding zero, in `memory`.
ErrorOr<void> cutShard(DeviceMemory &memory, const At &at,
                       const HostTensor &whole, HostTensor &shard, int r) {
  size_t elem = whole.elementBytes();
  int64_t s = shard.numElements();
  EIN_TRY(memory.zero(at(shard), shard.byteSize()));
  if (int64_t n = partOf(whole.numElements(), s, r)) {
    EIN_TRY(memory.copyWithin(at(shard),
                              static_cast<char *>(at(whole)) + r * s * elem,
                              size_t(n) * elem));
  }
  return {};
}

/// Copies each rank's part of `whole` (shards of `shard` elements) into
/// `bucket`'s rank-major layout, or back: rank r's part of parameter `i` of
/// `b` lies at r·block + offsets[i]. The one layout of both collectives.
ErrorOr<void> copyRankMajor(DeviceMemory &memory, const At &at,
                            const HostTensor &whole, int64_t shard,
                            char *bucket, const ShardBucket &b, size_t i,
                            int ranks, bool intoBucket) {
  size_t elem = whole.elementBytes();
  for (int r = 0; r < ranks; ++r) {
    int64_t n = partOf(whole.numElements(), shard, r);
    if (n == 0)
      continue;
    char *there = bucket + size_t(r * b.block + b.offsets[i]) * elem;
    char *here = static_cast<char *>(at(whole)) + size_t(r * shard) * elem;
    EIN_TRY(memory.copyWithin(intoBucket ? there : here,
                              intoBucket ? here : there, size_t(n) * elem));
  }
  return {};
}

/// A buffer of `memory`, released when it goes.
struct Scratch {
  DeviceMemory &memory;
  char *data = nullptr;
  ~Scratch() {
    if (data)
      memory.release(data);
  }
};

/// The collectives of ZeRO-2/3 over `buckets`, on `group` (the host's, or
/// a device's: NCCL) in `memory`. Not `gather`: each shard = its rank's part
/// of the sum over the ranks of the whole tensors (a reduce-scatter of each
/// bucket packed rank-major, the padding zero). `gather`: every rank's
/// whole tensors (held already) from all the ranks' shards (an all-gather
/// of each rank's block).
ErrorOr<void> bucketCollectives(Communicator &group, DeviceMemory &memory,
                                const At &at,
                                const std::vector<ShardBucket> &buckets,
                                const Pick &pick, bool gather) {
  int ranks = group.size();
  for (const ShardBucket &b : buckets) {
    size_t elem = runtime::storageBytes(b.type);
    // Every rank's parts, rank-major, and this rank's block.
    Scratch all{memory}, mine{memory};
    for (auto [scratch, bytes] :
         {std::pair{&all, size_t(ranks * b.block) * elem},
          std::pair{&mine, size_t(b.block) * elem}}) {
      auto buffer = memory.allocate(bytes);
      if (!buffer)
        return buffer.error();
      scratch->data = static_cast<char *>(*buffer);
    }
    if (!gather)
      EIN_TRY(memory.zero(all.data, size_t(ranks * b.block) * elem));
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto [whole, shard] = pick(*b.params[i]);
      if (gather) {
        EIN_TRY(memory.copyWithin(mine.data + size_t(b.offsets[i]) * elem,
                                  at(*shard), shard->byteSize()));
      } else {
        EIN_TRY(copyRankMajor(memory, at, *whole, shard->numElements(),
                              all.data, b, i, ranks, /*intoBucket=*/true));
      }
    }
    EIN_TRY(gather ? group.allGather(mine.data, all.data, b.type, b.block)
                   : group.reduceScatter(all.data, mine.data, b.type,
                                         ranks * b.block, ReduceOp::Sum));
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto [whole, shard] = pick(*b.params[i]);
      if (gather) {
        EIN_TRY(copyRankMajor(memory, at, *whole, shard->numElements(),
                              all.data, b, i, ranks, /*intoBucket=*/false));
      } else {
        EIN_TRY(memory.copyWithin(at(*shard),
                                  mine.data + size_t(b.offsets[i]) * elem,
                                  shard->byteSize()));
      }
    }
  }
  return {};
}

/// The values `wanted` picks (with their shards), the others skipped.
Pick values(std::function<bool(const TrainedParam &)> wanted) {
  return [wanted](TrainedParam &p) {
    return wanted(p) ? std::pair{&p.value, &p.shard.value}
                     : std::pair<HostTensor *, HostTensor *>{};
  };
}

/// What the loss reads of each parameter, and its shard: the value, or
/// over a master copy the model copy.
Pick lossReads() {
  return [](TrainedParam &p) {
    return p.master ? std::pair{&p.model, &p.shard.model}
                    : std::pair{&p.value, &p.shard.value};
  };
}

} // namespace

std::vector<int64_t> zeroShardShape(int64_t elements, int64_t ranks) {
  return {int64_t(shardElements(elements, ranks))};
}

ErrorOr<void> TrainingState::hold(HostTensor &t) {
  if (!t.data.empty())
    return {};
  t.data.resize(t.byteSize());
  if (memory->isHost())
    return {};
  auto device = memory->allocate(t.data.size());
  if (!device)
    return device.error();
  mirrors[t.data.data()] = *device;
  return {};
}

void TrainingState::drop(HostTensor &t) {
  if (auto it = mirrors.find(t.data.data()); it != mirrors.end()) {
    memory->release(it->second);
    mirrors.erase(it);
  }
  releaseData(t);
}

ErrorOr<void> TrainingState::moveShards(const PickShard &pick, bool gather) {
  Communicator &group = deviceComm ? *deviceComm : *comm;
  for (TrainedParam &p : trained)
    if (auto [whole, shard] = pick(p); whole)
      EIN_TRY(hold(gather ? *whole : *shard));
  return bucketCollectives(
      group, *memory, [this](const HostTensor &t) { return on(t); },
      shardBuckets(trained, pick, dpRanks, bucketBytes), pick, gather);
}

ErrorOr<void> TrainingState::cutShards(const PickShard &pick) {
  for (TrainedParam &p : trained) {
    auto [whole, shard] = pick(p);
    if (!whole)
      continue;
    EIN_TRY(hold(*shard));
    EIN_TRY(cutShard(
        *memory, [this](const HostTensor &t) { return on(t); }, *whole, *shard,
        dpRank));
  }
  return {};
}

ErrorOr<void> TrainingState::shardState(int stage) {
  zero = stage;
  for (TrainedParam &p : trained) {
    std::vector<int64_t> shape = zeroShardShape(p.value.numElements(), dpRanks);
    // The shards have no data until held (hold, in cutShards).
    p.shard.value = {p.value.type, shape, {}, {}};
    p.shard.grad = {p.grad.type, shape, {}, {}};
    p.shard.model = {p.model.type, shape, {}, {}};
    p.shard.states.assign(p.states.size(), {p.value.type, shape, {}, {}});
    EIN_TRY(hold(p.shard.grad));
  }
  // ZeRO-3 keeps only the values' shards, and a master copy is only its
  // shard under ZeRO-2 too; ZeRO-2's model copies start whole and current.
  EIN_TRY(cutShards(values(
      [stage](const TrainedParam &p) { return stage == 3 || p.master; })));
  for (TrainedParam &p : trained) {
    if (!p.master)
      continue;
    if (stage == 2)
      EIN_TRY(memory->narrow(on(p.model), p.model.type, on(p.value),
                             p.value.numElements()));
    drop(p.value);
  }
  for (size_t k = 0; k < stateNames.size(); ++k)
    EIN_TRY(cutShards([k](TrainedParam &p) {
      return std::pair{&p.states[k], &p.shard.states[k]};
    }));
  for (TrainedParam &p : trained) {
    for (HostTensor &st : p.states)
      drop(st);
    drop(p.grad);
    drop(p.micro);
  }
  releaseParameters();
  return {};
}

ErrorOr<void> TrainingState::gatherWholeParameters() {
  // A master shard is rounded to the model's dtype first (as the whole
  // master would be: the rounding is per element), so that the ranks move
  // the model's bytes.
  for (TrainedParam &p : trained)
    if (p.master) {
      EIN_TRY(hold(p.shard.model));
      EIN_TRY(memory->narrow(on(p.shard.model), p.shard.model.type,
                             on(p.shard.value), p.shard.value.numElements()));
    }
  EIN_TRY(moveShards(lossReads(), /*gather=*/true));
  for (TrainedParam &p : trained)
    drop(p.shard.model);
  return {};
}

ErrorOr<void> TrainingState::gatherParameters() {
  if (zero != 3)
    return {};
  return gatherWholeParameters();
}

void TrainingState::releaseParameters() {
  if (zero == 3)
    for (TrainedParam &p : trained)
      drop(p.master ? p.model : p.value);
}

ErrorOr<void> TrainingState::allocateGradients() {
  // The micro-batch gradient: summed with --accumulate, and over a master
  // copy in the model's dtype.
  for (TrainedParam &p : trained) {
    EIN_TRY(hold(p.grad));
    if (options.accumulate > 1 || p.master)
      EIN_TRY(hold(p.micro));
  }
  return {};
}

ErrorOr<void> TrainingState::reduceScatterGradients() {
  EIN_TRY(moveShards(
      [](TrainedParam &p) {
        return std::pair{&p.grad, &p.shard.grad};
      },
      /*gather=*/false));
  for (TrainedParam &p : trained) {
    drop(p.grad);
    drop(p.micro);
  }
  releaseParameters();
  return {};
}

ErrorOr<void> TrainingState::cutValueShards() {
  if (zero == 2)
    return cutShards(values([](const TrainedParam &p) { return !p.master; }));
  return {};
}

ErrorOr<void> TrainingState::gatherUpdatedValues() {
  if (zero != 2)
    return {};
  EIN_TRY(gatherWholeParameters());
  for (TrainedParam &p : trained)
    if (!p.master)
      drop(p.shard.value);
  return {};
}

ErrorOr<void> TrainingState::gatherForCheckpoint() {
  if (meshProgram)
    return gatherMeshBlocks();
  if (zero == 1)
    return gatherOptimizerStates();
  if (!sharded())
    return {};
  for (size_t k = 0; k < stateNames.size(); ++k)
    EIN_TRY(moveShards(
        [k](TrainedParam &p) {
          return std::pair{&p.states[k], &p.shard.states[k]};
        },
        /*gather=*/true));
  // The checkpoint holds the whole values: ZeRO-3's, and the masters.
  return moveShards(
      values([this](const TrainedParam &p) { return zero == 3 || p.master; }),
      /*gather=*/true);
}

void TrainingState::dropAfterCheckpoint() {
  if (meshProgram)
    return keepMeshBlocks();
  if (zero == 1)
    dropUnownedStates();
  if (!sharded())
    return;
  for (TrainedParam &p : trained) {
    for (HostTensor &st : p.states)
      drop(st);
    if (zero == 3 || p.master)
      drop(p.value);
  }
}

} // namespace ein
