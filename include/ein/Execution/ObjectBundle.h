// The file format of several object files in one (the JIT's disk cache
// entry): written and read whole, every length and a checksum checked.
#pragma once

#include "ein/Support/Error.h"

#include <string>
#include <string_view>
#include <vector>

namespace ein {

/// `objects` in one byte string: the magic "EINOBJS1", the count and each
/// object's size (little-endian u64), the objects, and an FNV-1a 64 checksum
/// of all that precedes it.
std::string packObjects(const std::vector<std::string> &objects);

/// The objects of a packed string, views into `bytes`. A truncated, padded
/// or altered string (a cache file cut short by a full disk, or written
/// over) is an error naming what does not fit, never a read out of bounds.
ErrorOr<std::vector<std::string_view>> unpackObjects(std::string_view bytes);

} // namespace ein
