// Finding the directory of the .ein files shipped with the compiler.
#include "ein/Support/Library.h"

#include <fmt/format.h>

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <link.h>

namespace ein {

namespace fs = std::filesystem;

namespace {

/// The file holding this code: libein.so when the C++ API's library is
/// loaded by a program, else the executable it is linked into (einc). The
/// dynamic loader's name of a shared object is the path it opened; the main
/// program has no name there (dladdr would give its argv[0]), so its path is
/// /proc/self/exe's.
ErrorOr<fs::path> thisBinary() {
  std::error_code ec;
  Dl_info info;
  link_map *map = nullptr;
  if (::dladdr1(reinterpret_cast<void *>(&libraryDirectory), &info,
                reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) != 0 &&
      map && map->l_name && map->l_name[0] != '\0') {
    fs::path object = fs::weakly_canonical(map->l_name, ec);
    if (!ec)
      return object;
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return Error::program(
        fmt::format("cannot find ein's library directory: the path of the "
                    "running program is unknown ({}); set EIN_LIBRARY_PATH",
                    ec.message()));
  return exe;
}

} // namespace

ErrorOr<std::string> libraryDirectory() {
  std::error_code ec;
  if (const char *env = std::getenv("EIN_LIBRARY_PATH"); env && *env) {
    if (!fs::is_directory(env, ec))
      return Error::program(fmt::format(
          "EIN_LIBRARY_PATH is '{}', which is not a directory", env));
    return std::string(env);
  }
  auto binary = thisBinary();
  if (!binary)
    return binary.error();
  fs::path dir = binary->parent_path().parent_path() / "share" / "ein";
  if (!fs::is_directory(dir, ec))
    return Error::program(
        fmt::format("cannot find ein's library directory: no directory {}; "
                    "set EIN_LIBRARY_PATH to the directory of its .ein files",
                    dir.string()));
  return dir.string();
}

} // namespace ein
