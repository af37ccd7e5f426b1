// The bytes one device holds of a sharded value (localElements,
// docs/distributed.md §5), against counts worked by hand: a dim split on a
// mesh axis counts size/axis, a replicated dim its whole size.
#include "ein/Analysis/Training.h"

#include <gtest/gtest.h>

using namespace ein;

namespace {

Dim dim(const std::string &name) { return Dim::ofSize(SizeExpr::symbol(name)); }

ValueLayout layout(std::vector<std::string> dims) {
  ValueLayout l;
  l.dims = std::move(dims);
  return l;
}

// examples/megatron_block.ein's sizes on --mesh dp=2,tp=4.
const Bindings kEnv = {{"b", 8},  {"s", 512},  {"d", 1024}, {"heads", 16},
                       {"e", 64}, {"f", 4096}, {"dp", 2},   {"tp", 4}};

TEST(PerDeviceMemory, ColumnParallelWeightHoldsAQuarter) {
  // w_fc: f32["d f@tp"]: 1024 * 4096 / 4 = 1048576 elements per device.
  auto n = localElements({dim("d"), dim("f")}, layout({"", "tp"}));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->evaluate(kEnv), Int(1048576));
}

TEST(PerDeviceMemory, ReplicatedGainIsWholeOnEachDevice) {
  // A norm's gain g: f32["d"], on every device whole: 1024.
  auto n = localElements({dim("d")}, layout({""}));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->evaluate(kEnv), Int(1024));
}

TEST(PerDeviceMemory, ComposedDimSplitOnce) {
  // w_q: f32["d (heads@tp e)"]: 1024 * (16 * 64) / 4 = 262144.
  Shape shape = {
      dim("d"), Dim::ofSize(SizeExpr::symbol("heads") * SizeExpr::symbol("e"))};
  auto n = localElements(shape, layout({"", "tp"}));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->evaluate(kEnv), Int(262144));
}

TEST(PerDeviceMemory, TwoAxesDivideTwoDims) {
  // The MLP's hidden activations, b@dp s f@tp: (8/2) * 512 * (4096/4).
  auto n =
      localElements({dim("b"), dim("s"), dim("f")}, layout({"dp", "", "tp"}));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->evaluate(kEnv), Int(4 * 512 * 1024));
}

TEST(PerDeviceMemory, PartialSumIsAWholeBlock) {
  // A partial sum over tp of b@dp s d: each device holds its whole
  // (b/dp) s d block until the all-reduce.
  ValueLayout l = layout({"dp", "", ""});
  l.pending = {"tp"};
  auto n = localElements({dim("b"), dim("s"), dim("d")}, l);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->evaluate(kEnv), Int(4 * 512 * 1024));
}

TEST(PerDeviceMemory, UnboundAxisStaysAFormula) {
  // --mesh not given: no number, the axis in the formula (never the
  // global count).
  auto n = localElements({dim("d"), dim("f")}, layout({"", "tp"}));
  ASSERT_TRUE(n);
  Bindings unbound = kEnv;
  unbound.erase("tp");
  EXPECT_FALSE(n->evaluate(unbound));
  EXPECT_NE(n->str().find("tp"), std::string::npos) << n->str();
}

TEST(PerDeviceMemory, LayoutOfAnotherRankIsRefused) {
  EXPECT_FALSE(localElements({dim("d"), dim("f")}, layout({"tp"})));
}

} // namespace
