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

/// Propagates the error of a collective.
#define EIN_TRY(expr)                                                          \
  if (auto ok_ = (expr); !ok_)                                                 \
    return ok_.error();

/// The elements of rank `r`'s shard of a parameter of `elements` that are
/// the parameter's (the rest is padding): min(shard, elements - r·shard),
/// at least 0.
int64_t partOf(int64_t elements, int64_t shard, int r) {
  return std::clamp<int64_t>(elements - int64_t(r) * shard, 0, shard);
}

/// `shard` = rank `r`'s shard of `whole`, its padding zero.
void cutShard(const HostTensor &whole, HostTensor &shard, int r) {
  size_t elem = whole.elementBytes();
  int64_t s = shard.numElements();
  shard.data.assign(shard.byteSize(), 0);
  if (int64_t n = partOf(whole.numElements(), s, r))
    std::memcpy(shard.data.data(), whole.data.data() + size_t(r * s) * elem,
                size_t(n) * elem);
}

/// A bucket of the sharded collectives: parameters of one dtype, each
/// rank's block holding their shards one after another.
struct ShardBucket {
  StorageType type = StorageType::F32;
  std::vector<TrainedParam *> params;
  std::vector<int64_t> offsets; // of each parameter's shard in a block
  int64_t block = 0;            // elements of one rank's block
};

/// The buckets: the parameters in reverse order (the backward's), one open
/// bucket per dtype, closed once its padded bytes (ranks · block) reach
/// `capBytes`, as the report's bucketBytes closes them.
std::vector<ShardBucket> shardBuckets(std::vector<TrainedParam> &trained,
                                      int ranks, size_t capBytes) {
  std::vector<ShardBucket> closed;
  std::map<StorageType, ShardBucket> open;
  for (size_t i = trained.size(); i-- > 0;) {
    TrainedParam &p = trained[i];
    ShardBucket &b = open[p.grad.type];
    b.type = p.grad.type;
    b.params.push_back(&p);
    b.offsets.push_back(b.block);
    b.block += p.shard.grad.numElements();
    if (size_t(ranks * b.block) * runtime::storageBytes(b.type) >= capBytes) {
      closed.push_back(std::move(b));
      open.erase(p.grad.type);
    }
  }
  for (auto &[type, b] : open)
    closed.push_back(std::move(b));
  return closed;
}

/// A parameter's whole tensor and its shard, which a collective moves
/// between.
using Pick =
    std::function<std::pair<HostTensor *, HostTensor *>(TrainedParam &)>;

/// Each shard = its rank's part of the sum over the ranks of the whole
/// tensors: every bucket packed rank-major (the padding zero) and
/// reduce-scattered.
ErrorOr<void> reduceScatterShards(Communicator &comm,
                                  const std::vector<ShardBucket> &buckets,
                                  const Pick &pick) {
  int ranks = comm.size();
  for (const ShardBucket &b : buckets) {
    size_t elem = runtime::storageBytes(b.type);
    std::vector<uint8_t> send(size_t(ranks * b.block) * elem, 0),
        recv(size_t(b.block) * elem);
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto [whole, shard] = pick(*b.params[i]);
      int64_t s = shard->numElements();
      for (int r = 0; r < ranks; ++r)
        if (int64_t n = partOf(whole->numElements(), s, r))
          std::memcpy(send.data() + size_t(r * b.block + b.offsets[i]) * elem,
                      whole->data.data() + size_t(r * s) * elem,
                      size_t(n) * elem);
    }
    EIN_TRY(comm.reduceScatter(send.data(), recv.data(), b.type,
                               ranks * b.block, ReduceOp::Sum));
    for (size_t i = 0; i < b.params.size(); ++i) {
      HostTensor *shard = pick(*b.params[i]).second;
      std::memcpy(shard->data.data(), recv.data() + size_t(b.offsets[i]) * elem,
                  shard->byteSize());
    }
  }
  return {};
}

/// Every rank's whole tensors (allocated when dropped) from all the ranks'
/// shards: every bucket's block packed and all-gathered.
ErrorOr<void> allGatherShards(Communicator &comm,
                              const std::vector<ShardBucket> &buckets,
                              const Pick &pick) {
  int ranks = comm.size();
  for (const ShardBucket &b : buckets) {
    size_t elem = runtime::storageBytes(b.type);
    std::vector<uint8_t> send(size_t(b.block) * elem),
        recv(size_t(ranks * b.block) * elem);
    for (size_t i = 0; i < b.params.size(); ++i) {
      HostTensor *shard = pick(*b.params[i]).second;
      std::memcpy(send.data() + size_t(b.offsets[i]) * elem, shard->data.data(),
                  shard->byteSize());
    }
    EIN_TRY(comm.allGather(send.data(), recv.data(), b.type, b.block));
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto [whole, shard] = pick(*b.params[i]);
      whole->data.resize(whole->byteSize());
      int64_t s = shard->numElements();
      for (int r = 0; r < ranks; ++r)
        if (int64_t n = partOf(whole->numElements(), s, r))
          std::memcpy(whole->data.data() + size_t(r * s) * elem,
                      recv.data() + size_t(r * b.block + b.offsets[i]) * elem,
                      size_t(n) * elem);
    }
  }
  return {};
}

Pick values() {
  return [](TrainedParam &p) { return std::pair{&p.value, &p.shard.value}; };
}

} // namespace

std::vector<int64_t> zeroShardShape(int64_t elements, int64_t ranks) {
  return {int64_t(shardElements(elements, ranks))};
}

ErrorOr<void> TrainingState::shardState(int stage) {
  if (!memory->isHost())
    return Error::program(fmt::format("ZeRO-{} holds the loop's tensors on "
                                      "the host; startRanks refuses it on "
                                      "{}",
                                      stage, memory->name()));
  zero = stage;
  for (TrainedParam &p : trained) {
    if (!p.model.data.empty())
      return Error::usage(fmt::format(
          "--zero {}: parameter '{}' is {}, trained over an f32 master copy; "
          "ZeRO-2 and ZeRO-3 of master weights are not built (--zero 1 is)",
          stage, p.name, runtime::storageName(p.model.type)));
    std::vector<int64_t> shape = zeroShardShape(p.value.numElements(), dpRanks);
    p.shard.value = *HostTensor::create(p.value.type, shape);
    cutShard(p.value, p.shard.value, dpRank);
    if (stage == 2)
      releaseData(p.shard.value); // cut again for each update
    p.shard.grad = *HostTensor::create(p.grad.type, shape);
    p.shard.states.clear();
    for (HostTensor &st : p.states) {
      p.shard.states.push_back(*HostTensor::create(st.type, shape));
      cutShard(st, p.shard.states.back(), dpRank);
      releaseData(st);
    }
    releaseData(p.grad);
    releaseData(p.micro);
  }
  releaseParameters();
  return {};
}

ErrorOr<void> TrainingState::gatherParameters() {
  if (zero != 3)
    return {};
  return allGatherShards(*comm, shardBuckets(trained, dpRanks, bucketBytes),
                         values());
}

void TrainingState::releaseParameters() {
  if (zero == 3)
    for (TrainedParam &p : trained)
      releaseData(p.value);
}

void TrainingState::allocateGradients() {
  // The micro-batch sum is used only with --accumulate (master weights
  // are refused by shardState).
  for (TrainedParam &p : trained) {
    p.grad.data.resize(p.grad.byteSize());
    if (options.accumulate > 1)
      p.micro.data.resize(p.micro.byteSize());
  }
}

ErrorOr<void> TrainingState::reduceScatterGradients() {
  EIN_TRY(reduceScatterShards(
      *comm, shardBuckets(trained, dpRanks, bucketBytes), [](TrainedParam &p) {
        return std::pair{&p.grad, &p.shard.grad};
      }));
  for (TrainedParam &p : trained) {
    releaseData(p.grad);
    releaseData(p.micro);
  }
  releaseParameters();
  return {};
}

ErrorOr<void> TrainingState::cutValueShards() {
  if (zero == 2)
    for (TrainedParam &p : trained)
      cutShard(p.value, p.shard.value, dpRank);
  return {};
}

ErrorOr<void> TrainingState::gatherUpdatedValues() {
  if (zero != 2)
    return {};
  EIN_TRY(allGatherShards(*comm, shardBuckets(trained, dpRanks, bucketBytes),
                          values()));
  for (TrainedParam &p : trained)
    releaseData(p.shard.value);
  return {};
}

ErrorOr<void> TrainingState::gatherForCheckpoint() {
  if (zero == 1)
    return gatherOptimizerStates();
  if (!sharded())
    return {};
  std::vector<ShardBucket> buckets =
      shardBuckets(trained, dpRanks, bucketBytes);
  for (size_t k = 0; k < stateNames.size(); ++k)
    EIN_TRY(allGatherShards(*comm, buckets, [k](TrainedParam &p) {
      return std::pair{&p.states[k], &p.shard.states[k]};
    }));
  return gatherParameters();
}

void TrainingState::dropAfterCheckpoint() {
  if (zero == 1)
    dropUnownedStates();
  if (!sharded())
    return;
  for (TrainedParam &p : trained)
    for (HostTensor &st : p.states)
      releaseData(st);
  releaseParameters();
}

} // namespace ein
