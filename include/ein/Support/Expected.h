// A minimal value-or-error type for the MLIR-free front end.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ein {

/// Where in the source an error points, relative to the construct checked.
/// `operand`/`kwarg` index into the call's arguments; `offset`/`length` index
/// into the pattern string when `inPattern` is set.
struct ShapeError {
  std::string message;
  enum class Anchor { Op, Pattern, Operand, Kwarg } anchor = Anchor::Op;
  unsigned index = 0;  // operand or kwarg index
  unsigned offset = 0; // offset into the pattern text
  unsigned length = 0; // length of the offending token in the pattern

  static ShapeError atOp(std::string m) { return {std::move(m)}; }
  static ShapeError atPattern(std::string m, unsigned off, unsigned len) {
    return {std::move(m), Anchor::Pattern, 0, off, len};
  }
  static ShapeError atOperand(std::string m, unsigned i) {
    return {std::move(m), Anchor::Operand, i};
  }
  static ShapeError atKwarg(std::string m, unsigned i) {
    return {std::move(m), Anchor::Kwarg, i};
  }
};

template <typename T> class Expected {
public:
  Expected(T value) : storage(std::move(value)) {}
  Expected(ShapeError error) : storage(std::move(error)) {}
  explicit operator bool() const { return storage.index() == 0; }
  T &operator*() { return std::get<0>(storage); }
  const T &operator*() const { return std::get<0>(storage); }
  T *operator->() { return &std::get<0>(storage); }
  const T *operator->() const { return &std::get<0>(storage); }
  const ShapeError &error() const { return std::get<1>(storage); }

private:
  std::variant<T, ShapeError> storage;
};

} // namespace ein
