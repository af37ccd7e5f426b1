// Reading and writing numpy .npy files (format versions 1.0, 2.0, 3.0) as
// HostTensors. MLIR-free, exception-free: every failure is an ein::Error of
// kind Usage (HostTensor.h) whose message starts with the file's path.
//
// Reading checks the magic, the version and the header (at most 1 MiB)
// first, then reads exactly the data bytes the header promises straight
// into the tensor: a regular file's size must match before any data is
// read, a data size beyond the machine's memory (hostMemoryBytes) is refused
// before anything is allocated, and a pipe or device is read no further than
// the promised bytes plus one (an endless FIFO or /dev/zero fails at once).
//
// Reading accepts these descrs ('<' little-endian, '|' or '=' where the byte
// order does not matter or is native; '>' on a multi-byte type is rejected):
//
//   descr      natural type   also readable as (`want`)
//   <f8        f64            f32 (value-checked: every element exact)
//   <f4        f32            f64 (exact); f16 / bf16 / f8e4m3 / f8e5m2,
//                             rounded to nearest even (FloatConvert.h)
//   <f2        f16            f32, f64 (exact)
//   <i8        i64            i32 (value-checked: every element in range)
//   <i4        i32            i64
//   |b1        bool           -
//   <u2        (none)         bf16 only: the raw bf16 bit patterns
//   |u1        (none)         f8e4m3 / f8e5m2 only: the raw fp8 bit patterns
//
// With no `want` a file is read as its natural type (u2/u1 then fail: say
// which type their bits are). Fortran-order data of rank >= 2 is kept as it
// is, not transposed: the tensor gets Fortran strides (HostTensor::
// layoutStrides = 1, n0, n0*n1, ...), also when converted to `want`
// (convertTensor keeps the layout). 0-d arrays (shape ()) and zero-size dims
// are supported. Everything else (big-endian, complex, object, strings,
// structured, other ints, a truncated or oversized file, a malformed header,
// a shape whose size overflows int64) is an error.
//
// Writing emits exactly what numpy's np.save does for the same array in C
// order: version 1.0 (2.0 if the header needs more than 65535 bytes), C order
// (a tensor in another layout is written through a C-order copy, as
// np.save(path, np.ascontiguousarray(x))), little-endian, header
// padded with spaces to a multiple of 64 bytes. bf16 and fp8 tensors are
// written as <f4 (exact widening), bool as |b1. Files are written by the
// rules of OutputFiles.h: symbolic links written through, FIFOs and devices
// written directly, existing files replaced atomically keeping their mode,
// read-only files and directories refused, and several outputs all replaced
// or none.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Runtime/OutputFiles.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ein {
namespace runtime {

/// Reads the .npy file at `path`, converting to `want` when given (see the
/// table above). The header is read and checked first, then exactly the data
/// bytes it promises: a data size above hostMemoryBytes() is refused before
/// anything is allocated, and pipes and devices (a FIFO, /dev/zero) are
/// never read further than the header promises plus one byte.
ErrorOr<HostTensor> readNpy(const std::string &path,
                            std::optional<StorageType> want = std::nullopt);
/// As above with an explicit limit on the data size in bytes (for tests).
ErrorOr<HostTensor> readNpy(const std::string &path,
                            std::optional<StorageType> want,
                            uint64_t maxDataBytes);

/// A .npy file's preamble and header dict, as read before any data.
struct NpyHeader {
  /// The dtype string as written: "<f4", "|u1", ...
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  /// Bytes before the first data byte (magic, version, length, header).
  uint64_t dataOffset = 0;
};

/// Parses the preamble and header dict at the start of the `size` bytes at
/// `bytes` (a whole file, or at least its header; a memory-mapped file is
/// read no further than its header). Checks the magic, the version and the
/// header's syntax only: not the descr, the shape's size or the data size.
/// Errors start with `name`.
ErrorOr<NpyHeader> parseNpyHeader(const uint8_t *bytes, size_t size,
                                  const std::string &name);

/// Parses .npy bytes held in memory; `name` is used in error messages.
ErrorOr<HostTensor> parseNpy(const std::vector<uint8_t> &bytes,
                             const std::string &name,
                             std::optional<StorageType> want = std::nullopt);
/// As above for the `size` bytes at `bytes` (an .npz member in place).
ErrorOr<HostTensor> parseNpy(const uint8_t *bytes, size_t size,
                             const std::string &name,
                             std::optional<StorageType> want = std::nullopt);

/// Serialises `tensor` as .npy bytes (see above). Fails if the tensor's data
/// does not match its shape.
ErrorOr<std::vector<uint8_t>> serializeNpy(const HostTensor &tensor);

/// Writes `tensor`'s .npy bytes to `fd` (no path in error messages).
ErrorOr<void> writeNpyTo(int fd, const HostTensor &tensor);

/// Writes `tensors[i]` to `plan.targets[i]` by the rules of OutputFiles.h:
/// all files replaced, or none.
ErrorOr<void> writeNpyOutputs(const OutputPlan &plan,
                              const std::vector<const HostTensor *> &tensors);

/// writeNpyOutputs for one path (planOutputs included).
ErrorOr<void> writeNpy(const std::string &path, const HostTensor &tensor);

} // namespace runtime
} // namespace ein
