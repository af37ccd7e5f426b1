// Host-side tensors for running compiled .ein functions: an element storage
// type, a shape and dense little-endian bytes in C order (row-major) or in
// another dense layout given by element strides (Fortran order, as readNpy
// keeps column-major files).
// MLIR-free; no exceptions: fallible operations return ein::ErrorOr
// (ein/Support/Error.h) with an error of kind Usage, since what fails here
// is run-time input or output named on the command line (exit 2).
#pragma once

#include "ein/Shape/Shape.h"
#include "ein/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ein {
namespace runtime {

/// How elements are stored: the language's dtypes plus `Bool` (one byte,
/// 0 or 1) for numpy bool inputs. bf16 is stored as its raw 16 bits, fp8 as
/// its raw byte.
/// Generated from DTypes.def, so its values are DType's (toStorage and
/// toDType are value casts, checked row by row in HostTensor.cpp).
enum class StorageType {
#define EIN_DTYPE(Enum, ...) Enum,
#include "ein/Shape/DTypes.def"
};

/// Bytes per element: 8 4 2 2 1 1 8 4 1.
unsigned storageBytes(StorageType type);
/// "f64" "f32" "f16" "bf16" "f8e4m3" "f8e5m2" "i64" "i32" "bool".
const char *storageName(StorageType type);
/// Inverse of storageName.
std::optional<StorageType> parseStorageType(const std::string &name);
StorageType toStorage(DType type);
/// Always a dtype: every storage type is one (bool included).
std::optional<DType> toDType(StorageType type);
bool isFloatStorage(StorageType type);

/// Element count of `shape`, or nullopt if a dim is negative or the count
/// (or the byte size for `elementBytes`) overflows int64. As in numpy, the
/// product of the nonzero dims must fit even when some dim is zero.
std::optional<int64_t> checkedNumElements(const std::vector<int64_t> &shape,
                                          unsigned elementBytes = 1);
/// The most memory one tensor may take: the machine's physical memory
/// (sysconf(_SC_PHYS_PAGES) * _SC_PAGE_SIZE), or the cgroup v2 memory limit
/// when that is smaller; UINT64_MAX when neither is known. readNpy, einc run
/// and HostTensor::create refuse sizes beyond it.
uint64_t hostMemoryBytes();
/// "(2, 3)", "()", "(5,)": numpy's repr of a shape tuple.
std::string shapeTupleStr(const std::vector<int64_t> &shape);

/// Element strides of `shape` in C order (last dim 1) and in Fortran order
/// (first dim 1: 1, n0, n0*n1, ...). A zero dim counts as 1, so strides stay
/// distinct for zero-size tensors.
std::vector<int64_t> cOrderStrides(const std::vector<int64_t> &shape);
std::vector<int64_t> fortranStrides(const std::vector<int64_t> &shape);

/// A dense tensor in host memory: little-endian elements, in C order unless
/// `layoutStrides` says otherwise.
///
/// The layout is always dense: `data` holds exactly numElements() elements,
/// and, taken in increasing order, the strides of the dims of size > 1 are 1
/// and the running products of those dims' sizes (a permutation of a C-order
/// layout: Fortran order is one). Strides of dims of size 1 are any
/// non-negative number. Invariant (for tensors made by create, readNpy,
/// convertTensor, toCOrder): isConsistent().
///
/// Which functions take a tensor in any layout: strides(), byteStrides(),
/// isCOrder(), offsetOf(), indexAt(), toCOrder(), elementAsDouble() (by
/// C-order index), convertTensor() (keeps the layout), serializeNpy /
/// writeNpyTo / writeNpyOutputs / writeNpy (write C order, through a C-order
/// copy when needed) and JITFunction::call (passes the strides to the
/// compiled code, which takes any non-negative strides).
/// `data` and dataAs<T>() are the raw storage: index them by storage offset
/// (offsetOf), or take toCOrder() first.
struct HostTensor {
  StorageType type = StorageType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  /// Element strides, one per dim, when the layout is not C order (readNpy
  /// sets Fortran strides for Fortran-ordered files of rank >= 2); empty
  /// means C order.
  std::vector<int64_t> layoutStrides;

  /// A zero-filled C-order tensor; fails on a negative dim or an element
  /// count / byte size that does not fit in int64.
  static ErrorOr<HostTensor> create(StorageType type,
                                    std::vector<int64_t> shape);

  unsigned elementBytes() const { return storageBytes(type); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// Product of the dims (1 for a 0-d tensor). Assumes a valid shape.
  int64_t numElements() const;
  /// numElements() * elementBytes().
  size_t byteSize() const;
  /// The strides in elements: layoutStrides when set, otherwise C order
  /// (cOrderStrides).
  std::vector<int64_t> strides() const;
  /// strides() in bytes.
  std::vector<int64_t> byteStrides() const;
  /// Whether `data` holds the elements in C order: no layoutStrides, or
  /// strides that are C order on every dim of size > 1, or no elements (as
  /// numpy's C_CONTIGUOUS flag).
  bool isCOrder() const;
  /// Whether data.size() matches the shape and type, and the layout is a
  /// dense one (see above).
  bool isConsistent() const;
  /// Storage offset in elements (into `data`) of the element whose C-order
  /// linear index is `index` (numpy's x.flat[index]). Assumes isConsistent()
  /// and 0 <= index < numElements().
  int64_t offsetOf(int64_t index) const;
  /// The inverse of offsetOf: the C-order linear index of the element at
  /// storage offset `offset`. Assumes isConsistent().
  int64_t indexAt(int64_t offset) const;
  /// The same tensor in C order (no layoutStrides): a copy of the data,
  /// reordered unless isCOrder(). Assumes isConsistent().
  HostTensor toCOrder() const;

  template <typename T> T *dataAs() {
    return reinterpret_cast<T *>(data.data());
  }
  template <typename T> const T *dataAs() const {
    return reinterpret_cast<const T *>(data.data());
  }

  /// "f32[2, 3]", "bool[]".
  std::string describe() const;
};

/// Converts `src` to `to`, element by element in storage order: the result
/// has `src`'s layout. Allowed conversions:
///  * identity;
///  * exact widenings: f16/bf16/fp8 -> f32/f64, fp8 -> f16/bf16, f32 -> f64,
///    i32 -> i64;
///  * f32 -> f16 / bf16 / f8e4m3 / f8e5m2, rounding to nearest even (see
///    FloatConvert.h for overflow and NaN);
///  * value-checked narrowings f64 -> f32 and i64 -> i32, which fail (naming
///    the first offending element in C order, by its C-order index) unless
///    every element converts exactly (NaN and +-inf convert as themselves).
/// Anything else (int <-> float, bool <-> anything, f64 -> f16, ...) fails.
ErrorOr<HostTensor> convertTensor(const HostTensor &src, StorageType to);

/// Element `index` (C-order linear, in any layout) as a double; exact for
/// every type but i64 beyond 2^53. For tests and printing.
double elementAsDouble(const HostTensor &t, int64_t index);
/// The element of storage type `type` stored at `p` as a double (16-bit and
/// fp8 floats decoded, bool as 0 or 1); exact for every type but i64 beyond
/// 2^53. elementAsDouble reads through it.
double decodeElement(const void *p, StorageType type);

/// For error messages of loops that run in storage order: given that the
/// element at storage offset `found` is `bad`, the C-order index of the
/// first element in C order whose storage offset is `bad` (`found`'s own
/// index when `t` is in C order; otherwise a scan in C order).
int64_t firstInCOrder(const HostTensor &t, int64_t found,
                      const std::function<bool(int64_t offset)> &bad);

} // namespace runtime
} // namespace ein
