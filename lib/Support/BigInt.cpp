// Overflow-checked 128-bit arithmetic and decimal conversion.
#include "ein/Support/BigInt.h"

#include <algorithm>

namespace ein {

std::optional<Int> checkedAdd(Int a, Int b) {
  Int r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

std::optional<Int> checkedMul(Int a, Int b) {
  Int r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

std::string toString(Int value) {
  if (value == 0)
    return "0";
  bool negative = value < 0;
  // Work with negative numbers so that the minimum value does not overflow.
  Int v = negative ? value : -value;
  std::string digits;
  while (v != 0) {
    digits.push_back(static_cast<char>('0' - static_cast<int>(v % 10)));
    v /= 10;
  }
  if (negative)
    digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::optional<Int> parseInt(const std::string &text) {
  if (text.empty() || text.size() > 40)
    return std::nullopt;
  Int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    auto mul = checkedMul(value, 10);
    if (!mul)
      return std::nullopt;
    auto add = checkedAdd(*mul, c - '0');
    if (!add)
      return std::nullopt;
    value = *add;
  }
  return value;
}

} // namespace ein
