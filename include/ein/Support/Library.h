// Where the .ein files shipped with the compiler (`from ein.optim import ...`)
// are found at run time.
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

} // namespace ein
