// Reading and writing numpy .npz archives (np.savez, np.savez_compressed) as
// named HostTensors. MLIR-free, exception-free: every failure is an
// ein::Error of kind Usage whose message starts with the file's path (and
// names the member when one is at fault).
//
// The format: a ZIP archive whose members are `NAME.npy` files, one per
// array. Reading goes by the central directory (not by scanning local
// headers), ZIP64 included (numpy writes ZIP64 extra fields), and checks
// every offset and size against the file's size: the end record is found
// exactly (its comment runs to the end of the file), the central directory
// lies between the members and the end record, each member's local header
// agrees with its central entry (name, method, no encryption) and members do
// not overlap. Members must be stored (method 0, np.savez) or deflated
// (method 8, np.savez_compressed); a member's uncompressed bytes must match
// its size and CRC-32 exactly, and each is an .npy file (Npy.h's reader, its
// checks and dtype conversions). Refused by name: encrypted members, other
// compression methods, multi-disk archives, duplicate names, members whose
// name does not end in ".npy", an archive bigger than the limit
// (hostMemoryBytes by default) or members whose total uncompressed size is.
// An archive is read from its end, so it must be a regular file (a pipe or
// device is refused).
//
// Writing gives what np.load reads: one stored member `NAME.npy` per tensor
// in the order given (the bytes of Npy.h's writer: bf16 and fp8 widened to
// f32, C order), correct CRC-32s, a fixed timestamp (1980-01-01, so the same
// tensors give the same bytes), ZIP64 records where a size, an offset or the
// member count needs them (or everywhere with `zip64`), written through the
// rules of OutputFiles.h.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Runtime/OutputFiles.h"
#include "ein/Runtime/SafeTensors.h" // NamedTensor

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ein {
namespace runtime {

/// One array of an .npz archive.
struct NpzEntry {
  std::string name; // the array's name: the member's, less ".npy"
  bool deflated = false;
  std::string descr; // its .npy header's dtype: "<f4"
  std::vector<int64_t> shape;
  /// Where the member's uncompressed .npy bytes are: in Npz::bytes (stored)
  /// or in Npz::inflated[inflatedIndex] (deflated).
  uint64_t offset = 0, size = 0;
  size_t inflatedIndex = 0;
};

/// An .npz archive read whole and checked.
struct Npz {
  std::string path;                           // for messages
  std::vector<NpzEntry> entries;              // in central directory order
  std::vector<uint8_t> bytes;                 // the archive
  std::vector<std::vector<uint8_t>> inflated; // deflated members, unpacked

  const NpzEntry *find(const std::string &name) const;
  /// The array `name`, converted to `want` when given (readNpy's rules). An
  /// error names the file and the member.
  ErrorOr<HostTensor>
  tensor(const std::string &name,
         std::optional<StorageType> want = std::nullopt) const;
};

/// Reads and checks the .npz archive at `path` (see above).
ErrorOr<Npz> readNpz(const std::string &path);
/// As above with an explicit limit in bytes on the archive's size and on
/// its members' total uncompressed size (for tests).
ErrorOr<Npz> readNpz(const std::string &path, uint64_t maxBytes);
/// Parses .npz bytes held in memory; `name` is used in messages.
ErrorOr<Npz> parseNpz(std::vector<uint8_t> bytes, const std::string &name,
                      uint64_t maxBytes);
ErrorOr<Npz> parseNpz(std::vector<uint8_t> bytes, const std::string &name);

/// The bytes of an .npz archive holding `tensors` (names unique, non-empty,
/// UTF-8); `zip64` writes ZIP64 records even where they are not needed.
ErrorOr<std::vector<uint8_t>>
serializeNpz(const std::vector<NamedTensor> &tensors, bool zip64 = false);

/// Writes serializeNpz's bytes to `fd`, a member at a time (no path in
/// messages).
ErrorOr<void> writeNpzTo(int fd, const std::vector<NamedTensor> &tensors,
                         bool zip64 = false);

/// Writes serializeNpz's bytes to `path` by the rules of OutputFiles.h.
ErrorOr<void> writeNpz(const std::string &path,
                       const std::vector<NamedTensor> &tensors);

/// Whether `path` names an .npz archive by its extension (".npz").
bool isNpzPath(const std::string &path);

} // namespace runtime
} // namespace ein
