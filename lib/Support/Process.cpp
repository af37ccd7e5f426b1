// Running a tool as a child process, its output captured in a file; private
// temporary directories.
#include "ein/Support/Process.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace ein {

int runProcess(const std::vector<std::string> &argv, const std::string &log) {
  if (argv.empty())
    return -1;
  pid_t pid = ::fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    std::vector<char *> args;
    for (auto &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string lastLines(const std::string &text, size_t lines) {
  size_t pos = text.size(), n = 0;
  while (pos > 0 && n <= lines)
    if (text[--pos] == '\n')
      ++n;
  return text.substr(pos == 0 ? 0 : pos + 1);
}

std::string readFileText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return in ? s.str() : std::string();
}

bool writeFileBytes(const std::string &path, const void *data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char *>(data),
            static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

TempDir::TempDir(const std::string &prefix) {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      fmt::format("{}/{}-XXXXXX", base && *base ? base : "/tmp", prefix);
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back(0);
  if (::mkdtemp(buffer.data()))
    path = buffer.data();
}

void TempDir::keepAt(const std::string &existing) {
  if (!path.empty() && !keep)
    ::rmdir(path.c_str());
  path = existing;
  keep = true;
}

TempDir::~TempDir() {
  if (path.empty() || keep)
    return;
  // Everything in it, not only the files named through file(): the
  // directory is private (mkdtemp's 0700), and a compiler run inside it
  // leaves files of names derived from those (a log, a module part).
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::string TempDir::file(const std::string &name) { return path + "/" + name; }

} // namespace ein
