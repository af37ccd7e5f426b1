// Reading source files and writing files atomically; see Files.h.
#include "ein/Support/Files.h"
#include "ein/Support/Process.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace ein {

ErrorOr<std::string> readSourceText(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
    return Error::program("not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::program(
        fmt::format("cannot open file: {}", std::strerror(errno)));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    return Error::program("cannot read file");
  std::string text = buffer.str();
  if (text.find('\0') != std::string::npos)
    return Error::program("not a text file (contains NUL bytes)");
  return text;
}

std::string temporaryPathFor(const std::string &path) {
  return fmt::format("{}.tmp.{}.{}", path, ::getpid(),
                     std::hash<std::thread::id>()(std::this_thread::get_id()));
}

bool commitFile(const std::string &temp, const std::string &path) {
  if (::rename(temp.c_str(), path.c_str()) == 0)
    return true;
  ::unlink(temp.c_str());
  return false;
}

bool writeFileAtomically(const std::string &path, const std::string &bytes) {
  std::string temp = temporaryPathFor(path);
  if (!writeFileBytes(temp, bytes.data(), bytes.size())) {
    ::unlink(temp.c_str());
    return false;
  }
  return commitFile(temp, path);
}

} // namespace ein
