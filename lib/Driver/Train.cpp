// `einc train`: the loop (docs/training.md) — compiles the loss's gradient
// and the optimizer's update once, then per step fills batches from mapped
// data, accumulates, clips, updates the state it holds, evaluates, logs and
// checkpoints.
#include "ein/Driver/Train.h"
#include "TrainState.h"

#include "ein/Driver/Calibrate.h"
#include "ein/Engine/Engine.h"
#include "ein/Report/LossPlot.h"
#include "ein/Report/Report.h"
#include "ein/Runtime/Allocator.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Runtime/OutputFiles.h"
#include "ein/Runtime/SafeTensors.h"
#include "ein/Sema/Autodiff.h"
#include "ein/Support/Hash.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"
#include "ein/Target/TargetRegistry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <unistd.h>

namespace ein {

namespace {

Error usage(std::string message) { return Error::usage(std::move(message)); }

// ---------------------------------------------------------------------------
// Interrupts: the first SIGINT asks the loop to stop after the step it is in
// (and write a checkpoint); the handler is then reset, so a second one quits.

volatile std::sig_atomic_t interrupted = 0;

extern "C" void onInterrupt(int) { interrupted = 1; }

struct InterruptGuard {
  struct sigaction previous {};
  InterruptGuard() {
    interrupted = 0;
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &previous);
  }
  ~InterruptGuard() { sigaction(SIGINT, &previous, nullptr); }
};

} // namespace

double learningRate(const TrainRunOptions &options, int64_t step) {
  switch (options.schedule) {
  case LRSchedule::Constant:
    return options.lr;
  case LRSchedule::Cosine: {
    if (step < options.warmup)
      return options.lr * double(step + 1) / double(options.warmup);
    int64_t span = std::max<int64_t>(options.steps - options.warmup, 1);
    double progress = double(step - options.warmup) / double(span);
    return options.minLr +
           (options.lr - options.minLr) * (1 + std::cos(M_PI * progress)) / 2;
  }
  }
  return options.lr;
}

ErrorOr<InitRule> parseInitRule(const std::string &text) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return usage(fmt::format("--init-rule needs PATTERN=RULE (RULE: "
                             "normal:STD, uniform:BOUND, zeros, ones, "
                             "const:VALUE), got '{}'",
                             text));
  InitRule rule;
  rule.pattern = text.substr(0, eq);
  std::string spec = text.substr(eq + 1);
  auto number = [&](const std::string &prefix) -> std::optional<double> {
    if (spec.rfind(prefix, 0) != 0)
      return std::nullopt;
    std::string digits = spec.substr(prefix.size());
    char *end = nullptr;
    double v = std::strtod(digits.c_str(), &end);
    if (digits.empty() || *end || !std::isfinite(v))
      return std::nullopt;
    return v;
  };
  if (spec == "zeros") {
    rule.kind = InitRule::Kind::Zeros;
  } else if (spec == "ones") {
    rule.kind = InitRule::Kind::Ones;
  } else if (auto v = number("normal:"); v && *v >= 0) {
    rule.kind = InitRule::Kind::Normal;
    rule.value = *v;
  } else if (auto v = number("uniform:"); v && *v >= 0) {
    rule.kind = InitRule::Kind::Uniform;
    rule.value = *v;
  } else if (auto v = number("const:")) {
    rule.kind = InitRule::Kind::Constant;
    rule.value = *v;
  } else {
    return usage(fmt::format("--init-rule {}: '{}' is not a rule (normal:STD, "
                             "uniform:BOUND with STD, BOUND >= 0, zeros, ones, "
                             "const:VALUE)",
                             text, spec));
  }
  return rule;
}

namespace {

/// `PARAM=FILE[:TYPE]`, TYPE a raw file's element type.
ErrorOr<TrainData> parseDataSpec(const std::string &flag,
                                 const std::string &text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return usage(fmt::format("{} needs PARAM=FILE (a .npy file) or "
                             "PARAM=FILE:TYPE (raw elements of TYPE: u8, u16, "
                             "u32, i32, i64, f32), got '{}'",
                             flag, text));
  TrainData data;
  data.param = text.substr(0, eq);
  data.path = text.substr(eq + 1);
  auto colon = data.path.rfind(':');
  if (colon != std::string::npos) {
    std::string type = data.path.substr(colon + 1);
    for (const char *known : {"u8", "u16", "u32", "i32", "i64", "f32"})
      if (type == known) {
        data.rawType = type;
        data.path.resize(colon);
      }
  }
  return data;
}

std::optional<int64_t> parseCount(const std::string &text, int64_t least) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || v < least)
    return std::nullopt;
  return v;
}

std::optional<double> parseReal(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(v))
    return std::nullopt;
  return v;
}

const std::vector<std::string> &trainFlags() {
  static const std::vector<std::string> flags = {
      "--data",
      "--val-data",
      "--val-fraction",
      "--params",
      "--steps",
      "--accumulate",
      "--order",
      "--seed",
      "--optimizer",
      "--lr",
      "--min-lr",
      "--beta1",
      "--beta2",
      "--eps",
      "--weight-decay",
      "--momentum",
      "--schedule",
      "--warmup",
      "--clip",
      "--init",
      "--init-rule",
      "--resume",
      "--checkpoint",
      "--checkpoint-every",
      "--eval-every",
      "--eval-batches",
      "--log",
      "--plot",
      "--print-every",
      "--peak-flops",
      "--no-cache",
      "--key",
      "--scalar",
      "--loss-scale",
      "--loss-scale-growth-interval",
      "--ranks",
      "--dp-dim",
      "--zero",
      "--simulate",
  };
  return flags;
}

} // namespace

bool isTrainOption(const std::string &flag) {
  const auto &flags = trainFlags();
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool trainOptionTakesValue(const std::string &flag) {
  return flag != "--no-cache" && flag != "--simulate";
}

ErrorOr<void> parseTrainOption(const std::string &flag,
                               const std::optional<std::string> &value,
                               TrainRunOptions &options) {
  if (flag == "--no-cache") {
    options.diskCache = false;
    return {};
  }
  if (flag == "--simulate") {
    options.simulate = true;
    return {};
  }
  if (!value || value->empty())
    return usage(fmt::format("{} needs a value", flag));
  const std::string &v = *value;
  auto count = [&](int64_t &field, int64_t least) -> ErrorOr<void> {
    auto n = parseCount(v, least);
    if (!n)
      return usage(
          fmt::format("{} expects an integer >= {}, got '{}'", flag, least, v));
    field = *n;
    return {};
  };
  auto real = [&](double &field, double least, double most,
                  bool open) -> ErrorOr<void> {
    auto x = parseReal(v);
    if (!x || *x < least || *x > most || (open && *x == least))
      return usage(fmt::format("{} expects a number in {}{}, {}], got '{}'",
                               flag, open ? "(" : "[", least, most, v));
    field = *x;
    return {};
  };
  if (flag == "--data" || flag == "--val-data") {
    auto data = parseDataSpec(flag, v);
    if (!data)
      return data.error();
    (flag == "--data" ? options.data : options.valData).push_back(*data);
    return {};
  }
  if (flag == "--key") {
    options.keys.push_back(v);
    return {};
  }
  if (flag == "--scalar") {
    auto eq = v.find('=');
    auto colon = v.find(':', eq == std::string::npos ? 0 : eq);
    std::optional<double> train, eval;
    if (eq != std::string::npos && eq > 0) {
      train = parseReal(v.substr(eq + 1, colon == std::string::npos
                                             ? std::string::npos
                                             : colon - eq - 1));
      eval =
          colon == std::string::npos ? train : parseReal(v.substr(colon + 1));
    }
    if (!train || !eval)
      return usage(fmt::format("--scalar needs PARAM=VALUE or "
                               "PARAM=TRAIN:EVAL (numbers), got '{}'",
                               v));
    options.scalars.push_back({v.substr(0, eq), *train, *eval});
    return {};
  }
  if (flag == "--params") {
    std::string name;
    for (char c : v + ",") {
      if (c != ',') {
        name += c;
        continue;
      }
      if (!name.empty())
        options.params.push_back(name);
      name.clear();
    }
    return {};
  }
  if (flag == "--val-fraction")
    return real(options.valFraction, 0, 0.9, true);
  if (flag == "--steps")
    return count(options.steps, 1);
  if (flag == "--accumulate")
    return count(options.accumulate, 1);
  if (flag == "--order") {
    if (v != "random" && v != "sequential")
      return usage("--order expects random or sequential");
    options.order = v == "random" ? runtime::SampleOrder::Random
                                  : runtime::SampleOrder::Sequential;
    return {};
  }
  if (flag == "--seed") {
    char *end = nullptr;
    errno = 0;
    unsigned long long seed = std::strtoull(v.c_str(), &end, 10);
    if (*end || errno || v[0] == '-')
      return usage(fmt::format("--seed expects an integer from 0 to 2^64-1, "
                               "got '{}'",
                               v));
    options.seed = seed;
    return {};
  }
  if (flag == "--optimizer") {
    options.optimizer = v;
    return {};
  }
  if (flag == "--lr")
    return real(options.lr, 0, 1e6, true);
  if (flag == "--min-lr")
    return real(options.minLr, 0, 1e6, false);
  if (flag == "--beta1")
    return real(options.beta1, 0, 1, false);
  if (flag == "--beta2")
    return real(options.beta2, 0, 1, false);
  if (flag == "--eps")
    return real(options.eps, 0, 1, false);
  if (flag == "--weight-decay")
    return real(options.weightDecay, 0, 1e6, false);
  if (flag == "--momentum")
    return real(options.momentum, 0, 1, false);
  if (flag == "--schedule") {
    if (v != "constant" && v != "cosine")
      return usage("--schedule expects constant or cosine");
    options.schedule =
        v == "constant" ? LRSchedule::Constant : LRSchedule::Cosine;
    return {};
  }
  if (flag == "--warmup")
    return count(options.warmup, 0);
  if (flag == "--clip")
    return real(options.clip, 0, 1e30, true);
  if (flag == "--loss-scale") {
    using Scaling = TrainRunOptions::LossScaling;
    if (v == "none") {
      options.lossScaling = Scaling::None;
      return {};
    }
    if (v == "dynamic" || v.rfind("dynamic:", 0) == 0) {
      options.lossScaling = Scaling::Dynamic;
      if (v == "dynamic")
        return {};
      auto init = parseReal(v.substr(8));
      if (!init || *init <= 0 || *init > 1e30)
        return usage(fmt::format("--loss-scale {}: the initial scale must be "
                                 "a positive number",
                                 v));
      options.lossScaleInit = *init;
      return {};
    }
    auto scale = parseReal(v);
    if (!scale || *scale <= 0 || *scale > 1e30)
      return usage(fmt::format("--loss-scale expects none, dynamic, "
                               "dynamic:INIT or a positive number, got '{}'",
                               v));
    options.lossScaling = Scaling::Static;
    options.lossScaleInit = *scale;
    return {};
  }
  if (flag == "--loss-scale-growth-interval")
    return count(options.lossScaleGrowthInterval, 1);
  if (flag == "--init") {
    options.init = v;
    return {};
  }
  if (flag == "--init-rule") {
    auto rule = parseInitRule(v);
    if (!rule)
      return rule.error();
    options.initRules.push_back(*rule);
    return {};
  }
  if (flag == "--resume") {
    options.resume = v;
    return {};
  }
  if (flag == "--checkpoint") {
    options.checkpoint = v;
    return {};
  }
  if (flag == "--checkpoint-every")
    return count(options.checkpointEvery, 1);
  if (flag == "--eval-every")
    return count(options.evalEvery, 1);
  if (flag == "--eval-batches")
    return count(options.evalBatches, 1);
  if (flag == "--log") {
    options.log = v;
    return {};
  }
  if (flag == "--plot") {
    options.plot = v;
    return {};
  }
  if (flag == "--print-every")
    return count(options.printEvery, 0);
  if (flag == "--ranks")
    return count(options.ranks, 1);
  if (flag == "--zero") {
    auto stage = parseCount(v, 0);
    if (!stage || *stage > 3)
      return usage(fmt::format("--zero expects a ZeRO stage: 0 (none), 1 (the "
                               "optimizer states sharded), 2 (and the "
                               "gradients) or 3 (and the parameters), got "
                               "'{}'",
                               v));
    options.zero = *stage;
    return {};
  }
  if (flag == "--dp-dim") {
    options.dpDim = v;
    return {};
  }
  if (flag == "--peak-flops")
    return real(options.peakFlops, 0, 1e30, true);
  return usage(fmt::format("unknown option '{}' for 'train'", flag));
}

ErrorOr<void> checkTrainOptions(const TrainRunOptions &options) {
  if (options.function.empty())
    return usage("train needs --fn NAME (the loss function)");
  if (options.steps <= 0)
    return usage("train needs --steps N");
  if (options.data.empty())
    return usage("train needs --data PARAM=FILE for each data parameter of "
                 "the loss");
  if (!options.init.empty() && !options.resume.empty())
    return usage("--init and --resume both give the starting state: give one "
                 "(a checkpoint's weights alone: --init CHECKPOINT)");
  if (options.schedule == LRSchedule::Cosine && options.warmup >= options.steps)
    return usage(fmt::format("--warmup {} leaves no step of --steps {} to "
                             "decay over",
                             options.warmup, options.steps));
  if (options.minLr > options.lr)
    return usage("--min-lr is above --lr");
  if (options.schedule == LRSchedule::Constant &&
      (options.warmup > 0 || options.minLr > 0))
    return usage("--warmup and --min-lr belong to --schedule cosine");
  for (const std::string &path :
       {options.checkpoint, options.log, options.plot})
    if (!path.empty() && (path == options.resume || path == options.init) &&
        path != options.checkpoint)
      return usage(fmt::format("{} is both read and written", path));
  if (!options.checkpoint.empty() &&
      !runtime::isSafeTensorsPath(options.checkpoint))
    return usage("--checkpoint needs a .safetensors path");
  if (options.checkpointEvery > 0 && options.checkpoint.empty())
    return usage("--checkpoint-every needs --checkpoint FILE.safetensors");
  return {};
}

ErrorOr<void> trainFunction(const SourceFile &file, const Module &module,
                            const CheckOptions &check,
                            const TrainRunOptions &options, std::ostream &out) {
  return trainRank(file, module, check, options, out, nullptr);
}

ErrorOr<void> trainRank(const SourceFile &file, const Module &module,
                        const CheckOptions &check,
                        const TrainRunOptions &allOptions,
                        std::ostream &rankOut, const MeshRank *mesh) {
  // Data or tensor parallel: every rank must run the same einc binary,
  // program, shapes and options, checked before anything is compiled;
  // rank 0 alone prints, logs, plots and writes checkpoints.
  Communicator *comm = allOptions.comm;
  bool dataParallel = comm && comm->size() > 1;
  Communicator *world = mesh ? mesh->world : comm;
  bool manyRanks = world && world->size() > 1;
  std::ostream silent(nullptr);
  if (!dataParallel && allOptions.zero > 0)
    return usage(fmt::format("--zero {} shards {} over the ranks: it needs "
                             "data parallel (--ranks N with N > 1, or mpirun)",
                             allOptions.zero,
                             zeroShardedParts(allOptions.zero)));
  TrainRunOptions rankOptions = allOptions;
  const TrainRunOptions &options = rankOptions;
  if (manyRanks) {
    std::string what = file.text;
    for (const auto &[name, size] : check.dimOverrides)
      what += fmt::format("\n--dim {}={}", name, int64_t(size));
    for (const auto &[axis, size] : check.meshSizes)
      what += fmt::format("\n--mesh {}={}", axis, int64_t(size));
    what += fmt::format("\n{} {} {} {} {} {} {} {} {} {} {} {}",
                        options.function, options.steps, options.accumulate,
                        options.seed, options.optimizer, options.lr,
                        options.clip, options.init, options.resume,
                        options.target, int(options.order), options.ranks);
    what += fmt::format("\n{} {}", options.zero, options.dpDim);
    for (const TrainData &d : options.data)
      what += "\n" + d.param + "=" + d.path;
    if (auto same = checkSameRunOnAllRanks(
            *world, fnv1a(what),
            "the program, its shapes and the training options");
        !same)
      return same.error();
    if (world->rank() != 0) {
      rankOptions.log.clear();
      rankOptions.plot.clear();
      rankOptions.checkpoint.clear();
      rankOptions.printEvery = 0;
    }
  }
  std::ostream &out = manyRanks && world->rank() != 0 ? silent : rankOut;

  // 1. The model: the loss checked, its parameters sorted into data and
  // trained, the state initialised or read back, the gradient and the
  // update compiled.
  auto prepared = prepareTraining(file, module, check, rankOptions, mesh);
  if (!prepared)
    return prepared.error();
  TrainingState &state = **prepared;
  if (dataParallel) {
    state.comm = comm;
    // A device's gradients are summed on the device (NCCL).
    if (!state.memory->isHost()) {
      auto deviceComm = state.memory->communicator(*comm);
      if (!deviceComm)
        return deviceComm.error();
      state.deviceComm = std::move(*deviceComm);
    }
    state.dpRank = comm->rank();
    state.dpRanks = comm->size();
    state.stepTokens *= comm->size();
    if (options.zero == 1)
      state.shardOptimizerStates();
    else if (options.zero >= 2)
      if (auto ok = state.shardState(int(options.zero)); !ok)
        return ok;
    if (const char *bucket = std::getenv("EIN_DP_BUCKET_BYTES")) {
      auto bytes = parseCount(bucket, 1);
      if (!bytes)
        return usage(fmt::format("EIN_DP_BUCKET_BYTES is '{}'; it must be a "
                                 "positive number of bytes",
                                 bucket));
      state.bucketBytes = size_t(*bytes);
    }
  }
  // The compilation's memory (LLVM's and MLIR's), freed by now, goes back
  // to the system: glibc's malloc would otherwise keep it for the process,
  // and a cold start's RSS would stay ~150 MiB above a warm one's
  // (examples/gpt.ein: 253 MiB, 149 MiB with the trim, 95 MiB warm).
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif

  std::optional<std::ofstream> log;
  if (!options.log.empty()) {
    log.emplace(options.log, state.step > 0 ? std::ios::app : std::ios::trunc);
    if (!*log)
      return usage(
          fmt::format("--log {}: cannot open it for writing", options.log));
  }
  double peakFlops = options.peakFlops;
  if (peakFlops <= 0 && options.target == "cpu")
    if (auto calibration = loadCalibration())
      peakFlops = calibration->peakFlops;

  out << state.summary();
  if (dataParallel)
    out << state.dataParallelSummary();
  if (mesh)
    out << state.meshSummary();
  if (peakFlops <= 0)
    out << "(no peak FLOP/s for MFU: run `einc calibrate` or pass "
           "--peak-flops)\n";
  out.flush();

  std::vector<PlotSeries> plot = {{"train", "#1f77b4", {}},
                                  {"validation", "#d62728", {}}};
  auto writePlot = [&]() -> ErrorOr<void> {
    if (options.plot.empty())
      return {};
    std::string name = state.path.substr(state.path.rfind('/') + 1);
    std::string svg = lossPlotSVG(
        plot, fmt::format("{}, '{}': {} steps of {}", name, options.function,
                          options.steps, options.optimizer));
    auto planned = runtime::planOutputs({options.plot});
    if (!planned)
      return usage(fmt::format("--plot {}", planned.error().message));
    auto written =
        runtime::writeOutputs(*planned, [&](size_t, int fd) -> ErrorOr<void> {
          return runtime::writeAll(
              fd, reinterpret_cast<const uint8_t *>(svg.data()), svg.size());
        });
    if (!written)
      return usage(fmt::format("--plot {}", written.error().message));
    return {};
  };
  std::optional<double> evaluated; // the last evaluation, for onStep
  auto evaluate = [&](int64_t step) -> ErrorOr<void> {
    auto loss = state.evaluate();
    if (!loss)
      return loss.error();
    evaluated = *loss;
    plot[1].points.push_back({double(step), *loss});
    if (options.printEvery > 0)
      out << fmt::format("eval  step {:>6}  validation loss {:.6g}\n", step,
                         *loss);
    if (log)
      *log << fmt::format("{{\"step\":{},\"val_loss\":{}}}\n", step,
                          jsonNumber(*loss))
           << std::flush;
    return {};
  };

  InterruptGuard guard;
  double flopsPerStep = state.flopsPerStep();
  auto started = std::chrono::steady_clock::now();
  while (state.step < options.steps) {
    int64_t step = state.step;
    runtime::CachingAllocator &allocator = runtime::temporaryAllocator();
    allocator.resetPeak();
    auto t0 = std::chrono::steady_clock::now();
    auto result = state.trainStep();
    if (!result)
      return result.error();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    plot[0].points.push_back({double(step + 1), result->loss});
    double tokensPerSecond = double(state.tokensPerStep()) / seconds;
    double mfu = peakFlops > 0 && flopsPerStep > 0
                     ? flopsPerStep / seconds / peakFlops
                     : NAN;
    int64_t rss = residentBytes();
    HeldState held = state.heldState(); // between steps
    // What the step held: the loop's tensors, and the compiled code's
    // temporaries at their peak (the CPU's allocator; the CUDA targets'
    // are in their own process), as the code asked for them; the blocks
    // rounded up to the allocator's size classes are logged too.
    bool cpu = options.target == "cpu";
    runtime::AllocatorStats temporaries = allocator.stats();
    double measured = cpu ? double(state.heldBytes() +
                                   int64_t(temporaries.peakRequestedBytes))
                          : -1;
    double measuredBlocks =
        cpu ? double(state.heldBytes() + int64_t(temporaries.peakLiveBytes))
            : -1;
    if (options.printEvery > 0 &&
        ((step + 1) % options.printEvery == 0 || step + 1 == options.steps))
      out << fmt::format(
          "step {:>6}/{}  loss {:.6g}  lr {:.3e}  |g| {:.4g}{}{}  {} "
          "{}/s  MFU {}  mem {} (report --train: {}; + {} update spares; "
          "RSS {})  {:.3g} s\n",
          step + 1, options.steps, result->loss, result->lr, result->gradNorm,
          result->clipped ? " (clipped)" : "",
          result->lossScale > 0
              ? fmt::format("  scale {:g}{}", result->lossScale,
                            result->skipped ? " (not finite: skipped)" : "")
              : std::string(),
          rateText(tokensPerSecond), state.tokenUnit(),
          std::isfinite(mfu) ? fmt::format("{:.3f}", mfu) : std::string("-"),
          bytesText(measured), bytesText(state.reportPeakBytes()),
          bytesText(double(state.spareBytes())), bytesText(double(rss)),
          seconds);
    if (log)
      *log << fmt::format(
                  "{{\"step\":{},\"loss\":{},\"lr\":{},\"grad_norm\":{},"
                  "\"clipped\":{},\"loss_scale\":{},\"skipped\":{},"
                  "\"seconds\":{},\"{}_per_s\":{},\"mfu\":{},"
                  "\"memory_bytes\":{},\"memory_block_bytes\":{},"
                  "\"report_peak_bytes\":{},"
                  "\"spare_bytes\":{},\"rss_bytes\":{},"
                  "\"held_parameter_bytes\":{},\"held_gradient_bytes\":{},"
                  "\"held_state_bytes\":{}}}\n",
                  step + 1, jsonNumber(result->loss), jsonNumber(result->lr),
                  jsonNumber(result->gradNorm),
                  result->clipped ? "true" : "false",
                  result->lossScale > 0 ? jsonNumber(result->lossScale)
                                        : "null",
                  result->skipped ? "true" : "false", jsonNumber(seconds),
                  state.tokenUnit(), jsonNumber(tokensPerSecond),
                  jsonNumber(mfu),
                  measured >= 0 ? jsonNumber(measured) : "null",
                  measuredBlocks >= 0 ? jsonNumber(measuredBlocks) : "null",
                  jsonNumber(state.reportPeakBytes()), state.spareBytes(), rss,
                  held.parameters, held.gradients, held.optimizerStates)
           << std::flush;
    out.flush();
    if (!result->skipped &&
        (!std::isfinite(result->loss) || !std::isfinite(result->gradNorm))) {
      (void)writePlot();
      return Error::program(fmt::format(
          "step {}: the {} is {}; training stopped before the update (the "
          "parameters are those after step {}{})",
          step + 1, std::isfinite(result->loss) ? "gradient norm" : "loss",
          std::isfinite(result->loss) ? result->gradNorm : result->loss, step,
          options.checkpoint.empty()
              ? ""
              : fmt::format("; the last checkpoint in {} is kept",
                            options.checkpoint)));
    }
    bool last = state.step == options.steps;
    evaluated.reset();
    if (options.evalEvery > 0 &&
        (state.step % options.evalEvery == 0 || last) && state.hasValidation())
      if (auto ok = evaluate(state.step); !ok)
        return ok;
    // The API's callback may end the run here, as if it were the last step.
    if (options.onStep) {
      TrainStepReport report{step + 1,
                             result->loss,
                             result->lr,
                             result->gradNorm,
                             result->clipped,
                             result->lossScale,
                             result->skipped,
                             seconds,
                             tokensPerSecond,
                             evaluated.has_value(),
                             evaluated.value_or(0)};
      if (!options.onStep(report))
        last = true;
    }
    bool stop = interrupted != 0;
    // Every rank decides alike (from the options before rank 0's alone
    // were cleared): under ZeRO they all gather the whole state.
    if (!allOptions.checkpoint.empty() &&
        (last || stop ||
         (options.checkpointEvery > 0 &&
          state.step % options.checkpointEvery == 0))) {
      if (auto ok = state.gatherForCheckpoint(); !ok)
        return ok;
      if (!options.checkpoint.empty())
        if (auto ok = state.writeCheckpoint(options.checkpoint); !ok)
          return ok;
      state.dropAfterCheckpoint();
    }
    if (stop) {
      (void)writePlot();
      return Error::usage(fmt::format(
          "interrupted after step {}{}", state.step,
          options.checkpoint.empty()
              ? " (no --checkpoint: the state is not saved)"
              : fmt::format("; the state is in {} (continue with --resume "
                            "{})",
                            options.checkpoint, options.checkpoint)));
    }
    if (last)
      break;
  }
  double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  if (options.printEvery > 0)
    out << fmt::format("done: {} steps in {:.3g} s\n", state.step, total);
  return writePlot();
}

} // namespace ein
