// Writing a set of output files safely: every path is checked before
// anything runs, then all are replaced or none. MLIR-free, exception-free;
// errors are messages that start with the offending path.
//
// The rules (planOutputs checks them before the caller computes anything;
// writeOutputs checks again what may have changed since):
//
//  * A path that does not exist is created, with mode 0666 & ~umask (as a
//    shell redirection or `cp` would). Its directory must exist: "no such
//    directory 'D'".
//  * An existing regular file is replaced atomically: the content goes to a
//    fresh temporary (".NAME.einc-XXXXXX", created with O_EXCL, so no
//    existing file is ever clobbered) in the same directory, is fsynced and
//    renamed over the file. The temporary gets the file's mode, and its
//    owner and group where this process may set them (root, or the owner).
//    A file without write permission is refused ("permission denied"), and
//    so is a file with no write bit at all even for root, who could write it
//    anyway: protecting a file with `chmod a-w` means "do not replace".
//    Replacing gives the path a new inode, so other hard links to the old
//    file keep the old content.
//  * A symbolic link is written through: the link chain is followed to the
//    real file, the temporary goes beside that file, and the link stays a
//    link. A dangling link creates its target (as a shell's `>` does).
//  * A FIFO or a character device (/dev/null, /dev/stdout on a terminal or
//    pipe) is written directly: opened for writing without O_CREAT or
//    O_TRUNC, never replaced. A write error (/dev/full: "No space left on
//    device") is an error. Such a stream cannot be rolled back. The same
//    character device may be named more than once (several outputs to
//    /dev/null); any other file may not.
//  * A directory ("is a directory"), a block device, a socket, a path whose
//    directory cannot be written ("permission denied"), and two paths that
//    name the same file after resolving links (the same inode, or the same
//    canonical path for files yet to be created) are errors.
//
// All or none: writeOutputs first writes every file's temporary and every
// stream, then renames the temporaries into place. Before that, each
// existing file is hard-linked to a backup name in its directory; if a
// rename fails, the files already renamed are restored from their backups
// (and files that did not exist are removed). Only where the file system
// has no hard links (link() fails) is a failing later rename unrecoverable
// for the earlier outputs; renames within one directory fail only on a
// changed directory or an I/O error.
#pragma once

#include "ein/Runtime/HostTensor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ein {
namespace runtime {

/// One checked output path.
struct OutputTarget {
  enum class Kind {
    NewFile,      ///< does not exist yet: created
    ExistingFile, ///< a regular file: replaced atomically
    Stream,       ///< a FIFO or character device: written directly
  };
  /// As the user gave it (for messages).
  std::string path;
  /// Where the bytes go: for files, the canonical path with every symbolic
  /// link resolved; for streams, `path` itself.
  std::string resolved;
  Kind kind = Kind::NewFile;
  /// The existing file's mode, owner and group (ExistingFile only).
  mode_t mode = 0;
  uid_t owner = 0;
  gid_t group = 0;
  /// The existing file's identity (ExistingFile and Stream).
  dev_t device = 0;
  ino_t inode = 0;
  bool isCharDevice = false;
};

struct OutputPlan {
  std::vector<OutputTarget> targets;
};

/// Checks every path by the rules above; nothing is created or changed.
Result<OutputPlan> planOutputs(const std::vector<std::string> &paths);

/// Writes the content of output `index` to `fd` (a temporary file or a
/// stream). An error message need not name the path; writeOutputs adds it.
using OutputContentWriter = std::function<Status(size_t index, int fd)>;

/// Writes every output of `plan` through `write`, then replaces all the
/// files, or (on any failure) none of them.
Status writeOutputs(const OutputPlan &plan, const OutputContentWriter &write);

/// Writes all of `size` bytes at `data` to `fd` (retrying short writes and
/// EINTR); an error message ("write error: ...") on failure.
Status writeAll(int fd, const uint8_t *data, size_t size);

} // namespace runtime
} // namespace ein
