// `einc report --train`'s data-parallel flags: --ranks, --dp-dim,
// --bucket-mb and --zero (--fabric is parsed by Driver.cpp, shared with the
// collectives of the per-op report). Private to lib/Driver.
#pragma once

#include "ein/Report/Report.h"
#include "ein/Support/Error.h"

#include <optional>
#include <string>

namespace ein {

/// Whether `flag` (without its `=VALUE`) is one of the four; each takes a
/// value.
bool isDataParallelFlag(const std::string &flag);
/// Parses one of them into `train`; the error's message says what was
/// expected and what was given.
ErrorOr<void> parseDataParallelFlag(const std::string &flag,
                                    const std::optional<std::string> &value,
                                    TrainOptions &train);
/// The checks between flags, once the line is read: the data-parallel
/// flags and --fabric need --ranks, and --ranks needs --train.
ErrorOr<void> checkDataParallelFlags(const TrainOptions &train, bool training,
                                     bool fabric);

} // namespace ein
