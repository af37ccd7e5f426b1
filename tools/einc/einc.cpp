// einc: the ein compiler driver (a thin main over ein::runEinc; the only
// place einc's output and errors are printed).
#include "ein/Driver/Driver.h"
#include "ein/Syntax/Unicode.h"

#include <csignal>
#include <iostream>

int main(int argc, char **argv) {
  // A reader that goes away (a FIFO given to --out, `einc report | head`)
  // makes writes fail with EPIPE, reported as errors, instead of killing
  // einc silently with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  ein::ErrorOr<void> result = ein::runEinc(args, std::cout, std::cerr);
  std::cout.flush();
  if (!result) {
    // Messages quote arguments (paths, --fn names) verbatim: escape any bytes
    // that are not UTF-8 so that every diagnostic is valid UTF-8.
    std::cerr << ein::unicode::sanitizeUtf8(result.error().str("einc"));
    return result.error().exitCode();
  }
  return 0;
}
