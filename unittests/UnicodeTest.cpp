// UTF-8 decoding, the identifier classes (Python's XID_Start/XID_Continue) and
// display widths.
#include "ein/Syntax/Unicode.h"
#include "ein/Shape/Shape.h"

#include <gtest/gtest.h>

using namespace ein;
using namespace ein::unicode;

namespace {

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

struct DecodeCase {
  const char *name;
  const char *bytes;
  char32_t codePoint; // when valid
  unsigned size;
  Utf8Error error;
};

void PrintTo(const DecodeCase &c, std::ostream *os) { *os << c.name; }

class DecodeTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeTest, CodePointSizeAndError) {
  const DecodeCase &c = GetParam();
  auto d = decodeUtf8(c.bytes, 0);
  EXPECT_EQ(d.error, c.error) << describe(d.error);
  EXPECT_EQ(d.size, c.size);
  if (c.error == Utf8Error::None) {
    EXPECT_EQ(static_cast<uint32_t>(d.codePoint),
              static_cast<uint32_t>(c.codePoint));
  }
}

const DecodeCase kDecode[] = {
    {"Ascii", "a", U'a', 1, Utf8Error::None},
    {"TwoBytes", "\xce\xb1", U'α', 2, Utf8Error::None},
    {"ThreeBytes", "\xe4\xb8\xad", U'中', 3, Utf8Error::None},
    {"FourBytes", "\xf0\x9f\x98\x80", U'\U0001F600', 4, Utf8Error::None},
    {"LargestCodePoint", "\xf4\x8f\xbf\xbf", U'\U0010FFFF', 4, Utf8Error::None},
    {"StrayContinuation", "\x80z", 0, 1, Utf8Error::StrayContinuation},
    {"ByteNeverInUtf8", "\xff", 0, 1, Utf8Error::InvalidByte},
    {"TruncatedAtEnd", "\xce", 0, 1, Utf8Error::Truncated},
    {"TruncatedBeforeAscii", "\xe4\xb8z", 0, 2, Utf8Error::Truncated},
    {"OverlongTwoBytes", "\xc0\xaf", 0, 2, Utf8Error::Overlong},
    {"OverlongThreeBytes", "\xe0\x80\xaf", 0, 3, Utf8Error::Overlong},
    {"OverlongFourBytes", "\xf0\x80\x80\xaf", 0, 4, Utf8Error::Overlong},
    {"Surrogate", "\xed\xa0\x80", 0, 3, Utf8Error::Surrogate},
    {"BeyondMaximum", "\xf4\x90\x80\x80", 0, 4, Utf8Error::TooLarge},
};

INSTANTIATE_TEST_SUITE_P(Utf8, DecodeTest, ::testing::ValuesIn(kDecode),
                         [](const auto &info) { return info.param.name; });

TEST(Utf8, EncodeRoundTripsEveryScalarValue) {
  for (char32_t c = 0; c <= 0x10FFFF; c += (c < 0x3000 ? 1 : 97)) {
    if (c >= 0xD800 && c <= 0xDFFF)
      continue;
    std::string bytes = encodeUtf8(c);
    auto d = decodeUtf8(bytes, 0);
    ASSERT_TRUE(d.valid()) << std::hex << static_cast<uint32_t>(c);
    EXPECT_EQ(static_cast<uint32_t>(d.codePoint), static_cast<uint32_t>(c));
    EXPECT_EQ(d.size, bytes.size());
  }
}

TEST(Utf8, EscapesAndSanitizes) {
  EXPECT_EQ(escapeBytes("\xce\xb1"), "\\xce\\xb1");
  EXPECT_EQ(sanitizeUtf8("a\xce\xb1 b"), "a\xce\xb1 b"); // valid text unchanged
  EXPECT_EQ(sanitizeUtf8("a\xce b"), "a\\xce b");
  EXPECT_EQ(sanitizeUtf8("\xed\xa0\x80!"), "\\xed\\xa0\\x80!");
  EXPECT_EQ(describeInvalidUtf8("x\x80", 1), "stray continuation byte '\\x80'");
  EXPECT_EQ(describeInvalidUtf8("\xce", 0), "truncated sequence '\\xce'");
}

TEST(Utf8, CountsCodePoints) {
  EXPECT_EQ(countCodePoints(""), 0u);
  EXPECT_EQ(countCodePoints("abc"), 3u);
  EXPECT_EQ(countCodePoints("\xce\xb1 \xce\xb2"), 3u); // "α β"
  EXPECT_EQ(countCodePoints("a\xce"), 2u);             // invalid counts one
  EXPECT_EQ(countCodePoints("\xe4\xb8\xad\xe6\x96\x87"), 2u); // "中文"
}

//===----------------------------------------------------------------------===//
// Identifier classes
//===----------------------------------------------------------------------===//

struct ClassCase {
  const char *name;
  char32_t c;
  bool start, cont;
};

void PrintTo(const ClassCase &c, std::ostream *os) { *os << c.name; }

class IdentifierClassTest : public ::testing::TestWithParam<ClassCase> {};

TEST_P(IdentifierClassTest, StartAndContinue) {
  const ClassCase &c = GetParam();
  EXPECT_EQ(isIdentifierStart(c.c), c.start);
  EXPECT_EQ(isIdentifierContinue(c.c), c.cont);
}

// Expected values are Python's: c.isidentifier() and ('a' + c).isidentifier().
const ClassCase kClasses[] = {
    {"AsciiLetter", U'q', true, true},
    {"AsciiUpper", U'Q', true, true},
    {"Underscore", U'_', true, true},
    {"AsciiDigit", U'7', false, true},
    {"AsciiSpace", U' ', false, false},
    {"AsciiDash", U'-', false, false},
    {"GreekAlpha", U'α', true, true},
    {"GreekCapitalOmega", U'Ω', true, true},
    {"CjkIdeograph", U'中', true, true},
    {"Hiragana", U'あ', true, true},
    {"CombiningAcuteIsContinueOnly", U'\u0301', false, true},
    {"DevanagariSignIsContinueOnly", U'\u093F', false, true},
    {"ArabicIndicDigitIsContinueOnly", U'\u0663', false, true},
    {"MiddleDotIsContinueOnly", U'\u00B7', false, true},
    {"MultiplicationSign", U'×', false, false},
    {"NoBreakSpace", U'\u00A0', false, false},
    {"EmojiRejected", U'\U0001F600', false, false},
    {"SnowmanRejected", U'\u2603', false, false},
    {"MathBoldA", U'\U0001D400', true, true}, // Python accepts (NFKC: 'A')
    {"SupplementaryIdeograph", U'\U00020000', true, true},
    {"Unassigned", U'\u0378', false, false},
};

INSTANTIATE_TEST_SUITE_P(Unicode, IdentifierClassTest,
                         ::testing::ValuesIn(kClasses),
                         [](const auto &info) { return info.param.name; });

TEST(Identifiers, ScanStopsAtNonIdentifierCharacters) {
  EXPECT_EQ(scanIdentifier("\xce\xb1\xce\xb2 x", 0), 4u); // "αβ"
  EXPECT_EQ(scanIdentifier("e\xcc\x81+", 0), 3u);         // "é" decomposed
  EXPECT_EQ(scanIdentifier("\xcc\x81", 0), 0u);           // a mark cannot start
  EXPECT_EQ(scanIdentifier("x\xce", 0), 1u); // stops at invalid UTF-8
  EXPECT_EQ(scanIdentifier("a\xf0\x9f\x98\x80", 0), 1u); // emoji ends it
  EXPECT_TRUE(isIdentifier("\xe9\x95\xbf\xe5\xba\xa6")); // "长度"
  EXPECT_FALSE(isIdentifier(
      "x\xe2\x82\x81")); // "x₁": subscript digits are not XID_Continue
  EXPECT_FALSE(isIdentifier("1x"));
  EXPECT_FALSE(isIdentifier(""));
}

//===----------------------------------------------------------------------===//
// Display width and descriptions
//===----------------------------------------------------------------------===//

TEST(DisplayWidth, WideNarrowAndZero) {
  EXPECT_EQ(displayWidth(U'a'), 1u);
  EXPECT_EQ(displayWidth(U'α'), 1u);
  EXPECT_EQ(displayWidth(U'中'), 2u);
  EXPECT_EQ(displayWidth(U'\uFF21'), 2u); // fullwidth 'Ａ'
  EXPECT_EQ(displayWidth(U'\u0301'), 0u); // combining acute
  EXPECT_EQ(displayWidth(U'\u200B'), 0u); // zero width space (Cf)
}

TEST(Describe, CodePoints) {
  EXPECT_EQ(describeCodePoint(U'$'), "'$'");
  EXPECT_EQ(describeCodePoint(U'\x01'), "'\\x01'");
  EXPECT_EQ(describeCodePoint(U'\x7f'), "'\\x7f'");
  EXPECT_EQ(describeCodePoint(U'×'), "'\xc3\x97' (U+00D7)");
  EXPECT_EQ(describeCodePoint(U'\u0085'), "U+0085");
  EXPECT_EQ(describeCodePoint(U'\u200B'), "U+200B");
  EXPECT_EQ(describeCodePoint(U'\U0001F600'), "'\xf0\x9f\x98\x80' (U+1F600)");
}

//===----------------------------------------------------------------------===//
// Shape strings use the same classes
//===----------------------------------------------------------------------===//

TEST(ShapeNames, UnicodeDimsAndVariadics) {
  auto shape =
      parseShape("\xce\xb1 (\xe6\x89\xb9 \xe9\x95\xbf) *\xce\xb2 2*\xce\xb3");
  ASSERT_TRUE(bool(shape)) << shape.error().message;
  EXPECT_EQ(shapeStr(*shape),
            "\xce\xb1 \xe6\x89\xb9*\xe9\x95\xbf *\xce\xb2 2*\xce\xb3");
}

TEST(ShapeNames, NonNameCharacterIsOneWholeCodePoint) {
  auto shape = parseShape("\xce\xb1\xc3\x97\xce\xb2"); // "α×β"
  ASSERT_FALSE(bool(shape));
  EXPECT_EQ(shape.error().message, "unexpected '\xc3\x97' (U+00D7) in size");
  EXPECT_EQ(shape.error().offset, 2u); // bytes
  EXPECT_EQ(shape.error().length, 2u);
  auto invalid = parseShape("a \xce");
  ASSERT_FALSE(bool(invalid));
  EXPECT_EQ(invalid.error().message,
            "invalid UTF-8 in size: truncated sequence '\\xce'");
}

TEST(Tables, UnicodeVersionIsNamed) { EXPECT_STRNE(unicodeVersion(), ""); }

} // namespace
