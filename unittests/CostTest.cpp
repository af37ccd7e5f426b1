// The cost model: FLOP and byte formulas per op, views versus copies, the
// einsum contraction order, 128-bit counts, and the device table.
//
// Conventions (docs/cost-model.md): an einsum over index set I with T
// operands costs prod(I) * (max(1, T - 1) + [something is summed]), as
// opt_einsum counts it, so a matmul is 2*m*n*k; a reduction of N elements to
// M outputs costs N - M (plus M divisions for a mean); elementwise ops cost
// one FLOP per output element; views move no bytes.
#include "TestHelpers.h"

#include "ein/Analysis/Cost.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

using namespace ein;
using namespace ein::test;

namespace {

/// Keeps the inferred structure alive for the CostInput that points at it.
struct Prepared {
  CostInput input;
  std::optional<TransformInfo> transform;
  std::optional<EinsumInfo> einsum;
};

OpKind kindOfTransform(PatternUse use) {
  return use == PatternUse::Reduce   ? OpKind::Reduce
         : use == PatternUse::Repeat ? OpKind::Repeat
                                     : OpKind::Rearrange;
}

/// rearrange/reduce/repeat of one tensor.
void prepareTransform(Prepared &p, PatternUse use, const char *pattern,
                      const char *shape, DType dtype, const char *sizes = "",
                      ReduceKind reduction = ReduceKind::Sum) {
  InferContext ctx;
  auto info = analyzeTransform(ctx, use, patternOf(pattern, use),
                               shapeOf(shape), sizeArgsOf(sizes));
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  p.transform = *info;
  p.input.kind = kindOfTransform(use);
  p.input.inputs = {TensorType{shapeOf(shape), dtype}};
  p.input.outputs = {TensorType{info->result, dtype}};
  p.input.transform = &*p.transform;
  p.input.reduction = reduction;
}

/// einsum of several tensors of one dtype, into `out`.
void prepareEinsum(Prepared &p, const char *pattern,
                   const std::vector<std::string> &shapes, DType dtype,
                   DType out) {
  InferContext ctx;
  std::vector<Shape> in;
  for (auto &s : shapes)
    in.push_back(shapeOf(s));
  auto info =
      analyzeEinsum(ctx, patternOf(pattern, PatternUse::Einsum), in, {});
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  p.einsum = *info;
  p.input.kind = OpKind::Einsum;
  for (auto &s : in)
    p.input.inputs.push_back(TensorType{s, dtype});
  p.input.outputs = {TensorType{info->result, out}};
  p.input.einsum = &*p.einsum;
}

//===----------------------------------------------------------------------===//
// One table for every kind of op
//===----------------------------------------------------------------------===//

enum class Kind { Rearrange, Reduce, Repeat, Einsum, Elementwise };

struct CostCase {
  const char *name;
  Kind kind;
  const char *pattern; // elementwise: the op name ("add", "exp", ...)
  std::vector<std::string> inputs;
  DType dtype;
  const char *sizes; // keyword sizes of the pattern
  ReduceKind reduction;
  const char *env;   // bindings for the numbers
  const char *flops; // Quantity::str(): a number when bound, else formula
  const char *read, *written;
  bool view;
};

void PrintTo(const CostCase &c, std::ostream *os) { *os << c.name; }

void prepare(Prepared &p, const CostCase &c) {
  switch (c.kind) {
  case Kind::Rearrange:
    return prepareTransform(p, PatternUse::Rearrange, c.pattern,
                            c.inputs[0].c_str(), c.dtype, c.sizes);
  case Kind::Reduce:
    return prepareTransform(p, PatternUse::Reduce, c.pattern,
                            c.inputs[0].c_str(), c.dtype, c.sizes, c.reduction);
  case Kind::Repeat:
    return prepareTransform(p, PatternUse::Repeat, c.pattern,
                            c.inputs[0].c_str(), c.dtype, c.sizes);
  case Kind::Einsum:
    return prepareEinsum(p, c.pattern, c.inputs, c.dtype, c.dtype);
  case Kind::Elementwise: {
    std::string op = c.pattern;
    p.input.kind = OpKind::Elementwise;
    ASSERT_NE(findElementwise(op), nullptr) << op;
    p.input.fn = findElementwise(op)->fn;
    InferContext ctx;
    Shape out = shapeOf(c.inputs[0]);
    for (auto &s : c.inputs) {
      p.input.inputs.push_back(TensorType{shapeOf(s), c.dtype});
      auto b = inferBroadcast(ctx, out, shapeOf(s));
      ASSERT_TRUE(bool(b)) << describeError(b.error());
      out = *b;
    }
    p.input.outputs = {TensorType{out, c.dtype}};
    return;
  }
  }
}

class CostTableTest : public ::testing::TestWithParam<CostCase> {};

TEST_P(CostTableTest, FlopsBytesAndView) {
  const CostCase &c = GetParam();
  Prepared p;
  prepare(p, c);
  if (HasFatalFailure())
    return;
  OpCost cost = computeCost(p.input, bindingsOf(c.env));
  EXPECT_EQ(cost.flops.str(), c.flops);
  EXPECT_EQ(cost.bytesRead.str(), c.read);
  EXPECT_EQ(cost.bytesWritten.str(), c.written);
  EXPECT_EQ(cost.view, c.view);
}

using RK = ReduceKind;
const DType F32 = DType::F32, BF16 = DType::BF16, F16 = DType::F16,
            F64 = DType::F64, F8 = DType::F8E4M3;

const CostCase kCosts[] = {
    // einsum, symbolic: opt_einsum's count.
    {"MatmulSymbolic",
     Kind::Einsum,
     "i j, j l -> i l",
     {"m k", "k n"},
     F32,
     "",
     RK::Sum,
     "",
     "2*k*m*n",
     "4*k*m + 4*k*n",
     "4*m*n",
     false},
    // 2*128*256*64 = 4194304 (opt_einsum 3.4 opt_cost agrees).
    {"MatmulBound",
     Kind::Einsum,
     "i j, j l -> i l",
     {"m k", "k n"},
     F32,
     "",
     RK::Sum,
     "m=128 k=256 n=64",
     "4194304",
     "196608",
     "32768",
     false},
    {"MatmulConcreteF64",
     Kind::Einsum,
     "i j, j l -> i l",
     {"3 5", "5 7"},
     F64,
     "",
     RK::Sum,
     "",
     "210",
     "400",
     "168",
     false},
    {"AttentionSymbolic",
     Kind::Einsum,
     "b h s d, b h t d -> b h s t",
     {"b h s d", "b h t d"},
     BF16,
     "",
     RK::Sum,
     "",
     "2*b*d*h*s*t",
     "2*b*d*h*s + 2*b*d*h*t",
     "2*b*h*s*t",
     false},
    // 2*2*8*1024*1024*64 = 2147483648 (opt_einsum 3.4 agrees).
    {"AttentionBound",
     Kind::Einsum,
     "b h s d, b h t d -> b h s t",
     {"b h s d", "b h t d"},
     BF16,
     "",
     RK::Sum,
     "b=2 h=8 s=1024 t=1024 d=64",
     "2147483648",
     "4194304",
     "33554432",
     false},
    {"OuterProductNoSum",
     Kind::Einsum,
     "i, j -> i j",
     {"m", "n"},
     F32,
     "",
     RK::Sum,
     "",
     "m*n",
     "4*m + 4*n",
     "4*m*n",
     false},
    {"HadamardNoSum",
     Kind::Einsum,
     "i, i -> i",
     {"n", "n"},
     F32,
     "",
     RK::Sum,
     "",
     "n",
     "8*n",
     "4*n",
     false},
    {"DotProduct",
     Kind::Einsum,
     "i, i -> ",
     {"n", "n"},
     F32,
     "",
     RK::Sum,
     "",
     "2*n",
     "8*n",
     "4",
     false},
    // One operand: max(1, 0) + 1 = 2 per index point (opt_einsum: 14 for 7).
    {"Trace",
     Kind::Einsum,
     "i i -> ",
     {"7 7"},
     F32,
     "",
     RK::Sum,
     "",
     "14",
     "196",
     "4",
     false},
    {"RowSumViaEinsum",
     Kind::Einsum,
     "i j -> i",
     {"m n"},
     F32,
     "",
     RK::Sum,
     "",
     "2*m*n",
     "4*m*n",
     "4*m",
     false},
    {"BatchedMatmulF8",
     Kind::Einsum,
     "... i j, ... j k -> ... i k",
     {"4 8 16", "4 16 2"},
     F8,
     "",
     RK::Sum,
     "",
     "2048",
     "640",
     "64",
     false},

    // reduce: N - M combining ops, + M for a mean.
    {"ReduceSumSymbolic",
     Kind::Reduce,
     "b s d -> b d",
     {"b s d"},
     F32,
     "",
     RK::Sum,
     "",
     "b*d*s - b*d",
     "4*b*d*s",
     "4*b*d",
     false},
    {"ReduceMeanSymbolic",
     Kind::Reduce,
     "b s d -> b d",
     {"b s d"},
     F32,
     "",
     RK::Mean,
     "",
     "b*d*s",
     "4*b*d*s",
     "4*b*d",
     false},
    // 8 outputs of 7 elements: 8*6 = 48.
    {"ReduceSumConcrete",
     Kind::Reduce,
     "b s d -> b d",
     {"2 7 4"},
     F32,
     "",
     RK::Sum,
     "",
     "48",
     "224",
     "32",
     false},
    {"ReduceMeanConcrete",
     Kind::Reduce,
     "b s d -> b d",
     {"2 7 4"},
     F32,
     "",
     RK::Mean,
     "",
     "56",
     "224",
     "32",
     false},
    // An empty reduced axis: each output is the identity, no combining
    // (N - M would be -8); a mean still divides (0/0).
    {"ReduceSumOverEmptyAxis",
     Kind::Reduce,
     "b s d -> b d",
     {"2 0 4"},
     F32,
     "",
     RK::Sum,
     "",
     "0",
     "0",
     "32",
     false},
    // var in two passes: 4 FLOPs per input element (mean: add and divide;
    // then subtract, square, add, divide), the input read twice.
    {"ReduceVarSymbolic",
     Kind::Reduce,
     "b s d -> b d",
     {"b s d"},
     F32,
     "",
     RK::Var,
     "",
     "4*b*d*s",
     "8*b*d*s",
     "4*b*d",
     false},
    // 2*7*4 = 56 elements: 224 FLOPs, 2 * 224 bytes read, 8 outputs.
    {"ReduceVarConcrete",
     Kind::Reduce,
     "b s d -> b d",
     {"2 7 4"},
     F32,
     "",
     RK::Var,
     "",
     "224",
     "448",
     "32",
     false},
    // Empty: no element, but two divisions (0/0) per output.
    {"ReduceVarOverEmptyAxis",
     Kind::Reduce,
     "b s d -> b d",
     {"2 0 4"},
     F32,
     "",
     RK::Var,
     "",
     "16",
     "0",
     "32",
     false},
    {"ReduceMeanOverEmptyAxis",
     Kind::Reduce,
     "b s d -> b d",
     {"2 0 4"},
     F32,
     "",
     RK::Mean,
     "",
     "8",
     "0",
     "32",
     false},
    {"ReduceMaxConcrete",
     Kind::Reduce,
     "b s d -> b d",
     {"2 7 4"},
     F32,
     "",
     RK::Max,
     "",
     "48",
     "224",
     "32",
     false},
    {"ReduceAll",
     Kind::Reduce,
     "i j -> ",
     {"m n"},
     F32,
     "",
     RK::Sum,
     "",
     "m*n - 1",
     "4*m*n",
     "4",
     false},
    {"MaxPool2x2",
     Kind::Reduce,
     "b c (h 2) (w 2) -> b c h w",
     {"1 3 32 32"},
     BF16,
     "",
     RK::Max,
     "",
     "2304",
     "6144",
     "1536",
     false},

    // elementwise: one FLOP per output element.
    {"AddSameShape",
     Kind::Elementwise,
     "add",
     {"b s d", "b s d"},
     F32,
     "",
     RK::Sum,
     "",
     "b*d*s",
     "8*b*d*s",
     "4*b*d*s",
     false},
    {"AddBroadcastBias",
     Kind::Elementwise,
     "add",
     {"b s d", "d"},
     BF16,
     "",
     RK::Sum,
     "b=2 s=3 d=4",
     "24",
     "56",
     "48",
     false},
    {"ExpUnary",
     Kind::Elementwise,
     "exp",
     {"n"},
     F32,
     "",
     RK::Sum,
     "",
     "n",
     "4*n",
     "4*n",
     false},

    // rearrange: a view keeps the order of the elementary axes.
    {"SplitHeadsIsView",
     Kind::Rearrange,
     "b s (h d) -> b s h d",
     {"2 10 512"},
     F32,
     "h=8",
     RK::Sum,
     "",
     "0",
     "0",
     "0",
     true},
    {"TransposeHeadsIsCopy",
     Kind::Rearrange,
     "b s (h d) -> b h s d",
     {"2 10 512"},
     F32,
     "h=8",
     RK::Sum,
     "",
     "0",
     "40960",
     "40960",
     false},
    {"FlattenIsView",
     Kind::Rearrange,
     "b c h w -> b (c h w)",
     {"b c h w"},
     F32,
     "",
     RK::Sum,
     "",
     "0",
     "0",
     "0",
     true},
    {"TransposeIsCopySymbolic",
     Kind::Rearrange,
     "b h w c -> b c h w",
     {"b h w c"},
     BF16,
     "",
     RK::Sum,
     "",
     "0",
     "2*b*c*h*w",
     "2*b*c*h*w",
     false},
    {"MergeSplitIsView",
     Kind::Rearrange,
     "(a b) c -> a (b c)",
     {"6 5"},
     F32,
     "a=2",
     RK::Sum,
     "",
     "0",
     "0",
     "0",
     true},
    {"SqueezeIsView",
     Kind::Rearrange,
     "b 1 c -> b c",
     {"x 1 y"},
     F32,
     "",
     RK::Sum,
     "",
     "0",
     "0",
     "0",
     true},
    {"UnitTransposeIsView",
     Kind::Rearrange,
     "a b -> b a",
     {"1 n"},
     F32,
     "",
     RK::Sum,
     "",
     "0",
     "0",
     "0",
     true},
    {"EllipsisTransposeIsCopy",
     Kind::Rearrange,
     "... h w -> ... w h",
     {"2 3 4"},
     F32,
     "",
     RK::Sum,
     "",
     "0",
     "96",
     "96",
     false},

    // repeat: a view when each new axis has a dim of its own (stride 0).
    {"RepeatNewLeadingAxisIsView",
     Kind::Repeat,
     "h w -> c h w",
     {"4 5"},
     F32,
     "c=3",
     RK::Sum,
     "",
     "0",
     "0",
     "0",
     true},
    {"RepeatNewTrailingAxisIsView",
     Kind::Repeat,
     "h w -> h w c",
     {"4 5"},
     F32,
     "c=3",
     RK::Sum,
     "",
     "0",
     "0",
     "0",
     true},
    {"RepeatIntoCompositionIsCopy",
     Kind::Repeat,
     "h w -> (2 h) w",
     {"4 5"},
     F32,
     "",
     RK::Sum,
     "",
     "0",
     "80",
     "160",
     false},
    {"RepeatInterleaveIsCopy",
     Kind::Repeat,
     "h w -> h (w c)",
     {"4 5"},
     F16,
     "c=3",
     RK::Sum,
     "",
     "0",
     "40",
     "120",
     false},
    {"RepeatWithTransposeIsCopy",
     Kind::Repeat,
     "h w -> w c h",
     {"4 5"},
     F32,
     "c=3",
     RK::Sum,
     "",
     "0",
     "80",
     "240",
     false},
};

INSTANTIATE_TEST_SUITE_P(Ops, CostTableTest, ::testing::ValuesIn(kCosts),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Contraction order for 3+ operands
//===----------------------------------------------------------------------===//

using Path = std::vector<std::pair<unsigned, unsigned>>;
using Steps = std::vector<ContractionStep>;

/// The steps of a pairwise path.
Steps stepsOf(const Path &path) {
  Steps steps;
  for (auto [i, j] : path)
    steps.push_back({i, j});
  return steps;
}

struct ChainCase {
  const char *name;
  const char *pattern;
  std::vector<std::string> shapes;
  const char *env;
  Path path;
  const char *flops, *naive;
};

void PrintTo(const ChainCase &c, std::ostream *os) { *os << c.name; }

class ContractionTest : public ::testing::TestWithParam<ChainCase> {};

TEST_P(ContractionTest, OptimalOrder) {
  const ChainCase &c = GetParam();
  Prepared p;
  prepareEinsum(p, c.pattern, c.shapes, DType::F32, DType::F32);
  if (HasFatalFailure())
    return;
  Bindings env = bindingsOf(c.env);
  OpCost cost = computeCost(p.input, env);
  EXPECT_EQ(cost.path, stepsOf(c.path));
  EXPECT_EQ(contractionPath(*p.input.einsum, env), c.path);
  EXPECT_EQ(cost.flops.str(), c.flops);
  ASSERT_TRUE(cost.naiveFlops.has_value());
  EXPECT_EQ(cost.naiveFlops->str(), c.naive);
}

// Hand computation for ab,bc,cd->ad: (AB)C costs 2abc + 2acd, A(BC) costs
// 2bcd + 2abd, (AC)B costs abcd + 2abcd; the naive loop costs 3abcd. Paths
// are opt_einsum's: after contracting (i, j) the result is appended.
// Every number below equals opt_einsum 3.4's contract_path(...,
// optimize="optimal") opt_cost / naive_cost for the same shapes.
const ChainCase kChains[] = {
    // a=10 b=20 c=30 d=40: (AB)C = 2*10*30*(20+40) = 36000.
    {"ChainLeftFirst",
     "a b, b c, c d -> a d",
     {"10 20", "20 30", "30 40"},
     "",
     {{0, 1}, {0, 1}},
     "36000",
     "720000"},
    // a=1000 b=10 c=1000 d=10: A(BC) = 2*10*10*(1000+1000) = 400000.
    {"ChainRightFirst",
     "a b, b c, c d -> a d",
     {"1000 10", "10 1000", "1000 10"},
     "",
     {{1, 2}, {0, 1}},
     "400000",
     "300000000"},
    // The same with symbolic shapes, bound through the environment.
    {"ChainRightFirstSymbolic",
     "a b, b c, c d -> a d",
     {"p q", "q r", "r s"},
     "p=1000 q=10 r=1000 s=10",
     {{1, 2}, {0, 1}},
     "400000",
     "300000000"},
    // 4 operands, a=2 b=50 c=3 d=60 e=4: 600 + 1440 + 48 = 2088.
    {"FourOperands",
     "a b, b c, c d, d e -> a e",
     {"2 50", "50 3", "3 60", "60 4"},
     "",
     {{0, 1}, {0, 1}, {0, 1}},
     "2088",
     "288000"},
    // Triangle to a scalar, i=8 j=16 k=32: (BC) first = 8192 + 256 = 8448.
    {"TriangleToScalar",
     "i j, j k, i k -> ",
     {"8 16", "16 32", "8 32"},
     "",
     {{1, 2}, {0, 1}},
     "8448",
     "12288"},
};

INSTANTIATE_TEST_SUITE_P(Einsum, ContractionTest, ::testing::ValuesIn(kChains),
                         [](const auto &info) { return info.param.name; });

TEST(Contraction, SymbolicFormulaFollowsChosenPath) {
  Prepared p;
  prepareEinsum(p, "a b, b c, c d -> a d", {"p q", "q r", "r s"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  // The numbers choose the order; the formula is kept in the dims.
  Bindings order = bindingsOf("p=1000 q=10 r=1000 s=10");
  EXPECT_EQ(contractionPath(*p.input.einsum, order), (Path{{1, 2}, {0, 1}}));
  OpCost cost = computeCost(p.input, order);
  EXPECT_EQ(cost.flops.expr.str(), "2*p*q*s + 2*q*r*s");
  EXPECT_EQ(cost.naiveFlops->expr.str(), "3*p*q*r*s");
}

TEST(Contraction, TwoOperandsHaveNoPath) {
  Prepared p;
  prepareEinsum(p, "i j, j k -> i k", {"m k", "k n"}, DType::F32, DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_TRUE(cost.path.empty());
  EXPECT_FALSE(cost.naiveFlops.has_value());
  // Asked directly, the order of two operands is the one pair.
  EXPECT_EQ(contractionPath(*p.input.einsum, {}), (Path{{0, 1}}));
}

TEST(Contraction, SevenOperandChain) {
  // A chain of 7 matrices, sizes 2,3,...: every operand contracted exactly
  // once, and cheaper than the naive loop. Left to right keeps the 2-row
  // product: 2*2*(3*4 + 4*5 + 5*6 + 6*7 + 7*8 + 8*9) = 928 (opt_einsum 3.4
  // optimal agrees).
  Prepared p;
  prepareEinsum(p, "a b, b c, c d, d e, e f, f g, g h -> a h",
                {"2 3", "3 4", "4 5", "5 6", "6 7", "7 8", "8 9"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_EQ(cost.path.size(), 6u);
  ASSERT_TRUE(cost.flops.value && cost.naiveFlops && cost.naiveFlops->value);
  EXPECT_LT(*cost.flops.value, *cost.naiveFlops->value);
  // The naive count: 8 indices, 7 terms: 2*3*...*9 * (6 + 1).
  EXPECT_EQ(cost.naiveFlops->str(), "2540160");
  EXPECT_EQ(cost.flops.str(), "928");
}

TEST(Contraction, OuterProductFirst) {
  // i = j = 10, k = 1000. x_i with t_ijk first: 2*i*j*k = 200000, then y_j:
  // 2*j*k = 20000, 220000 in all. The outer product x_i y_j first costs
  // i*j = 100 (nothing summed), then 2*i*j*k = 200000: 200100.
  Prepared p;
  prepareEinsum(p, "i, j, i j k -> k", {"10", "10", "10 10 1000"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_EQ(cost.path, (Steps{{0, 1}, {0, 1}}));
  EXPECT_EQ(cost.flops.str(), "200100");
}

TEST(Contraction, OneOperandStepFirstWhenCheaper) {
  // a=2 b=3 c=4 d=5; d is only in the third operand. Pairwise, (x z) first
  // sums d, 2*a*b*d = 60, then y: 2*a*b*c = 48, 108 in all; (x y) first:
  // 48, then z: 2*a*c*d = 80, 128; (y z) first: 2*b*c*d = 120, then x: 48,
  // 168. Summing d out of z alone first (one operand: 2 per point, 2*d = 10)
  // leaves a scalar, [x, y, z']; the scalar times x, a*b = 6 (nothing
  // summed), then y, 48: 64. (opt_einsum 3.4: optimal 108; dp 66, which
  // multiplies the scalar in last, into the a*c = 8 result.)
  Prepared p;
  prepareEinsum(p, "a b, b c, d -> a c", {"a b", "b c", "d"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  Bindings env = bindingsOf("a=2 b=3 c=4 d=5");
  OpCost cost = computeCost(p.input, env);
  EXPECT_EQ(cost.path, (Steps{{2}, {0, 2}, {0, 1}}));
  EXPECT_EQ(cost.flops.str(), "64");
  EXPECT_EQ(cost.flops.expr.str(), "2*a*b*c + a*b + 2*d");
  // The pairwise order alone.
  EXPECT_EQ(contractionPath(*p.input.einsum, env), (Path{{0, 2}, {0, 1}}));
}

TEST(Contraction, OneOperandStepFirstSavesALargeIndex) {
  // a=100 b=c=d=2; a is only in x. Pairwise the best is (x y) first,
  // 2*a*b*c = 800, then z: 2*c*d = 8, 808. Summing a out of x first costs
  // 2*a*b = 400, then x y: 2*b*c = 8, then z: 8, 416. After the one-operand
  // step x is last: [y, z, x], so x y is (0,2). (opt_einsum 3.4 dp: 416.)
  Prepared p;
  prepareEinsum(p, "a b, b c, c d -> d", {"100 2", "2 2", "2 2"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_EQ(cost.path, (Steps{{0}, {0, 2}, {0, 1}}));
  EXPECT_EQ(cost.flops.str(), "416");
}

TEST(Contraction, NoOneOperandStepWhenDearer) {
  // a=1000 b=c=2; a is only in x. Pairwise: x y, 2*a*b = 4000 (a scalar),
  // then z: c = 2, 4002. Summing a first: 2*a*b = 4000, then x y: 2*b = 4,
  // then z: 2, 4006. (opt_einsum 3.4: optimal 4002, dp 4006.)
  Prepared p;
  prepareEinsum(p, "a b, b, c -> c", {"1000 2", "2", "2"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_EQ(cost.path, (Steps{{0, 1}, {0, 1}}));
  EXPECT_EQ(cost.flops.str(), "4002");
}

TEST(Contraction, UnboundSizesCountAs512) {
  // p=1000 r=1000 s=10, q unbound (512): (x y) z costs 2*p*q*r + 2*p*r*s,
  // about 1.04e9; x (y z) costs 2*q*r*s + 2*p*q*s = 20480000.
  Prepared p;
  prepareEinsum(p, "a b, b c, c d -> a d", {"p q", "q r", "r s"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  Bindings env = bindingsOf("p=1000 r=1000 s=10");
  EXPECT_EQ(contractionPath(*p.input.einsum, env), (Path{{1, 2}, {0, 1}}));
  OpCost cost = computeCost(p.input, env);
  EXPECT_EQ(cost.flops.expr.str(), "2*p*q*s + 2*q*r*s");
  EXPECT_FALSE(cost.flops.value.has_value());
}

TEST(Contraction, EqualCostsGiveTheSameOrderEveryTime) {
  // Every order of four equal vectors into one costs the same.
  Prepared p;
  prepareEinsum(p, "a, a, a, a -> a", {"8", "8", "8", "8"}, DType::F32,
                DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  Path first = contractionPath(*p.input.einsum, {});
  EXPECT_EQ(first.size(), 3u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(contractionPath(*p.input.einsum, {}), first);
}

/// Replays `path` on n operands: each step one or two live positions, and
/// one result left after every operand took part in a pair.
bool isCompletePath(const Steps &path, size_t n) {
  size_t live = n, pairs = 0;
  for (auto &step : path) {
    if (step.size() == 1
            ? step[0] >= live
            : !(step.size() == 2 && step[0] < step[1] && step[1] < live))
      return false;
    if (step.size() == 2) {
      --live;
      ++pairs;
    }
  }
  return live == 1 && pairs + 1 == n;
}

/// A chain of n matrices "a0 a1, a1 a2, ... -> a0 an" with dims[k] the size
/// of a_k, and its cheapest cost by the textbook matrix-chain recurrence
/// (2 * d_i * d_k * d_j per product), the oracle for the search.
struct MatrixChain {
  std::string pattern;
  std::vector<std::string> shapes;
  Int optimal;
};

MatrixChain matrixChain(const std::vector<Int> &dims) {
  size_t n = dims.size() - 1;
  MatrixChain chain;
  for (size_t k = 0; k < n; ++k) {
    chain.pattern += fmt::format("{}a{} a{}", k ? ", " : "", k, k + 1);
    chain.shapes.push_back(
        fmt::format("{} {}", toString(dims[k]), toString(dims[k + 1])));
  }
  chain.pattern += fmt::format(" -> a0 a{}", n);
  // best[i][j]: the cheapest product of matrices i..j.
  std::vector<std::vector<Int>> best(n, std::vector<Int>(n, 0));
  for (size_t len = 2; len <= n; ++len)
    for (size_t i = 0; i + len <= n; ++i) {
      size_t j = i + len - 1;
      best[i][j] = -1;
      for (size_t k = i; k < j; ++k) {
        Int c = best[i][k] + best[k + 1][j] +
                2 * dims[i] * dims[k + 1] * dims[j + 1];
        if (best[i][j] < 0 || c < best[i][j])
          best[i][j] = c;
      }
    }
  chain.optimal = best[0][n - 1];
  return chain;
}

TEST(Contraction, TwentyOperandChainIsExact) {
  // 20 operands: past the exhaustive search, the connected-subset search.
  // Its subsets of a chain are the intervals, so it must find the
  // matrix-chain optimum. (No timing here: bench/contraction_order.py.)
  std::vector<Int> dims = {30, 35, 15, 5,  10, 20, 25, 40, 12, 7, 50,
                           3,  8,  60, 11, 9,  45, 6,  22, 14, 33};
  MatrixChain chain = matrixChain(dims);
  Prepared p;
  prepareEinsum(p, chain.pattern.c_str(), chain.shapes, DType::F32, DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_TRUE(isCompletePath(cost.path, 20));
  ASSERT_TRUE(cost.flops.value.has_value());
  EXPECT_EQ(toString(*cost.flops.value), toString(chain.optimal));
}

TEST(Contraction, TwelveOperandChainIsExact) {
  // 12 operands: the exhaustive search (every split, outer products too).
  std::vector<Int> dims = {30, 35, 15, 5, 10, 20, 25, 40, 12, 7, 50, 3, 8};
  MatrixChain chain = matrixChain(dims);
  Prepared p;
  prepareEinsum(p, chain.pattern.c_str(), chain.shapes, DType::F32, DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_TRUE(isCompletePath(cost.path, 12));
  ASSERT_TRUE(cost.flops.value.has_value());
  EXPECT_EQ(toString(*cost.flops.value), toString(chain.optimal));
}

TEST(Contraction, TwentyOperandStarFinishes) {
  // A hub holding 19 summed indices, each shared with one vector: every
  // subset with the hub is connected (2^19 of them), but only the cheap
  // ones are settled. A complete order, cheaper than the naive loop.
  std::string pattern, hub;
  std::vector<std::string> shapes(1);
  for (int k = 0; k < 19; ++k) {
    hub += fmt::format("{}h{}", k ? " " : "", k);
    shapes[0] += fmt::format("{}{}", k ? " " : "", 2 + k % 3);
  }
  pattern = hub;
  for (int k = 0; k < 19; ++k) {
    pattern += fmt::format(", h{}", k);
    shapes.push_back(fmt::format("{}", 2 + k % 3));
  }
  pattern += " ->";
  Prepared p;
  prepareEinsum(p, pattern.c_str(), shapes, DType::F32, DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_TRUE(isCompletePath(cost.path, 20));
  ASSERT_TRUE(cost.flops.value && cost.naiveFlops && cost.naiveFlops->value);
  EXPECT_LT(*cost.flops.value, *cost.naiveFlops->value);
}

TEST(Contraction, TwentyOperandCliqueFallsBackToGreedy) {
  // Twenty operands sharing one summed index z: every subset is connected
  // and many cost about the same, more than the search may look at, so it
  // gives up for the greedy orders. Still a complete order, cheaper than
  // the naive loop.
  std::string pattern, output;
  std::vector<std::string> shapes;
  for (int k = 0; k < 20; ++k) {
    pattern += fmt::format("{}a{} z", k ? ", " : "", k);
    output += fmt::format(" a{}", k);
    shapes.push_back(fmt::format("{} 4", 2 + k % 6));
  }
  pattern += " ->" + output;
  Prepared p;
  prepareEinsum(p, pattern.c_str(), shapes, DType::F32, DType::F32);
  ASSERT_FALSE(HasFatalFailure());
  OpCost cost = computeCost(p.input, {});
  EXPECT_TRUE(isCompletePath(cost.path, 20));
  ASSERT_TRUE(cost.flops.value && cost.naiveFlops && cost.naiveFlops->value);
  EXPECT_LT(*cost.flops.value, *cost.naiveFlops->value);
}

//===----------------------------------------------------------------------===//
// Pack, unpack, cast, constant
//===----------------------------------------------------------------------===//

TEST(CostOtherOps, PackCopiesEverything) {
  CostInput in;
  in.kind = OpKind::Pack;
  in.inputs = {TensorType{shapeOf("b n c"), DType::F32},
               TensorType{shapeOf("b c"), DType::F32}};
  in.outputs = {TensorType{shapeOf("b n+1 c"), DType::F32}};
  OpCost c = computeCost(in, bindingsOf("b=2 n=3 c=4"));
  EXPECT_EQ(c.flops.str(), "0");
  EXPECT_EQ(c.bytesRead.str(), "128");    // (24 + 8) * 4
  EXPECT_EQ(c.bytesWritten.str(), "128"); // 2*4*4 * 4
  EXPECT_FALSE(c.view);
  EXPECT_EQ(c.bytes().str(), "256");
}

TEST(CostOtherOps, UnpackAlongLeadingAxisIsView) {
  CostInput in;
  in.kind = OpKind::Unpack;
  in.inputs = {TensorType{shapeOf("7 c"), DType::F32}};
  in.outputs = {TensorType{shapeOf("3 c"), DType::F32},
                TensorType{shapeOf("4 c"), DType::F32}};
  in.packAxesBefore = 0;
  OpCost view = computeCost(in, {});
  EXPECT_TRUE(view.view);
  EXPECT_EQ(view.bytes().str(), "0");
  in.packAxesBefore = 1;
  OpCost copy = computeCost(in, {});
  EXPECT_FALSE(copy.view);
  EXPECT_EQ(copy.bytesRead.str(), "28*c");
  EXPECT_EQ(copy.bytesWritten.str(), "28*c");
}

TEST(CostOtherOps, CastMovesBytesWithoutFlops) {
  CostInput in;
  in.kind = OpKind::Cast;
  in.inputs = {TensorType{shapeOf("n"), DType::F32}};
  in.outputs = {TensorType{shapeOf("n"), DType::BF16}};
  OpCost c = computeCost(in, {});
  EXPECT_EQ(c.flops.str(), "0");
  EXPECT_EQ(c.bytesRead.str(), "4*n");
  EXPECT_EQ(c.bytesWritten.str(), "2*n");
  EXPECT_EQ(c.bytes().str(), "6*n");
}

TEST(CostOtherOps, ConstantIsFree) {
  CostInput in;
  in.kind = OpKind::Constant;
  in.outputs = {TensorType{{}, DType::F32}};
  OpCost c = computeCost(in, {});
  EXPECT_EQ(c.flops.str(), "0");
  EXPECT_EQ(c.bytes().str(), "0");
}

//===----------------------------------------------------------------------===//
// 128-bit counts
//===----------------------------------------------------------------------===//

TEST(CostScale, Gpt3TrainingFlopsPrintExactly) {
  // 6 * N * D with N = 175e9 parameters and D = 300e9 tokens = 3.15e23.
  SizeExpr sixND =
      SizeExpr::constant(6) * SizeExpr::symbol("N") * SizeExpr::symbol("D");
  Bindings env = {{"N", Int(175) * pow10(9)}, {"D", Int(300) * pow10(9)}};
  Quantity q = Quantity::of(sixND, env);
  ASSERT_TRUE(q.value.has_value());
  EXPECT_EQ(q.str(), "315000000000000000000000");
  EXPECT_EQ(Quantity::of(sixND, {}).str(), "6*D*N");
  // The often-quoted 3.14e23 survives a round trip through text.
  auto parsed = parseInt("314000000000000000000000");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(toString(*parsed), "314000000000000000000000");
}

TEST(CostScale, MatmulBeyondSixtyFourBits) {
  // A forward pass over 300e9 tokens through a 12288x49152 projection:
  // 2 * 3e11 * 12288 * 49152 = 362387865600000000000 FLOPs.
  Prepared p;
  prepareEinsum(p, "t d, d f -> t f", {"tokens d", "d f"}, DType::BF16,
                DType::BF16);
  ASSERT_FALSE(HasFatalFailure());
  Bindings env = {{"tokens", Int(300) * pow10(9)}, {"d", 12288}, {"f", 49152}};
  OpCost c = computeCost(p.input, env);
  EXPECT_EQ(c.flops.str(), "362387865600000000000");
  // Bytes written: 3e11 * 49152 * 2.
  EXPECT_EQ(c.bytesWritten.str(), "29491200000000000");
}

TEST(CostScale, OverflowFallsBackToFormula) {
  Quantity q = Quantity::of(SizeExpr::symbol("n") * SizeExpr::symbol("n") *
                                SizeExpr::symbol("n"),
                            {{"n", Int(1) << 50}});
  EXPECT_FALSE(q.value.has_value());
  EXPECT_EQ(q.str(), "n*n*n");
}

//===----------------------------------------------------------------------===//
// Devices and rooflines
//===----------------------------------------------------------------------===//

TEST(Devices, TableEntries) {
  const DeviceSpec *h100 = findDevice("h100");
  ASSERT_NE(h100, nullptr);
  EXPECT_DOUBLE_EQ(h100->peakFor(DType::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100->peakFor(DType::F16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100->peakFor(DType::F8E4M3), 1978.9e12);
  EXPECT_DOUBLE_EQ(h100->peakFor(DType::F32), 67e12);
  EXPECT_DOUBLE_EQ(h100->peakFor(DType::F64), 67e12);
  EXPECT_DOUBLE_EQ(h100->bandwidth, 3.35e12);

  const DeviceSpec *a100 = findDevice("a100");
  ASSERT_NE(a100, nullptr);
  // No fp8 units: fp8 runs at the 16-bit rate.
  EXPECT_DOUBLE_EQ(a100->peakFor(DType::F8E5M2), 312e12);
  EXPECT_DOUBLE_EQ(a100->peakFor(DType::F32), 19.5e12);

  const DeviceSpec *h200 = findDevice("h200");
  ASSERT_NE(h200, nullptr);
  EXPECT_DOUBLE_EQ(h200->bandwidth, 4.8e12);
  EXPECT_EQ(findDevice("v100"), nullptr);
  EXPECT_EQ(findDevice("H100"), nullptr);
  EXPECT_EQ(deviceTable().size(), 3u);
}

struct RooflineCase {
  const char *name;
  double flops, bytes, peak, bandwidth, seconds;
};

void PrintTo(const RooflineCase &c, std::ostream *os) { *os << c.name; }

class RooflineTest : public ::testing::TestWithParam<RooflineCase> {};

TEST_P(RooflineTest, Seconds) {
  const RooflineCase &c = GetParam();
  EXPECT_DOUBLE_EQ(rooflineSeconds(c.flops, c.bytes, c.peak, c.bandwidth),
                   c.seconds);
}

const RooflineCase kRooflines[] = {
    {"ComputeBound", 2e12, 1e9, 1e12, 1e9, 2.0},
    {"MemoryBound", 1e12, 3e9, 1e12, 1e9, 3.0},
    {"Balanced", 1e12, 1e9, 1e12, 1e9, 1.0},
    {"NoPeakMeansMemoryOnly", 1e15, 2e9, 0, 1e9, 2.0},
    {"NoBandwidthMeansComputeOnly", 4e12, 1e15, 1e12, 0, 4.0},
    // 2*2*8*1024*1024*64 FLOPs of bf16 attention scores on an H100.
    {"AttentionOnH100", 2147483648.0, 0, 989.4e12, 3.35e12,
     2147483648.0 / 989.4e12},
};

INSTANTIATE_TEST_SUITE_P(Roofline, RooflineTest,
                         ::testing::ValuesIn(kRooflines),
                         [](const auto &info) { return info.param.name; });

// The device table is the one list of devices: --device's names and
// default, and the match of a driver's GPU name (as nvidia-smi prints it).
TEST(DeviceTable, NamesDefaultAndGPUMatch) {
  EXPECT_EQ(deviceNames("|"), "a100|h100|h200");
  EXPECT_EQ(deviceNames(", ", true), "a100, h100 (default), h200");
  EXPECT_EQ(defaultDevice().name, "h100");
  const DeviceSpec *h100 = findDeviceForGPU("NVIDIA H100 80GB HBM3");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->name, "h100");
  const DeviceSpec *a100 = findDeviceForGPU("NVIDIA A100-SXM4-80GB");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->name, "a100");
  EXPECT_EQ(findDeviceForGPU("NVIDIA GeForce RTX 4090"), nullptr);
}

} // namespace
