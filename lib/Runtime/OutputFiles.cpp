// Output files that are checked before anything runs and then all replaced
// or none. See the header for the rules.
#include "ein/Runtime/OutputFiles.h"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {
namespace runtime {

namespace {

/// Follow at most this many symbolic links (Linux's own limit is 40).
constexpr int kMaxLinkHops = 40;

std::string dirName(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string joinPath(const std::string &dir, const std::string &base) {
  return dir == "/" ? "/" + base : dir + "/" + base;
}

std::optional<std::string> realPath(const std::string &path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf))
    return std::nullopt;
  return std::string(buf);
}

Status failure(const std::string &path, const std::string &what) {
  return Status::failure(fmt::format("{}: {}", path, what));
}

/// Why `err` stops us writing `path`, in the words of the rules.
std::string describeErrno(int err) {
  switch (err) {
  case EACCES:
  case EPERM:
    return "permission denied";
  case EROFS:
    return "read-only file system";
  case ELOOP:
    return "too many levels of symbolic links";
  case ENOTDIR:
    return "a component of the path is not a directory";
  case ENAMETOOLONG:
    return "file name too long";
  default:
    return std::strerror(err);
  }
}

/// Checks that files can be created in `dir` (for the temporary).
Status checkDirectoryWritable(const std::string &path, const std::string &dir) {
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return failure(path, fmt::format("{}: cannot create files in directory "
                                     "'{}'",
                                     describeErrno(errno), dir));
  return Status::success();
}

/// Plans a path that does not exist (or a dangling symbolic link): the file
/// is created where the link chain ends.
Result<OutputTarget> planNewFile(const std::string &path) {
  using R = Result<OutputTarget>;
  std::string end = path;
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (::lstat(end.c_str(), &st) != 0) {
      if (errno == ENOENT)
        break;
      return R::failure(fmt::format("{}: {}", path, describeErrno(errno)));
    }
    if (!S_ISLNK(st.st_mode))
      break; // cannot happen once stat() said ENOENT, unless it raced
    if (hops == kMaxLinkHops)
      return R::failure(fmt::format("{}: {}", path, describeErrno(ELOOP)));
    char buf[PATH_MAX];
    ssize_t n = ::readlink(end.c_str(), buf, sizeof(buf) - 1);
    if (n < 0)
      return R::failure(fmt::format("{}: cannot read the symbolic link "
                                    "'{}': {}",
                                    path, end, std::strerror(errno)));
    std::string target(buf, static_cast<size_t>(n));
    end = target.rfind('/', 0) == 0 ? target : joinPath(dirName(end), target);
  }
  const std::string base = baseName(end);
  if (base.empty() || base == "." || base == "..")
    return R::failure(fmt::format("{}: not a file name", path));
  const std::string dir = dirName(end);
  std::optional<std::string> realDir = realPath(dir);
  if (!realDir) {
    if (errno == ENOENT)
      return R::failure(fmt::format("{}: no such directory '{}'", path, dir));
    if (errno == ENOTDIR)
      return R::failure(fmt::format("{}: '{}' is not a directory", path, dir));
    return R::failure(
        fmt::format("{}: {}: '{}'", path, describeErrno(errno), dir));
  }
  struct stat dst;
  if (::stat(realDir->c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode))
    return R::failure(fmt::format("{}: '{}' is not a directory", path, dir));
  if (Status s = checkDirectoryWritable(path, *realDir); !s.ok())
    return R::failure(s.error());
  OutputTarget target;
  target.path = path;
  target.resolved = joinPath(*realDir, base);
  target.kind = OutputTarget::Kind::NewFile;
  return target;
}

Result<OutputTarget> planOne(const std::string &path) {
  using R = Result<OutputTarget>;
  if (path.empty())
    return R::failure("empty output file name");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return planNewFile(path);
    return R::failure(fmt::format("{}: {}", path, describeErrno(errno)));
  }
  OutputTarget target;
  target.path = path;
  target.device = st.st_dev;
  target.inode = st.st_ino;
  if (S_ISDIR(st.st_mode))
    return R::failure(fmt::format("{}: is a directory", path));
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    if (::access(path.c_str(), W_OK) != 0)
      return R::failure(fmt::format("{}: {}", path, describeErrno(errno)));
    target.kind = OutputTarget::Kind::Stream;
    target.resolved = path;
    target.isCharDevice = S_ISCHR(st.st_mode);
    return target;
  }
  if (!S_ISREG(st.st_mode)) {
    const char *what = S_ISBLK(st.st_mode)    ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return R::failure(fmt::format("{}: is {}; outputs can be regular files, "
                                  "FIFOs or character devices",
                                  path, what));
  }
  std::optional<std::string> real = realPath(path);
  if (!real)
    return R::failure(fmt::format("{}: {}", path, describeErrno(errno)));
  if (::access(real->c_str(), W_OK) != 0)
    return R::failure(fmt::format("{}: {} (the file is not writable)", path,
                                  describeErrno(errno)));
  if ((st.st_mode & 0222) == 0)
    return R::failure(fmt::format("{}: permission denied (the file is "
                                  "read-only, mode {:04o})",
                                  path, st.st_mode & 07777));
  if (Status s = checkDirectoryWritable(path, dirName(*real)); !s.ok())
    return R::failure(s.error());
  target.kind = OutputTarget::Kind::ExistingFile;
  target.resolved = *real;
  target.mode = st.st_mode & 07777;
  target.owner = st.st_uid;
  target.group = st.st_gid;
  return target;
}

bool sameFile(const OutputTarget &a, const OutputTarget &b) {
  using Kind = OutputTarget::Kind;
  if ((a.kind == Kind::NewFile) != (b.kind == Kind::NewFile))
    return false;
  if (a.kind == Kind::NewFile)
    return a.resolved == b.resolved;
  return a.device == b.device && a.inode == b.inode;
}

/// A name in `dir` that nothing has yet: ".BASE.einc-TAG-XXXXXX". Uniqueness
/// comes from O_EXCL (or link()'s EEXIST) at the caller; the random suffix
/// only makes collisions rare.
std::string freshName(const std::string &resolved, const char *tag) {
  static uint64_t state = 0;
  if (state == 0) {
    struct timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    state = (static_cast<uint64_t>(ts.tv_nsec) << 20) ^
            static_cast<uint64_t>(ts.tv_sec) ^
            (static_cast<uint64_t>(::getpid()) << 40) ^ 0x9E3779B97F4A7C15ull;
  }
  static const char alphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string suffix;
  for (int i = 0; i < 6; ++i) {
    state ^= state << 13; // xorshift64
    state ^= state >> 7;
    state ^= state << 17;
    suffix += alphabet[state % (sizeof(alphabet) - 1)];
  }
  return joinPath(
      dirName(resolved),
      fmt::format(".{}.einc-{}{}", baseName(resolved), tag, suffix));
}

/// Temporaries and backups made so far, removed unless committed.
struct Scratch {
  std::vector<std::string> temporaries; // one per file target, or ""
  std::vector<std::string> backups;     // one per file target, or ""
  ~Scratch() {
    for (const std::string &t : temporaries)
      if (!t.empty())
        ::unlink(t.c_str());
    for (const std::string &b : backups)
      if (!b.empty())
        ::unlink(b.c_str());
  }
};

/// Writes output `index` into a fresh temporary beside its target.
Status writeTemporary(const OutputTarget &target, size_t index,
                      const OutputContentWriter &write, std::string &tmp) {
  const bool existing = target.kind == OutputTarget::Kind::ExistingFile;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = freshName(target.resolved, "");
    // New files: 0666 less the umask, as any created file. Existing files:
    // private until the content is complete, then the target's mode.
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                existing ? 0600 : 0666);
    if (fd < 0 && errno != EEXIST) {
      int err = errno;
      tmp.clear();
      return failure(target.path,
                     fmt::format("cannot create a temporary file in '{}': {}",
                                 dirName(target.resolved), describeErrno(err)));
    }
  }
  if (fd < 0) {
    tmp.clear();
    return failure(target.path,
                   fmt::format("cannot create a temporary file in '{}'",
                               dirName(target.resolved)));
  }
  auto abandon = [&](const std::string &what) {
    ::close(fd);
    return failure(target.path, what);
  };
  if (Status s = write(index, fd); !s.ok())
    return abandon(s.error());
  if (existing) {
    // Best effort: only root or the owner may give the file its old owner
    // and group; the mode (set after, as chown clears set-id bits) always.
    if (target.owner != ::geteuid() || target.group != ::getegid())
      (void)!::fchown(fd, target.owner, target.group);
    if (::fchmod(fd, target.mode) != 0)
      return abandon(fmt::format("cannot set the mode of the temporary file: "
                                 "{}",
                                 std::strerror(errno)));
  }
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
    return abandon(fmt::format("fsync failed: {}", std::strerror(errno)));
  if (::close(fd) != 0)
    return failure(target.path,
                   fmt::format("close failed: {}", std::strerror(errno)));
  return Status::success();
}

Status writeStream(const OutputTarget &target, size_t index,
                   const OutputContentWriter &write) {
  // No O_CREAT, no O_TRUNC: the stream is written to, never replaced.
  int fd;
  do
    fd = ::open(target.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return failure(target.path, fmt::format("cannot open for writing: {}",
                                            describeErrno(errno)));
  Status s = write(index, fd);
  if (!s.ok()) {
    ::close(fd);
    return failure(target.path, s.error());
  }
  if (::close(fd) != 0)
    return failure(target.path,
                   fmt::format("close failed: {}", std::strerror(errno)));
  return Status::success();
}

} // namespace

Status writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    size_t chunk = std::min<size_t>(size, size_t(1) << 30);
    ssize_t n = ::write(fd, data, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return Status::failure(
          fmt::format("write error: {}", std::strerror(errno)));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::success();
}

Result<OutputPlan> planOutputs(const std::vector<std::string> &paths) {
  using R = Result<OutputPlan>;
  OutputPlan plan;
  for (const std::string &path : paths) {
    Result<OutputTarget> target = planOne(path);
    if (!target)
      return R::failure(target.error());
    for (const OutputTarget &earlier : plan.targets) {
      if (!sameFile(earlier, *target) ||
          (earlier.isCharDevice && target->isCharDevice))
        continue;
      std::string both;
      if (target->resolved != path || earlier.resolved != earlier.path)
        both = fmt::format(" (both are '{}')", target->resolved);
      return R::failure(
          fmt::format("{}: the same file as {}{}", path, earlier.path, both));
    }
    plan.targets.push_back(std::move(*target));
  }
  return plan;
}

Status writeOutputs(const OutputPlan &plan, const OutputContentWriter &write) {
  using Kind = OutputTarget::Kind;
  const size_t n = plan.targets.size();
  Scratch scratch;
  scratch.temporaries.resize(n);
  scratch.backups.resize(n);

  // 1. Every file's content into its temporary, then every stream.
  for (size_t i = 0; i < n; ++i) {
    const OutputTarget &target = plan.targets[i];
    if (target.kind == Kind::Stream)
      continue;
    if (Status s = writeTemporary(target, i, write, scratch.temporaries[i]);
        !s.ok())
      return s;
  }
  for (size_t i = 0; i < n; ++i)
    if (plan.targets[i].kind == Kind::Stream)
      if (Status s = writeStream(plan.targets[i], i, write); !s.ok())
        return s;

  // 2. Backups of the files about to be replaced, as hard links.
  for (size_t i = 0; i < n; ++i) {
    const OutputTarget &target = plan.targets[i];
    if (target.kind != Kind::ExistingFile)
      continue;
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string backup = freshName(target.resolved, "backup-");
      if (::link(target.resolved.c_str(), backup.c_str()) == 0) {
        scratch.backups[i] = backup;
        break;
      }
      if (errno != EEXIST)
        break; // no hard links here: this output cannot be restored
    }
  }

  // 3. The renames; on a failure, put back what was already replaced.
  for (size_t i = 0; i < n; ++i) {
    const OutputTarget &target = plan.targets[i];
    if (target.kind == Kind::Stream)
      continue;
    if (::rename(scratch.temporaries[i].c_str(), target.resolved.c_str()) ==
        0) {
      scratch.temporaries[i].clear();
      continue;
    }
    const int err = errno;
    std::vector<std::string> lost;
    for (size_t j = 0; j < i; ++j) {
      const OutputTarget &done = plan.targets[j];
      if (done.kind == Kind::Stream)
        continue;
      bool restored = done.kind == Kind::NewFile
                          ? ::unlink(done.resolved.c_str()) == 0
                          : !scratch.backups[j].empty() &&
                                ::rename(scratch.backups[j].c_str(),
                                         done.resolved.c_str()) == 0;
      if (restored)
        scratch.backups[j].clear();
      else
        lost.push_back(done.path);
    }
    std::string consequence;
    if (!lost.empty()) {
      std::string names;
      for (const std::string &name : lost)
        names += (names.empty() ? "" : ", ") + name;
      consequence =
          fmt::format("; already replaced and not restored: {}", names);
    }
    return failure(target.path,
                   fmt::format("cannot rename the temporary file into place: "
                               "{}{}",
                               std::strerror(err), consequence));
  }
  return Status::success();
}

} // namespace runtime
} // namespace ein
