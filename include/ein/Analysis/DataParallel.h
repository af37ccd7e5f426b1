// Data-parallel training on N ranks (docs/distributed.md §5): the memory
// each device holds under DDP and ZeRO-1/2/3, and the collectives of a step.
#pragma once

#include "ein/Analysis/Collectives.h"
#include "ein/Support/BigInt.h"

#include <string>
#include <vector>

namespace ein {

/// How N data-parallel ranks hold the training state (Rajbhandari et al.,
/// "ZeRO", SC 2020, §5): DDP replicates everything; ZeRO-1 shards the
/// optimizer states, ZeRO-2 also the gradients, ZeRO-3 also the parameters.
enum class DPStrategy { DDP, Zero1, Zero2, Zero3 };

/// "DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3".
const char *strategyName(DPStrategy strategy);
/// The four, in that order (the index is the ZeRO stage, DDP being 0).
const std::vector<DPStrategy> &allStrategies();

/// One trained parameter as the account holds it.
struct DPParam {
  Int elements = 0;
  unsigned bytes = 4; // per element, of the parameter and its gradient
};

/// What the per-device account reads from the one-device one: the
/// parameters at their dtypes, the optimizer's state count, and the saved
/// activations of one rank's share of the batch.
struct DataParallelModel {
  std::vector<DPParam> params;
  unsigned states = 0;     // optimizer state tensors per parameter
  Int activationBytes = 0; // per rank
};

/// A parameter narrower than 4 bytes (bf16, f16, f8) is trained over an f32
/// master copy, and its optimizer states are f32 too (as `einc train` does
/// and the ZeRO paper's mixed-precision Adam counts); a wider one keeps its
/// states at its own dtype and has no master.
bool hasMaster(const DPParam &param);
/// The bytes per element of the master copy (when there is one) and of
/// each optimizer state: 4, or the parameter's own width.
unsigned stateBytes(const DPParam &param);

/// The elements one rank holds of a parameter sharded over `ranks`:
/// ceil(elements / ranks). Each parameter is padded to a multiple of the
/// ranks (as DeepSpeed flattens and pads, and FSDP pads each flat
/// parameter), so every rank holds the same count.
Int shardElements(Int elements, Int ranks);

/// The bytes one device holds. Sharded parts are counted at their padded
/// shard size (every rank allocates the same); `padding` is the bytes of
/// padding summed over all the ranks: (N · shard − elements) per parameter,
/// times the bytes per element of each sharded part.
struct RankMemory {
  Int parameters = 0, gradients = 0, optimizerStates = 0, activations = 0;
  Int padding = 0;
  Int total() const {
    return parameters + gradients + optimizerStates + activations;
  }
};

/// The memory of one device under `strategy` on `ranks` data-parallel
/// ranks. With Ψ elements of p bytes, K = (master + states) · s bytes of
/// optimizer state per element: DDP (2p + K)Ψ; ZeRO-1 2pΨ + KΨ/N; ZeRO-2
/// pΨ + (p + K)Ψ/N; ZeRO-3 (2p + K)Ψ/N (Ψ/N rounded up per parameter).
/// With bf16 parameters and Adam (p = 2, K = 12) these are the paper's
/// 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N and 16Ψ/N.
RankMemory rankMemory(const DataParallelModel &model, DPStrategy strategy,
                      Int ranks);

/// The buckets of a bucketed gradient collective, in bytes: the parameters
/// in reverse order (the order the backward produces their gradients), each
/// bucket closed once it holds `capBytes` or more, as PyTorch DDP assigns
/// them (a parameter larger than the cap is a bucket of its own).
std::vector<Int> bucketBytes(const std::vector<Int> &paramBytes, Int capBytes);

/// One kind of collective of a step: `calls` collectives moving `bytes`
/// in all (nccl-tests' size: the whole buffer of each, summed), the bytes
/// each rank sends (busFactor · bytes) and the modelled time (the sum of
/// collectiveSeconds over the calls: calls · α + busFactor · bytes / B).
struct StepCollective {
  CollectiveKind kind;
  std::string what; // "gradients", "parameters (forward)", ...
  Int calls = 0;
  Int bytes = 0;
  double bytesPerRank = 0;
  double seconds = 0;
};

/// The collectives of one step under `strategy`: DDP all-reduces the
/// gradients in buckets of `bucketCapBytes`; ZeRO-1 and ZeRO-2
/// reduce-scatter them (same buckets, padded parameters) and all-gather the
/// updated parameters; ZeRO-3 reduce-scatters them and all-gathers each
/// parameter before its use in the forward and again in the backward (the
/// paper's 1.5x of DDP's volume) and not after the update.
std::vector<StepCollective> stepCollectives(const DataParallelModel &model,
                                            DPStrategy strategy, Int ranks,
                                            Int bucketCapBytes,
                                            const FabricSpec &fabric);

} // namespace ein
