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

// Positions are those of the declared shape: `...` counts as one dim
// however many it expands to, so a `#` dim after it keeps its place.
TEST(EntryBindingTest, UnitDimPositionAfterEllipsis) {
  auto b = bind("def f(x: f32[\"... #c\"]) -> f32[\"a b\"]:\n"
                "    return rearrange(x, \"a b c -> a (b c)\")\n",
                {"x"}, {{2, 3, 1}});
  ASSERT_TRUE(b->binding.ok) << b->binding.error;
  ASSERT_EQ(b->binding.unitDims.count("x"), 1u);
  EXPECT_EQ(b->binding.unitDims.at("x"), (std::set<size_t>{1}));
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
