// Bit-exact conversions between f32 and the low-precision float formats
// (f16, bf16, f8e4m3fn, f8e5m2). MLIR-free; used by the .npy runtime.
//
// Conventions (checked exhaustively against numpy 2.4 / ml_dtypes 0.6 over
// all 2^32 f32 inputs; see unittests/FloatConvertTest.cpp):
//
//  * f32 -> low precision rounds to nearest, ties to even, in one step
//    (never via an intermediate format), with gradual underflow into the
//    target's subnormals; results too small round to a signed zero.
//  * Overflow after rounding: f16, bf16 and f8e5m2 give a signed infinity
//    (f16 max 65504, bf16 max ~3.39e38, f8e5m2 max 57344); a value exactly
//    halfway between the max and the next power of two rounds to even, i.e.
//    to infinity. f8e4m3fn has no infinity: anything that rounds above 448
//    (including +-inf) becomes NaN (S.1111.111), as ml_dtypes does; 464, the
//    midpoint between 448 and 480, rounds to even, i.e. to 448. There is no
//    saturation.
//  * NaN keeps its sign. f8e4m3fn has a single NaN per sign (0x7F/0xFF).
//    For f16, bf16 and f8e5m2 the payload is truncated to the target's
//    mantissa width and, if that leaves it zero, its lowest bit is set (the
//    rule numpy uses for f32->f16). The default quiet NaN 0x7FC00000 thus
//    maps to 0x7E00 / 0x7FC0 / 0x7E as in numpy and ml_dtypes. (ml_dtypes
//    canonicalises every NaN to the quiet NaN for bf16/f8e5m2; we keep the
//    payload so that every low-precision pattern round-trips.)
//  * low precision -> f32 is exact. NaN payloads are shifted into place
//    (f16, bf16, f8e5m2); the f8e4m3fn NaN becomes +-0x7FC00000. Hence
//    narrow(widen(b)) == b for all 65536 f16/bf16 and all 256 fp8 patterns.
#pragma once

#include <cstdint>

namespace ein {
namespace runtime {

uint16_t floatToF16Bits(float value);
float f16BitsToFloat(uint16_t bits);

uint16_t floatToBF16Bits(float value);
float bf16BitsToFloat(uint16_t bits);

/// OCP FP8 E4M3 "FN": bias 7, max 448, no infinities, NaN = S.1111.111.
uint8_t floatToF8E4M3Bits(float value);
float f8e4m3BitsToFloat(uint8_t bits);

/// OCP FP8 E5M2: bias 15, IEEE-like with infinities, max 57344.
uint8_t floatToF8E5M2Bits(float value);
float f8e5m2BitsToFloat(uint8_t bits);

/// Raw bit casts.
uint32_t floatBits(float value);
float floatFromBits(uint32_t bits);

} // namespace runtime
} // namespace ein
