// Bit-exact low-precision float conversions (ein/Runtime/FloatConvert.h).
#include "ein/Runtime/FloatConvert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

using namespace ein::runtime;

namespace {

bool isNaNBits16(uint16_t b, unsigned expBits, unsigned manBits) {
  uint16_t expMask = static_cast<uint16_t>(((1u << expBits) - 1) << manBits);
  return (b & expMask) == expMask && (b & ((1u << manBits) - 1)) != 0;
}

//===----------------------------------------------------------------------===//
// Exhaustive round trips: narrow(widen(b)) == b for every bit pattern.
//===----------------------------------------------------------------------===//

TEST(FloatConvertTest, F16RoundTripsAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = f16BitsToFloat(static_cast<uint16_t>(b));
    ASSERT_EQ(floatToF16Bits(f), b) << std::hex << "f16 0x" << b;
    ASSERT_EQ(std::isnan(f), isNaNBits16(static_cast<uint16_t>(b), 5, 10))
        << std::hex << "f16 0x" << b;
  }
}

TEST(FloatConvertTest, BF16RoundTripsAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = bf16BitsToFloat(static_cast<uint16_t>(b));
    // bf16 is the top half of f32.
    ASSERT_EQ(floatBits(f), b << 16) << std::hex << "bf16 0x" << b;
    ASSERT_EQ(floatToBF16Bits(f), b) << std::hex << "bf16 0x" << b;
  }
}

TEST(FloatConvertTest, F8E4M3RoundTripsAllPatterns) {
  for (uint32_t b = 0; b < 256; ++b) {
    float f = f8e4m3BitsToFloat(static_cast<uint8_t>(b));
    EXPECT_EQ(floatToF8E4M3Bits(f), b) << std::hex << "e4m3 0x" << b;
    EXPECT_EQ(std::isnan(f), (b & 0x7F) == 0x7F) << std::hex << "e4m3 0x" << b;
    EXPECT_FALSE(std::isinf(f));
  }
}

TEST(FloatConvertTest, F8E5M2RoundTripsAllPatterns) {
  for (uint32_t b = 0; b < 256; ++b) {
    float f = f8e5m2BitsToFloat(static_cast<uint8_t>(b));
    EXPECT_EQ(floatToF8E5M2Bits(f), b) << std::hex << "e5m2 0x" << b;
    EXPECT_EQ(std::isnan(f), (b & 0x7C) == 0x7C && (b & 3) != 0)
        << std::hex << "e5m2 0x" << b;
    // e5m2 is the top byte of f16.
    float viaF16 = f16BitsToFloat(static_cast<uint16_t>(b << 8));
    EXPECT_EQ(floatBits(f), floatBits(viaF16)) << std::hex << "e5m2 0x" << b;
  }
}

//===----------------------------------------------------------------------===//
// fp8 -> f32 against ml_dtypes.
//===----------------------------------------------------------------------===//

// Computed with numpy 2.4.6 / ml_dtypes 0.6.0:
//   np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
//     .astype(np.float32).view(np.uint32)
// and likewise for ml_dtypes.float8_e5m2.
const uint32_t kE4M3ToF32[256] = {
    0x00000000u, 0x3B000000u, 0x3B800000u, 0x3BC00000u, 0x3C000000u,
    0x3C200000u, 0x3C400000u, 0x3C600000u, 0x3C800000u, 0x3C900000u,
    0x3CA00000u, 0x3CB00000u, 0x3CC00000u, 0x3CD00000u, 0x3CE00000u,
    0x3CF00000u, 0x3D000000u, 0x3D100000u, 0x3D200000u, 0x3D300000u,
    0x3D400000u, 0x3D500000u, 0x3D600000u, 0x3D700000u, 0x3D800000u,
    0x3D900000u, 0x3DA00000u, 0x3DB00000u, 0x3DC00000u, 0x3DD00000u,
    0x3DE00000u, 0x3DF00000u, 0x3E000000u, 0x3E100000u, 0x3E200000u,
    0x3E300000u, 0x3E400000u, 0x3E500000u, 0x3E600000u, 0x3E700000u,
    0x3E800000u, 0x3E900000u, 0x3EA00000u, 0x3EB00000u, 0x3EC00000u,
    0x3ED00000u, 0x3EE00000u, 0x3EF00000u, 0x3F000000u, 0x3F100000u,
    0x3F200000u, 0x3F300000u, 0x3F400000u, 0x3F500000u, 0x3F600000u,
    0x3F700000u, 0x3F800000u, 0x3F900000u, 0x3FA00000u, 0x3FB00000u,
    0x3FC00000u, 0x3FD00000u, 0x3FE00000u, 0x3FF00000u, 0x40000000u,
    0x40100000u, 0x40200000u, 0x40300000u, 0x40400000u, 0x40500000u,
    0x40600000u, 0x40700000u, 0x40800000u, 0x40900000u, 0x40A00000u,
    0x40B00000u, 0x40C00000u, 0x40D00000u, 0x40E00000u, 0x40F00000u,
    0x41000000u, 0x41100000u, 0x41200000u, 0x41300000u, 0x41400000u,
    0x41500000u, 0x41600000u, 0x41700000u, 0x41800000u, 0x41900000u,
    0x41A00000u, 0x41B00000u, 0x41C00000u, 0x41D00000u, 0x41E00000u,
    0x41F00000u, 0x42000000u, 0x42100000u, 0x42200000u, 0x42300000u,
    0x42400000u, 0x42500000u, 0x42600000u, 0x42700000u, 0x42800000u,
    0x42900000u, 0x42A00000u, 0x42B00000u, 0x42C00000u, 0x42D00000u,
    0x42E00000u, 0x42F00000u, 0x43000000u, 0x43100000u, 0x43200000u,
    0x43300000u, 0x43400000u, 0x43500000u, 0x43600000u, 0x43700000u,
    0x43800000u, 0x43900000u, 0x43A00000u, 0x43B00000u, 0x43C00000u,
    0x43D00000u, 0x43E00000u, 0x7FC00000u, 0x80000000u, 0xBB000000u,
    0xBB800000u, 0xBBC00000u, 0xBC000000u, 0xBC200000u, 0xBC400000u,
    0xBC600000u, 0xBC800000u, 0xBC900000u, 0xBCA00000u, 0xBCB00000u,
    0xBCC00000u, 0xBCD00000u, 0xBCE00000u, 0xBCF00000u, 0xBD000000u,
    0xBD100000u, 0xBD200000u, 0xBD300000u, 0xBD400000u, 0xBD500000u,
    0xBD600000u, 0xBD700000u, 0xBD800000u, 0xBD900000u, 0xBDA00000u,
    0xBDB00000u, 0xBDC00000u, 0xBDD00000u, 0xBDE00000u, 0xBDF00000u,
    0xBE000000u, 0xBE100000u, 0xBE200000u, 0xBE300000u, 0xBE400000u,
    0xBE500000u, 0xBE600000u, 0xBE700000u, 0xBE800000u, 0xBE900000u,
    0xBEA00000u, 0xBEB00000u, 0xBEC00000u, 0xBED00000u, 0xBEE00000u,
    0xBEF00000u, 0xBF000000u, 0xBF100000u, 0xBF200000u, 0xBF300000u,
    0xBF400000u, 0xBF500000u, 0xBF600000u, 0xBF700000u, 0xBF800000u,
    0xBF900000u, 0xBFA00000u, 0xBFB00000u, 0xBFC00000u, 0xBFD00000u,
    0xBFE00000u, 0xBFF00000u, 0xC0000000u, 0xC0100000u, 0xC0200000u,
    0xC0300000u, 0xC0400000u, 0xC0500000u, 0xC0600000u, 0xC0700000u,
    0xC0800000u, 0xC0900000u, 0xC0A00000u, 0xC0B00000u, 0xC0C00000u,
    0xC0D00000u, 0xC0E00000u, 0xC0F00000u, 0xC1000000u, 0xC1100000u,
    0xC1200000u, 0xC1300000u, 0xC1400000u, 0xC1500000u, 0xC1600000u,
    0xC1700000u, 0xC1800000u, 0xC1900000u, 0xC1A00000u, 0xC1B00000u,
    0xC1C00000u, 0xC1D00000u, 0xC1E00000u, 0xC1F00000u, 0xC2000000u,
    0xC2100000u, 0xC2200000u, 0xC2300000u, 0xC2400000u, 0xC2500000u,
    0xC2600000u, 0xC2700000u, 0xC2800000u, 0xC2900000u, 0xC2A00000u,
    0xC2B00000u, 0xC2C00000u, 0xC2D00000u, 0xC2E00000u, 0xC2F00000u,
    0xC3000000u, 0xC3100000u, 0xC3200000u, 0xC3300000u, 0xC3400000u,
    0xC3500000u, 0xC3600000u, 0xC3700000u, 0xC3800000u, 0xC3900000u,
    0xC3A00000u, 0xC3B00000u, 0xC3C00000u, 0xC3D00000u, 0xC3E00000u,
    0xFFC00000u,
};

const uint32_t kE5M2ToF32[256] = {
    0x00000000u, 0x37800000u, 0x38000000u, 0x38400000u, 0x38800000u,
    0x38A00000u, 0x38C00000u, 0x38E00000u, 0x39000000u, 0x39200000u,
    0x39400000u, 0x39600000u, 0x39800000u, 0x39A00000u, 0x39C00000u,
    0x39E00000u, 0x3A000000u, 0x3A200000u, 0x3A400000u, 0x3A600000u,
    0x3A800000u, 0x3AA00000u, 0x3AC00000u, 0x3AE00000u, 0x3B000000u,
    0x3B200000u, 0x3B400000u, 0x3B600000u, 0x3B800000u, 0x3BA00000u,
    0x3BC00000u, 0x3BE00000u, 0x3C000000u, 0x3C200000u, 0x3C400000u,
    0x3C600000u, 0x3C800000u, 0x3CA00000u, 0x3CC00000u, 0x3CE00000u,
    0x3D000000u, 0x3D200000u, 0x3D400000u, 0x3D600000u, 0x3D800000u,
    0x3DA00000u, 0x3DC00000u, 0x3DE00000u, 0x3E000000u, 0x3E200000u,
    0x3E400000u, 0x3E600000u, 0x3E800000u, 0x3EA00000u, 0x3EC00000u,
    0x3EE00000u, 0x3F000000u, 0x3F200000u, 0x3F400000u, 0x3F600000u,
    0x3F800000u, 0x3FA00000u, 0x3FC00000u, 0x3FE00000u, 0x40000000u,
    0x40200000u, 0x40400000u, 0x40600000u, 0x40800000u, 0x40A00000u,
    0x40C00000u, 0x40E00000u, 0x41000000u, 0x41200000u, 0x41400000u,
    0x41600000u, 0x41800000u, 0x41A00000u, 0x41C00000u, 0x41E00000u,
    0x42000000u, 0x42200000u, 0x42400000u, 0x42600000u, 0x42800000u,
    0x42A00000u, 0x42C00000u, 0x42E00000u, 0x43000000u, 0x43200000u,
    0x43400000u, 0x43600000u, 0x43800000u, 0x43A00000u, 0x43C00000u,
    0x43E00000u, 0x44000000u, 0x44200000u, 0x44400000u, 0x44600000u,
    0x44800000u, 0x44A00000u, 0x44C00000u, 0x44E00000u, 0x45000000u,
    0x45200000u, 0x45400000u, 0x45600000u, 0x45800000u, 0x45A00000u,
    0x45C00000u, 0x45E00000u, 0x46000000u, 0x46200000u, 0x46400000u,
    0x46600000u, 0x46800000u, 0x46A00000u, 0x46C00000u, 0x46E00000u,
    0x47000000u, 0x47200000u, 0x47400000u, 0x47600000u, 0x7F800000u,
    0x7FC00000u, 0x7FC00000u, 0x7FC00000u, 0x80000000u, 0xB7800000u,
    0xB8000000u, 0xB8400000u, 0xB8800000u, 0xB8A00000u, 0xB8C00000u,
    0xB8E00000u, 0xB9000000u, 0xB9200000u, 0xB9400000u, 0xB9600000u,
    0xB9800000u, 0xB9A00000u, 0xB9C00000u, 0xB9E00000u, 0xBA000000u,
    0xBA200000u, 0xBA400000u, 0xBA600000u, 0xBA800000u, 0xBAA00000u,
    0xBAC00000u, 0xBAE00000u, 0xBB000000u, 0xBB200000u, 0xBB400000u,
    0xBB600000u, 0xBB800000u, 0xBBA00000u, 0xBBC00000u, 0xBBE00000u,
    0xBC000000u, 0xBC200000u, 0xBC400000u, 0xBC600000u, 0xBC800000u,
    0xBCA00000u, 0xBCC00000u, 0xBCE00000u, 0xBD000000u, 0xBD200000u,
    0xBD400000u, 0xBD600000u, 0xBD800000u, 0xBDA00000u, 0xBDC00000u,
    0xBDE00000u, 0xBE000000u, 0xBE200000u, 0xBE400000u, 0xBE600000u,
    0xBE800000u, 0xBEA00000u, 0xBEC00000u, 0xBEE00000u, 0xBF000000u,
    0xBF200000u, 0xBF400000u, 0xBF600000u, 0xBF800000u, 0xBFA00000u,
    0xBFC00000u, 0xBFE00000u, 0xC0000000u, 0xC0200000u, 0xC0400000u,
    0xC0600000u, 0xC0800000u, 0xC0A00000u, 0xC0C00000u, 0xC0E00000u,
    0xC1000000u, 0xC1200000u, 0xC1400000u, 0xC1600000u, 0xC1800000u,
    0xC1A00000u, 0xC1C00000u, 0xC1E00000u, 0xC2000000u, 0xC2200000u,
    0xC2400000u, 0xC2600000u, 0xC2800000u, 0xC2A00000u, 0xC2C00000u,
    0xC2E00000u, 0xC3000000u, 0xC3200000u, 0xC3400000u, 0xC3600000u,
    0xC3800000u, 0xC3A00000u, 0xC3C00000u, 0xC3E00000u, 0xC4000000u,
    0xC4200000u, 0xC4400000u, 0xC4600000u, 0xC4800000u, 0xC4A00000u,
    0xC4C00000u, 0xC4E00000u, 0xC5000000u, 0xC5200000u, 0xC5400000u,
    0xC5600000u, 0xC5800000u, 0xC5A00000u, 0xC5C00000u, 0xC5E00000u,
    0xC6000000u, 0xC6200000u, 0xC6400000u, 0xC6600000u, 0xC6800000u,
    0xC6A00000u, 0xC6C00000u, 0xC6E00000u, 0xC7000000u, 0xC7200000u,
    0xC7400000u, 0xC7600000u, 0xFF800000u, 0xFFC00000u, 0xFFC00000u,
    0xFFC00000u,
};

TEST(FloatConvertTest, F8E4M3ToF32MatchesMlDtypes) {
  for (uint32_t b = 0; b < 256; ++b)
    EXPECT_EQ(floatBits(f8e4m3BitsToFloat(static_cast<uint8_t>(b))),
              kE4M3ToF32[b])
        << std::hex << "e4m3 0x" << b;
}

TEST(FloatConvertTest, F8E5M2ToF32MatchesMlDtypes) {
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t mine = floatBits(f8e5m2BitsToFloat(static_cast<uint8_t>(b)));
    if ((b & 0x7F) > 0x7C) {
      // NaN: ml_dtypes returns the canonical quiet NaN; we keep the payload
      // (so that every pattern round-trips). Both are NaNs of the same sign.
      EXPECT_TRUE(std::isnan(floatFromBits(mine))) << std::hex << b;
      EXPECT_EQ(mine >> 31, kE5M2ToF32[b] >> 31) << std::hex << b;
      if ((b & 0x7F) == 0x7E) { // the quiet NaN itself agrees exactly
        EXPECT_EQ(mine, kE5M2ToF32[b]);
      }
      continue;
    }
    EXPECT_EQ(mine, kE5M2ToF32[b]) << std::hex << "e5m2 0x" << b;
  }
}

TEST(FloatConvertTest, F16AndBF16SpotValues) {
  EXPECT_EQ(f16BitsToFloat(0x3C00), 1.0f);
  EXPECT_EQ(f16BitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(f16BitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16BitsToFloat(0x03FF), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(floatBits(f16BitsToFloat(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isinf(f16BitsToFloat(0xFC00)));
  // numpy: np.array([0x7c01], np.uint16).view(np.float16).astype(np.float32)
  EXPECT_EQ(floatBits(f16BitsToFloat(0x7C01)), 0x7F802000u);
  EXPECT_EQ(bf16BitsToFloat(0x3F80), 1.0f);
  EXPECT_EQ(floatBits(bf16BitsToFloat(0x0001)), 0x00010000u); // subnormal
  EXPECT_EQ(f8e4m3BitsToFloat(0x7E), 448.0f);
  EXPECT_EQ(f8e4m3BitsToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(f8e5m2BitsToFloat(0x7B), 57344.0f);
  EXPECT_EQ(f8e5m2BitsToFloat(0x01), std::ldexp(1.0f, -16));
  EXPECT_TRUE(std::isinf(f8e5m2BitsToFloat(0x7C)));
}

//===----------------------------------------------------------------------===//
// f32 -> low precision: rounding, overflow, underflow, NaN.
//===----------------------------------------------------------------------===//

struct RoundCase {
  uint32_t f32;
  uint16_t f16, bf16;
  uint8_t e4m3, e5m2;
};

// Expected bit patterns computed with numpy 2.4.6 and ml_dtypes 0.6.0:
//   f = np.array([...], np.uint32).view(np.float32)
//   f.astype(np.float16).view(np.uint16), f.astype(ml_dtypes.bfloat16),
//   f.astype(ml_dtypes.float8_e4m3fn), f.astype(ml_dtypes.float8_e5m2)
// (the last three viewed as unsigned integers). ulp(1): f16 2^-10, bf16
// 2^-7, e4m3 2^-3, e5m2 2^-2.
const RoundCase kRoundCases[] = {
    // f32 bits    f16     bf16    e4m3  e5m2
    {0x00000000u, 0x0000, 0x0000, 0x00, 0x00}, // +0
    {0x80000000u, 0x8000, 0x8000, 0x80, 0x80}, // -0
    {0x3F800000u, 0x3C00, 0x3F80, 0x38, 0x3C}, // 1
    {0xBF800000u, 0xBC00, 0xBF80, 0xB8, 0xBC}, // -1
    {0x3FC00000u, 0x3E00, 0x3FC0, 0x3C, 0x3E}, // 1.5
    {0x40490FDBu, 0x4248, 0x4049, 0x45, 0x42}, // pi
    {0xC0490FDBu, 0xC248, 0xC049, 0xC5, 0xC2}, // -pi
    {0x3DCCCCCDu, 0x2E66, 0x3DCD, 0x1D, 0x2E}, // 0.1
    {0x7F800000u, 0x7C00, 0x7F80, 0x7F, 0x7C}, // +inf
    {0xFF800000u, 0xFC00, 0xFF80, 0xFF, 0xFC}, // -inf
    {0x7FC00000u, 0x7E00, 0x7FC0, 0x7F, 0x7E}, // qNaN
    {0xFFC00000u, 0xFE00, 0xFFC0, 0xFF, 0xFE}, // -qNaN
    {0x00000001u, 0x0000, 0x0000, 0x00, 0x00}, // f32 min subnormal
    {0x007FFFFFu, 0x0000, 0x0080, 0x00, 0x00}, // f32 max subnormal
    {0x00800000u, 0x0000, 0x0080, 0x00, 0x00}, // f32 min normal
    {0x7F7FFFFFu, 0x7C00, 0x7F80, 0x7F, 0x7C}, // f32 max
    {0xFF7FFFFFu, 0xFC00, 0xFF80, 0xFF, 0xFC}, // -f32 max
    {0x3F801000u, 0x3C00, 0x3F80, 0x38, 0x3C}, // 1+2^-11 (f16 tie, even down)
    {0x3F803000u, 0x3C02, 0x3F80, 0x38, 0x3C}, // 1+3*2^-11 (f16 tie, even up)
    {0x3F801001u, 0x3C01, 0x3F80, 0x38, 0x3C}, // nextup(1+2^-11)
    {0x477FE000u, 0x7BFF, 0x4780, 0x7F, 0x7C}, // 65504 (f16 max)
    {0x477FEF00u, 0x7BFF, 0x4780, 0x7F, 0x7C}, // 65519 (below f16 overflow tie)
    {0x477FF000u, 0x7C00, 0x4780, 0x7F, 0x7C}, // 65520 (f16 tie -> inf)
    {0xC77FF000u, 0xFC00, 0xC780, 0xFF, 0xFC}, // -65520
    {0x33800000u, 0x0001, 0x3380, 0x00, 0x00}, // 2^-24 (f16 min subnormal)
    {0x33000000u, 0x0000, 0x3300, 0x00, 0x00}, // 2^-25 (tie -> 0)
    {0x33000001u, 0x0001, 0x3300, 0x00, 0x00}, // nextup(2^-25)
    {0x33C00000u, 0x0002, 0x33C0, 0x00, 0x00}, // 3*2^-25 (tie -> 2*2^-24)
    {0x38800000u, 0x0400, 0x3880, 0x00, 0x04}, // 2^-14 (f16 min normal)
    {0x387FFFFFu, 0x0400, 0x3880, 0x00, 0x04}, // nextdown(2^-14)
    {0x387FE000u, 0x0400, 0x3880, 0x00,
     0x04}, // 2^-14 - 2^-25 (rounds up to min normal)
    {0x3F808000u, 0x3C04, 0x3F80, 0x38, 0x3C}, // 1+2^-8 (bf16 tie, even down)
    {0x3F818000u, 0x3C0C, 0x3F82, 0x38, 0x3C}, // 1+3*2^-8 (bf16 tie, even up)
    {0x3F808001u, 0x3C04, 0x3F81, 0x38, 0x3C}, // nextup(1+2^-8)
    {0x7F7F0000u, 0x7C00, 0x7F7F, 0x7F, 0x7C}, // bf16 max 0x7F7F0000
    {0x7F7F8000u, 0x7C00, 0x7F80, 0x7F, 0x7C}, // 0x7F7F8000 (bf16 tie -> inf)
    {0x7F7F7FFFu, 0x7C00, 0x7F7F, 0x7F, 0x7C}, // 0x7F7F7FFF (below tie)
    {0x00008000u, 0x0000, 0x0000, 0x00,
     0x00}, // 0x00008000 (f32 subnormal, bf16 tie even down)
    {0x00018000u, 0x0000, 0x0002, 0x00,
     0x00}, // 0x00018000 (f32 subnormal, bf16 tie even up)
    {0x3F880000u, 0x3C40, 0x3F88, 0x38, 0x3C}, // 1+2^-4 (e4m3 tie, even down)
    {0x3F980000u, 0x3CC0, 0x3F98, 0x3A, 0x3D}, // 1+3*2^-4 (e4m3 tie, even up)
    {0x43E00000u, 0x5F00, 0x43E0, 0x7E, 0x5F}, // 448 (e4m3 max)
    {0x43E80000u, 0x5F40, 0x43E8, 0x7E, 0x5F}, // 464 (e4m3 tie -> 448)
    {0x43E80001u, 0x5F40, 0x43E8, 0x7F, 0x5F}, // nextup(464) -> NaN
    {0x43F00000u, 0x5F80, 0x43F0, 0x7F, 0x60}, // 480
    {0xC3FA0000u, 0xDFD0, 0xC3FA, 0xFF, 0xE0}, // -500
    {0x49742400u, 0x7C00, 0x4974, 0x7F, 0x7C}, // 1e6
    {0x3B000000u, 0x1800, 0x3B00, 0x01, 0x18}, // 2^-9 (e4m3 min subnormal)
    {0x3A800000u, 0x1400, 0x3A80, 0x00, 0x14}, // 2^-10 (tie -> 0)
    {0x3A800001u, 0x1400, 0x3A80, 0x01, 0x14}, // nextup(2^-10)
    {0x3B400000u, 0x1A00, 0x3B40, 0x02, 0x1A}, // 3*2^-10 (tie -> 2^-8)
    {0x3C800000u, 0x2400, 0x3C80, 0x08, 0x24}, // 2^-6 (e4m3 min normal)
    {0x3C600000u, 0x2300, 0x3C60, 0x07, 0x23}, // 7*2^-9 (e4m3 max subnormal)
    {0x3C700000u, 0x2380, 0x3C70, 0x08, 0x24}, // 15*2^-10 (tie -> min normal)
    {0xBA000000u, 0x9000, 0xBA00, 0x80, 0x90}, // -2^-11 (-> -0)
    {0x3F900000u, 0x3C80, 0x3F90, 0x39, 0x3C}, // 1+2^-3 (e5m2 tie, even down)
    {0x3FB00000u, 0x3D80, 0x3FB0, 0x3B, 0x3E}, // 1+3*2^-3 (e5m2 tie, even up)
    {0x47600000u, 0x7B00, 0x4760, 0x7F, 0x7B}, // 57344 (e5m2 max)
    {0x476FFF00u, 0x7B80, 0x4770, 0x7F, 0x7B}, // 61439 (below tie)
    {0x47700000u, 0x7B80, 0x4770, 0x7F, 0x7C}, // 61440 (e5m2 tie -> inf)
    {0xC7700000u, 0xFB80, 0xC770, 0xFF, 0xFC}, // -61440
    {0x37800000u, 0x0100, 0x3780, 0x00, 0x01}, // 2^-16 (e5m2 min subnormal)
    {0x37000000u, 0x0080, 0x3700, 0x00, 0x00}, // 2^-17 (tie -> 0)
    {0x37C00000u, 0x0180, 0x37C0, 0x00, 0x02}, // 3*2^-17 (tie -> 2^-15)
    {0xB8600000u, 0x8380, 0xB860, 0x80, 0x84}, // -7*2^-17 (tie -> -4*2^-16)
};

TEST(FloatConvertTest, RoundingTableMatchesNumpyAndMlDtypes) {
  for (const RoundCase &c : kRoundCases) {
    float f = floatFromBits(c.f32);
    EXPECT_EQ(floatToF16Bits(f), c.f16) << std::hex << "f32 0x" << c.f32;
    EXPECT_EQ(floatToBF16Bits(f), c.bf16) << std::hex << "f32 0x" << c.f32;
    EXPECT_EQ(floatToF8E4M3Bits(f), c.e4m3) << std::hex << "f32 0x" << c.f32;
    EXPECT_EQ(floatToF8E5M2Bits(f), c.e5m2) << std::hex << "f32 0x" << c.f32;
  }
}

TEST(FloatConvertTest, NaNKeepsSignAndStaysNaN) {
  // Signalling NaN with a payload only in the low bits: truncation would give
  // infinity, so the lowest target mantissa bit is set (numpy's f16 rule).
  float snan = floatFromBits(0x7F800001);
  EXPECT_EQ(floatToF16Bits(snan), 0x7C01); // numpy agrees
  EXPECT_EQ(floatToBF16Bits(snan), 0x7F81);
  EXPECT_EQ(floatToF8E5M2Bits(snan), 0x7D);
  EXPECT_EQ(floatToF8E4M3Bits(snan), 0x7F);
  float negSnan = floatFromBits(0xFF800001);
  EXPECT_EQ(floatToF16Bits(negSnan), 0xFC01);
  EXPECT_EQ(floatToBF16Bits(negSnan), 0xFF81);
  EXPECT_EQ(floatToF8E5M2Bits(negSnan), 0xFD);
  EXPECT_EQ(floatToF8E4M3Bits(negSnan), 0xFF);
  // Payload truncation (numpy: 0x7FA00000 -> 0x7D00).
  EXPECT_EQ(floatToF16Bits(floatFromBits(0x7FA00000)), 0x7D00);
  EXPECT_EQ(floatToBF16Bits(floatFromBits(0x7FA00000)), 0x7FA0);
}

TEST(FloatConvertTest, MonotoneOverPositiveFloats) {
  // Rounding is monotone: sweep f32 patterns with a stride and check that
  // the narrowed magnitudes never decrease (below the NaN range).
  uint32_t prev16 = 0, prevB = 0, prev4 = 0, prev5 = 0;
  for (uint64_t u = 0; u < 0x7F800000u; u += 4099) {
    float f = floatFromBits(static_cast<uint32_t>(u));
    uint32_t h = floatToF16Bits(f), b = floatToBF16Bits(f);
    uint32_t e4 = floatToF8E4M3Bits(f), e5 = floatToF8E5M2Bits(f);
    ASSERT_GE(h, prev16) << std::hex << u;
    ASSERT_GE(b, prevB) << std::hex << u;
    ASSERT_GE(e4, prev4) << std::hex << u;
    ASSERT_GE(e5, prev5) << std::hex << u;
    prev16 = h, prevB = b, prev4 = e4, prev5 = e5;
  }
  EXPECT_EQ(prev16, 0x7C00u);
  EXPECT_EQ(prevB, 0x7F80u);
  EXPECT_EQ(prev4, 0x7Fu);
  EXPECT_EQ(prev5, 0x7Cu);
}

TEST(FloatConvertTest, NarrowingIsNearest) {
  // For a sweep of finite f32 values, the narrowed value is within half an
  // ulp: no representable neighbour is strictly closer.
  for (uint64_t u = 0x30000000; u < 0x47700000u; u += 65537) {
    float f = floatFromBits(static_cast<uint32_t>(u));
    uint8_t e = floatToF8E4M3Bits(f);
    if ((e & 0x7F) == 0x7F)
      continue;
    float r = f8e4m3BitsToFloat(e);
    for (int d = -1; d <= 1; d += 2) {
      int nb = static_cast<int>(e) + d;
      if (nb < 0 || nb > 0x7E)
        continue;
      float other = f8e4m3BitsToFloat(static_cast<uint8_t>(nb));
      ASSERT_LE(std::fabs(r - f), std::fabs(other - f)) << std::hex << u;
    }
  }
}

} // namespace
