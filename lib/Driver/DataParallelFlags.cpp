// Parsing and checking `einc report`'s data-parallel flags and --fabric.
#include "DataParallelFlags.h"
#include "ein/Analysis/Collectives.h"

#include <fmt/format.h>

#include <cstdlib>

namespace ein {

bool isDataParallelFlag(const std::string &flag) {
  return flag == "--ranks" || flag == "--dp-dim" || flag == "--bucket-mb" ||
         flag == "--zero" || flag == "--fabric";
}

ErrorOr<void> parseDataParallelFlag(const std::string &flag,
                                    const std::optional<std::string> &value,
                                    TrainOptions &train, std::string &fabric) {
  std::string given = value ? fmt::format(", got '{}'", *value) : "";
  if (flag == "--ranks") {
    auto n = value ? parseInt(*value) : std::nullopt;
    if (!n || *n < 1)
      return Error::usage("--ranks expects a positive number of "
                          "data-parallel ranks" +
                          given);
    train.ranks = *n;
  } else if (flag == "--dp-dim") {
    if (!value || value->empty())
      return Error::usage(
          "--dp-dim expects the name of the batch dim the ranks split");
    train.dpDim = *value;
  } else if (flag == "--bucket-mb") {
    char *end = nullptr;
    double mb = value ? std::strtod(value->c_str(), &end) : 0;
    if (!value || value->empty() || *end != '\0' || !(mb > 0) || mb > 1e9)
      return Error::usage("--bucket-mb expects a positive size in MiB "
                          "(PyTorch DDP's bucket_cap_mb)" +
                          given);
    train.bucketMB = mb;
  } else if (flag == "--zero") {
    auto n = value ? parseInt(*value) : std::nullopt;
    if (!n || *n < 0 || *n > 3)
      return Error::usage("--zero expects a ZeRO stage to mark: 0 (DDP), 1, "
                          "2 or 3" +
                          given);
    train.zero = static_cast<unsigned>(*n);
  } else if (flag == "--fabric") {
    if (!value || (!findFabric(*value) && *value != "host"))
      return Error::usage("--fabric expects one of " + fabricNames(", ") +
                          ", host" + given);
    fabric = *value;
  } else {
    return Error::usage(fmt::format("'{}' is not a data-parallel flag", flag));
  }
  return {};
}

ErrorOr<void> checkDataParallelFlags(const TrainOptions &train, bool training) {
  for (auto [flag, given] :
       {std::pair{"--dp-dim", !train.dpDim.empty()},
        std::pair{"--bucket-mb", train.bucketMB.has_value()},
        std::pair{"--zero", train.zero.has_value()}})
    if (given && !train.ranks)
      return Error::usage(fmt::format("{} needs --train --ranks N", flag));
  if (train.ranks && !training)
    return Error::usage("--ranks needs --train (the per-device account of a "
                        "training step)");
  return {};
}

} // namespace ein
