// Tests the GEMM blocking model of ein-tile-contractions (HostCPU.h): sysfs
// cache sizes parse, and the BLIS analytic model gives the tiles and blocks
// worked out by hand for known hosts.
#include "ein/Conversion/CPU/HostCPU.h"

#include <gtest/gtest.h>

namespace {

using ein::CacheLevel;
using ein::gemmTiles;
using ein::HostCaches;
using ein::parseCacheSize;

TEST(HostCPU, ParsesSysfsCacheSizes) {
  EXPECT_EQ(parseCacheSize("32K"), 32 << 10);
  EXPECT_EQ(parseCacheSize("512K\n"), 512 << 10);
  EXPECT_EQ(parseCacheSize("32768K"), 32 << 20);
  EXPECT_EQ(parseCacheSize("8M"), 8 << 20);
  EXPECT_EQ(parseCacheSize("1024"), 1024);
  EXPECT_EQ(parseCacheSize(""), 0);
  EXPECT_EQ(parseCacheSize("K"), 0);
  EXPECT_EQ(parseCacheSize("12Q"), 0);
}

HostCaches caches(int64_t l1, int64_t l1Ways, int64_t l2, int64_t l3,
                  int64_t l3Sharers) {
  HostCaches c;
  c.l1d = CacheLevel{l1, l1Ways, 1};
  c.l2 = CacheLevel{l2, 8, 1};
  c.l3 = CacheLevel{l3, 16, l3Sharers};
  return c;
}

// Zen 3 (this project's machine: 32 KiB 8-way L1d, 512 KiB L2, 32 MiB L3
// shared by its 2 threads), AVX2, f32: a 6 x 16 tile; B's micro-panel gets
// floor(7 * 16 / 22) = 5 of 8 L1 ways: kc = 5 * 4096 / 64 = 320; A's block
// half of L2: 262144 / 1280 = 204 rows (a multiple of 6); B's block half of
// a thread's 16 MiB: 6553, capped at 4096 columns.
TEST(HostCPU, Zen3Avx2) {
  auto t = gemmTiles(caches(32 << 10, 8, 512 << 10, 32 << 20, 2), 256, 4, 2);
  EXPECT_EQ(t.mr, 6);
  EXPECT_EQ(t.nrVectors, 2);
  EXPECT_EQ(t.kc, 320);
  EXPECT_EQ(t.mc, 204);
  EXPECT_EQ(t.nc, 4096);
}

// AVX-512 (Zen 4: 1 MiB L2): a 6 x 64 tile; the model's kc (6 ways: 96) is
// below AVX-512's floor of 512; mc = 524288 / 2048 = 256, rounded down to
// 252.
TEST(HostCPU, Zen4Avx512) {
  auto t = gemmTiles(caches(32 << 10, 8, 1 << 20, 32 << 20, 2), 512, 4, 2);
  EXPECT_EQ(t.mr, 6);
  EXPECT_EQ(t.nrVectors, 4);
  EXPECT_EQ(t.kc, 512);
  EXPECT_EQ(t.mc, 252);
  EXPECT_EQ(t.nc, 4096);
}

// A larger L1 (48 KiB 12-way, Intel Golden Cove) with AVX2 gives a deeper kc:
// floor(11 * 16 / 22) = 8 ways of 4096 bytes: 512; a small L3 (4 MiB shared
// by 8 threads, 2 of them used) floors nc at 1024.
TEST(HostCPU, LargeL1SmallL3) {
  auto t = gemmTiles(caches(48 << 10, 12, 1280 << 10, 4 << 20, 8), 256, 4, 2);
  EXPECT_EQ(t.kc, 512);
  EXPECT_EQ(t.mc, 318); // 655360 / 2048 = 320, a multiple of 6 below
  EXPECT_EQ(t.nc, 1024);
}

// f64 halves the lanes: a 6 x 8 tile, and blocks in 8-byte elements.
TEST(HostCPU, DoublesHalveTheLanes) {
  auto t = gemmTiles(caches(32 << 10, 8, 512 << 10, 32 << 20, 2), 256, 8, 2);
  EXPECT_EQ(t.nrVectors, 2);
  // floor(7 * 8 / 14) = 4 ways: 4 * 4096 / 64 = 256, at least 128 (256
  // f32s' worth of bytes).
  EXPECT_EQ(t.kc, 256);
  EXPECT_EQ(t.mc, 126); // 262144 / 2048 = 128, rounded down to 126
}

} // namespace
