// jaxtyping-style shape strings, size expressions, dims and element types.
#include "TestHelpers.h"

#include "ein/Shape/Shape.h"

#include <gtest/gtest.h>

#include <iterator>

using namespace ein;
using namespace ein::test;

namespace {

//===----------------------------------------------------------------------===//
// parseShape: valid shapes
//===----------------------------------------------------------------------===//

struct ShapeCase {
  const char *name;
  const char *text;
  const char *printed; // shapeStr()
  size_t rank;
};

void PrintTo(const ShapeCase &c, std::ostream *os) { *os << c.name; }

class ParseShapeTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ParseShapeTest, Parses) {
  const ShapeCase &c = GetParam();
  auto s = parseShape(c.text);
  ASSERT_TRUE(bool(s)) << describeError(s.error());
  EXPECT_EQ(shapeStr(*s), c.printed);
  EXPECT_EQ(s->size(), c.rank);
}

const ShapeCase kShapes[] = {
    {"Names", "batch seq hidden", "batch seq hidden", 3},
    {"Integers", "8 16", "8 16", 2},
    {"Product", "batch seq heads*d", "batch seq d*heads", 3},
    {"Composition", "batch seq (heads d)", "batch seq d*heads", 3},
    {"CompositionOfThree", "(a b c)", "a*b*c", 1},
    {"CompositionWithNumber", "b (h 2)", "b 2*h", 2},
    {"CompositionOfNumbers", "2 3 (4 5)", "2 3 20", 3},
    {"CompositionInTheMiddle", "a (b c) d", "a b*c d", 3},
    {"Sum", "n+1", "n+1", 1},
    {"Difference", "n-1", "n-1", 1},
    {"Scaled", "2*n", "2*n", 1},
    {"ParenthesisedSum", "(n+1) m", "n+1 m", 2},
    {"Distributed", "(n+1)*2", "2*n+2", 1},
    {"Square", "n*n", "n*n", 1},
    {"Quotient", "hidden/8", "hidden/8", 1},
    {"QuotientBySymbol", "hidden/heads", "hidden/heads", 1},
    {"ExactQuotient", "(8*d)/8", "d", 1},
    {"LeadingPack", "*batch seq", "*batch seq", 2},
    {"TrailingPack", "seq *batch", "seq *batch", 2},
    {"AnonymousPack", "... c", "*_anon0 c", 2},
    {"AnonymousDims", "_ _", "_anon0 _anon1", 2},
    {"Broadcastable", "#n m", "#n m", 2},
    {"BroadcastableComposition", "#(a b)", "#a*b", 1},
    {"Scalar", "", "", 0},
    {"Blank", "   ", "", 0},
    {"ExtraSpaces", " b  c ", "b c", 2},
    {"Tabs", "b\tc", "b c", 2},
    {"UnderscoreInName", "x_1 y", "x_1 y", 2},
};

INSTANTIATE_TEST_SUITE_P(Shape, ParseShapeTest, ::testing::ValuesIn(kShapes),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// parseShape: errors
//===----------------------------------------------------------------------===//

struct ShapeErrorCase {
  const char *name;
  const char *text;
  unsigned offset, length;
  const char *message;
};

void PrintTo(const ShapeErrorCase &c, std::ostream *os) { *os << c.name; }

class ParseShapeErrorTest : public ::testing::TestWithParam<ShapeErrorCase> {};

TEST_P(ParseShapeErrorTest, Fails) {
  const ShapeErrorCase &c = GetParam();
  auto s = parseShape(c.text);
  ASSERT_FALSE(bool(s)) << "parsed as " << shapeStr(*s);
  EXPECT_EQ(s.error().anchor, ShapeError::Anchor::Pattern);
  EXPECT_EQ(s.error().offset, c.offset) << s.error().message;
  EXPECT_EQ(s.error().length, c.length) << s.error().message;
  EXPECT_NE(s.error().message.find(c.message), std::string::npos)
      << s.error().message;
}

const ShapeErrorCase kShapeErrors[] = {
    {"StrayCloseParen", "a b)", 3, 1, "unbalanced ')' in shape"},
    {"UnclosedParen", "(a b", 0, 4, "unbalanced '(' in shape"},
    {"UnclosedParenLater", "a (b c", 2, 4, "unbalanced '(' in shape"},
    {"UnclosedParenNoSpace", "(n+1", 0, 4, "unbalanced '('"},
    {"TwoPacks", "*a *b", 3, 2, "only one variadic dim"},
    {"EllipsisAndPack", "... *b", 4, 2, "only one variadic dim"},
    {"TwoEllipses", "... ...", 4, 3, "only one variadic dim"},
    {"BareStar", "*", 0, 1, "expected a name after '*'"},
    {"StarDigit", "*1a", 0, 3, "expected a name after '*'"},
    {"BareHash", "#", 0, 1, "expected a dim after '#'"},
    {"SpacedOperator", "a + b", 2, 1, "unexpected '+' in size"},
    {"DivisionByZero", "n/0", 2, 1, "division by zero in size"},
    {"UnknownChar", "a$", 1, 1, "unexpected '$' in size"},
    {"UnknownCharInComposition", "x (a b$)", 6, 1, "unexpected '$' in size"},
    {"DanglingOperator", "n*", 2, 1, "expected a size"},
    {"DanglingOperatorAfterHash", "#n+", 3, 1, "expected a size"},
    {"DoubleStar", "b 2**n", 4, 1, "unexpected '*' in size"},
    {"CompositionTimesNumber", "(h d)*2", 3, 1, "expected ')' in size"},
    {"TooLarge", "99999999999999999999999999999999999999999", 0, 41,
     "is too large"},
    {"Overflow", "170141183460469231731687303715884105727*2", 0, 41,
     "size overflows 128 bits"},
};

INSTANTIATE_TEST_SUITE_P(Shape, ParseShapeErrorTest,
                         ::testing::ValuesIn(kShapeErrors),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// parseSizeExpr
//===----------------------------------------------------------------------===//

struct SizeTextCase {
  const char *name;
  const char *text;
  const char *printed; // SizeExpr::str(); nullptr for an error
  unsigned offset;     // for errors
  const char *message; // for errors
};

void PrintTo(const SizeTextCase &c, std::ostream *os) { *os << c.name; }

class ParseSizeExprTest : public ::testing::TestWithParam<SizeTextCase> {};

TEST_P(ParseSizeExprTest, Parses) {
  const SizeTextCase &c = GetParam();
  auto e = parseSizeExpr(c.text);
  if (c.printed) {
    ASSERT_TRUE(bool(e)) << describeError(e.error());
    EXPECT_EQ(e->str(), c.printed);
    return;
  }
  ASSERT_FALSE(bool(e)) << "parsed as " << e->str();
  EXPECT_EQ(e.error().offset, c.offset) << e.error().message;
  EXPECT_NE(e.error().message.find(c.message), std::string::npos)
      << e.error().message;
}

const SizeTextCase kSizeTexts[] = {
    {"Product", "heads*d", "d*heads", 0, nullptr},
    {"Quotient", "hidden/8", "hidden/8", 0, nullptr},
    {"QuotientWithSpaces", "hidden / 8", "hidden/8", 0, nullptr},
    {"Sum", "n+1", "n + 1", 0, nullptr},
    {"DifferenceOfSquares", "(n+1)*(n-1)", "n*n - 1", 0, nullptr},
    {"ConstantFolding", "2*(3+4)", "14", 0, nullptr},
    {"LeftAssociativeMinus", "a - b - c", "a - b - c", 0, nullptr},
    {"FloorOfConstants", "12/5", "2", 0, nullptr},
    {"PrecedenceOfTimes", "1+2*n", "2*n + 1", 0, nullptr},
    {"Big", "314000000000000000000000", "314000000000000000000000", 0, nullptr},
    {"Empty", "", nullptr, 0, "expected a size"},
    {"TwoNames", "a b", nullptr, 2, "unexpected 'b' in size"},
    {"DivideByZero", "8/0", nullptr, 2, "division by zero"},
    {"Unclosed", "(a", nullptr, 2, "expected ')' in size"},
    // A sum may start with '-': SizeExpr::str prints b - a as "-a + b", and
    // what it prints must read back (was an error, so `ein.tensor<"-a+b">`
    // types did not parse).
    {"LeadingMinus", "-1", "-1", 0, nullptr},
    {"LeadingMinusOfProduct", "-a/2+b", "-a/2 + b", 0, nullptr},
    {"LeadingMinusInParens", "(-a+b)/2", "(-a + b)/2", 0, nullptr},
    {"MinusAfterTimes", "a*-b", nullptr, 2, "unexpected '-' in size"},
    {"DoubleMinus", "--a", nullptr, 1, "unexpected '-' in size"},
};

INSTANTIATE_TEST_SUITE_P(Size, ParseSizeExprTest,
                         ::testing::ValuesIn(kSizeTexts),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Dims, packs and anonymous names
//===----------------------------------------------------------------------===//

TEST(ShapeDims, KindsAndFlags) {
  Shape s = shapeOf("*batch #n (h d) 4");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_TRUE(s[0].isPack());
  EXPECT_EQ(s[0].pack, "batch");
  EXPECT_FALSE(s[1].isPack());
  EXPECT_TRUE(s[1].broadcastable);
  EXPECT_EQ(s[1].size, SizeExpr::symbol("n"));
  EXPECT_FALSE(s[2].broadcastable);
  EXPECT_EQ(s[2].size, SizeExpr::symbol("h") * SizeExpr::symbol("d"));
  ASSERT_TRUE(s[3].size.constantValue().has_value());
  EXPECT_EQ(toString(*s[3].size.constantValue()), "4");
}

TEST(ShapeDims, Equality) {
  EXPECT_EQ(Dim::ofPack("b"), Dim::ofPack("b"));
  EXPECT_NE(Dim::ofPack("b"), Dim::ofPack("c"));
  EXPECT_NE(Dim::ofPack("b"), Dim::ofSize(SizeExpr::symbol("b")));
  EXPECT_EQ(Dim::ofSize(sizeOf("a*b")), Dim::ofSize(sizeOf("b*a")));
  EXPECT_NE(Dim::ofSize(sizeOf("a")), Dim::ofSize(sizeOf("b")));
  EXPECT_EQ(Dim::ofSize(sizeOf("n-1")).str(), "n-1");
  EXPECT_EQ(Dim::ofPack("rest").str(), "*rest");
}

TEST(ShapeDims, AnonymousCounterIsShared) {
  unsigned counter = 5;
  Shape a = shapeOf("_ ...", &counter);
  EXPECT_EQ(shapeStr(a), "_anon5 *_anon6");
  EXPECT_EQ(counter, 7u);
  Shape b = shapeOf("_", &counter);
  EXPECT_EQ(shapeStr(b), "_anon7");
  EXPECT_EQ(counter, 8u);
}

TEST(ShapeDims, NumElements) {
  EXPECT_EQ(numElements(shapeOf("b *rest (h d)")).str(), "b*d*h*rest");
  EXPECT_EQ(numElements(shapeOf("")).str(), "1");
  EXPECT_EQ(numElements(shapeOf("2 3 4")).str(), "24");
  EXPECT_EQ(numElements(shapeOf("n+1 n-1")).str(), "n*n - 1");
}

TEST(ShapeDims, TensorTypeText) {
  TensorType t{shapeOf("b s (h d)"), DType::BF16};
  EXPECT_EQ(t.str(), "bf16[\"b s d*h\"]");
  TensorType scalar{{}, DType::F32};
  EXPECT_EQ(scalar.str(), "f32[\"\"]");
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

struct DTypeCase {
  const char *name;
  DType type;
  unsigned bytes;
  bool isFloat;
};

void PrintTo(const DTypeCase &c, std::ostream *os) { *os << c.name; }

class DTypeTest : public ::testing::TestWithParam<DTypeCase> {};

TEST_P(DTypeTest, Properties) {
  const DTypeCase &c = GetParam();
  auto parsed = parseDType(c.name);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, c.type);
  EXPECT_STREQ(dtypeName(c.type), c.name);
  EXPECT_EQ(dtypeBytes(c.type), c.bytes);
  EXPECT_EQ(isFloat(c.type), c.isFloat);
}

const DTypeCase kDTypes[] = {
    {"f64", DType::F64, 8, true},       {"f32", DType::F32, 4, true},
    {"f16", DType::F16, 2, true},       {"bf16", DType::BF16, 2, true},
    {"f8e4m3", DType::F8E4M3, 1, true}, {"f8e5m2", DType::F8E5M2, 1, true},
    {"i64", DType::I64, 8, false},      {"i32", DType::I32, 4, false},
    {"i8", DType::I8, 1, false},
};

INSTANTIATE_TEST_SUITE_P(DType, DTypeTest, ::testing::ValuesIn(kDTypes),
                         [](const auto &info) { return info.param.name; });

TEST(DTypeNames, UnknownNames) {
  EXPECT_FALSE(parseDType("f128").has_value());
  EXPECT_FALSE(parseDType("F32").has_value());
  EXPECT_FALSE(parseDType("float32").has_value());
  EXPECT_FALSE(parseDType("").has_value());
}

// DTypes.def's rows against numpy and the C/CUDA types they stand for,
// written out by hand: itemsize, descr (numpy has no bf16 or fp8), kind.
struct DTypeRow {
  DType type;
  const char *name;
  unsigned bytes;
  DTypeKind kind;
  const char *npyDescr;
  const char *cType;
};
const DTypeRow kDTypeRows[] = {
    {DType::F64, "f64", 8, DTypeKind::Float, "<f8", "double"},
    {DType::F32, "f32", 4, DTypeKind::Float, "<f4", "float"},
    {DType::F16, "f16", 2, DTypeKind::Float, "<f2", "uint16_t"},
    {DType::BF16, "bf16", 2, DTypeKind::Float, "", "uint16_t"},
    {DType::F8E4M3, "f8e4m3", 1, DTypeKind::Float, "", "uint8_t"},
    {DType::F8E5M2, "f8e5m2", 1, DTypeKind::Float, "", "uint8_t"},
    {DType::I64, "i64", 8, DTypeKind::Int, "<i8", "int64_t"},
    {DType::I32, "i32", 4, DTypeKind::Int, "<i4", "int32_t"},
    {DType::Bool, "bool", 1, DTypeKind::Bool, "|b1", "uint8_t"},
    {DType::I8, "i8", 1, DTypeKind::Int, "|i1", "int8_t"},
};

TEST(DTypeTable, RowsMatchNumpyAndC) {
  ASSERT_EQ(allDTypes().size(), std::size(kDTypeRows));
  for (size_t i = 0; i < std::size(kDTypeRows); ++i) {
    const DTypeRow &want = kDTypeRows[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(allDTypes()[i], want.type);
    const DTypeInfo &got = dtypeInfo(want.type);
    EXPECT_EQ(got.type, want.type);
    EXPECT_STREQ(got.name, want.name);
    EXPECT_EQ(got.bytes, want.bytes);
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_STREQ(got.npyDescr, want.npyDescr);
    EXPECT_STREQ(got.cType, want.cType);
    EXPECT_EQ(parseDType(want.name), want.type);
    EXPECT_EQ(isFloat(want.type), want.kind == DTypeKind::Float);
  }
}

} // namespace
