// `einc report --train --ranks N`: the memory of one device and the
// collectives of a step under DDP and ZeRO-1/2/3, with the step's exposed
// communication against its compute, as text and JSON.
#include "DataParallelReport.h"
#include "ReportFormat.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace ein::report {

namespace {

/// One strategy's figures, computed once for the text and the JSON.
struct StrategyRow {
  DPStrategy strategy;
  RankMemory memory;
  std::string formula; // "4Ψ + 12Ψ/N"; empty when the dtypes differ
  std::vector<StepCollective> collectives;
  double commSeconds = 0, commBytesPerRank = 0;
  double computeSeconds = 0; // one rank's forward, backward and update
};

const FabricSpec &fabricOf(const ReportOptions &options) {
  return options.fabric ? *options.fabric : defaultFabric();
}

Int bucketCap(const TrainOptions &train) {
  // PyTorch's bucket_cap_mb counts MiB.
  return Int(train.bucketMB.value_or(25) * 1024 * 1024);
}

/// The bytes per parameter element a strategy replicates and shards, when
/// every parameter has the same dtype: {2p + K, 0} for DDP, {2p, K} for
/// ZeRO-1, {p, p + K} for ZeRO-2, {0, 2p + K} for ZeRO-3.
std::optional<std::pair<Int, Int>> coefficients(const DataParallelModel &m,
                                                DPStrategy strategy) {
  if (m.params.empty())
    return std::nullopt;
  const DPParam &first = m.params.front();
  for (const DPParam &p : m.params)
    if (p.bytes != first.bytes)
      return std::nullopt;
  Int p = first.bytes;
  Int k = Int(m.states + (hasMaster(first) ? 1 : 0)) * stateBytes(first);
  switch (strategy) {
  case DPStrategy::DDP:
    return std::pair{2 * p + k, Int(0)};
  case DPStrategy::Zero1:
    return std::pair{2 * p, k};
  case DPStrategy::Zero2:
    return std::pair{p, p + k};
  case DPStrategy::Zero3:
    return std::pair{Int(0), 2 * p + k};
  }
  return std::nullopt;
}

std::string formulaOf(const DataParallelModel &m, DPStrategy strategy) {
  auto c = coefficients(m, strategy);
  if (!c)
    return "";
  std::vector<std::string> terms;
  if (c->first > 0)
    terms.push_back(toString(c->first) + "Ψ");
  if (c->second > 0)
    terms.push_back(toString(c->second) + "Ψ/N");
  if (terms.empty())
    terms.push_back("0");
  return fmt::format("{}", fmt::join(terms, " + "));
}

std::vector<StrategyRow> rows(const DataParallelAccount &dp,
                              const ReportOptions &options,
                              const TrainOptions &train) {
  Int psi = 0, shard = 0;
  for (const DPParam &p : dp.model.params) {
    psi += p.elements;
    shard += shardElements(p.elements, dp.ranks);
  }
  std::vector<StrategyRow> out;
  for (DPStrategy s : allStrategies()) {
    StrategyRow r{s, rankMemory(dp.model, s, dp.ranks), formulaOf(dp.model, s)};
    r.collectives = stepCollectives(dp.model, s, dp.ranks, bucketCap(train),
                                    fabricOf(options));
    for (const StepCollective &c : r.collectives) {
      r.commSeconds += c.seconds;
      r.commBytesPerRank += c.bytesPerRank;
    }
    // Under ZeRO each rank updates its shard of the parameters only.
    double share = s == DPStrategy::DDP || psi == 0
                       ? 1.0
                       : toDouble(shard) / toDouble(psi);
    r.computeSeconds = dp.forwardBackwardSeconds + dp.optimizerSeconds * share;
    out.push_back(std::move(r));
  }
  return out;
}

std::string gibOf(Int bytes) {
  return fmt::format("{:.4g} GiB", toDouble(bytes) / (1024.0 * 1024 * 1024));
}

} // namespace

std::string dataParallelTable(const DataParallelAccount &dp,
                              const ReportOptions &options,
                              const TrainOptions &train) {
  std::string os;
  auto out = std::back_inserter(os);
  std::string n = toString(dp.ranks);
  fmt::format_to(out, "\ndata parallel over {} ranks", n);
  if (dp.batch)
    fmt::format_to(out, ": the batch dim {} = {} split into {} rows per rank",
                   dp.dpDim, toString(*dp.batch),
                   toString(*dp.batch / dp.ranks));
  else
    fmt::format_to(out, ": the batch dim {} (unbound: bind it to split it)",
                   dp.dpDim);
  fmt::format_to(out, " ({})\n",
                 train.dpDim.empty()
                     ? "the named dim every input leads with; --dp-dim to "
                       "name another"
                     : "--dp-dim");
  if (!dp.paramsBound || dp.model.params.empty()) {
    os += "  per-device memory: bind every parameter's size to compute it\n";
    return os;
  }
  Int psi = 0;
  for (const DPParam &p : dp.model.params)
    psi += p.elements;
  const DPParam &first = dp.model.params.front();
  bool mixed = !coefficients(dp.model, DPStrategy::DDP);
  // What a parameter element costs, said once above the table.
  std::string held, states;
  if (mixed) {
    held = "parameters and gradients at their dtypes";
    states = fmt::format(
        "{}'s {} state(s) per parameter, each at f32 with an f32 master copy "
        "for a parameter narrower than 4 bytes, else at its dtype",
        dp.optimizerName, dp.model.states);
  } else {
    held = fmt::format("parameters and gradients {}, {} bytes each",
                       dp.paramType, first.bytes);
    Int k =
        Int(dp.model.states + (hasMaster(first) ? 1 : 0)) * stateBytes(first);
    states =
        k == 0
            ? fmt::format("none ({} keeps no state)", dp.optimizerName)
            : fmt::format("{}'s {} state(s) of {} bytes{}: {} bytes "
                          "per parameter",
                          dp.optimizerName, dp.model.states, stateBytes(first),
                          hasMaster(first) ? " and an f32 master copy of the " +
                                                 dp.paramType + " parameters"
                                           : "",
                          toString(k));
  }
  fmt::format_to(
      out,
      "  memory per device, bytes: Ψ = {} parameters; {}\n"
      "    optimizer states: {}; activations: {}\n",
      toString(psi), held, states,
      dp.activationsKnown
          ? fmt::format("saved for the backward over {}/{} rows", dp.dpDim, n)
          : std::string("unknown until the batch is bound"));
  std::vector<StrategyRow> table = rows(dp, options, train);
  std::vector<std::vector<std::string>> cells = {
      {"", "strategy", "parameters", "gradients", "optimizer states",
       "activations", "total", "formula"}};
  for (const StrategyRow &r : table) {
    bool marked =
        train.zero && static_cast<unsigned>(r.strategy) == *train.zero;
    const RankMemory &m = r.memory;
    cells.push_back({marked ? ">" : "", strategyName(r.strategy),
                     toString(m.parameters), toString(m.gradients),
                     toString(m.optimizerStates),
                     dp.activationsKnown ? toString(m.activations) : "-",
                     dp.activationsKnown
                         ? toString(m.total()) + " (" + gibOf(m.total()) + ")"
                         : "-",
                     r.formula.empty() ? "-" : r.formula + " + activations"});
  }
  std::vector<size_t> widths(cells.front().size(), 0);
  for (auto &row : cells)
    for (size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  for (auto &row : cells) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c)
      line += fmt::format(" {:<{}}", row[c], widths[c]);
    os += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  if (train.zero)
    fmt::format_to(out, "  (> marks --zero {})\n", *train.zero);
  std::vector<std::string> padded;
  for (const StrategyRow &r : table)
    if (r.memory.padding > 0)
      padded.push_back(fmt::format("{} {}", strategyName(r.strategy),
                                   toString(r.memory.padding)));
  fmt::format_to(out,
                 "  sharded parts: each parameter padded to a multiple of "
                 "{} elements, every rank holding ceil(elements/{}) of it "
                 "(as DeepSpeed flattens and pads); padding over all ranks: "
                 "{}\n",
                 n, n,
                 padded.empty()
                     ? std::string("none (bytes)")
                     : fmt::format("{} (bytes)", fmt::join(padded, ", ")));

  const FabricSpec &fabric = fabricOf(options);
  // A measured fabric (`host`) has a latency and busbw per collective and
  // size: its one (α, B) would misstate the model the times come from.
  std::string figures =
      fabric.measured.empty()
          ? fmt::format("α = {}, busbw {:.4g} GB/s",
                        formatSeconds(fabric.latency),
                        fabric.busBandwidth / 1e9)
          : std::string("α and busbw measured per collective and size");
  fmt::format_to(out,
                 "  communication per step on {} ({}): {}\n"
                 "    nccl-tests' model per call: all-reduce α + "
                 "2(n-1)/n·S/B, all-gather and reduce-scatter α + "
                 "(n-1)/n·S/B; gradients at the parameters' dtype ({}); "
                 "buckets of {} MiB (--bucket-mb)\n",
                 fabric.name, fabric.description, figures,
                 mixed ? "mixed" : dp.paramType,
                 fmt::format("{:g}", train.bucketMB.value_or(25)));
  for (const StrategyRow &r : table)
    for (size_t i = 0; i < r.collectives.size(); ++i) {
      const StepCollective &c = r.collectives[i];
      fmt::format_to(out,
                     "    {:<7} {} of {}: {} call(s), S = {} bytes, {:.0f} "
                     "bytes sent per rank, {}\n",
                     i == 0 ? strategyName(r.strategy) : "",
                     collectiveName(c.kind), c.what, toString(c.calls),
                     toString(c.bytes), c.bytesPerRank,
                     formatSeconds(c.seconds));
    }
  if (!dp.timeKnown || !dp.batch) {
    os += "  step time per rank: bind every size to compare communication "
          "with compute\n";
    return os;
  }
  fmt::format_to(
      out,
      "  step time per rank (compute: the roofline on {} of one rank's "
      "forward and backward over {}/{} rows and of its update, of 1/N of "
      "the parameters under ZeRO):\n"
      "    no overlap: compute + communication, all of it exposed; full "
      "overlap: max(compute, communication), the bound overlap can reach, "
      "exposing only what exceeds compute\n",
      dp.device.empty() ? std::string("the device") : dp.device, dp.dpDim, n);
  std::vector<std::vector<std::string>> steps = {
      {"strategy", "compute", "communication", "step (no overlap)",
       "step (full overlap)", "exposed (full overlap)"}};
  for (const StrategyRow &r : table) {
    double full = std::max(r.computeSeconds, r.commSeconds);
    steps.push_back({strategyName(r.strategy), formatSeconds(r.computeSeconds),
                     formatSeconds(r.commSeconds),
                     formatSeconds(r.computeSeconds + r.commSeconds),
                     formatSeconds(full),
                     formatSeconds(full - r.computeSeconds)});
  }
  std::vector<size_t> stepWidths(steps.front().size(), 0);
  for (auto &row : steps)
    for (size_t c = 0; c < row.size(); ++c)
      stepWidths[c] = std::max(stepWidths[c], row[c].size());
  for (auto &row : steps) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c)
      line += fmt::format("  {:<{}}", row[c], stepWidths[c]);
    os += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  return os;
}

std::string dataParallelJSON(const DataParallelAccount &dp,
                             const ReportOptions &options,
                             const TrainOptions &train) {
  const FabricSpec &fabric = fabricOf(options);
  // The bytes a rank sends, rounded to a whole byte (jsonDouble keeps 6
  // digits, too few for gigabytes).
  auto wholeBytes = [](double v) { return fmt::format("{:.0f}", v); };
  std::vector<std::string> strategies;
  bool timed = dp.timeKnown && dp.batch && dp.paramsBound;
  if (dp.paramsBound)
    for (const StrategyRow &r : rows(dp, options, train)) {
      std::vector<std::string> collectives;
      for (const StepCollective &c : r.collectives)
        collectives.push_back(fmt::format(
            "{{\"kind\":\"{}\",\"what\":{},\"calls\":{},\"bytes\":{},"
            "\"bytes_per_rank\":{},\"seconds\":{}}}",
            collectiveName(c.kind), jsonString(c.what), toString(c.calls),
            toString(c.bytes), wholeBytes(c.bytesPerRank),
            jsonDouble(c.seconds)));
      const RankMemory &m = r.memory;
      auto seconds = [&](double s) { return timed ? jsonDouble(s) : "null"; };
      double full = std::max(r.computeSeconds, r.commSeconds);
      strategies.push_back(fmt::format(
          "{{\"name\":\"{}\",\"memory\":{{\"parameters\":{},\"gradients\":{},"
          "\"optimizer_states\":{},\"activations\":{},\"total\":{},"
          "\"padding_all_ranks\":{}}},\"formula\":{},\"collectives\":[{}],"
          "\"communication_seconds\":{},\"bytes_per_rank\":{},"
          "\"compute_seconds\":{},\"step_seconds_no_overlap\":{},"
          "\"step_seconds_full_overlap\":{},"
          "\"exposed_seconds_full_overlap\":{}}}",
          strategyName(r.strategy), toString(m.parameters),
          toString(m.gradients), toString(m.optimizerStates),
          dp.activationsKnown ? toString(m.activations) : "null",
          dp.activationsKnown ? toString(m.total()) : "null",
          toString(m.padding),
          r.formula.empty() ? "null" : jsonString(r.formula),
          fmt::join(collectives, ","), jsonDouble(r.commSeconds),
          wholeBytes(r.commBytesPerRank), seconds(r.computeSeconds),
          seconds(r.computeSeconds + r.commSeconds), seconds(full),
          seconds(full - r.computeSeconds)));
    }
  return fmt::format(
      "{{\"ranks\":{},\"dp_dim\":{},\"batch\":{},\"batch_per_rank\":{},"
      "\"fabric\":{{\"name\":{},\"latency\":{},\"bus_bandwidth\":{}}},"
      "\"bucket_bytes\":{},\"zero\":{},\"strategies\":[{}]}}",
      toString(dp.ranks), jsonString(dp.dpDim),
      dp.batch ? toString(*dp.batch) : "null",
      dp.batch ? toString(*dp.batch / dp.ranks) : "null",
      jsonString(fabric.name), jsonDouble(fabric.latency),
      jsonDouble(fabric.busBandwidth), toString(bucketCap(train)),
      train.zero ? std::to_string(*train.zero) : "null",
      fmt::join(strategies, ","));
}

// Which dim the data-parallel ranks split, and the rank counts a refused
// --ranks suggests (used by TrainReport.cpp's data-parallel account).
ErrorOr<std::string> batchDim(const CheckedFunction &fn,
                              const TrainOptions &train) {
  std::vector<std::string> leading; // "'x' leads with B"
  std::set<std::string> symbols, dims;
  bool unnamed = false;
  for (unsigned p : fn.params) {
    if (std::find(fn.gradWrt.begin(), fn.gradWrt.end(), p) != fn.gradWrt.end())
      continue;
    Shape s = fn.ctx.expand(fn.values[p].type.shape);
    if (s.empty())
      continue; // a scalar: a learning rate, a step count
    for (const Dim &d : s)
      if (!d.isPack())
        if (auto name = d.size.asSymbol())
          dims.insert(*name);
    auto name = s[0].isPack() ? std::nullopt : s[0].size.asSymbol();
    leading.push_back(fmt::format(
        "'{}' leads with {}",
        (fn.values[p].name.empty() ? fmt::format("%{}", p) : fn.values[p].name),
        s[0].str()));
    if (name)
      symbols.insert(*name);
    else
      unnamed = true;
  }
  if (!train.dpDim.empty()) {
    if (!dims.count(train.dpDim))
      return Error::usage(fmt::format(
          "--dp-dim: '{}' is not a named dim of an input of '{}' (the inputs "
          "that are not parameters: {})",
          train.dpDim, fn.name,
          leading.empty() ? std::string("none")
                          : fmt::format("{}", fmt::join(leading, ", "))));
    return train.dpDim;
  }
  if (symbols.size() == 1 && !unnamed)
    return *symbols.begin();
  return Error::usage(fmt::format(
      "--ranks: which dim of '{}' is the batch the ranks split is ambiguous "
      "({}); name it with --dp-dim",
      fn.name,
      leading.empty() ? std::string("no input but the parameters has a dim")
                      : fmt::format("{}", fmt::join(leading, ", "))));
}

std::string divisors(Int n) {
  std::string out;
  Int d = 1;
  for (; d <= n && d <= 100000 && out.size() < 200; ++d)
    if (n % d == 0)
      out += (out.empty() ? "" : ", ") + toString(d);
  return d <= n ? out + ", ..." : out;
}

} // namespace ein::report
