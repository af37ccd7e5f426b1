// The CPU target's column of `einc report --target=cpu`, "fused": which
// source ops the CPU pipeline's fusion passes put in one loop nest, numbered
// per function (the IR is read by Compile's fusedLoopNests; no MLIR here).
#include "ein/Target/CPU/DescribeCPU.h"
#include "ein/Compile/Compile.h"
#include "ein/Sema/Checker.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein {

namespace {

/// The fused cell of an op: "?" when the fusion is unknown, "-" for an op
/// in its own loop nest.
std::string fusedLabel(const FunctionFusion &fusion, size_t index) {
  if (!fusion.unknown.empty())
    return "?";
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

} // namespace

FunctionFusion analyzeFusion(const CheckedModule &module,
                             const CheckedFunction &fn, const CPUOptions &cpu) {
  FunctionFusion result;
  result.groups.resize(fn.ops.size());
  if (!cpu.fusion) {
    result.off = true;
    return result;
  }
  // Lowering gives every tensor a fixed rank (as `einc build`).
  if (auto pack = variadicOfUnknownRank(fn)) {
    result.unknown =
        fmt::format("the rank of variadic {} is not fixed (--rank {}=N)", *pack,
                    *pack == "..." ? "PARAM..." : *pack);
    return result;
  }
  auto nests = fusedLoopNests(module, fn, cpu);
  if (!nests) {
    result.unknown = "the CPU pipeline fails on it";
    // Its first diagnostic, without the location (the table says where).
    std::string first = nests.error().context;
    first = first.substr(0, first.find('\n'));
    if (size_t at = first.find("error: "); at != std::string::npos)
      result.unknown += ": " + first.substr(at + 7);
    return result;
  }
  std::map<std::string, int> counts;
  for (auto &nest : *nests) {
    // A loop computing one source op (its fill and its generic) is that
    // op's own loop nest.
    if (nest.ops.size() < 2)
      continue;
    std::string name = fmt::format("{}#{}", nest.kind, ++counts[nest.kind]);
    for (size_t i : nest.ops) {
      std::string &label = result.groups[i];
      label += (label.empty() ? "" : ",") + name;
    }
  }
  return result;
}

std::map<std::string, FunctionFusion> analyzeFusion(const CheckedModule &module,
                                                    const std::string &function,
                                                    const CPUOptions &cpu) {
  std::map<std::string, FunctionFusion> byName;
  for (auto &fn : module.functions)
    if (function.empty() || fn.name == function)
      byName[fn.name] = analyzeFusion(module, fn, cpu);
  return byName;
}

TargetColumn fusionColumn(const CheckedFunction &fn,
                          const FunctionFusion &fusion) {
  TargetColumn column;
  column.heading = "fused";
  column.field = "fused";
  for (size_t i = 0; i < fn.ops.size(); ++i) {
    std::string label = fusedLabel(fusion, i);
    column.cells.push_back(fusedSummary(label));
    column.values.push_back(fusion.unknown.empty()
                                ? std::optional<std::string>(label)
                                : std::nullopt);
  }
  if (fusion.off)
    column.notes.push_back(
        "fused: off (--no-fusion): every op is its own loop nest");
  if (!fusion.unknown.empty())
    column.notes.push_back(fmt::format("fused: unknown ({})", fusion.unknown));
  column.functionField = "fusion";
  column.functionValue = fusion.off ? "off"
                         : fusion.unknown.empty()
                             ? "cpu"
                             : "unknown: " + fusion.unknown;
  return column;
}

} // namespace ein
