// The contraction order of large einsums against counts taken from opt_einsum.
#include "TestHelpers.h"

#include "ein/Analysis/Cost.h"

#include <gtest/gtest.h>

using namespace ein;
using namespace ein::test;

namespace {

/// The FLOP count and order `einc report` gives an f32 einsum.
struct Ordered {
  Int flops = -1;
  std::vector<ContractionStep> path;
};

Ordered orderOf(const char *pattern, const std::vector<std::string> &shapes) {
  InferContext ctx;
  std::vector<Shape> in;
  CostInput input;
  for (auto &s : shapes) {
    in.push_back(shapeOf(s));
    input.inputs.push_back(TensorType{in.back(), DType::F32});
  }
  auto info =
      analyzeEinsum(ctx, patternOf(pattern, PatternUse::Einsum), in, {});
  EXPECT_TRUE(bool(info)) << describeError(info.error());
  if (!info)
    return {};
  input.kind = OpKind::Einsum;
  input.outputs = {TensorType{info->result, DType::F32}};
  input.einsum = &*info;
  OpCost cost = computeCost(input, {});
  EXPECT_TRUE(cost.flops.value.has_value());
  return {cost.flops.value.value_or(-1), cost.path};
}

// bench/contraction_order.py's "random reg 4 #1": 20 operands, each summed
// index in two of them (random_equation in test/run/opt_einsum_equations.py,
// the 2nd network of regularity 4 from the bench's
// np.random.default_rng(3)). The connected-subset search gives it up. Our
// greedy once took the cheaper of two pairs that tie in opt_einsum's greedy
// cost, where opt_einsum takes the one with the earlier operands, and ended
// at 60120869344 FLOPs.
const char *kRandomReg4Pattern =
    "r J j h M e L, B J, c K H x I z, o r H m u, t, D N h v t, I E d s, "
    "y C f p A z, b D c, l g b s, l C M, y G F, x e k, u n, w i G q m, "
    "p q d a n A k, K F, i a w v B, L N f, E g o j ->";
const std::vector<std::string> kRandomReg4Shapes = {
    "2 4 6 6 3 3 8", "4 4",     "9 3 4 7 3 7", "3 2 4 8 9", "6",
    "4 3 6 7 6",     "3 5 8 9", "4 6 7 2 5 7", "8 4 9",     "9 9 8 9",
    "9 6 3",         "4 6 4",   "7 3 9",       "9 6",       "5 2 6 5 8",
    "2 5 8 2 6 5 9", "3 4",     "2 2 5 7 4",   "8 3 7",     "5 9 3 6"};

TEST(ContractionOrder, RandomTwentyOperandsNoWorseThanOptEinsumGreedy) {
  Ordered o = orderOf(kRandomReg4Pattern, kRandomReg4Shapes);
  EXPECT_EQ(o.path.size(), 19u); // pairwise steps only: nothing to sum alone
  // opt_einsum 3.4:
  //   oe.contract_path(eq, *shapes, shapes=True, optimize="greedy")[1].opt_cost
  // with eq and shapes the pattern and shapes above (letters for names).
  const Int optEinsumGreedy = 31261039200;
  EXPECT_LE(o.flops, optEinsumGreedy);
  // The same call with optimize="dp" (no outer products) gives 6302143756;
  // the search gives up here, its randomized greedy orders come within 20%
  // (7324177944 when this test was written).
  const Int optEinsumDp = 6302143756;
  EXPECT_LE(o.flops, optEinsumDp + optEinsumDp / 5);
}

TEST(ContractionOrder, RandomGreedyFallbackIsDeterministic) {
  Ordered first = orderOf(kRandomReg4Pattern, kRandomReg4Shapes);
  for (int k = 0; k < 3; ++k) {
    Ordered again = orderOf(kRandomReg4Pattern, kRandomReg4Shapes);
    EXPECT_EQ(again.flops, first.flops);
    EXPECT_EQ(again.path, first.path);
  }
}

} // namespace
