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

/// Copies each rank's part of `whole` (shards of `shard` elements) into
/// `bucket`'s rank-major layout, or back: rank r's part of parameter `i` of
/// `b` lies at r·block + offsets[i]. The one layout of both collectives.
void copyRankMajor(HostTensor &whole, int64_t shard, uint8_t *bucket,
                   const ShardBucket &b, size_t i, int ranks, bool intoBucket) {
  size_t elem = whole.elementBytes();
  for (int r = 0; r < ranks; ++r) {
    int64_t n = partOf(whole.numElements(), shard, r);
    if (n == 0)
      continue;
    uint8_t *there = bucket + size_t(r * b.block + b.offsets[i]) * elem;
    uint8_t *here = whole.data.data() + size_t(r * shard) * elem;
    std::memcpy(intoBucket ? there : here, intoBucket ? here : there,
                size_t(n) * elem);
  }
}

/// A parameter's whole tensor and its shard, which a collective moves
/// between.
using Pick =
    std::function<std::pair<HostTensor *, HostTensor *>(TrainedParam &)>;

/// The collectives of ZeRO-2/3 over `buckets`. Not `gather`: each shard =
/// its rank's part of the sum over the ranks of the whole tensors (a
/// reduce-scatter of each bucket packed rank-major, the padding zero).
/// `gather`: every rank's whole tensors (allocated when dropped) from all
/// the ranks' shards (an all-gather of each rank's block).
ErrorOr<void> moveShards(Communicator &comm,
                         const std::vector<ShardBucket> &buckets,
                         const Pick &pick, bool gather) {
  int ranks = comm.size();
  for (const ShardBucket &b : buckets) {
    size_t elem = runtime::storageBytes(b.type);
    // Every rank's parts, rank-major, and this rank's block.
    std::vector<uint8_t> all(size_t(ranks * b.block) * elem, 0),
        mine(size_t(b.block) * elem);
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto [whole, shard] = pick(*b.params[i]);
      if (gather)
        std::memcpy(mine.data() + size_t(b.offsets[i]) * elem,
                    shard->data.data(), shard->byteSize());
      else
        copyRankMajor(*whole, shard->numElements(), all.data(), b, i, ranks,
                      /*intoBucket=*/true);
    }
    EIN_TRY(gather ? comm.allGather(mine.data(), all.data(), b.type, b.block)
                   : comm.reduceScatter(all.data(), mine.data(), b.type,
                                        ranks * b.block, ReduceOp::Sum));
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto [whole, shard] = pick(*b.params[i]);
      if (gather) {
        whole->data.resize(whole->byteSize());
        copyRankMajor(*whole, shard->numElements(), all.data(), b, i, ranks,
                      /*intoBucket=*/false);
      } else {
        std::memcpy(shard->data.data(),
                    mine.data() + size_t(b.offsets[i]) * elem,
                    shard->byteSize());
      }
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
  return moveShards(*comm, shardBuckets(trained, dpRanks, bucketBytes),
                    values(), /*gather=*/true);
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
  EIN_TRY(moveShards(
      *comm, shardBuckets(trained, dpRanks, bucketBytes),
      [](TrainedParam &p) {
        return std::pair{&p.grad, &p.shard.grad};
      },
      /*gather=*/false));
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
  EIN_TRY(moveShards(*comm, shardBuckets(trained, dpRanks, bucketBytes),
                     values(), /*gather=*/true));
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
    EIN_TRY(moveShards(
        *comm, buckets,
        [k](TrainedParam &p) {
          return std::pair{&p.states[k], &p.shard.states[k]};
        },
        /*gather=*/true));
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
