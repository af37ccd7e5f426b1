// Host-side tensors for running compiled .ein functions: an element storage
// type, a shape and contiguous C-order (row-major) little-endian bytes.
// MLIR-free; no exceptions: fallible operations return Result / Status.
#pragma once

#include "ein/Shape/Shape.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ein {
namespace runtime {

/// How elements are stored: the language's dtypes plus `Bool` (one byte,
/// 0 or 1) for numpy bool inputs. bf16 is stored as its raw 16 bits, fp8 as
/// its raw byte.
enum class StorageType { F64, F32, F16, BF16, F8E4M3, F8E5M2, I64, I32, Bool };

/// Bytes per element: 8 4 2 2 1 1 8 4 1.
unsigned storageBytes(StorageType type);
/// "f64" "f32" "f16" "bf16" "f8e4m3" "f8e5m2" "i64" "i32" "bool".
const char *storageName(StorageType type);
/// Inverse of storageName.
std::optional<StorageType> parseStorageType(const std::string &name);
StorageType toStorage(DType type);
/// nullopt for Bool.
std::optional<DType> toDType(StorageType type);
bool isFloatStorage(StorageType type);

/// An error message (no exceptions in this code base).
struct RuntimeError {
  std::string message;
};

/// A value or an error message.
template <typename T> class Result {
public:
  Result(T value) : storage(std::move(value)) {}
  Result(RuntimeError error) : storage(std::move(error)) {}
  static Result failure(std::string message) {
    return Result(RuntimeError{std::move(message)});
  }
  bool ok() const { return storage.index() == 0; }
  explicit operator bool() const { return ok(); }
  T &operator*() { return std::get<0>(storage); }
  const T &operator*() const { return std::get<0>(storage); }
  T *operator->() { return &std::get<0>(storage); }
  const T *operator->() const { return &std::get<0>(storage); }
  /// Only valid when !ok().
  const std::string &error() const { return std::get<1>(storage).message; }

private:
  std::variant<T, RuntimeError> storage;
};

/// Success, or an error message.
class Status {
public:
  static Status success() { return Status(); }
  static Status failure(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }
  bool ok() const { return !failed; }
  /// Empty on success.
  const std::string &error() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

/// Element count of `shape`, or nullopt if a dim is negative or the count
/// (or the byte size for `elementBytes`) overflows int64. As in numpy, the
/// product of the nonzero dims must fit even when some dim is zero.
std::optional<int64_t> checkedNumElements(const std::vector<int64_t> &shape,
                                          unsigned elementBytes = 1);
/// This machine's physical memory in bytes; nullopt when unknown.
std::optional<uint64_t> physicalMemoryBytes();
/// "(2, 3)", "()", "(5,)": numpy's repr of a shape tuple.
std::string shapeTupleStr(const std::vector<int64_t> &shape);

/// A dense tensor in host memory: C order, little-endian elements.
/// Invariant (for tensors made by create/readNpy/convertTensor):
/// data.size() == numElements() * storageBytes(type).
struct HostTensor {
  StorageType type = StorageType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// A zero-filled tensor; fails on a negative dim or an element count /
  /// byte size that does not fit in int64.
  static Result<HostTensor> create(StorageType type,
                                   std::vector<int64_t> shape);

  unsigned elementBytes() const { return storageBytes(type); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// Product of the dims (1 for a 0-d tensor). Assumes a valid shape.
  int64_t numElements() const;
  /// numElements() * elementBytes().
  size_t byteSize() const;
  /// C-order strides in elements (last dim 1); a zero dim counts as 1, so
  /// strides stay distinct for zero-size tensors.
  std::vector<int64_t> strides() const;
  /// C-order strides in bytes.
  std::vector<int64_t> byteStrides() const;
  /// Whether data.size() matches the shape and type.
  bool isConsistent() const;

  template <typename T> T *dataAs() {
    return reinterpret_cast<T *>(data.data());
  }
  template <typename T> const T *dataAs() const {
    return reinterpret_cast<const T *>(data.data());
  }

  /// "f32[2, 3]", "bool[]".
  std::string describe() const;
};

/// Converts `src` to `to`. Allowed conversions:
///  * identity;
///  * exact widenings: f16/bf16/fp8 -> f32/f64, fp8 -> f16/bf16, f32 -> f64,
///    i32 -> i64;
///  * f32 -> f16 / bf16 / f8e4m3 / f8e5m2, rounding to nearest even (see
///    FloatConvert.h for overflow and NaN);
///  * value-checked narrowings f64 -> f32 and i64 -> i32, which fail (naming
///    the first offending element) unless every element converts exactly
///    (NaN and +-inf convert as themselves).
/// Anything else (int <-> float, bool <-> anything, f64 -> f16, ...) fails.
Result<HostTensor> convertTensor(const HostTensor &src, StorageType to);

/// Element `index` (C-order linear) as a double; exact for every type but
/// i64 beyond 2^53. For tests and printing.
double elementAsDouble(const HostTensor &t, int64_t index);

} // namespace runtime
} // namespace ein
