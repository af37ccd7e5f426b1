// The data-parallel part of `einc report --train --ranks N`: memory per
// device and the step's collectives under DDP and ZeRO-1/2/3, as text and
// JSON. Private to lib/Report.
#pragma once

#include "ein/Analysis/DataParallel.h"
#include "ein/Report/Report.h"

#include <optional>
#include <string>

namespace ein::report {

/// What TrainReport.cpp's account gives the data-parallel table.
struct DataParallelAccount {
  DataParallelModel model; // activations: one rank's share of the batch
  Int ranks = 1;
  std::string dpDim;        // the batch dim split over the ranks
  std::optional<Int> batch; // its size, when bound
  bool paramsBound = true;  // every parameter's size is known
  bool activationsKnown = false;
  std::string optimizerName;
  std::string paramType; // the first parameter's dtype as held ("bf16")
  /// One rank's forward and backward (its share of the batch) and the
  /// whole update on one device, at the roofline; timeKnown when bound.
  double forwardBackwardSeconds = 0, optimizerSeconds = 0;
  bool timeKnown = false;
  std::string device;
};

/// The batch dim N data-parallel ranks split: --dp-dim, or the one named
/// dim every non-parameter input leads with; an error naming the inputs'
/// leading dims when they disagree or are not named.
ErrorOr<std::string> batchDim(const CheckedFunction &fn,
                              const TrainOptions &train);
/// "1, 2, 4, 8": the divisors of n up to 10^5, for a refused --ranks.
std::string divisors(Int n);

std::string dataParallelTable(const DataParallelAccount &dp,
                              const ReportOptions &options,
                              const TrainOptions &train);
/// One JSON object (no trailing newline).
std::string dataParallelJSON(const DataParallelAccount &dp,
                             const ReportOptions &options,
                             const TrainOptions &train);

} // namespace ein::report
