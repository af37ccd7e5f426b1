// Bit-exact f32 <-> f16 / bf16 / f8e4m3fn / f8e5m2 conversions. See the
// header for the conventions.
#include "ein/Runtime/FloatConvert.h"

#include <cstring>

namespace ein {
namespace runtime {

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

namespace {

/// A binary floating-point format narrower than f32.
struct Format {
  unsigned expBits;
  unsigned manBits;
  int bias;
  /// true: IEEE-like (all-ones exponent is inf/NaN). false: the "FN"
  /// convention of f8e4m3fn (no inf; only S.1111.111 is NaN).
  bool ieee;
};

constexpr Format kF16{5, 10, 15, true};
constexpr Format kBF16{8, 7, 127, true};
constexpr Format kE4M3{4, 3, 7, false};
constexpr Format kE5M2{5, 2, 15, true};

/// f32 -> `fmt`, round to nearest even. Returns the bit pattern in the low
/// 1 + expBits + manBits bits.
uint32_t narrow(float value, const Format &fmt) {
  const uint32_t bits = floatBits(value);
  const uint32_t sign = (bits >> 31) << (fmt.expBits + fmt.manBits);
  const uint32_t exp32 = (bits >> 23) & 0xFF;
  const uint32_t man32 = bits & 0x7FFFFF;
  const uint32_t expMask = (1u << fmt.expBits) - 1;
  const uint32_t manMask = (1u << fmt.manBits) - 1;
  // The largest finite magnitude, and what to return beyond it.
  uint32_t maxFinite, overflow;
  if (fmt.ieee) {
    maxFinite = ((expMask - 1) << fmt.manBits) | manMask;
    overflow = expMask << fmt.manBits; // infinity
  } else {
    maxFinite = (expMask << fmt.manBits) | (manMask - 1);
    overflow = (expMask << fmt.manBits) | manMask; // NaN
  }

  if (exp32 == 0xFF) {
    if (man32 == 0) // infinity
      return sign | overflow;
    if (!fmt.ieee) // the one NaN
      return sign | (expMask << fmt.manBits) | manMask;
    uint32_t payload = man32 >> (23 - fmt.manBits);
    if (payload == 0)
      payload = 1;
    return sign | (expMask << fmt.manBits) | payload;
  }

  // value = sig * 2^(e - 23).
  int e;
  uint32_t sig;
  if (exp32 == 0) {
    if (man32 == 0)
      return sign; // signed zero
    e = -126;
    sig = man32;
  } else {
    e = static_cast<int>(exp32) - 127;
    sig = man32 | 0x800000;
  }

  // Target biased exponent. In the normal range the implicit bit of `sig`
  // lands on bit manBits and carries into the exponent field, so
  // ((te - 1) << manBits) + (sig >> shift) encodes both normals and (for an
  // f32 subnormal feeding bf16) subnormals. Below it, shift further so that
  // the result is in units of the smallest subnormal.
  const int te = e + fmt.bias;
  unsigned shift = 23 - fmt.manBits;
  uint32_t base = 0;
  if (te >= 1)
    base = static_cast<uint32_t>(te - 1) << fmt.manBits;
  else
    shift += static_cast<unsigned>(1 - te);
  if (shift > 24) // sig < 2^24 <= half an ulp: rounds to zero
    return sign;

  uint32_t q = base + (sig >> shift);
  const uint32_t rem = sig & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    ++q; // may carry into the exponent: that is the right answer

  if (q > maxFinite)
    return sign | overflow;
  return sign | q;
}

/// `fmt` bit pattern -> f32, exactly.
float widen(uint32_t bits, const Format &fmt) {
  const unsigned width = 1 + fmt.expBits + fmt.manBits;
  const uint32_t sign = ((bits >> (width - 1)) & 1) << 31;
  const uint32_t expMask = (1u << fmt.expBits) - 1;
  const uint32_t manMask = (1u << fmt.manBits) - 1;
  const uint32_t exp = (bits >> fmt.manBits) & expMask;
  const uint32_t man = bits & manMask;

  if (exp == expMask) {
    if (fmt.ieee) {
      // inf (man == 0) or NaN with the payload shifted into place.
      return floatFromBits(sign | 0x7F800000 | (man << (23 - fmt.manBits)));
    }
    if (man == manMask)
      return floatFromBits(sign | 0x7FC00000);
  }
  if (exp == 0) {
    // Subnormal or zero: man * 2^(1 - bias - manBits); exact in f32.
    uint32_t magBits;
    if (man == 0) {
      magBits = 0;
    } else {
      // Normalise: find the leading one.
      int lead = 31 - __builtin_clz(man);
      int e = 1 - fmt.bias - static_cast<int>(fmt.manBits) + lead;
      uint32_t frac = (man << (23 - lead)) & 0x7FFFFF;
      if (e >= -126) {
        magBits = (static_cast<uint32_t>(e + 127) << 23) | frac;
      } else {
        // Only reachable for bf16 (f32-subnormal range): keep it as a
        // subnormal, which is a plain shift.
        magBits = man << (23 - fmt.manBits);
      }
    }
    return floatFromBits(sign | magBits);
  }
  const uint32_t exp32 =
      static_cast<uint32_t>(static_cast<int>(exp) - fmt.bias + 127);
  return floatFromBits(sign | (exp32 << 23) | (man << (23 - fmt.manBits)));
}

} // namespace

uint16_t floatToF16Bits(float value) {
  return static_cast<uint16_t>(narrow(value, kF16));
}
float f16BitsToFloat(uint16_t bits) { return widen(bits, kF16); }

uint16_t floatToBF16Bits(float value) {
  return static_cast<uint16_t>(narrow(value, kBF16));
}
float bf16BitsToFloat(uint16_t bits) {
  return floatFromBits(static_cast<uint32_t>(bits) << 16);
}

uint8_t floatToF8E4M3Bits(float value) {
  return static_cast<uint8_t>(narrow(value, kE4M3));
}
float f8e4m3BitsToFloat(uint8_t bits) { return widen(bits, kE4M3); }

uint8_t floatToF8E5M2Bits(float value) {
  return static_cast<uint8_t>(narrow(value, kE5M2));
}
float f8e5m2BitsToFloat(uint8_t bits) { return widen(bits, kE5M2); }

} // namespace runtime
} // namespace ein
