// Running a tool (a C++ or CUDA compiler, a generated program) as a child
// process, its output captured in a file.
#pragma once

#include <string>
#include <vector>

namespace ein {

/// Runs `argv` (argv[0] searched in PATH) with stdout and stderr written to
/// the file `log`; the exit status, or -1 when it could not start or died
/// by a signal.
int runProcess(const std::vector<std::string> &argv, const std::string &log);

/// The last `lines` lines of `text` (a compiler's log, for a message).
std::string lastLines(const std::string &text, size_t lines);

/// The whole file at `path`; empty when it cannot be read.
std::string readFileText(const std::string &path);

/// Writes `size` bytes at `data` to `path` (created or replaced); false
/// when it cannot.
bool writeFileBytes(const std::string &path, const void *data, size_t size);

/// A private temporary directory ($TMPDIR or /tmp), removed with everything
/// in it when destroyed; path is empty when it could not be made.
class TempDir {
public:
  explicit TempDir(const std::string &prefix);
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  /// The path of `name` in the directory.
  std::string file(const std::string &name);
  /// Keep the directory and its files (EINC_CUDA_SAVE).
  void keepAt(const std::string &existing);
  std::string path;
  bool keep = false;
};

} // namespace ein
