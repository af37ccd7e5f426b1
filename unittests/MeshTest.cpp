// Named-axis sharding in the front end (docs/distributed.md §1-2): layouts in
// shape strings, the `mesh` and `shard` declarations, and the static checks.
#include "TestHelpers.h"

#include "ein/Sema/Checker.h"
#include "ein/Shape/Shape.h"
#include "ein/Syntax/Parser.h"

#include "CheckedSnippet.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>

using namespace ein;
using namespace ein::test;

namespace {

//===----------------------------------------------------------------------===//
// parseShape: layouts
//===----------------------------------------------------------------------===//

struct LayoutCase {
  const char *name;
  const char *text;
  const char *printed; // shapeStr()
  size_t dim;          // the sharded dim
  const char *axis;
  const char *major; // what the axis must divide
  unsigned axisOffset;
};

void PrintTo(const LayoutCase &c, std::ostream *os) { *os << c.name; }

class ParseLayoutTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(ParseLayoutTest, Parses) {
  const LayoutCase &c = GetParam();
  Shape s = shapeOf(c.text);
  EXPECT_EQ(shapeStr(s), c.printed);
  ASSERT_LT(c.dim, s.size());
  EXPECT_EQ(s[c.dim].meshAxis, c.axis);
  EXPECT_EQ(s[c.dim].meshMajor.str(), c.major);
  EXPECT_EQ(s[c.dim].meshAxisOffset, c.axisOffset);
  // Only the sharded dim has a layout.
  for (size_t i = 0; i < s.size(); ++i) {
    if (i != c.dim) {
      EXPECT_TRUE(s[i].meshAxis.empty()) << i;
    }
  }
}

const LayoutCase kLayouts[] = {
    {"Name", "batch@dp seq", "batch@dp seq", 0, "dp", "batch", 6},
    {"Second", "seq hidden@tp", "seq hidden@tp", 1, "tp", "hidden", 11},
    {"Integer", "8@tp", "8@tp", 0, "tp", "8", 2},
    {"Expression", "n*d@tp", "d*n@tp", 0, "tp", "d*n", 4},
    {"MajorMember", "b (heads@tp d)", "b d*heads@tp", 1, "tp", "heads", 9},
    {"WholeComposition", "b (heads d)@tp", "b d*heads@tp", 1, "tp", "heads",
     12},
    {"UnicodeAxis", "b@δ", "b@δ", 0, "δ", "b", 2},
};

INSTANTIATE_TEST_SUITE_P(Shape, ParseLayoutTest, ::testing::ValuesIn(kLayouts),
                         [](const auto &info) { return info.param.name; });

// A layout does not change a dim: equality and sizes ignore it.
TEST(ParseLayout, EqualityIgnoresTheLayout) {
  Shape a = shapeOf("batch@dp (heads@tp d)"), b = shapeOf("batch heads*d");
  EXPECT_EQ(a, b);
  EXPECT_EQ(numElements(a), numElements(b));
  // The printed layout reads back to the same layout.
  Shape again = shapeOf(shapeStr(a));
  EXPECT_EQ(again[0].meshAxis, "dp");
  EXPECT_EQ(again[1].meshAxis, "tp");
}

struct LayoutErrorCase {
  const char *name;
  const char *text;
  unsigned offset, length;
  const char *message;
};

void PrintTo(const LayoutErrorCase &c, std::ostream *os) { *os << c.name; }

class ParseLayoutErrorTest : public ::testing::TestWithParam<LayoutErrorCase> {
};

TEST_P(ParseLayoutErrorTest, Fails) {
  const LayoutErrorCase &c = GetParam();
  auto s = parseShape(c.text);
  ASSERT_FALSE(bool(s)) << "parsed as " << shapeStr(*s);
  EXPECT_EQ(s.error().anchor, ShapeError::Anchor::Pattern);
  EXPECT_EQ(s.error().offset, c.offset) << s.error().message;
  EXPECT_EQ(s.error().length, c.length) << s.error().message;
  EXPECT_EQ(s.error().message, c.message);
}

const LayoutErrorCase kLayoutErrors[] = {
    {"MinorMember", "b (heads d@tp)", 10, 3,
     "a composition is sharded through its first (major) member only: a "
     "rank's block of a minor member is not contiguous; write (d@tp ...) "
     "with it first, or shard the first member"},
    {"CompositionTwice", "(heads@tp d)@dp", 6, 3,
     "a dim is sharded on one mesh axis at most: the composition is sharded "
     "on 'dp' and its first member on 'tp'"},
    {"TwoAxes", "b@dp@tp", 4, 1, "a dim is sharded on one mesh axis at most"},
    {"NoAxis", "b@ c", 1, 1, "expected a mesh axis name after '@'"},
    {"BadAxis", "b@2", 1, 2, "expected a mesh axis name after '@'"},
    {"NoDim", "b @tp", 2, 1,
     "expected a dim before '@' (a layout is written name@axis, without "
     "spaces)"},
    {"Variadic", "*batch@dp d", 0, 6, "a variadic dim cannot be sharded"},
    {"Ellipsis", "...@dp d", 0, 3, "a variadic dim cannot be sharded"},
    {"Anonymous", "_@tp", 0, 1,
     "an anonymous dim '_' (name it) cannot be sharded"},
    {"Broadcastable", "#b@tp", 0, 2,
     "a broadcastable dim '#' cannot be sharded"},
    {"InsideParens", "(b@tp)", 2, 1,
     "a layout '@axis' goes after a whole dim (batch@dp, (heads d)@tp) or "
     "after a composition's first member ((heads@tp d))"},
};

INSTANTIATE_TEST_SUITE_P(Shape, ParseLayoutErrorTest,
                         ::testing::ValuesIn(kLayoutErrors),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// The parser: `mesh` and `shard`
//===----------------------------------------------------------------------===//

TEST(MeshParser, PrintsMeshAndRules) {
  SourceFile file{"m.ein", "mesh dp, tp\nshard batch -> dp\n"};
  DiagnosticEngine diags(file);
  Module m = parseModule(file, diags);
  ASSERT_FALSE(diags.hadError());
  ASSERT_EQ(m.meshes.size(), 1u);
  ASSERT_EQ(m.meshes[0].axes.size(), 2u);
  EXPECT_EQ(m.meshes[0].axes[1].first, "tp");
  EXPECT_EQ(m.meshes[0].axes[1].second.col, 10u);
  std::ostringstream os;
  printAST(m, os);
  EXPECT_EQ(os.str(),
            "module\n  mesh dp, tp  @1:1\n  shard batch -> dp  @2:7\n");
}

//===----------------------------------------------------------------------===//
// The checker
//===----------------------------------------------------------------------===//

std::unique_ptr<CheckedSnippet> check(const std::string &source,
                                      CheckOptions options = {}) {
  return checkSnippet<CheckedSnippet>(source, options);
}

struct MeshDiagCase {
  const char *name;
  const char *source;
  const char *error; // "line:col: message"
};

void PrintTo(const MeshDiagCase &c, std::ostream *os) { *os << c.name; }

class MeshDiagTest : public ::testing::TestWithParam<MeshDiagCase> {};

TEST_P(MeshDiagTest, FirstError) {
  auto c = check(GetParam().source);
  ASSERT_TRUE(c->diags->hadError()) << "the snippet checked cleanly";
  EXPECT_EQ(c->firstError(), GetParam().error);
}

#define IDENTITY(TYPE)                                                         \
  "def f(x: f32[\"" TYPE "\"]) -> f32[\"" TYPE "\"]:\n    return x\n"

const MeshDiagCase kMeshDiags[] = {
    {"SecondMesh", "mesh dp\nmesh tp\n" IDENTITY("n"),
     "2:1: a file has one mesh; the first is declared at line 1"},
    {"AxisTwice", "mesh dp, tp, dp\n" IDENTITY("n"),
     "1:14: mesh axis 'dp' is named twice"},
    {"AxisUsedAsDim", "mesh tp\n" IDENTITY("tp d"),
     "1:6: mesh axis 'tp' is also used as a dim, in the type \"tp d\" of "
     "function 'f' (line 2); types are global shapes: write a layout (d@tp) "
     "or rename the axis"},
    {"AxisSizeZero", "mesh tp\ndim tp = 0\n" IDENTITY("d@tp"),
     "1:6: mesh axis 'tp' has size 0; a mesh axis spans at least 1 device"},
    {"UnknownAxisSuggests", "mesh dp, tp\n" IDENTITY("b@tq"),
     "2:17: in shape \"b@tq\": 'tq' is not a mesh axis (the mesh has dp, tp); "
     "did you mean 'tp'?"},
    {"NoMesh", IDENTITY("b@dp"),
     "1:17: in shape \"b@dp\": 'dp' is not a mesh axis: this file declares no "
     "mesh (write `mesh dp` at the top level)"},
    {"AxisTwiceInTensor", "mesh tp\n" IDENTITY("a@tp b@tp"),
     "2:20: in shape \"a@tp b@tp\": mesh axis 'tp' splits two dims of this "
     "tensor (a@tp and b@tp); a tensor is split along a mesh axis at most "
     "once"},
    {"NotDivisible",
     "mesh tp\ndim tp = 24\ndim hidden = 65536\n" IDENTITY("b hidden@tp"),
     "4:17: in shape \"b hidden@tp\": hidden@tp splits 65536 into 24 blocks, "
     "which does not divide; tp may be 1, 2, 4, 8, 16, 32, ... (the divisors "
     "of 65536)"},
    {"MajorFactorNotDivisible",
     "mesh tp\ndim tp = 8\ndim heads = 12\ndim d = 64\n" IDENTITY(
         "b (heads d)@tp"),
     "5:17: in shape \"b (heads d)@tp\": (heads d)@tp splits heads = 12 into "
     "8 blocks, which does not divide; tp may be 1, 2, 3, 4, 6, 12 (the "
     "divisors of 12)"},
    {"PrimeSize", "mesh tp\ndim tp = 2\ndim v = 50257\n" IDENTITY("v@tp d"),
     "4:15: in shape \"v@tp d\": v@tp splits 50257 into 2 blocks, which does "
     "not divide; tp may be 1, 29, 1733, 50257 (the divisors of 50257)"},
    {"RuleNotDivisible",
     "mesh dp\nshard batch -> dp\ndim dp = 3\ndim batch = 8\n" IDENTITY(
         "batch d"),
     "5:15: in shape \"batch d\": batch@dp (by the rule `shard batch -> dp`) "
     "splits 8 into 3 blocks, which does not divide; dp may be 1, 2, 4, 8 "
     "(the divisors of 8)"},
    {"RuleUnknownAxis", "mesh dp, tp\nshard batch -> pd\n" IDENTITY("batch"),
     "2:16: in `shard batch -> pd`: 'pd' is not a mesh axis (the mesh has dp, "
     "tp); did you mean 'dp'?"},
    {"RuleTwice",
     "mesh dp, tp\nshard batch -> dp\nshard batch -> tp\n" IDENTITY("batch"),
     "3:7: 'batch' has a shard rule already (-> dp); a dim has one rule"},
    {"RuleOnAxis", "mesh dp, tp\nshard tp -> dp\n" IDENTITY("batch"),
     "2:7: 'tp' is a mesh axis, not a dim a rule can shard"},
    {"LayoutInPattern",
     "mesh tp\ndef f(x: f32[\"a b@tp\"]) -> f32[\"b a\"]:\n"
     "    return rearrange(x, \"a b@tp -> b a\")\n",
     "3:29: unexpected '@' in pattern: layouts are written in types "
     "(f32[\"batch@dp d\"]), not in an op's pattern"},
    {"LayoutInTakeAxis",
     "mesh tp\ndef f(t: f32[\"v d\"], ids: i64[\"n\"]) -> f32[\"n d\"]:\n"
     "    return take(t, ids, \"v@tp\")\n",
     "3:25: take's axis \"v@tp\" has a layout; layouts are written in types, "
     "not in an op's arguments"},
};

INSTANTIATE_TEST_SUITE_P(Mesh, MeshDiagTest, ::testing::ValuesIn(kMeshDiags),
                         [](const auto &info) { return info.param.name; });

std::vector<std::string> entryChecks(const CheckedSnippet &c) {
  std::vector<std::string> out;
  for (auto &fn : c.result.functions)
    for (auto &k : fn.ctx.constraints)
      out.push_back(k.str());
  return out;
}

// Sizes not known: divisibility is an entry check, once per dim and axis.
TEST(MeshCheck, UnknownSizesAreEntryChecks) {
  auto c = check("mesh dp, tp\n"
                 "def f(x: f32[\"batch@dp (heads@tp d)\"], w: f32[\"(heads "
                 "d)@tp e\"]) -> f32[\"batch@dp e\"]:\n"
                 "    return einsum(x, w, \"b k, k e -> b e\")\n");
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(entryChecks(*c),
            (std::vector<std::string>{"batch % dp == 0", "heads % tp == 0"}));
}

// One size known, the other not: still an entry check.
TEST(MeshCheck, KnownDimUnknownAxisIsAnEntryCheck) {
  auto c = check("mesh tp\ndim hidden = 4096\n" IDENTITY("b hidden@tp"));
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_EQ(entryChecks(*c), (std::vector<std::string>{"hidden % tp == 0"}));
}

// Both known and dividing: no entry check, no error; --mesh binds the axes.
TEST(MeshCheck, MeshOptionBindsAxes) {
  CheckOptions options;
  options.meshSizes = {{"dp", 2}, {"tp", 4}};
  auto c = check("mesh dp, tp\nshard batch -> dp\ndim batch = 8\n"
                 "dim hidden = 4096\n" IDENTITY("batch hidden@tp"),
                 options);
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_TRUE(entryChecks(*c).empty());
  EXPECT_EQ(c->result.dims.at("tp"), 4);
}

TEST(MeshCheck, MeshOptionErrors) {
  const char *source = "mesh dp, tp\n" IDENTITY("b@dp");
  CheckOptions unknown;
  unknown.meshSizes = {{"tq", 2}};
  EXPECT_EQ(check(source, unknown)->firstError(),
            "0:0: --mesh tq=2: 'tq' is not a mesh axis (the mesh has dp, tp); "
            "did you mean 'tp'?");
  CheckOptions disagree;
  disagree.meshSizes = {{"tp", 2}};
  disagree.dimOverrides = {{"tp", 4}};
  EXPECT_EQ(check(source, disagree)->firstError(),
            "0:0: --mesh tp=2 and --dim tp=4 disagree");
  CheckOptions zero;
  zero.dimOverrides = {{"dp", 0}};
  EXPECT_EQ(check(source, zero)->firstError(),
            "1:6: mesh axis 'dp' has size 0; a mesh axis spans at least 1 "
            "device");
  // --mesh overrides a `dim` of the axis, as --dim does.
  CheckOptions over;
  over.meshSizes = {{"tp", 3}};
  EXPECT_EQ(check("mesh tp\ndim tp = 2\ndim n = 8\n" IDENTITY("n@tp"), over)
                ->firstError(),
            "4:15: in shape \"n@tp\": n@tp splits 8 into 3 blocks, which "
            "does not divide; tp may be 1, 2, 4, 8 (the divisors of 8)");
}

// A program without a mesh is unchanged, and a type's own layout wins over
// a rule.
TEST(MeshCheck, OwnLayoutWinsOverRule) {
  auto c = check("mesh dp, tp\nshard batch -> dp\ndim dp = 3\ndim tp = 2\n"
                 "dim batch = 8\n" IDENTITY("batch@tp d"));
  ASSERT_FALSE(c->diags->hadError()) << c->firstError();
  EXPECT_TRUE(entryChecks(*c).empty());
}

} // namespace
