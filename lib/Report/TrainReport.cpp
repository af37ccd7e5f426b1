// `einc report --train`: the resource account of a training step — FLOPs by
// phase beside the 6·N·P rule, memory by kind at its dtype, the peak of live
// tensors, and the step's ideal time on the device; with --ranks, the same
// per device for N data-parallel ranks (DataParallelReport.cpp).
#include "DataParallelReport.h"
#include "ReportFormat.h"
#include "ein/Analysis/Training.h"
#include "ein/Sema/Autodiff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

namespace ein {

using namespace report;

namespace {

/// One line of the account: a count, its formula, and what it is.
struct Line {
  std::string label;
  Quantity value;
  std::string note;
  /// On a mesh, the memory lines' sum over all devices' distinct blocks:
  /// the whole tensors, each once.
  std::optional<Quantity> global = std::nullopt;
};

struct SavedValue {
  std::string name;
  TensorType type;    // at the dtype the account holds it in
  Quantity bytes;     // on one device, on a mesh
  std::string layout; // on a mesh: "b@dp heads@tp s e"
};

/// One iteration of an unrolled loop over layers: its FLOPs forward and
/// backward (recomputation included).
struct Iteration {
  std::string loop; // `for l in range(layers)`
  unsigned line = 0;
  int64_t index = 0;
  Quantity forward, backward;
};

struct Account {
  const OptimizerSpec *optimizer = nullptr;
  std::vector<Iteration> iterations; // in the order the loops run
  std::vector<std::string> paramNames;
  std::vector<DPParam> paramsHeld; // elements (when bound) at the held dtype
  bool paramsBound = true;
  Quantity params, tokens;
  std::string tokensFrom;
  std::vector<Line> flops; // forward, backward (and parts), optimizer
  Quantity forward, backward, recompute, optimizerFlops, total;
  Quantity rule2, rule4, rule6; // 2·N·P, 4·N·P, 6·N·P
  std::vector<Line> memory;     // parameters, gradients, states, activations
  std::vector<SavedValue> saved;
  Quantity activations;
  std::optional<Int> peak;
  double forwardSeconds = 0, backwardSeconds = 0, optimizerSeconds = 0;
  double writtenSeconds = 0; // of the update the program writes
  bool writtenUpdate = false;
  bool timeKnown = true;
  double peakFlops = 0, bandwidth = 0;
  DType paramType = DType::F32;
  /// On a mesh (layout inference ran): the memory and the peak are one
  /// device's, each value counted by its local block (localElements).
  bool perDevice = false;
  std::string mesh; // "dp=2, tp=4" ("dp=?" where --mesh left it unbound)
  std::vector<std::pair<std::string, std::optional<Int>>> meshSizes;
  Quantity devices;     // the mesh's device count, dp*tp
  Quantity paramsLocal; // the parameter elements one device holds
  /// A value whose layout has not one entry per dim (an internal fault,
  /// refused by name rather than counted whole).
  std::string layoutFault;
};

bool isParam(const CheckedFunction &fn, unsigned v) {
  return std::find(fn.gradWrt.begin(), fn.gradWrt.end(), v) != fn.gradWrt.end();
}

/// The parameters and the rows of stacked ones (`w[l]` in a loop over
/// layers: the results of an unpack of a parameter, views of it): what
/// contractions with a parameter read, and never activations.
std::set<unsigned> paramsAndRows(const CheckedFunction &fn) {
  std::set<unsigned> out(fn.gradWrt.begin(), fn.gradWrt.end());
  for (const CheckedOp &op : fn.ops)
    if (op.kind == OpKind::Unpack && out.count(op.operands[0]))
      out.insert(op.results.begin(), op.results.end());
  return out;
}

std::string valueName(const CheckedFunction &fn, unsigned v) {
  const std::string &name = fn.values[v].name;
  return name.empty() ? fmt::format("%{}", v) : name;
}

Account account(const CheckedFunction &fn, const ReportOptions &options,
                const TrainOptions &train,
                const std::vector<std::string> &meshAxes) {
  Account a;
  const std::set<unsigned> paramLikeValues = paramsAndRows(fn);
  auto isParamOrRow = [&](const CheckedFunction &, unsigned v) {
    return paramLikeValues.count(v) != 0;
  };
  const Bindings &env = fn.ctx.env;
  a.optimizer = findOptimizer(train.optimizer);
  auto globalElements = [&](unsigned v) {
    return numElements(fn.ctx.expand(fn.values[v].type.shape));
  };
  // On a mesh every memory figure is one device's: a value's local block
  // under its inferred layout (a gradient has its parameter's, after the
  // dp all-reduce). FLOPs are per rank already (perRankCost).
  a.perDevice = !fn.values.empty() && fn.layouts.size() == fn.values.size();
  if (a.perDevice) {
    SizeExpr devices = SizeExpr::constant(1);
    for (const std::string &axis : meshAxes) {
      devices = devices * SizeExpr::symbol(axis);
      auto n = SizeExpr::symbol(axis).evaluate(env);
      a.meshSizes.push_back({axis, n});
      a.mesh += fmt::format("{}{}={}", a.mesh.empty() ? "" : ", ", axis,
                            n ? toString(*n) : "?");
    }
    a.devices = Quantity::of(devices, env);
  }
  auto elements = [&](unsigned v) {
    if (!a.perDevice)
      return globalElements(v);
    auto local =
        localElements(fn.ctx.expand(fn.values[v].type.shape), fn.layouts[v]);
    if (local)
      return *local;
    if (a.layoutFault.empty())
      a.layoutFault = fmt::format(
          "the layout of '{}' has {} dims for its {}-dim type; its bytes "
          "per device are not known",
          valueName(fn, v), fn.layouts[v].dims.size(),
          fn.ctx.expand(fn.values[v].type.shape).size());
    return globalElements(v);
  };
  // The dtype the account holds a value in: --param-dtype for parameters
  // and their weight gradients, --act-dtype for the other float values.
  std::map<unsigned, const CheckedOp *> producer;
  for (const CheckedOp &op : fn.ops)
    for (unsigned r : op.results)
      producer[r] = &op;
  auto typeHeld = [&](unsigned v) {
    DType t = fn.values[v].type.dtype;
    if (!isFloat(t))
      return t;
    auto it = producer.find(v);
    bool weightGrad =
        it != producer.end() && it->second->phase == GradPhase::WeightGrad &&
        it->second->gradOf >= 0 &&
        isParamOrRow(fn, static_cast<unsigned>(it->second->gradOf));
    bool paramLike = isParamOrRow(fn, v) || weightGrad;
    if (paramLike && train.paramDType)
      return *train.paramDType;
    if (!paramLike && train.actDType)
      return *train.actDType;
    return t;
  };

  SizeExpr params, paramsLocal;
  for (unsigned p : fn.gradWrt) {
    params = params + globalElements(p);
    paramsLocal = paramsLocal + elements(p);
    a.paramNames.push_back(valueName(fn, p));
    auto n = elements(p).evaluate(env);
    a.paramsBound &= n.has_value();
    a.paramsHeld.push_back({n.value_or(0), dtypeBytes(typeHeld(p))});
  }
  a.params = Quantity::of(params, env);
  a.paramsLocal = Quantity::of(paramsLocal, env);
  a.paramType = fn.gradWrt.empty() ? DType::F32 : typeHeld(fn.gradWrt.front());
  // N: --tokens, else the first input that is not a parameter: all its
  // dims but the last (b s d: b*s tokens of d features), or all the dims of
  // integer ids.
  SizeExpr tokens = SizeExpr::constant(1);
  if (train.tokens) {
    tokens = *train.tokens;
    a.tokensFrom = "--tokens";
  } else {
    for (unsigned p : fn.params) {
      if (isParam(fn, p))
        continue;
      // Features along the last dim of a float input; integer ids (an
      // embedding's) are one token each.
      Shape s = fn.ctx.expand(fn.values[p].type.shape);
      bool ids = !isFloat(fn.values[p].type.dtype);
      size_t dims = ids || s.empty() ? s.size() : s.size() - 1;
      for (size_t i = 0; i < dims; ++i)
        if (!s[i].isPack())
          tokens = tokens * s[i].size;
      a.tokensFrom = fmt::format("the dims of '{}'{} (--tokens to change)",
                                 valueName(fn, p), ids ? "" : " but its last");
      break;
    }
  }
  a.tokens = Quantity::of(tokens, env);
  a.rule2 = Quantity::of(SizeExpr::constant(2) * tokens * params, env);
  a.rule4 = Quantity::of(SizeExpr::constant(4) * tokens * params, env);
  a.rule6 = Quantity::of(SizeExpr::constant(6) * tokens * params, env);

  // FLOPs by phase and by kind of work.
  auto rows = reportOps(fn, options);
  double bandwidth = bandwidthOf(options);
  a.bandwidth = bandwidth;
  SizeExpr fwdParamMatmul, fwdOtherContraction, fwdRest;
  SizeExpr weightGrad, dataParamMatmul, dataOtherContraction, dataRest,
      recompute;
  // The forward pass is what the losses and the backward read; the other
  // forward-phase ops (a call of ein.optim's adamw after grad(), any work
  // after the gradients) are the update the program writes itself: the
  // optimizer step, counted from the program.
  std::set<unsigned> needed(fn.gradLosses.begin(), fn.gradLosses.end());
  for (const CheckedOp &op : fn.ops)
    if (op.phase != GradPhase::Forward)
      needed.insert(op.operands.begin(), op.operands.end());
  std::set<const CheckedOp *> update;
  for (size_t i = fn.ops.size(); i-- > 0;) {
    const CheckedOp &op = fn.ops[i];
    if (op.phase != GradPhase::Forward)
      continue;
    bool feeds = std::any_of(op.results.begin(), op.results.end(),
                             [&](unsigned v) { return needed.count(v); });
    if (feeds)
      needed.insert(op.operands.begin(), op.operands.end());
    else
      update.insert(&op);
  }
  // Per iteration of a loop (a call site with an iteration): the ops it
  // contains, nested calls and loops included.
  std::map<int, std::pair<SizeExpr, SizeExpr>> perIteration;
  for (const OpReport &r : rows)
    if (!update.count(r.op))
      for (int site : fn.callPath(*r.op))
        if (fn.callSites[site].iteration >= 0) {
          auto &[fwd, bwd] = perIteration[site];
          (r.op->phase == GradPhase::Forward ? fwd : bwd) =
              (r.op->phase == GradPhase::Forward ? fwd : bwd) +
              r.cost.flops.expr;
        }
  for (auto &[site, counts] : perIteration) {
    const CallSite &s = fn.callSites[site];
    a.iterations.push_back({s.callee, s.loc.line, s.iteration,
                            Quantity::of(counts.first, env),
                            Quantity::of(counts.second, env)});
  }
  SizeExpr written;
  for (const OpReport &r : rows) {
    const CheckedOp &op = *r.op;
    if (update.count(&op)) {
      written = written + r.cost.flops.expr;
      auto fv = r.cost.flops.value;
      auto bv = r.cost.bytes().value;
      if (fv && bv)
        a.writtenSeconds +=
            rooflineSeconds(toDouble(*fv), toDouble(*bv), r.peak, bandwidth);
      else
        a.timeKnown = false;
      continue;
    }
    bool contraction = op.kind == OpKind::Einsum;
    bool readsParam =
        std::any_of(op.operands.begin(), op.operands.end(),
                    [&](unsigned v) { return isParamOrRow(fn, v); });
    const SizeExpr &f = r.cost.flops.expr;
    if (op.phase == GradPhase::Forward) {
      SizeExpr &bucket = !contraction ? fwdRest
                         : readsParam ? fwdParamMatmul
                                      : fwdOtherContraction;
      bucket = bucket + f;
    } else if (op.phase == GradPhase::WeightGrad) {
      weightGrad = weightGrad + f;
    } else if (op.phase == GradPhase::Recompute) {
      recompute = recompute + f;
    } else if (contraction && readsParam) {
      dataParamMatmul = dataParamMatmul + f;
    } else if (contraction) {
      dataOtherContraction = dataOtherContraction + f;
    } else {
      dataRest = dataRest + f;
    }
    auto fv = r.cost.flops.value;
    auto bv = r.cost.bytes().value;
    if (!fv || !bv) {
      a.timeKnown = false;
      continue;
    }
    double t = rooflineSeconds(toDouble(*fv), toDouble(*bv), r.peak, bandwidth);
    (op.phase == GradPhase::Forward ? a.forwardSeconds : a.backwardSeconds) +=
        t;
  }
  SizeExpr forward = fwdParamMatmul + fwdOtherContraction + fwdRest;
  SizeExpr backward =
      weightGrad + dataParamMatmul + dataOtherContraction + dataRest;
  SizeExpr table =
      SizeExpr::constant(a.optimizer ? a.optimizer->flopsPerElement : 0) *
      paramsLocal; // one device updates its own block
  a.writtenUpdate = !update.empty();
  SizeExpr optimizer = a.writtenUpdate ? written : table;
  a.forward = Quantity::of(forward, env);
  a.backward = Quantity::of(backward, env);
  a.optimizerFlops = Quantity::of(optimizer, env);
  a.recompute = Quantity::of(recompute, env);
  a.total = Quantity::of(forward + backward + recompute + optimizer, env);
  auto q = [&](const SizeExpr &e) { return Quantity::of(e, env); };
  a.flops = {
      {"forward", a.forward, "2·N·P = " + a.rule2.str()},
      {"  contractions with a parameter", q(fwdParamMatmul),
       "the 2·N·P of the rule"},
      {"  other contractions", q(fwdOtherContraction),
       "between activations (attention's scores and weighted sum: N² terms)"},
      {"  elementwise, reductions, data movement", q(fwdRest),
       "not in the rule"},
      {"backward", a.backward, "4·N·P = " + a.rule4.str()},
      {"  weight gradients", q(weightGrad), "the rule's first 2·N·P"},
      {"  data gradients: contractions with a parameter", q(dataParamMatmul),
       "the rule's second 2·N·P, less the first layer's (its input needs "
       "no gradient)"},
      {"  data gradients: other contractions", q(dataOtherContraction),
       "attention's backward"},
      {"  data gradients: elementwise, reductions, data movement", q(dataRest),
       "derivatives of activations, norms, losses"},
      {"recomputation", a.recompute,
       "forward values computed again instead of saved (a softmax's "
       "probabilities and an attention's scores; grad(..., recompute=True))"},
      a.writtenUpdate
          ? Line{"optimizer step (as the program writes it)", a.optimizerFlops,
                 fmt::format("not in the rule; the table's {} ({} per "
                             "parameter): {}",
                             a.optimizer ? a.optimizer->name : "?",
                             a.optimizer ? a.optimizer->flopsPerElement : 0,
                             Quantity::of(table, env).str())}
          : Line{fmt::format("optimizer step ({}: {} FLOPs per parameter)",
                             a.optimizer ? a.optimizer->name : "?",
                             a.optimizer ? a.optimizer->flopsPerElement : 0),
                 a.optimizerFlops, "not in the rule"},
      {"step total", a.total, "6·N·P = " + a.rule6.str()},
  };

  // Memory at the dtypes held.
  SizeExpr paramBytes, stateBytes, globalParamBytes;
  for (unsigned p : fn.gradWrt) {
    SizeExpr width = SizeExpr::constant(dtypeBytes(typeHeld(p)));
    paramBytes = paramBytes + elements(p) * width;
    globalParamBytes = globalParamBytes + globalElements(p) * width;
  }
  unsigned states = a.optimizer ? a.optimizer->states : 0;
  stateBytes = SizeExpr::constant(states) * paramBytes;
  SizeExpr activationBytes, globalActivationBytes;
  std::set<unsigned> scalars; // numbers the backward reads: not activations
  for (const CheckedOp &op : fn.ops)
    if (op.kind == OpKind::Constant || op.kind == OpKind::Size)
      scalars.insert(op.results.begin(), op.results.end());
  for (unsigned v : savedForBackward(fn)) {
    if (isParamOrRow(fn, v) || scalars.count(v))
      continue;
    DType t = typeHeld(v);
    SizeExpr bytes = elements(v) * SizeExpr::constant(dtypeBytes(t));
    activationBytes = activationBytes + bytes;
    globalActivationBytes =
        globalActivationBytes +
        globalElements(v) * SizeExpr::constant(dtypeBytes(t));
    a.saved.push_back(
        {valueName(fn, v), TensorType{fn.values[v].type.shape, t},
         Quantity::of(bytes, env),
         a.perDevice
             ? layoutStr(fn.ctx.expand(fn.values[v].type.shape), fn.layouts[v])
             : std::string()});
  }
  a.activations = q(activationBytes);
  a.memory = {
      {"parameters", q(paramBytes), dtypeName(a.paramType)},
      {"gradients", q(paramBytes), dtypeName(a.paramType)},
      {fmt::format("optimizer states ({} per parameter)", states),
       q(stateBytes), dtypeName(a.paramType)},
      {"activations saved for the backward", q(activationBytes),
       train.actDType ? dtypeName(*train.actDType) : "as declared"},
  };
  if (a.perDevice) {
    // The whole tensors, each once: what the devices hold between them
    // when nothing is replicated (a replicated value is on every device).
    const SizeExpr globals[] = {globalParamBytes, globalParamBytes,
                                SizeExpr::constant(states) * globalParamBytes,
                                globalActivationBytes};
    for (size_t i = 0; i < a.memory.size(); ++i)
      a.memory[i].global = q(globals[i]);
  }
  // The peak over the step: the walk of live tensors in run order, with
  // the optimizer states held throughout (and the results, the loss and
  // gradients, which the walk itself holds throughout: output buffers).
  std::set<const CheckedOp *> views;
  for (const OpReport &r : rows)
    if (r.cost.view)
      views.insert(r.op);
  auto view = [&](size_t i) { return views.count(&fn.ops[i]) > 0; };
  auto bytesOf = [&](unsigned v) -> std::optional<Int> {
    auto n = elements(v).evaluate(env);
    if (!n)
      return std::nullopt;
    return *n * Int(dtypeBytes(typeHeld(v)));
  };
  a.peak = peakLiveBytes(fn, view, bytesOf);
  if (a.peak) {
    if (auto s = stateBytes.evaluate(env))
      *a.peak += *s;
    else
      a.peak.reset();
  }
  // The optimizer's time: its FLOPs, and it reads w, g and the states and
  // writes w and the states.
  a.peakFlops =
      options.peakOverride > 0
          ? options.peakOverride
          : (options.device ? options.device->peakFor(a.paramType) : 0);
  auto of = a.optimizerFlops.value;
  auto ob = (SizeExpr::constant(3 + 2 * states) * paramBytes).evaluate(env);
  if (a.writtenUpdate)
    a.optimizerSeconds = a.writtenSeconds;
  else if (of && ob)
    a.optimizerSeconds =
        rooflineSeconds(toDouble(*of), toDouble(*ob), a.peakFlops, bandwidth);
  else
    a.timeKnown = false;
  return a;
}

std::string gib(const std::optional<Int> &bytes) {
  if (!bytes)
    return "-";
  return fmt::format("{:.4g} GiB", toDouble(*bytes) / (1024.0 * 1024 * 1024));
}

/// The per-device account of `train.ranks` data-parallel ranks: the
/// parameters as `a` holds them, and the activations and compute of one
/// rank's share of the batch (the account again, with the batch dim bound
/// to batch / N).
ErrorOr<report::DataParallelAccount>
dataParallelAccount(const CheckedFunction &fn, const ReportOptions &options,
                    const TrainOptions &train, const Account &a) {
  report::DataParallelAccount dp;
  // --ranks on a mesh is refused, not composed: the data-parallel replicas
  // of a sharded program are its mesh axis (b@dp), which --mesh binds and
  // the per-device account already divides by; ZeRO's sharding of the
  // states over that axis is not modelled (docs/distributed.md §5).
  if (a.perDevice)
    return Error::usage(fmt::format(
        "--ranks: '{}' is on a mesh ({}); its data-parallel ranks are a mesh "
        "axis, bound with --mesh (the memory above is per device already); "
        "--ranks on top of a mesh (ZeRO over a mesh axis) is not modelled",
        fn.name, a.mesh));
  dp.ranks = *train.ranks;
  auto dim = batchDim(fn, train);
  if (!dim)
    return dim.error();
  dp.dpDim = *dim;
  dp.paramsBound = a.paramsBound;
  dp.model.params = a.paramsHeld;
  dp.model.states = a.optimizer ? a.optimizer->states : 0;
  dp.optimizerName = a.optimizer ? a.optimizer->name : "?";
  dp.paramType = dtypeName(a.paramType);
  dp.optimizerSeconds = a.optimizerSeconds;
  dp.device = options.device ? options.device->name : "";
  auto bound = fn.ctx.env.find(dp.dpDim);
  if (bound == fn.ctx.env.end())
    return dp; // the batch is symbolic: no per-rank activations or time
  dp.batch = bound->second;
  if (*dp.batch % dp.ranks != 0)
    return Error::usage(fmt::format(
        "--ranks {}: the batch dim {} = {} does not split into {} equal "
        "shares; the ranks may be {} (the divisors of {}, as for einc "
        "train --ranks)",
        toString(dp.ranks), dp.dpDim, toString(*dp.batch), toString(dp.ranks),
        divisors(*dp.batch), toString(*dp.batch)));
  CheckedFunction share = fn;
  share.ctx.env[dp.dpDim] = *dp.batch / dp.ranks;
  Account b = account(share, options, train, {});
  if (b.activations.value)
    dp.model.activationBytes = *b.activations.value;
  dp.activationsKnown = b.activations.value.has_value();
  dp.timeKnown = b.timeKnown && a.timeKnown;
  dp.forwardBackwardSeconds = b.forwardSeconds + b.backwardSeconds;
  return dp;
}

} // namespace

ErrorOr<std::string> trainReportTable(const CheckedModule &module,
                                      const CheckedFunction &fn,
                                      const ReportOptions &options,
                                      const TrainOptions &train) {
  Account a = account(fn, options, train, module.meshAxes);
  if (!a.layoutFault.empty())
    return Error::program(a.layoutFault);
  std::optional<report::DataParallelAccount> dp;
  if (train.ranks) {
    auto made = dataParallelAccount(fn, options, train, a);
    if (!made)
      return made.error();
    dp = std::move(*made);
  }
  std::string os;
  auto out = std::back_inserter(os);
  fmt::format_to(out, "\ntraining step of {} ({}:{})\n", fn.name, module.path,
                 fn.loc.line);
  fmt::format_to(out, "  parameters: {} (P = {}, {})\n",
                 fmt::join(a.paramNames, ", "), a.params.str(),
                 a.params.expr.str());
  if (a.perDevice)
    fmt::format_to(out,
                   "  per device (mesh {}, {} devices): P = {} of the "
                   "global P; the rules 2/4/6·N·P below use the global P, "
                   "the FLOPs and memory are one device's\n",
                   a.mesh, a.devices.str(),
                   a.paramsLocal.value
                       ? fmt::format("{} ({})", a.paramsLocal.str(),
                                     a.paramsLocal.expr.str())
                       : a.paramsLocal.expr.str());
  fmt::format_to(out, "  tokens: N = {} ({}), from {}\n", a.tokens.str(),
                 a.tokens.expr.str(), a.tokensFrom);
  if (a.optimizer)
    fmt::format_to(out, "  optimizer: {}: {}\n", a.optimizer->name,
                   a.optimizer->update);
  size_t labelW = 0;
  for (auto &l : a.flops)
    labelW = std::max(labelW, l.label.size());
  fmt::format_to(out, "  {:<{}}  {:<16}  {}\n", "FLOPs", labelW, "count",
                 "formula; the rule of thumb");
  for (auto &l : a.flops)
    fmt::format_to(out, "  {:<{}}  {:<16}  {}; {}\n", l.label, labelW,
                   l.value.str().size() > 16 ? "-" : l.value.str(),
                   l.value.expr.str(), l.note);
  // Per layer: each loop's iterations, one line when they are all alike.
  for (size_t i = 0; i < a.iterations.size();) {
    size_t end = i;
    bool alike = true;
    while (end < a.iterations.size() &&
           a.iterations[end].loop == a.iterations[i].loop &&
           a.iterations[end].line == a.iterations[i].line) {
      alike &=
          a.iterations[end].forward.str() == a.iterations[i].forward.str() &&
          a.iterations[end].backward.str() == a.iterations[i].backward.str();
      ++end;
    }
    fmt::format_to(
        out, "  per iteration of '{}' (line {}): FLOPs forward, backward\n",
        a.iterations[i].loop, a.iterations[i].line);
    if (alike) {
      fmt::format_to(out, "    each of {}: {}, {}\n", end - i,
                     a.iterations[i].forward.str(),
                     a.iterations[i].backward.str());
    } else {
      for (size_t k = i; k < end; ++k)
        fmt::format_to(out, "    {}: {}, {}\n", a.iterations[k].index,
                       a.iterations[k].forward.str(),
                       a.iterations[k].backward.str());
    }
    i = end;
  }
  auto ratio = [](const Quantity &exact, const Quantity &rule) {
    if (!exact.value || !rule.value || *rule.value == 0)
      return std::string("-");
    return formatRatio(toDouble(*exact.value) / toDouble(*rule.value));
  };
  if (a.perDevice) {
    // One device's FLOPs times the devices against the global rule: work
    // done on every device of a tp group (norms, replicated values) shows
    // as a ratio above the one-device figure.
    auto all = [&](const Quantity &exact) {
      if (!exact.value || !a.devices.value)
        return Quantity{};
      Quantity q = exact;
      q.value = *exact.value * *a.devices.value;
      return q;
    };
    fmt::format_to(out,
                   "  exact on all {} devices / rule: forward {}, backward "
                   "{}, step {} (the lines above say where they differ)\n",
                   a.devices.str(), ratio(all(a.forward), a.rule2),
                   ratio(all(a.backward), a.rule4),
                   ratio(all(a.total), a.rule6));
  } else {
    fmt::format_to(out,
                   "  exact / rule: forward {}, backward {}, step {} (the "
                   "lines above say where they differ)\n",
                   ratio(a.forward, a.rule2), ratio(a.backward, a.rule4),
                   ratio(a.total, a.rule6));
  }
  if (a.perDevice)
    fmt::format_to(out,
                   "  {:<{}}  {:<16}  dtype; formula; global (the whole "
                   "tensors, each once)\n",
                   fmt::format("memory per device (mesh {})", a.mesh), labelW,
                   "bytes");
  else
    fmt::format_to(out, "  {:<{}}  {:<16}  {}\n", "memory", labelW, "bytes",
                   "dtype; formula");
  for (auto &l : a.memory) {
    fmt::format_to(out, "  {:<{}}  {:<16}  {} ({}); {}", l.label, labelW,
                   l.value.str().size() > 16 ? "-" : l.value.str(), l.note,
                   gib(l.value.value), l.value.expr.str());
    if (l.global)
      fmt::format_to(out, "; global {} ({})", l.global->str(),
                     l.global->expr.str());
    os += "\n";
  }
  fmt::format_to(out, "  {:<{}}  {:<16}  {}\n",
                 a.perDevice ? "peak of live tensors over the step, per device"
                             : "peak of live tensors over the step",
                 labelW, a.peak ? toString(*a.peak) : "-",
                 a.peak ? gib(a.peak) + " (liveness in run order; optimizer "
                                        "states, gradients and loss held "
                                        "throughout)"
                        : std::string("bind every size to compute it"));
  for (auto &s : a.saved)
    fmt::format_to(out, "    saved: {} {}[\"{}\"] {} bytes{}\n", s.name,
                   dtypeName(s.type.dtype), shapeStr(s.type.shape),
                   s.bytes.str(),
                   s.layout.empty() ? "" : " per device, laid out " + s.layout);
  // The memory/FLOP trade of recomputation, reported both ways (a
  // softmax's probabilities are recomputed whatever recompute= says: a
  // function with recompute ops may still gain from recompute=True).
  bool recomputes = std::any_of(fn.ops.begin(), fn.ops.end(), [](auto &op) {
    return op.phase == GradPhase::Recompute;
  });
  CheckedFunction again = fn;
  size_t count = recomputeCheapValues(again);
  // On a mesh the copies recomputeCheapValues adds need layouts of their
  // own, or the account would count them (and everything) whole.
  std::optional<LayoutError> againLayouts;
  if (count > 0 && a.perDevice)
    againLayouts = inferLayouts(again, module.meshAxes);
  if (count > 0 && againLayouts) {
    fmt::format_to(out,
                   "  recompute=True would recompute {} value(s); its per-"
                   "device memory is not known: {}\n",
                   count, againLayouts->message);
  } else if (count > 0) {
    Account b = account(again, options, train, module.meshAxes);
    fmt::format_to(
        out,
        "  recompute=True would recompute {} value(s): saved "
        "activations {} -> {} bytes, peak {} -> {}, FLOPs +{}\n",
        count, a.activations.str(), b.activations.str(),
        a.peak ? toString(*a.peak) : "-", b.peak ? toString(*b.peak) : "-",
        Quantity::of(b.recompute.expr - a.recompute.expr, fn.ctx.env).str());
  } else if (!recomputes) {
    os += "  recompute=True: no saved value is cheap to recompute (an "
          "elementwise op of values saved anyway)\n";
  }
  if (options.device || options.peakOverride > 0) {
    if (a.timeKnown) {
      double step = a.forwardSeconds + a.backwardSeconds + a.optimizerSeconds;
      fmt::format_to(out,
                     "  ideal time (roofline{}): forward {}, backward {}, "
                     "optimizer {}, step {}\n",
                     options.device ? ", " + options.device->name : "",
                     formatSeconds(a.forwardSeconds),
                     formatSeconds(a.backwardSeconds),
                     formatSeconds(a.optimizerSeconds), formatSeconds(step));
      // The bound a measured step's MFU (einc run --time) can reach: the
      // exact FLOPs at the ideal time (6·N·P may overcount, and would give
      // more than 1).
      if (a.total.value && step > 0 && a.peakFlops > 0)
        fmt::format_to(
            out,
            "  MFU bound: exact step FLOPs / ideal step time / "
            "peak {} = {} (a measured step: einc run --time)\n",
            dtypeName(a.paramType),
            formatRatio(toDouble(*a.total.value) / step / a.peakFlops));
    } else {
      os += "  ideal time: bind every size to compute it\n";
    }
  }
  if (dp)
    os += report::dataParallelTable(*dp, options, train);
  return os;
}

TrainFigures trainFigures(const CheckedFunction &fn,
                          const ReportOptions &options,
                          const TrainOptions &train,
                          const std::vector<std::string> &meshAxes) {
  Account a = account(fn, options, train, meshAxes);
  TrainFigures figures;
  if (a.forward.value && a.backward.value && a.recompute.value)
    figures.forwardBackwardFlops =
        *a.forward.value + *a.backward.value + *a.recompute.value;
  figures.optimizerFlops = a.optimizerFlops.value;
  figures.peakBytes = a.peak;
  figures.forwardFlops = a.forward.value;
  figures.backwardFlops = a.backward.value;
  figures.recomputeFlops = a.recompute.value;
  figures.totalFlops = a.total.value;
  // a.memory: parameters, gradients, optimizer states, activations.
  figures.parameterBytes = a.memory[0].value.value;
  figures.gradientBytes = a.memory[1].value.value;
  figures.stateBytes = a.memory[2].value.value;
  figures.activationBytes = a.memory[3].value.value;
  if (a.timeKnown) {
    figures.forwardSeconds = a.forwardSeconds;
    figures.backwardSeconds = a.backwardSeconds;
    figures.optimizerSeconds = a.optimizerSeconds;
  }
  figures.peakFlops = a.peakFlops;
  return figures;
}

ErrorOr<std::string> trainReportJSON(const CheckedModule &module,
                                     const CheckedFunction &fn,
                                     const ReportOptions &options,
                                     const TrainOptions &train) {
  Account a = account(fn, options, train, module.meshAxes);
  if (!a.layoutFault.empty())
    return Error::program(a.layoutFault);
  // "data_parallel" only with --ranks: the one-device JSON is unchanged.
  std::string dataParallel;
  if (train.ranks) {
    auto dp = dataParallelAccount(fn, options, train, a);
    if (!dp)
      return dp.error();
    dataParallel =
        ",\"data_parallel\":" + report::dataParallelJSON(*dp, options, train);
  }
  auto quantity = [](const Quantity &v) {
    return fmt::format("{{\"value\":{},\"formula\":{}}}", jsonNumber(v.value),
                       jsonString(v.expr.str()));
  };
  auto lines = [&](const std::vector<Line> &ls) {
    std::vector<std::string> items;
    for (auto &l : ls)
      items.push_back(fmt::format(
          "{{\"what\":{},\"count\":{},\"note\":{}{}}}", jsonString(l.label),
          quantity(l.value), jsonString(l.note),
          l.global ? ",\"global\":" + quantity(*l.global) : ""));
    return fmt::format("[{}]", fmt::join(items, ","));
  };
  std::vector<std::string> names, saved;
  for (auto &n : a.paramNames)
    names.push_back(jsonString(n));
  for (auto &s : a.saved)
    saved.push_back(fmt::format(
        "{{\"name\":{},\"dtype\":\"{}\",\"shape\":{},\"bytes\":{}{}}}",
        jsonString(s.name), dtypeName(s.type.dtype),
        jsonString(shapeStr(s.type.shape)), quantity(s.bytes),
        s.layout.empty() ? "" : ",\"layout\":" + jsonString(s.layout)));
  // On a mesh: the memory, the peak and the saved bytes are one device's
  // ("per_device"), P_per_device beside the global P; absent otherwise, so
  // the one-device JSON is unchanged.
  std::string perDevice;
  if (a.perDevice) {
    std::vector<std::string> mesh; // as the collectives' "mesh": null unbound
    for (auto &[axis, n] : a.meshSizes)
      mesh.push_back(fmt::format("{}:{}", jsonString(axis), jsonNumber(n)));
    perDevice = fmt::format(
        ",\"per_device\":{{\"mesh\":{{{}}},\"devices\":{},\"P\":{}}}",
        fmt::join(mesh, ","), quantity(a.devices), quantity(a.paramsLocal));
  }
  std::vector<std::string> iterations;
  for (auto &it : a.iterations)
    iterations.push_back(
        fmt::format("{{\"loop\":{},\"line\":{},\"iteration\":{},\"forward\":{},"
                    "\"backward\":{}}}",
                    jsonString(it.loop), it.line, it.index,
                    quantity(it.forward), quantity(it.backward)));
  std::vector<std::string> sizes;
  for (auto &[name, v] : fn.ctx.env)
    sizes.push_back(fmt::format("{}:{}", jsonString(name), toString(v)));
  return fmt::format(
      "{{\"function\":{},\"file\":{},\"sizes\":{{{}}},\"parameters\":[{}],"
      "\"P\":{},\"N\":{},\"optimizer\":{{\"name\":{},\"states\":{},"
      "\"flops_per_parameter\":{}}},\"forward\":{},\"backward\":{},"
      "\"optimizer_flops\":{},\"total\":{},\"rule_2NP\":{},\"rule_4NP\":{},"
      "\"rule_6NP\":{},\"flops\":{},\"memory\":{},\"saved\":[{}],"
      "\"peak_bytes\":{},\"device\":{},\"peak_flops\":{},\"bandwidth\":{},"
      "\"seconds\":{{\"forward\":{},\"backward\":{},\"optimizer\":{}}},"
      "\"iterations\":[{}]{}{}}}",
      jsonString(fn.name), jsonString(module.path), fmt::join(sizes, ","),
      fmt::join(names, ","), quantity(a.params), quantity(a.tokens),
      jsonString(a.optimizer ? a.optimizer->name : ""),
      a.optimizer ? a.optimizer->states : 0,
      a.optimizer ? a.optimizer->flopsPerElement : 0, quantity(a.forward),
      quantity(a.backward), quantity(a.optimizerFlops), quantity(a.total),
      quantity(a.rule2), quantity(a.rule4), quantity(a.rule6), lines(a.flops),
      lines(a.memory), fmt::join(saved, ","), jsonNumber(a.peak),
      options.device ? jsonString(options.device->name) : "null",
      jsonDouble(a.peakFlops), jsonDouble(a.bandwidth),
      a.timeKnown ? jsonDouble(a.forwardSeconds) : "null",
      a.timeKnown ? jsonDouble(a.backwardSeconds) : "null",
      a.timeKnown ? jsonDouble(a.optimizerSeconds) : "null",
      fmt::join(iterations, ","), perDevice, dataParallel);
}

} // namespace ein
