// The einops pattern grammar: canonical text, group structure, and the
// syntax errors with the offset of the offending token.
#include "TestHelpers.h"

#include "ein/Syntax/Pattern.h"

#include <gtest/gtest.h>

using namespace ein;
using namespace ein::test;

namespace {

using Use = PatternUse;

/// The group structure of a pattern, independent of its spelling: a bare
/// axis prints as its name ("..." for an ellipsis, "*" for a pack star, "#N"
/// for an anonymous axis of size N), an empty bare group (a lone `1`) as "1",
/// and a parenthesised group as "(...)" around its members.
std::string structure(const PatternSide &side) {
  auto axis = [](const PatternAxis &a) -> std::string {
    switch (a.kind) {
    case PatternAxis::Kind::Name:
      return a.name;
    case PatternAxis::Kind::Ellipsis:
      return "...";
    case PatternAxis::Kind::Number:
      return "#" + std::to_string(a.value);
    case PatternAxis::Kind::Star:
      return "*";
    }
    return "?";
  };
  std::string out;
  for (auto &g : side.groups) {
    if (!out.empty())
      out += " ";
    if (!g.parenthesized) {
      EXPECT_LE(g.axes.size(), 1u) << "a bare group holds at most one axis";
      out += g.axes.empty() ? "1" : axis(g.axes[0]);
      continue;
    }
    out += "(";
    for (size_t i = 0; i < g.axes.size(); ++i)
      out += (i ? " " : "") + axis(g.axes[i]);
    out += ")";
  }
  return out;
}

std::string structure(const Pattern &p) {
  std::string out;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    out += (i ? ", " : "") + structure(p.inputs[i]);
  if (p.hasArrow)
    out += " -> " + structure(p.output);
  return out;
}

//===----------------------------------------------------------------------===//
// Valid patterns
//===----------------------------------------------------------------------===//

struct ValidCase {
  const char *name;
  const char *text;
  Use use;
  const char *canonical; // Pattern::str()
  const char *groups;    // structure()
  size_t numInputs;
};

void PrintTo(const ValidCase &c, std::ostream *os) { *os << c.name; }

class ValidPatternTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ValidPatternTest, CanonicalTextAndGroups) {
  const ValidCase &c = GetParam();
  auto p = parsePattern(c.text, c.use);
  ASSERT_TRUE(bool(p)) << describeError(p.error());
  EXPECT_EQ(p->str(), c.canonical);
  EXPECT_EQ(structure(*p), c.groups);
  EXPECT_EQ(p->inputs.size(), c.numInputs);
  EXPECT_EQ(p->hasArrow, c.use != Use::Pack);
  EXPECT_EQ(p->text, c.text);
  // The canonical text is a fixed point of parsing.
  auto again = parsePattern(p->str(), c.use);
  ASSERT_TRUE(bool(again)) << describeError(again.error());
  EXPECT_EQ(again->str(), c.canonical);
  EXPECT_EQ(structure(*again), c.groups);
}

const ValidCase kValid[] = {
    {"SplitHeads", "b s (h d) -> b h s d", Use::Rearrange,
     "b s (h d) -> b h s d", "b s (h d) -> b h s d", 1},
    {"ExtraSpacesNoSpaceBeforeParen", "  b   s(h d)->b h s d ", Use::Rearrange,
     "b s (h d) -> b h s d", "b s (h d) -> b h s d", 1},
    {"Flatten", "b c h w -> b (c h w)", Use::Rearrange, "b c h w -> b (c h w)",
     "b c h w -> b (c h w)", 1},
    {"EllipsisBothSides", "... h w -> ... (h w)", Use::Rearrange,
     "... h w -> ... (h w)", "... h w -> ... (h w)", 1},
    {"EllipsisInParensOnRight", "b ... -> b (...)", Use::Rearrange,
     "b ... -> b (...)", "b ... -> b (...)", 1},
    {"UnitAxisIsEmptyGroup", "b 1 c -> b c", Use::Rearrange, "b 1 c -> b c",
     "b 1 c -> b c", 1},
    {"EmptyParens", "b () c -> b c", Use::Rearrange, "b () c -> b c",
     "b () c -> b c", 1},
    {"UnitInsideParensDropped", "(h 1 w) -> h w", Use::Rearrange,
     "(h w) -> h w", "(h w) -> h w", 1},
    {"SingletonParens", "b (h) w -> b h w", Use::Rearrange, "b (h) w -> b h w",
     "b (h) w -> b h w", 1},
    {"Underscores", "batch_size x1 -> x1 batch_size", Use::Rearrange,
     "batch_size x1 -> x1 batch_size", "batch_size x1 -> x1 batch_size", 1},
    {"TabIsSpace", "a\tb -> b a", Use::Rearrange, "a b -> b a", "a b -> b a",
     1},
    {"ScalarIdentity", "->", Use::Rearrange, " -> ", " -> ", 1},
    {"TwoLevelSplit", "(b1 b2) h w c -> (b1 h) (b2 w) c", Use::Rearrange,
     "(b1 b2) h w c -> (b1 h) (b2 w) c", "(b1 b2) h w c -> (b1 h) (b2 w) c", 1},
    {"ReduceSpatial", "b c h w -> b c", Use::Reduce, "b c h w -> b c",
     "b c h w -> b c", 1},
    {"ReduceKeepUnitDims", "b c h w -> b c 1 1", Use::Reduce,
     "b c h w -> b c 1 1", "b c h w -> b c 1 1", 1},
    {"ReduceKeepEmptyParens", "b c h w -> b c () ()", Use::Reduce,
     "b c h w -> b c () ()", "b c h w -> b c () ()", 1},
    {"ReducePool", "b (h 2) (w 2) c -> b h w c", Use::Reduce,
     "b (h 2) (w 2) c -> b h w c", "b (h #2) (w #2) c -> b h w c", 1},
    {"ReduceUnitInParens", "(a 1) b -> b", Use::Reduce, "(a) b -> b",
     "(a) b -> b", 1},
    {"RepeatNewAxis", "h w -> h w c", Use::Repeat, "h w -> h w c",
     "h w -> h w c", 1},
    {"RepeatNumberAxis", "h w -> h w 2", Use::Repeat, "h w -> h w 2",
     "h w -> h w #2", 1},
    {"RepeatNumberInParens", "h w -> (2 h) w", Use::Repeat, "h w -> (2 h) w",
     "h w -> (#2 h) w", 1},
    {"RepeatUnitOutput", "h -> h 1", Use::Repeat, "h -> h 1", "h -> h 1", 1},
    {"RepeatLeadingZeros", "a -> a 007", Use::Repeat, "a -> a 007", "a -> a #7",
     1},
    {"EinsumAttention", "b h s d, b h t d -> b h s t", Use::Einsum,
     "b h s d, b h t d -> b h s t", "b h s d, b h t d -> b h s t", 2},
    {"EinsumDiagonal", "i i -> i", Use::Einsum, "i i -> i", "i i -> i", 1},
    {"EinsumCompactCommas", "i j,j k->i k", Use::Einsum, "i j, j k -> i k",
     "i j, j k -> i k", 2},
    {"EinsumChain", "a b, b c, c d -> a d", Use::Einsum, "a b, b c, c d -> a d",
     "a b, b c, c d -> a d", 3},
    {"EinsumBatchedEllipsis", "... i j, ... j k -> ... i k", Use::Einsum,
     "... i j, ... j k -> ... i k", "... i j, ... j k -> ... i k", 2},
    {"EinsumUnderscoreAxis", "i _ -> i", Use::Einsum, "i _ -> i", "i _ -> i",
     1},
    {"EinsumDiagonalThenContract", "i i, i j -> j", Use::Einsum,
     "i i, i j -> j", "i i, i j -> j", 2},
    {"PackMiddle", "b * c", Use::Pack, "b * c", "b * c", 1},
    {"PackLeading", "* c", Use::Pack, "* c", "* c", 1},
    {"PackTrailing", "b h *", Use::Pack, "b h *", "b h *", 1},
    {"PackStarOnly", "*", Use::Pack, "*", "*", 1},
    // Unicode axis names (Python identifiers), as einops accepts them.
    {"GreekAxes", "\xce\xb1 \xce\xb2 -> \xce\xb2 \xce\xb1", Use::Rearrange,
     "\xce\xb1 \xce\xb2 -> \xce\xb2 \xce\xb1",
     "\xce\xb1 \xce\xb2 -> \xce\xb2 \xce\xb1", 1},
    {"CjkComposition",
     "(\xe6\x89\xb9 \xe9\x95\xbf) -> \xe6\x89\xb9 \xe9\x95\xbf", Use::Rearrange,
     "(\xe6\x89\xb9 \xe9\x95\xbf) -> \xe6\x89\xb9 \xe9\x95\xbf",
     "(\xe6\x89\xb9 \xe9\x95\xbf) -> \xe6\x89\xb9 \xe9\x95\xbf", 1},
    {"GreekEllipsisNeighbour", "\xce\xb1 ... -> ... \xce\xb1", Use::Rearrange,
     "\xce\xb1 ... -> ... \xce\xb1", "\xce\xb1 ... -> ... \xce\xb1", 1},
};

INSTANTIATE_TEST_SUITE_P(Grammar, ValidPatternTest, ::testing::ValuesIn(kValid),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Invalid patterns
//===----------------------------------------------------------------------===//

struct InvalidCase {
  const char *name;
  const char *text;
  Use use;
  unsigned offset, length;
  const char *message; // a substring of the error
};

void PrintTo(const InvalidCase &c, std::ostream *os) { *os << c.name; }

class InvalidPatternTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidPatternTest, ErrorOffsetAndMessage) {
  const InvalidCase &c = GetParam();
  auto p = parsePattern(c.text, c.use);
  ASSERT_FALSE(bool(p)) << "parsed as " << p->str();
  const ShapeError &e = p.error();
  EXPECT_EQ(e.anchor, ShapeError::Anchor::Pattern);
  EXPECT_EQ(e.offset, c.offset) << e.message;
  EXPECT_EQ(e.length, c.length) << e.message;
  EXPECT_NE(e.message.find(c.message), std::string::npos)
      << "message: " << e.message;
}

const InvalidCase kInvalid[] = {
    {"UnclosedParen", "b (h d -> b h d", Use::Rearrange, 2, 1,
     "unbalanced '(': missing ')'"},
    {"UnclosedParenOnRight", "a -> (b", Use::Rearrange, 5, 1, "unbalanced '('"},
    {"StrayCloseParen", "b h d) -> b h d", Use::Rearrange, 5, 1,
     "unbalanced ')': no matching '('"},
    {"ExtraCloseParen", "a (b) ) -> a b", Use::Rearrange, 6, 1,
     "unbalanced ')'"},
    {"NestedParens", "b ((h d)) -> b h d", Use::Rearrange, 3, 1,
     "nested parentheses"},
    {"TwoEllipsesLeft", "... a ... -> a", Use::Rearrange, 6, 3,
     "two ellipses on one side"},
    {"TwoEllipsesRight", "a -> a ... ...", Use::Rearrange, 11, 3,
     "two ellipses on one side"},
    {"EllipsisOnlyOnRight", "a b -> ... a b", Use::Rearrange, 7, 3,
     "'...' on the right side but not on the left"},
    {"EinsumEllipsisOnlyInOutput", "i, j -> ...", Use::Einsum, 8, 3,
     "'...' on the right side but not on the left"},
    {"EllipsisInParensOnLeft", "(a ...) -> a ...", Use::Rearrange, 3, 3,
     "'...' inside parentheses is only allowed on the right side"},
    {"EinsumEllipsisInParensOnLeft", "(i ...) j -> i j", Use::Einsum, 3, 3,
     "'...' inside parentheses"},
    {"TwoDots", ".. a -> a", Use::Rearrange, 0, 2,
     "dots are only allowed as an ellipsis"},
    {"FourDots", "a .... -> a", Use::Rearrange, 2, 4,
     "dots are only allowed as an ellipsis"},
    {"EllipsisGluedToName", "...a -> ...a", Use::Rearrange, 0, 3,
     "'...' must be separated from axis names"},
    {"DuplicateLeft", "a a -> a", Use::Rearrange, 2, 1, "duplicate axis 'a'"},
    {"DuplicateRight", "a b -> b b", Use::Rearrange, 9, 1,
     "duplicate axis 'b' on one side"},
    {"DuplicateInComposition", "(a a) -> a", Use::Rearrange, 3, 1,
     "duplicate axis 'a'"},
    {"ReduceDuplicate", "a a -> a", Use::Reduce, 2, 1, "duplicate axis 'a'"},
    {"EinsumDuplicateOutput", "i j -> i i", Use::Einsum, 9, 1,
     "duplicate axis 'i'"},
    {"EinsumDuplicateOutputTwoInputs", "i, i -> i i", Use::Einsum, 10, 1,
     "duplicate axis 'i'"},
    {"LeadingUnderscore", "_a b -> b _a", Use::Rearrange, 0, 2,
     "invalid axis name '_a': an axis name must not start or end with '_'"},
    {"TrailingUnderscore", "a_ b -> b a_", Use::Rearrange, 0, 2,
     "must not start or end with '_'"},
    {"LoneUnderscoreOutsideEinsum", "a _ -> a", Use::Rearrange, 2, 1,
     "invalid axis name '_'"},
    {"DigitFirst", "2a -> 2a", Use::Rearrange, 0, 2,
     "invalid axis name '2a': not a valid identifier"},
    {"EinsumLeadingUnderscore", "_i -> _i", Use::Einsum, 0, 2,
     "must not start or end with '_'"},
    {"UnknownCharPlus", "a + b -> a b", Use::Rearrange, 2, 1,
     "unexpected character '+' in pattern"},
    {"StarOutsidePack", "a * -> a", Use::Rearrange, 2, 1,
     "unexpected character '*'"},
    {"UnknownCharOnRight", "a b -> a;b", Use::Rearrange, 8, 1,
     "unexpected character ';'"},
    {"MissingArrow", "a b", Use::Rearrange, 0, 3, "pattern needs '->'"},
    {"EinsumMissingArrow", "i j, j k", Use::Einsum, 0, 8, "pattern needs '->'"},
    {"TwoArrows", "a -> b -> c", Use::Rearrange, 7, 2, "more than one '->'"},
    {"CommaInRearrange", "a, b -> a b", Use::Rearrange, 1, 1,
     "only einsum takes several operands"},
    {"CommaInReduce", "a, b -> a", Use::Reduce, 1, 1,
     "only einsum takes several operands"},
    {"EinsumTwoOutputs", "i j -> i, j", Use::Einsum, 8, 1, "one output only"},
    {"ZeroAxis", "a 0 -> a", Use::Repeat, 2, 1,
     "an anonymous axis must be positive"},
    {"HugeAxis", "a -> a 99999999999999999999", Use::Repeat, 7, 20,
     "anonymous axis size is too large"},
    {"PackTwoStars", "b * c * d", Use::Pack, 6, 1, "two '*' axes"},
    {"PackNoStar", "b c", Use::Pack, 0, 3, "a pack pattern needs one '*' axis"},
    {"PackParens", "b (c) *", Use::Pack, 2, 1,
     "parentheses are not allowed in a pack pattern"},
    {"PackArrow", "b -> *", Use::Pack, 2, 2, "a pack pattern has no '->'"},
    {"PackEllipsis", "... *", Use::Pack, 0, 3,
     "'...' is not allowed in a pack pattern; use '*'"},
    {"PackNumber", "2 *", Use::Pack, 0, 1,
     "numbers are not allowed in a pack pattern"},
    {"PackDuplicate", "b * b", Use::Pack, 4, 1, "duplicate axis 'b'"},
    // Offsets and lengths count bytes of the UTF-8 text; the printer turns
    // them into columns.
    {"NonNameCharacter", "\xce\xb1 \xc3\x97 -> \xce\xb1", Use::Rearrange, 3, 2,
     "unexpected character '\xc3\x97' (U+00D7) in pattern"},
    {"Emoji", "a \xf0\x9f\x98\x80 -> a", Use::Rearrange, 2, 4,
     "unexpected character '\xf0\x9f\x98\x80' (U+1F600) in pattern"},
    {"InvalidUtf8", "a \xce -> a", Use::Rearrange, 2, 1,
     "invalid UTF-8 in pattern: truncated sequence '\\xce'"},
    {"GreekDuplicate", "\xce\xb1 \xce\xb1 -> \xce\xb1", Use::Rearrange, 3, 2,
     "duplicate axis '\xce\xb1'"},
    {"EllipsisGluedToGreek", "\xce\xb1... -> \xce\xb1", Use::Rearrange, 2, 3,
     "'...' must be separated"},
    {"ArabicIndicDigitsAreNotASize", "a \xd9\xa3 -> a", Use::Rearrange, 2, 2,
     "not a valid identifier"},
};

INSTANTIATE_TEST_SUITE_P(Grammar, InvalidPatternTest,
                         ::testing::ValuesIn(kInvalid),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Positions, kinds and side helpers
//===----------------------------------------------------------------------===//

TEST(PatternPositions, AxesAndGroupsCarryOffsets) {
  //            0123456789012345
  auto p = parsePattern("b (h 2) -> b h", Use::Reduce);
  ASSERT_TRUE(bool(p)) << describeError(p.error());
  const PatternSide &in = p->inputs[0];
  EXPECT_EQ(in.offset, 0u);
  EXPECT_EQ(in.length, 8u); // "b (h 2) "
  ASSERT_EQ(in.groups.size(), 2u);
  const PatternGroup &g = in.groups[1];
  EXPECT_TRUE(g.parenthesized);
  EXPECT_EQ(g.offset, 2u);
  EXPECT_EQ(g.length, 5u);
  ASSERT_EQ(g.axes.size(), 2u);
  EXPECT_EQ(g.axes[0].kind, PatternAxis::Kind::Name);
  EXPECT_EQ(g.axes[0].name, "h");
  EXPECT_EQ(g.axes[0].offset, 3u);
  EXPECT_EQ(g.axes[0].length, 1u);
  EXPECT_EQ(g.axes[1].kind, PatternAxis::Kind::Number);
  EXPECT_EQ(g.axes[1].value, 2);
  EXPECT_EQ(g.axes[1].offset, 5u);
  EXPECT_EQ(p->output.offset, 10u);
  EXPECT_EQ(p->output.length, 4u); // " b h"
  ASSERT_EQ(p->output.groups.size(), 2u);
  EXPECT_EQ(p->output.groups[1].axes[0].offset, 13u);
}

TEST(PatternPositions, EinsumOperandSides) {
  //            0123456789012345678
  auto p = parsePattern("i j, j k -> i k", Use::Einsum);
  ASSERT_TRUE(bool(p)) << describeError(p.error());
  ASSERT_EQ(p->inputs.size(), 2u);
  EXPECT_EQ(p->inputs[0].offset, 0u);
  EXPECT_EQ(p->inputs[0].length, 3u);
  EXPECT_EQ(p->inputs[1].offset, 4u);
  EXPECT_EQ(p->inputs[1].length, 5u); // " j k "
  EXPECT_EQ(p->inputs[1].groups[0].axes[0].offset, 5u);
}

TEST(PatternSideHelpers, EllipsisAndNamedAxes) {
  auto p = parsePattern("b ... (h 2) -> b (... h)", Use::Reduce);
  ASSERT_TRUE(bool(p)) << describeError(p.error());
  EXPECT_TRUE(p->inputs[0].hasEllipsis());
  EXPECT_FALSE(p->inputs[0].hasEllipsisInParens());
  EXPECT_TRUE(p->output.hasEllipsis());
  EXPECT_TRUE(p->output.hasEllipsisInParens());
  std::vector<std::string> names;
  for (auto *a : p->inputs[0].namedAxes())
    names.push_back(a->name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "h"}));
  EXPECT_EQ(p->inputs[0].str(), "b ... (h 2)");
  EXPECT_EQ(p->output.str(), "b (... h)");
}

TEST(PatternSideHelpers, PackStarAxis) {
  auto p = parsePattern("b * c", Use::Pack);
  ASSERT_TRUE(bool(p)) << describeError(p.error());
  ASSERT_EQ(p->inputs[0].groups.size(), 3u);
  const PatternAxis &star = p->inputs[0].groups[1].axes[0];
  EXPECT_EQ(star.kind, PatternAxis::Kind::Star);
  EXPECT_EQ(star.offset, 2u);
  EXPECT_FALSE(p->hasArrow);
  EXPECT_TRUE(p->output.groups.empty());
}

TEST(PatternSideHelpers, EinsumRepeatsUnderscore) {
  // `_` is an ordinary (repeatable) axis name in einsum patterns.
  auto p = parsePattern("_ _ -> _", Use::Einsum);
  ASSERT_TRUE(bool(p)) << describeError(p.error());
  EXPECT_EQ(p->str(), "_ _ -> _");
}

//===----------------------------------------------------------------------===//
// isValidAxisName
//===----------------------------------------------------------------------===//

struct AxisNameCase {
  const char *name;
  const char *axis;
  bool allowUnderscore;
  bool valid;
  const char *reason; // substring, for invalid names
};

void PrintTo(const AxisNameCase &c, std::ostream *os) { *os << c.name; }

class AxisNameTest : public ::testing::TestWithParam<AxisNameCase> {};

TEST_P(AxisNameTest, Validity) {
  const AxisNameCase &c = GetParam();
  std::string reason;
  EXPECT_EQ(isValidAxisName(c.axis, c.allowUnderscore, &reason), c.valid);
  if (!c.valid) {
    EXPECT_NE(reason.find(c.reason), std::string::npos) << reason;
  }
  // The reason pointer is optional.
  EXPECT_EQ(isValidAxisName(c.axis, c.allowUnderscore), c.valid);
}

const AxisNameCase kAxisNames[] = {
    {"Simple", "a", false, true, ""},
    {"Word", "batch", false, true, ""},
    {"InnerUnderscore", "a_b", false, true, ""},
    {"TrailingDigit", "x1", false, true, ""},
    {"Uppercase", "Heads", false, true, ""},
    {"LoneUnderscoreAllowed", "_", true, true, ""},
    {"LoneUnderscoreRejected", "_", false, false, "must not start or end"},
    {"DoubleUnderscore", "__", true, false, "must not start or end"},
    {"LeadingUnderscore", "_a", true, false, "must not start or end"},
    {"TrailingUnderscore", "a_", false, false, "must not start or end"},
    {"DigitFirst", "2a", false, false, "not a valid identifier"},
    {"AllDigits", "12", false, false, "not a valid identifier"},
    {"Dash", "a-b", false, false, "not a valid identifier"},
    {"Dot", "a.b", false, false, "not a valid identifier"},
    {"Empty", "", false, false, "empty axis name"},
    {"Greek", "\xce\xb1", false, true, ""},
    {"Cjk", "\xe9\x95\xbf\xe5\xba\xa6", false, true, ""},
    {"CombiningMarkInside", "e\xcc\x81", false, true, ""},
    {"CombiningMarkFirst",
     "\xcc\x81"
     "e",
     false, false, "not a valid identifier"},
    {"GreekTrailingUnderscore", "\xce\xb1_", false, false,
     "must not start or end"},
    {"EmojiName", "\xf0\x9f\x98\x80", false, false, "not a valid identifier"},
};

INSTANTIATE_TEST_SUITE_P(Names, AxisNameTest, ::testing::ValuesIn(kAxisNames),
                         [](const auto &info) { return info.param.name; });

} // namespace
