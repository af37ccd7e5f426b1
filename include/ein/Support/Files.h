// Reading source files and writing files atomically: the one home of each,
// for the driver, the import resolver, the engine's caches and the AOT
// writer.
#pragma once

#include "ein/Support/Error.h"

#include <string>

namespace ein {

/// The text of the source file at `path`. Refuses, with the reason as the
/// error's message ("not a regular file", "cannot open file: ...", "cannot
/// read file", "not a text file (contains NUL bytes)"), what is not a
/// readable text file; the caller adds where the path came from.
ErrorOr<std::string> readSourceText(const std::string &path);

/// A temporary path beside `path` ("PATH.tmp.PID.THREAD"), distinct for each
/// process and thread, to write a file into before commitFile moves it onto
/// `path`.
std::string temporaryPathFor(const std::string &path);

/// Renames the written temporary `temp` onto `path`, so a reader sees the
/// whole old file or the whole new one; false, with `temp` removed, when
/// the rename fails.
bool commitFile(const std::string &temp, const std::string &path);

/// Writes `bytes` to `path` through temporaryPathFor and commitFile; false,
/// leaving no temporary, when either step fails.
bool writeFileAtomically(const std::string &path, const std::string &bytes);

} // namespace ein
