// The binary that holds ein (einc, or libein.so): where the .ein files
// shipped with it (`from ein.optim import ...`) are found at run time, and
// what identifies it to the other ranks of a job.
#pragma once

#include "ein/Support/Error.h"

#include <string>

namespace ein {

/// The directory of ein's library files: $EIN_LIBRARY_PATH when it is set
/// and not empty, else `share/ein` beside the directory of the binary that
/// holds ein: libein.so for a program using the C++ API (`PREFIX/lib/
/// libein.so` -> `PREFIX/share/ein`, wherever the program itself is), else
/// the running executable (`build/bin/einc` -> `build/share/ein`,
/// `PREFIX/bin/einc` -> `PREFIX/share/ein`). An error when the directory so
/// named does not exist.
ErrorOr<std::string> libraryDirectory();

/// What identifies the binary that holds ein (libein.so for a program using
/// the C++ API, else the executable): "GNU build id <hex>" from its ELF
/// note (the linker's hash of the linked code), or, for a binary linked
/// without one, "FNV-1a <hex> of the bytes of <path>". Computed once.
/// Ranks compare it at start-up (checkSameRunOnAllRanks), so that a job
/// whose ranks run different builds stops before it computes anything.
ErrorOr<std::string> binaryIdentity();

} // namespace ein
