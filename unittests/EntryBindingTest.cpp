// Binding dims from actual input shapes (einc run's entry checks), and the
// specialisation of broadcastable `#` dims that the inputs give size 1.
#include "TestHelpers.h"

#include "ein/Sema/Checker.h"
#include "ein/Sema/EntryBinding.h"
#include "ein/Syntax/Parser.h"

#include <gtest/gtest.h>

#include <memory>

using namespace ein;

namespace {

/// A parsed and symbolically checked snippet whose function `f` is bound.
struct Bound {
  SourceFile file;
  std::unique_ptr<DiagnosticEngine> diags;
  Module module;
  CheckedModule checked;
  EntryBinding binding;
};

std::unique_ptr<Bound> bind(const std::string &source,
                            const std::vector<std::string> &params,
                            const std::vector<std::vector<int64_t>> &shapes) {
  auto b = std::make_unique<Bound>();
  b->file = SourceFile{"t.ein", source};
  b->diags = std::make_unique<DiagnosticEngine>(b->file);
  b->module = parseModule(b->file, *b->diags);
  CheckOptions options;
  options.onlyFunction = "f";
  if (!b->diags->hadError())
    b->checked = checkModule(b->module, options, *b->diags);
  EXPECT_FALSE(b->diags->hadError()) << "the snippet does not check";
  if (const CheckedFunction *f = b->checked.find("f"))
    b->binding = bindEntryShapes(*f, params, shapes);
  return b;
}

Int dim(const Bound &b, const char *name) {
  auto it = b.binding.dims.find(name);
  EXPECT_NE(it, b.binding.dims.end()) << name << " is not bound";
  return it == b.binding.dims.end() ? Int(-1) : it->second;
}

TEST(EntryBindingTest, BindsNamesAndSolvesExpressions) {
  auto b = bind("def f(x: f32[\"n 2*d\"], y: f32[\"d+1\"]) -> f32[\"n 2*d\"]:\n"
                "    return x\n",
                {"x", "y"}, {{3, 8}, {5}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  EXPECT_EQ(dim(*b, "n"), Int(3));
  EXPECT_EQ(dim(*b, "d"), Int(4));
  EXPECT_TRUE(b->binding.unitDims.empty());
}

TEST(EntryBindingTest, MismatchNamesParameterDimAndOrigin) {
  auto b = bind("def f(x: f32[\"n\"], y: f32[\"n\"]) -> f32[\"n\"]:\n"
                "    return x + y\n",
                {"x", "y"}, {{3}, {4}});
  EXPECT_FALSE(b->binding.ok);
  EXPECT_EQ(b->binding.error, "parameter 'y' dim 0 (n): expected 3, got 4; "
                              "n = 3 from parameter 'x' dim 0 (n)");
}

// A `#m` dim of size 1 broadcasts: it neither binds m nor conflicts with
// the m another input gives, whatever the order of the parameters.
TEST(EntryBindingTest, BroadcastDimOfSizeOneBindsNothing) {
  auto b = bind("def f(x: f32[\"n #m\"], y: f32[\"n m\"]) -> f32[\"n m\"]:\n"
                "    return x + y\n",
                {"x", "y"}, {{3, 1}, {3, 4}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  EXPECT_EQ(dim(*b, "m"), Int(4));
  ASSERT_EQ(b->binding.unitDims.count("x"), 1u);
  EXPECT_EQ(b->binding.unitDims.at("x"), (std::set<size_t>{1}));
  EXPECT_EQ(b->binding.unitDims.count("y"), 0u);
}

TEST(EntryBindingTest, BroadcastDimOfFullSizeBinds) {
  auto b = bind("def f(x: f32[\"n #m\"], y: f32[\"n m\"]) -> f32[\"n m\"]:\n"
                "    return x + y\n",
                {"x", "y"}, {{3, 5}, {3, 4}});
  EXPECT_FALSE(b->binding.ok);
  EXPECT_EQ(b->binding.error, "parameter 'y' dim 1 (m): expected 5, got 4; "
                              "m = 5 from parameter 'x' dim 1 (#m)");
}

TEST(EntryBindingTest, NameOnlyInUnitBroadcastDimsIsOne) {
  auto b = bind("def f(x: f32[\"n #m\"]) -> f32[\"n #m\"]:\n"
                "    return x\n",
                {"x"}, {{3, 1}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  EXPECT_EQ(dim(*b, "m"), Int(1));
}

// Positions are those of the shape with its variadic expanded (as the
// re-check expands it, by packRanks): a `#` dim after a `...` of rank 2 is
// dim 2.
TEST(EntryBindingTest, UnitDimPositionAfterEllipsis) {
  auto b = bind("def f(x: f32[\"... #c\"]) -> f32[\"a b\"]:\n"
                "    return rearrange(x, \"a b c -> a (b c)\")\n",
                {"x"}, {{2, 3, 1}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  ASSERT_EQ(b->binding.unitDims.count("x"), 1u);
  EXPECT_EQ(b->binding.unitDims.at("x"), (std::set<size_t>{2}));
  EXPECT_EQ(b->binding.packRanks, (std::map<std::string, size_t>{{"x...", 2}}));
}

//===----------------------------------------------------------------------===//
// Variadics
//===----------------------------------------------------------------------===//

TEST(EntryBindingTest, VariadicTakesTheDimsLeftByTheOthers) {
  const char *source =
      "def f(x: f32[\"c *batch n\"], w: f32[\"n m\"]) -> f32[\"c *batch m\"]:\n"
      "    return einsum(x, w, \"c ... n, n m -> c ... m\")\n";
  auto b = bind(source, {"x", "w"}, {{7, 2, 3, 4}, {4, 5}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  EXPECT_EQ(b->binding.packRanks,
            (std::map<std::string, size_t>{{"batch", 2}}));
  EXPECT_EQ(dim(*b, "batch_0"), Int(2));
  EXPECT_EQ(dim(*b, "batch_1"), Int(3));
  EXPECT_EQ(dim(*b, "n"), Int(4));
  // Rank 1 names the dim after the variadic; rank 0 binds nothing.
  auto one = bind(source, {"x", "w"}, {{7, 9, 4}, {4, 5}});
  ASSERT_TRUE(one->binding.ok) << one->binding.error;
  EXPECT_EQ(dim(*one, "batch"), Int(9));
  auto none = bind(source, {"x", "w"}, {{7, 4}, {4, 5}});
  ASSERT_TRUE(none->binding.ok) << none->binding.error;
  EXPECT_EQ(none->binding.packRanks.at("batch"), 0u);
  EXPECT_EQ(none->binding.dims.count("batch"), 0u);
}

// A named variadic's dims of size 1 are its sizes, not broadcasts.
TEST(EntryBindingTest, NamedVariadicDimsOfSizeOneBind) {
  auto b = bind("def f(x: f32[\"*batch n\"]) -> f32[\"*batch n\"]:\n"
                "    return x\n",
                {"x"}, {{1, 3, 4}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  EXPECT_EQ(dim(*b, "batch_0"), Int(1));
  EXPECT_TRUE(b->binding.unitDims.empty());
}

TEST(EntryBindingTest, AnonymousEllipsisIsKeyedByItsParameter) {
  auto b =
      bind("def f(x: f32[\"... n\"], y: f32[\"... n\"]) -> f32[\"... n\"]:\n"
           "    return einsum(x, y, \"... n, ... n -> ... n\")\n",
           {"x", "y"}, {{2, 3, 4}, {4}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  EXPECT_EQ(b->binding.packRanks,
            (std::map<std::string, size_t>{{"x...", 2}, {"y...", 0}}));
  EXPECT_EQ(dim(*b, "_anon0_1"), Int(3));
}

TEST(EntryBindingTest, VariadicRankMismatchBetweenParameters) {
  auto b = bind("def f(x: f32[\"*batch n\"], y: f32[\"*batch n\"]) -> "
                "f32[\"*batch n\"]:\n"
                "    return x + y\n",
                {"x", "y"}, {{2, 3, 4}, {3, 4}});
  EXPECT_FALSE(b->binding.ok);
  EXPECT_EQ(b->binding.error,
            "parameter 'y': variadic *batch has rank 1 here (sizes (3,)), but "
            "rank 2 in parameter 'x' (sizes (2, 3))");
}

TEST(EntryBindingTest, VariadicSizesMismatchBetweenParameters) {
  auto b = bind("def f(x: f32[\"*batch n\"], y: f32[\"*batch\"]) -> "
                "f32[\"*batch n\"]:\n"
                "    return x\n",
                {"x", "y"}, {{2, 3, 4}, {2, 5}});
  EXPECT_FALSE(b->binding.ok);
  EXPECT_EQ(b->binding.error, "parameter 'y': variadic *batch has sizes (2, 5) "
                              "here, but (2, 3) in parameter 'x'");
}

TEST(EntryBindingTest, TooFewDimsForTheFixedOnes) {
  auto b = bind("def f(x: f32[\"a ... b\"]) -> f32[\"a ... b\"]:\n"
                "    return x\n",
                {"x"}, {{2}});
  EXPECT_FALSE(b->binding.ok);
  EXPECT_EQ(b->binding.error,
            "parameter 'x': expected at least 2 dim(s) (\"a ... b\", where ... "
            "may stand for none), got 1 with shape (2,)");
}

TEST(EntryBindingTest, RankFixedByTheBody) {
  auto b = bind("def f(x: f32[\"*batch d\"]) -> f32[\"*batch\"]:\n"
                "    return reduce(x, \"i j d -> i j\", \"sum\")\n",
                {"x"}, {{2, 3}});
  EXPECT_FALSE(b->binding.ok);
  EXPECT_EQ(
      b->binding.error,
      "parameter 'x': expected 3 dims (\"*batch d\", where the function's "
      "body fixes *batch at rank 2), got 2 with shape (2, 3)");
}

//===----------------------------------------------------------------------===//
// Anonymous dims
//===----------------------------------------------------------------------===//

TEST(EntryBindingTest, AnonymousEqualityIsAnEntryCheck) {
  const char *source =
      "def f(x: f32[\"_ n\"], y: f32[\"_ n\"]) -> f32[\"_ n\"]:\n"
      "    return x + y\n";
  auto good = bind(source, {"x", "y"}, {{5, 3}, {5, 3}});
  ASSERT_TRUE(good->binding.ok) << good->binding.error;
  EXPECT_TRUE(good->binding.unitDims.empty());
  auto bad = bind(source, {"x", "y"}, {{5, 3}, {4, 3}});
  EXPECT_FALSE(bad->binding.ok);
  EXPECT_EQ(bad->binding.error,
            "entry check _anon0 == _anon1 fails with _anon0 = 5 from parameter "
            "'x' dim 0 (_), _anon1 = 4 from parameter 'y' dim 0 (_)");
}

// An anonymous dim of size 1 is specialised to 1 (as a `#` dim): its
// equality checks are left to the re-check, where it broadcasts.
TEST(EntryBindingTest, AnonymousDimOfSizeOneIsSpecialised) {
  auto b = bind("def f(x: f32[\"_ n\"], y: f32[\"... n\"]) -> f32[\"_ n\"]:\n"
                "    return x + y\n",
                {"x", "y"}, {{1, 3}, {1, 3}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  EXPECT_EQ(b->binding.unitDims.at("x"), (std::set<size_t>{0}));
  EXPECT_EQ(b->binding.unitDims.at("y"), (std::set<size_t>{0}));
  EXPECT_EQ(b->binding.unitNotes,
            (std::vector<std::string>{"parameter 'x': _ (dim 0)",
                                      "parameter 'y': dim 0 of ..."}));
  auto wide = bind("def f(x: f32[\"_ n\"], y: f32[\"_ n\"]) -> f32[\"_ n\"]:\n"
                   "    return x + y\n",
                   {"x", "y"}, {{1, 3}, {5, 3}});
  ASSERT_TRUE(wide->binding.ok) << wide->binding.error;
}

// The re-check with packRanks and unit dims inside an anonymous `...`.
TEST(EntryBindingTest, SpecialisedCheckExpandsVariadics) {
  SourceFile file{"t.ein", "def f(x: f32[\"... n\"], y: f32[\"... n\"]) -> "
                           "f32[\"... n\"]:\n"
                           "    return x + y\n"};
  DiagnosticEngine diags(file);
  Module module = parseModule(file, diags);
  CheckOptions options;
  options.onlyFunction = "f";
  options.packRanks = {{"x...", 2}, {"y...", 2}};
  options.entryDims = {{"_anon0_0", Int(2)},
                       {"_anon0_1", Int(1)},
                       {"_anon1_0", Int(2)},
                       {"_anon1_1", Int(5)},
                       {"n", Int(3)}};
  options.entryUnitDims["x"] = {1};
  CheckedModule checked = checkModule(module, options, diags);
  ASSERT_FALSE(diags.hadError());
  const CheckedFunction *f = checked.find("f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(shapeStr(f->ctx.expand(f->values.at(f->params.at(0)).type.shape)),
            "_anon0_0 1 n");
  EXPECT_EQ(shapeStr(f->ctx.expand(f->values.at(f->returns.at(0)).type.shape)),
            "_anon0_0 _anon1_1 n");
}

// The re-check with the inputs' sizes types the `#` dim as 1, so the body
// broadcasts it; an op that needs it equal to m reports the conflict.
TEST(EntryBindingTest, SpecialisedCheckTypesUnitDimsAsOne) {
  const char *source =
      "def f(x: f32[\"n #m\"], y: f32[\"n m\"]) -> f32[\"n m\"]:\n"
      "    return x + y\n"
      "def g(x: f32[\"n #m\"], y: f32[\"n m\"]) -> f32[\"n\"]:\n"
      "    return einsum(x, y, \"n m, n m -> n\")\n";
  for (const char *fn : {"f", "g"}) {
    SourceFile file{"t.ein", source};
    DiagnosticEngine diags(file);
    Module module = parseModule(file, diags);
    CheckOptions options;
    options.onlyFunction = fn;
    options.entryDims = {{"n", Int(3)}, {"m", Int(4)}};
    options.entryUnitDims["x"] = {1};
    CheckedModule checked = checkModule(module, options, diags);
    if (std::string(fn) == "f") {
      ASSERT_FALSE(diags.hadError());
      const CheckedFunction *f = checked.find("f");
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->values.at(f->params.at(0)).type.shape.at(1).str(), "1");
      EXPECT_EQ(f->values.at(f->returns.at(0)).type.shape.at(1).str(), "m");
    } else {
      ASSERT_TRUE(diags.hadError());
      EXPECT_EQ(diags.diagnostics().front().message,
                "axis 'm': expected size 1, got m (= 4)");
    }
  }
}

} // namespace
