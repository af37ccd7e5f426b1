// `einc report` of a sharded function: the collectives layout inference put
// in, each with its group, bytes and modelled time on a fabric (nccl-tests'
// bus-bandwidth model, ein/Analysis/Collectives.h), and the communication
// beside the compute roofline.
#include "ReportFormat.h"

#include <fmt/format.h>

#include <filesystem>

namespace ein::report {

namespace {

/// One collective's figures.
struct CollectiveRow {
  const InferredCollective *c;
  Quantity ranks, bytes; // group size n, nccl-tests' S in bytes
  std::optional<double> perRank, seconds;
};

const FabricSpec &fabricOf(const ReportOptions &options) {
  return options.fabric ? *options.fabric : defaultFabric();
}

std::vector<CollectiveRow> collectiveRows(const CheckedFunction &fn,
                                          const ReportOptions &options) {
  std::vector<CollectiveRow> rows;
  for (const InferredCollective &c : fn.collectives) {
    CollectiveRow r;
    r.c = &c;
    r.ranks = Quantity::of(SizeExpr::symbol(c.axis), fn.ctx.env);
    r.bytes = Quantity::of(c.elements * SizeExpr::constant(dtypeBytes(c.dtype)),
                           fn.ctx.env);
    if (r.ranks.value && r.bytes.value) {
      double s = toDouble(*r.bytes.value);
      r.perRank = bytesPerRank(c.kind, s, *r.ranks.value);
      r.seconds =
          collectiveSeconds(c.kind, s, *r.ranks.value, fabricOf(options));
    }
    rows.push_back(r);
  }
  return rows;
}

std::string phaseOf(const CheckedFunction &fn, const InferredCollective &c) {
  if (c.afterOp < 0)
    return "forward";
  return gradPhaseName(fn.ops[c.afterOp].phase);
}

std::string afterOf(const CheckedFunction &fn, const InferredCollective &c) {
  if (c.afterOp < 0)
    return "parameter";
  const CheckedOp &op = fn.ops[c.afterOp];
  return opName(op.kind, op.fn);
}

std::string kindOf(const InferredCollective &c) {
  std::string kind = collectiveName(c.kind);
  if (c.kind == CollectiveKind::AllReduce ||
      c.kind == CollectiveKind::ReduceScatter)
    if (c.reduction != ReduceKind::Sum)
      kind += fmt::format(" ({})", c.reduction == ReduceKind::Mean
                                       ? "avg"
                                       : reduceKindName(c.reduction));
  return kind;
}

} // namespace

void appendCollectives(std::string &os, const CheckedModule &module,
                       const CheckedFunction &fn, const ReportOptions &options,
                       std::optional<double> computeSeconds) {
  auto out = std::back_inserter(os);
  const FabricSpec &fabric = fabricOf(options);
  auto rows = collectiveRows(fn, options);
  fmt::format_to(
      out,
      "  collectives on mesh {} (fabric {}: {}; latency {}, bus "
      "bandwidth {} GB/s; S is the buffer nccl-tests sizes, "
      "bytes/rank = busFactor*S)\n",
      [&] {
        std::string axes;
        for (auto &a : module.meshAxes) {
          auto n = SizeExpr::symbol(a).evaluate(fn.ctx.env);
          axes += fmt::format("{}{}={}", axes.empty() ? "" : ", ", a,
                              n ? toString(*n) : "?");
        }
        return axes;
      }(),
      fabric.name, fabric.description, formatSeconds(fabric.latency),
      formatRatio(fabric.busBandwidth / 1e9));
  if (rows.empty()) {
    os += "  none: no op needs data from another rank\n";
  } else {
    size_t kindW = 14, whyW = 3;
    for (auto &r : rows) {
      kindW = std::max(kindW, kindOf(*r.c).size());
      whyW = std::max(whyW, r.c->reason.size());
    }
    auto cell = [&](const std::string &s, size_t w) {
      fmt::format_to(out, "{:<{}}  ", s, w);
    };
    os += "  ";
    cell("line", 4), cell("after", 11), cell("phase", 11), cell("kind", kindW),
        cell("axis", 4), cell("n", 4), cell("S (bytes)", 14),
        cell("bytes/rank", 14), cell("time", 9);
    os += "why / S formula\n";
    for (auto &r : rows) {
      const InferredCollective &c = *r.c;
      os += "  ";
      cell(c.loc.file == 0
               ? std::to_string(c.loc.line)
               : fmt::format("{}:{}",
                             std::filesystem::path(module.pathOf(c.loc))
                                 .filename()
                                 .string(),
                             c.loc.line),
           4);
      cell(afterOf(fn, c), 11);
      cell(phaseOf(fn, c), 11);
      cell(kindOf(c), kindW);
      cell(c.axis, 4);
      cell(r.ranks.str(), 4);
      cell(r.bytes.value ? toString(*r.bytes.value) : "-", 14);
      cell(r.perRank ? fmt::format("{:.0f}", *r.perRank) : "-", 14);
      cell(r.seconds ? formatSeconds(*r.seconds) : "-", 9);
      fmt::format_to(out, "{}; S = {}\n", c.reason, r.bytes.expr.str());
    }
  }
  double comm = 0;
  bool known = true;
  for (auto &r : rows) {
    if (r.seconds)
      comm += *r.seconds;
    else
      known = false;
  }
  os += "  communication: ";
  os += known ? formatSeconds(comm) : "-";
  os += " per rank, exposed (no overlap with compute assumed)";
  if (computeSeconds && known)
    fmt::format_to(out, "; compute roofline {}; step {}\n",
                   formatSeconds(*computeSeconds),
                   formatSeconds(*computeSeconds + comm));
  else
    os += "\n";
}

void appendCollectivesJSON(std::string &os, const CheckedModule &module,
                           const CheckedFunction &fn,
                           const ReportOptions &options,
                           std::optional<double> computeSeconds) {
  auto out = std::back_inserter(os);
  const FabricSpec &fabric = fabricOf(options);
  os += ", \"mesh\": {";
  for (size_t i = 0; i < module.meshAxes.size(); ++i) {
    auto n = SizeExpr::symbol(module.meshAxes[i]).evaluate(fn.ctx.env);
    fmt::format_to(out, "{}{}: {}", i ? ", " : "",
                   jsonString(module.meshAxes[i]), jsonNumber(n));
  }
  fmt::format_to(out, "}}, \"fabric\": {}, \"per_rank\": true",
                 jsonString(fabric.name));
  os += ", \"collectives\": [";
  auto rows = collectiveRows(fn, options);
  double comm = 0;
  bool known = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    const CollectiveRow &r = rows[i];
    const InferredCollective &c = *r.c;
    fmt::format_to(out,
                   "{}{{\"line\": {}, \"col\": {}, \"kind\": {}, "
                   "\"reduction\": {}, \"axis\": {}, \"ranks\": {}, "
                   "\"after\": {}, \"phase\": {}, \"dtype\": {}, \"bytes\": "
                   "{}, \"bytes_expr\": {}, \"bytes_per_rank\": {}, "
                   "\"seconds\": {}, \"why\": {}}}",
                   i ? ", " : "", c.loc.line, c.loc.col,
                   jsonString(collectiveName(c.kind)),
                   jsonString(reduceKindName(c.reduction)), jsonString(c.axis),
                   jsonNumber(r.ranks.value), jsonString(afterOf(fn, c)),
                   jsonString(phaseOf(fn, c)), jsonString(dtypeName(c.dtype)),
                   jsonNumber(r.bytes.value), jsonString(r.bytes.expr.str()),
                   r.perRank ? fmt::format("{:.17g}", *r.perRank) : "null",
                   r.seconds ? jsonDouble(*r.seconds) : "null",
                   jsonString(c.reason));
    if (r.seconds)
      comm += *r.seconds;
    else
      known = false;
  }
  os += "]";
  if (known) {
    fmt::format_to(out, ", \"communication_s\": {}", jsonDouble(comm));
    if (computeSeconds)
      fmt::format_to(out, ", \"step_s\": {}",
                     jsonDouble(*computeSeconds + comm));
  }
}

} // namespace ein::report
