// The helpers behind warnings and notes: edit distance and the closest name,
// lone einsum axes, the rearrangements of an ambiguous broadcast, the spaced
// form of a numpy-style pattern, the einsum of `a @ b`, and the warning
// options of the DiagnosticEngine.
#include "TestHelpers.h"

#include "ein/Sema/Suggestions.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/Diagnostics.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace ein;
using namespace ein::test;

namespace {

Pattern einsumPattern(const std::string &text) {
  auto p = parsePattern(text, PatternUse::Einsum);
  EXPECT_TRUE(bool(p)) << text;
  return p ? *p : Pattern{};
}

TEST(Spelling, EditDistance) {
  EXPECT_EQ(editDistance("", ""), 0u);
  EXPECT_EQ(editDistance("seq", "seq"), 0u);
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(editDistance("abc", ""), 3u);
  EXPECT_EQ(editDistance("d", "e"), 1u);
  EXPECT_EQ(editDistance("head", "heads"), 1u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("flaw", "lawn"), 2u);
}

TEST(Spelling, ClosestName) {
  EXPECT_EQ(closestName("seqq", {"batch", "seq", "heads"}, 1), "seq");
  // Beyond the distance allowed: nothing.
  EXPECT_EQ(closestName("seqq", {"batch", "heads"}, 1), std::nullopt);
  // Ties go to the first candidate; the name itself is never suggested.
  EXPECT_EQ(closestName("d", {"d", "e", "f"}, 1), "e");
  EXPECT_EQ(closestName("d", {}, 5), std::nullopt);
  // Any distance.
  EXPECT_EQ(closestName("j", {"seqq", "seq"}, SIZE_MAX), "seq");
}

/// "operand:name->suggestion" for each lone axis.
std::vector<std::string> lone(const std::string &text) {
  Pattern p = einsumPattern(text);
  std::vector<std::string> out;
  for (const LoneAxis &a : loneAxes(p)) {
    EXPECT_EQ(text.substr(a.axis->offset, a.axis->length), a.axis->name);
    out.push_back(std::to_string(a.operand) + ":" + a.axis->name + "->" +
                  a.suggestion.value_or("-"));
  }
  return out;
}

TEST(LoneAxes, Found) {
  using V = std::vector<std::string>;
  // Each lone axis suggests the other: they were meant to be one.
  EXPECT_EQ(lone("b h s d, b h t e -> b h s t"), (V{"0:d->e", "1:e->d"}));
  // An axis shared with another operand, or kept in the output, is not lone.
  EXPECT_EQ(lone("b s d, b t d -> b s t"), V{});
  EXPECT_EQ(lone("a b, c d -> a b c d"), V{});
  // One operand: summing is the point of the call.
  EXPECT_EQ(lone("i j -> i"), V{});
  EXPECT_EQ(lone("b s d -> b"), V{});
  // A repeated axis within one operand (a trace) is deliberate.
  EXPECT_EQ(lone("i i, j -> j"), V{});
  // Without another lone axis, only a close spelling is suggested.
  EXPECT_EQ(lone("b s heads, b t head, b t heads -> b s t"),
            (V{"1:head->heads"}));
  EXPECT_EQ(lone("a b, b c, x -> a c"), (V{"2:x->-"}));
  // Three operands: the nearest of the other lone axes.
  EXPECT_EQ(lone("i j, k seq, seqq m -> i k m"),
            (V{"0:j->seq", "1:seq->seqq", "2:seqq->seq"}));
}

TEST(UnitAxisRearrangements, Ambiguous) {
  using V = std::vector<std::string>;
  EXPECT_EQ(unitAxisRearrangements(shapeOf("b seq"), shapeOf("b seq seq")),
            (V{"b seq -> b seq 1", "b seq -> b 1 seq"}));
  // Not ambiguous: one alignment.
  EXPECT_EQ(unitAxisRearrangements(shapeOf("b t"), shapeOf("b s t")),
            (V{"b t -> b 1 t"}));
  // A 1 of the smaller shape is dropped.
  EXPECT_EQ(unitAxisRearrangements(shapeOf("1 n"), shapeOf("n n")),
            (V{"1 n -> n 1", "1 n -> 1 n"}));
  // A dim that is no name gets a letter.
  EXPECT_EQ(unitAxisRearrangements(shapeOf("h*d"), shapeOf("h*d h*d")),
            (V{"i -> i 1", "i -> 1 i"}));
  // No namesake, out of order, a variadic: nothing to suggest.
  EXPECT_EQ(unitAxisRearrangements(shapeOf("c"), shapeOf("a b")), V{});
  EXPECT_EQ(unitAxisRearrangements(shapeOf("b a"), shapeOf("a b c")), V{});
  EXPECT_EQ(unitAxisRearrangements(shapeOf("*x"), shapeOf("a b")), V{});
}

TEST(SpacedPattern, NumpyStyle) {
  EXPECT_EQ(spacedPattern(einsumPattern("nd,dk->nk")), "n d, d k -> n k");
  EXPECT_EQ(spacedPattern(einsumPattern("bhsd,bhtd->bhst")),
            "b h s d, b h t d -> b h s t");
  // Names of one letter, digits, underscores, ellipses and groups stay.
  EXPECT_EQ(spacedPattern(einsumPattern("... ij, j x_1 -> ... i x_1")),
            "... i j, j x_1 -> ... i x_1");
  EXPECT_EQ(spacedPattern(einsumPattern("i j -> i")), std::nullopt);
  auto rearrange = parsePattern("b (hd) -> b hd", PatternUse::Rearrange);
  ASSERT_TRUE(bool(rearrange));
  EXPECT_EQ(spacedPattern(*rearrange), "b (h d) -> b h d");
}

TEST(MatmulEinsumPattern, NumpyRules) {
  EXPECT_EQ(matmulEinsumPattern(shapeOf("n k"), shapeOf("k m")),
            "n k, k m -> n m");
  EXPECT_EQ(matmulEinsumPattern(shapeOf("b s d"), shapeOf("d e")),
            "b s d, d e -> b s e");
  EXPECT_EQ(matmulEinsumPattern(shapeOf("b h s d"), shapeOf("b h d t")),
            "b h s d, b h d t -> b h s t");
  // Vectors: no row or column axis in the result.
  EXPECT_EQ(matmulEinsumPattern(shapeOf("k"), shapeOf("k m")), "k, k m -> m");
  EXPECT_EQ(matmulEinsumPattern(shapeOf("n k"), shapeOf("k")), "n k, k -> n");
  // Numbers and repeated names get letters.
  EXPECT_EQ(matmulEinsumPattern(shapeOf("4 5"), shapeOf("5 6")),
            "i j, j k -> i k");
  EXPECT_EQ(matmulEinsumPattern(shapeOf("n n"), shapeOf("n n")),
            "n i, i j -> n j");
  // A batch of 1 broadcasts: the name comes from the other side.
  EXPECT_EQ(matmulEinsumPattern(shapeOf("1 n k"), shapeOf("b k m")),
            "b n k, b k m -> b n m");
  EXPECT_EQ(matmulEinsumPattern(shapeOf(""), shapeOf("k m")), std::nullopt);
  EXPECT_EQ(matmulEinsumPattern(shapeOf("*b n k"), shapeOf("k m")),
            std::nullopt);
}

TEST(Ordinal, Suffixes) {
  EXPECT_EQ(ordinal(1), "1st");
  EXPECT_EQ(ordinal(2), "2nd");
  EXPECT_EQ(ordinal(3), "3rd");
  EXPECT_EQ(ordinal(4), "4th");
  EXPECT_EQ(ordinal(11), "11th");
  EXPECT_EQ(ordinal(12), "12th");
  EXPECT_EQ(ordinal(13), "13th");
  EXPECT_EQ(ordinal(21), "21st");
  EXPECT_EQ(ordinal(112), "112th");
}

TEST(WarningOptions, Names) {
  for (WarningKind kind : allWarningKinds())
    EXPECT_EQ(parseWarningName(warningName(kind)), kind);
  EXPECT_EQ(parseWarningName("lone-axis"), WarningKind::LoneAxis);
  EXPECT_EQ(parseWarningName("unused"), std::nullopt);
}

std::string printed(const DiagnosticEngine &diags) {
  std::ostringstream os;
  diags.print(os);
  return os.str();
}

TEST(WarningOptions, ShownDroppedOrErrors) {
  SourceFile file{"w.ein", "x = y\n"};
  {
    DiagnosticEngine diags(file);
    diags.warning(WarningKind::UnusedValue, {1, 1}, "unused");
    diags.note({1, 5}, "see here");
    EXPECT_FALSE(diags.hadError());
    EXPECT_EQ(diags.warningCount(), 1u);
    EXPECT_EQ(printed(diags), "w.ein:1:1: warning: unused [-Wunused-value]\n"
                              "x = y\n^\n"
                              "w.ein:1:5: note: see here\nx = y\n    ^\n");
  }
  {
    DiagnosticEngine diags(file);
    diags.setWarningOptions({false, {WarningKind::UnusedValue}});
    diags.warning(WarningKind::UnusedValue, {1, 1}, "unused");
    diags.note({1, 5}, "dropped with its warning");
    diags.warning(WarningKind::LoneAxis, {1, 5}, "lone");
    EXPECT_EQ(diags.warningCount(), 1u);
    EXPECT_EQ(printed(diags), "w.ein:1:5: warning: lone [-Wlone-axis]\n"
                              "x = y\n    ^\n");
  }
  {
    DiagnosticEngine diags(file);
    diags.setWarningOptions({true, {}});
    diags.warning(WarningKind::UnusedDim, {1, 1}, "unused");
    EXPECT_TRUE(diags.hadError());
    EXPECT_EQ(diags.warningCount(), 0u);
    EXPECT_EQ(printed(diags),
              "w.ein:1:1: error: unused [-Werror,-Wunused-dim]\nx = y\n^\n");
  }
}

} // namespace
