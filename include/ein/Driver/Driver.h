// The einc command-line driver: subcommands check, report and emit.
#pragma once

namespace ein {

/// Runs `einc` with its arguments; returns the process exit code
/// (0 success, 1 diagnostics in the input, 2 usage errors).
int runEinc(int argc, char **argv);

} // namespace ein
