// The per-device memory of DDP and ZeRO-1/2/3 and the collectives of a
// data-parallel step, from the one-device account's parameters and states.
#include "ein/Analysis/DataParallel.h"

namespace ein {

const char *strategyName(DPStrategy strategy) {
  switch (strategy) {
  case DPStrategy::DDP:
    return "DDP";
  case DPStrategy::Zero1:
    return "ZeRO-1";
  case DPStrategy::Zero2:
    return "ZeRO-2";
  case DPStrategy::Zero3:
    return "ZeRO-3";
  }
  return "?";
}

const std::vector<DPStrategy> &allStrategies() {
  static const std::vector<DPStrategy> all = {
      DPStrategy::DDP, DPStrategy::Zero1, DPStrategy::Zero2, DPStrategy::Zero3};
  return all;
}

bool hasMaster(const DPParam &param) { return param.bytes < 4; }

unsigned stateBytes(const DPParam &param) {
  return hasMaster(param) ? 4 : param.bytes;
}

Int shardElements(Int elements, Int ranks) {
  return (elements + ranks - 1) / ranks;
}

RankMemory rankMemory(const DataParallelModel &model, DPStrategy strategy,
                      Int ranks) {
  // Which parts are sharded: the ZeRO stage is how many of (optimizer
  // states, gradients, parameters) are.
  bool shardStates = strategy != DPStrategy::DDP;
  bool shardGrads =
      strategy == DPStrategy::Zero2 || strategy == DPStrategy::Zero3;
  bool shardParams = strategy == DPStrategy::Zero3;
  RankMemory m;
  for (const DPParam &p : model.params) {
    Int shard = shardElements(p.elements, ranks);
    Int pad = shard * ranks - p.elements;
    // The optimizer's bytes per element: the states, and the f32 master of
    // a 16-bit parameter (the paper's K = 12 of mixed-precision Adam: 4
    // master + 4 m + 4 v).
    Int k = Int(model.states + (hasMaster(p) ? 1 : 0)) * stateBytes(p);
    Int b = p.bytes;
    m.parameters += (shardParams ? shard : p.elements) * b;
    m.gradients += (shardGrads ? shard : p.elements) * b;
    m.optimizerStates += (shardStates ? shard : p.elements) * k;
    m.padding += pad * ((shardParams ? b : 0) + (shardGrads ? b : 0) +
                        (shardStates ? k : 0));
  }
  m.activations = model.activationBytes;
  return m;
}

std::vector<Int> bucketBytes(const std::vector<Int> &paramBytes, Int capBytes) {
  std::vector<Int> buckets;
  Int open = 0;
  for (size_t i = paramBytes.size(); i-- > 0;) {
    open += paramBytes[i];
    if (open >= capBytes) {
      buckets.push_back(open);
      open = 0;
    }
  }
  if (open > 0)
    buckets.push_back(open);
  return buckets;
}

std::vector<StepCollective> stepCollectives(const DataParallelModel &model,
                                            DPStrategy strategy, Int ranks,
                                            Int bucketCapBytes,
                                            const FabricSpec &fabric) {
  // DDP's buffers are the parameters as they are; ZeRO's are padded to a
  // multiple of the ranks, parameter by parameter.
  bool padded = strategy != DPStrategy::DDP;
  std::vector<Int> paramBytes;
  for (const DPParam &p : model.params)
    paramBytes.push_back(
        (padded ? shardElements(p.elements, ranks) * ranks : p.elements) *
        Int(p.bytes));
  auto collective = [&](CollectiveKind kind, std::string what,
                        const std::vector<Int> &buffers) {
    StepCollective c{kind, std::move(what)};
    for (Int bytes : buffers) {
      c.calls += 1;
      c.bytes += bytes;
      c.bytesPerRank += bytesPerRank(kind, toDouble(bytes), ranks);
      c.seconds += collectiveSeconds(kind, toDouble(bytes), ranks, fabric);
    }
    return c;
  };
  std::vector<Int> buckets = bucketBytes(paramBytes, bucketCapBytes);
  switch (strategy) {
  case DPStrategy::DDP:
    return {collective(CollectiveKind::AllReduce, "gradients", buckets)};
  case DPStrategy::Zero1:
  case DPStrategy::Zero2:
    return {collective(CollectiveKind::ReduceScatter, "gradients", buckets),
            collective(CollectiveKind::AllGather,
                       "updated parameters (after the step)", buckets)};
  case DPStrategy::Zero3:
    // Gathered one parameter at a time, before the forward's use and again
    // before the backward's (as DeepSpeed's stage 3 and FSDP fetch each
    // module's parameters and free them after use).
    return {collective(CollectiveKind::AllGather, "parameters (forward)",
                       paramBytes),
            collective(CollectiveKind::AllGather, "parameters (backward)",
                       paramBytes),
            collective(CollectiveKind::ReduceScatter, "gradients", buckets)};
  }
  return {};
}

} // namespace ein
