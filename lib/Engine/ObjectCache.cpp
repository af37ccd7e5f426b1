// The disk cache of compiled code (include/ein/Engine/ObjectCache.h).
#include "ein/Engine/ObjectCache.h"
#include "ein/Support/Files.h"
#include "ein/Support/Process.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <vector>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {

const std::string &ObjectCache::directory() {
  static const std::string directory = [] {
    std::string dir;
    if (const char *set = std::getenv("EIN_CACHE_DIR"))
      dir = set;
    else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
      dir = std::string(xdg) + "/ein";
    else if (const char *home = std::getenv("HOME"); home && *home)
      dir = std::string(home) + "/.cache/ein";
    if (dir.empty() || dir == "off")
      return std::string();
    // mkdir -p, private to the user.
    for (size_t slash = 1; slash != std::string::npos;) {
      slash = dir.find('/', slash + 1);
      std::string prefix = dir.substr(0, slash);
      if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
        return std::string();
    }
    struct stat info;
    if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
      return std::string();
    return dir;
  }();
  return directory;
}

const std::string &ObjectCache::compilerAndCPU() {
  static const std::string stamp = [] {
    std::string text;
    Dl_info info;
    struct stat file;
    if (::dladdr(reinterpret_cast<void *>(&ObjectCache::directory), &info) &&
        info.dli_fname && ::stat(info.dli_fname, &file) == 0)
      text += fmt::format("{} {} {}.{}\n", info.dli_fname, file.st_size,
                          file.st_mtim.tv_sec, file.st_mtim.tv_nsec);
    // The host's CPU and features: an object is loaded only on a host that
    // can run it (HostCPU.h probes them).
    if (auto host = resolveCPU({}))
      text += host->name + " " + host->features;
    return text;
  }();
  return stamp;
}

namespace {

/// The cache's name for `key`'s file with `suffix`, without the suffix;
/// nothing when the cache is off.
std::optional<std::string> entryBase(const std::string &key,
                                     const std::string &suffix) {
  const std::string &dir = ObjectCache::directory();
  if (dir.empty())
    return std::nullopt;
  return fmt::format("{}/{:016x}", dir, std::hash<std::string>()(key + suffix));
}

} // namespace

ErrorOr<std::unique_ptr<JITFunction>>
ObjectCache::compileOrLoad(const std::string &key, const CheckedModule &checked,
                           const std::string &function, const CPUOptions &cpu,
                           JITOptions jit, bool *loaded) {
  *loaded = false;
  // NAME.key holds the whole key and is compared whole, so a hash collision
  // only costs a compilation.
  std::string fullKey, base;
  if (!directory().empty()) {
    fullKey =
        fmt::format("{}\n{}\nfunction {}\ntiles {} fusion {}\ncpu {} {}\n", key,
                    compilerAndCPU(), function, cpu.tiles.str(), cpu.fusion,
                    cpu.target.name, cpu.target.features);
    base = *entryBase(fullKey, "");
    if (readFileText(base + ".key") == fullKey) {
      if (auto object =
              JITFunction::loadObject(checked, function, base + ".o")) {
        *loaded = true;
        return object;
      }
    }
  }
  std::string temp;
  if (!base.empty()) {
    temp = temporaryPathFor(base + ".o");
    jit.objectFile = temp;
  }
  auto compiled = JITFunction::compile(checked, function, cpu, jit);
  if (!compiled || temp.empty()) {
    if (!temp.empty())
      ::unlink(temp.c_str());
    return compiled;
  }
  // The object first, then its key: a key is only ever next to its object.
  if (commitFile(temp, base + ".o"))
    writeFileAtomically(base + ".key", fullKey);
  return compiled;
}

std::optional<std::string> ObjectCache::entryPath(const std::string &key,
                                                  const std::string &suffix) {
  auto base = entryBase(key, suffix);
  if (!base)
    return std::nullopt;
  return *base + suffix;
}

std::optional<std::string> ObjectCache::findFile(const std::string &key,
                                                 const std::string &suffix) {
  auto base = entryBase(key, suffix);
  if (!base || readFileText(*base + ".key") != key)
    return std::nullopt;
  return *base + suffix;
}

std::string ObjectCache::storeFile(const std::string &key,
                                   const std::string &suffix,
                                   const std::string &built) {
  auto found = entryBase(key, suffix);
  if (!found)
    return built;
  const std::string &base = *found;
  // A rename across file systems fails: then a copy, renamed into place.
  if (::rename(built.c_str(), (base + suffix).c_str()) != 0) {
    std::string bytes = readFileText(built);
    if (bytes.empty() || !writeFileAtomically(base + suffix, bytes))
      return built;
  }
  writeFileAtomically(base + ".key", key);
  return base + suffix;
}

} // namespace ein
