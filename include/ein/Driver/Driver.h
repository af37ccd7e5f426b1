// The einc command-line driver: subcommands check, report, run, calibrate,
// build and emit, as a library the einc tool calls.
#pragma once

#include "ein/Support/Error.h"
#include "ein/Syntax/Diagnostics.h"

#include <ostream>
#include <string>
#include <vector>

namespace ein {

/// Runs the einc command line `args` (the arguments after the program name).
/// What a command prints (help, reports, IR, entry checks, `run --time`
/// figures) goes to `out`, and the warnings of a file that checks (without
/// -Werror) to `warnings`, streams the tool passes in; nothing else is
/// printed. A failure comes back as the Error, for the tool to print (with
/// any warnings before it); its exit code is 1 for diagnostics in the
/// program (or a file that cannot be read or compiled) and 2 for usage
/// errors and `run` inputs that do not fit.
ErrorOr<void> runEinc(const std::vector<std::string> &args, std::ostream &out,
                      std::ostream &warnings);

} // namespace ein
