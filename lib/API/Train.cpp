// The C++ API's training loop: TrainOptions turned into `einc train`'s
// options (checked by the same code, so the limits and messages are
// einc's), then ein::trainFunction over the module's parsed source.
#include "Internal.h"

#include "ein/API/Train.h"
#include "ein/Driver/Train.h"
#include "ein/Runtime/Communicator.h"

#include <fmt/format.h>

#include <mutex>
#include <sstream>

namespace ein::api {
namespace detail {
namespace {

/// Sets `flag` to `value` through einc's parser; its error names the
/// field (`TrainOptions::lr (--lr) expects ...`).
ErrorOr<void> setOption(TrainRunOptions &run, const char *field,
                        const std::string &flag, const std::string &value) {
  auto parsed = parseTrainOption(flag, value, run);
  if (parsed)
    return {};
  std::string message = parsed.error().message;
  if (message.rfind(flag, 0) == 0)
    message = fmt::format("TrainOptions::{} ({}){}", field, flag,
                          message.substr(flag.size()));
  return ein::Error::usage(std::move(message));
}

const char *optimizerName(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::SGD:
    return "sgd";
  case Optimizer::Momentum:
    return "momentum";
  case Optimizer::Adam:
    return "adam";
  case Optimizer::AdamW:
    return "adamw";
  }
  return "adamw";
}

ErrorOr<std::vector<ein::TrainData>>
dataOf(const char *field, const std::vector<api::TrainData> &data) {
  std::vector<ein::TrainData> out;
  for (const api::TrainData &d : data) {
    if (d.param.empty() || d.path.empty())
      return ein::Error::usage(fmt::format(
          "TrainOptions::{}: an entry needs a parameter name and a path (got "
          "'{}' and '{}')",
          field, d.param, d.path));
    out.push_back({d.param, d.path, d.raw_type});
  }
  return out;
}

/// `options` as einc train's options for `loss`, checked as einc checks
/// its flags.
ErrorOr<TrainRunOptions> runOptions(const std::string &loss,
                                    const TrainOptions &options) {
  TrainRunOptions run;
  run.function = loss;
  auto data = dataOf("data", options.data);
  if (!data)
    return data.error();
  run.data = std::move(*data);
  auto valData = dataOf("val_data", options.val_data);
  if (!valData)
    return valData.error();
  run.valData = std::move(*valData);
  run.params = options.params;
  auto real = [](double v) { return fmt::format("{}", v); };
  auto count = [](int64_t v) { return std::to_string(v); };
  struct Field {
    const char *field, *flag;
    std::string value;
    bool set;
  };
  const TrainOptions &o = options;
  std::string lossScale;
  switch (o.loss_scaling) {
  case LossScaling::Default:
    break;
  case LossScaling::None:
    lossScale = "none";
    break;
  case LossScaling::Static:
    lossScale = real(o.loss_scale_init);
    break;
  case LossScaling::Dynamic:
    lossScale = "dynamic:" + real(o.loss_scale_init);
    break;
  }
  // Fields at their default values are left to einc's defaults (some,
  // such as checkpoint_every = 0, mean "none" and have no flag value).
  const Field fields[] = {
      {"val_fraction", "--val-fraction", real(o.val_fraction),
       o.val_fraction != 0},
      {"steps", "--steps", count(o.steps), true},
      {"accumulate", "--accumulate", count(o.accumulate), true},
      {"order", "--order",
       o.order == SampleOrder::Random ? "random" : "sequential", true},
      {"seed", "--seed", std::to_string(o.seed), true},
      {"optimizer", "--optimizer", optimizerName(o.optimizer), true},
      {"lr", "--lr", real(o.lr), true},
      {"min_lr", "--min-lr", real(o.min_lr), true},
      {"beta1", "--beta1", real(o.beta1), true},
      {"beta2", "--beta2", real(o.beta2), true},
      {"eps", "--eps", real(o.eps), true},
      {"weight_decay", "--weight-decay", real(o.weight_decay), true},
      {"momentum", "--momentum", real(o.momentum), true},
      {"schedule", "--schedule",
       o.schedule == Schedule::Constant ? "constant" : "cosine", true},
      {"warmup", "--warmup", count(o.warmup), true},
      {"clip", "--clip", real(o.clip), o.clip != 0},
      {"loss_scaling", "--loss-scale", lossScale, !lossScale.empty()},
      {"loss_scale_growth_interval", "--loss-scale-growth-interval",
       count(o.loss_scale_growth_interval), true},
      {"checkpoint_every", "--checkpoint-every", count(o.checkpoint_every),
       o.checkpoint_every != 0},
      {"eval_every", "--eval-every", count(o.eval_every), o.eval_every != 0},
      {"eval_batches", "--eval-batches", count(o.eval_batches), true},
      {"peak_flops", "--peak-flops", real(o.peak_flops), o.peak_flops != 0},
      {"zero", "--zero", count(o.zero), o.zero != 0},
      {"dp_dim", "--dp-dim", o.dp_dim, !o.dp_dim.empty()},
  };
  for (const Field &f : fields)
    if (f.set)
      if (auto ok = setOption(run, f.field, f.flag, f.value); !ok)
        return ok.error();
  for (const std::string &rule : o.init_rules)
    if (auto ok = setOption(run, "init_rules", "--init-rule", rule); !ok)
      return ok.error();
  run.init = o.init;
  run.resume = o.resume;
  run.checkpoint = o.checkpoint;
  run.log = o.log;
  run.plot = o.plot;
  run.printEvery = 0; // the library prints nothing; on_step reports
  run.diskCache = o.disk_cache;
  if (o.target != "cpu" && o.target != "cuda" && o.target != "cuda-emulated")
    return ein::Error::usage(fmt::format("TrainOptions::target '{}': expected "
                                         "cpu, cuda or cuda-emulated",
                                         o.target));
  run.target = o.target;
  run.cpu = compileOptions();
  run.jit = JITOptions::fromEnvironment();
  if (auto ok = checkTrainOptions(run); !ok)
    return ok.error();
  return run;
}

/// The loop keeps process-wide state (the SIGINT handler, the temporary
/// allocator's peak): runs take turns.
std::mutex trainMutex;

} // namespace
} // namespace detail

namespace nothrow {

Result<TrainResult> train(const Module &module, const std::string &loss,
                          const TrainOptions &options) {
  using namespace detail;
  const ModuleState *state = module.state().get();
  if (!state)
    return usageError("train on an empty module");
  if (options.comm.defined() && isSimulated(options.comm))
    return usageError(
        "TrainOptions::comm: data-parallel training runs on MPI ranks "
        "(Communicator::mpi_world()); simulated ranks would share the "
        "loop's per-process state (its SIGINT handler and allocator)");
  auto run = runOptions(loss, options);
  if (!run)
    return toInfo(run.error());
  ModuleSource source = moduleSource(*state);
  CheckOptions check = source.options;
  for (auto &[name, value] : options.sizes) {
    if (value < 0)
      return usageError(
          fmt::format("size {}={}: a size must be >= 0", name, value));
    check.dimOverrides[name] = Int(value);
  }
  // Data parallel: this rank's share of each batch, as einc train's ranks
  // under mpirun take theirs (startRanks).
  if (options.comm.defined()) {
    ein::Communicator *comm = runtimeCommunicator(options.comm);
    if (comm->size() > 1) {
      run->comm = comm;
      if (auto split =
              splitBatchOverRanks(source.module, check, *run, comm->size());
          !split)
        return toInfo(split.error());
    }
  }
  TrainResult result;
  result.final_step = options.steps;
  run->onStep = [&](const TrainStepReport &r) {
    result.losses.push_back(r.loss);
    if (r.evaluated)
      result.val_losses.push_back({r.step, r.valLoss});
    result.final_step = r.step;
    if (!options.on_step)
      return true;
    StepInfo info;
    info.step = r.step;
    info.loss = r.loss;
    info.lr = r.lr;
    info.grad_norm = r.gradNorm;
    info.clipped = r.clipped;
    info.loss_scale = r.lossScale;
    info.skipped = r.skipped;
    info.seconds = r.seconds;
    info.tokens_per_second = r.tokensPerSecond;
    info.evaluated = r.evaluated;
    info.val_loss = r.valLoss;
    bool go = options.on_step(info);
    result.stopped = !go;
    return go;
  };
  std::ostringstream out;
  {
    std::lock_guard<std::mutex> lock(trainMutex);
    auto trained = trainFunction(source.file, source.module, check, *run, out);
    if (!trained)
      return toInfo(trained.error());
  }
  result.checkpoint = options.checkpoint;
  result.summary = out.str();
  return result;
}

} // namespace nothrow
} // namespace ein::api
