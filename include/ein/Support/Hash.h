// FNV-1a, 64 bits: the one hash of bytes that is the same on every host and
// standard library (std::hash is not), for start-up checks between ranks,
// seeded streams, guards and checksums.
#pragma once

#include <cstdint>
#include <string_view>

namespace ein {

/// FNV-1a's offset basis: the hash of no bytes.
inline constexpr uint64_t fnv1aBasis = 0xcbf29ce484222325ull;

/// FNV-1a of `bytes`, continuing from `hash` (so that the hash of a
/// concatenation can be taken piece by piece).
inline uint64_t fnv1a(std::string_view bytes, uint64_t hash = fnv1aBasis) {
  for (char c : bytes)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}

} // namespace ein
