// `einc train`'s step over the state it holds: batches, gradient,
// accumulation, clipping, the update; evaluation, checkpoints, figures.
#include "TrainState.h"
#include "ShardedProgram.h"

#include "ein/Runtime/SafeTensors.h"

#include <fmt/format.h>

#include <cmath>

namespace ein {

namespace {

using runtime::HostTensor;
using runtime::StorageType;

Error usage(std::string message) { return Error::usage(std::move(message)); }

double scalarOf(const HostTensor &t) {
  return t.type == StorageType::F64 ? t.dataAs<double>()[0]
                                    : double(t.dataAs<float>()[0]);
}

} // namespace

// ---------------------------------------------------------------------------
// Where the loop's tensors live.

TrainingState::~TrainingState() {
  for (auto &[host, device] : mirrors)
    memory->release(device);
  for (auto &[type, bucket] : gradBuckets)
    memory->release(bucket);
}

void *TrainingState::on(const HostTensor &t) const {
  void *host = const_cast<uint8_t *>(t.data.data());
  if (memory->isHost())
    return host;
  auto it = mirrors.find(host);
  return it == mirrors.end() ? nullptr : it->second;
}

ErrorOr<void> TrainingState::upload(const HostTensor &t) {
  if (memory->isHost() || t.data.empty())
    return {};
  return memory->copyIn(on(t), t.data.data(), t.data.size());
}

ErrorOr<void> TrainingState::download(HostTensor &t) {
  // A tensor with no device copy is the host's own: ZeRO-1's states of
  // another rank's parameters, gathered for a checkpoint.
  void *device = memory->isHost() || t.data.empty() ? nullptr : on(t);
  if (!device)
    return {};
  return memory->copyOut(t.data.data(), device, t.data.size());
}

ErrorOr<void> TrainingState::placeOnDevice() {
  if (memory->isHost())
    return {};
  std::vector<HostTensor *> all = {&lossValue, &lossScaleValue};
  for (DataInput &d : data)
    all.push_back(&d.batch);
  for (FedInput &f : fed)
    all.push_back(&f.value);
  for (TrainedParam &p : trained) {
    for (HostTensor *t : {&p.value, &p.grad, &p.micro, &p.model})
      all.push_back(t);
    for (HostTensor &st : p.states)
      all.push_back(&st);
  }
  for (auto &[key, tensors] : spares)
    for (HostTensor &t : tensors)
      all.push_back(&t);
  for (auto &[name, t] : hypers)
    all.push_back(&t);
  for (HostTensor *t : all) {
    if (t->data.empty())
      continue; // not used (no micro-batch sum, no model copy, no scale)
    auto device = memory->allocate(t->data.size());
    if (!device)
      return device.error();
    mirrors[t->data.data()] = *device;
    EIN_TRY(upload(*t));
  }
  return {};
}

ErrorOr<void>
TrainingState::invoke(Callable &callable,
                      const std::vector<const HostTensor *> &inputs,
                      const std::vector<HostTensor *> &outputs,
                      const Bindings &dims, int64_t *indexStatus) {
  if (memory->isHost())
    return callable.call(inputs, outputs, dims, indexStatus);
  std::vector<const HostTensor *> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  std::vector<std::vector<int64_t>> strides;
  std::vector<StridedArgument> args;
  for (const HostTensor *t : all)
    strides.push_back(t->strides());
  for (size_t i = 0; i < all.size(); ++i)
    args.push_back({on(*all[i]), all[i]->shape.data(), strides[i].data(),
                    all[i]->shape.size()});
  return callable.callStrided(args.data(), args.size(), &dims, indexStatus);
}

// ---------------------------------------------------------------------------
// The step.

bool TrainingState::hasValidation() const {
  return !data.empty() && data.front().valDataset != nullptr;
}

std::vector<const HostTensor *> TrainingState::lossInputs() const {
  std::vector<const HostTensor *> inputs(paramCount, nullptr);
  for (const DataInput &d : data)
    inputs[d.param] = &d.batch;
  for (const TrainedParam &p : trained)
    inputs[p.param] = p.master ? &p.model : &p.value;
  for (const FedInput &f : fed)
    inputs[f.param] = &f.value;
  return inputs;
}

ErrorOr<void> TrainingState::fillBatches(bool validation, uint64_t firstBatch) {
  for (DataInput &d : data) {
    int64_t rows = d.batch.shape.empty() ? 1 : d.batch.shape[0];
    const runtime::Dataset &dataset = validation ? *d.valDataset : *d.dataset;
    // Data parallel: this rank's rows of the whole batch (dpRanks·rows).
    uint64_t first =
        (firstBatch * uint64_t(dpRanks) + uint64_t(dpRank)) * uint64_t(rows);
    auto filled =
        dataset.fill(d.batch, validation ? d.valBegin : d.begin,
                     validation ? d.valEnd : d.end, options.order,
                     validation ? options.seed + 1 : options.seed, first);
    if (!filled)
      return filled.error();
    EIN_TRY(upload(d.batch));
  }
  return {};
}

ErrorOr<void>
TrainingState::callLoss(const std::shared_ptr<Callable> &callable,
                        const std::vector<HostTensor *> &outputs) {
  std::vector<const HostTensor *> inputs = lossInputs();
  int64_t status = 0;
  std::vector<const HostTensor *> withScale = inputs;
  if (lossScaled && callable == gradient)
    withScale.push_back(&lossScaleValue);
  auto called = invoke(*callable, withScale, outputs, lossCall.dims, &status);
  if (called)
    return download(lossValue);
  if (status == 0)
    return called.error();
  // An id out of range (a token beyond the vocabulary): which take, which
  // id, where, found by the engine's probe on the host's copies.
  for (TrainedParam &p : trained)
    EIN_TRY(download(p.master ? p.model : p.value));
  std::vector<std::vector<int64_t>> strides;
  for (const HostTensor *t : inputs)
    strides.push_back(t->strides());
  std::vector<StridedArgument> args;
  for (size_t i = 0; i < inputs.size(); ++i)
    args.push_back({const_cast<uint8_t *>(inputs[i]->data.data()),
                    inputs[i]->shape.data(), strides[i].data(),
                    inputs[i]->shape.size()});
  return engine.explainIndexError(lossCall, function, args,
                                  std::max<int64_t>(status, 0), called.error());
}

ErrorOr<StepResult> TrainingState::trainStep() {
  StepResult result;
  result.lr = learningRate(options, step);
  int64_t micro = options.accumulate;
  double lossSum = 0;
  EIN_TRY(refreshModelCopies());
  if (sharded()) {
    EIN_TRY(gatherParameters());
    EIN_TRY(allocateGradients());
  }
  if (lossScaled) {
    lossScaleValue.dataAs<float>()[0] = static_cast<float>(lossScale);
    result.lossScale = lossScale;
    EIN_TRY(upload(lossScaleValue));
  }
  for (int64_t k = 0; k < micro; ++k) {
    if (auto filled = fillBatches(false, uint64_t(step * micro + k)); !filled)
      return filled.error();
    EIN_TRY(feed(false, uint64_t(step * micro + k)));
    std::vector<HostTensor *> outputs = {&lossValue};
    // The first micro-batch writes the gradient itself, unless it comes
    // in the model's narrower dtype; later ones are added to it.
    auto direct = [&](const TrainedParam &p) { return k == 0 && !p.master; };
    for (TrainedParam &p : trained)
      outputs.push_back(direct(p) ? &p.grad : &p.micro);
    if (auto called = meshProgram ? runOnMesh(*meshProgram, outputs)
                                  : callLoss(gradient, outputs);
        !called)
      return called.error();
    lossSum += scalarOf(lossValue);
    for (TrainedParam &p : trained)
      if (!direct(p))
        EIN_TRY(memory->accumulate(on(p.grad), p.grad.type, on(p.micro),
                                   p.micro.type, p.grad.numElements(),
                                   /*add=*/k > 0));
  }
  // Data parallel: the ranks' gradients and losses summed, then divided
  // by the ranks below. The loss is a mean over the batch's rows (as
  // accumulation assumes), so the mean of the ranks' means is the whole
  // batch's.
  if (dpRanks > 1) {
    EIN_TRY(sharded() ? reduceScatterGradients() : allReduceGradients());
    EIN_TRY(comm->allReduce(&lossSum, StorageType::F64, 1, ReduceOp::Sum));
  }
  result.loss = lossSum / double(micro * dpRanks);
  // The mean of the micro-batches' gradients: that of the whole batch;
  // with loss scaling, unscaled (torch's GradScaler.unscale_ multiplies by
  // the f32 reciprocal of the scale).
  double factor = micro * dpRanks > 1 ? 1.0 / double(micro * dpRanks) : 1.0;
  if (lossScaled)
    factor *= double(static_cast<float>(1.0 / lossScale));
  // ZeRO-2/3: each rank's shards, whose padding is zero; the norm's
  // squares are summed over the ranks.
  if (factor != 1.0)
    for (TrainedParam &p : trained) {
      HostTensor &g = stepGradient(p);
      EIN_TRY(memory->scale(on(g), g.type, g.numElements(), factor));
    }
  // Tensor parallel: each block once, summed over the mesh.
  double squares = 0;
  for (TrainedParam &p : trained) {
    if (!p.inNorm)
      continue;
    HostTensor &g = stepGradient(p);
    auto sum = memory->sumOfSquares(on(g), g.type, g.numElements());
    if (!sum)
      return sum.error();
    squares += *sum;
  }
  if (sharded() || meshWorld)
    EIN_TRY((meshWorld ? meshWorld : comm)
                ->allReduce(&squares, StorageType::F64, 1, ReduceOp::Sum));
  result.gradNorm = std::sqrt(squares);
  if (!std::isfinite(result.gradNorm) && lossScaled) {
    // GradScaler: skip the update; a dynamic scale halves.
    result.skipped = true;
    if (lossScaleDynamic)
      lossScale *= 0.5;
    growthTracker = 0;
    ++step;
    return result;
  }
  if (!std::isfinite(result.loss) || !std::isfinite(result.gradNorm))
    return result;
  // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when
  // that is below 1.
  if (options.clip > 0) {
    double coefficient = options.clip / (result.gradNorm + 1e-6);
    if (coefficient < 1) {
      result.clipped = true;
      for (TrainedParam &p : trained) {
        HostTensor &g = stepGradient(p);
        EIN_TRY(memory->scale(on(g), g.type, g.numElements(), coefficient));
      }
    }
  }
  // The update, parameter by parameter, into spare tensors that then
  // change places with the state's.
  auto setHyper = [&](const char *name, double value) {
    if (auto it = hypers.find(name); it != hypers.end())
      it->second.dataAs<double>()[0] = value;
  };
  setHyper("lr", result.lr);
  setHyper("beta1", options.beta1);
  setHyper("beta2", options.beta2);
  setHyper("eps", options.eps);
  setHyper("weight_decay", options.weightDecay);
  setHyper("mu", options.momentum);
  setHyper("step", double(updates + 1));
  for (auto &[name, t] : hypers)
    EIN_TRY(upload(t));
  // ZeRO-2/3: the update runs on this rank's shards.
  EIN_TRY(cutValueShards());
  for (TrainedParam &p : trained) {
    if (p.owner >= 0 && p.owner != dpRank)
      continue; // ZeRO-1: its owner updates it
    HostTensor &value = sharded() ? p.shard.value : p.value;
    std::vector<HostTensor> &states = sharded() ? p.shard.states : p.states;
    std::vector<const HostTensor *> inputs = {&value, &stepGradient(p)};
    for (const HostTensor &st : states)
      inputs.push_back(&st);
    for (const std::string &h : hyperNames)
      inputs.push_back(&hypers.at(h));
    auto &spare = spares.at({int(value.type), value.shape});
    std::vector<HostTensor *> outputs;
    for (HostTensor &t : spare)
      outputs.push_back(&t);
    Bindings dims = p.update.dims;
    if (auto called = invoke(*p.update.callable, inputs, outputs, dims);
        !called)
      return called.error();
    std::swap(value, spare[0]);
    for (size_t k = 0; k < states.size(); ++k)
      std::swap(states[k], spare[k + 1]);
  }
  if (zero == 1)
    EIN_TRY(broadcastParameters());
  EIN_TRY(gatherUpdatedValues());
  ++step;
  ++updates;
  if (lossScaleDynamic && ++growthTracker == options.lossScaleGrowthInterval) {
    lossScale *= 2;
    growthTracker = 0;
  }
  return result;
}

ErrorOr<void> TrainingState::feed(bool validation, uint64_t counter) {
  for (FedInput &f : fed) {
    setFed(f, validation, counter);
    EIN_TRY(upload(f.value));
  }
  return {};
}

void TrainingState::setFed(FedInput &f, bool validation, uint64_t counter) {
  HostTensor &t = f.value;
  if (!f.key) {
    double v = validation ? f.eval : f.train;
    if (t.type == StorageType::F64)
      t.dataAs<double>()[0] = v;
    else
      t.dataAs<float>()[0] = static_cast<float>(v);
    return;
  }
  // docs/training.md, "Keys": key j of micro-batch m (counted over the
  // run) is sampleHash(seed + kKeyStream + j, m); evaluation batch e uses
  // m = 2^63 + e.
  constexpr uint64_t kKeyStream = 0x6b6579; // "key"
  uint64_t bits =
      runtime::sampleHash(options.seed + kKeyStream + f.keyIndex,
                          validation ? (uint64_t(1) << 63) + counter : counter);
  if (t.type == StorageType::I64)
    t.dataAs<int64_t>()[0] = static_cast<int64_t>(bits);
  else
    t.dataAs<int32_t>()[0] = static_cast<int32_t>(uint32_t(bits));
}

ErrorOr<void> TrainingState::refreshModelCopies() {
  // ZeRO-2/3 gather the model copies from the ranks' rounded master shards
  // (gatherParameters, gatherUpdatedValues).
  if (sharded())
    return {};
  for (TrainedParam &p : trained)
    if (p.master)
      EIN_TRY(memory->narrow(on(p.model), p.model.type, on(p.value),
                             p.value.numElements()));
  return {};
}

ErrorOr<double> TrainingState::evaluate() {
  if (!forward && !meshForward)
    return Error::program("the forward was not compiled: prepareTraining "
                          "compiles it only when --eval-every is set");
  EIN_TRY(refreshModelCopies());
  EIN_TRY(gatherParameters()); // ZeRO-3's whole values, for the forward
  double sum = 0;
  for (int64_t e = 0; e < options.evalBatches; ++e) {
    if (auto filled = fillBatches(true, uint64_t(e)); !filled)
      return filled.error();
    EIN_TRY(feed(true, uint64_t(e)));
    if (auto called = meshForward ? runOnMesh(*meshForward, {&lossValue})
                                  : callLoss(forward, {&lossValue});
        !called)
      return called.error();
    sum += scalarOf(lossValue);
  }
  releaseParameters();
  if (dpRanks > 1)
    EIN_TRY(comm->allReduce(&sum, StorageType::F64, 1, ReduceOp::Sum));
  return sum / double(options.evalBatches * dpRanks);
}

ErrorOr<void> TrainingState::writeCheckpoint(const std::string &path) {
  for (TrainedParam &p : trained) {
    EIN_TRY(download(p.value));
    for (HostTensor &st : p.states)
      EIN_TRY(download(st));
  }
  std::vector<runtime::NamedTensor> tensors;
  std::vector<std::string> stateTensorNames;
  for (const TrainedParam &p : trained)
    for (const std::string &st : stateNames)
      stateTensorNames.push_back(stateTensorName(st, p.name));
  size_t k = 0;
  for (const TrainedParam &p : trained) {
    tensors.push_back({p.name, &p.value});
    for (const HostTensor &st : p.states)
      tensors.push_back({stateTensorNames[k++], &st});
  }
  std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", kCheckpointFormat},
      {"function", function},
      {"optimizer", options.optimizer},
      {"step", std::to_string(step)},
      {"updates", std::to_string(updates)},
      {"seed", std::to_string(options.seed)},
  };
  if (lossScaled) {
    metadata.push_back({"loss_scale", fmt::format("{:.17g}", lossScale)});
    metadata.push_back(
        {"loss_scale_growth_tracker", std::to_string(growthTracker)});
  }
  if (auto written = runtime::writeSafeTensors(path, tensors, metadata);
      !written)
    return usage(
        fmt::format("--checkpoint {}: {}", path, written.error().message));
  return {};
}

HeldState TrainingState::heldState() const {
  // The data each holds: ZeRO drops what a rank does not keep.
  HeldState held;
  auto add = [](int64_t &part, const std::vector<HostTensor> &tensors) {
    for (const HostTensor &t : tensors)
      part += int64_t(t.data.size());
  };
  for (const TrainedParam &p : trained) {
    // A 16-bit parameter's f32 master (whole, or ZeRO-2/3's shard) is the
    // optimizer's, as the report counts it.
    held.parameters += int64_t(p.model.data.size());
    (p.master ? held.optimizerStates : held.parameters) +=
        int64_t(p.value.data.size() + p.shard.value.data.size());
    held.gradients += int64_t(p.grad.data.size() + p.micro.data.size() +
                              p.shard.grad.data.size());
    add(held.optimizerStates, p.states);
    add(held.optimizerStates, p.shard.states);
  }
  return held;
}

int64_t TrainingState::heldBytes() const {
  HeldState held = heldState();
  int64_t bytes = int64_t(lossValue.byteSize()) + held.parameters +
                  held.gradients + held.optimizerStates;
  for (const DataInput &d : data)
    bytes += int64_t(d.batch.byteSize());
  for (const auto &[name, t] : hypers)
    bytes += int64_t(t.byteSize());
  return bytes;
}

int64_t TrainingState::spareBytes() const {
  int64_t bytes = 0;
  for (const auto &[key, tensors] : spares)
    for (const HostTensor &t : tensors)
      bytes += int64_t(t.byteSize());
  return bytes;
}

std::string TrainingState::summary() const {
  // The model's values: under a mesh, the whole parameters', not the
  // rank's blocks (meshSummary counts those).
  int64_t values = 0;
  for (const TrainedParam &p : trained) {
    int64_t n = 1;
    for (int64_t size :
         meshProgram ? meshProgram->wholeShapes[p.param] : p.value.shape)
      n *= size;
    values += n;
  }
  std::vector<std::string> dataText;
  for (const DataInput &d : data)
    dataText.push_back(fmt::format(
        "{} {} from {} ({} {}, {} {})", d.name, d.batch.describe(),
        d.dataset->path(), runtime::shapeTupleStr(d.dataset->shape()),
        d.dataset->elementName(), d.end - d.begin,
        d.dataset->isStream() ? "in the training split" : "training rows"));
  std::string schedule =
      options.schedule == LRSchedule::Constant
          ? fmt::format("lr {:g}", options.lr)
          : fmt::format("lr {:g} cosine to {:g} after {} warm-up steps",
                        options.lr, options.minLr, options.warmup);
  return fmt::format(
      "einc train: '{}' of {} on {}{}: {} trained parameters ({} values) "
      "from {}; {}, {}{}{}; data {}; steps {} to {}\n"
      "prepared in {:.3g} s: {} compiled, {} loaded from the disk cache\n",
      function, path, options.target,
      memory->isHost()
          ? ""
          : fmt::format(" (the state in the memory of {})", memory->name()),
      trained.size(), values, initFrom, options.optimizer, schedule,
      options.accumulate > 1
          ? fmt::format(", {} micro-batches per step", options.accumulate)
          : "",
      options.clip > 0 ? fmt::format(", clip {:g}", options.clip) : "",
      fmt::join(dataText, "; "), step + 1, options.steps, compileSeconds,
      compiled, loaded);
}

} // namespace ein
