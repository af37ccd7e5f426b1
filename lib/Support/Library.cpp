// The binary that holds ein: the directory of the .ein files shipped with
// it, and its identity (GNU build id) for the ranks' start-up check.
#include "ein/Support/Library.h"
#include "ein/Support/Hash.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <link.h>
#include <vector>

namespace ein {

namespace fs = std::filesystem;

namespace {

/// The dynamic loader's entry of the object holding this code, or null.
link_map *thisObject() {
  Dl_info info;
  link_map *map = nullptr;
  if (::dladdr1(reinterpret_cast<void *>(&libraryDirectory), &info,
                reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) == 0)
    return nullptr;
  return map;
}

/// The file holding this code: libein.so when the C++ API's library is
/// loaded by a program, else the executable it is linked into (einc). The
/// dynamic loader's name of a shared object is the path it opened; the main
/// program has no name there (dladdr would give its argv[0]), so its path is
/// /proc/self/exe's.
ErrorOr<fs::path> thisBinary() {
  std::error_code ec;
  if (link_map *map = thisObject();
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

/// The hex of the NT_GNU_BUILD_ID note of the loaded object whose load
/// address is `base`, or "" when it has none.
std::string buildIdAt(ElfW(Addr) base) {
  struct Search {
    ElfW(Addr) base;
    std::string id;
  } search{base, ""};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) -> int {
        auto &s = *static_cast<Search *>(data);
        if (info->dlpi_addr != s.base)
          return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE)
            continue;
          // Notes are padded to the segment's alignment (4, or 8).
          size_t align = ph.p_align == 8 ? 8 : 4;
          auto pad = [&](size_t n) { return (n + align - 1) / align * align; };
          const char *at = reinterpret_cast<const char *>(s.base + ph.p_vaddr);
          const char *end = at + ph.p_memsz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) note;
            std::memcpy(&note, at, sizeof note);
            const char *name = at + sizeof note;
            const char *desc = name + pad(note.n_namesz);
            if (desc + note.n_descsz > end)
              break;
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              for (size_t k = 0; k < note.n_descsz; ++k)
                s.id += fmt::format("{:02x}", uint8_t(desc[k]));
              return 1;
            }
            at = desc + pad(note.n_descsz);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

ErrorOr<std::string> computeBinaryIdentity() {
  link_map *map = thisObject();
  if (!map)
    return Error::program("cannot identify this binary: the dynamic loader "
                          "does not know the object holding ein's code");
  if (std::string id = buildIdAt(map->l_addr); !id.empty())
    return "GNU build id " + id;
  auto path = thisBinary();
  if (!path)
    return path.error();
  std::ifstream in(*path, std::ios::binary);
  if (!in)
    return Error::program(fmt::format(
        "cannot identify this binary: it has no GNU build id and {} does "
        "not read",
        path->string()));
  uint64_t hash = fnv1aBasis;
  std::vector<char> buffer(1 << 20);
  while (in.read(buffer.data(), std::streamsize(buffer.size())) ||
         in.gcount() > 0)
    hash = fnv1a({buffer.data(), size_t(in.gcount())}, hash);
  return fmt::format("FNV-1a {:016x} of the bytes of {}", hash, path->string());
}

} // namespace

ErrorOr<std::string> binaryIdentity() {
  static const ErrorOr<std::string> identity = computeBinaryIdentity();
  return identity;
}

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
