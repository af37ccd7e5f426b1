// einc: the ein compiler driver (a thin main over ein::runEinc; the only
// place einc's output and errors are printed).
#include "ein/Driver/Driver.h"

#include <iostream>

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  ein::ErrorOr<void> result = ein::runEinc(args, std::cout);
  std::cout.flush();
  if (!result) {
    std::cerr << result.error().str("einc");
    return result.error().exitCode();
  }
  return 0;
}
