// The per-device memory of DDP and ZeRO-1/2/3 against the ZeRO paper's
// formulas (Rajbhandari et al. 2020, §5: mixed-precision Adam keeps
// 2Ψ + 2Ψ + KΨ bytes with K = 12), worked here by hand, and the step's
// collectives against nccl-tests' volumes (ZeRO-3 moves 1.5x DDP's bytes).
#include "ein/Analysis/DataParallel.h"
#include "ein/Analysis/Training.h"

#include <gtest/gtest.h>

using namespace ein;

namespace {

// examples/mlp.ein, the lecture's two-layer model: w1 is D x D and w2 is
// D x K with D = 2^15 and K = 2^13, so Ψ = 2^30 + 2^28 = 1342177280, which
// every N below divides (no padding).
constexpr Int kD = 32768, kK = 8192;
constexpr Int kPsi = 1342177280;

DataParallelModel mlp(unsigned bytes, unsigned states, Int activations) {
  DataParallelModel m;
  m.params = {{kD * kD, bytes}, {kD * kK, bytes}};
  m.states = states;
  m.activationBytes = activations;
  return m;
}

class ZeroPaperTest : public ::testing::TestWithParam<int> {};

TEST_P(ZeroPaperTest, MixedPrecisionAdamIsThePapers) {
  static_assert(kD * kD + kD * kK == kPsi, "Ψ by hand");
  Int n = GetParam();
  // bf16 parameters (2 bytes) under Adam (2 states, the table's), with
  // activations of 1000 bytes per rank beside them.
  const OptimizerSpec *adam = findOptimizer("adam");
  ASSERT_NE(adam, nullptr);
  DataParallelModel m = mlp(2, adam->states, 1000);
  // The paper's figures: DDP 16Ψ, ZeRO-1 4Ψ + 12Ψ/N, ZeRO-2 2Ψ + 14Ψ/N,
  // ZeRO-3 16Ψ/N, plus the activations.
  Int paper[4] = {16 * kPsi, 4 * kPsi + 12 * kPsi / n, 2 * kPsi + 14 * kPsi / n,
                  16 * kPsi / n};
  for (DPStrategy s : allStrategies()) {
    RankMemory r = rankMemory(m, s, n);
    EXPECT_EQ(r.total(), paper[static_cast<int>(s)] + 1000)
        << strategyName(s) << " on " << GetParam() << " ranks";
    EXPECT_EQ(r.padding, 0) << strategyName(s);
  }
  // By part under ZeRO-2: 2Ψ bf16 parameters, 2Ψ/N gradients, 12Ψ/N of
  // f32 master, m and v.
  RankMemory z2 = rankMemory(m, DPStrategy::Zero2, n);
  EXPECT_EQ(z2.parameters, 2 * kPsi);
  EXPECT_EQ(z2.gradients, 2 * kPsi / n);
  EXPECT_EQ(z2.optimizerStates, 12 * kPsi / n);
  EXPECT_EQ(z2.activations, 1000);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ZeroPaperTest,
                         ::testing::Values(1, 2, 4, 8, 64));

TEST(DataParallelTest, F32SgdKeepsNoState) {
  // f32 parameters under SGD: no master copy (they are f32 already) and no
  // state, so 4Ψ of parameters and 4Ψ of gradients, sharded by stage:
  // DDP and ZeRO-1 8Ψ (ZeRO-1 has nothing to shard), ZeRO-2 4Ψ + 4Ψ/N,
  // ZeRO-3 8Ψ/N.
  const OptimizerSpec *sgd = findOptimizer("sgd");
  ASSERT_NE(sgd, nullptr);
  DataParallelModel m = mlp(4, sgd->states, 0);
  Int n = 8;
  EXPECT_EQ(rankMemory(m, DPStrategy::DDP, n).total(), 8 * kPsi);
  EXPECT_EQ(rankMemory(m, DPStrategy::Zero1, n).total(), 8 * kPsi);
  EXPECT_EQ(rankMemory(m, DPStrategy::Zero2, n).total(),
            4 * kPsi + 4 * kPsi / n);
  EXPECT_EQ(rankMemory(m, DPStrategy::Zero3, n).total(), 8 * kPsi / n);
  EXPECT_EQ(rankMemory(m, DPStrategy::Zero1, n).optimizerStates, 0);
  // f32 Adam: the states at f32, no master: 4Ψ + 4Ψ + 8Ψ.
  DataParallelModel adam = mlp(4, 2, 0);
  EXPECT_EQ(rankMemory(adam, DPStrategy::DDP, n).total(), 16 * kPsi);
  EXPECT_EQ(rankMemory(adam, DPStrategy::Zero1, n).total(),
            8 * kPsi + 8 * kPsi / n);
}

TEST(DataParallelTest, ShardsArePaddedPerParameter) {
  // 10 and 7 f32 elements on 4 ranks: shards of ceil(10/4) = 3 and
  // ceil(7/4) = 2, padding 4*3 - 10 = 2 and 4*2 - 7 = 1 elements.
  DataParallelModel m;
  m.params = {{10, 4}, {7, 4}};
  m.states = 2; // Adam at f32: 8 bytes of state per element
  RankMemory z1 = rankMemory(m, DPStrategy::Zero1, 4);
  EXPECT_EQ(z1.parameters, 17 * 4);
  EXPECT_EQ(z1.optimizerStates, (3 + 2) * 8);
  EXPECT_EQ(z1.padding, (2 + 1) * 8);
  RankMemory z3 = rankMemory(m, DPStrategy::Zero3, 4);
  EXPECT_EQ(z3.parameters, (3 + 2) * 4);
  EXPECT_EQ(z3.gradients, (3 + 2) * 4);
  EXPECT_EQ(z3.padding, (2 + 1) * (4 + 4 + 8));
  EXPECT_EQ(rankMemory(m, DPStrategy::DDP, 4).padding, 0);
}

TEST(DataParallelTest, BucketsAsPyTorchDDP) {
  // Parameters in reverse order, a bucket closed once it reaches the cap;
  // a parameter above the cap is a bucket of its own.
  EXPECT_EQ(bucketBytes({10, 20, 30, 40}, 50), (std::vector<Int>{70, 30}));
  EXPECT_EQ(bucketBytes({100, 5, 5}, 50), (std::vector<Int>{110}));
  EXPECT_EQ(bucketBytes({5, 100, 5}, 50), (std::vector<Int>{105, 5}));
  EXPECT_EQ(bucketBytes({1, 2}, 1000), (std::vector<Int>{3}));
}

TEST(DataParallelTest, CollectiveVolumes) {
  // bf16 gradients of examples/mlp.ein: S = 2Ψ bytes. DDP all-reduces
  // them, 2(n-1)/n·S per rank; ZeRO-1/2 reduce-scatter and all-gather,
  // the same 2(n-1)/n·S; ZeRO-3 gathers twice, 3(n-1)/n·S = 1.5x.
  DataParallelModel m = mlp(2, 2, 0);
  const FabricSpec &fabric = *findFabric("nvlink-h100");
  Int n = 8, cap = 25 * 1024 * 1024;
  double s = 2.0 * kPsi;
  auto volume = [&](DPStrategy st) {
    double v = 0;
    for (const StepCollective &c : stepCollectives(m, st, n, cap, fabric))
      v += c.bytesPerRank;
    return v;
  };
  EXPECT_DOUBLE_EQ(volume(DPStrategy::DDP), 2.0 * 7 / 8 * s);
  EXPECT_DOUBLE_EQ(volume(DPStrategy::Zero1), 2.0 * 7 / 8 * s);
  EXPECT_DOUBLE_EQ(volume(DPStrategy::Zero2), 2.0 * 7 / 8 * s);
  EXPECT_DOUBLE_EQ(volume(DPStrategy::Zero3), 3.0 * 7 / 8 * s);
  // Both parameters exceed 25 MiB: two buckets, two latency terms. DDP's
  // time: 2 * 10 us + 1.75 * 2Ψ / 360 GB/s.
  auto ddp = stepCollectives(m, DPStrategy::DDP, n, cap, fabric);
  ASSERT_EQ(ddp.size(), 1u);
  EXPECT_EQ(ddp[0].kind, CollectiveKind::AllReduce);
  EXPECT_EQ(ddp[0].calls, 2);
  EXPECT_EQ(ddp[0].bytes, 2 * kPsi);
  EXPECT_NEAR(ddp[0].seconds, 2 * 10e-6 + 1.75 * s / 360e9, 1e-12);
  // One rank: nothing moves.
  for (DPStrategy st : allStrategies())
    for (const StepCollective &c : stepCollectives(m, st, 1, cap, fabric))
      EXPECT_EQ(c.seconds, 0.0);
}

} // namespace
