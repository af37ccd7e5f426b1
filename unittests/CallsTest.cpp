// Calls of functions by functions: per-call binding of the callee's sizes,
// inlining with call sites, and the errors of calls (lib/Sema/CheckCalls.cpp).
#include "ein/Sema/Checker.h"
#include "ein/Syntax/Parser.h"

#include "CheckedSnippet.h"

#include <gtest/gtest.h>

#include <memory>

using namespace ein;

namespace {

struct Checked : test::CheckedSnippet {
  const CheckedFunction &fn(const std::string &name) const {
    const CheckedFunction *f = result.find(name);
    EXPECT_NE(f, nullptr) << "no function " << name;
    return f ? *f : result.functions.at(0);
  }
  std::string returned(const std::string &name, size_t i = 0) const {
    const CheckedFunction &f = fn(name);
    const TensorType &t = f.values.at(f.returns.at(i)).type;
    return shapeStr(f.ctx.expand(t.shape));
  }
};

std::unique_ptr<Checked> check(const std::string &source,
                               CheckOptions options = {}) {
  return test::checkSnippet<Checked>(source, options);
}

const char *kScale = R"ein(
def scale(x: f32["n d"], s: f32["d"]) -> f32["n d"]:
    return x * s
)ein";

TEST(Calls, SizesBindAfreshAtEachCall) {
  auto c = check(std::string(kScale) + R"ein(
def two(x: f32["t hidden"], y: f32["t k"], a: f32["hidden"], b: f32["k"]) -> (f32["t hidden"], f32["t k"]):
    return scale(x, a), scale(y, b)
)ein");
  ASSERT_EQ(c->firstError(), "");
  EXPECT_EQ(c->returned("two", 0), "t hidden");
  EXPECT_EQ(c->returned("two", 1), "t k");
  const CheckedFunction &two = c->fn("two");
  ASSERT_EQ(two.callSites.size(), 2u);
  EXPECT_EQ(two.callSites[0].callee, "scale");
  EXPECT_EQ(two.callSites[1].loc.line, 6u);
  ASSERT_EQ(two.ops.size(), 2u);
  EXPECT_EQ(two.ops[0].callSite, 0);
  EXPECT_EQ(two.ops[1].callSite, 1);
  EXPECT_EQ(two.ops[0].loc.line, 3u); // the callee's line
  EXPECT_TRUE(two.ctx.constraints.empty());
}

TEST(Calls, CalleeNamesDoNotClashWithTheCallers) {
  // The callee's `n` is the caller's `d` here, and the caller's `n` is the
  // callee's `n` only by name.
  auto c = check(std::string(kScale) + R"ein(
def swapped(x: f32["d n"], s: f32["n"]) -> f32["d n"]:
    return scale(x, s)
)ein");
  ASSERT_EQ(c->firstError(), "");
  EXPECT_EQ(c->returned("swapped"), "d n");
}

TEST(Calls, VariadicsBindPerCall) {
  auto c = check(R"ein(
def total(x: f32["*batch d"]) -> f32["*batch"]:
    return reduce(x, "... d -> ...", "sum")

def both(x: f32["a d"], y: f32["a b c d"]) -> (f32["a"], f32["a b c"]):
    return total(x), total(y)
)ein");
  ASSERT_EQ(c->firstError(), "");
  EXPECT_EQ(c->returned("both", 0), "a");
  EXPECT_EQ(c->returned("both", 1), "a b c");
}

TEST(Calls, ResultOnlyNamesAndEntryChecksInTheCallersNames) {
  auto c = check(R"ein(
def pairs(x: f32["n"]) -> f32["k 2"]:
    return rearrange(x, "(k two) -> k two", two=2)

def use(x: f32["len"]) -> f32["half 2"]:
    return pairs(x)
)ein");
  ASSERT_EQ(c->firstError(), "");
  EXPECT_EQ(c->returned("use"), "len/2 2");
  const CheckedFunction &use = c->fn("use");
  ASSERT_EQ(use.ctx.constraints.size(), 1u);
  EXPECT_EQ(use.ctx.constraints[0].str(), "len % 2 == 0");
}

TEST(Calls, DeclaredDimsAreShared) {
  auto c = check(R"ein(
dim heads = 4

def split(x: f32["n (heads e)"]) -> f32["heads n e"]:
    return rearrange(x, "n (h e) -> h n e", h=heads)

def use(x: f32["m 12"]) -> f32["4 m 3"]:
    return split(x)
)ein");
  ASSERT_EQ(c->firstError(), "");
  EXPECT_EQ(c->returned("use"), "heads m 3");
}

TEST(Calls, SeveralResultsAssignToSeveralNames) {
  auto c = check(R"ein(
def pair(x: f32["n m"]) -> (f32["n m"], f32["n"]):
    return x * 2.0, reduce(x, "n m -> n", "sum")

def use(x: f32["b c"]) -> f32["b c"]:
    y, s = pair(x)
    return y + s
)ein");
  ASSERT_EQ(c->firstError(), "");
  EXPECT_EQ(c->returned("use"), "b c");
}

TEST(Calls, NestedCallsNameTheirParents) {
  auto c = check(std::string(kScale) + R"ein(
def twice(x: f32["n d"], s: f32["d"]) -> f32["n d"]:
    return scale(scale(x, s), s)

def outer(x: f32["a b"], s: f32["b"]) -> f32["a b"]:
    return twice(x, s)
)ein");
  ASSERT_EQ(c->firstError(), "");
  const CheckedFunction &outer = c->fn("outer");
  ASSERT_EQ(outer.callSites.size(), 3u);
  EXPECT_EQ(outer.callSites[0].callee, "twice");
  EXPECT_EQ(outer.callSites[1].parent, 0);
  EXPECT_EQ(outer.callSites[2].parent, 0);
  ASSERT_EQ(outer.ops.size(), 2u);
  EXPECT_EQ(outer.callPath(outer.ops[1]), (std::vector<int>{0, 2}));
}

struct CallErrorCase {
  const char *name;
  std::string source;
  std::string error;
};

class CallErrorTest : public ::testing::TestWithParam<CallErrorCase> {};

TEST_P(CallErrorTest, FirstError) {
  auto c = check(GetParam().source);
  EXPECT_EQ(c->firstError(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Calls, CallErrorTest,
    ::testing::Values(
        CallErrorCase{"Recursion",
                      "def f(x: f32[\"n\"]) -> f32[\"n\"]:\n    return f(x)\n",
                      "2:12: recursive call of 'f' (f -> f): a function "
                      "cannot call itself, directly or through others"},
        CallErrorCase{
            "Dtype", std::string(kScale) + R"ein(
def g(x: bf16["a b"], s: f32["b"]) -> f32["a b"]:
    return scale(x, s)
)ein",
            "6:18: argument 1 of 'scale' has dtype bf16 but parameter 'x' is "
            "f32; use astype"},
        CallErrorCase{
            "Shape", std::string(kScale) + R"ein(
def g(x: f32["a b"], s: f32["c"]) -> f32["a b"]:
    return scale(x, s)
)ein",
            "6:21: argument 2 of 'scale' has shape \"c\" but parameter 's' "
            "is \"d\": cannot prove b == c (dim 0 of \"c\" vs declared \"b\")"},
        CallErrorCase{"Count", std::string(kScale) + R"ein(
def g(x: f32["a b"]) -> f32["a b"]:
    return scale(x)
)ein",
                      "6:12: 'scale' takes 2 tensor(s), got 1"},
        CallErrorCase{"InCallee", R"ein(
def f(x: f32["n"]) -> f32["k 2"]:
    return rearrange(x, "(k two) -> k two", two=2)

def g(x: f32["5"]) -> f32["5 2"]:
    return f(x)
)ein",
                      "3:26: composition (k two): size 5 is not divisible by "
                      "2"},
        CallErrorCase{"Typo", std::string(kScale) + R"ein(
def g(x: f32["a b"], s: f32["b"]) -> f32["a b"]:
    return scael(x, s)
)ein",
                      "6:12: unknown function 'scael'; expected one of "
                      "rearrange, reduce, repeat, einsum, pack, unpack, "
                      "cat, slice, take, astype, arange, take_along, dropout, "
                      "reshard, grad, "
                      "min, max, clip, abs, sign, square, exp, "
                      "log, "
                      "sqrt, rsqrt, tanh, relu, sigmoid, silu, gelu, "
                      "gelu_tanh, softplus, sin, cos, erf, floor, ceil, "
                      "round, where, or a function of this file such as "
                      "'scale'"}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Calls, ErrorInCalleeHasANoteAtTheCall) {
  auto c = check(R"ein(
def f(x: f32["n"]) -> f32["n"]:
    return rearrange(x, "n -> n m")

def g(x: f32["a"]) -> f32["a"]:
    return f(x)
)ein");
  const auto &list = c->diags->diagnostics();
  bool found = false;
  for (size_t i = 0; i + 1 < list.size(); ++i)
    if (list[i].severity == Severity::Error &&
        list[i + 1].severity == Severity::Note) {
      EXPECT_EQ(list[i].loc.line, 3u);
      EXPECT_EQ(list[i + 1].loc.line, 6u);
      EXPECT_EQ(list[i + 1].message, "in call to 'f' from here");
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST(Calls, DeepChainIsAnError) {
  std::string source;
  for (int i = 0; i < 80; ++i)
    source += "def f" + std::to_string(i) +
              "(x: f32[\"n\"]) -> f32[\"n\"]:\n    return f" +
              std::to_string(i + 1) + "(x)\n";
  source += "def f80(x: f32[\"n\"]) -> f32[\"n\"]:\n    return x\n";
  CheckOptions options;
  options.onlyFunction = "f0";
  auto c = check(source, options);
  EXPECT_EQ(c->firstError(), "128:12: calls nested more than 64 deep");
}

TEST(Calls, ExponentialInliningIsAnError) {
  std::string source;
  for (int i = 0; i < 30; ++i)
    source += "def f" + std::to_string(i) +
              "(x: f32[\"n\"]) -> f32[\"n\"]:\n    return f" +
              std::to_string(i + 1) + "(x) + f" + std::to_string(i + 1) +
              "(x)\n";
  source += "def f30(x: f32[\"n\"]) -> f32[\"n\"]:\n    return x\n";
  CheckOptions options;
  options.onlyFunction = "f0";
  auto c = check(source, options);
  EXPECT_NE(c->firstError().find("larger than 100000 operations or calls"),
            std::string::npos)
      << c->firstError();
}

} // namespace
