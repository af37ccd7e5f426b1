// End-to-end checks of .ein snippets: parse, check, and either the first
// diagnostic (line:col and message) or the inferred types of a good program.
#include "TestHelpers.h"

#include "ein/Analysis/Cost.h"
#include "ein/Sema/Checker.h"
#include "ein/Sema/EntryBinding.h"
#include "ein/Shape/DTypeRules.h"
#include "ein/Syntax/Parser.h"

#include "CheckedSnippet.h"

#include <gtest/gtest.h>

#include <memory>

using namespace ein;
using namespace ein::test;

namespace {

struct Checked : test::CheckedSnippet {
  const CheckedFunction &fn(const char *name) const {
    const CheckedFunction *f = result.find(name);
    EXPECT_NE(f, nullptr) << "no function " << name;
    return f ? *f : result.functions.at(0);
  }
  const TensorType &returned(const char *name, size_t i = 0) const {
    const CheckedFunction &f = fn(name);
    return f.values.at(f.returns.at(i)).type;
  }
};

std::unique_ptr<Checked> check(const std::string &source,
                               CheckOptions options = {}) {
  return test::checkSnippet<Checked>(source, options);
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

struct DiagCase {
  const char *name;
  const char *source;
  const char *error; // "line:col: message"
};

void PrintTo(const DiagCase &c, std::ostream *os) { *os << c.name; }

class CheckerDiagTest : public ::testing::TestWithParam<DiagCase> {};

TEST_P(CheckerDiagTest, FirstError) {
  auto c = check(GetParam().source);
  ASSERT_TRUE(c->diags->hadError()) << "the snippet checked cleanly";
  EXPECT_EQ(c->firstError(), GetParam().error);
}

const DiagCase kDiags[] = {
    {"UndefinedName",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
     "    return y\n",
     "2:12: undefined name 'y'"},
    {"RankMismatchAtOperand",
     "def f(x: f32[\"a b\"]) -> f32[\"a b\"]:\n"
     "    y = rearrange(x, \"a b c -> a b c\")\n"
     "    return y\n",
     "2:19: the pattern 'a b c' expects 3 dims, but the operand has 2 "
     "(\"a b\")"},
    {"AxisOnlyOnLeftAtPatternOffset",
     "def f(x: f32[\"a b\"]) -> f32[\"a\"]:\n"
     "    y = rearrange(x, \"a b -> a c\")\n"
     "    return y\n",
     "2:25: axis 'b' appears only on the left side of rearrange"},
    {"PatternSyntaxAtOffset",
     "def f(x: f32[\"a b\"]) -> f32[\"a b\"]:\n"
     "    y = rearrange(x, \"a (b -> a b\")\n"
     "    return y\n",
     "2:25: unbalanced '(': missing ')'"},
    {"EinsumCannotProve",
     "def f(q: f32[\"b s d\"], k: f32[\"b t d\"]) -> f32[\"b s\"]:\n"
     "    return einsum(q, k, \"b s d, b s d -> b s\")\n",
     "2:35: cannot prove s == t (axis 's')"},
    {"SplitNotDividingKnownDim",
     "dim heads = 8\n"
     "def f(x: f32[\"b 100\"]) -> f32[\"b 8 12\"]:\n"
     "    return rearrange(x, \"b (h d) -> b h d\", h=heads)\n",
     "3:28: composition (h d): size 100 is not divisible by heads (= 8)"},
    {"KwargNotInPattern",
     "def f(x: f32[\"a b\"]) -> f32[\"b a\"]:\n"
     "    return rearrange(x, \"a b -> b a\", c=2)\n",
     "2:39: size 'c' is not an axis of the pattern 'a b -> b a'"},
    {"UnknownSizeName",
     "def f(x: f32[\"a b\"]) -> f32[\"a 2 b\"]:\n"
     "    return repeat(x, \"a b -> a c b\", c=k)\n",
     "2:40: unknown size 'k': declare it with 'dim' or use it in a parameter "
     "type"},
    {"ReturnShapeMismatch",
     "def f(x: f32[\"a b\"]) -> f32[\"b a\"]:\n"
     "    return x\n",
     "2:12: returned value 0 has shape \"a b\" but the function declares "
     "\"b a\": cannot prove b == a (dim 0 of \"a b\" vs declared \"b a\")"},
    {"ReturnDtypeMismatch",
     "def f(x: bf16[\"n\"]) -> f32[\"n\"]:\n"
     "    return x\n",
     "2:12: returned value 0 has dtype bf16 but the function declares f32; "
     "use astype"},
    {"ReturnCount",
     "def f(x: f32[\"n\"]) -> (f32[\"n\"], f32[\"n\"]):\n"
     "    return x\n",
     "2:5: returns 1 value(s) but the function declares 2"},
    {"BroadcastCannotProve",
     "def f(x: f32[\"a b\"], y: f32[\"b a\"]) -> f32[\"a b\"]:\n"
     "    return x + y\n",
     "2:16: cannot prove a == b (broadcast dim 0)"},
    {"MixedDtypes",
     "def f(x: f32[\"n\"], y: bf16[\"n\"]) -> f32[\"n\"]:\n"
     "    return x + y\n",
     "2:14: operands of '+' have different dtypes (f32 and bf16); convert "
     "one with astype"},
    {"ExpOfInteger",
     "def f(x: i32[\"n\"]) -> i32[\"n\"]:\n"
     "    return exp(x)\n",
     "2:16: exp needs a float tensor, got i32; use astype"},
    {"UnknownReduction",
     "def f(x: f32[\"a b\"]) -> f32[\"a\"]:\n"
     "    return reduce(x, \"a b -> a\", \"avg\")\n",
     "2:34: unknown reduction \"avg\"; expected \"sum\", \"mean\", \"max\", "
     "\"min\", \"prod\", \"any\", \"all\" or \"var\""},
    {"UnknownDtype",
     "def f(x: f33[\"n\"]) -> f32[\"n\"]:\n"
     "    return x\n",
     "1:10: unknown dtype 'f33'; expected one of f64, f32, f16, bf16, "
     "f8e4m3, f8e5m2, i64, i32, i8, bool"},
    {"BadShapeString",
     "def f(x: f32[\"a b)\"]) -> f32[\"a b\"]:\n"
     "    return x\n",
     "1:18: in shape \"a b)\": unbalanced ')' in shape"},
    {"NoReturn",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
     "    y = x\n",
     "1:5: function 'f' has no 'return'"},
    {"StatementAfterReturn",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
     "    return x\n"
     "    y = x\n",
     "3:5: statement after 'return' is never executed"},
    {"DimNameAsTarget",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
     "    n = x\n"
     "    return n\n",
     "2:5: 'n' is a dim name; choose another name"},
    {"DimDeclaredTwice", "dim n = 2\ndim n = 3\n",
     "2:5: dim 'n' is declared twice"},
    {"DimNegative", "dim n = 2 - 3\n",
     "1:11: dim 'n' must not be negative, got -1"},
    {"ShapeSizeNegative",
     "dim n = 2\n"
     "def f(x: f32[\"n-3\"]) -> f32[\"n-3\"]:\n"
     "    return x\n",
     "2:15: in shape \"n-3\": dim n-3 has size -1; sizes must not be "
     "negative"},
    {"MaxOverAxisOfSizeZero",
     "dim z = 0\n"
     "def f(x: f32[\"n z\"]) -> f32[\"n\"]:\n"
     "    return reduce(x, \"a b -> a\", \"max\")\n",
     "3:25: max over an empty axis: 'b' has size 0, and max has no identity "
     "(numpy: zero-size array to reduction operation maximum which has no "
     "identity)"},
    {"SplitByZero",
     "def f(x: f32[\"n\"]) -> f32[\"_ 0\"]:\n"
     "    return rearrange(x, \"(a b) -> a b\", b=0)\n",
     "2:26: composition (a b): division by a size of 0"},
    {"FunctionDefinedTwice",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
     "    return x\n"
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
     "    return x\n",
     "3:5: function 'f' is defined twice"},
    {"LexerError",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
     "    return x $ x\n",
     "2:14: unexpected character '$'"},
    {"SyntaxError",
     "def f(x: f32[\"n\"]) -> f32[\"n\"]\n"
     "    return x\n",
     "1:31: expected ':' after the signature, found end of line"},
    // Named dims stay strict; only anonymous ones become entry checks.
    {"NamedDimsCannotProve",
     "def f(x: f32[\"seq n\"], y: f32[\"seq2 n\"]) -> f32[\"seq n\"]:\n"
     "    return x + y\n",
     "2:16: cannot prove seq == seq2 (broadcast dim 0)"},
    // Regression (was a bug): once the body fixed the rank of *batch, its
    // dims were taken for result-only names, so a result with the batch
    // dims swapped checked.
    {"VariadicDimsAreNotResultOnly",
     "def f(x: f32[\"*batch d\"]) -> f32[\"*batch d\"]:\n"
     "    return rearrange(x, \"i j d -> j i d\")\n",
     "2:12: returned value 0 has shape \"batch_1 batch_0 d\" but the function "
     "declares \"batch_0 batch_1 d\": cannot prove batch_0 == batch_1 (dim 0 "
     "of \"batch_1 batch_0 d\" vs declared \"batch_0 batch_1 d\")"},
    {"ReservedAnonymousName",
     "def f(x: f32[\"_ _anon0\"]) -> f32[\"_ _anon0\"]:\n"
     "    return x\n",
     "1:17: in shape \"_ _anon0\": the name '_anon0' is reserved for the "
     "anonymous dims '_' and '...'; choose another name"},
    {"AnonymousNameIsNoKeywordSize",
     "def f(x: f32[\"_\"]) -> f32[\"_ 2\"]:\n"
     "    return repeat(x, \"a -> a b\", b=_anon0)\n",
     "2:36: unknown size '_anon0': declare it with 'dim' or use it in a "
     "parameter type"},
};

INSTANTIATE_TEST_SUITE_P(Checker, CheckerDiagTest, ::testing::ValuesIn(kDiags),
                         [](const auto &info) { return info.param.name; });

TEST(CheckerDiag, UnknownDimOverride) {
  CheckOptions options;
  options.dimOverrides["zzz"] = 3;
  auto c = check("def f(x: f32[\"n\"]) -> f32[\"n\"]:\n"
                 "    return x\n",
                 options);
  ASSERT_TRUE(c->diags->hadError());
  const Diagnostic &d = c->diags->diagnostics()[0];
  EXPECT_EQ(d.loc.line, 0u);
  EXPECT_EQ(d.message, "--dim zzz=3: no dim named 'zzz' in this file");
}

// Regression (was a bug): a shape the checker prints must read back. The repeat below
// yields a dim 2*(hidden/8), printed "2*hidden/8"; declaring exactly that
// reads as (2*hidden)/8 and fails with "cannot prove (2*hidden)/8 ==
// 2*hidden/8". Cause: SizeExpr::monomialStr() does not parenthesise a
// quotient atom that has a coefficient (see SizeExprTest).
TEST(CheckerDiag, PrintedQuotientShapeReadsBack) {
  auto c = check("def f(x: f32[\"n hidden\"]) -> f32[\"n 8 2*(hidden/8)\"]:\n"
                 "    return repeat(x, \"b (h d) -> b h (d 2)\", h=8)\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  std::string printed = c->returned("f").str();
  EXPECT_EQ(printed, "f32[\"n 8 2*(hidden/8)\"]");
  auto again = check("def f(x: f32[\"n hidden\"]) -> " + printed +
                     ":\n"
                     "    return repeat(x, \"b (h d) -> b h (d 2)\", h=8)\n");
  EXPECT_FALSE(again->diags->hadError()) << again->firstError();
}

// Regression (was a missing diagnostic): `acc=` was skipped for every op, so rearrange,
// reduce and repeat silently accept and ignore it:
//   rearrange(x, "a b -> b a", acc=f32)
// checks cleanly. einsum is the only op that takes `acc`.
TEST(CheckerDiag, AccOnlyForEinsum) {
  auto c = check("def f(x: f32[\"a b\"]) -> f32[\"b a\"]:\n"
                 "    return rearrange(x, \"a b -> b a\", acc=f32)\n");
  ASSERT_TRUE(c->diags->hadError());
  EXPECT_EQ(c->firstError().substr(0, 5), "2:39:");
}

//===----------------------------------------------------------------------===//
// Good programs
//===----------------------------------------------------------------------===//

const char *kAttention =
    "# Attention scores: split heads, then contract over d.\n"
    "dim heads = 8\n"
    "\n"
    "def scores(q: bf16[\"batch seq (heads d)\"], k: bf16[\"batch seq2 (heads "
    "d)\"]) -> f32[\"batch heads seq seq2\"]:\n"
    "    qh = rearrange(q, \"b s (h d) -> b h s d\", h=heads)\n"
    "    kh = rearrange(k, \"b t (h d) -> b h t d\", h=heads)\n"
    "    return einsum(qh, kh, \"b h s d, b h t d -> b h s t\", acc=f32)\n";

TEST(CheckerGood, AttentionTypes) {
  auto c = check(kAttention);
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  ASSERT_EQ(c->result.functions.size(), 1u);
  EXPECT_EQ(toString(c->result.dims.at("heads")), "8");
  const CheckedFunction &f = c->fn("scores");
  ASSERT_EQ(f.ops.size(), 3u);
  EXPECT_EQ(f.ops[0].kind, OpKind::Rearrange);
  EXPECT_EQ(f.ops[1].kind, OpKind::Rearrange);
  EXPECT_EQ(f.ops[2].kind, OpKind::Einsum);
  EXPECT_EQ(f.values[f.ops[0].results[0]].type.str(),
            "bf16[\"batch heads seq d\"]");
  EXPECT_EQ(f.values[f.ops[0].results[0]].name, "qh");
  EXPECT_EQ(f.values[f.ops[1].results[0]].type.str(),
            "bf16[\"batch heads seq2 d\"]");
  EXPECT_EQ(f.ops[2].acc, std::optional<DType>(DType::F32));
  EXPECT_EQ(c->returned("scores").str(), "f32[\"batch heads seq seq2\"]");
  EXPECT_EQ(f.ops[0].pattern, "b s (h d) -> b h s d");
  ASSERT_EQ(f.ops[0].sizes.size(), 1u);
  EXPECT_EQ(f.ops[0].sizes[0].name, "h");
  EXPECT_EQ(f.ops[0].sizes[0].value.str(), "heads");
}

TEST(CheckerGood, AttentionCostWithDimOverrides) {
  CheckOptions options;
  options.dimOverrides = {
      {"batch", 2}, {"seq", 1024}, {"seq2", 1024}, {"d", 64}, {"heads", 16}};
  auto c = check(kAttention, options);
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(toString(c->result.dims.at("heads")), "16");
  const CheckedFunction &f = c->fn("scores");
  const CheckedOp &op = f.ops.at(2);
  CostInput in;
  in.kind = op.kind;
  for (unsigned id : op.operands)
    in.inputs.push_back(f.values[id].type);
  for (unsigned id : op.results)
    in.outputs.push_back(f.values[id].type);
  ASSERT_TRUE(op.einsum.has_value());
  in.einsum = &*op.einsum;
  OpCost cost = computeCost(in, f.ctx.env);
  // 2 * batch * heads * seq * seq2 * d = 2*2*16*1024*1024*64.
  EXPECT_EQ(cost.flops.str(), "4294967296");
  // Two bf16 operands of 2*16*1024*64 elements; an f32 result.
  EXPECT_EQ(cost.bytesRead.str(), "8388608");
  EXPECT_EQ(cost.bytesWritten.str(), "134217728");
  EXPECT_EQ(cost.flops.expr.str(), "2*batch*d*heads*seq*seq2");
}

TEST(CheckerGood, FreeNameBindsByBroadcast) {
  auto c = check("def g(x: f32[\"n\"], y: f32[\"4\"]) -> f32[\"n\"]:\n"
                 "    return x + y\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("g");
  ASSERT_EQ(f.ctx.inferred.count("n"), 1u);
  EXPECT_EQ(toString(f.ctx.inferred.at("n")), "4");
  EXPECT_EQ(c->returned("g").str(), "f32[\"n\"]");
}

TEST(CheckerGood, EntryConstraintForHiddenBy8) {
  auto c = check("def h(x: f32[\"b hidden\"]) -> f32[\"b 8 hidden/8\"]:\n"
                 "    return rearrange(x, \"b (h d) -> b h d\", h=8)\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("h");
  ASSERT_EQ(f.ctx.constraints.size(), 1u);
  EXPECT_EQ(f.ctx.constraints[0].str(), "hidden % 8 == 0");
  EXPECT_EQ(c->returned("h").str(), "f32[\"b 8 hidden/8\"]");
}

// Size 0 is an empty axis, as in numpy and einops; negative sizes are not.
TEST(CheckerGood, ZeroSizesAccepted) {
  auto c = check("dim z = 0\n"
                 "def f(x: f32[\"0 n\"]) -> (f32[\"n 0\"], f32[\"n z\"], "
                 "f32[\"n\"]):\n"
                 "    return rearrange(x, \"a b -> b a\"), repeat(reduce(x, "
                 "\"a b -> b\", \"sum\"), \"b -> b c\", c=z), reduce(x, \"a b "
                 "-> b\", \"prod\")\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(toString(c->result.dims.at("z")), "0");
  EXPECT_EQ(c->returned("f", 0).str(), "f32[\"n 0\"]");
  EXPECT_TRUE(c->fn("f").ctx.constraints.empty());
}

TEST(CheckerGood, DimOverrideZeroAcceptedNegativeRejected) {
  const char *source = "def f(x: f32[\"n\"]) -> f32[\"n m\"]:\n"
                       "    return repeat(x, \"n -> n m\", m=m)\n";
  CheckOptions zero;
  zero.dimOverrides["m"] = 0;
  auto c = check(source, zero);
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(toString(c->result.dims.at("m")), "0");
  CheckOptions negative;
  negative.dimOverrides["m"] = -1;
  auto d = check(source, negative);
  ASSERT_TRUE(d->diags->hadError());
  EXPECT_NE(d->firstError().find("--dim m must not be negative"),
            std::string::npos)
      << d->firstError();
}

// max/min have no identity: over axes whose sizes bind at run time they
// leave an entry check; sum, mean and prod do not.
TEST(CheckerGood, MaxOverFreeAxesIsAnEntryCheck) {
  auto c = check("def f(x: f32[\"a b c\"]) -> (f32[\"c\"], f32[\"c\"], "
                 "f32[\"c\"]):\n"
                 "    return reduce(x, \"a b c -> c\", \"max\"), reduce(x, "
                 "\"a b c -> c\", \"sum\"), reduce(x, \"a b c -> c\", "
                 "\"mean\")\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("f");
  ASSERT_EQ(f.ctx.constraints.size(), 1u);
  EXPECT_EQ(f.ctx.constraints[0].kind, Constraint::Kind::NonEmpty);
  EXPECT_EQ(f.ctx.constraints[0].str(), "a*b >= 1");
  EXPECT_EQ(f.ctx.constraints[0].reason,
            "reduce(..., \"a b c -> c\", \"max\") at line 2: max over 'a', "
            "'b' needs at least one element (max has no identity)");
}

TEST(CheckerGood, MinOverKnownNonEmptyAxisNeedsNoCheck) {
  auto c = check("def f(x: f32[\"3 0\"]) -> f32[\"0\"]:\n"
                 "    return reduce(x, \"a b -> b\", \"min\")\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_TRUE(c->fn("f").ctx.constraints.empty());
}

// An empty input can ask for a large intermediate: valueTooLarge names it.
TEST(CheckerGood, ValueTooLargeNamesTheIntermediate) {
  CheckOptions sizes;
  sizes.dimOverrides["a"] = 0;
  sizes.dimOverrides["b"] = Int(1) << 40;
  auto c = check("def f(x: f32[\"a b\"]) -> f32[\"\"]:\n"
                 "    s = reduce(x, \"a b -> b\", \"sum\")\n"
                 "    return reduce(s, \"b ->\", \"sum\")\n",
                 sizes);
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  auto why = valueTooLarge(c->fn("f"), Int(1) << 30);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "with these sizes, 's' (computed at line 2) of shape "
                  "(1099511627776,) and f32 needs 4398046511104 bytes, more "
                  "than this machine's memory (1073741824 bytes)");
  EXPECT_FALSE(valueTooLarge(c->fn("f"), Int(1) << 42).has_value());
}

TEST(CheckerGood, PackAndUnpack) {
  auto c = check("def p(x: f32[\"b n c\"], y: f32[\"b c\"]) -> (f32[\"b n+1 "
                 "c\"], f32[\"b n c\"], f32[\"b c\"]):\n"
                 "    z, ps = pack([x, y], \"b * c\")\n"
                 "    u, v = unpack(z, ps, \"b * c\")\n"
                 "    return z, u, v\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(c->returned("p", 0).str(), "f32[\"b n+1 c\"]");
  EXPECT_EQ(c->returned("p", 1).str(), "f32[\"b n c\"]");
  EXPECT_EQ(c->returned("p", 2).str(), "f32[\"b c\"]");
  const CheckedFunction &f = c->fn("p");
  ASSERT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.ops[0].kind, OpKind::Pack);
  ASSERT_EQ(f.ops[0].packParts.size(), 2u);
  EXPECT_EQ(shapeStr(f.ops[0].packParts[0]), "n");
  EXPECT_EQ(shapeStr(f.ops[0].packParts[1]), "");
  EXPECT_EQ(f.ops[1].kind, OpKind::Unpack);
  EXPECT_EQ(f.ops[1].results.size(), 2u);
}

TEST(CheckerGood, ReduceRepeatAndLiterals) {
  auto c =
      check("def n(x: f32[\"b s d\"]) -> f32[\"b s d\"]:\n"
            "    mu = reduce(x, \"b s d -> b s 1\", \"mean\")\n"
            "    var = reduce((x - mu) ** 2, \"b s d -> b s 1\", \"mean\")\n"
            "    return (x - mu) * rsqrt(var + 1e-5)\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("n");
  EXPECT_EQ(f.values[f.ops[0].results[0]].type.str(), "f32[\"b s 1\"]");
  EXPECT_EQ(f.ops[0].reduction, ReduceKind::Mean);
  unsigned constants = 0;
  for (auto &op : f.ops)
    constants += op.kind == OpKind::Constant;
  EXPECT_EQ(constants, 2u); // the 2 and the 1e-5
  EXPECT_EQ(c->returned("n").str(), "f32[\"b s d\"]");
}

TEST(CheckerGood, AstypeAndUnaryOps) {
  auto c = check("def a(x: bf16[\"n\"]) -> f32[\"n\"]:\n"
                 "    return tanh(astype(x, f32))\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("a");
  ASSERT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.ops[0].kind, OpKind::Cast);
  EXPECT_EQ(f.ops[1].kind, OpKind::Elementwise);
  EXPECT_EQ(f.ops[1].fn, ElementwiseFn::Tanh);
  EXPECT_EQ(c->returned("a").str(), "f32[\"n\"]");
}

TEST(CheckerGood, RepeatWithDimArithmetic) {
  auto c = check("dim k = 2 * 3\n"
                 "def r(x: f32[\"h w\"]) -> f32[\"h w 6\"]:\n"
                 "    return repeat(x, \"h w -> h w c\", c=k)\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(toString(c->result.dims.at("k")), "6");
  EXPECT_EQ(c->returned("r").str(), "f32[\"h w k\"]");
}

TEST(CheckerGood, VariadicBatch) {
  auto c = check("def v(x: f32[\"*batch h w\"]) -> f32[\"*batch w h\"]:\n"
                 "    return rearrange(x, \"... h w -> ... w h\")\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(c->returned("v").str(), "f32[\"*batch w h\"]");
}

// `_` and `...` are sizes nobody named: an op that needs them equal to
// another size records an entry check instead of failing.
TEST(CheckerGood, AnonymousDimsAreEntryChecks) {
  auto c =
      check("def h(x: f32[\"_ n\"], y: f32[\"_ n\"]) -> f32[\"_ n\"]:\n"
            "    return x + y\n"
            "def e(x: f32[\"... n\"], y: f32[\"... n\"]) -> f32[\"... n\"]:\n"
            "    return einsum(x, y, \"... n, ... n -> ... n\")\n"
            "def m(x: f32[\"_ n\"], y: f32[\"m n\"]) -> f32[\"m n\"]:\n"
            "    return x * y\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  auto checks = [&](const char *fn) {
    std::string out;
    for (auto &k : c->fn(fn).ctx.constraints)
      out += (out.empty() ? "" : "; ") + k.str();
    return out;
  };
  EXPECT_EQ(checks("h"), "_anon0 == _anon1");
  EXPECT_EQ(checks("e"), "_anon0 == _anon1");
  EXPECT_EQ(checks("m"), "_anon0 == m");
  EXPECT_EQ(c->returned("m").str(), "f32[\"m n\"]");
}

// --rank (CheckOptions::packRanks) expands a variadic into fresh dims from
// the parameter on, named `*NAME` or `PARAM...`.
TEST(CheckerGood, PackRanksFixVariadics) {
  CheckOptions options;
  options.packRanks = {{"batch", 2}, {"x...", 0}};
  auto c = check("def f(x: f32[\"*batch n\"], w: f32[\"n m\"]) -> "
                 "f32[\"*batch m\"]:\n"
                 "    return einsum(x, w, \"... n, n m -> ... m\")\n"
                 "def g(x: f32[\"... n\"]) -> f32[\"... n\"]:\n"
                 "    return x * 2.0\n",
                 options);
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("f");
  EXPECT_EQ(shapeStr(f.ctx.expand(f.values[f.params[0]].type.shape)),
            "batch_0 batch_1 n");
  EXPECT_EQ(shapeStr(f.ctx.expand(c->returned("f").shape)),
            "batch_0 batch_1 m");
  const CheckedFunction &g = c->fn("g");
  EXPECT_EQ(shapeStr(g.ctx.expand(g.values[g.params[0]].type.shape)), "n");
}

TEST(CheckerGood, PackRankOfResultOnlyVariadicIsCompared) {
  CheckOptions options;
  options.packRanks = {{"out", 1}};
  auto c = check("def f(x: f32[\"a b\"]) -> f32[\"*out\"]:\n"
                 "    return x\n",
                 options);
  ASSERT_TRUE(c->diags->hadError());
  EXPECT_EQ(
      c->firstError(),
      "2:12: returned value 0 has shape \"a b\" but the function declares "
      "\"out\": rank mismatch: expected 1 dims (\"out\"), got 2 (\"a b\")");
}

TEST(CheckerDiag, UnknownPackRank) {
  CheckOptions options;
  options.packRanks["x"] = 2;
  auto c = check("def f(x: f32[\"... n\"], y: f32[\"*batch\"]) -> f32[\"n\"]:\n"
                 "    return reduce(x, \"... n -> n\", \"sum\")\n",
                 options);
  ASSERT_TRUE(c->diags->hadError());
  EXPECT_EQ(c->diags->diagnostics()[0].message,
            "--rank x=2: no variadic named 'x' in this file (it has batch, "
            "x...; the '...' of parameter x is x...)");
}

TEST(CheckerGood, IntegerLiteralsExact) {
  // Beyond 2^53 a double would round these; the constants must be exact.
  auto c = check("def f(x: i64[\"n\"]) -> i64[\"n\"]:\n"
                 "    return x + 9007199254740993 - -9223372036854775808 + "
                 "(2 ** 62 - 1) * 2 + 1\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  std::vector<int64_t> constants;
  for (auto &op : c->fn("f").ops)
    if (op.kind == OpKind::Constant) {
      EXPECT_TRUE(op.constantIsInt);
      constants.push_back(op.constantInt);
    }
  EXPECT_EQ(constants, (std::vector<int64_t>{9007199254740993LL, INT64_MIN,
                                             INT64_MAX - 1, 1}));
}

TEST(CheckerBad, LiteralsThatDoNotFit) {
  struct Case {
    const char *dtype, *expr, *error;
  } cases[] = {
      {"i64", "x + 9223372036854775808",
       "2:16: integer 9223372036854775808 does not fit in i64 (range "
       "-9223372036854775808 to 9223372036854775807)"},
      {"i32", "x + 4294967297",
       "2:16: integer 4294967297 does not fit in i32 (range -2147483648 to "
       "2147483647)"},
      {"i32", "x * 1.5",
       "2:16: a non-integer number cannot combine with an integer tensor "
       "(i32); use astype"},
      {"f16", "x + 70000",
       "2:16: number 70000 is out of range for f16 (largest finite value "
       "65504)"},
      {"f32", "x + 1 / 0", "2:18: division by zero in a number"},
  };
  for (const Case &k : cases) {
    auto c = check(std::string("def f(x: ") + k.dtype + "[\"n\"]) -> " +
                   k.dtype + "[\"n\"]:\n    return " + k.expr + "\n");
    EXPECT_EQ(c->firstError(), k.error) << k.expr;
  }
}

TEST(CheckerBad, MeanAccumulatesInFloat) {
  auto c = check("def f(x: f32[\"a b\"]) -> i32[\"a\"]:\n"
                 "    return reduce(x, \"a b -> a\", \"mean\", acc=i32)\n");
  EXPECT_EQ(c->firstError(),
            "2:46: mean accumulates in a float dtype, got acc=i32");
  auto d = check("def f(x: i32[\"a b\"]) -> f32[\"a\"]:\n"
                 "    return reduce(x, \"a b -> a\", \"mean\", acc=f32)\n");
  EXPECT_EQ(d->firstError(), "2:34: mean needs a float tensor, got i32; use "
                             "astype");
}

// The dtype table itself (lib/Shape/DTypeRules.cpp) and the elementwise
// table (lib/Shape/Elementwise.cpp).
TEST(DTypeRules, OperandsAndAcc) {
  for (const char *op : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
                         "silu", "gelu", "gelu_tanh", "softplus", "sin", "cos",
                         "erf", "floor", "ceil", "round"}) {
    const ElementwiseInfo *info = findElementwise(op);
    ASSERT_NE(info, nullptr) << op;
    EXPECT_EQ(elementwiseOperandError(*info, 0, DType::I32),
              std::string(op) + " needs a float tensor, got i32; use astype");
    for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16,
                    DType::F8E4M3, DType::F8E5M2})
      EXPECT_FALSE(elementwiseOperandError(*info, 0, t)) << op;
  }
  EXPECT_EQ(operandDTypeError(*findDTypeRule("mean"), DType::I32),
            "mean needs a float tensor, got i32; use astype");
  for (const char *op :
       {"add", "sub", "mul", "div", "pow", "neg", "relu", "floordiv", "mod",
        "min", "max", "clip", "abs", "sign", "square", "lt", "ge"}) {
    const ElementwiseInfo *info = findElementwise(op);
    ASSERT_NE(info, nullptr) << op;
    EXPECT_FALSE(elementwiseOperandError(*info, 0, DType::I64)) << op;
    EXPECT_FALSE(elementwiseOperandError(*info, 0, DType::F8E5M2)) << op;
    EXPECT_TRUE(elementwiseOperandError(*info, 0, DType::Bool)) << op;
  }
  for (const char *op : {"and", "or", "not"}) {
    const ElementwiseInfo *info = findElementwise(op);
    ASSERT_NE(info, nullptr) << op;
    EXPECT_FALSE(elementwiseOperandError(*info, 0, DType::Bool)) << op;
    EXPECT_TRUE(elementwiseOperandError(*info, 0, DType::F32)) << op;
  }
  const ElementwiseInfo &where = *findElementwise("where");
  EXPECT_FALSE(elementwiseOperandError(where, 0, DType::Bool));
  EXPECT_TRUE(elementwiseOperandError(where, 0, DType::F32));
  EXPECT_FALSE(elementwiseOperandError(where, 1, DType::Bool));
  EXPECT_EQ(elementwiseResultDType(*findElementwise("lt"), DType::F16),
            DType::Bool);
  EXPECT_EQ(elementwiseResultDType(*findElementwise("add"), DType::F16),
            DType::F16);
  for (const char *op : {"cast", "rearrange", "repeat", "einsum", "pack",
                         "unpack", "sum", "max", "min", "prod"}) {
    const DTypeRule *rule = findDTypeRule(op);
    ASSERT_NE(rule, nullptr) << op;
    EXPECT_FALSE(operandDTypeError(*rule, DType::I64)) << op;
    EXPECT_FALSE(operandDTypeError(*rule, DType::F8E5M2)) << op;
  }
  EXPECT_FALSE(
      operandDTypeError(reduceDTypeRule(ReduceKind::Any), DType::Bool));
  EXPECT_EQ(operandDTypeError(reduceDTypeRule(ReduceKind::All), DType::F32),
            "all needs a bool tensor, got f32; use astype");
  EXPECT_EQ(operandDTypeError(reduceDTypeRule(ReduceKind::Sum), DType::Bool),
            "sum needs a number tensor (not bool), got bool; use astype");
  EXPECT_EQ(findDTypeRule("softmax"), nullptr);
  EXPECT_EQ(findElementwise("softmax"), nullptr);
  EXPECT_TRUE(findDTypeRule("cast")->resultIsTarget);
  EXPECT_FALSE(accDTypeError(reduceDTypeRule(ReduceKind::Sum), DType::I32));
  EXPECT_FALSE(accDTypeError(*findDTypeRule("einsum"), DType::F64));
  EXPECT_EQ(accDTypeError(reduceDTypeRule(ReduceKind::Mean), DType::I64),
            "mean accumulates in a float dtype, got acc=i64");
  EXPECT_EQ(accDTypeError(*findDTypeRule("repeat"), DType::F32),
            "acc= does not apply to repeat");
}

// The FLOP convention of the elementwise table (docs/cost-model.md):
// library functions 1, composite ones the count of their formula.
TEST(ElementwiseTable, Flops) {
  EXPECT_EQ(findElementwise("exp")->flops, 1u);
  EXPECT_EQ(findElementwise("add")->flops, 1u);
  EXPECT_EQ(findElementwise("sigmoid")->flops, 4u);
  EXPECT_EQ(findElementwise("silu")->flops, 5u);
  EXPECT_EQ(findElementwise("gelu")->flops, 5u);
  EXPECT_EQ(findElementwise("gelu_tanh")->flops, 9u);
  EXPECT_EQ(findElementwise("softplus")->flops, 3u);
  EXPECT_EQ(findElementwise("clip")->flops, 2u);
  // Every row: a unique name, an arity of 1 to 3.
  std::set<std::string_view> names;
  for (const ElementwiseInfo &info : elementwiseTable()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_GE(info.arity, 1u);
    EXPECT_LE(info.arity, 3u);
    EXPECT_EQ(&elementwiseInfo(info.fn), &info);
  }
}

TEST(DTypeRules, FloatLimits) {
  EXPECT_EQ(largestFinite(DType::F16), 65504.0);
  EXPECT_EQ(largestFinite(DType::F8E4M3), 448.0);
  EXPECT_EQ(largestFinite(DType::F8E5M2), 57344.0);
  EXPECT_EQ(largestFinite(DType::F32), 3.4028234663852886e38);
  EXPECT_EQ(largestFinite(DType::BF16), 3.3895313892515355e38);
  EXPECT_EQ(largestFinite(DType::F64), 1.7976931348623157e308);
  // Round to nearest even: the midpoint above the largest value goes to
  // infinity, except on f8e4m3 whose midpoint 464 rounds down to 448.
  auto fits = [](const char *text, DType t) {
    return !literalDTypeError(parseNumberLiteral(text), t);
  };
  EXPECT_TRUE(fits("65519", DType::F16));
  EXPECT_FALSE(fits("65520", DType::F16));
  EXPECT_TRUE(fits("464", DType::F8E4M3));
  EXPECT_FALSE(fits("464.5", DType::F8E4M3));
  EXPECT_TRUE(fits("61439", DType::F8E5M2));
  EXPECT_FALSE(fits("61440", DType::F8E5M2));
  EXPECT_TRUE(fits("1e-30", DType::F16)); // rounds to 0, no error
  EXPECT_TRUE(fits("1e308", DType::F64));
  EXPECT_FALSE(fits("1.5", DType::I64));
}

TEST(DTypeRules, IntegerRanges) {
  // Two's complement over each row's bytes.
  EXPECT_EQ(integerMin(DType::I8), Int(-128));
  EXPECT_EQ(integerMax(DType::I8), Int(127));
  EXPECT_EQ(integerMin(DType::I32), Int(INT32_MIN));
  EXPECT_EQ(integerMax(DType::I32), Int(INT32_MAX));
  EXPECT_EQ(integerMin(DType::I64), Int(INT64_MIN));
  EXPECT_EQ(integerMax(DType::I64), Int(INT64_MAX));
  NumberLiteral l127 = parseNumberLiteral("127"),
                l128 = parseNumberLiteral("128");
  EXPECT_FALSE(literalDTypeError(l127, DType::I8));
  EXPECT_FALSE(literalDTypeError(negateLiteral(l128), DType::I8));
  std::optional<std::string> e = literalDTypeError(l128, DType::I8);
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, "integer 128 does not fit in i8 (range -128 to 127)");
  EXPECT_TRUE(
      literalDTypeError(negateLiteral(parseNumberLiteral("129")), DType::I8));
  EXPECT_TRUE(literalDTypeError(parseNumberLiteral("0.5"), DType::I8));
}

TEST(DTypeRules, IntegerLiterals) {
  NumberLiteral big = parseNumberLiteral("9223372036854775808");
  ASSERT_TRUE(big.exact);
  EXPECT_TRUE(literalDTypeError(big, DType::I64));
  EXPECT_FALSE(literalDTypeError(negateLiteral(big), DType::I64));
  EXPECT_FALSE(literalDTypeError(big, DType::F32)); // a float: fine
  EXPECT_FALSE(parseNumberLiteral(std::string(50, '9')).exact);
  EXPECT_TRUE(
      literalDTypeError(parseNumberLiteral(std::string(50, '9')), DType::I64));
  auto fold = [](const char *a, char op, const char *b) {
    Expected<NumberLiteral> r =
        foldLiterals(op, parseNumberLiteral(a), parseNumberLiteral(b));
    EXPECT_TRUE(bool(r));
    return *r;
  };
  EXPECT_EQ(fold("3", '^', "40").exact, Int(12157665459056928801ULL));
  NumberLiteral half = fold("2", '^', "-1");
  EXPECT_FALSE(half.isInt);
  EXPECT_EQ(half.value, 0.5);
  EXPECT_FALSE(fold("7", '/', "7").isInt); // true division, as Python
  Expected<NumberLiteral> minusOne =
      foldLiterals('^', negateLiteral(parseNumberLiteral("1")),
                   parseNumberLiteral("1000001"));
  ASSERT_TRUE(bool(minusOne));
  EXPECT_EQ(minusOne->exact, Int(-1));
  EXPECT_FALSE(fold("2", '^', "200").exact); // beyond 128 bits
  EXPECT_FALSE(
      foldLiterals('/', parseNumberLiteral("1"), parseNumberLiteral("0")));
}

} // namespace

//===----------------------------------------------------------------------===//
// slice and cat
//===----------------------------------------------------------------------===//

namespace {

// The axis is found by its size; the result dim is stop - start,
// simplified; bounds the sizes prove leave no entry check.
TEST(CheckerSlice, ResultDimIsStopMinusStart) {
  auto c = check("dim k = 2\n"
                 "def f(x: f32[\"b s 2*h\"]) -> (f32[\"b k 2*h\"], "
                 "f32[\"b s h\"], f32[\"b s 2*h\"]):\n"
                 "    y = slice(x, \"2*h\", h, 2*h)\n"
                 "    return slice(x, \"s\", 0, k), y, cat([-y, "
                 "slice(x, \"2*h\", 0, h)], \"b s *\")\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(shapeStr(c->returned("f", 0).shape), "b k 2*h");
  EXPECT_EQ(shapeStr(c->returned("f", 1).shape), "b s h");
  EXPECT_EQ(shapeStr(c->returned("f", 2).shape), "b s 2*h");
  const CheckedFunction &f = c->fn("f");
  ASSERT_EQ(f.ctx.constraints.size(), 1u); // k <= s only
  EXPECT_EQ(f.ctx.constraints[0].kind, Constraint::Kind::LessEq);
  EXPECT_EQ(f.ctx.constraints[0].str(), "k <= s");
}

// Symbolic bounds leave LessEq entry checks; the entry binding refuses a
// violation with the slice's reason.
TEST(CheckerSlice, UnprovenBoundsAreEntryChecks) {
  auto c = check("def f(x: f32[\"s d\"], y: f32[\"k\"]) -> f32[\"s-1-k d\"]:\n"
                 "    return slice(x, \"s\", k, s - 1)\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("f");
  ASSERT_EQ(f.ctx.constraints.size(), 1u);
  EXPECT_EQ(f.ctx.constraints[0].str(), "k <= s - 1");
  EntryBinding ok = bindEntryShapes(f, {"x", "y"}, {{4, 2}, {3}});
  EXPECT_TRUE(ok.ok) << ok.error;
  EntryBinding bad = bindEntryShapes(f, {"x", "y"}, {{4, 2}, {4}});
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("entry check k <= s - 1 fails"), std::string::npos)
      << bad.error;
  EXPECT_NE(bad.error.find("slice(..., \"s\", k, s - 1) at line 2 needs 0 <= "
                           "start <= stop <= s"),
            std::string::npos)
      << bad.error;
}

// --dim makes a bound known: then it is a compile-time error.
TEST(CheckerSlice, DimBindingsDecideBounds) {
  CheckOptions options;
  options.dimOverrides["s"] = 3;
  auto c = check("def f(x: f32[\"s d\"]) -> f32[\"4 d\"]:\n"
                 "    return slice(x, \"s\", 0, 4)\n",
                 options);
  EXPECT_EQ(c->firstError(),
            "2:29: slice's stop (4) is beyond the axis 's' of size 3");
}

// An inlined callee slices by its own names, which stand for the caller's.
TEST(CheckerSlice, InCalledFunction) {
  auto c = check("def head(x: f32[\"n d\"]) -> f32[\"n-1 d\"]:\n"
                 "    return slice(x, \"n\", 1, n)\n"
                 "def f(x: f32[\"b t\"]) -> f32[\"b t-1\"]:\n"
                 "    return rearrange(head(rearrange(x, \"b t -> t b\")), "
                 "\"t b -> b t\")\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  const CheckedFunction &f = c->fn("f");
  ASSERT_EQ(f.ctx.constraints.size(), 1u);
  EXPECT_EQ(f.ctx.constraints[0].str(), "1 <= t");
}

} // namespace
