// Tests of the CUDA emulation (ein_cuda_emu.h) and of the CUDA runtime's
// dtype conversions and scalar semantics, run on the CPU.
#include "CUDARuntimeTestUtil.h"

#include <gtest/gtest.h>

using namespace ein_cuda_test;

namespace {

//===--------------------------------------------------------------------===//
// The emulator: barriers, shuffles, votes, misuse.
//===--------------------------------------------------------------------===//

/// Each block sums its threads' values twice: a shared-memory tree with
/// __syncthreads, and ein_block_reduce_x (shuffles + shared memory); also a
/// broadcast with __shfl_sync and a vote.
__global__ void blockSums(const int *in, int *treeOut, int *shflOut,
                          int *bcastOut, unsigned *ballotOut) {
  __shared__ int buf[1024];
  const unsigned t = threadIdx.x, n = blockDim.x;
  const int v = in[blockIdx.x * n + t];
  buf[t] = v;
  __syncthreads();
  for (unsigned half = 1; half < n; half *= 2) {
    int other = t + half < n && t % (2 * half) == 0 ? buf[t + half] : 0;
    __syncthreads();
    buf[t] += other;
    __syncthreads();
  }
  if (t == 0)
    treeOut[blockIdx.x] = buf[0];
  int s = ein_block_reduce_x<EinReduceOp<EIN_REDUCE_SUM, int32_t>>(v);
  if (t == 0)
    shflOut[blockIdx.x] = s;
  int lane0 = __shfl_sync(0xffffffffu, v, 0);
  bcastOut[blockIdx.x * n + t] = lane0;
  unsigned b = __ballot_sync(0xffffffffu, v % 2);
  if (t % 32 == 0)
    ballotOut[(blockIdx.x * n + t) / 32] = b;
}

TEST(CUDAEmuTest, BarriersAndShufflesAtEveryBlockSize) {
  std::mt19937 rng(1);
  for (unsigned n = 32; n <= 1024; n *= 2) {
    const unsigned blocks = 3;
    std::vector<int> in(blocks * n), tree(blocks), shfl(blocks),
        bcast(blocks * n);
    std::vector<unsigned> ballot(blocks * n / 32);
    for (int &x : in)
      x = int(rng() % 1000) - 500;
    auto kernel = &blockSums;
    EIN_LAUNCH(kernel, blocks, n, nullptr, in.data(), tree.data(), shfl.data(),
               bcast.data(), ballot.data());
    for (unsigned b = 0; b < blocks; ++b) {
      int sum = 0;
      for (unsigned t = 0; t < n; ++t)
        sum += in[b * n + t];
      EXPECT_EQ(tree[b], sum) << "block size " << n;
      EXPECT_EQ(shfl[b], sum) << "block size " << n;
      for (unsigned t = 0; t < n; ++t)
        ASSERT_EQ(bcast[b * n + t], in[b * n + t / 32 * 32]);
      for (unsigned w = 0; w < n / 32; ++w) {
        unsigned expect = 0;
        for (unsigned l = 0; l < 32; ++l)
          expect |= unsigned(in[b * n + w * 32 + l] % 2 != 0) << l;
        ASSERT_EQ(ballot[(b * n) / 32 + w], expect);
      }
    }
  }
}

__global__ void shuffleDown(const float *in, float *out) {
  float v = in[threadIdx.x];
  // A warp sum with __shfl_down_sync: lane 0 holds the total.
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_down_sync(0xffffffffu, v, off);
  // __shfl_down_sync past the warp's end gives the lane its own value.
  float same = __shfl_down_sync(0xffffffffu, in[threadIdx.x], 31);
  out[threadIdx.x] = threadIdx.x % 32 == 0 ? v : same;
}

TEST(CUDAEmuTest, ShuffleDown) {
  std::vector<float> in(64), out(64);
  for (int i = 0; i < 64; ++i)
    in[i] = float(i);
  auto kernel = &shuffleDown;
  EIN_LAUNCH(kernel, 1, 64, nullptr, in.data(), out.data());
  EXPECT_EQ(out[0], 496.0f);   // 0 + ... + 31
  EXPECT_EQ(out[32], 1520.0f); // 32 + ... + 63
  EXPECT_EQ(out[5], in[5]);    // 5 + 31 is past the warp
  EXPECT_EQ(out[33], in[33]);
}

__global__ void missedBarrier(int *out) {
  if (threadIdx.x < 16)
    __syncthreads(); // only half the block gets here
  out[threadIdx.x] = 1;
}

__global__ void exitedLane(int *out) {
  if (threadIdx.x == 3)
    return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, int(threadIdx.x), 0);
}

TEST(CUDAEmuDeathTest, MissedBarrierAborts) {
  std::vector<int> out(64);
  auto kernel = &missedBarrier;
  EXPECT_DEATH(EIN_LAUNCH(kernel, 2, 64, nullptr, out.data()),
               "barrier not reached by every thread of the block");
}

TEST(CUDAEmuDeathTest, ShuffleNamingAnExitedLaneAborts) {
  std::vector<int> out(32);
  auto kernel = &exitedLane;
  EXPECT_DEATH(EIN_LAUNCH(kernel, 1, 32, nullptr, out.data()),
               "names a lane that has exited");
}

TEST(CUDAEmuDeathTest, OversizedBlockAborts) {
  std::vector<int> out(32);
  auto kernel = &exitedLane;
  EXPECT_DEATH(EIN_LAUNCH(kernel, 1, 2048, nullptr, out.data()),
               "invalid launch");
}

__global__ void indices(unsigned *out) {
  unsigned block =
      blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[block * blockDim.x * blockDim.y * blockDim.z + thread] =
      block * 1000 + thread;
}

TEST(CUDAEmuTest, ThreeDimensionalIndices) {
  dim3 grid(2, 3, 2), block(4, 2, 3);
  std::vector<unsigned> out(12 * 24, ~0u);
  auto kernel = &indices;
  EIN_LAUNCH(kernel, grid, block, nullptr, out.data());
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 24; ++t)
      ASSERT_EQ(out[b * 24 + t], b * 1000 + t);
}

//===--------------------------------------------------------------------===//
// Conversions, against first-principles decoding and neighbour rounding.
//===--------------------------------------------------------------------===//

struct FormatCase {
  const char *name;
  int exp, man, bias;
  bool ieee;
};
const FormatCase kFormats[] = {{"f16", 5, 10, 15, true},
                               {"bf16", 8, 7, 127, true},
                               {"f8e4m3", 4, 3, 7, false},
                               {"f8e5m2", 5, 2, 15, true}};

float widen(int format, uint32_t bits) {
  switch (format) {
  case 0:
    return ein_to_f32(ein_f16_t{uint16_t(bits)});
  case 1:
    return ein_to_f32(ein_bf16_t{uint16_t(bits)});
  case 2:
    return ein_to_f32(ein_f8e4m3_t{uint8_t(bits)});
  default:
    return ein_to_f32(ein_f8e5m2_t{uint8_t(bits)});
  }
}
template <typename Src> uint32_t narrow(int format, Src x) {
  switch (format) {
  case 0:
    return ein_cvt<ein_f16_t>(x).bits;
  case 1:
    return ein_cvt<ein_bf16_t>(x).bits;
  case 2:
    return ein_cvt<ein_f8e4m3_t>(x).bits;
  default:
    return ein_cvt<ein_f8e5m2_t>(x).bits;
  }
}

TEST(CUDATypesTest, WidenEveryBitPattern) {
  for (int f = 0; f < 4; ++f) {
    const FormatCase &c = kFormats[f];
    const uint32_t count = 1u << (1 + c.exp + c.man);
    for (uint32_t b = 0; b < count; ++b) {
      double expect = decode(b, c.exp, c.man, c.bias, c.ieee);
      float got = widen(f, b);
      ASSERT_TRUE(sameFloat(got, expect))
          << c.name << " bits 0x" << std::hex << b << ": " << got << " vs "
          << expect;
      // Round trip: every value narrows back to its own pattern.
      if (!std::isnan(expect)) {
        ASSERT_EQ(narrow(f, got), b) << c.name << std::hex << " 0x" << b;
      }
    }
  }
}

/// Edge values of every format: the values, the midpoints between
/// neighbours (ties), a hair either side, and the overflow thresholds.
std::vector<double> edgeValues(const Rounder &r) {
  std::vector<double> out = {0.0,   -0.0,   INFINITY, -INFINITY, 1e-30, 1e30,
                             1e300, 5e-324, 65504,    65519.99,  65520, 464,
                             448,   449,    57344,    61439,     61440, 3.4e38};
  for (size_t i = 0; i + 1 < r.values.size(); ++i) {
    double a = r.values[i], b = r.values[i + 1], mid = (a + b) / 2;
    for (double v :
         {a, mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300),
          double(float(mid)), double(std::nextafter(float(mid), 0.0f)),
          double(std::nextafter(float(mid), 1e30f))}) {
      out.push_back(v);
      out.push_back(-v);
    }
    if (i > 4000) // bf16 and f16 have many; the ladder's bottom and top are
      i += 97;    // where the cases are, and a sample of the middle
  }
  double maxV = r.values.back(), step = maxV - r.values[r.values.size() - 2];
  for (double v : {maxV + step / 2, std::nextafter(maxV + step / 2, 0.0),
                   std::nextafter(maxV + step / 2, 1e300), maxV + step})
    out.push_back(v);
  return out;
}

TEST(CUDATypesTest, NarrowFromF32AndF64RoundsToNearestEven) {
  std::mt19937_64 rng(7);
  for (int f = 0; f < 4; ++f) {
    const FormatCase &c = kFormats[f];
    Rounder r(c.exp, c.man, c.bias, c.ieee);
    std::vector<double> values = edgeValues(r);
    for (int i = 0; i < 20000; ++i) { // random magnitudes around the range
      double m = std::ldexp(double(rng() >> 11) / double(1ull << 53),
                            int(rng() % 40) - 30 +
                                (f == 1 ? int(rng() % 200) - 100 : 0));
      values.push_back(rng() % 2 ? m : -m);
    }
    for (double d : values) {
      float x = float(d);
      ASSERT_EQ(narrow(f, x), r.round(x, 0))
          << c.name << " from f32 " << x << std::hexfloat << " " << x;
      ASSERT_EQ(narrow(f, d), r.round(d, 0))
          << c.name << " from f64 " << std::hexfloat << d;
    }
    // NaN keeps its sign and the top bits of its payload (1 if none).
    const float qnan = ein_bits_float(0x7FC00000u);
    EXPECT_EQ(narrow(f, qnan), r.round(NAN, c.ieee ? 1u << (c.man - 1) : 0));
    EXPECT_EQ(narrow(f, -qnan) >> (c.exp + c.man), 1u);
    EXPECT_EQ(narrow(f, ein_bits_float(0x7F800001u)), r.round(NAN, 1));
  }
}

TEST(CUDATypesTest, KnownPatterns) {
  EXPECT_EQ(ein_cvt<ein_f16_t>(65519.0f).bits, 0x7BFF);
  EXPECT_EQ(ein_cvt<ein_f16_t>(65520.0f).bits, 0x7C00);
  EXPECT_EQ(ein_cvt<ein_f8e4m3_t>(464.0f).bits, 0x7E); // to 448
  EXPECT_EQ(ein_cvt<ein_f8e4m3_t>(464.5f).bits, 0x7F); // NaN
  EXPECT_EQ(ein_cvt<ein_f8e4m3_t>(-INFINITY).bits, 0xFF);
  EXPECT_EQ(ein_cvt<ein_f8e5m2_t>(61440.0f).bits, 0x7C);    // inf
  EXPECT_EQ(ein_cvt<ein_bf16_t>(1.00390625f).bits, 0x3F80); // tie to even
  EXPECT_EQ(ein_cvt<ein_bf16_t>(1.01171875f).bits, 0x3F82); // tie up
  // f64 -> f16 in one rounding: 1 + 2^-11 + 2^-40 is above the tie.
  EXPECT_EQ(
      ein_cvt<ein_f16_t>(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))
          .bits,
      0x3C01);
  // f16 <-> bf16 through f32.
  EXPECT_EQ(ein_cvt<ein_bf16_t>(ein_f16_t{0x3C01}).bits, 0x3F80);
  EXPECT_EQ(ein_cvt<ein_f16_t>(ein_bf16_t{0x4780}).bits, 0x7C00); // 65536
}

TEST(CUDATypesTest, FloatToIntSaturates) {
  EXPECT_EQ(ein_cvt<int32_t>(NAN), 0);
  EXPECT_EQ(ein_cvt<int32_t>(-2.9f), -2);
  EXPECT_EQ(ein_cvt<int32_t>(2.9), 2);
  EXPECT_EQ(ein_cvt<int32_t>(2147483648.0f), INT32_MAX);
  EXPECT_EQ(ein_cvt<int32_t>(2147483647.0), INT32_MAX);
  EXPECT_EQ(ein_cvt<int32_t>(-2147483648.0f), INT32_MIN);
  EXPECT_EQ(ein_cvt<int32_t>(-3e9), INT32_MIN);
  EXPECT_EQ(ein_cvt<int32_t>(INFINITY), INT32_MAX);
  EXPECT_EQ(ein_cvt<int64_t>(-INFINITY), INT64_MIN);
  EXPECT_EQ(ein_cvt<int64_t>(9.3e18f), INT64_MAX);
  EXPECT_EQ(ein_cvt<int64_t>(ein_f16_t{0xFC00}), INT64_MIN); // -inf
  EXPECT_EQ(ein_cvt<int32_t>(ein_f8e4m3_t{0x7F}), 0);        // NaN
  EXPECT_EQ(ein_cvt<int32_t>(ein_bf16_t{0xC2F7}), -123);     // -123.5
  // Integers narrow by wrapping, widen by sign extension.
  EXPECT_EQ(ein_cvt<int32_t>(int64_t(0x1234567887654321ll)),
            0x7654321 | int32_t(0x80000000));
  EXPECT_EQ(ein_cvt<int64_t>(int32_t(-5)), -5);
  // int -> f16/bf16/fp8 goes through f32, as the CPU back end lowers it.
  EXPECT_EQ(ein_cvt<ein_bf16_t>(int32_t(16777217)).bits,
            ein_cvt<ein_bf16_t>(16777216.0f).bits);
  EXPECT_EQ(ein_cvt<ein_f16_t>(int64_t(70000)).bits, 0x7C00);
  EXPECT_EQ(ein_cvt<float>(int64_t(9007199254740993ll)), 9007199254740992.0f);
}

TEST(CUDATypesTest, IntegerArithmeticNeverTraps) {
  EXPECT_EQ(ein_div<int32_t>(-7, 2), -3);
  EXPECT_EQ(ein_div<int32_t>(7, 0), 0);
  EXPECT_EQ(ein_div<int32_t>(INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(ein_div<int64_t>(INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(ein_div<int64_t>(INT64_MIN, 1), INT64_MIN);
  EXPECT_EQ(ein_add<int32_t>(INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(ein_mul<int32_t>(65536, 65536), 0);
  EXPECT_EQ(ein_neg<int64_t>(INT64_MIN), INT64_MIN);
  EXPECT_EQ(ein_pow(int32_t(3), int32_t(4)), 81);
  EXPECT_EQ(ein_pow(int32_t(2), int32_t(31)), INT32_MIN); // wraps
  EXPECT_EQ(ein_pow(int32_t(3), int32_t(21)),
            int32_t(uint32_t(10460353203ull % (1ull << 32))));
  EXPECT_EQ(ein_pow(int32_t(0), int32_t(0)), 1);
  EXPECT_EQ(ein_pow(int32_t(0), int32_t(-1)), 0);
  EXPECT_EQ(ein_pow(int32_t(1), int32_t(-5)), 1);
  EXPECT_EQ(ein_pow(int32_t(-1), int32_t(-5)), -1);
  EXPECT_EQ(ein_pow(int64_t(-1), int64_t(-4)), 1);
  EXPECT_EQ(ein_pow(int64_t(5), int64_t(-2)), 0);
}

TEST(CUDATypesTest, MaxMinReluPropagateNaNAndOrderZeros) {
  EXPECT_TRUE(std::isnan(ein_maximum(NAN, 1.0f)));
  EXPECT_TRUE(std::isnan(ein_maximum(1.0f, NAN)));
  EXPECT_TRUE(std::isnan(ein_minimum(1.0, double(NAN))));
  EXPECT_FALSE(std::signbit(ein_maximum(-0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(ein_maximum(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(ein_minimum(0.0f, -0.0f)));
  EXPECT_FALSE(std::signbit(ein_relu(-0.0f)));
  EXPECT_TRUE(std::isnan(ein_relu(float(NAN))));
  EXPECT_EQ(ein_relu(int32_t(-3)), 0);
  EXPECT_EQ(ein_rsqrt(4.0f), 0.5f);
  EXPECT_TRUE(std::isinf(ein_rsqrt(0.0)));
}

} // namespace
