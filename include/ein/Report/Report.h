// The `einc report` table and JSON: per-op costs and per-function totals.
#pragma once

#include "ein/Analysis/Collectives.h"
#include "ein/Analysis/Cost.h"
#include "ein/Support/Error.h"
#include "ein/Target/Target.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ein {

struct FabricSpec;

struct ReportOptions {
  std::string function; // only this function when non-empty
  const DeviceSpec *device = nullptr;
  double peakOverride = 0;      // --peak-flops (FLOP/s), all dtypes
  double bandwidthOverride = 0; // --bandwidth (bytes/s)
  /// --expand: the ops of each call of another function, indented under the
  /// call's row (which has the callee's totals either way).
  bool expandCalls = false;
  /// --target: per function (by name), the target's column
  /// (Target::describe: the CPU's fusion, the CUDA plan); none when null or
  /// for a function it lacks.
  const std::map<std::string, TargetColumn> *targetColumns = nullptr;
  /// --fabric (Analysis/Collectives.h): the links collectives are costed
  /// on; null: defaultFabric().
  const FabricSpec *fabric = nullptr;
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

/// `einc report --train`: the resource account of a training step.
struct TrainOptions {
  std::string optimizer = "sgd";   // --optimizer (Analysis/Training.h)
  std::optional<DType> paramDType; // --param-dtype: parameters, gradients,
                                   // optimizer states (default: declared)
  std::optional<DType> actDType;   // --act-dtype: saved activations
  std::optional<SizeExpr> tokens;  // --tokens: N of the 6·N·P rule
  /// --ranks N: the per-device account of N data-parallel ranks (DDP and
  /// ZeRO-1/2/3, Analysis/DataParallel.h); unset, the one-device report.
  std::optional<Int> ranks;
  std::string dpDim; // --dp-dim: the batch dim the ranks split
  /// --bucket-mb: the gradient buckets' cap in MiB (PyTorch DDP's
  /// bucket_cap_mb); unset: its default, 25.
  std::optional<double> bucketMB;
  std::optional<unsigned> zero; // --zero 0..3: the strategy to mark
};

/// The training account of `fn` (which holds grad() ops; its
/// CheckedFunction::gradWrt are the parameters): FLOPs of the forward, the
/// backward's data and weight gradients and the optimizer step, beside the
/// 2·N·P / 4·N·P / 6·N·P rule with its differences explained; memory of
/// parameters, gradients, optimizer states and saved activations at their
/// dtypes, and the peak of live tensors over the step; the step's ideal
/// time on the device. As text, and as a JSON object. With `train.ranks`,
/// also the memory per device and the step's collectives under DDP and
/// ZeRO-1/2/3; an error when the batch dim to split is ambiguous or does
/// not divide.
ErrorOr<std::string> trainReportTable(const CheckedModule &module,
                                      const CheckedFunction &fn,
                                      const ReportOptions &options,
                                      const TrainOptions &train);
/// The figures of the training account (trainReportTable's): the FLOPs of
/// one forward and backward (a running loop compares itself with them), of
/// the optimizer's update, and the peak of live bytes over the step; each
/// line's count; nullopt where a size is not bound.
struct TrainFigures {
  std::optional<Int> forwardBackwardFlops, optimizerFlops, peakBytes;
  /// FLOPs of the forward, the backward, the recomputation, the step.
  std::optional<Int> forwardFlops, backwardFlops, recomputeFlops, totalFlops;
  /// Bytes of the parameters, gradients, optimizer states and saved
  /// activations, at the dtypes held.
  std::optional<Int> parameterBytes, gradientBytes, stateBytes, activationBytes;
  /// The ideal (roofline) time of each phase on options.device and the
  /// peak FLOP/s of the parameters' dtype there; 0 when unknown.
  double forwardSeconds = 0, backwardSeconds = 0, optimizerSeconds = 0,
         peakFlops = 0;
};
/// `meshAxes`: the module's (CheckedModule::meshAxes), for a sharded step.
TrainFigures trainFigures(const CheckedFunction &fn,
                          const ReportOptions &options,
                          const TrainOptions &train,
                          const std::vector<std::string> &meshAxes = {});
ErrorOr<std::string> trainReportJSON(const CheckedModule &module,
                                     const CheckedFunction &fn,
                                     const ReportOptions &options,
                                     const TrainOptions &train);

/// The training step `einc report --train` accounts for: `function` (the
/// module's only function when empty) alone in a copy of `checked`, with its
/// grad() parameters; for a loss function without grad(), `params` name the
/// parameters and the step differentiates its first result (a scalar float)
/// with respect to them, the gradients appended as results. A bad name is a
/// usage error.
ErrorOr<CheckedModule> trainingStep(const CheckedModule &checked,
                                    const std::string &function,
                                    const std::vector<std::string> &params);
/// `einc report --train`'s output for a step of trainingStep: the per-op
/// table, then the training account; with `json`, one line
/// `{"report":...,"train":...}`.
ErrorOr<std::string> trainReportOutput(const CheckedModule &step,
                                       const ReportOptions &options,
                                       const TrainOptions &train, bool json);

/// The report as a text table, and as JSON (one line).
std::string reportTable(const CheckedModule &module,
                        const ReportOptions &options);
std::string reportJSON(const CheckedModule &module,
                       const ReportOptions &options);

} // namespace ein
