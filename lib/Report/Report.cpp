// `einc report`: the per-op cost table and its JSON form.
#include "ein/Report/Report.h"
#include "ReportFormat.h"

// The CUDA target's GEMM roles and planner: the report asks it which operands
// a contraction must permute, as the generated code will at run time.
#include "ein/Target/CUDA/GemmRoles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>

namespace ein {

CostInput costInputOf(const CheckedOp &op, const CheckedFunction &fn) {
  CostInput in;
  in.kind = op.kind;
  in.fn = op.fn;
  // Variadics of known rank count as their dims (as in the IR), not as
  // one symbol standing for their product.
  auto expanded = [&](unsigned id) {
    const TensorType &t = fn.values[id].type;
    return TensorType{fn.ctx.expand(t.shape), t.dtype};
  };
  for (unsigned id : op.operands)
    in.inputs.push_back(expanded(id));
  for (unsigned id : op.results)
    in.outputs.push_back(expanded(id));
  if (op.transform)
    in.transform = &*op.transform;
  if (op.einsum)
    in.einsum = &*op.einsum;
  in.reduction = op.reduction;
  if (op.kind == OpKind::Unpack)
    in.packAxesBefore = op.parsed.inputs[0].starIndex();
  if (op.kind == OpKind::Slice)
    in.packAxesBefore = op.sliceAxis >= 0
                            ? op.sliceAxis
                            : op.sliceAxis + in.inputs[0].shape.size();
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

/// The sizes of an op's axes for layout questions: the known ones capped at
/// 2^10 (whether a merge works depends on which sizes are 1, not on how
/// large the others are, and strides stay far from overflow), unknown ones
/// 2 (so that no size 1 merges by accident).
std::map<std::string, int64_t>
layoutSizes(const std::map<std::string, SizeExpr> &axisSizes,
            const Bindings &env) {
  std::map<std::string, int64_t> sizes;
  for (auto &[axis, e] : axisSizes) {
    auto v = e.evaluate(env);
    sizes[axis] = !v                  ? 2
                  : *v > Int(1 << 10) ? 1 << 10
                                      : static_cast<int64_t>(*v);
  }
  return sizes;
}

/// The elementary axes of `groups` with the strides of a row-major tensor
/// whose dims are those groups; false when a stride overflows.
bool rowMajorAxes(const std::vector<std::vector<std::string>> &groups,
                  const std::map<std::string, int64_t> &sizes,
                  std::vector<std::string> &axes,
                  std::vector<int64_t> &strides) {
  axes.clear();
  strides.clear();
  int64_t stride = 1;
  for (size_t d = groups.size(); d-- > 0;)
    for (size_t i = groups[d].size(); i-- > 0;) {
      axes.insert(axes.begin(), groups[d][i]);
      strides.insert(strides.begin(), stride);
      if (__builtin_mul_overflow(stride, sizes.at(groups[d][i]), &stride))
        return false;
    }
  return true;
}

/// What a pairwise einsum becomes on CUDA for row-major operands and
/// result: cuBLASLt, plus the operands ein_gemm_plan has to permute first.
/// (An operand that is a view of a rearrange is planned at run time on its
/// real strides; the report assumes row-major.)
std::string cudaContraction(const CheckedOp &op, const CheckedFunction &fn) {
  const EinsumInfo &info = *op.einsum;
  DType dtype = fn.values[op.operands[0]].type.dtype;
  std::map<std::string, int64_t> sizes =
      layoutSizes(info.axisSizes, fn.ctx.env);
  std::vector<std::string> a, b, c;
  std::vector<int64_t> sa, sb, sc;
  std::string gemm = dtype == DType::I32 || dtype == DType::I64
                         ? "tiled integer GEMM kernel"
                         : "cuBLASLt matmul";
  // The planner multiplies sizes of all the axes (a broadcast copy): they
  // must fit in 64 bits.
  int64_t all = 1;
  for (auto &[axis, size] : sizes)
    if (__builtin_mul_overflow(all, size, &all))
      return gemm;
  if (!rowMajorAxes(info.operandGroups[0], sizes, a, sa) ||
      !rowMajorAxes(info.operandGroups[1], sizes, b, sb) ||
      !rowMajorAxes(info.outputGroups, sizes, c, sc))
    return gemm;
  // The roles and the plan are the CUDA target's own (GemmRoles.h).
  GemmRoles roles = splitGemmRoles(a, b, c);
  bool fp8 = dtype == DType::F8E4M3 || dtype == DType::F8E5M2;
  std::optional<GemmPlanSummary> plan =
      planGemm(roles, {a, sa}, {b, sb}, {c, sc}, sizes, fp8);
  if (!plan)
    return "cuBLASLt matmul";
  int copies = plan->copies;
  std::string text = gemm;
  if (plan->batchLoop)
    text += " (batch loop)";
  // A permute reads and writes the operand once: its bytes, when known.
  const char *names[3] = {"A", "B", "C"};
  const std::vector<std::vector<std::string>> *groups[3] = {
      &info.operandGroups[0], &info.operandGroups[1], &info.outputGroups};
  for (int x = 0; x < 3; ++x) {
    if (!(copies & (1 << x)))
      continue;
    SizeExpr elements = SizeExpr::constant(1);
    for (auto &group : *groups[x])
      for (auto &axis : group)
        elements = elements * info.axisSizes.at(axis);
    auto count = elements.evaluate(fn.ctx.env);
    Int bytes = 0;
    bool known = count && !elements.overflowed() &&
                 !__builtin_mul_overflow(*count, Int(2 * dtypeBytes(dtype)),
                                         &bytes);
    text += known ? fmt::format(" + permute {} ({} B)", names[x],
                                toString(bytes))
                  : fmt::format(" + permute {}", names[x]);
  }
  return text;
}

/// Whether a rearrange of a row-major input is a view in the CUDA target:
/// every output dim's axes merge into one strided dim (ein_merge).
bool cudaRearrangeIsView(const CheckedOp &op, const CheckedFunction &fn) {
  if (!op.transform)
    return false;
  const TransformInfo &info = *op.transform;
  std::map<std::string, int64_t> sizes =
      layoutSizes(info.axisSizes, fn.ctx.env);
  std::vector<std::string> axes;
  std::vector<int64_t> strides;
  if (!rowMajorAxes(info.inputGroups, sizes, axes, strides))
    return false;
  auto strideOf = [&](const std::string &x) {
    auto it = std::find(axes.begin(), axes.end(), x);
    return it == axes.end() ? 0 : strides[it - axes.begin()];
  };
  for (auto &group : info.outputGroups) {
    int64_t inner = -1, innerSize = 1;
    for (size_t i = group.size(); i-- > 0;) {
      if (sizes.at(group[i]) == 1)
        continue;
      int64_t st = strideOf(group[i]), expect = 0;
      if (inner >= 0 &&
          (__builtin_mul_overflow(inner, innerSize, &expect) || st != expect))
        return false;
      inner = st;
      innerSize = sizes.at(group[i]);
    }
  }
  return true;
}

/// What `op` becomes in the CUDA target's source (docs/cuda.md). A result
/// the function returns is always written (copied) into the output.
std::string cudaLowering(const OpReport &r, const CheckedFunction &fn) {
  const CheckedOp &op = *r.op;
  switch (op.kind) {
  case OpKind::Rearrange:
    return r.cost.view || cudaRearrangeIsView(op, fn)
               ? "view"
               : "ein_copy (tiled transpose)";
  case OpKind::Repeat:
    return "ein_copy (stride-0 read)";
  case OpKind::Reduce:
    return fmt::format("ein_reduce {}", reduceKindName(op.reduction));
  case OpKind::Pack:
    return fmt::format("ein_copy x{} into slices", op.operands.size());
  case OpKind::Unpack:
    return "views";
  case OpKind::Slice:
    return "view (ein_slice)";
  case OpKind::ScatterAdd:
    return "ein_scatter_add (atomicAdd)";
  case OpKind::Einsum: {
    size_t n = op.operands.size();
    if (n == 2 && op.einsum)
      return cudaContraction(op, fn);
    if (n > 2)
      return fmt::format("{} cuBLASLt matmuls", n - 1);
    return r.cost.flops.value && *r.cost.flops.value == 0 ? "view or ein_copy"
                                                          : "ein_reduce sum";
  }
  case OpKind::Elementwise:
  case OpKind::Cast:
  case OpKind::Constant:
  case OpKind::Size:
  case OpKind::Arange:
  case OpKind::Take:
    return "ein_map (fused)";
  }
  return ""; // every case returns: for GCC's -Wreturn-type
}

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
      t.seconds += rooflineSeconds(toDouble(*f), toDouble(*b), r.peak, bandwidth);
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
  std::string roofline, kind, cuda, fused, formula;
};

/// The fused cell of an op: "?" when the fusion is unknown, "-" for an op
/// in its own loop nest.
std::string fusedLabel(const FunctionFusion &fusion, const CheckedFunction &fn,
                       const CheckedOp &op) {
  if (!fusion.unknown.empty())
    return "?";
  size_t index = &op - fn.ops.data();
  if (index >= fusion.groups.size() || fusion.groups[index].empty())
    return "-";
  return fusion.groups[index];
}

/// The fused cell of the table: one group as it is, more as the first and
/// a count ("elementwise#15 +2"), so that an op read by many fused loops
/// does not widen every line (JSON keeps the whole list).
std::string fusedSummary(const std::string &label) {
  size_t groups = 1 + std::count(label.begin(), label.end(), ',');
  if (groups == 1)
    return label;
  return fmt::format("{} +{}", label.substr(0, label.find(',')), groups - 1);
}

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

/// The fusion of `fn` when the report shows it.
const FunctionFusion *fusionOf(const ReportOptions &options,
                               const CheckedFunction &fn) {
  if (!options.fusion)
    return nullptr;
  auto it = options.fusion->find(fn.name);
  return it == options.fusion->end() ? nullptr : &it->second;
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
    const FunctionFusion *fusion = fusionOf(options, fn);
    fmt::format_to(out, "\nfunction {} ({}:{})\n", fn.name, module.path,
                   fn.loc.line);
    std::string bound;
    for (auto &[name, v] : fn.ctx.env)
      bound +=
          fmt::format("{}{}={}", bound.empty() ? "" : ", ", name, toString(v));
    if (!bound.empty())
      fmt::format_to(out, "  sizes: {}\n", bound);
    // Each op's CUDA lowering, planned once (it runs the GEMM planner).
    std::vector<std::string> cuda;
    if (options.cudaTarget)
      for (auto &r : rows)
        cuda.push_back(cudaLowering(r, fn));
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
    std::vector<int> open; // the calls of the previous op, outermost first
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
             std::string(2 * depth, ' ') + (backward ? "grad of call" : "call"),
             site.callee, t.flops, t.bytes,
             t.timeKnown ? formatSeconds(t.seconds) : "-", "-", "-", "",
             t.flops.expr.str()});
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
           options.cudaTarget ? cuda[i] : "",
           fusion ? fusedSummary(fusedLabel(*fusion, fn, *r.op)) : "",
           formula});
    }
    size_t lineW = 4, opW = 9, patW = 7, cudaW = 4, fusedW = 5;
    for (auto &l : lines) {
      lineW = std::max(lineW, l.line.size());
      opW = std::max(opW, l.op.size());
      patW = std::max(patW, l.pattern.size());
      cudaW = std::max(cudaW, l.cuda.size());
      fusedW = std::max(fusedW, l.fused.size());
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
    if (options.cudaTarget)
      cell("CUDA", cudaW);
    if (fusion)
      cell("fused", fusedW);
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
      if (options.cudaTarget)
        cell(l.cuda, cudaW);
      if (fusion)
        cell(l.fused, fusedW);
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
    if (options.cudaTarget)
      cell("", cudaW);
    if (fusion)
      cell("", fusedW);
    appendFormula(os, os.size() - totalStart, t.flops.expr.str());
    if (t.flops.value && *t.flops.value >= 1000000)
      fmt::format_to(out, "  total FLOPs: {:.4g}\n", toDouble(*t.flops.value));
    if (fusion && fusion->off)
      os += "  fused: off (--no-fusion): every op is its own loop nest\n";
    if (fusion && !fusion->unknown.empty())
      fmt::format_to(out, "  fused: unknown ({})\n", fusion->unknown);
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
    const FunctionFusion *fusion = fusionOf(options, fn);
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
          os += "}";
        }
        os += "]";
      }
      if (options.cudaTarget)
        fmt::format_to(out, ", \"cuda\": {}", jsonString(cudaLowering(r, fn)));
      if (fusion)
        fmt::format_to(out, ", \"fused\": {}",
                       fusion->unknown.empty()
                           ? jsonString(fusedLabel(*fusion, fn, *r.op))
                           : "null");
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
    if (fusion)
      fmt::format_to(out, ", \"fusion\": {}",
                     jsonString(fusion->off ? "off"
                                : fusion->unknown.empty()
                                    ? "cpu"
                                    : "unknown: " + fusion->unknown));
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
    os += "]}";
  }
  os += "]}\n";
  return os;
}

} // namespace ein
