// What every target shares: the refusals of the uses a target does not
// serve, no report column by default, and the default timing of a callable.
#include "ein/Target/Target.h"
#include "ein/Runtime/HostTensor.h"
#include "ein/Target/DeviceMemory.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include <sys/resource.h>

namespace ein {

Artifact::~Artifact() = default;
Callable::~Callable() = default;
Target::~Target() = default;

ErrorOr<void> Target::checkRunnable(const TargetOptions &) const { return {}; }

ErrorOr<std::shared_ptr<Artifact>> Target::build(const CheckedModule &,
                                                 const std::string &,
                                                 const TargetOptions &) const {
  return Error::usage(
      fmt::format("target '{}' does not build code to run here", name()));
}

ErrorOr<std::shared_ptr<Callable>>
Target::load(std::shared_ptr<Artifact>) const {
  return Error::usage(
      fmt::format("target '{}' does not load code to run here", name()));
}

ErrorOr<void> Target::buildFiles(const CheckedModule &, const std::string &,
                                 const std::string &, const std::string &,
                                 const TargetOptions &) const {
  return Error::usage(fmt::format("target '{}' does not build files", name()));
}

std::optional<TargetColumn> Target::describe(const CheckedModule &,
                                             const CheckedFunction &, Described,
                                             const TargetOptions &) const {
  return std::nullopt;
}

ErrorOr<double> medianSeconds(const std::function<ErrorOr<void>()> &call,
                              size_t &calls, double *faults) {
  using clock = std::chrono::steady_clock;
  if (auto called = call(); !called)
    return called.error();
  auto minorFaults = [] {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
  };
  long faultsBefore = minorFaults();
  std::vector<double> samples;
  samples.reserve(1024);
  double total = 0;
  while (total < 0.2 || (samples.size() < 5 && total < 2.0)) {
    auto start = clock::now();
    if (auto called = call(); !called)
      return called.error();
    double s = std::chrono::duration<double>(clock::now() - start).count();
    samples.push_back(s);
    total += s;
    if (samples.size() >= 100000)
      break;
  }
  calls = samples.size();
  if (faults)
    *faults = double(minorFaults() - faultsBefore) / double(calls);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

ErrorOr<DeviceMemory *> Target::memory() const { return &hostMemory(); }

ErrorOr<void> Callable::callStrided(const StridedArgument *, size_t,
                                    const Bindings *, int64_t *) {
  return Error::program("this target's code has no strided fast path");
}

ErrorOr<Timing>
Callable::time(const std::vector<const runtime::HostTensor *> &inputs,
               const std::vector<runtime::HostTensor *> &outputs,
               const Bindings &dims) {
  size_t calls = 0;
  Timing timing;
  auto seconds = medianSeconds([&] { return call(inputs, outputs, dims); },
                               calls, &timing.faults);
  if (!seconds)
    return seconds.error();
  timing.seconds = *seconds;
  timing.how = fmt::format("median of {} runs", calls);
  return timing;
}

} // namespace ein
