// The embedded C++ API's value types: dtypes, devices, reductions, sizes,
// and its error convention (ein::Error when exceptions are on, Result<T>
// either way). Includes no MLIR, LLVM or internal ein header.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define EIN_API_EXCEPTIONS 1
#else
#define EIN_API_EXCEPTIONS 0
#endif

namespace ein::api {

/// The element types of the language (docs/language.md §3); f16, bf16 and
/// the fp8 types are stored as their raw bits.
enum class DType : uint8_t {
  F64,
  F32,
  F16,
  BF16,
  F8E4M3,
  F8E5M2,
  I64,
  I32,
  Bool,
  I8
};

/// The dtypes by their language names: `ein::f32`, `ein::bf16`, ...
inline constexpr DType f64 = DType::F64;
inline constexpr DType f32 = DType::F32;
inline constexpr DType f16 = DType::F16;
inline constexpr DType bf16 = DType::BF16;
inline constexpr DType f8e4m3 = DType::F8E4M3;
inline constexpr DType f8e5m2 = DType::F8E5M2;
inline constexpr DType i64 = DType::I64;
inline constexpr DType i32 = DType::I32;
/// `bool` (one byte per element, 0 or 1, as numpy's bool_).
inline constexpr DType bool_ = DType::Bool;
/// `i8` (signed bytes; einsum over them accumulates in `acc=i32`).
inline constexpr DType i8 = DType::I8;

/// Bytes per element: 8 4 2 2 1 1 8 4 1 1.
constexpr unsigned itemsize(DType t) {
  constexpr unsigned bytes[] = {8, 4, 2, 2, 1, 1, 8, 4, 1, 1};
  return bytes[static_cast<unsigned>(t)];
}
/// The language's name of `t`: "f32", "bf16", "bool", ...
constexpr const char *name(DType t) {
  constexpr const char *names[] = {"f64",    "f32", "f16", "bf16", "f8e4m3",
                                   "f8e5m2", "i64", "i32", "bool", "i8"};
  return names[static_cast<unsigned>(t)];
}

/// The C++ element type of a dtype whose elements are C++ numbers.
template <class T> struct dtype_of;
template <> struct dtype_of<double> { static constexpr DType value = f64; };
template <> struct dtype_of<float> { static constexpr DType value = f32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = i64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = i32; };
template <> struct dtype_of<bool> { static constexpr DType value = bool_; };
template <> struct dtype_of<int8_t> { static constexpr DType value = i8; };

/// Where a tensor's storage lives: host memory, or the CUDA device (this
/// machine's GPU; with EIN_CUDA=emulated, the CUDA back end's code run on
/// the CPU over host memory, as CI tests it).
enum class Device : uint8_t { CPU, CUDA };
inline constexpr Device cpu = Device::CPU;
inline constexpr Device cuda = Device::CUDA;

/// The device's name, as messages and torch say it: "cpu", "cuda".
constexpr const char *name(Device d) {
  switch (d) {
  case Device::CPU:
    return "cpu";
  case Device::CUDA:
    return "cuda";
  }
  return "";
}

/// The reductions of `reduce` (docs/language.md §6).
/// `var` is the population variance (numpy's default ddof=0), float only.
enum class Reduction : uint8_t { Sum, Mean, Max, Min, Prod, Any, All, Var };
inline constexpr Reduction sum = Reduction::Sum;
inline constexpr Reduction mean = Reduction::Mean;
inline constexpr Reduction max = Reduction::Max;
inline constexpr Reduction min = Reduction::Min;
inline constexpr Reduction prod = Reduction::Prod;
inline constexpr Reduction any = Reduction::Any;
inline constexpr Reduction all = Reduction::All;
inline constexpr Reduction var = Reduction::Var;

/// Axis sizes given by name, as einops' keyword sizes: `{{"h", 8}}`.
using Sizes = std::vector<std::pair<std::string, int64_t>>;

/// What went wrong, as `einc` reports it: the kind decides einc's exit code
/// (1 for a program or pattern, 2 for inputs that do not fit it).
struct ErrorInfo {
  enum class Kind : uint8_t { Program = 1, Usage = 2 };
  Kind kind = Kind::Program;
  /// The whole diagnostic: `error: MESSAGE`, then the pattern (or source
  /// line) with a caret under the culprit, then notes, as einc prints it.
  std::string message;
};

/// The error of the throwing forms: what() is ErrorInfo::message.
class Error : public std::exception {
public:
  /// The error of `info`.
  explicit Error(ErrorInfo info) : info_(std::move(info)) {}
  /// The whole diagnostic text.
  const char *what() const noexcept override { return info_.message.c_str(); }
  /// The error as the non-throwing forms return it.
  const ErrorInfo &info() const noexcept { return info_; }

private:
  ErrorInfo info_;
};

/// Throws `info` as an ein::Error; without exceptions, prints it and aborts
/// (as std::vector::at does): use the `nothrow` forms there.
[[noreturn]] inline void raise(ErrorInfo info) {
#if EIN_API_EXCEPTIONS
  throw Error(std::move(info));
#else
  std::fprintf(stderr, "%s\n", info.message.c_str());
  std::abort();
#endif
}

/// A value or the error that stopped it (an expected-like type for code
/// built without exceptions).
template <class T> class Result {
public:
  /// A value.
  Result(T value) : v_(std::move(value)) {}
  /// An error.
  Result(ErrorInfo error) : v_(std::move(error)) {}
  /// Whether it holds a value.
  bool has_value() const { return v_.index() == 0; }
  /// has_value().
  explicit operator bool() const { return has_value(); }
  /// The value; raises the error when there is none.
  T &value() & {
    if (!has_value())
      raise(error());
    return std::get<0>(v_);
  }
  T &&value() && {
    if (!has_value())
      raise(error());
    return std::get<0>(std::move(v_));
  }
  const T &value() const & {
    if (!has_value())
      raise(error());
    return std::get<0>(v_);
  }
  /// value(), as an expected-like type spells it.
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  /// The error; meaningful only when !has_value().
  const ErrorInfo &error() const { return std::get<1>(v_); }

private:
  std::variant<T, ErrorInfo> v_;
};

/// Success or the error that stopped it.
template <> class Result<void> {
public:
  /// Success.
  Result() = default;
  /// An error.
  Result(ErrorInfo error) : error_(std::move(error)), ok_(false) {}
  /// Whether it succeeded.
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  /// Raises the error, if any.
  void value() const {
    if (!ok_)
      raise(error_);
  }
  const ErrorInfo &error() const { return error_; }

private:
  ErrorInfo error_;
  bool ok_ = true;
};

} // namespace ein::api
