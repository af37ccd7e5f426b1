// `einc report`: the per-op cost table and its JSON form.
#include "ein/Report/Report.h"
#include "ReportFormat.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>

namespace ein {

std::vector<OpReport> reportOps(const CheckedFunction &fn,
                                const ReportOptions &options) {
  std::vector<OpReport> rows;
  for (auto &op : fn.ops) {
    if (op.kind == OpKind::Constant)
      continue;
    OpReport row;
    row.op = &op;
    row.cost = perRankCost(op, fn);
    row.result = fn.values[op.results[0]].type;
    DType computeType = op.kind == OpKind::Einsum
                            ? fn.values[op.operands[0]].type.dtype
                            : row.result.dtype;
    row.peak =
        options.peakOverride > 0
            ? options.peakOverride
            : (options.device ? options.device->peakFor(computeType) : 0);
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace report {

double bandwidthOf(const ReportOptions &options) {
  if (options.bandwidthOverride > 0)
    return options.bandwidthOverride;
  return options.device ? options.device->bandwidth : 0;
}

std::string formatSeconds(double s) {
  if (s == 0)
    return "0";
  if (s < 1e-6)
    return fmt::format("{:.3g} ns", s * 1e9);
  if (s < 1e-3)
    return fmt::format("{:.3g} us", s * 1e6);
  if (s < 1)
    return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

std::string formatRatio(double v) { return fmt::format("{:.3g}", v); }

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
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
  return fmt::format("{:.6g}", v);
}

} // namespace report

using namespace report;

namespace {

struct Totals {
  Quantity flops, bytes;
  double seconds = 0;
  bool timeKnown = true;
};

Totals totalsOf(const std::vector<const OpReport *> &rows, const Bindings &env,
                double bandwidth) {
  SizeExpr flops, bytes;
  Totals t;
  for (const OpReport *row : rows) {
    const OpReport &r = *row;
    flops = flops + r.cost.flops.expr;
    bytes = bytes + r.cost.bytes().expr;
    auto f = r.cost.flops.value;
    auto b = r.cost.bytes().value;
    if (f && b)
      t.seconds +=
          rooflineSeconds(toDouble(*f), toDouble(*b), r.peak, bandwidth);
    else
      t.timeKnown = false;
  }
  t.flops = Quantity::of(flops, env);
  t.bytes = Quantity::of(bytes, env);
  return t;
}

Totals totalsOf(const std::vector<OpReport> &rows, const Bindings &env,
                double bandwidth) {
  std::vector<const OpReport *> all;
  for (auto &r : rows)
    all.push_back(&r);
  return totalsOf(all, env, bandwidth);
}

/// How the ops of a function's calls group: per call site, the rows of the
/// ops inlined from it (nested calls included).
/// The backward ops of a call (grad()) group apart from its forward ones.
std::vector<std::vector<const OpReport *>>
rowsByCallSite(const CheckedFunction &fn, const std::vector<OpReport> &rows,
               bool backward) {
  std::vector<std::vector<const OpReport *>> bySite(fn.callSites.size());
  for (auto &r : rows)
    if ((r.op->phase != GradPhase::Forward) == backward)
      for (int site = r.op->callSite; site >= 0;
           site = fn.callSites[site].parent)
        bySite[site].push_back(&r);
  return bySite;
}

/// The op column: a backward op says which gradient it computes.
std::string opLabel(const CheckedOp &op) {
  const char *name = opName(op.kind, op.fn);
  switch (op.phase) {
  case GradPhase::Forward:
    return name;
  case GradPhase::DataGrad:
    return fmt::format("dgrad {}", name);
  case GradPhase::WeightGrad:
    return fmt::format("wgrad {}", name);
  case GradPhase::Recompute:
    return fmt::format("recompute {}", name);
  }
  return name;
}

/// What a call's row names: the callee, or for an iteration of an unrolled
/// loop the loop with its variable's value (`for l=2 in range(layers)`).
std::string siteLabel(const CallSite &site) {
  if (site.iteration < 0)
    return site.callee;
  size_t in = site.callee.find(" in ");
  if (in == std::string::npos)
    return fmt::format("{} [{}]", site.callee, site.iteration);
  return fmt::format("{}={}{}", site.callee.substr(0, in), site.iteration,
                     site.callee.substr(in));
}

/// Per function called (first call first), the call sites that call it.
std::vector<std::pair<std::string, std::vector<int>>>
sitesByCallee(const CheckedFunction &fn) {
  std::vector<std::pair<std::string, std::vector<int>>> byCallee;
  for (size_t i = 0; i < fn.callSites.size(); ++i) {
    auto it = std::find_if(byCallee.begin(), byCallee.end(), [&](auto &entry) {
      return entry.first == fn.callSites[i].callee;
    });
    if (it == byCallee.end())
      it = byCallee.insert(byCallee.end(), {fn.callSites[i].callee, {}});
    it->second.push_back(static_cast<int>(i));
  }
  return byCallee;
}

/// Table cells hold numbers; formulas go to the last column.
std::string numberOrDash(const Quantity &q) {
  return q.value ? toString(*q.value) : "-";
}

/// "(1,2) (0,1)"; a one-operand step is "(0)".
std::string pathStr(const std::vector<ContractionStep> &path) {
  std::string out;
  for (auto &step : path)
    out += fmt::format("{}({})", out.empty() ? "" : " ", fmt::join(step, ","));
  return out;
}

/// One line of the table: an op, or a call with the callee's totals.
struct TableRow {
  std::string line, op, pattern;
  Quantity flops, bytes;
  std::string roofline, kind, target, formula;
};

/// The widest line of the table the report aims for.
constexpr size_t kMaxLineWidth = 160;

/// Appends `formula`, the last cell of a line whose first `used` columns
/// are written, and the line's end. A formula that would pass
/// kMaxLineWidth is broken before its terms (" + ", " - ", "  [naive"):
/// continuation lines are indented to its column, or by 8 where that
/// leaves less than 40 columns; when not even its first term fits, the
/// whole formula goes on the next lines.
void appendFormula(std::string &os, size_t used, const std::string &formula) {
  if (used + formula.size() <= kMaxLineWidth) {
    os += formula + "\n";
    return;
  }
  size_t indent =
      kMaxLineWidth - std::min(used, kMaxLineWidth) >= 40 ? used : 8;
  // The terms, each but the first starting with its separator.
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t i = 1; i + 2 < formula.size(); ++i) {
    bool term = formula[i] == ' ' && formula[i + 2] == ' ' &&
                (formula[i + 1] == '+' || formula[i + 1] == '-');
    bool naive = formula.compare(i, 3, "  [") == 0;
    if (term || naive) {
      terms.push_back(formula.substr(start, i - start));
      start = i + (naive ? 2 : 1);
      i += 2;
    }
  }
  terms.push_back(formula.substr(start));
  size_t column = used;
  if (used + terms[0].size() > kMaxLineWidth) {
    os.erase(os.find_last_not_of(' ') + 1);
    os += "\n" + std::string(indent, ' ');
    column = indent;
  }
  std::string line = terms[0];
  for (size_t k = 1; k < terms.size(); ++k) {
    if (column + line.size() + 1 + terms[k].size() <= kMaxLineWidth) {
      line += " " + terms[k];
      continue;
    }
    os += line + "\n" + std::string(indent, ' ');
    line = terms[k];
    column = indent;
  }
  os += line + "\n";
}

/// The target's column of `fn` when the report shows one.
const TargetColumn *columnOf(const ReportOptions &options,
                             const CheckedFunction &fn) {
  if (!options.targetColumns)
    return nullptr;
  auto it = options.targetColumns->find(fn.name);
  return it == options.targetColumns->end() ? nullptr : &it->second;
}

std::vector<std::string> entryChecks(const CheckedFunction &fn) {
  std::vector<std::string> checks;
  for (auto &c : fn.ctx.constraints)
    checks.push_back(c.str());
  for (auto &[name, value] : fn.ctx.inferred)
    checks.push_back(fmt::format("{} == {}", name, toString(value)));
  return checks;
}

} // namespace

std::string reportTable(const CheckedModule &module,
                        const ReportOptions &options) {
  std::string os;
  auto out = std::back_inserter(os);
  double bandwidth = bandwidthOf(options);
  if (options.device)
    fmt::format_to(out, "device: {} ({} TB/s)\n", options.device->description,
                   formatRatio(bandwidth / 1e12));
  for (auto &fn : module.functions) {
    if (!options.function.empty() && fn.name != options.function)
      continue;
    auto rows = reportOps(fn, options);
    const TargetColumn *column = columnOf(options, fn);
    fmt::format_to(out, "\nfunction {} ({}:{})\n", fn.name, module.path,
                   fn.loc.line);
    std::string bound;
    for (auto &[name, v] : fn.ctx.env)
      bound +=
          fmt::format("{}{}={}", bound.empty() ? "" : ", ", name, toString(v));
    if (!bound.empty())
      fmt::format_to(out, "  sizes: {}\n", bound);
    if (!module.meshAxes.empty())
      os += "  per rank: each op's FLOPs and bytes count its local block "
            "(a dim split on a mesh axis as size/axis)\n";
    // The lines of the table: the function's own ops, and per call one line
    // with the callee's totals (with --expand, followed by its ops, indented).
    std::vector<TableRow> lines;
    auto bySite = rowsByCallSite(fn, rows, false);
    auto bySiteBackward = rowsByCallSite(fn, rows, true);
    auto where = [&](SourceLoc loc) {
      return loc.file == 0
                 ? std::to_string(loc.line)
                 : fmt::format("{}:{}",
                               std::filesystem::path(module.pathOf(loc))
                                   .filename()
                                   .string(),
                               loc.line);
    };
    std::vector<int> open;     // the calls of the previous op, outermost first
    bool openBackward = false; // ... and whether it was a backward op
    for (size_t i = 0; i < rows.size(); ++i) {
      const OpReport &r = rows[i];
      std::vector<int> path = fn.callPath(*r.op);
      bool backward = r.op->phase != GradPhase::Forward;
      size_t common = 0;
      if (backward == openBackward)
        while (common < open.size() && common < path.size() &&
               open[common] == path[common])
          ++common;
      open.resize(common);
      openBackward = backward;
      for (size_t depth = common; depth < path.size(); ++depth) {
        open.push_back(path[depth]);
        if (depth > 0 && !options.expandCalls)
          continue;
        const CallSite &site = fn.callSites[path[depth]];
        Totals t = totalsOf((backward ? bySiteBackward : bySite)[path[depth]],
                            fn.ctx.env, bandwidth);
        lines.push_back(
            {where(site.loc),
             std::string(2 * depth, ' ') +
                 (site.iteration >= 0
                      ? (backward ? "grad of iteration" : "iteration")
                      : (backward ? "grad of call" : "call")),
             siteLabel(site), t.flops, t.bytes,
             t.timeKnown ? formatSeconds(t.seconds) : "-", "-",
             column ? column->callCell : "", t.flops.expr.str()});
      }
      if (!path.empty() && !options.expandCalls)
        continue;
      // Data movement is a view (strides only) or a copy; arithmetic has
      // no such kind.
      bool moves = r.op->kind == OpKind::Rearrange ||
                   r.op->kind == OpKind::Repeat || r.op->kind == OpKind::Pack ||
                   r.op->kind == OpKind::Unpack || r.op->kind == OpKind::Cast ||
                   r.op->kind == OpKind::Slice;
      auto f = r.cost.flops.value;
      auto b = r.cost.bytes().value;
      std::string formula = r.cost.flops.expr.str();
      if (r.cost.naiveFlops)
        formula += fmt::format("  [naive {}, order {}]",
                               r.cost.naiveFlops->str(), pathStr(r.cost.path));
      lines.push_back(
          {where(r.op->loc), std::string(2 * path.size(), ' ') + opLabel(*r.op),
           r.op->pattern, r.cost.flops, r.cost.bytes(),
           f && b ? formatSeconds(rooflineSeconds(toDouble(*f), toDouble(*b),
                                                  r.peak, bandwidth))
                  : "-",
           moves ? (r.cost.view ? "view" : "copy") : "-",
           column ? column->cells[r.op - fn.ops.data()] : "", formula});
    }
    size_t lineW = 4, opW = 9, patW = 7,
           targetW = column ? column->heading.size() : 0;
    for (auto &l : lines) {
      lineW = std::max(lineW, l.line.size());
      opW = std::max(opW, l.op.size());
      patW = std::max(patW, l.pattern.size());
      targetW = std::max(targetW, l.target.size());
    }
    auto cell = [&](const std::string &s, size_t w) {
      fmt::format_to(out, "{:<{}}  ", s, w);
    };
    auto intensity = [](const Quantity &flops, const Quantity &bytes) {
      auto f = flops.value;
      auto b = bytes.value;
      return f && b && *b > 0 ? formatRatio(toDouble(*f) / toDouble(*b))
                              : std::string("-");
    };
    size_t headerStart = os.size();
    os += "  ";
    cell("line", lineW), cell("op", opW), cell("pattern", patW),
        cell("FLOPs", 14), cell("bytes", 14), cell("FLOP/B", 6),
        cell("roofline", 9), cell("kind", 4);
    if (column)
      cell(column->heading, targetW);
    appendFormula(os, os.size() - headerStart, "FLOPs formula");
    for (auto &l : lines) {
      size_t start = os.size();
      os += "  ";
      cell(l.line, lineW);
      cell(l.op, opW);
      cell(l.pattern, patW);
      cell(numberOrDash(l.flops), 14);
      cell(numberOrDash(l.bytes), 14);
      cell(intensity(l.flops, l.bytes), 6);
      cell(l.roofline, 9);
      cell(l.kind, 4);
      if (column)
        cell(l.target, targetW);
      appendFormula(os, os.size() - start, l.formula);
    }
    Totals t = totalsOf(rows, fn.ctx.env, bandwidth);
    size_t totalStart = os.size();
    os += "  ";
    cell("total", lineW + 2 + opW + 2 + patW);
    cell(numberOrDash(t.flops), 14);
    cell(numberOrDash(t.bytes), 14);
    cell(intensity(t.flops, t.bytes), 6);
    cell(t.timeKnown ? formatSeconds(t.seconds) : "-", 9);
    cell("", 4);
    if (column)
      cell("", targetW);
    appendFormula(os, os.size() - totalStart, t.flops.expr.str());
    if (t.flops.value && *t.flops.value >= 1000000)
      fmt::format_to(out, "  total FLOPs: {:.4g}\n", toDouble(*t.flops.value));
    if (column)
      for (auto &note : column->notes)
        fmt::format_to(out, "  {}\n", note);
    if (!fn.callSites.empty()) {
      // Totals by function, callees including what they call (as a FLOP
      // profiler's per-module table).
      std::vector<std::tuple<std::string, size_t, Totals>> byFunction;
      byFunction.push_back({fn.name, 1, t});
      for (auto &[callee, sites] : sitesByCallee(fn)) {
        std::vector<const OpReport *> all, backward;
        for (int site : sites) {
          all.insert(all.end(), bySite[site].begin(), bySite[site].end());
          backward.insert(backward.end(), bySiteBackward[site].begin(),
                          bySiteBackward[site].end());
        }
        byFunction.push_back(
            {callee, sites.size(), totalsOf(all, fn.ctx.env, bandwidth)});
        if (!backward.empty())
          byFunction.push_back({callee + " (backward)", sites.size(),
                                totalsOf(backward, fn.ctx.env, bandwidth)});
      }
      size_t nameW = 8;
      for (auto &entry : byFunction)
        nameW = std::max(nameW, std::get<0>(entry).size());
      os += "  ";
      cell("function", nameW), cell("calls", 5), cell("FLOPs", 14),
          cell("bytes", 14);
      os += "FLOPs formula\n";
      for (auto &[name, calls, totals] : byFunction) {
        size_t start = os.size();
        os += "  ";
        cell(name, nameW);
        cell(std::to_string(calls), 5);
        cell(numberOrDash(totals.flops), 14);
        cell(numberOrDash(totals.bytes), 14);
        appendFormula(os, os.size() - start, totals.flops.expr.str());
      }
    }
    if (!module.meshAxes.empty())
      appendCollectives(os, module, fn, options,
                        t.timeKnown ? std::optional<double>(t.seconds)
                                    : std::nullopt);
    for (auto &c : entryChecks(fn))
      fmt::format_to(out, "  entry check: {}\n", c);
  }
  return os;
}

std::string reportJSON(const CheckedModule &module,
                       const ReportOptions &options) {
  std::string os;
  auto out = std::back_inserter(os);
  double bandwidth = bandwidthOf(options);
  fmt::format_to(out, "{{\"file\": {}", jsonString(module.path));
  if (options.device)
    fmt::format_to(out, ", \"device\": {}", jsonString(options.device->name));
  os += ", \"functions\": [";
  bool firstFn = true;
  for (auto &fn : module.functions) {
    if (!options.function.empty() && fn.name != options.function)
      continue;
    auto rows = reportOps(fn, options);
    const TargetColumn *column = columnOf(options, fn);
    fmt::format_to(out, "{}{{\"name\": {}, \"line\": {}, \"ops\": [",
                   firstFn ? "" : ", ", jsonString(fn.name), fn.loc.line);
    firstFn = false;
    for (size_t i = 0; i < rows.size(); ++i) {
      auto &r = rows[i];
      auto f = r.cost.flops.value;
      auto b = r.cost.bytes().value;
      fmt::format_to(
          out,
          "{}{{\"line\": {}, \"col\": {}, \"op\": {}, \"pattern\": {}, "
          "\"shape\": {}, \"dtype\": {}, \"flops\": {}, \"flops_expr\": {}, "
          "\"bytes_read\": {}, \"bytes_read_expr\": {}, \"bytes_written\": {}, "
          "\"bytes_written_expr\": {}, \"view\": {}",
          i ? ", " : "", r.op->loc.line, r.op->loc.col,
          jsonString(opName(r.op->kind, r.op->fn)), jsonString(r.op->pattern),
          jsonString(shapeStr(fn.ctx.expand(r.result.shape))),
          jsonString(dtypeName(r.result.dtype)), jsonNumber(f),
          jsonString(r.cost.flops.expr.str()),
          jsonNumber(r.cost.bytesRead.value),
          jsonString(r.cost.bytesRead.expr.str()),
          jsonNumber(r.cost.bytesWritten.value),
          jsonString(r.cost.bytesWritten.expr.str()),
          r.cost.view ? "true" : "false");
      if (r.op->phase != GradPhase::Forward)
        fmt::format_to(out, ", \"phase\": \"{}\"", gradPhaseName(r.op->phase));
      if (r.op->loc.file != 0)
        fmt::format_to(out, ", \"file\": {}",
                       jsonString(module.pathOf(r.op->loc)));
      if (r.op->callSite >= 0) {
        // The calls the op was inlined from, outermost first.
        os += ", \"calls\": [";
        std::vector<int> path = fn.callPath(*r.op);
        for (size_t k = 0; k < path.size(); ++k) {
          const CallSite &site = fn.callSites[path[k]];
          fmt::format_to(out, "{}{{\"function\": {}, \"line\": {}, \"col\": {}",
                         k ? ", " : "", jsonString(site.callee), site.loc.line,
                         site.loc.col);
          if (site.loc.file != 0)
            fmt::format_to(out, ", \"file\": {}",
                           jsonString(module.pathOf(site.loc)));
          if (site.iteration >= 0)
            fmt::format_to(out, ", \"iteration\": {}", site.iteration);
          os += "}";
        }
        os += "]";
      }
      if (column) {
        const auto &value = column->values[r.op - fn.ops.data()];
        fmt::format_to(out, ", {}: {}", jsonString(column->field),
                       value ? jsonString(*value) : "null");
      }
      if (f && b && *b > 0)
        fmt::format_to(out, ", \"intensity\": {}",
                       jsonDouble(toDouble(*f) / toDouble(*b)));
      if (f && b)
        fmt::format_to(out, ", \"roofline_s\": {}",
                       jsonDouble(rooflineSeconds(toDouble(*f), toDouble(*b),
                                                  r.peak, bandwidth)));
      if (r.cost.naiveFlops) {
        fmt::format_to(out,
                       ", \"naive_flops\": {}, \"naive_flops_expr\": {}, "
                       "\"path\": [",
                       jsonNumber(r.cost.naiveFlops->value),
                       jsonString(r.cost.naiveFlops->expr.str()));
        for (size_t k = 0; k < r.cost.path.size(); ++k)
          fmt::format_to(out, "{}[{}]", k ? ", " : "",
                         fmt::join(r.cost.path[k], ", "));
        os += "]";
      }
      os += "}";
    }
    Totals t = totalsOf(rows, fn.ctx.env, bandwidth);
    fmt::format_to(out,
                   "], \"total_flops\": {}, \"total_flops_expr\": {}, "
                   "\"total_bytes\": {}, \"total_bytes_expr\": {}",
                   jsonNumber(t.flops.value), jsonString(t.flops.expr.str()),
                   jsonNumber(t.bytes.value), jsonString(t.bytes.expr.str()));
    if (t.timeKnown)
      fmt::format_to(out, ", \"roofline_s\": {}", jsonDouble(t.seconds));
    if (column && !column->functionField.empty())
      fmt::format_to(out, ", {}: {}", jsonString(column->functionField),
                     jsonString(column->functionValue));
    if (!fn.callSites.empty()) {
      auto bySite = rowsByCallSite(fn, rows, false);
      os += ", \"by_function\": [";
      bool firstCallee = true;
      for (auto &[callee, sites] : sitesByCallee(fn)) {
        std::vector<const OpReport *> all;
        for (int site : sites)
          all.insert(all.end(), bySite[site].begin(), bySite[site].end());
        Totals c = totalsOf(all, fn.ctx.env, bandwidth);
        fmt::format_to(
            out,
            "{}{{\"function\": {}, \"calls\": {}, \"flops\": {}, "
            "\"flops_expr\": {}, \"bytes\": {}, \"bytes_expr\": "
            "{}}}",
            firstCallee ? "" : ", ", jsonString(callee), sites.size(),
            jsonNumber(c.flops.value), jsonString(c.flops.expr.str()),
            jsonNumber(c.bytes.value), jsonString(c.bytes.expr.str()));
        firstCallee = false;
      }
      os += "]";
    }
    os += ", \"entry_checks\": [";
    auto checks = entryChecks(fn);
    for (size_t k = 0; k < checks.size(); ++k)
      fmt::format_to(out, "{}{}", k ? ", " : "", jsonString(checks[k]));
    os += "]";
    if (!module.meshAxes.empty())
      appendCollectivesJSON(os, module, fn, options,
                            t.timeKnown ? std::optional<double>(t.seconds)
                                        : std::nullopt);
    os += "}";
  }
  os += "]}\n";
  return os;
}

} // namespace ein
