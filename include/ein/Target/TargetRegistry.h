// The one list of targets: --target and the clients look a target up here by
// name, so a new back end is one folder plus one line in TargetRegistry.cpp.
#pragma once

#include "ein/Target/Target.h"

#include <string>
#include <vector>

namespace ein {

/// Every registered target, in registration order.
const std::vector<const Target *> &targets();

/// The target spelled `flag` that serves `use`; otherwise a usage error
/// naming the ones that do ("--target expects cpu or cuda"), with "did you
/// mean" when one is a typo away.
ErrorOr<const Target *> lookupTarget(const std::string &flag, TargetUse use);

/// The --target spellings of the targets that serve `use`, in order, each
/// once.
std::vector<std::string> targetFlags(TargetUse use);

} // namespace ein
