// Shape inference for rearrange, reduce, repeat, einsum, pack, unpack and
// broadcasting, with symbolic and concrete sizes, and the InferContext that
// proves, binds and records size relations.
#include "TestHelpers.h"

#include "ein/Shape/Infer.h"

#include <gtest/gtest.h>

using namespace ein;
using namespace ein::test;

namespace {

enum class Op { Rearrange, Reduce, Repeat, Einsum, Pack, Unpack, Broadcast };
using A = ShapeError::Anchor;

struct InferCase {
  const char *name;
  Op op;
  const char *pattern; // unused for broadcast
  /// Operand shapes. Unpack: the packed tensor, then the parts.
  std::vector<std::string> inputs;
  const char *sizes = "";      // keyword sizes, "h=8 d=heads"
  const char *env = "";        // known numbers, "hidden=512"
  const char *result = "";     // shapeStr(); unpack: results joined by " | "
  const char *error = nullptr; // a substring of the error message
  A anchor = A::Op;
  unsigned where = 0; // pattern offset or operand/kwarg index
};

void PrintTo(const InferCase &c, std::ostream *os) { *os << c.name; }

InferCase ok(const char *name, Op op, const char *pattern,
             std::vector<std::string> inputs, const char *result,
             const char *sizes = "", const char *env = "") {
  return {name, op, pattern, std::move(inputs), sizes, env, result};
}

InferCase bad(const char *name, Op op, const char *pattern,
              std::vector<std::string> inputs, const char *error, A anchor,
              unsigned where, const char *sizes = "", const char *env = "") {
  return {name,  op,     pattern, std::move(inputs), sizes, env, "",
          error, anchor, where};
}

PatternUse useOf(Op op) {
  switch (op) {
  case Op::Rearrange:
    return PatternUse::Rearrange;
  case Op::Reduce:
    return PatternUse::Reduce;
  case Op::Repeat:
    return PatternUse::Repeat;
  case Op::Einsum:
    return PatternUse::Einsum;
  default:
    return PatternUse::Pack;
  }
}

/// Runs the case's inference: the result text, or the error.
Expected<std::string> run(const InferCase &c, InferContext &ctx) {
  std::vector<Shape> shapes;
  for (auto &s : c.inputs)
    shapes.push_back(shapeOf(s));
  if (c.op == Op::Broadcast) {
    auto r = inferBroadcast(ctx, shapes.at(0), shapes.at(1));
    if (!r)
      return r.error();
    return shapeStr(*r);
  }
  Pattern p = patternOf(c.pattern, useOf(c.op));
  auto sizes = sizeArgsOf(c.sizes);
  auto text = [](const Expected<Shape> &s) -> Expected<std::string> {
    if (!s)
      return s.error();
    return shapeStr(*s);
  };
  switch (c.op) {
  case Op::Rearrange:
    return text(inferRearrange(ctx, p, shapes.at(0), sizes));
  case Op::Reduce:
    return text(inferReduce(ctx, p, shapes.at(0), sizes));
  case Op::Repeat:
    return text(inferRepeat(ctx, p, shapes.at(0), sizes));
  case Op::Einsum:
    return text(inferEinsum(ctx, p, shapes, sizes));
  case Op::Pack: {
    auto r = inferPack(ctx, p, shapes);
    if (!r)
      return r.error();
    return shapeStr(r->packed);
  }
  case Op::Unpack: {
    std::vector<Shape> parts(shapes.begin() + 1, shapes.end());
    auto r = inferUnpack(ctx, p, shapes.at(0), parts);
    if (!r)
      return r.error();
    std::string out;
    for (auto &s : *r)
      out += (out.empty() ? "" : " | ") + shapeStr(s);
    return out;
  }
  case Op::Broadcast:
    break;
  }
  return ShapeError::atOp("unreachable");
}

class InferTest : public ::testing::TestWithParam<InferCase> {};

TEST_P(InferTest, ResultOrError) {
  const InferCase &c = GetParam();
  InferContext ctx;
  ctx.env = bindingsOf(c.env);
  auto r = run(c, ctx);
  if (!c.error) {
    ASSERT_TRUE(bool(r)) << describeError(r.error());
    EXPECT_EQ(*r, c.result);
    return;
  }
  ASSERT_FALSE(bool(r)) << "inferred \"" << *r << "\"";
  const ShapeError &e = r.error();
  EXPECT_NE(e.message.find(c.error), std::string::npos)
      << "message: " << e.message;
  EXPECT_EQ(e.anchor, c.anchor) << describeError(e);
  if (c.anchor == A::Pattern) {
    EXPECT_EQ(e.offset, c.where) << describeError(e);
  } else if (c.anchor != A::Op) {
    EXPECT_EQ(e.index, c.where) << describeError(e);
  }
}

const char *kSplit = "b s (h d) -> b h s d";
const char *kPool = "b c (h 2) (w 2) -> b c h w";
const char *kMatmul = "i j, j k -> i k";
const char *kBatched = "... i j, ... j k -> ... i k";

const InferCase kRearrange[] = {
    ok("SplitHeadsSymbolic", Op::Rearrange, kSplit, {"batch seq heads*d"},
       "batch heads seq d", "h=heads"),
    ok("SplitHeadsComposition", Op::Rearrange, kSplit, {"batch seq (heads d)"},
       "batch heads seq d", "h=heads"),
    ok("SplitHeadsQuotient", Op::Rearrange, kSplit, {"batch seq hidden"},
       "batch 8 seq hidden/8", "h=8"),
    ok("SplitHeadsBoundByEnv", Op::Rearrange, kSplit, {"batch seq hidden"},
       "batch 8 seq 64", "h=8", "hidden=512"),
    ok("SplitHeadsConcrete", Op::Rearrange, kSplit, {"2 10 512"}, "2 8 10 64",
       "h=8"),
    bad("SplitHeadsNotDividing", Op::Rearrange, kSplit, {"2 10 100"},
        "composition (h d): size 100 is not divisible by 8", A::Pattern, 4,
        "h=8"),
    bad("SplitHeadsBoundNotDividing", Op::Rearrange, kSplit,
        {"batch seq hidden"},
        "composition (h d): size hidden (= 100) is not divisible by 8",
        A::Pattern, 4, "h=8", "hidden=100"),
    bad("SplitHeadsTwoUnknowns", Op::Rearrange, kSplit, {"batch seq hidden"},
        "cannot infer the sizes of 'h' and 'd' in (h d): give all but one as "
        "keyword sizes",
        A::Pattern, 4),
    bad("SplitHeadsRankTooLow", Op::Rearrange, kSplit, {"batch seq"},
        "the pattern 'b s (h d)' expects 3 dims, but the operand has 2 "
        "(\"batch seq\")",
        A::Operand, 0, "h=8"),
    ok("Flatten", Op::Rearrange, "b c h w -> b (c h w)", {"2 3 4 5"}, "2 60"),
    ok("Transpose", Op::Rearrange, "b c h w -> b h w c", {"batch c h w"},
       "batch h w c"),
    ok("EllipsisOverPack", Op::Rearrange, "... h w -> ... (h w)",
       {"*batch h w"}, "*batch h*w"),
    ok("EllipsisComposedOnRight", Op::Rearrange, "b ... -> b (...)", {"n 2 3"},
       "n 6"),
    ok("SqueezeUnit", Op::Rearrange, "b 1 c -> b c", {"x 1 y"}, "x y"),
    bad("SqueezeNonUnit", Op::Rearrange, "b 1 c -> b c", {"x 2 y"},
        "composition 1: expected size 1, got 2", A::Pattern, 2),
    ok("Unsqueeze", Op::Rearrange, "b c -> b 1 c", {"x y"}, "x 1 y"),
    bad("RankTooHigh", Op::Rearrange, "a b -> b a", {"x y z"},
        "expects 2 dims, but the operand has 3", A::Operand, 0),
    bad("AxisOnlyOnLeft", Op::Rearrange, "a b -> a", {"x y"},
        "axis 'b' appears only on the left side of rearrange", A::Pattern, 2),
    bad("AxisOnlyOnRight", Op::Rearrange, "a -> a b", {"x"},
        "axis 'b' appears only on the right side of rearrange", A::Pattern, 7),
    bad("EllipsisOnlyOnLeft", Op::Rearrange, "a ... -> a", {"x y"},
        "'...' appears only on the left side of rearrange", A::Pattern, 2),
    bad("NumberInRearrange", Op::Rearrange, "a b -> (a b) 2", {"x y"},
        "anonymous axis '2' in rearrange: only 1 is allowed", A::Pattern, 13),
    ok("BothSizesGiven", Op::Rearrange, "(h d) -> h d", {"12"}, "4 3",
       "h=4 d=3"),
    bad("BothSizesGivenMismatch", Op::Rearrange, "(h d) -> h d", {"12"},
        "composition (h d): expected size 15, got 12", A::Pattern, 0,
        "h=5 d=3"),
    ok("BindsFreeNameToProduct", Op::Rearrange, "(h d) -> h d", {"n"}, "4 3",
       "h=4 d=3"),
    ok("SymbolicKwargQuotient", Op::Rearrange, "(h d) -> h d", {"n"}, "k n/k",
       "h=k"),
    bad("KwargNotInPattern", Op::Rearrange, "a b -> b a", {"x y"},
        "size 'c' is not an axis of the pattern 'a b -> b a'", A::Kwarg, 0,
        "c=3"),
    bad("KwargZeroDivides", Op::Rearrange, "(h d) -> h d", {"12"},
        "composition (h d): division by a size of 0", A::Pattern, 0, "h=0"),
    bad("KwargZeroDividesZero", Op::Rearrange, "(h d) -> h d", {"0"},
        "composition (h d): division by a size of 0", A::Pattern, 0, "d=0"),
    ok("KwargGivenZeroInputSplits", Op::Rearrange, "(h d) -> h d", {"0"}, "0 4",
       "d=4"),
    ok("SymbolicSelfQuotient", Op::Rearrange, "(h d) -> h d", {"n"}, "1 n",
       "d=n"),
    bad("SelfQuotientOfZero", Op::Rearrange, "(h d) -> h d", {"n"},
        "composition (h d): division by a size of 0", A::Pattern, 0, "d=n",
        "n=0"),
    bad("KwargNegative", Op::Rearrange, "(h d) -> h d", {"12"},
        "size 'd' must not be negative, got -1", A::Kwarg, 1, "h=2 d=2-3"),
    bad("KwargTwice", Op::Rearrange, "(h d) -> h d", {"12"},
        "size 'h' given twice", A::Kwarg, 1, "h=2 h=2"),
    ok("PackBindsToRank", Op::Rearrange, "a b -> b a", {"*x"}, "x_1 x_0"),
    ok("PackFillsMissingRank", Op::Rearrange, "a b c -> c b a", {"*x y"},
       "y x_1 x_0"),
    ok("PackOfRankOneKeepsName", Op::Rearrange, "a b -> b a", {"*x y"}, "y x"),
    ok("PackUnderEllipsis", Op::Rearrange, "a ... b -> b ... a", {"p *q r"},
       "r *q p"),
    bad("PackAgainstNamedAxis", Op::Rearrange, "... a -> a ...", {"x *q"},
        "cannot match named axes of '... a' against variadic *q of unknown "
        "rank",
        A::Operand, 0),
};

const InferCase kReduce[] = {
    ok("ReduceSpatial", Op::Reduce, "b c h w -> b c", {"batch c h w"},
       "batch c"),
    ok("PoolConcrete", Op::Reduce, kPool, {"1 3 32 32"}, "1 3 16 16"),
    ok("PoolSymbolic", Op::Reduce, kPool, {"x y hh ww"}, "x y hh/2 ww/2"),
    bad("PoolOddSize", Op::Reduce, kPool, {"1 3 31 32"},
        "composition (h 2): size 31 is not divisible by 2", A::Pattern, 4),
    ok("KeepUnitDims", Op::Reduce, "b c h w -> b c 1 1", {"n c h w"},
       "n c 1 1"),
    ok("KeepEmptyParens", Op::Reduce, "b c h w -> b c () ()", {"n c h w"},
       "n c 1 1"),
    bad("NumberOnRight", Op::Reduce, "b c -> b 2", {"x y"},
        "anonymous axis '2' on the right side of reduce", A::Pattern, 9),
    bad("UnknownOutputAxis", Op::Reduce, "b c -> b x", {"x y"},
        "output axis 'x' is missing from the input of reduce", A::Pattern, 9),
    ok("ReduceUnderEllipsis", Op::Reduce, "... c -> ...", {"a b c"}, "a b"),
    ok("ReduceToScalar", Op::Reduce, "b c -> ", {"x y"}, ""),
    bad("ReduceRank", Op::Reduce, "b c h w -> b c", {"x y"},
        "expects 4 dims, but the operand has 2", A::Operand, 0),
};

const InferCase kRepeat[] = {
    ok("NewAxis", Op::Repeat, "h w -> c h w", {"x y"}, "3 x y", "c=3"),
    ok("NumberInComposition", Op::Repeat, "h w -> (2 h) w", {"x y"}, "2*x y"),
    ok("RepeatConcrete", Op::Repeat, "h w -> h (w 3)", {"4 5"}, "4 15"),
    bad("MissingNewSize", Op::Repeat, "h w -> c h w", {"x y"},
        "new axis 'c' needs a size: repeat(..., c=N)", A::Pattern, 7),
    bad("DropsInputAxis", Op::Repeat, "h w -> h", {"x y"},
        "axis 'w' of the input is missing from the output of repeat",
        A::Pattern, 2),
    bad("NumberOnLeft", Op::Repeat, "h 2 -> h", {"x 2"},
        "anonymous axis '2' on the left side of repeat", A::Pattern, 2),
    bad("DropsEllipsis", Op::Repeat, "a ... -> a", {"x y"},
        "'...' of the input is missing from the output of repeat", A::Pattern,
        2),
    ok("RepeatUnderEllipsis", Op::Repeat, "... -> b ...", {"x y"}, "batch x y",
       "b=batch"),
    ok("SymbolicKwarg", Op::Repeat, "h w -> h w c", {"x y"}, "x y k", "c=k"),
};

const InferCase kEinsum[] = {
    ok("Attention", Op::Einsum, "b h s d, b h t d -> b h s t",
       {"batch heads seq d", "batch heads seq2 d"}, "batch heads seq seq2"),
    ok("Matmul", Op::Einsum, kMatmul, {"m k", "k n"}, "m n"),
    ok("Outer", Op::Einsum, "i, j -> i j", {"m", "n"}, "m n"),
    ok("Chain", Op::Einsum, "a b, b c, c d -> a d", {"2 3", "3 4", "4 5"},
       "2 5"),
    bad("CannotProveContraction", Op::Einsum, kMatmul, {"m k", "k2 n"},
        "cannot prove k == k2 (axis 'j')", A::Pattern, 5),
    bad("CannotProveSeq", Op::Einsum, "b h s d, b h s d -> b h s",
        {"batch heads seq d", "batch heads seq2 d"},
        "cannot prove seq == seq2 (axis 's')", A::Pattern, 13),
    bad("ConcreteMismatch", Op::Einsum, kMatmul, {"3 4", "5 6"},
        "axis 'j': expected size 4, got 5", A::Pattern, 5),
    ok("BindsFreeName", Op::Einsum, kMatmul, {"m 4", "n 6"}, "m 6"),
    ok("KwargBindsFreeName", Op::Einsum, "i j -> i", {"a b"}, "a", "j=7"),
    bad("KwargMismatch", Op::Einsum, "i j -> i", {"a 5"},
        "axis 'j': expected size 7, got 5", A::Pattern, 2, "j=7"),
    ok("Trace", Op::Einsum, "i i -> ", {"n n"}, ""),
    ok("Diagonal", Op::Einsum, "i i -> i", {"n n"}, "n"),
    bad("DiagonalMismatch", Op::Einsum, "i i -> i", {"3 4"},
        "axis 'i': expected size 3, got 4", A::Pattern, 2),
    ok("BatchEllipsis", Op::Einsum, kBatched, {"b1 b2 m k", "b2 k n"},
       "b1 b2 m n"),
    ok("BroadcastUnitEllipsisDim", Op::Einsum, kBatched, {"5 1 m k", "3 k n"},
       "5 3 m n"),
    bad("EllipsisMismatch", Op::Einsum, "... i, ... i -> ... i", {"2 n", "3 n"},
        "'...' dims: expected size 2, got 3", A::Operand, 1),
    bad("OperandCount", Op::Einsum, kMatmul, {"m k"},
        "the pattern 'i j, j k -> i k' has 2 operand(s) but einsum got 1",
        A::Op, 0),
    bad("OutputAxisInNoInput", Op::Einsum, "i j -> i k", {"a b"},
        "output axis 'k' appears in no input of einsum", A::Pattern, 9),
    bad("NumberAxis", Op::Einsum, "i 2 -> i", {"a 2"},
        "anonymous axis '2' is not supported in einsum", A::Pattern, 2),
    bad("UnitAxis", Op::Einsum, "i 1 -> i", {"a 1"},
        "anonymous axes '1' and '()' are not supported in einsum", A::Pattern,
        2),
    // The caret goes to the input's '...', the thing the output drops.
    bad("EllipsisMissingFromOutput", Op::Einsum, "... i -> i", {"a b n"},
        "'...' covers 2 dim(s) in the inputs but is missing from the output",
        A::Pattern, 0),
    ok("ComposedAxes", Op::Einsum, "b (h d), b (h d) -> b h",
       {"x heads*d", "x heads*d"}, "x heads", "h=heads"),
    bad("FirstOperandRank", Op::Einsum, kMatmul, {"m", "k n"},
        "the pattern 'i j' expects 2 dims, but the operand has 1", A::Operand,
        0),
    bad("SecondOperandRank", Op::Einsum, kMatmul, {"m k", "n"},
        "the pattern 'j k' expects 2 dims, but the operand has 1", A::Operand,
        1),
};

const InferCase kPackUnpack[] = {
    ok("PackConcrete", Op::Pack, "b * c", {"2 3 4", "2 4"}, "2 4 4"),
    ok("PackSymbolic", Op::Pack, "b * c", {"batch n c", "batch m k c"},
       "batch k*m+n c"),
    ok("PackLeadingStar", Op::Pack, "* c", {"a b c", "d c"}, "a*b+d c"),
    ok("PackTrailingStar", Op::Pack, "b *", {"2 3 4", "2"}, "2 13"),
    bad("PackAxisMismatch", Op::Pack, "b * c", {"2 3 4", "3 4"},
        "axis 'b': expected size 2, got 3", A::Pattern, 0),
    bad("PackCannotProve", Op::Pack, "b * c", {"x 3 c", "y 4 c"},
        "cannot prove x == y (axis 'b')", A::Pattern, 0),
    bad("PackRankTooLow", Op::Pack, "b * c", {"2 3 4", "5"},
        "pack pattern 'b * c' needs at least 2 dims, but the tensor has 1",
        A::Operand, 1),
    bad("PackVariadicAgainstAxis", Op::Pack, "b * c", {"*r c"},
        "cannot match axis 'b' against variadic *r", A::Operand, 0),
    ok("UnpackConcrete", Op::Unpack, "b * c", {"2 7 4", "3", "2 2"},
       "2 3 4 | 2 2 2 4"),
    ok("UnpackSymbolic", Op::Unpack, "b * c", {"batch n+m c", "n", "m"},
       "batch n c | batch m c"),
    ok("UnpackBindsTotal", Op::Unpack, "b * c", {"2 t 4", "3", "2 2"},
       "2 3 4 | 2 2 2 4"),
    bad("UnpackMismatch", Op::Unpack, "b * c", {"2 7 4", "3", "3"},
        "the '*' dim of unpack: expected size 6, got 7", A::Operand, 0),
    bad("UnpackRank", Op::Unpack, "b * c", {"2 7", "7"},
        "unpack pattern 'b * c' expects 3 dims, but the tensor has 2",
        A::Operand, 0),
};

const InferCase kBroadcast[] = {
    ok("SameShape", Op::Broadcast, "", {"b s d", "b s d"}, "b s d"),
    ok("TrailingDim", Op::Broadcast, "", {"b s d", "d"}, "b s d"),
    ok("MiddleDimByName", Op::Broadcast, "", {"b s d", "s"}, "b s d"),
    ok("UnitDimSkipped", Op::Broadcast, "", {"b s d", "1 d"}, "b s d"),
    ok("SmallerOnLeft", Op::Broadcast, "", {"d", "b s d"}, "b s d"),
    ok("UnitOnRight", Op::Broadcast, "", {"3 4", "3 1"}, "3 4"),
    ok("UnitOnLeft", Op::Broadcast, "", {"3 1", "3 4"}, "3 4"),
    ok("ScalarLeft", Op::Broadcast, "", {"", "a b"}, "a b"),
    ok("ScalarRight", Op::Broadcast, "", {"a b", ""}, "a b"),
    ok("BroadcastableDim", Op::Broadcast, "", {"#n m", "k m"}, "k m"),
    ok("BindsFreeName", Op::Broadcast, "", {"x", "4"}, "x"),
    ok("EqualByEnv", Op::Broadcast, "", {"n", "4"}, "n", "", "n=4"),
    ok("SamePack", Op::Broadcast, "", {"*b d", "*b d"}, "*b d"),
    ok("PolynomialEquality", Op::Broadcast, "", {"(a b) c", "b*a c"}, "a*b c"),
    bad("OutOfOrder", Op::Broadcast, "", {"b s d", "d s"},
        "cannot broadcast \"d s\" against \"b s d\": dim s is out of order "
        "in the larger shape",
        A::Operand, 1),
    bad("Ambiguous", Op::Broadcast, "", {"n n", "n"},
        "ambiguous broadcast: dim n matches 2 dims of \"n n\"", A::Operand, 1),
    bad("SizeMismatch", Op::Broadcast, "", {"3 4", "3 5"},
        "broadcast dim 1: expected size 4, got 5", A::Operand, 1),
    bad("MissingDim", Op::Broadcast, "", {"a b", "c"},
        "dim c is not in the larger shape", A::Operand, 1),
    bad("MissingDimSmallerOnLeft", Op::Broadcast, "", {"e", "b s d"},
        "dim e is not in the larger shape", A::Operand, 0),
    bad("CannotProveSameRank", Op::Broadcast, "", {"a b", "b a"},
        "cannot prove a == b (broadcast dim 0)", A::Operand, 1),
    bad("EnvMismatch", Op::Broadcast, "", {"n", "5"},
        "broadcast dim 0: expected size n (= 4), got 5", A::Operand, 1, "",
        "n=4"),
    bad("PackAgainstDim", Op::Broadcast, "", {"*b d", "x d"},
        "cannot broadcast dim 0: *b vs x", A::Operand, 1),
};

auto caseName = [](const auto &info) { return std::string(info.param.name); };

INSTANTIATE_TEST_SUITE_P(Rearrange, InferTest, ::testing::ValuesIn(kRearrange),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Reduce, InferTest, ::testing::ValuesIn(kReduce),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Repeat, InferTest, ::testing::ValuesIn(kRepeat),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Einsum, InferTest, ::testing::ValuesIn(kEinsum),
                         caseName);
INSTANTIATE_TEST_SUITE_P(PackUnpack, InferTest,
                         ::testing::ValuesIn(kPackUnpack), caseName);
INSTANTIATE_TEST_SUITE_P(Broadcast, InferTest, ::testing::ValuesIn(kBroadcast),
                         caseName);

//===----------------------------------------------------------------------===//
// What inference learns: bindings, constraints, packs
//===----------------------------------------------------------------------===//

TEST(InferLearns, UnifyBindsFreeNameToProduct) {
  InferContext ctx;
  auto r = inferRearrange(ctx, patternOf("(h d) -> h d", PatternUse::Rearrange),
                          shapeOf("n"), sizeArgsOf("h=4 d=3"));
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  ASSERT_EQ(ctx.inferred.count("n"), 1u);
  EXPECT_EQ(toString(ctx.inferred.at("n")), "12");
  ASSERT_EQ(ctx.env.count("n"), 1u);
  EXPECT_EQ(toString(ctx.env.at("n")), "12");
}

TEST(InferLearns, EinsumBindsFreeName) {
  InferContext ctx;
  auto r = inferEinsum(ctx, patternOf("i j, j k -> i k", PatternUse::Einsum),
                       {shapeOf("m 4"), shapeOf("n 6")}, {});
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  EXPECT_EQ(ctx.inferred.size(), 1u);
  ASSERT_EQ(ctx.inferred.count("n"), 1u);
  EXPECT_EQ(toString(ctx.inferred.at("n")), "4");
  // A later use of `n` is now known.
  EXPECT_EQ(ctx.prove(SizeExpr::symbol("n"), SizeExpr::constant(4)),
            InferContext::Proof::Equal);
}

TEST(InferLearns, GivenNumbersAreNotInferred) {
  InferContext ctx;
  ctx.env = {{"hidden", 512}};
  auto r = inferRearrange(ctx, patternOf(kSplit, PatternUse::Rearrange),
                          shapeOf("batch seq hidden"), sizeArgsOf("h=8"));
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  EXPECT_TRUE(ctx.inferred.empty());
  EXPECT_TRUE(ctx.constraints.empty());
}

TEST(InferLearns, EntryConstraintForUndecidedDivision) {
  InferContext ctx;
  auto r = inferRearrange(ctx, patternOf(kSplit, PatternUse::Rearrange),
                          shapeOf("batch seq hidden"), sizeArgsOf("h=8"));
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  ASSERT_EQ(ctx.constraints.size(), 1u);
  const Constraint &c = ctx.constraints[0];
  EXPECT_EQ(c.kind, Constraint::Kind::Divisible);
  EXPECT_EQ(c.str(), "hidden % 8 == 0");
  EXPECT_EQ(c.reason, "composition (h d) must divide evenly");
  // The quotient atom is what the output dim holds.
  EXPECT_EQ((*r)[3].size, SizeExpr::quotient(SizeExpr::symbol("hidden"),
                                             SizeExpr::constant(8)));
}

TEST(InferLearns, RepeatBySizeZero) {
  InferContext ctx;
  auto r = inferRepeat(ctx, patternOf("a -> (a b)", PatternUse::Repeat),
                       shapeOf("3"), sizeArgsOf("b=0"));
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  EXPECT_EQ(shapeStr(*r), "0");
}

// max/min over empty axes: an error when a reduced axis is known to be 0, an
// entry check on the product of the reduced sizes when they bind later.
TEST(InferLearns, MaxNeedsNonEmptyReducedAxes) {
  Pattern p = patternOf("a b c -> c", PatternUse::Reduce);
  InferContext ctx;
  auto info =
      analyzeTransform(ctx, PatternUse::Reduce, p, shapeOf("n 4 m"), {});
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  auto ok = requireNonEmptyReduction(ctx, ReduceKind::Max, p, *info);
  ASSERT_TRUE(bool(ok)) << describeError(ok.error());
  ASSERT_EQ(ctx.constraints.size(), 1u);
  EXPECT_EQ(ctx.constraints[0].str(), "4*n >= 1");
  EXPECT_TRUE(bool(requireNonEmptyReduction(ctx, ReduceKind::Sum, p, *info)));
  EXPECT_TRUE(bool(requireNonEmptyReduction(ctx, ReduceKind::Prod, p, *info)));
  EXPECT_TRUE(bool(requireNonEmptyReduction(ctx, ReduceKind::Mean, p, *info)));
  EXPECT_EQ(ctx.constraints.size(), 1u);

  ctx.env["n"] = 0;
  auto bad = requireNonEmptyReduction(ctx, ReduceKind::Min, p, *info);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(bad.error().anchor, A::Pattern);
  EXPECT_EQ(bad.error().offset, 0u);
  EXPECT_NE(bad.error().message.find("min over an empty axis: 'a' has size 0"),
            std::string::npos)
      << bad.error().message;

  InferContext known;
  known.env["n"] = 2;
  auto fine = requireNonEmptyReduction(known, ReduceKind::Max, p, *info);
  EXPECT_TRUE(bool(fine));
  EXPECT_TRUE(known.constraints.empty());
}

TEST(InferLearns, PoolRecordsOneConstraintPerAxis) {
  InferContext ctx;
  auto r = inferReduce(ctx, patternOf(kPool, PatternUse::Reduce),
                       shapeOf("x y hh ww"), {});
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  ASSERT_EQ(ctx.constraints.size(), 2u);
  EXPECT_EQ(ctx.constraints[0].str(), "hh % 2 == 0");
  EXPECT_EQ(ctx.constraints[1].str(), "ww % 2 == 0");
}

TEST(InferLearns, PackRankBinding) {
  InferContext ctx;
  auto r = inferRearrange(ctx, patternOf("a b -> b a", PatternUse::Rearrange),
                          shapeOf("*x"), {});
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  ASSERT_EQ(ctx.packBindings.count("x"), 1u);
  EXPECT_EQ(shapeStr(ctx.packBindings.at("x")), "x_0 x_1");
  // Later shapes with `*x` expand to the bound dims.
  EXPECT_EQ(shapeStr(ctx.expand(shapeOf("b *x c"))), "b x_0 x_1 c");
  EXPECT_EQ(shapeStr(ctx.expand(shapeOf("b *y"))), "b *y");
}

TEST(InferLearns, BoundPackIsNotRebound) {
  // Once `*x` has rank 2, it no longer matches a pattern of rank 3.
  InferContext ctx;
  ctx.packBindings["x"] = shapeOf("p q");
  auto r =
      inferRearrange(ctx, patternOf("a b c -> c b a", PatternUse::Rearrange),
                     shapeOf("*x"), {});
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.error().message,
            "variadic *x was bound to rank 2 earlier in this function, so the "
            "operand has 2 dims (\"p q\"), but the pattern 'a b c' expects 3");
  EXPECT_EQ(r.error().anchor, ShapeError::Anchor::Operand);
}

//===----------------------------------------------------------------------===//
// analyzeTransform / analyzeEinsum structure
//===----------------------------------------------------------------------===//

using Names = std::vector<std::string>;

TEST(AnalyzeTransform, ElementaryAxes) {
  InferContext ctx;
  auto info = analyzeTransform(ctx, PatternUse::Rearrange,
                               patternOf(kSplit, PatternUse::Rearrange),
                               shapeOf("B S hd"), sizeArgsOf("h=8"));
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  EXPECT_EQ(info->inputAxes, (Names{"b", "s", "h", "d"}));
  EXPECT_EQ(info->outputAxes, (Names{"b", "h", "s", "d"}));
  EXPECT_EQ(info->outputGroups,
            (std::vector<Names>{{"b"}, {"h"}, {"s"}, {"d"}}));
  EXPECT_EQ(info->axisSizes.at("h").str(), "8");
  EXPECT_EQ(info->axisSizes.at("d").str(), "hd/8");
  EXPECT_EQ(shapeStr(info->result), "B 8 S hd/8");
}

TEST(AnalyzeTransform, EllipsisAndNumberAxes) {
  InferContext ctx;
  auto info =
      analyzeTransform(ctx, PatternUse::Repeat,
                       patternOf("... c -> c (2 ...)", PatternUse::Repeat),
                       shapeOf("x y c"), {});
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  EXPECT_EQ(info->inputAxes, (Names{"...0", "...1", "c"}));
  // "... c -> c (2 ...)": the 2 sits at offset 12.
  EXPECT_EQ(info->outputAxes, (Names{"c", "2@12", "...0", "...1"}));
  EXPECT_EQ(info->outputGroups,
            (std::vector<Names>{{"c"}, {"2@12", "...0", "...1"}}));
  EXPECT_EQ(info->axisSizes.at("...0").str(), "x");
  EXPECT_EQ(info->axisSizes.at("2@12").str(), "2");
  EXPECT_EQ(shapeStr(info->result), "c 2*x*y");
}

TEST(AnalyzeEinsum, BroadcastUnitEllipsisDimIsNotAnAxis) {
  InferContext ctx;
  auto info = analyzeEinsum(ctx, patternOf(kBatched, PatternUse::Einsum),
                            {shapeOf("5 1 m k"), shapeOf("3 k n")}, {});
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  ASSERT_EQ(info->operandAxes.size(), 2u);
  EXPECT_EQ(info->operandAxes[0], (Names{"...0", "i", "j"}));
  EXPECT_EQ(info->operandAxes[1], (Names{"...1", "j", "k"}));
  EXPECT_EQ(info->outputAxes, (Names{"...0", "...1", "i", "k"}));
  EXPECT_EQ(info->axisSizes.at("...1").str(), "3");
  EXPECT_EQ(info->axisSizes.at("j").str(), "k");
}

TEST(AnalyzeTransform, InputGroupsPerDim) {
  InferContext ctx;
  auto info = analyzeTransform(
      ctx, PatternUse::Reduce,
      patternOf("b ... (h 2) () -> b ... h", PatternUse::Reduce),
      shapeOf("n x y 8 1"), {});
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  // "b ... (h 2) () -> b ... h": the 2 sits at offset 9.
  EXPECT_EQ(info->inputGroups,
            (std::vector<Names>{{"b"}, {"...0"}, {"...1"}, {"h", "2@9"}, {}}));
  EXPECT_EQ(info->outputGroups,
            (std::vector<Names>{{"b"}, {"...0"}, {"...1"}, {"h"}}));
  EXPECT_EQ(shapeStr(info->result), "n x y 4");
}

TEST(AnalyzeEinsum, OperandAndOutputGroups) {
  InferContext ctx;
  auto info = analyzeEinsum(
      ctx, patternOf("... (h d), ... d -> ... h", PatternUse::Einsum),
      {shapeOf("5 1 h*d"), shapeOf("3 d")}, sizeArgsOf("h=h"));
  ASSERT_TRUE(bool(info)) << describeError(info.error());
  ASSERT_EQ(info->operandGroups.size(), 2u);
  // The size-1 dim broadcast against 3 has no elementary axis.
  EXPECT_EQ(info->operandGroups[0],
            (std::vector<Names>{{"...0"}, {}, {"h", "d"}}));
  EXPECT_EQ(info->operandGroups[1], (std::vector<Names>{{"...1"}, {"d"}}));
  EXPECT_EQ(info->outputGroups,
            (std::vector<Names>{{"...0"}, {"...1"}, {"h"}}));
  EXPECT_EQ(shapeStr(info->result), "5 3 h");
}

struct AlignCase {
  const char *name;
  const char *lhs, *rhs;
  std::vector<int> lhsAt, rhsAt; // result dim per operand dim, -1: broadcast 1
};

void PrintTo(const AlignCase &c, std::ostream *os) { *os << c.name; }

class BroadcastAlignTest : public ::testing::TestWithParam<AlignCase> {};

TEST_P(BroadcastAlignTest, Alignment) {
  const AlignCase &c = GetParam();
  InferContext ctx;
  BroadcastAlignment align;
  auto r = inferBroadcast(ctx, shapeOf(c.lhs), shapeOf(c.rhs), &align);
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  EXPECT_EQ(align.lhs, c.lhsAt);
  EXPECT_EQ(align.rhs, c.rhsAt);
}

const AlignCase kAlign[] = {
    {"Same", "b s d", "b s d", {0, 1, 2}, {0, 1, 2}},
    {"Trailing", "b s d", "d", {0, 1, 2}, {2}},
    {"Middle", "b s d", "s", {0, 1, 2}, {1}},
    {"UnitSkipped", "b s d", "1 d", {0, 1, 2}, {-1, 2}},
    {"SmallerOnLeft", "s d", "b s d", {1, 2}, {0, 1, 2}},
    {"SameRankUnitRight", "3 4", "3 1", {0, 1}, {0, -1}},
    {"SameRankUnitLeft", "3 1", "3 4", {0, -1}, {0, 1}},
    {"Scalar", "", "a b", {}, {0, 1}},
};

INSTANTIATE_TEST_SUITE_P(Broadcast, BroadcastAlignTest,
                         ::testing::ValuesIn(kAlign),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// InferContext primitives
//===----------------------------------------------------------------------===//

struct ProveCase {
  const char *name;
  const char *lhs, *rhs, *env;
  InferContext::Proof expected;
};

void PrintTo(const ProveCase &c, std::ostream *os) { *os << c.name; }

class ProveTest : public ::testing::TestWithParam<ProveCase> {};

TEST_P(ProveTest, Decides) {
  const ProveCase &c = GetParam();
  InferContext ctx;
  ctx.env = bindingsOf(c.env);
  EXPECT_EQ(ctx.prove(sizeOf(c.lhs), sizeOf(c.rhs)), c.expected);
}

const ProveCase kProve[] = {
    {"Identical", "n", "n", "", InferContext::Proof::Equal},
    {"Commuted", "a*b", "b*a", "", InferContext::Proof::Equal},
    {"Expanded", "(n+1)*(n-1)", "n*n-1", "", InferContext::Proof::Equal},
    {"OffByConstant", "n+1", "n", "", InferContext::Proof::NotEqual},
    {"DifferentConstants", "2", "3", "", InferContext::Proof::NotEqual},
    {"DifferentSymbols", "n", "m", "", InferContext::Proof::Unknown},
    {"SymbolAndNumber", "n", "4", "", InferContext::Proof::Unknown},
    {"EqualOnceBound", "n", "m", "n=3 m=3", InferContext::Proof::Equal},
    {"UnequalOnceBound", "n", "m", "n=3 m=4", InferContext::Proof::NotEqual},
    {"ProductBound", "h*d", "512", "h=8 d=64", InferContext::Proof::Equal},
    {"PartlyBound", "h*d", "512", "h=8", InferContext::Proof::Unknown},
};

INSTANTIATE_TEST_SUITE_P(Prove, ProveTest, ::testing::ValuesIn(kProve),
                         [](const auto &info) { return info.param.name; });

TEST(InferContextUnify, MessagesAndBindings) {
  InferContext ctx;
  auto a = ctx.unify(sizeOf("n"), sizeOf("m"), "axis 'x'");
  ASSERT_FALSE(bool(a));
  EXPECT_EQ(a.error().message, "cannot prove n == m (axis 'x')");
  EXPECT_EQ(a.error().anchor, ShapeError::Anchor::Op);

  auto b = ctx.unify(sizeOf("2"), sizeOf("3"), "axis 'x'");
  ASSERT_FALSE(bool(b));
  EXPECT_EQ(b.error().message, "axis 'x': expected size 2, got 3");

  // A lone free name on either side binds to the number.
  ASSERT_TRUE(bool(ctx.unify(sizeOf("8"), sizeOf("k"), "axis 'k'")));
  EXPECT_EQ(toString(ctx.inferred.at("k")), "8");
  auto c = ctx.unify(sizeOf("k"), sizeOf("9"), "axis 'k'");
  ASSERT_FALSE(bool(c));
  EXPECT_EQ(c.error().message, "axis 'k': expected size k (= 8), got 9");

  // A product of free names is not a lone name: nothing to bind.
  auto d = ctx.unify(sizeOf("p*q"), sizeOf("6"), "dim 0");
  ASSERT_FALSE(bool(d));
  EXPECT_EQ(d.error().message, "cannot prove p*q == 6 (dim 0)");
  EXPECT_EQ(ctx.inferred.count("p"), 0u);
}

// Sizes nobody named (`_`, the dims of `...`) may differ from another size
// only at run time: unify records `a == b` as an entry check (once), where
// named sizes are "cannot prove".
TEST(InferContextUnify, AnonymousSizesBecomeEntryChecks) {
  InferContext ctx;
  ASSERT_TRUE(bool(ctx.unify(sizeOf("_anon0"), sizeOf("_anon1"), "dim 0")));
  ASSERT_TRUE(bool(ctx.unify(sizeOf("_anon1"), sizeOf("_anon0"), "dim 0")));
  ASSERT_TRUE(bool(ctx.unify(sizeOf("n"), sizeOf("4*_anon2_1"), "dim 1")));
  ASSERT_EQ(ctx.constraints.size(), 2u);
  EXPECT_EQ(ctx.constraints[0].kind, Constraint::Kind::Equal);
  EXPECT_EQ(ctx.constraints[0].str(), "_anon0 == _anon1");
  EXPECT_EQ(ctx.constraints[1].str(), "n == 4*_anon2_1");
  // Provably different stays an error, and so do two named sizes.
  auto differ = ctx.unify(sizeOf("_anon0"), sizeOf("_anon0+1"), "dim 0");
  ASSERT_FALSE(bool(differ));
  auto named = ctx.unify(sizeOf("seq"), sizeOf("seq2"), "dim 0");
  ASSERT_FALSE(bool(named));
  EXPECT_EQ(named.error().message, "cannot prove seq == seq2 (dim 0)");
  // A number still binds an anonymous size (an inferred entry check).
  ASSERT_TRUE(bool(ctx.unify(sizeOf("_anon3"), sizeOf("5"), "dim 0")));
  EXPECT_EQ(toString(ctx.inferred.at("_anon3")), "5");
  EXPECT_EQ(ctx.constraints.size(), 2u);
}

TEST(AnonymousNames, FreshNamesOnly) {
  for (const char *yes : {"_anon0", "_anon12", "_anon3_0", "_anon3_15"})
    EXPECT_TRUE(isAnonymousName(yes)) << yes;
  for (const char *no : {"_anon", "anon0", "_anon0_", "_anon0_1_2", "_anonx",
                         "_anon0x", "_anon_0", "batch_0", "_"})
    EXPECT_FALSE(isAnonymousName(no)) << no;
}

TEST(Broadcast, AnonymousDimsGiveTheNamedOne) {
  InferContext ctx;
  auto r = inferBroadcast(ctx, shapeOf("_anon0 n"), shapeOf("m n"));
  ASSERT_TRUE(bool(r)) << r.error().message;
  EXPECT_EQ(shapeStr(*r), "m n");
  auto both = inferBroadcast(ctx, shapeOf("_anon1 n"), shapeOf("_anon2 n"));
  ASSERT_TRUE(bool(both)) << both.error().message;
  EXPECT_EQ(shapeStr(*both), "_anon1 n");
  // Two anonymous variadics of unknown rank: an entry check on the packs.
  auto packs = inferBroadcast(ctx, shapeOf("*_anon3 n"), shapeOf("*_anon4 n"));
  ASSERT_TRUE(bool(packs)) << packs.error().message;
  EXPECT_EQ(shapeStr(*packs), "*_anon3 n");
  ASSERT_EQ(ctx.constraints.size(), 3u);
  EXPECT_EQ(ctx.constraints[2].str(), "_anon3 == _anon4");
  // Named variadics stay an error.
  auto named = inferBroadcast(ctx, shapeOf("*a n"), shapeOf("*b n"));
  ASSERT_FALSE(bool(named));
  EXPECT_EQ(named.error().message, "cannot broadcast dim 0: *a vs *b");
}

TEST(AnalyzeEinsum, AnonymousEllipsesAreEntryChecks) {
  InferContext ctx;
  auto pattern = parsePattern("... n, ... n -> ... n", PatternUse::Einsum);
  ASSERT_TRUE(bool(pattern));
  auto r = inferEinsum(ctx, *pattern,
                       {shapeOf("*_anon0 n"), shapeOf("*_anon1 n")}, {});
  ASSERT_TRUE(bool(r)) << r.error().message;
  EXPECT_EQ(shapeStr(*r), "*_anon0 n");
  ASSERT_EQ(ctx.constraints.size(), 1u);
  EXPECT_EQ(ctx.constraints[0].str(), "_anon0 == _anon1");
  auto named =
      inferEinsum(ctx, *pattern, {shapeOf("*a n"), shapeOf("*b n")}, {});
  ASSERT_FALSE(bool(named));
  EXPECT_EQ(named.error().message, "'...' of operand 1 (*b) does not match *a");
}

TEST(PackDims, NamedAfterThePack) {
  EXPECT_EQ(shapeStr(packDims("batch", 0)), "");
  EXPECT_EQ(shapeStr(packDims("batch", 1)), "batch");
  EXPECT_EQ(shapeStr(packDims("batch", 3)), "batch_0 batch_1 batch_2");
}

TEST(InferContextUnify, PackNamesAreNotBound) {
  InferContext ctx;
  ctx.packBindings["x"] = shapeOf("a b");
  auto r = ctx.unify(sizeOf("x"), sizeOf("6"), "dim 0");
  EXPECT_FALSE(bool(r));
  EXPECT_TRUE(ctx.inferred.empty());
}

TEST(InferContextDivide, ExactQuotientOrConstraint) {
  InferContext ctx;
  auto a = ctx.divide(sizeOf("h*d"), sizeOf("h"), "composition (h d)");
  ASSERT_TRUE(bool(a));
  EXPECT_EQ(a->str(), "d");
  EXPECT_TRUE(ctx.constraints.empty());

  auto b = ctx.divide(sizeOf("hidden"), sizeOf("heads"), "size hidden/heads");
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(b->str(), "hidden/heads");
  ASSERT_EQ(ctx.constraints.size(), 1u);
  EXPECT_EQ(ctx.constraints[0].str(), "hidden % heads == 0");
  EXPECT_EQ(ctx.constraints[0].reason, "size hidden/heads must divide evenly");

  ctx.env = {{"hidden", 30}};
  auto c = ctx.divide(sizeOf("hidden"), sizeOf("8"), "composition (h d)");
  ASSERT_FALSE(bool(c));
  EXPECT_EQ(c.error().message,
            "composition (h d): size hidden (= 30) is not divisible by 8");

  auto d = ctx.divide(sizeOf("n"), sizeOf("z"), "x");
  ASSERT_TRUE(bool(d)); // z is unknown: deferred
  ctx.env["z"] = 0;
  auto e = ctx.divide(sizeOf("n"), sizeOf("z"), "x");
  ASSERT_FALSE(bool(e));
  EXPECT_EQ(e.error().message, "x: division by a size of 0");
}

// Regression (was a bug): SizeExpr::operator== (and so InferContext::prove) ignored the
// overflow flag. Substituting n = 2^64 into n*n + 5 overflows; the overflowed
// term is dropped and what is left, 5, compares equal to 5, so a dim of
// 2^128 + 5 is "proved" equal to 5. Through the checker, with
// --dim n=18446744073709551616,
//   def f(x: f32["n*n+5"]) -> f32["5"]:
//       return x
// is accepted without an error.
TEST(InferContextProve, OverflowIsNeverEqual) {
  InferContext ctx;
  ctx.env = {{"n", Int(1) << 64}};
  SizeExpr big = sizeOf("n*n + 5");
  EXPECT_NE(ctx.prove(big, sizeOf("5")), InferContext::Proof::Equal);
  EXPECT_FALSE(bool(ctx.unify(sizeOf("5"), big, "dim 0")));
}

//===----------------------------------------------------------------------===//
// Declared types
//===----------------------------------------------------------------------===//

TEST(CheckShapeMatches, FreePackBindsToCoveredDims) {
  InferContext ctx;
  auto r = checkShapeMatches(ctx, shapeOf("*batch d"), shapeOf("x y d"));
  ASSERT_TRUE(bool(r)) << describeError(r.error());
  EXPECT_EQ(shapeStr(ctx.packBindings.at("batch")), "x y");
}

TEST(CheckShapeMatches, RankMismatch) {
  InferContext ctx;
  auto r = checkShapeMatches(ctx, shapeOf("a b"), shapeOf("a b c"));
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.error().message,
            "rank mismatch: expected 2 dims (\"a b\"), got 3 (\"a b c\")");
}

TEST(CheckShapeMatches, BroadcastableAcceptsOne) {
  InferContext ctx;
  EXPECT_TRUE(bool(checkShapeMatches(ctx, shapeOf("#n m"), shapeOf("1 m"))));
  auto r = checkShapeMatches(ctx, shapeOf("a b"), shapeOf("b a"));
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.error().message, "cannot prove a == b (dim 0 of \"b a\" vs "
                               "declared \"a b\")");
}

TEST(CheckShapeMatches, PackAgainstDim) {
  InferContext ctx;
  auto r = checkShapeMatches(ctx, shapeOf("*p d"), shapeOf("*q d"));
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.error().message, "dim 0: expected *p, got *q");
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

struct ReduceKindCase {
  const char *name;
  ReduceKind kind;
};

void PrintTo(const ReduceKindCase &c, std::ostream *os) { *os << c.name; }

class ReduceKindTest : public ::testing::TestWithParam<ReduceKindCase> {};

TEST_P(ReduceKindTest, RoundTrip) {
  auto k = parseReduceKind(GetParam().name);
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(*k, GetParam().kind);
  EXPECT_STREQ(reduceKindName(GetParam().kind), GetParam().name);
}

const ReduceKindCase kReduceKinds[] = {
    {"sum", ReduceKind::Sum},   {"mean", ReduceKind::Mean},
    {"max", ReduceKind::Max},   {"min", ReduceKind::Min},
    {"prod", ReduceKind::Prod},
};

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceKindTest,
                         ::testing::ValuesIn(kReduceKinds),
                         [](const auto &info) { return info.param.name; });

TEST(ReduceKindNames, Unknown) {
  EXPECT_FALSE(parseReduceKind("avg").has_value());
  EXPECT_FALSE(parseReduceKind("Sum").has_value());
}

} // namespace
