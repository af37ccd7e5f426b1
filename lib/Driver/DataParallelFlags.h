// `einc report`'s data-parallel flags: --ranks, --dp-dim, --bucket-mb and
// --zero of --train's per-device account, and --fabric, the links any
// collective of the report is costed on. Private to lib/Driver.
#pragma once

#include "ein/Report/Report.h"
#include "ein/Support/Error.h"

#include <optional>
#include <string>

namespace ein {

/// Whether `flag` (without its `=VALUE`) is one of the five; each takes a
/// value.
bool isDataParallelFlag(const std::string &flag);
/// Parses one of them into `train`, or --fabric's checked name into
/// `fabric` (the driver's plain string); the error's message says what was
/// expected and what was given.
ErrorOr<void> parseDataParallelFlag(const std::string &flag,
                                    const std::optional<std::string> &value,
                                    TrainOptions &train, std::string &fabric);
/// The checks between flags, once the line is read: the data-parallel
/// flags need --ranks, and --ranks needs --train (--fabric also costs a
/// sharded program's collectives, so it needs neither).
ErrorOr<void> checkDataParallelFlags(const TrainOptions &train, bool training);

} // namespace ein
