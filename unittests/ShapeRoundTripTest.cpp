// Shape text round trip (print, parse, print) and the size-expression term
// limit.
#include "TestHelpers.h"

#include "ein/Shape/Shape.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>

using namespace ein;
using namespace ein::test;

namespace {

/// Dims are identical when their kind, size, pack name and `#` flag are:
/// Dim::operator== ignores the flag, the type text does not.
void expectIdentical(const Shape &expected, const Shape &actual,
                     const std::string &text) {
  ASSERT_EQ(expected.size(), actual.size()) << "text \"" << text << "\"";
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].isPack(), actual[i].isPack()) << text;
    EXPECT_EQ(expected[i].pack, actual[i].pack) << text;
    EXPECT_EQ(expected[i].broadcastable, actual[i].broadcastable) << text;
    if (!expected[i].isPack()) {
      EXPECT_EQ(expected[i].size, actual[i].size)
          << "dim " << i << " of \"" << text << "\"";
    }
  }
}

/// print -> parse -> print: the text parses, to the same shape, which prints
/// to the same text.
void expectRoundTrip(const Shape &shape) {
  std::string text = shapeStr(shape);
  auto back = parseShape(text);
  ASSERT_TRUE(bool(back)) << "\"" << text << "\" does not parse: "
                          << describeError(back.error());
  expectIdentical(shape, *back, text);
  EXPECT_EQ(shapeStr(*back), text);
}

//===----------------------------------------------------------------------===//
// Table: shapes written by hand (the checker's parser builds them)
//===----------------------------------------------------------------------===//

class ShapeRoundTripTextTest : public ::testing::TestWithParam<const char *> {};

TEST_P(ShapeRoundTripTextTest, PrintParsePrint) {
  auto shape = parseShape(GetParam());
  ASSERT_TRUE(bool(shape)) << describeError(shape.error());
  expectRoundTrip(*shape);
}

const char *const kRoundTripTexts[] = {
    // Regression (was a bug): `b-a` printed as `-a+b`, which did not parse,
    // so `ein.tensor` types of such shapes were malformed (rank 0 in release).
    "b-a",
    "-a",
    "0-a",
    "0-a-b",
    "-3+n",
    "2-n",
    "-2*k+1",
    "(0-a)/2",
    "(b-a)/2",
    "-(a/2)+b",
    "n/(0-2)",
    "(0-3)/n",
    "(0-3)/(0-n)",
    "a/2/3",
    "(a/2)*b",
    "2*(a/2)",
    "3*(a/2)*(b/c)",
    "(a+b)/(c-d)",
    "((a+b)/(c-d))/(e*f)",
    "(n+1)*(n-1) (n-1)*(n-1)",
    "a*a*a-b*b+7",
    "(_)",
    "_*1",
    "#_",
    "#(_)",
    "_ ... #n (h d) (a b c)",
    "*batch (h 2) #(0-a)",
    "170141183460469231731687303715884105727",
    "0-170141183460469231731687303715884105727",
    "x_1 _x __ (_a b_)",
};

INSTANTIATE_TEST_SUITE_P(Shape, ShapeRoundTripTextTest,
                         ::testing::ValuesIn(kRoundTripTexts));

//===----------------------------------------------------------------------===//
// Property: random shapes built with SizeExpr arithmetic
//===----------------------------------------------------------------------===//

/// Random size expressions over a few names, small and large constants, sums,
/// differences, negations, products and floor quotients (nested too).
class SizeGenerator {
public:
  explicit SizeGenerator(unsigned seed) : rng(seed) {}

  SizeExpr size(unsigned depth) {
    if (depth == 0 || pick(4) == 0)
      return leaf();
    SizeExpr a = size(depth - 1), b = size(depth - 1);
    switch (pick(6)) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return a * b;
    case 3:
      return SizeExpr::constant(-1) * a + b;
    case 4:
      // The parser refuses a divisor that is the number 0.
      if (b.isZero())
        return a;
      return SizeExpr::quotient(a, b);
    default:
      return SizeExpr::quotient(a, SizeExpr::constant(pick(7) + 2));
    }
  }

  Dim dim(bool allowPack, unsigned &anon) {
    unsigned kind = pick(10);
    if (allowPack && kind == 0)
      return Dim::ofPack(pick(2) ? "batch" : "_anon" + std::to_string(anon++));
    if (kind == 1)
      return Dim::ofSize(SizeExpr::symbol("_anon" + std::to_string(anon++)));
    Dim d = Dim::ofSize(size(3));
    d.broadcastable = pick(5) == 0;
    return d;
  }

  unsigned pick(unsigned n) {
    return std::uniform_int_distribution<unsigned>(0, n - 1)(rng);
  }

private:
  std::mt19937 rng;

  SizeExpr leaf() {
    static const char *const names[] = {"a", "b", "n", "hidden", "_", "x_1"};
    switch (pick(4)) {
    case 0: {
      static const Int constants[] = {0, 1,  2,          3,
                                      8, 12, 1000000007, Int(1) << 100};
      return SizeExpr::constant(constants[pick(8)]);
    }
    case 1:
      return SizeExpr::constant(-Int(pick(5) + 1));
    default:
      return SizeExpr::symbol(names[pick(6)]);
    }
  }
};

TEST(ShapeRoundTrip, GeneratedShapes) {
  SizeGenerator gen(20240607);
  unsigned tested = 0;
  for (unsigned i = 0; i < 4000; ++i) {
    unsigned anon = 0;
    Shape shape;
    bool pack = false, usable = true;
    unsigned rank = gen.pick(5);
    for (unsigned r = 0; r < rank; ++r) {
      Dim d = gen.dim(!pack, anon);
      pack |= d.isPack();
      // Shapes the checker would refuse are not printed as types.
      if (!d.isPack() && (d.size.overflowed() || d.size.tooComplex()))
        usable = false;
      shape.push_back(d);
    }
    if (!usable)
      continue;
    ++tested;
    expectRoundTrip(shape);
    if (::testing::Test::HasFailure())
      return;
  }
  EXPECT_GT(tested, 3000u);
}

/// Random shape texts from the shape grammar; whatever parses must round-trip.
TEST(ShapeRoundTrip, GeneratedTexts) {
  std::mt19937 rng(7);
  auto pick = [&](unsigned n) {
    return std::uniform_int_distribution<unsigned>(0, n - 1)(rng);
  };
  static const char *const atoms[] = {"a", "b", "n", "_", "2", "0", "17"};
  static const char *const ops[] = {"+", "-", "*", "/"};
  std::function<std::string(unsigned)> expr = [&](unsigned depth) {
    std::string out = pick(4) == 0 ? "-" : "";
    unsigned n = pick(3) + 1;
    for (unsigned i = 0; i < n; ++i) {
      if (i)
        out += ops[pick(4)];
      out += depth && pick(3) == 0 ? "(" + expr(depth - 1) + ")"
                                   : std::string(atoms[pick(7)]);
    }
    return out;
  };
  unsigned parsed = 0;
  for (unsigned i = 0; i < 4000; ++i) {
    std::string text;
    unsigned rank = pick(4);
    for (unsigned r = 0; r < rank; ++r) {
      if (r)
        text += " ";
      switch (pick(8)) {
      case 0:
        text += "...";
        break;
      case 1:
        text += "#" + expr(2);
        break;
      case 2:
        text += "(" + expr(1) + " " + expr(1) + ")";
        break;
      default:
        text += expr(2);
      }
    }
    auto shape = parseShape(text);
    if (!shape)
      continue;
    ++parsed;
    expectRoundTrip(*shape);
    if (::testing::Test::HasFailure())
      return;
  }
  EXPECT_GT(parsed, 1000u);
}

//===----------------------------------------------------------------------===//
// The term limit
//===----------------------------------------------------------------------===//

/// (a0+b0)*(a1+b1)*...: 2^k terms when multiplied out.
std::string productOfSums(unsigned factors) {
  std::string text;
  for (unsigned i = 0; i < factors; ++i) {
    std::string index = std::to_string(i);
    text += (i ? "*(a" : "(a") + index + "+b" + index + ")";
  }
  return text;
}

TEST(SizeExprLimit, ProductOfSumsIsTooComplex) {
  // 2^8 = 256 terms is the limit itself: allowed.
  SizeExpr ok = sizeOf(productOfSums(8));
  EXPECT_FALSE(ok.tooComplex());
  EXPECT_FALSE(ok.overflowed());
  // Regression (was a hang): 16 factors took over a minute; now refused.
  auto start = std::chrono::steady_clock::now();
  auto e = parseSizeExpr(productOfSums(16));
  ASSERT_TRUE(bool(e));
  EXPECT_TRUE(e->tooComplex());
  auto shape = parseShape(productOfSums(16));
  ASSERT_FALSE(bool(shape));
  EXPECT_EQ(shape.error().message,
            "size expression too complex (limits: 256 terms, 256 factors per "
            "term, 1024 characters per quotient)");
  EXPECT_EQ(shape.error().offset, 0u);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(1));
}

TEST(SizeExprLimit, TooComplexIsSticky) {
  SizeExpr big = sizeOf(productOfSums(9));
  ASSERT_TRUE(big.tooComplex());
  EXPECT_FALSE(big.isConstant());
  EXPECT_FALSE(big.isZero());
  EXPECT_FALSE(big.constantValue().has_value());
  EXPECT_NE(big, big);
  EXPECT_TRUE((big + SizeExpr::constant(1)).tooComplex());
  EXPECT_TRUE((big - big).tooComplex());
  EXPECT_TRUE((SizeExpr::constant(0) * big).tooComplex());
  EXPECT_TRUE(SizeExpr::quotient(big, SizeExpr::constant(2)).tooComplex());
  EXPECT_TRUE(big.substitute({{"a0", 1}}).tooComplex());
  EXPECT_FALSE(big.evaluate({{"a0", 1}}).has_value());
  EXPECT_EQ(big.str(),
            "<size expression too complex (limits: 256 terms, 256 factors "
            "per term, 1024 characters per quotient)>");
}

TEST(SizeExprLimit, LongSumIsTooComplex) {
  std::string text = "n0";
  for (unsigned i = 1; i <= SizeExpr::kMaxTerms; ++i)
    text += "+n" + std::to_string(i);
  EXPECT_TRUE(sizeOf(text).tooComplex());
  // Terms that cancel do not count.
  std::string cancels = "n";
  for (unsigned i = 0; i < 2000; ++i)
    cancels += "+m" + std::to_string(i % 100) + "-m" + std::to_string(i % 100);
  SizeExpr e = sizeOf(cancels);
  EXPECT_FALSE(e.tooComplex());
  EXPECT_EQ(e, SizeExpr::symbol("n"));
}

TEST(SizeExprLimit, FactorsPerTerm) {
  SizeExpr n = SizeExpr::symbol("n"), power = SizeExpr::constant(1);
  for (size_t i = 0; i < SizeExpr::kMaxFactors; ++i)
    power = power * n;
  EXPECT_FALSE(power.tooComplex());
  EXPECT_TRUE((power * n).tooComplex());
  // A rank-257 shape: each dim is fine, its number of elements is not.
  std::string dims;
  for (size_t i = 0; i <= SizeExpr::kMaxFactors; ++i)
    dims += " d" + std::to_string(i);
  Shape shape = shapeOf(dims);
  EXPECT_TRUE(numElements(shape).tooComplex());
  shape.pop_back();
  EXPECT_FALSE(numElements(shape).tooComplex());
}

TEST(SizeExprLimit, QuotientText) {
  // n/2/2/...: each level adds to the quotient's text, so nesting is bounded.
  SizeExpr q = SizeExpr::symbol("n");
  unsigned levels = 0;
  while (!q.tooComplex() && levels < 10000) {
    q = SizeExpr::quotient(q, SizeExpr::constant(2));
    ++levels;
  }
  EXPECT_TRUE(q.tooComplex());
  EXPECT_GT(levels, 200u);
  EXPECT_LT(levels, 300u);
}

TEST(SizeExprLimit, SubstitutionCanSimplify) {
  // 128 terms, each a product: substituting numbers folds it to a constant.
  SizeExpr e = sizeOf(productOfSums(7));
  Bindings env;
  for (unsigned i = 0; i < 7; ++i) {
    env["a" + std::to_string(i)] = 1;
    env["b" + std::to_string(i)] = 1;
  }
  auto v = e.evaluate(env);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(toString(*v), "128");
}

} // namespace
