// Layout inference (docs/distributed.md §3): each op's rule, the collectives
// it implies and their sizes, checked against hand-derived values.
#include "CheckedSnippet.h"

#include "ein/Sema/Layout.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

using namespace ein;
using namespace ein::test;

namespace {

/// One collective as the test expects it: "all-reduce tp 4096" (kind, axis,
/// elements per rank at the case's sizes), with " max" for a reduction
/// other than a sum.
std::string describe(const CheckedFunction &fn, const InferredCollective &c) {
  auto n = c.elements.evaluate(fn.ctx.env);
  std::string out = fmt::format("{} {} {}", collectiveName(c.kind), c.axis,
                                n ? toString(*n) : c.elements.str());
  if (c.reduction != ReduceKind::Sum)
    out += std::string(" ") + reduceKindName(c.reduction);
  if (c.afterOp >= 0 && fn.ops[c.afterOp].phase != GradPhase::Forward)
    out += std::string(" ") + gradPhaseName(fn.ops[c.afterOp].phase);
  return out;
}

struct LayoutCase {
  const char *name;
  const char *source; // after `mesh dp, tp` and the dims below
  const char *function;
  /// The layout of the function's first result as its op made it.
  const char *resultLayout;
  std::vector<std::string> collectives;
};

void PrintTo(const LayoutCase &c, std::ostream *os) { *os << c.name; }

/// Sizes: b=8 s=16 d=32 f=64 v=128 k=64, dp=2 tp=4.
const char *kPrelude = R"ein(mesh dp, tp
dim b = 8
dim s = 16
dim d = 32
dim f = 64
dim v = 128
dim k = 64
)ein";

class LayoutRuleTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(LayoutRuleTest, Infers) {
  const LayoutCase &c = GetParam();
  CheckOptions options;
  options.meshSizes = {{"dp", 2}, {"tp", 4}};
  auto checked = checkSnippet(std::string(kPrelude) + c.source, options);
  ASSERT_EQ(checked->firstError(), "");
  const CheckedFunction *fn = checked->result.find(c.function);
  ASSERT_NE(fn, nullptr);
  ASSERT_EQ(fn->layouts.size(), fn->values.size());
  unsigned r = fn->returns[0];
  EXPECT_EQ(layoutStr(fn->ctx.expand(fn->values[r].type.shape), fn->layouts[r]),
            c.resultLayout);
  std::vector<std::string> got;
  for (auto &col : fn->collectives)
    got.push_back(describe(*fn, col));
  EXPECT_EQ(got, c.collectives);
}

// Elements per rank (nccl-tests' S over the dtype's bytes), by hand:
// an all-reduce of b s d split on dp: (8/2)*16*32 = 2048; of b s d
// replicated: 8*16*32 = 4096.
const LayoutCase kCases[] = {
    // Column-parallel: the output keeps the weight's split, no collective.
    {"ColumnParallel",
     R"ein(
def f1(x: f32["b s d"], w: f32["d f@tp"]) -> f32["b s f@tp"]:
    return einsum(x, w, "b s d, d f -> b s f")
)ein",
     "f1",
     "b s f@tp",
     {}},
    // Row-parallel: the split f is summed, an all-reduce of b*s*d.
    {"RowParallel",
     R"ein(
def f1(h: f32["b@dp s f@tp"], w: f32["f@tp d"]) -> f32["b@dp s d"]:
    return einsum(h, w, "b s f, f d -> b s d")
)ein",
     "f1",
     "b@dp s d (partial sum over tp)",
     {"all-reduce tp 2048"}},
    // The result declared split on tp: a reduce-scatter of the whole b*s*d
    // (its input) instead.
    {"ReduceScatter",
     R"ein(
def f1(h: f32["b s f@tp"], w: f32["f@tp d"]) -> f32["b s@tp d"]:
    return einsum(h, w, "b s f, f d -> b s d")
)ein",
     "f1",
     "b s d (partial sum over tp)",
     {"reduce-scatter tp 4096"}},
    // Elementwise keeps the split; a replicated operand is sliced locally.
    {"ElementwiseSlicesReplicated",
     R"ein(
def f1(x: f32["b s f@tp"], bias: f32["f"]) -> f32["b s f@tp"]:
    return gelu(x + bias)
)ein",
     "f1",
     "b s f@tp",
     {}},
    // A var over a split axis is not a function of the blocks': the
    // operand is gathered first, S = b*v = 8*128 = 1024 (whole); the
    // result is whole, nothing pending. The same for take_along picking
    // along a split axis (its tensor gathered, b*v).
    {"VarGathersOperand",
     R"ein(
def f1(x: f32["b v@tp"]) -> f32["b"]:
    return reduce(x, "b v -> b", "var")
)ein",
     "f1",
     "b",
     {"all-gather tp 1024"}},
    {"TakeAlongGathersTensor",
     R"ein(
def f1(x: f32["b@dp v@tp"], ids: i64["b@dp"]) -> f32["b@dp"]:
    return take_along(x, ids, "v")
)ein",
     "f1",
     "b@dp",
     {"all-gather tp 512"}},
    // Dropout's mask is drawn by the index in the whole tensor: its operand
    // is gathered first, over dp (S = b*(v/4) = 256) then over tp (the
    // whole, 1024); the result is whole.
    {"DropoutGathersOperand",
     R"ein(
def f1(x: f32["b@dp v@tp"], key: i64[""]) -> f32["b v"]:
    return dropout(x, 0.5, key)
)ein",
     "f1",
     "b v",
     {"all-gather dp 256", "all-gather tp 1024"}},
    // A split through a pattern's major factor that does not divide into
    // the blocks ((h c) with h = s/8 = 2 over tp = 4): the operand is
    // gathered first, S = b*s = 8*16 = 128; the result is whole.
    {"UnevenMajorGathersOperand",
     R"ein(
def f1(x: f32["b s@tp"]) -> f32["b 8"]:
    return reduce(x, "b (h c) -> b c", "sum", c=8)
)ein",
     "f1",
     "b 8",
     {"all-gather tp 128"}},
    // A max over a split axis: an all-reduce taking the max, of b elements.
    {"MaxReduce",
     R"ein(
def f1(x: f32["b v@tp"]) -> f32["b"]:
    return reduce(x, "b v -> b", "max")
)ein",
     "f1",
     "b (partial max over tp)",
     {"all-reduce tp 8 max"}},
    // Partial sums read by a non-linear op are all-reduced first, once,
    // though read twice.
    {"ResolvedOnceWhereRead",
     R"ein(
def f1(x: f32["b v@tp"]) -> f32["b"]:
    z = reduce(x, "b v -> b", "sum")
    return exp(z) + z
)ein",
     "f1",
     "b",
     {"all-reduce tp 8"}},
    // Partial sums added stay partial: one all-reduce of the sum.
    {"SumOfPartialSums",
     R"ein(
def f1(x: f32["b k@tp"], w1: f32["k@tp d"], w2: f32["k@tp d"]) -> f32["b d"]:
    return einsum(x, w1, "b k, k d -> b d") + einsum(x, w2, "b k, k d -> b d")
)ein",
     "f1",
     "b d (partial sum over tp)",
     {"all-reduce tp 256"}},
    // Vocab-parallel embedding: a masked local take, then an all-reduce of
    // the b*s*d rows.
    {"VocabParallelTake",
     R"ein(
def f1(table: f32["v@tp d"], ids: i64["b s"]) -> f32["b s d"]:
    return take(table, ids, "v")
)ein",
     "f1",
     "b s d (partial sum over tp)",
     {"all-reduce tp 4096"}},
    // A transpose keeps the split on its dim.
    {"Transpose",
     R"ein(
def f1(x: f32["b s@tp d"]) -> f32["d b s@tp"]:
    return rearrange(x, "b s d -> d b s")
)ein",
     "f1",
     "d b s@tp",
     {}},
    // A composition keeps the split of its major factor: (heads e) from
    // heads@tp.
    {"MergeMajor",
     R"ein(
def f1(x: f32["b f@tp d"]) -> f32["b (f d)@tp"]:
    return rearrange(x, "b f d -> b (f d)")
)ein",
     "f1",
     "b (d*f)@tp",
     {}},
    // A helper whose signature writes no layout takes its argument's.
    {"GenericHelper",
     R"ein(
def scale(x: f32["*r d"]) -> f32["*r d"]:
    return x * 2.0

def f1(x: f32["b@dp d"]) -> f32["b@dp d"]:
    return scale(x)
)ein",
     "f1",
     "b@dp d",
     {}},
    // pack keeps the splits of the dims around `*`.
    {"PackAround",
     R"ein(
def f1(x: f32["b@dp k"], y: f32["b@dp d"]) -> f32["b@dp (k+d)"]:
    p, _ = pack([x, y], "b *")
    return p
)ein",
     "f1",
     "b@dp d+k",
     {}},
    // grad() splits the three-operand einsum into two after the check (an
    // op inserted before the call): proj's result is still all-reduced
    // where the call ends (b*d = 256), and the backward sums the split f in
    // the gradient of x a (b*r = 32).
    {"CallAfterGradInserts",
     R"ein(
dim r = 4

def proj(h: f32["b f@tp"], w: f32["f@tp d"]) -> f32["b d"]:
    return einsum(h, w, "b f, f d -> b d")

def f1(x: f32["b k"], a: f32["k r"], w1: f32["r f@tp"],
       w2: f32["f@tp d"]) -> (f32[""], f32["k r"]):
    h = einsum(x, a, w1, "b k, k r, r f -> b f")
    l = reduce(proj(h, w2) ** 2, "b d ->", "sum")
    return l, grad(l, wrt=[a])
)ein",
     "f1",
     "",
     {"all-reduce tp 256", "all-reduce tp 32 data-grad"}},
    // A data-parallel mean: an all-reduce averaging one number.
    {"MeanLoss",
     R"ein(
def f1(x: f32["b@dp s"]) -> f32[""]:
    return reduce(x * x, "b s ->", "mean")
)ein",
     "f1",
     " (partial mean over dp)",
     {"all-reduce dp 1 mean"}},
    // The Megatron MLP's training step with grad(): the forward all-reduce
    // of the row-parallel projection, and the data gradient of x (summed
    // over the split f of the column-parallel one) all-reduced in the
    // backward (grad()'s phase for a `wrt` value's gradient: x is one);
    // the weight gradients keep their splits.
    {"MegatronMLPGrad",
     R"ein(
def f1(x: f32["b s d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> (
        f32[""], f32["b s d"], f32["d f@tp"], f32["f@tp d"]):
    h = gelu(einsum(x, w_fc, "b s d, d f -> b s f"))
    y = einsum(h, w_proj, "b s f, f d -> b s d")
    l = reduce(y * y, "b s d ->", "sum")
    dx, dw_fc, dw_proj = grad(l, wrt=[x, w_fc, w_proj])
    return l, dx, dw_fc, dw_proj
)ein",
     "f1",
     "",
     {"all-reduce tp 4096", "all-reduce tp 4096 weight-grad"}},
};

INSTANTIATE_TEST_SUITE_P(Rules, LayoutRuleTest, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return info.param.name; });

/// The first error of `source` (after the prelude), "line:col: message".
std::string layoutError(const std::string &source) {
  CheckOptions options;
  options.meshSizes = {{"dp", 2}, {"tp", 4}};
  return checkSnippet(std::string(kPrelude) + source, options)->firstError();
}

TEST(LayoutErrorTest, ReplicatedResultOfSplitValue) {
  EXPECT_EQ(layoutError(R"ein(
def f1(x: f32["b v@tp"]) -> f32["b v"]:
    return exp(x)
)ein"),
            "10:12: result 1 of 'f1' is declared replicated on tp (dim v) "
            "but the exp at line 10 computes it split along tp: each rank "
            "would hold a different block where the type promises the whole "
            "tensor; write reshard(x, \"b v\") to make the collective "
            "explicit, or declare the layout the value has (\"b v@tp\")");
}

TEST(LayoutErrorTest, OperandsSplitDifferently) {
  EXPECT_EQ(layoutError(R"ein(
def f1(x: f32["b@dp v"], y: f32["b@tp v"]) -> f32["b v"]:
    return x * y
)ein"),
            "10:14: mul's operands are split along different mesh axes: "
            "\"b@dp v\" and \"b@tp v\"; reshard one of them (reshard(x, "
            "\"...\"))");
}

TEST(LayoutErrorTest, UnsupportedOpRefusedByName) {
  EXPECT_EQ(layoutError(R"ein(
def f1(x: f32["b v@tp"]) -> f32["b 4"]:
    return slice(x, "v", 0, 4)
)ein"),
            "10:12: slice of a value sharded on tp is not supported yet: the "
            "sliced dim is split (docs/distributed.md §3)");
}

TEST(LayoutTest, NoMeshNoLayouts) {
  auto checked = checkSnippet(R"ein(
def f1(x: f32["b v"]) -> f32["b"]:
    return reduce(x, "b v -> b", "sum")
)ein");
  ASSERT_EQ(checked->firstError(), "");
  EXPECT_TRUE(checked->result.functions[0].layouts.empty());
  EXPECT_TRUE(checked->result.functions[0].collectives.empty());
}

} // namespace
