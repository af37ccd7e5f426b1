// The state `einc train` holds between steps (parameters, optimizer states,
// batches, compiled gradient and update) and one step of the loop over it.
#pragma once

#include "ein/Driver/Sharded.h"
#include "ein/Driver/Train.h"
#include "ein/Engine/Engine.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Runtime/Dataset.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Target/DeviceMemory.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

/// Propagates the error of an ErrorOr<void> step (the training loop's
/// files: a copy, a collective, a call in the state's memory).
#define EIN_TRY(expr)                                                          \
  if (auto ok_ = (expr); !ok_)                                                 \
    return ok_.error();

namespace ein {

struct ShardedProgram;
class TrainingState;

/// Tensor-parallel training of a file with a mesh (TrainSharded.cpp): one
/// rank of the mesh, and the sharded program of the loss and its gradient
/// that every rank runs.
struct MeshRank {
  Communicator *world = nullptr; // the mesh's ranks, row-major
  /// The program (the loss, then its gradient wrt each trained parameter,
  /// with loss scaling of loss * scale, the scale a last input; with
  /// `forward`, the loss function itself, for evaluation) bound to the
  /// whole shapes of the state's inputs and built for the state's target:
  /// prepared once, its result shared by the ranks of one process.
  std::function<ErrorOr<std::shared_ptr<const ShardedProgram>>(
      const TrainingState &, bool forward)>
      program;
};

/// The checkpoint format's tag (its metadata's "format").
inline constexpr const char *kCheckpointFormat = "ein-train-1";
/// The tensor of optimizer state `state` of parameter `param` in a
/// checkpoint: "optimizer.exp_avg.w1".
inline std::string stateTensorName(const std::string &state,
                                   const std::string &param) {
  return "optimizer." + state + "." + param;
}

/// What one step did.
struct StepResult {
  double loss = 0;     // the mean of the micro-batches' losses
  double lr = 0;       // the step's learning rate
  double gradNorm = 0; // the global norm of the gradient before clipping
  bool clipped = false;
  /// With loss scaling: the scale the step used, and whether its gradient
  /// was not finite, so that the update was skipped.
  double lossScale = 0;
  bool skipped = false;
};

/// A data parameter: its dataset and the batch it is filled into.
struct DataInput {
  size_t param = 0; // index among the loss's parameters
  std::string name;
  std::shared_ptr<runtime::Dataset> dataset;
  runtime::HostTensor batch;
  int64_t begin = 0, end = 0; // the training split of the first dim
  // The validation split: another dataset, or the tail of this one.
  std::shared_ptr<runtime::Dataset> valDataset;
  int64_t valBegin = 0, valEnd = 0;
};

/// A 0-d parameter the loop fills: a key (a fresh random i64 or i32 per
/// micro-batch) or a scalar (--scalar's TRAIN or EVAL value).
struct FedInput {
  size_t param = 0;
  std::string name;
  runtime::HostTensor value;
  bool key = false;
  size_t keyIndex = 0; // the key's stream: its position among --key's
  double train = 0, eval = 0;
};

/// A trained parameter: its value, gradient, optimizer states and update.
struct TrainedParam {
  size_t param = 0; // index among the loss's parameters
  std::string name;
  runtime::HostTensor value, grad;
  /// A micro-batch's gradient in the model's dtype, added into `grad`
  /// (with --accumulate > 1, or master weights).
  runtime::HostTensor micro;
  /// For a bf16 or f16 parameter (`master`): the model's copy of the f32
  /// master `value`, rounded to nearest even before each call (empty
  /// otherwise). Under ZeRO-2/3 the master is only `shard.value`, and the
  /// model copy is gathered from the ranks' rounded shards.
  runtime::HostTensor model;
  bool master = false;
  std::vector<runtime::HostTensor> states; // the optimizer's, in its order
  BoundCall update;                        // the optimizer, bound to its shape
  /// ZeRO-1: the rank that holds this parameter's optimizer states and
  /// updates it, then broadcasts its value; -1: every rank does.
  int owner = -1;
  /// ZeRO-2 and ZeRO-3 (TrainingState::shardState): this rank's shard of
  /// the parameter flattened and padded with zeros to dpRanks·S elements,
  /// elements [dpRank·S, (dpRank+1)·S), as tensors of shape {S} (S =
  /// zeroShardShape's): of the value (ZeRO-3's only copy between steps;
  /// ZeRO-2's is cut from the whole value for the update alone), of the
  /// gradient summed over the ranks, and of each optimizer state. The
  /// update runs on them. The whole `states` are then empty (gathered for a
  /// checkpoint alone), as `grad` and `micro` are between steps and, under
  /// ZeRO-3, `value`. Over a master copy (`master`), `value` is the f32
  /// master's shard, kept between steps under ZeRO-2 too (the whole master
  /// is then held for a checkpoint alone), and `model` its rounding to the
  /// model's dtype, held while it is gathered into the whole `model`.
  struct Shard {
    runtime::HostTensor value, grad, model;
    std::vector<runtime::HostTensor> states;
  } shard;
  /// Tensor parallel: whether this rank's block counts in the global
  /// gradient norm (the block's first replica, coordinate 0 on every mesh
  /// axis the parameter is not split on); and, while a checkpoint is
  /// written, the value's and states' blocks, which the whole tensors
  /// replace.
  bool inNorm = true;
  std::vector<runtime::HostTensor> keptBlocks;
};

/// The shape of one rank's shard of a parameter of `elements` under ZeRO-2
/// or ZeRO-3 on `ranks` ranks: {ceil(elements / ranks)}, the report's
/// shardElements (ein/Analysis/DataParallel.h), so that the two agree.
std::vector<int64_t> zeroShardShape(int64_t elements, int64_t ranks);

/// The bytes one rank holds between steps, by part, as `einc report
/// --train --ranks N` counts them (RankMemory): the parameters (with their
/// model copies), the gradients (with the micro-batch sums) and the
/// optimizer states (ZeRO's shards included).
struct HeldState {
  int64_t parameters = 0, gradients = 0, optimizerStates = 0;
};

/// Frees a tensor's data (a ZeRO rank's part it does not keep); its type
/// and shape stay.
inline void releaseData(runtime::HostTensor &t) {
  std::vector<uint8_t>().swap(t.data);
}

/// What ZeRO stage `stage` shards: "the optimizer states", "the gradients
/// and optimizer states", ...
const char *zeroShardedParts(int64_t stage);

class TrainingState {
public:
  /// A parameter's whole tensor and its shard, which ZeRO-2/3's collectives
  /// move between (moveShards, cutShards).
  using PickShard =
      std::function<std::pair<runtime::HostTensor *, runtime::HostTensor *>(
          TrainedParam &)>;

  TrainingState() = default;
  TrainingState(const TrainingState &) = delete;
  TrainingState &operator=(const TrainingState &) = delete;
  ~TrainingState();

  TrainRunOptions options;
  /// The next step to run (counted from 0): the steps done.
  int64_t step = 0;
  /// The updates done: the steps less those skipped for a gradient that
  /// was not finite (the optimizer's own step count, as torch.optim's).
  int64_t updates = 0;
  /// Loss scaling (TrainRunOptions::lossScaling), resolved: the scale now,
  /// and the steps since it last changed or a step was skipped.
  bool lossScaled = false, lossScaleDynamic = false;
  double lossScale = 1;
  int64_t growthTracker = 0;

  ErrorOr<StepResult> trainStep();
  /// The mean loss over --eval-batches batches of the validation split.
  ErrorOr<double> evaluate();
  bool hasValidation() const;
  /// Writes parameters, optimizer states and the step (docs/training.md,
  /// "Checkpoints") to `path`, replacing it only when all is written (on a
  /// device, after copying them to the host).
  ErrorOr<void> writeCheckpoint(const std::string &path);
  /// Gives every tensor of the loop its copy in `memory` when that is a
  /// device's, holding the host's values (prepareTraining's last step).
  ErrorOr<void> placeOnDevice();

  /// The analytic FLOPs of one step (forward and backward of every
  /// micro-batch, the optimizer's update); 0 when unknown.
  double flopsPerStep() const { return stepFlops; }
  /// `einc report --train`'s peak of live bytes for the step; -1 unknown.
  double reportPeakBytes() const { return peakBytes; }
  /// Tokens (positions predicted: B·(W-1) per window batch) or samples per
  /// step, and which.
  int64_t tokensPerStep() const { return stepTokens; }
  const char *tokenUnit() const { return tokenUnitName; }
  /// Bytes of the tensors the loop holds for the model (parameters,
  /// gradients, optimizer states, batches), and of the spare tensors the
  /// update writes into.
  int64_t heldBytes() const;
  HeldState heldState() const;
  int64_t spareBytes() const;
  /// The run's description, printed before the first step.
  std::string summary() const;
  /// Data parallel's line: the ranks, the split, the ZeRO stage, and what
  /// this rank holds beside what the report counts.
  std::string dataParallelSummary() const;

  // Set up by prepareTraining.
  Engine engine;
  /// Where the gradient, the forward and the update run and the loop's
  /// tensors live between steps: the host, or a device (the CUDA targets),
  /// where each host tensor of the loop has a copy (`mirrors`). On a
  /// device, the host tensors of parameters and optimizer states are
  /// brought up to date only for a checkpoint.
  DeviceMemory *memory = &hostMemory();
  std::shared_ptr<Callable> gradient; // (loss, grads...) of the loss
  /// The loss alone, for evaluation: null when the run evaluates nothing.
  std::shared_ptr<Callable> forward;
  BoundCall lossCall; // the loss bound to the shapes
  std::string function, path;
  size_t paramCount = 0;
  std::vector<DataInput> data;
  std::vector<FedInput> fed;
  std::vector<TrainedParam> trained;
  /// The update's outputs: spare tensors of each shape, swapped with the
  /// parameter's after the update (no copy, no allocation per step).
  std::map<std::pair<int, std::vector<int64_t>>,
           std::vector<runtime::HostTensor>>
      spares;
  runtime::HostTensor lossValue;
  /// The gradient's last input with loss scaling: the scale, 0-d f32.
  runtime::HostTensor lossScaleValue;
  /// The update's 0-d f64 hyper-parameters, by name (lr, beta1, step...).
  std::map<std::string, runtime::HostTensor> hypers;
  std::vector<std::string> stateNames, hyperNames;
  double stepFlops = 0, peakBytes = -1, compileSeconds = 0;
  size_t compiled = 0, loaded = 0; // executables compiled, loaded from disk
  int64_t stepTokens = 0;
  const char *tokenUnitName = "tokens";
  /// Data parallel (TrainRunOptions::comm): this rank's share of each
  /// batch is rows [dpRank·b, (dpRank+1)·b) of the whole batch of
  /// dpRanks·b rows, and the gradients and losses are averaged over the
  /// ranks (allReduceGradients).
  Communicator *comm = nullptr;
  /// The collectives on `memory`'s buffers when that is a device's
  /// (DeviceMemory::communicator: NCCL, emulated under cuda-emulated), over
  /// the ranks of `comm`: the gradients are summed where they live. Null on
  /// the host, where `comm` sums them.
  std::unique_ptr<Communicator> deviceComm;
  int dpRank = 0, dpRanks = 1;
  /// Sums each gradient over the ranks, in place, packed into buckets of
  /// about bucketBytes (PyTorch DDP's 25 MB; EIN_DP_BUCKET_BYTES sets
  /// another, for tests), so that many small gradients make few
  /// collectives.
  ErrorOr<void> allReduceGradients();
  /// ZeRO-1 (TrainRunOptions::zero): each parameter gets an owner, the
  /// ranks balanced by elements (largest first, as PyTorch's
  /// ZeroRedundancyOptimizer partitions by parameter), and the other ranks
  /// drop its optimizer states (their shape and type stay, the data goes).
  void shardOptimizerStates();
  /// After the owners' updates: every parameter's value from its owner.
  ErrorOr<void> broadcastParameters();
  /// For a checkpoint, which holds the unsharded state: every rank gets
  /// every optimizer state from its owner (collective), and drops them
  /// again after (dropUnownedStates).
  ErrorOr<void> gatherOptimizerStates();
  void dropUnownedStates();
  /// For a checkpoint, under any ZeRO stage: every rank gets the whole
  /// state (collective), and drops what the stage does not keep after.
  ErrorOr<void> gatherForCheckpoint();
  void dropAfterCheckpoint();
  /// The ZeRO stage the state runs (0: none; TrainRunOptions::zero).
  int zero = 0;

  // ZeRO-2 and ZeRO-3 (TrainZero.cpp; docs/training.md, "Data parallel"). Their
  // collectives run in buckets of about bucketBytes, each holding the
  // parameters' shards rank-major (block r: every parameter's shard r),
  // so that one reduce-scatter leaves each rank its shards and one
  // all-gather gives every rank all of them.
  /// Cuts each parameter's shards (TrainedParam::shard) from its whole
  /// value and states and drops what the stage does not keep.
  ErrorOr<void> shardState(int stage);
  bool sharded() const { return zero >= 2; }
  /// ZeRO-3: the whole values (or model copies) from the shards, before the
  /// loss is called; releaseParameters drops them after.
  ErrorOr<void> gatherParameters();
  /// What the loss reads, whole, from every rank's shard: the values, and
  /// over a master copy the model copies rounded from the master shards.
  ErrorOr<void> gatherWholeParameters();
  void releaseParameters();
  /// Before the backward: room for the whole gradients (and micro-batch
  /// sums) the gradient writes.
  ErrorOr<void> allocateGradients();
  /// The whole gradients summed over the ranks into the shards, which
  /// frees them (and, under ZeRO-3, the whole values).
  ErrorOr<void> reduceScatterGradients();
  /// The update's inputs and, after it, its results: ZeRO-2 cuts the value
  /// shards from the whole values before it and gathers the updated shards
  /// into every rank's whole values after.
  ErrorOr<void> cutValueShards();
  ErrorOr<void> gatherUpdatedValues();
  /// The gradient the step scales, clips and updates with: the shard
  /// under ZeRO-2/3, else the whole one.
  runtime::HostTensor &stepGradient(TrainedParam &p) {
    return sharded() ? p.shard.grad : p.grad;
  }
  size_t bucketBytes = 25u << 20;
  /// The gradient buckets, one per dtype, in `memory` (allocated on the
  /// first step).
  std::map<runtime::StorageType, void *> gradBuckets;
  std::string initFrom;

  // Tensor parallel (TrainSharded.cpp; docs/training.md, "Tensor
  // parallel"): a file with a mesh trains on its ranks, each holding its
  // blocks of every parameter, gradient and optimizer state by the
  // parameter's layout; the gradient is the sharded program's, run on the
  // rank's blocks of the batch; the update runs on the blocks.
  std::shared_ptr<const ShardedProgram> meshProgram;
  /// The loss function on the mesh, for evaluation (null when the run
  /// evaluates nothing).
  std::shared_ptr<const ShardedProgram> meshForward;
  Communicator *meshWorld = nullptr;
  /// The mesh's communicator groups, kept between steps (runShardedRank).
  AxisGroups meshGroups;
  /// Prepares the mesh's program and cuts the state's whole tensors into
  /// this rank's blocks (prepareTraining, before the update is bound).
  ErrorOr<void> useMesh(const MeshRank &mesh);
  /// Runs `program` (meshProgram or meshForward) on this rank's blocks of
  /// the loss's inputs, its results' blocks into `outputs` (those of the
  /// gradient's or the forward's Callable).
  ErrorOr<void> runOnMesh(const ShardedProgram &program,
                          const std::vector<runtime::HostTensor *> &outputs);
  /// For a checkpoint: the whole values and optimizer states from every
  /// rank's blocks (collective), and the blocks back after it.
  ErrorOr<void> gatherMeshBlocks();
  void keepMeshBlocks();
  /// The loss's inputs in its parameters' order (whole until useMesh cuts
  /// the parameters' blocks).
  std::vector<const runtime::HostTensor *> wholeInputs() const {
    return lossInputs();
  }
  /// The mesh and this rank's blocks, printed after the summary.
  std::string meshSummary() const;

private:
  /// A loop tensor's data where the code reads it: the host tensor's own,
  /// or its device copy.
  void *on(const runtime::HostTensor &t) const;
  /// Copies a host tensor to its device copy, or back (none on the host).
  ErrorOr<void> upload(const runtime::HostTensor &t);
  ErrorOr<void> download(runtime::HostTensor &t);
  /// Calls `callable` on the loop's tensors where they live: on host
  /// tensors (Callable::call, with its checks), or on the device copies
  /// (Callable::callStrided).
  ErrorOr<void> invoke(Callable &callable,
                       const std::vector<const runtime::HostTensor *> &inputs,
                       const std::vector<runtime::HostTensor *> &outputs,
                       const Bindings &dims, int64_t *indexStatus = nullptr);
  /// ZeRO's tensors coming and going where they live: `hold` gives a
  /// tensor without data its data (and, on a device, its device copy);
  /// `drop` frees both.
  ErrorOr<void> hold(runtime::HostTensor &t);
  void drop(runtime::HostTensor &t);
  /// ZeRO-2/3's bucketed collectives between each parameter's whole tensor
  /// and shard that `pick` names (TrainZero.cpp), on the device's
  /// communicator when there is one: reduce-scatter into the shards, or
  /// all-gather into the whole tensors (held first).
  ErrorOr<void> moveShards(const PickShard &pick, bool gather);
  /// Each shard `pick` names (held first) cut from its whole tensor.
  ErrorOr<void> cutShards(const PickShard &pick);
  /// The device copy of each loop tensor, by the address of its host
  /// tensor's data: a tensor that changes places with a spare (a swap of
  /// HostTensors, whose buffers stay where they are) takes its copy along.
  std::unordered_map<const void *, void *> mirrors;

  /// The fed inputs' values for micro-batch `counter` (or evaluation).
  ErrorOr<void> feed(bool validation, uint64_t counter);
  void setFed(FedInput &f, bool validation, uint64_t counter);
  /// Rounds each master weight into its model copy.
  ErrorOr<void> refreshModelCopies();
  ErrorOr<void> fillBatches(bool validation, uint64_t firstSample);
  ErrorOr<void> callLoss(const std::shared_ptr<Callable> &callable,
                         const std::vector<runtime::HostTensor *> &outputs);
  std::vector<const runtime::HostTensor *> lossInputs() const;
};

/// Checks the loss, sorts its parameters, reads data, initialises or
/// resumes the state, and compiles the gradient, the forward and the
/// update for the target.
ErrorOr<std::unique_ptr<TrainingState>>
prepareTraining(const SourceFile &file, const Module &module,
                const CheckOptions &check, const TrainRunOptions &options,
                const MeshRank *mesh = nullptr);

/// The progress line's figures (TrainFigures.cpp): this process's resident
/// bytes (-1 unknown), bytes in binary units ("-" for a negative count), a
/// rate with a decimal prefix, and a JSON number (null when not finite).
int64_t residentBytes();
std::string bytesText(double bytes);
std::string rateText(double v);
std::string jsonNumber(double v);

/// `function` of a file with a mesh checked on a mesh of one rank per axis:
/// the whole program, whose parameters' roles and whole shapes the state
/// takes (never compiled: Engine::check refuses it, and the gradient is
/// the mesh's).
ErrorOr<CheckedModule> checkOnUnitMesh(const SourceFile &file,
                                       const Module &module,
                                       const CheckOptions &check,
                                       const std::string &function);

/// trainFunction's loop on one rank of a mesh (`mesh`; null: one process
/// or data parallel).
ErrorOr<void> trainRank(const SourceFile &file, const Module &module,
                        const CheckOptions &check,
                        const TrainRunOptions &options, std::ostream &out,
                        const MeshRank *mesh);

} // namespace ein
