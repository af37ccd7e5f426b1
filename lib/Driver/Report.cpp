// `einc report`: the per-op cost table and its JSON form.
#include "ein/Driver/Report.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace ein {

CostInput costInputOf(const CheckedOp &op, const CheckedFunction &fn) {
  CostInput in;
  in.kind = op.kind;
  for (unsigned id : op.operands)
    in.inputs.push_back(fn.values[id].type);
  for (unsigned id : op.results)
    in.outputs.push_back(fn.values[id].type);
  if (op.transform)
    in.transform = &*op.transform;
  if (op.einsum)
    in.einsum = &*op.einsum;
  in.reduction = op.reduction;
  if (op.kind == OpKind::Unpack)
    in.packAxesBefore = op.parsed.inputs[0].starIndex();
  return in;
}

std::vector<OpReport> reportOps(const CheckedFunction &fn,
                                const ReportOptions &options) {
  std::vector<OpReport> rows;
  for (auto &op : fn.ops) {
    if (op.kind == OpKind::Constant)
      continue;
    OpReport row;
    row.op = &op;
    row.cost = computeCost(costInputOf(op, fn), fn.ctx.env);
    row.result = fn.values[op.results[0]].type;
    DType computeType = op.kind == OpKind::Einsum
                            ? fn.values[op.operands[0]].type.dtype
                            : row.result.dtype;
    row.peak = options.peakOverride > 0
                   ? options.peakOverride
                   : (options.device ? options.device->peakFor(computeType) : 0);
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

double bandwidthOf(const ReportOptions &options) {
  if (options.bandwidthOverride > 0)
    return options.bandwidthOverride;
  return options.device ? options.device->bandwidth : 0;
}

std::string formatSeconds(double s) {
  char buf[32];
  if (s == 0)
    return "0";
  if (s < 1e-6)
    std::snprintf(buf, sizeof buf, "%.3g ns", s * 1e9);
  else if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string formatRatio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string jsonNumber(const std::optional<Int> &v) {
  return v ? toString(*v) : "null";
}

std::string jsonDouble(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Totals {
  Quantity flops, bytes;
  double seconds = 0;
  bool timeKnown = true;
};

Totals totalsOf(const std::vector<OpReport> &rows, const Bindings &env,
                double bandwidth) {
  SizeExpr flops, bytes;
  Totals t;
  for (auto &r : rows) {
    flops = flops + r.cost.flops.expr;
    bytes = bytes + r.cost.bytes().expr;
    auto f = r.cost.flops.value;
    auto b = r.cost.bytes().value;
    if (f && b)
      t.seconds += rooflineSeconds(toDouble(*f), toDouble(*b), r.peak, bandwidth);
    else
      t.timeKnown = false;
  }
  t.flops = Quantity::of(flops, env);
  t.bytes = Quantity::of(bytes, env);
  return t;
}

/// Table cells hold numbers; formulas go to the last column.
std::string numberOrDash(const Quantity &q) {
  return q.value ? toString(*q.value) : "-";
}

std::string pathStr(const std::vector<std::pair<unsigned, unsigned>> &path) {
  std::string out;
  for (auto [i, j] : path)
    out += (out.empty() ? "" : " ") + std::string("(") + std::to_string(i) +
           "," + std::to_string(j) + ")";
  return out;
}

std::vector<std::string> entryChecks(const CheckedFunction &fn) {
  std::vector<std::string> checks;
  for (auto &c : fn.ctx.constraints)
    checks.push_back(c.str());
  for (auto &[name, value] : fn.ctx.inferred)
    checks.push_back(name + " == " + toString(value));
  return checks;
}

} // namespace

void printReportTable(const CheckedModule &module, const ReportOptions &options,
                      std::ostream &os) {
  double bandwidth = bandwidthOf(options);
  if (options.device)
    os << "device: " << options.device->description << " ("
       << formatRatio(bandwidth / 1e12) << " TB/s)\n";
  for (auto &fn : module.functions) {
    if (!options.function.empty() && fn.name != options.function)
      continue;
    auto rows = reportOps(fn, options);
    os << "\nfunction " << fn.name << " (" << module.path << ":" << fn.loc.line
       << ")\n";
    std::string bound;
    for (auto &[name, v] : fn.ctx.env)
      bound += (bound.empty() ? "" : ", ") + name + "=" + toString(v);
    if (!bound.empty())
      os << "  sizes: " << bound << "\n";
    size_t patW = 7;
    for (auto &r : rows)
      patW = std::max(patW, r.op->pattern.size());
    auto cell = [&](const std::string &s, size_t w) {
      os << std::left << std::setw(static_cast<int>(w)) << s << "  ";
    };
    os << "  ";
    cell("line", 4), cell("op", 9), cell("pattern", patW), cell("FLOPs", 14),
        cell("bytes", 14), cell("FLOP/B", 6), cell("roofline", 9),
        cell("kind", 4);
    os << "FLOPs formula\n";
    for (auto &r : rows) {
      os << "  ";
      cell(std::to_string(r.op->loc.line), 4);
      cell(opKindName(r.op->kind), 9);
      cell(r.op->pattern, patW);
      cell(numberOrDash(r.cost.flops), 14);
      cell(numberOrDash(r.cost.bytes()), 14);
      auto f = r.cost.flops.value;
      auto b = r.cost.bytes().value;
      cell(f && b && *b > 0 ? formatRatio(toDouble(*f) / toDouble(*b)) : "-", 6);
      cell(f && b ? formatSeconds(rooflineSeconds(toDouble(*f), toDouble(*b),
                                                  r.peak, bandwidth))
                  : "-",
           9);
      // Data movement is a view (strides only) or a copy; arithmetic has
      // no such kind.
      bool moves = r.op->kind == OpKind::Rearrange || r.op->kind == OpKind::Repeat ||
                   r.op->kind == OpKind::Pack || r.op->kind == OpKind::Unpack ||
                   r.op->kind == OpKind::Cast;
      cell(moves ? (r.cost.view ? "view" : "copy") : "-", 4);
      os << r.cost.flops.expr.str();
      if (r.cost.naiveFlops)
        os << "  [naive " << r.cost.naiveFlops->str() << ", order "
           << pathStr(r.cost.path) << "]";
      os << "\n";
    }
    Totals t = totalsOf(rows, fn.ctx.env, bandwidth);
    os << "  ";
    cell("total", 4 + 2 + 9 + 2 + patW);
    cell(numberOrDash(t.flops), 14);
    cell(numberOrDash(t.bytes), 14);
    cell(t.flops.value && t.bytes.value && *t.bytes.value > 0
             ? formatRatio(toDouble(*t.flops.value) / toDouble(*t.bytes.value))
             : "-",
         6);
    cell(t.timeKnown ? formatSeconds(t.seconds) : "-", 9);
    cell("", 4);
    os << t.flops.expr.str() << "\n";
    if (t.flops.value && *t.flops.value >= 1000000) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.4g", toDouble(*t.flops.value));
      os << "  total FLOPs: " << buf << "\n";
    }
    for (auto &c : entryChecks(fn))
      os << "  entry check: " << c << "\n";
  }
}

void printReportJSON(const CheckedModule &module, const ReportOptions &options,
                     std::ostream &os) {
  double bandwidth = bandwidthOf(options);
  os << "{\"file\": " << jsonString(module.path);
  if (options.device)
    os << ", \"device\": " << jsonString(options.device->name);
  os << ", \"functions\": [";
  bool firstFn = true;
  for (auto &fn : module.functions) {
    if (!options.function.empty() && fn.name != options.function)
      continue;
    auto rows = reportOps(fn, options);
    os << (firstFn ? "" : ", ") << "{\"name\": " << jsonString(fn.name)
       << ", \"line\": " << fn.loc.line << ", \"ops\": [";
    firstFn = false;
    for (size_t i = 0; i < rows.size(); ++i) {
      auto &r = rows[i];
      auto f = r.cost.flops.value;
      auto b = r.cost.bytes().value;
      os << (i ? ", " : "") << "{\"line\": " << r.op->loc.line
         << ", \"col\": " << r.op->loc.col
         << ", \"op\": " << jsonString(opKindName(r.op->kind))
         << ", \"pattern\": " << jsonString(r.op->pattern)
         << ", \"shape\": " << jsonString(shapeStr(fn.ctx.expand(r.result.shape)))
         << ", \"dtype\": " << jsonString(dtypeName(r.result.dtype))
         << ", \"flops\": " << jsonNumber(f)
         << ", \"flops_expr\": " << jsonString(r.cost.flops.expr.str())
         << ", \"bytes_read\": " << jsonNumber(r.cost.bytesRead.value)
         << ", \"bytes_read_expr\": " << jsonString(r.cost.bytesRead.expr.str())
         << ", \"bytes_written\": " << jsonNumber(r.cost.bytesWritten.value)
         << ", \"bytes_written_expr\": "
         << jsonString(r.cost.bytesWritten.expr.str())
         << ", \"view\": " << (r.cost.view ? "true" : "false");
      if (f && b && *b > 0)
        os << ", \"intensity\": " << jsonDouble(toDouble(*f) / toDouble(*b));
      if (f && b)
        os << ", \"roofline_s\": "
           << jsonDouble(rooflineSeconds(toDouble(*f), toDouble(*b), r.peak,
                                         bandwidth));
      if (r.cost.naiveFlops) {
        os << ", \"naive_flops\": " << jsonNumber(r.cost.naiveFlops->value)
           << ", \"naive_flops_expr\": "
           << jsonString(r.cost.naiveFlops->expr.str()) << ", \"path\": [";
        for (size_t k = 0; k < r.cost.path.size(); ++k)
          os << (k ? ", " : "") << "[" << r.cost.path[k].first << ", "
             << r.cost.path[k].second << "]";
        os << "]";
      }
      os << "}";
    }
    Totals t = totalsOf(rows, fn.ctx.env, bandwidth);
    os << "], \"total_flops\": " << jsonNumber(t.flops.value)
       << ", \"total_flops_expr\": " << jsonString(t.flops.expr.str())
       << ", \"total_bytes\": " << jsonNumber(t.bytes.value)
       << ", \"total_bytes_expr\": " << jsonString(t.bytes.expr.str());
    if (t.timeKnown)
      os << ", \"roofline_s\": " << jsonDouble(t.seconds);
    os << ", \"entry_checks\": [";
    auto checks = entryChecks(fn);
    for (size_t k = 0; k < checks.size(); ++k)
      os << (k ? ", " : "") << jsonString(checks[k]);
    os << "]}";
  }
  os << "]}\n";
}

} // namespace ein
