// Overflow-checked 128-bit integers for sizes and FLOP counts (GPT-3 scale is ~3e23).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ein {

/// Sizes and counts are 128-bit so that 1e23-scale FLOP counts stay exact.
using Int = __int128;

/// Returns nullopt on overflow.
std::optional<Int> checkedAdd(Int a, Int b);
std::optional<Int> checkedMul(Int a, Int b);

/// Decimal rendering of a 128-bit integer.
std::string toString(Int value);

/// Parses a non-negative decimal integer; nullopt if malformed or too large.
std::optional<Int> parseInt(const std::string &text);

/// Lossy conversion for ratios such as arithmetic intensity.
inline double toDouble(Int value) { return static_cast<double>(value); }

} // namespace ein
