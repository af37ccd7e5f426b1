// The collectives' cost model against nccl-tests' formulas worked by hand
// (PERFORMANCE.md: all-reduce busbw = algbw * 2(n-1)/n, all-gather,
// reduce-scatter and all-to-all (n-1)/n, broadcast 1).
#include "ein/Analysis/Collectives.h"

#include <gtest/gtest.h>

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
