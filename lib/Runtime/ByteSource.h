// Where a reader's bytes come from (memory or a file descriptor), read
// sequentially so that a pipe or a device is never read past what a header
// promises: shared by the .npy and safetensors readers.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ein/Support/Error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {
namespace runtime {

/// Where bytes come from: memory or a file descriptor. Reading is
/// sequential, so a pipe or a device is never read past what the header
/// promises (plus one byte, to detect trailing data).
class ByteSource {
public:
  virtual ~ByteSource() = default;
  /// Reads up to `n` bytes into `dst`, stopping early only at the end of the
  /// input; `got` is the count. False (with `error`) on a read error.
  virtual bool read(uint8_t *dst, size_t n, size_t &got,
                    std::string &error) = 0;
  /// The whole input's size when known up front (memory, regular files).
  std::optional<uint64_t> size;
};

class MemorySource : public ByteSource {
public:
  explicit MemorySource(const std::vector<uint8_t> &bytes)
      : MemorySource(bytes.data(), bytes.size()) {}
  MemorySource(const uint8_t *bytes, size_t length)
      : bytes(bytes), length(length) {
    size = length;
  }
  bool read(uint8_t *dst, size_t n, size_t &got, std::string &) override {
    got = std::min(n, length - pos);
    if (got)
      std::memcpy(dst, bytes + pos, got);
    pos += got;
    return true;
  }

private:
  const uint8_t *bytes;
  size_t length;
  size_t pos = 0;
};

class FdSource : public ByteSource {
public:
  explicit FdSource(int fd) : fd(fd) {}
  bool read(uint8_t *dst, size_t n, size_t &got, std::string &error) override {
    got = 0;
    while (got < n) {
      // Bounded chunks: some kernels reject single reads of 2 GiB or more.
      size_t chunk = std::min<size_t>(n - got, size_t(1) << 30);
      ssize_t r = ::read(fd, dst + got, chunk);
      if (r < 0) {
        if (errno == EINTR)
          continue;
        error = fmt::format("read error: {}", std::strerror(errno));
        return false;
      }
      if (r == 0)
        break;
      got += static_cast<size_t>(r);
    }
    return true;
  }

private:
  int fd;
};

/// Opens `path` and hands `decode` its bytes as a FdSource (with the size
/// of a regular file); `what` ("a .npy file") names what a directory is
/// not. Errors start with the path.
template <typename T, typename Decode>
ErrorOr<T> readFileSource(const std::string &path, const char *what,
                          Decode decode) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::usage(
        fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Error::usage(
        fmt::format("{}: cannot stat: {}", path, std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error::usage(fmt::format("{}: is a directory, not {}", path, what));
  }
  FdSource in(fd);
  if (S_ISREG(st.st_mode))
    in.size = static_cast<uint64_t>(st.st_size);
  ErrorOr<T> result = decode(in);
  ::close(fd);
  return result;
}

} // namespace runtime
} // namespace ein
