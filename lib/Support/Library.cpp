// Finding the directory of the .ein files shipped with the compiler.
#include "ein/Support/Library.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

namespace ein {

namespace fs = std::filesystem;

ErrorOr<std::string> libraryDirectory() {
  std::error_code ec;
  if (const char *env = std::getenv("EIN_LIBRARY_PATH"); env && *env) {
    if (!fs::is_directory(env, ec))
      return Error::program(fmt::format(
          "EIN_LIBRARY_PATH is '{}', which is not a directory", env));
    return std::string(env);
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return Error::program(
        fmt::format("cannot find ein's library directory: the path of the "
                    "running program is unknown ({}); set EIN_LIBRARY_PATH",
                    ec.message()));
  fs::path dir = exe.parent_path().parent_path() / "share" / "ein";
  if (!fs::is_directory(dir, ec))
    return Error::program(
        fmt::format("cannot find ein's library directory: no directory {}; "
                    "set EIN_LIBRARY_PATH to the directory of its .ein files",
                    dir.string()));
  return dir.string();
}

} // namespace ein
