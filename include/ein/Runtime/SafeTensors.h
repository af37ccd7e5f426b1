// Reading and writing safetensors files (the weights format of the ML
// ecosystem: huggingface/safetensors) as named HostTensors. MLIR-free,
// exception-free: every failure is an ein::Error of kind Usage whose message
// starts with the file's path.
//
// The format: an 8-byte little-endian header size N, N bytes of a JSON
// object, then the data. The object maps each tensor's name to
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]} (byte
// offsets into the data), and the optional key "__metadata__" to an object
// of string values.
//
// Reading is at least as strict as the reference implementation: the header
// is at most 100,000,000 bytes of UTF-8 starting with '{', a JSON object
// with no duplicate key and no unknown field; each tensor's END - BEGIN is
// its element count times its dtype's size; the tensors, taken in offset
// order, tile the data exactly (no gap, no overlap, nothing after the last).
// A data size above the limit (hostMemoryBytes by default) is refused before
// anything is allocated, and a pipe or device is read no further than the
// header promises plus one byte. Every dtype of the format is understood;
// a tensor of a dtype ein has no type for (U8, I16, ...) can be listed but
// not read as a tensor.
//
// Writing gives what the `safetensors` Python package reads: tensors in the
// order given, C order, their data contiguous from offset 0, the header
// padded with spaces to a multiple of 8 bytes, through the rules of
// OutputFiles.h (atomic replacement; several outputs all replaced or none).
// bf16 and fp8 tensors are written as themselves (BF16, F8_E4M3, F8_E5M2).
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Runtime/OutputFiles.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ein {
namespace runtime {

/// One tensor of a safetensors file, as its header describes it.
struct SafeTensorsEntry {
  std::string name;
  std::string dtype;               // the format's spelling: "F32", "U8"
  std::optional<StorageType> type; // ein's type, when it has one
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; // byte range in the data
};

/// A safetensors file read whole: its entries in header order, its metadata
/// in header order, and its data.
struct SafeTensors {
  std::string path; // for messages
  std::vector<SafeTensorsEntry> entries;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<uint8_t> data;

  const SafeTensorsEntry *find(const std::string &name) const;
  /// The tensor `name`, converted to `want` when given (convertTensor's
  /// rules: exact widenings, rounding to a narrower float, value-checked
  /// narrowing). An error names the file and the tensor.
  ErrorOr<HostTensor>
  tensor(const std::string &name,
         std::optional<StorageType> want = std::nullopt) const;
};

/// Reads and checks the safetensors file at `path` (see above).
ErrorOr<SafeTensors> readSafeTensors(const std::string &path);
/// As above with an explicit limit on the data size in bytes (for tests).
ErrorOr<SafeTensors> readSafeTensors(const std::string &path,
                                     uint64_t maxDataBytes);
/// Parses safetensors bytes held in memory; `name` is used in messages.
ErrorOr<SafeTensors> parseSafeTensors(const std::vector<uint8_t> &bytes,
                                      const std::string &name);

/// A tensor to write and its name.
struct NamedTensor {
  std::string name;
  const HostTensor *tensor;
};

/// The bytes of a safetensors file holding `tensors` (names unique,
/// non-empty, not "__metadata__") and `metadata`.
ErrorOr<std::vector<uint8_t>> serializeSafeTensors(
    const std::vector<NamedTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata = {});

/// Writes serializeSafeTensors' bytes to `fd` (no path in messages).
ErrorOr<void> writeSafeTensorsTo(
    int fd, const std::vector<NamedTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata = {});

/// Writes serializeSafeTensors' bytes to `path` by the rules of
/// OutputFiles.h.
ErrorOr<void> writeSafeTensors(
    const std::string &path, const std::vector<NamedTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata = {});

/// Whether `path` names a safetensors file by its extension
/// (".safetensors"), as `einc run` tells its inputs and outputs apart.
bool isSafeTensorsPath(const std::string &path);

} // namespace runtime
} // namespace ein
