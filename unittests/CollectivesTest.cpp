// The collectives' cost model against nccl-tests' formulas worked by hand
// (PERFORMANCE.md: all-reduce busbw = algbw * 2(n-1)/n, all-gather,
// reduce-scatter and all-to-all (n-1)/n, broadcast 1), and a measured
// fabric's busbw table interpolated in log size, against times worked by
// hand.
#include "ein/Analysis/Collectives.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace ein;

TEST(CollectivesTest, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busFactor(CollectiveKind::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busFactor(CollectiveKind::AllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busFactor(CollectiveKind::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busFactor(CollectiveKind::ReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(busFactor(CollectiveKind::AllToAll, 8), 0.875);
  EXPECT_DOUBLE_EQ(busFactor(CollectiveKind::Broadcast, 8), 1.0);
  // A group of one moves nothing and takes no time.
  for (auto kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                    CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
                    CollectiveKind::Broadcast}) {
    EXPECT_EQ(busFactor(kind, 1), 0.0) << collectiveName(kind);
    EXPECT_EQ(collectiveSeconds(kind, 1e9, 1, defaultFabric()), 0.0);
  }
}

TEST(CollectivesTest, TimesOnTheFabricTable) {
  const FabricSpec *nvlink = findFabric("nvlink-h100");
  ASSERT_NE(nvlink, nullptr);
  // 1 GB all-reduced over 8 GPUs: 10 us + 1.75 GB / 360 GB/s = 4.871 ms.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 1e9, 8, *nvlink),
              4.871111e-3, 1e-9);
  EXPECT_DOUBLE_EQ(bytesPerRank(CollectiveKind::AllReduce, 1e9, 8), 1.75e9);
  // 64 MiB all-gathered over 4 ranks on one NDR rail: 25 us + 0.75 *
  // 67108864 B / 46 GB/s = 1.11917 ms.
  const FabricSpec *ib = findFabric("ib-ndr");
  ASSERT_NE(ib, nullptr);
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllGather, 67108864, 4, *ib),
              1.119166e-3, 1e-9);
  EXPECT_EQ(findFabric("nvlink-h300"), nullptr);
  EXPECT_EQ(fabricNames(", "), "nvlink-h100, nvlink-h200, pcie5, ib-ndr");
  EXPECT_EQ(&defaultFabric(), nvlink);
}

namespace {

/// An all-gather measured at 4 KiB, 64 KiB and 1 MiB (1, 4 and 2 GB/s),
/// with a latency of 2 us.
FabricSpec measuredFabric() {
  FabricSpec f{"host", "synthetic", 1e-6, 1e9};
  f.measured.push_back({CollectiveKind::AllGather,
                        2e-6,
                        {{4096.0, 1e9}, {65536.0, 4e9}, {1048576.0, 2e9}}});
  return f;
}

} // namespace

TEST(CollectivesTest, MeasuredTimeIsInterpolatedLinearlyInSize) {
  FabricSpec f = measuredFabric();
  const MeasuredCollective *m = findMeasured(f, CollectiveKind::AllGather);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(findMeasured(f, CollectiveKind::AllReduce), nullptr);
  // At a measured size: its own bandwidth.
  EXPECT_DOUBLE_EQ(interpolateBusBandwidth(*m, 65536), 4e9);
  // 32 KiB lies 28672/61440 = 7/15 of the way from 4 KiB (4.096 us per
  // unit of bus factor at 1 GB/s) to 64 KiB (16.384 us at 4 GB/s): 4.096 +
  // 7/15 * 12.288 = 9.8304 us, so 32768 B / 9.8304 us = 3.333 GB/s (busbw
  // linear in log size would give 3.25).
  EXPECT_NEAR(interpolateBusBandwidth(*m, 32768), 1e10 / 3, 1);
  // 128 KiB, 1/15 of the way from 64 KiB (16.384 us) to 1 MiB (524.288 us
  // at 2 GB/s): 16.384 + 507.904 / 15 = 50.2443 us, 131072 B / that =
  // 60/23 GB/s; the slow size above pulls it down more than log size does
  // (3.5).
  EXPECT_NEAR(interpolateBusBandwidth(*m, 131072), 60e9 / 23, 1);
  // Outside the measured sizes the nearest one's holds.
  EXPECT_DOUBLE_EQ(interpolateBusBandwidth(*m, 64), 1e9);
  EXPECT_DOUBLE_EQ(interpolateBusBandwidth(*m, 1e9), 2e9);
}

TEST(CollectivesTest, MeasuredTimeIsExactOnOneRegime) {
  // Sizes that all cost 3 us plus 1 ns per byte (past the latency): the
  // busbw rises with the size, and every size in between is exact.
  MeasuredCollective m{CollectiveKind::Broadcast, 1e-6, {}};
  for (double bytes : {4096.0, 65536.0, 1048576.0})
    m.busBandwidth.push_back({bytes, bytes / (3e-6 + bytes * 1e-9)});
  for (double bytes : {5000.0, 100000.0, 777777.0})
    EXPECT_NEAR(bytes / interpolateBusBandwidth(m, bytes), 3e-6 + bytes * 1e-9,
                1e-15);
}

TEST(CollectivesTest, MeasuredFabricTimesUseTheTable) {
  FabricSpec f = measuredFabric();
  // 32 KiB all-gathered over 2 ranks: 2 us + 0.5 * 9.8304 us = 6.9152 us
  // (the time past the latency above, times the bus factor).
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllGather, 32768, 2, f),
              6.9152e-6, 1e-15);
  // 256 KiB over 4 ranks: 1/5 of the way from 64 KiB to 1 MiB, 16.384 +
  // 0.2 * 507.904 = 117.9648 us per unit: 2 us + 0.75 * 117.9648 us =
  // 90.4736 us.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllGather, 262144, 4, f),
              90.4736e-6, 1e-15);
  // 16 MiB over 2 ranks, past the last size (2 GB/s): 2 us + 0.5 *
  // 16777216 B / 2 GB/s = 4.196304 ms.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllGather, 16777216, 2, f),
              4.196304e-3, 1e-15);
  // A group of one is still free.
  EXPECT_EQ(collectiveSeconds(CollectiveKind::AllGather, 16384, 1, f), 0.0);
  // A kind without a table (here, not on a real host fabric, which has
  // every kind) is alpha + busFactor * S / B: 1 us + 1 MiB / 1 GB/s.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 1048576, 2, f),
              1e-6 + 1048576e-9, 1e-15);
}

TEST(CollectivesTest, MalformedTablesAreNamed) {
  auto problem = [](double latency,
                    std::vector<std::pair<double, double>> points) {
    return measuredCollectiveProblem(
        {CollectiveKind::AllReduce, latency, std::move(points)});
  };
  EXPECT_EQ(problem(1e-6, {{4096.0, 1e9}, {65536.0, 2e9}}), "");
  EXPECT_NE(problem(0, {{4096.0, 1e9}}).find("latency"), std::string::npos);
  EXPECT_NE(problem(1e-6, {}).find("no measured size"), std::string::npos);
  EXPECT_NE(problem(1e-6, {{65536.0, 1e9}, {4096.0, 2e9}}).find("ascending"),
            std::string::npos);
  EXPECT_NE(problem(1e-6, {{4096.0, 1e9}, {4096.0, 2e9}}).find("ascending"),
            std::string::npos);
  EXPECT_NE(problem(1e-6, {{4096.0, -1e9}}).find("not a positive"),
            std::string::npos);
  EXPECT_NE(problem(1e-6, {{4096.0, std::nan("")}}).find("not a positive"),
            std::string::npos);
}
