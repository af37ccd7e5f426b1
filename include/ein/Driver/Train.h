// `einc train`: the training loop over a loss function — batches from
// memory-mapped data, gradients, accumulation, clipping, the optimizer's
// update of state held in memory, a learning-rate schedule, evaluation,
// checkpoints in safetensors with exact resume, and metrics (docs/training.md).
#pragma once

#include "ein/Conversion/CPU/CPUOptions.h"
#include "ein/Execution/JITOptions.h"
#include "ein/Runtime/Dataset.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Error.h"
#include "ein/Syntax/AST.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace ein {

class Communicator;

/// A data parameter of the loss and the file its batches come from.
struct TrainData {
  std::string param;
  std::string path;
  std::string rawType; // a raw file's element type ("u16"); empty for .npy
};

/// A 0-d parameter the loop feeds a number: TRAIN during the steps, EVAL
/// during evaluation (a dropout rate, a loss weight).
struct TrainScalar {
  std::string param;
  double train = 0, eval = 0;
};

/// The learning rate at each step (docs/training.md, "Schedules").
enum class LRSchedule {
  Constant,
  /// Linear warm-up to lr over `warmup` steps, then a cosine decay to
  /// minLr at the last step.
  Cosine,
};

/// An initialisation rule for the parameters whose names match `pattern`
/// (a glob: `*` any run of characters, `?` one).
struct InitRule {
  std::string pattern;
  enum class Kind { Normal, Uniform, Zeros, Ones, Constant } kind;
  double value = 0; // Normal: the std; Uniform: the bound a of [-a, a];
                    // Constant: the value
};

/// One finished step, as its progress line shows it: what
/// TrainRunOptions::onStep is given (the C++ API's progress callback).
struct TrainStepReport {
  int64_t step = 0; // steps done, counted from 1
  double loss = 0, lr = 0, gradNorm = 0;
  bool clipped = false;
  double lossScale = 0; // 0 without loss scaling
  bool skipped = false; // a scaled step whose gradient was not finite
  double seconds = 0, tokensPerSecond = 0;
  bool evaluated = false; // the held-out split was evaluated after it
  double valLoss = 0;
};

struct TrainRunOptions {
  std::string function;            // --fn: the loss (its first result)
  std::vector<std::string> params; // --params (empty: every float parameter
                                   // that is not data)
  std::vector<TrainData> data;     // --data PARAM=FILE[:TYPE]
  std::vector<TrainData> valData;  // --val-data PARAM=FILE[:TYPE]
  /// --key PARAM: an i64[""] (or i32) parameter given a fresh random key
  /// every micro-batch (a dropout's; docs/training.md, "Keys").
  std::vector<std::string> keys;
  std::vector<TrainScalar> scalars; // --scalar PARAM=TRAIN[:EVAL]
  double valFraction = 0;           // --val-fraction: the held-out tail
  int64_t steps = 0;                // --steps (required)
  int64_t accumulate = 1;           // --accumulate: micro-batches per step
  runtime::SampleOrder order = runtime::SampleOrder::Random; // --order
  uint64_t seed = 0;               // --seed: batches and initialisation
  std::string optimizer = "adamw"; // --optimizer: sgd, momentum, adam, adamw
  double lr = 1e-3, minLr = 0;     // --lr, --min-lr
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  double momentum = 0.9; // --momentum (momentum's mu)
  LRSchedule schedule = LRSchedule::Constant;
  int64_t warmup = 0; // --warmup steps
  double clip = 0;    // --clip: global-norm bound; 0 = none
  /// --loss-scale: the loss is multiplied by a scale before the gradient
  /// and the gradient divided by it after; a step whose gradient is not
  /// finite is skipped. Dynamic (torch's GradScaler): from
  /// lossScaleInit, halved on a skipped step, doubled after
  /// lossScaleGrowthInterval steps in a row without one. Default: dynamic
  /// when a trained parameter is f16, else none.
  enum class LossScaling { Default, None, Static, Dynamic };
  LossScaling lossScaling = LossScaling::Default;
  double lossScaleInit = 65536; // --loss-scale dynamic:INIT or a number
  int64_t lossScaleGrowthInterval = 2000; // --loss-scale-growth-interval
  std::string init;                       // --init FILE.safetensors
  std::vector<InitRule> initRules;        // --init-rule PATTERN=RULE
  std::string resume;                     // --resume CHECKPOINT.safetensors
  std::string checkpoint;                 // --checkpoint FILE.safetensors
  int64_t checkpointEvery = 0;            // --checkpoint-every N
  int64_t evalEvery = 0;                  // --eval-every N
  int64_t evalBatches = 1;                // --eval-batches N
  std::string log;                        // --log FILE.jsonl
  std::string plot;                       // --plot FILE.svg
  int64_t printEvery = 1; // --print-every N (0: no progress lines)
  double peakFlops = 0;   // --peak-flops (else einc calibrate's)
  /// The disk cache of compiled code (ObjectCache.h), as the C++ API uses
  /// it: a second start loads instead of compiling. --no-cache turns it off.
  bool diskCache = true;
  std::string target = "cpu";
  CPUOptions cpu;
  JITOptions jit;
  /// --ranks N: data parallel over N ranks, which `einc train` launches
  /// with mpirun (launchRanks); 0: one process, or the ranks of the mpirun
  /// this process runs under.
  int64_t ranks = 0;
  /// --dp-dim NAME: the batch dim split over the ranks; empty: the leading
  /// dim of the first --data parameter.
  std::string dpDim;
  /// --zero STAGE under data parallel (docs/training.md, "Data parallel"): 1,
  /// each parameter's optimizer states live on one rank, which updates it and
  /// broadcasts the value; 2, every parameter's gradient and states are
  /// sharded evenly over the ranks (reduce-scatter, update of the shard,
  /// all-gather); 3, its value too, gathered for each step.
  int64_t zero = 0;
  /// --simulate: a file with a mesh trains on --ranks threads of this
  /// process (simulated ranks) instead of MPI ranks.
  bool simulate = false;
  /// The ranks' communicator, not owned: with more than one rank, each
  /// takes its share of every batch, the gradients are averaged over the
  /// ranks, and rank 0 alone prints, logs and writes checkpoints
  /// (docs/training.md, "Data parallel"). Null: one process.
  Communicator *comm = nullptr;
  /// Called after each step and its evaluation, before its checkpoint
  /// (the C++ API's callback; einc sets none). Returning false ends the
  /// run there as a finished one: the checkpoint is written, the plot
  /// drawn, and trainFunction succeeds.
  std::function<bool(const TrainStepReport &)> onStep;
};

/// Data parallel over `ranks` ranks: binds the batch dim (options.dpDim,
/// or the leading dim of the first --data parameter) in `check` to its
/// size B divided by `ranks`, each rank's share. B must be known (a `dim`
/// or --dim) and divisible by `ranks` (an error naming B's divisors), and
/// every --data parameter must lead with that dim.
ErrorOr<void> splitBatchOverRanks(const Module &module, CheckOptions &check,
                                  const TrainRunOptions &options,
                                  int64_t ranks);

/// `einc train --ranks N` outside mpirun: runs `mpirun -n N` (with
/// --oversubscribe) on this executable and `arguments`, and waits for it;
/// an error when mpirun is missing, this build has no MPI, or a rank
/// failed.
ErrorOr<void> launchRanks(int64_t ranks,
                          const std::vector<std::string> &arguments);

/// The start-up check of a job's ranks (einc train, a sharded einc run):
/// first that every rank runs the same binary (binaryIdentity(): its GNU
/// build id), then that they pass the same `hash` (of the program, its
/// shapes and options: fnv1a, ein/Support/Hash.h), each refused as
/// checkSameOnAllRanks refuses, `what` naming what `hash` covers.
ErrorOr<void> checkSameRunOnAllRanks(Communicator &comm, uint64_t hash,
                                     const std::string &what);

/// `einc train`'s ranks: with --ranks N outside mpirun, checks the
/// batch's split, launches the job (launchRanks) and sets `launchedJob`;
/// under mpirun, starts the MPI world (returned; null otherwise) and, with
/// more than one rank, sets options.comm and binds each rank's share of
/// the batch in `check` (splitBatchOverRanks). --ranks on a target other
/// than the CPU, or one that differs from mpirun's, is refused by name.
ErrorOr<std::unique_ptr<Communicator>>
startRanks(const Module &module, CheckOptions &check, TrainRunOptions &options,
           const std::vector<std::string> &arguments, bool &launchedJob);

/// The learning rate of step `step` (counted from 0) of `options`'s
/// schedule: Constant: lr. Cosine: lr * (step + 1) / warmup while step <
/// warmup, then minLr + (lr - minLr) * (1 + cos(pi * (step - warmup) /
/// (steps - warmup))) / 2.
double learningRate(const TrainRunOptions &options, int64_t step);

/// Parses `--init-rule`'s PATTERN=RULE, RULE one of normal:STD,
/// uniform:BOUND, zeros, ones, const:VALUE.
ErrorOr<InitRule> parseInitRule(const std::string &text);

/// The flags `einc train` adds to the common ones (--fn, --dim, --target,
/// --cpu...): "--data", "--steps", ...; all but --no-cache and --simulate
/// take a value.
bool isTrainOption(const std::string &flag);
bool trainOptionTakesValue(const std::string &flag);
/// Reads `flag`'s value into `options` (a usage error naming the flag for a
/// missing or malformed one).
ErrorOr<void> parseTrainOption(const std::string &flag,
                               const std::optional<std::string> &value,
                               TrainRunOptions &options);
/// The checks of options that depend on each other, once all are read.
ErrorOr<void> checkTrainOptions(const TrainRunOptions &options);

/// `einc train --ranks N [--simulate]` of a file with a mesh (tensor
/// parallel; docs/training.md, "Tensor parallel"): each of the mesh's ranks
/// (MPI ranks, launched with `arguments` outside mpirun, or threads) holds
/// its blocks of every parameter and optimizer state by the parameter's
/// layout, runs the sharded gradient of the loss on its blocks of the
/// batch and updates its blocks; checkpoints hold the whole tensors.
/// `check.meshSizes` gives the mesh; what it does not do yet is refused by
/// name.
ErrorOr<void> trainSharded(const SourceFile &file, const Module &module,
                           const CheckOptions &check,
                           const TrainRunOptions &options,
                           const std::vector<std::string> &arguments,
                           std::ostream &out);

/// Trains `options.function` of the parsed `module` (docs/training.md):
/// progress lines go to `out`. Exit codes as `einc run`'s: 1 for the
/// program, 2 for bad inputs (data, checkpoints, options).
ErrorOr<void> trainFunction(const SourceFile &file, const Module &module,
                            const CheckOptions &check,
                            const TrainRunOptions &options, std::ostream &out);

} // namespace ein
