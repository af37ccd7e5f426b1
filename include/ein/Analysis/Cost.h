// Analytic cost of each op: FLOPs and bytes as formulas and numbers, and
// rooflines.
#pragma once

#include "ein/Sema/OpCost.h" // CostInput, each op's rule
#include "ein/Shape/ContractionOrder.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ein {

/// A count: its formula in the dims and its value once they are bound.
struct Quantity {
  SizeExpr expr;
  std::optional<Int> value;
  static Quantity of(const SizeExpr &e, const Bindings &env);
  /// "1073741824" when bound, else the formula.
  std::string str() const;
};

struct OpCost {
  Quantity flops, bytesRead, bytesWritten;
  bool view = false; // no data moves: strides only
  /// einsum with 3+ operands: the naive single-loop count, and the
  /// contraction order used (`contractionOrder`).
  std::optional<Quantity> naiveFlops;
  std::vector<ContractionStep> path;
  Quantity bytes() const;
};

/// The cost of one op under the conventions of docs/cost-model.md.
OpCost computeCost(const CostInput &input, const Bindings &env);

/// The cost inputs of a checked op of `fn` (the report, the targets' report
/// columns and tests read its cost through it).
CostInput costInputOf(const CheckedOp &op, const CheckedFunction &fn);
/// The op's cost on one rank: in a sharded function (fn.layouts) every
/// tensor counts its local block (a dim split on `a` as size/a), and so does
/// every axis an einsum or transform splits; otherwise computeCost's.
OpCost perRankCost(const CheckedOp &op, const CheckedFunction &fn);

/// Peak compute per dtype and memory bandwidth of an accelerator.
struct DeviceSpec {
  std::string name;
  std::string description;
  double peakF64, peakF32, peakF16, peakBF16, peakF8; // FLOP/s; 0 = none
  double bandwidth;                                   // bytes/s
  double peakFor(DType dtype) const;
};

/// Known devices: a100, h100, h200 (dense peaks, SXM parts). The one list
/// of them: `--device`'s check, its help and the run report's GPU match
/// read it.
const std::vector<DeviceSpec> &deviceTable();
const DeviceSpec *findDevice(const std::string &name);
/// The device of the roofline when none is named: h100.
const DeviceSpec &defaultDevice();
/// The table's names joined by `separator`, the default marked when
/// `markDefault` ("a100, h100 (default), h200").
std::string deviceNames(const std::string &separator, bool markDefault = false);
/// The table's device whose name is in `gpuName`, a driver's name for a GPU
/// ("NVIDIA H100 80GB HBM3" is an h100); null when none is.
const DeviceSpec *findDeviceForGPU(const std::string &gpuName);

/// Roofline time of `flops` at `peak` and `bytes` at `bandwidth`.
double rooflineSeconds(double flops, double bytes, double peak,
                       double bandwidth);

} // namespace ein
