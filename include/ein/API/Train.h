// The embedded C++ API's training loop: `einc train` (docs/training.md) over
// a loaded module's loss function, with a progress callback that can stop it.
#pragma once

#include "ein/API/Distributed.h"
#include "ein/API/Module.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ein::api {

/// A data parameter of the loss and the file its batches are read from,
/// mapped read-only (`einc train --data PARAM=FILE[:TYPE]`).
struct TrainData {
  std::string param;
  std::string path;
  /// A raw file's element type ("u8", "u16", "u32", "i32", "i64", "f32");
  /// empty for a .npy file.
  std::string raw_type;
};

/// The update rule (ein.optim's, as `--optimizer`).
enum class Optimizer : uint8_t { SGD, Momentum, Adam, AdamW };
/// The learning rate per step (`--schedule`): constant, or a linear warm-up
/// then a cosine decay to min_lr (docs/training.md, "Schedules").
enum class Schedule : uint8_t { Constant, Cosine };
/// Which samples a batch takes (`--order`).
enum class SampleOrder : uint8_t { Random, Sequential };
/// `--loss-scale`: Default is dynamic when a trained parameter is f16, else
/// none; Static multiplies by loss_scale_init always.
enum class LossScaling : uint8_t { Default, None, Static, Dynamic };

/// One finished step: what the progress callback is given.
struct StepInfo {
  int64_t step = 0;     ///< steps done, counted from 1
  double loss = 0;      ///< the mean of the step's micro-batch losses
  double lr = 0;        ///< the learning rate the step used
  double grad_norm = 0; ///< the global gradient norm before clipping
  bool clipped = false;
  double loss_scale = 0; ///< 0 without loss scaling
  bool skipped = false;  ///< a scaled step whose gradient was not finite
  double seconds = 0, tokens_per_second = 0;
  bool evaluated = false; ///< the held-out split was evaluated after it
  double val_loss = 0;
};

/// The options of `einc train` (docs/training.md), one field per flag;
/// the defaults are einc's.
struct TrainOptions {
  std::vector<TrainData> data;     ///< --data, one per data parameter
  std::vector<TrainData> val_data; ///< --val-data
  double val_fraction = 0;         ///< --val-fraction: the held-out tail
  /// --params: the trained parameters (empty: every float parameter that
  /// is not data).
  std::vector<std::string> params;
  /// --dim: sizes bound beside the module's own (a batch's sizes).
  Sizes sizes;
  int64_t steps = 0; ///< --steps (required)
  int64_t accumulate = 1;
  SampleOrder order = SampleOrder::Random;
  uint64_t seed = 0; ///< batches and initialisation
  Optimizer optimizer = Optimizer::AdamW;
  double lr = 1e-3, min_lr = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  double momentum = 0.9;
  Schedule schedule = Schedule::Constant;
  int64_t warmup = 0;
  double clip = 0; ///< global-norm bound; 0: none
  LossScaling loss_scaling = LossScaling::Default;
  double loss_scale_init = 65536;
  int64_t loss_scale_growth_interval = 2000;
  std::string init; ///< --init FILE.safetensors
  /// --init-rule, each "PATTERN=RULE" (RULE: normal:STD, uniform:BOUND,
  /// zeros, ones, const:VALUE).
  std::vector<std::string> init_rules;
  std::string resume;     ///< --resume CHECKPOINT.safetensors
  std::string checkpoint; ///< --checkpoint FILE.safetensors
  int64_t checkpoint_every = 0;
  int64_t eval_every = 0, eval_batches = 1;
  std::string log;        ///< --log FILE.jsonl (einc's lines)
  std::string plot;       ///< --plot FILE.svg
  double peak_flops = 0;  ///< for MFU (else einc calibrate's)
  bool disk_cache = true; ///< the disk cache of compiled code
  /// "cpu" (set_cpu's target), "cuda" or "cuda-emulated".
  std::string target = "cpu";
  /// Data parallel (`einc train --ranks N`, docs/training.md "Data
  /// parallel"): every rank of `comm` calls train() with the same options
  /// and takes its share of each batch (the batch dim, `dp_dim` or the
  /// leading dim of the first data parameter, split over the ranks); the
  /// gradients are averaged over the ranks, and rank 0 alone logs, plots
  /// and writes checkpoints. MPI ranks (Communicator::mpi_world()) only:
  /// the loop's state is per process, so simulated ranks are refused.
  /// Undefined (the default) or of one rank: one process.
  Communicator comm;
  /// `--dp-dim`: the batch dim the ranks split (empty: the leading dim of
  /// the first data parameter).
  std::string dp_dim;
  /// `--zero 1`: each parameter's optimizer states on one rank (ZeRO-1);
  /// 0: every rank holds them all.
  int64_t zero = 0;
  /// Called after each step (and its evaluation), before its checkpoint;
  /// returning false ends the run there as a finished one (checkpoint
  /// written, plot drawn).
  std::function<bool(const StepInfo &)> on_step;
};

/// What a run did.
struct TrainResult {
  /// The loss of each step of this run (a resumed run's from its first new
  /// step).
  std::vector<double> losses;
  /// (step, validation loss) of each evaluation.
  std::vector<std::pair<int64_t, double>> val_losses;
  /// The steps done, counted over resumes: options.steps unless on_step
  /// stopped the run.
  int64_t final_step = 0;
  bool stopped = false; ///< on_step returned false
  /// Where the last checkpoint went (options.checkpoint; empty: none).
  std::string checkpoint;
  /// The model's summary, as `einc train` prints it first.
  std::string summary;
};

/// Trains `loss` (a function of `module` whose first result is a scalar
/// float loss) as `einc train --fn loss` does with `options`; the module's
/// parsed source is used, not re-read. While it runs, a first SIGINT ends
/// it after the current step (with a checkpoint) as an error.
TrainResult train(const Module &module, const std::string &loss,
                  const TrainOptions &options);

namespace nothrow {
/// train(), or the error (bad options, data, checkpoints, a non-finite
/// loss), as einc reports it.
Result<TrainResult> train(const Module &module, const std::string &loss,
                          const TrainOptions &options);
} // namespace nothrow

inline TrainResult train(const Module &module, const std::string &loss,
                         const TrainOptions &options) {
  return nothrow::train(module, loss, options).value();
}

} // namespace ein::api
