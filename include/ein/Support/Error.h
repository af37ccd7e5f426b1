// ein's one error convention: a located diagnostic returned as a value.
//
// Library code returns `ErrorOr<T>` (a `T` or an `Error`) and never prints,
// exits or throws (the project is built with -fno-exceptions); only the tools
// (einc, ein-opt) print an error, with `Error::str`, and exit with
// `Error::exitCode`. Inside the front end, `Expected<T>`/`ShapeError` (an
// error anchored to a construct, not yet to a line) and the DiagnosticEngine
// (many diagnostics of one file) remain; `Error::fromShapeError` and
// `errorFromDiagnostics` (ein/Syntax/DiagnosticError.h) turn them into an
// `Error` at the boundary.
#pragma once

#include "ein/Support/Expected.h"

#include <cassert>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ein {

/// What went wrong decides the exit code.
enum class ErrorKind {
  /// The program or a file it names: a diagnostic in the .ein file, a file
  /// that cannot be read, a function that cannot be compiled. Exit 1.
  Program = 1,
  /// The command line, or run-time inputs that do not fit the program
  /// (a missing or malformed .npy, shapes that do not bind). Exit 2.
  Usage = 2,
};

class Error {
public:
  ErrorKind kind = ErrorKind::Program;
  /// The file the error is about; empty when it is about none (the tool's
  /// name is printed in its place).
  std::string file;
  /// 1-based; line 0 means the whole file, or no file.
  unsigned line = 0, col = 0;
  std::string message;
  /// Text printed as is after the first line: a source line and caret,
  /// further diagnostics, a compiler's log, a usage hint.
  std::string context;
  /// Further facts, each printed as `TOOL: note: NOTE`.
  std::vector<std::string> notes;
  /// When set, the complete text as the front end printed it (every
  /// diagnostic with its source line and caret); `str` prints it in place of
  /// the first line and `context`. `file`, `line`, `col` and `message` then
  /// describe the first error in it.
  std::string rendered;

  static Error program(std::string message) {
    return make(ErrorKind::Program, {}, std::move(message));
  }
  static Error usage(std::string message) {
    return make(ErrorKind::Usage, {}, std::move(message));
  }
  static Error inFile(ErrorKind kind, std::string file, std::string message) {
    return make(kind, std::move(file), std::move(message));
  }
  static Error at(ErrorKind kind, std::string file, unsigned line, unsigned col,
                  std::string message) {
    Error e = make(kind, std::move(file), std::move(message));
    e.line = line;
    e.col = col;
    return e;
  }
  /// A front-end error whose anchor the caller has resolved to `line:col`.
  static Error fromShapeError(const ShapeError &error, std::string file,
                              unsigned line, unsigned col) {
    return at(ErrorKind::Program, std::move(file), line, col, error.message);
  }

  Error &withContext(std::string text) {
    context += std::move(text);
    return *this;
  }
  Error &withNote(std::string note) {
    notes.push_back(std::move(note));
    return *this;
  }
  Error &inFileNamed(std::string path) {
    file = std::move(path);
    return *this;
  }

  int exitCode() const { return static_cast<int>(kind); }
  /// `FILE:LINE:COL: error: MESSAGE` (`TOOL: error: MESSAGE` without a
  /// file), then the context and the notes; every line ends in a newline.
  std::string str(const std::string &tool) const;

private:
  static Error make(ErrorKind kind, std::string file, std::string message) {
    Error e;
    e.kind = kind;
    e.file = std::move(file);
    e.message = std::move(message);
    return e;
  }
};

/// A `T` or the `Error` that prevented it.
template <typename T> class [[nodiscard]] ErrorOr {
public:
  ErrorOr(T value) : storage(std::in_place_index<0>, std::move(value)) {}
  ErrorOr(Error error) : storage(std::in_place_index<1>, std::move(error)) {}
  explicit operator bool() const { return storage.index() == 0; }
  T &operator*() { return std::get<0>(storage); }
  const T &operator*() const { return std::get<0>(storage); }
  T *operator->() { return &std::get<0>(storage); }
  const T *operator->() const { return &std::get<0>(storage); }
  Error &error() { return std::get<1>(storage); }
  const Error &error() const { return std::get<1>(storage); }

private:
  std::variant<T, Error> storage;
};

/// Success or an `Error`, for operations without a value.
template <> class [[nodiscard]] ErrorOr<void> {
public:
  ErrorOr() = default;
  ErrorOr(Error error) : failure(std::move(error)), failed(true) {}
  explicit operator bool() const { return !failed; }
  Error &error() {
    assert(failed && "no error in a success");
    return failure;
  }
  const Error &error() const {
    assert(failed && "no error in a success");
    return failure;
  }

private:
  Error failure;
  bool failed = false;
};

} // namespace ein
