// The registry of targets: each back end's folder gives a function that
// makes its targets, and this file lists them once.
#include "ein/Target/TargetRegistry.h"
#include "CPU/CPUTargets.h"
#include "CUDA/CUDATargets.h"
#include "ein/Support/Spelling.h"

#include <fmt/format.h>

#include <algorithm>

namespace ein {

const std::vector<const Target *> &targets() {
  static const std::vector<const Target *> all = [] {
    std::vector<std::unique_ptr<Target>> made;
    // One line per back end.
    addCPUTargets(made);
    addCUDATargets(made);
    std::vector<const Target *> list;
    for (auto &t : made)
      list.push_back(t.release()); // registered for the process's lifetime
    return list;
  }();
  return all;
}

std::vector<std::string> targetFlags(TargetUse use) {
  std::vector<std::string> flags;
  for (const Target *t : targets())
    if (t->serves(use) &&
        std::find(flags.begin(), flags.end(), t->flag()) == flags.end())
      flags.push_back(t->flag());
  return flags;
}

ErrorOr<const Target *> lookupTarget(const std::string &flag, TargetUse use) {
  for (const Target *t : targets())
    if (t->serves(use) && t->flag() == flag)
      return t;
  std::vector<std::string> flags = targetFlags(use);
  std::string list;
  for (size_t i = 0; i < flags.size(); ++i)
    list += (i == 0 ? "" : i + 1 == flags.size() ? " or " : ", ") + flags[i];
  std::string message = "--target expects " + list;
  // A typo away: up to 3 edits, and fewer than half the spelling (an empty
  // or short one is not a typo of "cpu").
  size_t edits = std::min<size_t>(3, std::max<size_t>(1, flag.size() / 2));
  if (auto near = closestName(flag, flags, edits))
    message += fmt::format("; did you mean '{}'?", *near);
  return Error::usage(message);
}

} // namespace ein
