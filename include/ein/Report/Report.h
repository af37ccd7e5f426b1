// The `einc report` table and JSON: per-op costs and per-function totals.
#pragma once

#include "ein/Analysis/Cost.h"
#include "ein/Conversion/CPU/Pipelines.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ein {

/// How the CPU pipeline fuses one function's ops (docs/lowering.md §3.6), as
/// `einc report` shows it in its `fused` column.
struct FunctionFusion {
  /// Per op of CheckedFunction::ops (same index): the loop nests it is
  /// computed in together with other source ops, "rows#N" (the N-th row-tile
  /// loop of ein-fuse-rows), "elementwise#N" (the N-th loop
  /// ein-fuse-elementwise made), several joined by ','; empty for an op in its
  /// own loop nest(s).
  std::vector<std::string> groups;
  /// Why the fusion is unknown (the function does not compile for the CPU);
  /// empty when known.
  std::string unknown;
  /// --no-fusion: every op is its own loop nest.
  bool off = false;
};

/// The fusion of each function of `module` (only `function` when not
/// empty), by name, from the IR the CPU pipeline has after its fusion
/// passes (CPUStage::Fused), compiled with the checked sizes (the unbound
/// ones dynamic, as `einc build`). Never fails: a function that does not
/// compile gets FunctionFusion::unknown.
std::map<std::string, FunctionFusion> analyzeFusion(const CheckedModule &module,
                                                    const std::string &function,
                                                    const CPUOptions &cpu);

struct ReportOptions {
  std::string function;           // only this function when non-empty
  const DeviceSpec *device = nullptr;
  double peakOverride = 0;        // --peak-flops (FLOP/s), all dtypes
  double bandwidthOverride = 0;   // --bandwidth (bytes/s)
  /// --target=cuda: a column saying what each op becomes in the CUDA
  /// source (cuBLASLt call or kernel, and the bytes of any permute).
  bool cudaTarget = false;
  /// --expand: the ops of each call of another function, indented under the
  /// call's row (which has the callee's totals either way).
  bool expandCalls = false;
  /// The `fused` column and field (from analyzeFusion); none when null.
  const std::map<std::string, FunctionFusion> *fusion = nullptr;
};

/// One row of the report, computed once and printed as text or JSON.
struct OpReport {
  const CheckedOp *op;
  OpCost cost;
  TensorType result;
  double peak = 0; // FLOP/s used for this op's roofline
};

std::vector<OpReport> reportOps(const CheckedFunction &fn,
                                const ReportOptions &options);

/// The cost inputs of a checked op (shared by the report and tests).
CostInput costInputOf(const CheckedOp &op, const CheckedFunction &fn);

/// `einc report --train`: the resource account of a training step.
struct TrainOptions {
  std::string optimizer = "sgd";   // --optimizer (Analysis/Training.h)
  std::optional<DType> paramDType; // --param-dtype: parameters, gradients,
                                   // optimizer states (default: declared)
  std::optional<DType> actDType;   // --act-dtype: saved activations
  std::optional<SizeExpr> tokens;  // --tokens: N of the 6·N·P rule
};

/// The training account of `fn` (which holds grad() ops; its
/// CheckedFunction::gradWrt are the parameters): FLOPs of the forward, the
/// backward's data and weight gradients and the optimizer step, beside the
/// 2·N·P / 4·N·P / 6·N·P rule with its differences explained; memory of
/// parameters, gradients, optimizer states and saved activations at their
/// dtypes, and the peak of live tensors over the step; the step's ideal
/// time on the device. As text, and as a JSON object.
std::string trainReportTable(const CheckedModule &module,
                             const CheckedFunction &fn,
                             const ReportOptions &options,
                             const TrainOptions &train);
std::string trainReportJSON(const CheckedModule &module,
                            const CheckedFunction &fn,
                            const ReportOptions &options,
                            const TrainOptions &train);

/// The report as a text table, and as JSON (one line).
std::string reportTable(const CheckedModule &module,
                        const ReportOptions &options);
std::string reportJSON(const CheckedModule &module,
                       const ReportOptions &options);

} // namespace ein
