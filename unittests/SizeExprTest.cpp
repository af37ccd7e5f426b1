// Symbolic sizes: canonical polynomials, substitution, exact division,
// quotient atoms, and 128-bit arithmetic with overflow detection.
#include "TestHelpers.h"

#include "ein/Shape/SizeExpr.h"
#include "ein/Support/BigInt.h"

#include <gtest/gtest.h>

#include <limits>

using namespace ein;
using namespace ein::test;

namespace {

SizeExpr sym(const char *name) { return SizeExpr::symbol(name); }
SizeExpr num(Int v) { return SizeExpr::constant(v); }

const Int kMax = std::numeric_limits<Int>::max();
const Int kMin = std::numeric_limits<Int>::min();

//===----------------------------------------------------------------------===//
// Canonical printing
//===----------------------------------------------------------------------===//

struct PrintCase {
  const char *name;
  SizeExpr (*build)();
  const char *text;
};

void PrintTo(const PrintCase &c, std::ostream *os) { *os << c.name; }

class SizeExprPrintTest : public ::testing::TestWithParam<PrintCase> {};

TEST_P(SizeExprPrintTest, CanonicalText) {
  EXPECT_EQ(GetParam().build().str(), GetParam().text);
}

const PrintCase kPrint[] = {
    {"Zero", [] { return SizeExpr(); }, "0"},
    {"ZeroConstant", [] { return num(0); }, "0"},
    {"Constant", [] { return num(42); }, "42"},
    {"NegativeConstant", [] { return num(-3); }, "-3"},
    {"Symbol", [] { return sym("batch"); }, "batch"},
    // Factors are sorted by name, whatever the order of multiplication.
    {"ProductSorted", [] { return sym("s") * sym("h") * sym("b") * num(2); },
     "2*b*h*s"},
    {"HeadsTimesD", [] { return sym("heads") * sym("d"); }, "d*heads"},
    {"Square", [] { return sym("n") * sym("n"); }, "n*n"},
    // Highest degree first, the constant last.
    {"SquareOfSum", [] { return (sym("n") + num(1)) * (sym("n") + num(1)); },
     "n*n + 2*n + 1"},
    {"DifferenceOfSquares",
     [] { return (sym("n") + num(1)) * (sym("n") - num(1)); }, "n*n - 1"},
    {"LinearWithConstant", [] { return sym("y") + sym("x") - num(2); },
     "x + y - 2"},
    {"LeadingNegative", [] { return sym("b") - sym("a"); }, "-a + b"},
    {"MixedDegrees",
     [] { return sym("a") + num(3) * sym("a") * sym("a") * sym("b"); },
     "3*a*a*b + a"},
    {"Cancellation", [] { return sym("n") - sym("n"); }, "0"},
    {"NegativeCoefficient", [] { return num(-2) * sym("k"); }, "-2*k"},
    {"Quotient", [] { return SizeExpr::quotient(sym("hidden"), num(8)); },
     "hidden/8"},
    {"QuotientOfSum",
     [] { return SizeExpr::quotient(sym("n") + num(1), num(2)); }, "(n + 1)/2"},
    {"QuotientBySymbol",
     [] { return SizeExpr::quotient(sym("hidden"), sym("heads")); },
     "hidden/heads"},
    {"QuotientTimesSymbol",
     [] { return SizeExpr::quotient(sym("hidden"), num(8)) * sym("n"); },
     "(hidden/8)*n"},
    {"QuotientExact",
     [] { return SizeExpr::quotient(num(8) * sym("h"), num(8)); }, "h"},
    {"QuotientOfConstantsFloors",
     [] { return SizeExpr::quotient(num(17), num(5)); }, "3"},
    {"GptScale", [] { return num(314) * num(pow10(21)); },
     "314000000000000000000000"},
};

INSTANTIATE_TEST_SUITE_P(Print, SizeExprPrintTest, ::testing::ValuesIn(kPrint),
                         [](const auto &info) { return info.param.name; });

// Regression (was a bug): a quotient atom times a constant printed as "2*hidden/8", which reads
// back (left to right) as (2*hidden)/8, a different floor quotient: for
// hidden = 12, 2*(12/8) = 2 but (2*12)/8 = 3. monomialStr() only
// parenthesises a quotient when the monomial has other factors, not when it
// has a coefficient. Repro: (SizeExpr::quotient(symbol("hidden"),
// constant(8)) * constant(2)).str() == "2*hidden/8".
TEST(SizeExprPrint, QuotientWithCoefficientIsParenthesised) {
  SizeExpr e = SizeExpr::quotient(sym("hidden"), num(8)) * num(2);
  EXPECT_EQ(e.str(), "2*(hidden/8)");
  auto back = parseSizeExpr(e.str());
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, e);
}

//===----------------------------------------------------------------------===//
// Polynomial equality
//===----------------------------------------------------------------------===//

TEST(SizeExprEquality, Commutative) {
  EXPECT_EQ(sym("a") * sym("b"), sym("b") * sym("a"));
  EXPECT_EQ(sym("a") + sym("b"), sym("b") + sym("a"));
  EXPECT_NE(sym("a") * sym("b"), sym("a") + sym("b"));
}

TEST(SizeExprEquality, Distributive) {
  SizeExpr n = sym("n");
  EXPECT_EQ((n + num(1)) * (n - num(1)), n * n - num(1));
  EXPECT_EQ(sym("a") * (sym("b") + sym("c")),
            sym("a") * sym("b") + sym("a") * sym("c"));
  EXPECT_NE((n + num(1)) * (n + num(1)), n * n + num(1));
}

TEST(SizeExprEquality, ZeroForms) {
  EXPECT_EQ(SizeExpr(), num(0));
  EXPECT_TRUE((sym("n") - sym("n")).isZero());
  EXPECT_TRUE((sym("n") * num(0)).isZero());
  EXPECT_EQ(sym("n") - sym("n"), SizeExpr());
}

TEST(SizeExprEquality, QuotientAtomsCompareByValue) {
  SizeExpr q1 = SizeExpr::quotient(sym("hidden"), num(8));
  SizeExpr q2 = SizeExpr::quotient(sym("hidden"), num(8));
  EXPECT_EQ(q1, q2);
  EXPECT_NE(q1, SizeExpr::quotient(sym("hidden"), num(4)));
  EXPECT_NE(q1, sym("hidden"));
  // Built from text, the same atom.
  EXPECT_EQ(sizeOf("hidden/8"), q1);
}

TEST(SizeExprEquality, OrderingFollowsText) {
  EXPECT_TRUE(sym("a") < sym("b"));
  EXPECT_FALSE(sym("b") < sym("a"));
  EXPECT_FALSE(sym("a") < sym("a"));
}

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

TEST(SizeExprQueries, ConstantsAndSymbols) {
  EXPECT_TRUE(num(7).isConstant());
  EXPECT_TRUE(SizeExpr().isConstant());
  EXPECT_FALSE(sym("n").isConstant());
  ASSERT_TRUE(num(7).constantValue().has_value());
  EXPECT_EQ(toString(*num(7).constantValue()), "7");
  ASSERT_TRUE(SizeExpr().constantValue().has_value());
  EXPECT_EQ(toString(*SizeExpr().constantValue()), "0");
  EXPECT_FALSE(sym("n").constantValue().has_value());

  EXPECT_EQ(sym("batch").asSymbol(), std::optional<std::string>("batch"));
  EXPECT_FALSE((num(2) * sym("batch")).asSymbol().has_value());
  EXPECT_FALSE((sym("n") * sym("n")).asSymbol().has_value());
  EXPECT_FALSE((sym("n") + num(1)).asSymbol().has_value());
  EXPECT_FALSE(num(3).asSymbol().has_value());
  EXPECT_FALSE(SizeExpr::quotient(sym("n"), num(2)).asSymbol().has_value());
}

TEST(SizeExprQueries, SymbolsIncludeQuotientOperands) {
  SizeExpr e = sym("a") * sym("b") +
               SizeExpr::quotient(sym("hidden"), sym("heads")) + num(4);
  EXPECT_EQ(e.symbols(), (std::set<std::string>{"a", "b", "heads", "hidden"}));
  EXPECT_TRUE(num(4).symbols().empty());
}

//===----------------------------------------------------------------------===//
// Substitution and evaluation
//===----------------------------------------------------------------------===//

TEST(SizeExprSubstitute, PartialBindingKeepsFormula) {
  SizeExpr e = sym("b") * sym("s") * sym("h") + num(1);
  SizeExpr partial = e.substitute({{"b", 2}});
  EXPECT_EQ(partial.str(), "2*h*s + 1");
  EXPECT_FALSE(e.evaluate({{"b", 2}}).has_value());
  auto v = e.evaluate({{"b", 2}, {"s", 3}, {"h", 4}});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(toString(*v), "25");
  // Unrelated names change nothing.
  EXPECT_EQ(e.substitute({{"zzz", 9}}), e);
}

TEST(SizeExprSubstitute, PowersAndNegativeTerms) {
  SizeExpr n = sym("n");
  SizeExpr e = n * n * n - num(2) * n; // n^3 - 2n
  auto v = e.evaluate({{"n", 5}});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(toString(*v), "115");
}

TEST(SizeExprSubstitute, QuotientFoldsToFloor) {
  SizeExpr q = SizeExpr::quotient(sym("hidden"), num(8));
  EXPECT_EQ(q.substitute({{"hidden", 64}}).str(), "8");
  // An opaque quotient is floor division once it binds.
  auto v = q.evaluate({{"hidden", 60}});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(toString(*v), "7");
  SizeExpr r = SizeExpr::quotient(sym("hidden"), sym("heads"));
  EXPECT_EQ(r.substitute({{"heads", 4}}).str(), "hidden/4");
  auto w = (num(3) * r).evaluate({{"heads", 4}, {"hidden", 64}});
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(toString(*w), "48");
}

//===----------------------------------------------------------------------===//
// Exact division
//===----------------------------------------------------------------------===//

struct DivideCase {
  const char *name;
  const char *num, *den;
  const char *quotient; // nullptr: not exact
};

void PrintTo(const DivideCase &c, std::ostream *os) { *os << c.name; }

class SizeExprDivideTest : public ::testing::TestWithParam<DivideCase> {};

TEST_P(SizeExprDivideTest, DivideExact) {
  const DivideCase &c = GetParam();
  auto q = sizeOf(c.num).divideExact(sizeOf(c.den));
  if (!c.quotient) {
    EXPECT_FALSE(q.has_value()) << q->str();
    return;
  }
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->str(), c.quotient);
}

const DivideCase kDivide[] = {
    {"MonomialByMonomial", "6*a*b", "2*a", "3*b"},
    {"PolynomialByMonomial", "6*a*b + 4*a", "2*a", "3*b + 2"},
    {"ByConstant", "8*h*d", "8", "d*h"},
    {"ByOne", "n + 1", "1", "n + 1"},
    {"ByItself", "a + b", "a + b", "1"},
    {"ZeroBySum", "0", "a + b", "0"},
    {"SquareBySymbol", "n*n", "n", "n"},
    {"MissingFactor", "a*b", "c", nullptr},
    {"CoefficientDoesNotDivide", "3*a", "2", nullptr},
    {"OneTermDoesNotDivide", "a*b + c", "a", nullptr},
    {"PowerTooHigh", "n", "n*n", nullptr},
    {"ConstantByConstant", "12", "4", "3"},
    {"ConstantNotExact", "13", "4", nullptr},
};

INSTANTIATE_TEST_SUITE_P(Divide, SizeExprDivideTest,
                         ::testing::ValuesIn(kDivide),
                         [](const auto &info) { return info.param.name; });

// Limitation (the header now documents it): no polynomial long division.
// divideExact only divides by a single-term divisor (or by itself), so
// (n*n - 1) / (n - 1) is refused although it is exactly n + 1.
// Repro: parseSizeExpr("n*n - 1")->divideExact(*parseSizeExpr("n - 1"))
// returns nullopt.
TEST(SizeExprDivide, DISABLED_PolynomialDivisor) {
  auto q = sizeOf("n*n - 1").divideExact(sizeOf("n - 1"));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->str(), "n + 1");
}

TEST(SizeExprQuotient, QuotientOfExactIsPolynomial) {
  EXPECT_EQ(SizeExpr::quotient(sym("d") * sym("heads"), sym("heads")),
            sym("d"));
  EXPECT_EQ(SizeExpr::quotient(num(512), num(8)), num(64));
}

//===----------------------------------------------------------------------===//
// 128-bit arithmetic
//===----------------------------------------------------------------------===//

TEST(SizeExprOverflow, MultiplicationOverflowIsDetected) {
  SizeExpr big = num(Int(1) << 126);
  SizeExpr e = big * num(4);
  EXPECT_TRUE(e.overflowed());
  EXPECT_FALSE(e.constantValue().has_value());
  EXPECT_FALSE(big.overflowed());
  // Overflow is sticky through later arithmetic.
  EXPECT_TRUE((e + num(1)).overflowed());
  EXPECT_TRUE((sym("n") * e).overflowed());
}

TEST(SizeExprOverflow, AdditionOverflowIsDetected) {
  SizeExpr e = num(kMax) + num(1);
  EXPECT_TRUE(e.overflowed());
  EXPECT_FALSE(e.constantValue().has_value());
  SizeExpr ok = num(kMax - 1) + num(1);
  EXPECT_FALSE(ok.overflowed());
  EXPECT_EQ(ok.str(), "170141183460469231731687303715884105727");
}

TEST(SizeExprOverflow, EvaluateOverflowGivesNoValue) {
  SizeExpr n = sym("n");
  SizeExpr sq = n * n;
  // 2^63 squared is 2^126: fits.
  auto v = sq.evaluate({{"n", Int(1) << 63}});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(toString(*v), "85070591730234615865843651857942052864");
  // 2^64 squared is 2^128: does not.
  EXPECT_FALSE(sq.evaluate({{"n", Int(1) << 64}}).has_value());
  EXPECT_TRUE(sq.substitute({{"n", Int(1) << 64}}).overflowed());
}

struct IntTextCase {
  const char *name;
  Int value;
  const char *text;
};

void PrintTo(const IntTextCase &c, std::ostream *os) { *os << c.name; }

class IntTextTest : public ::testing::TestWithParam<IntTextCase> {};

TEST_P(IntTextTest, ToStringAndBack) {
  const IntTextCase &c = GetParam();
  EXPECT_EQ(toString(c.value), c.text);
  if (c.value >= 0) {
    auto back = parseInt(c.text);
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(*back == c.value) << toString(*back);
  }
}

const IntTextCase kIntText[] = {
    {"Zero", 0, "0"},
    {"One", 1, "1"},
    {"MinusOne", -1, "-1"},
    {"Int64Max", Int(std::numeric_limits<int64_t>::max()),
     "9223372036854775807"},
    {"BeyondInt64", Int(std::numeric_limits<int64_t>::max()) + 1,
     "9223372036854775808"},
    {"Gpt3Flops", Int(314) * pow10(21), "314000000000000000000000"},
    {"SixND", Int(6) * Int(175) * pow10(9) * Int(300) * pow10(9),
     "315000000000000000000000"},
    {"TwoTo100", Int(1) << 100, "1267650600228229401496703205376"},
    {"Int128Max", kMax, "170141183460469231731687303715884105727"},
    {"Int128Min", kMin, "-170141183460469231731687303715884105728"},
};

INSTANTIATE_TEST_SUITE_P(BigInt, IntTextTest, ::testing::ValuesIn(kIntText),
                         [](const auto &info) { return info.param.name; });

struct ParseIntRejectCase {
  const char *name;
  const char *text;
};

void PrintTo(const ParseIntRejectCase &c, std::ostream *os) { *os << c.name; }

class ParseIntRejectTest : public ::testing::TestWithParam<ParseIntRejectCase> {
};

TEST_P(ParseIntRejectTest, Rejected) {
  EXPECT_FALSE(parseInt(GetParam().text).has_value());
}

const ParseIntRejectCase kParseIntReject[] = {
    {"Empty", ""},
    {"Negative", "-1"},
    {"Plus", "+1"},
    {"TrailingLetter", "12a"},
    {"Space", "1 2"},
    {"Decimal", "1.5"},
    {"Int128MaxPlusOne", "170141183460469231731687303715884105728"},
    {"FortyOneDigits", "10000000000000000000000000000000000000000"},
};

INSTANTIATE_TEST_SUITE_P(BigInt, ParseIntRejectTest,
                         ::testing::ValuesIn(kParseIntReject),
                         [](const auto &info) { return info.param.name; });

TEST(BigInt, LeadingZerosParse) {
  auto v = parseInt("007");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(toString(*v), "7");
}

TEST(BigInt, CheckedArithmetic) {
  auto s = checkedAdd(kMax - 5, 5);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(*s == kMax);
  EXPECT_FALSE(checkedAdd(kMax, 1).has_value());
  EXPECT_FALSE(checkedAdd(kMin, -1).has_value());
  auto m = checkedMul(Int(1) << 63, Int(1) << 63);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(toString(*m), "85070591730234615865843651857942052864");
  EXPECT_FALSE(checkedMul(Int(1) << 64, Int(1) << 63).has_value());
  EXPECT_FALSE(checkedMul(kMin, -1).has_value());
  EXPECT_DOUBLE_EQ(toDouble(Int(314) * pow10(21)), 3.14e23);
}

//===----------------------------------------------------------------------===//
// Constraints
//===----------------------------------------------------------------------===//

TEST(ConstraintText, DivisibleAndEqual) {
  Constraint d{Constraint::Kind::Divisible, sym("hidden"), num(8), "why"};
  EXPECT_EQ(d.str(), "hidden % 8 == 0");
  Constraint e{Constraint::Kind::Equal, sym("n") + num(1), sym("m"), "why"};
  EXPECT_EQ(e.str(), "n + 1 == m");
  // A sum or a quotient is parenthesised: `s - 1 % 2` would read as s - 1.
  Constraint sum{Constraint::Kind::Divisible, sym("s") - num(1), num(2), "why"};
  EXPECT_EQ(sum.str(), "(s - 1) % 2 == 0");
  Constraint nested{Constraint::Kind::Divisible,
                    SizeExpr::quotient(sym("e"), num(3)), sym("t") * num(2),
                    "why"};
  EXPECT_EQ(nested.str(), "(e/3) % (2*t) == 0");
}

//===----------------------------------------------------------------------===//
// Cancelling exact quotients
//===----------------------------------------------------------------------===//

TEST(CancelQuotients, QuotientTimesItsDivisor) {
  auto all = [](const SizeExpr &, const SizeExpr &) { return true; };
  SizeExpr c = sym("c"), t = sym("t"), s = sym("s"), e = sym("e");
  // (c/t)*t is c; 2*((s-1)/2) + 1 is s; 8*((3*d)/8) is 3*d.
  EXPECT_EQ((SizeExpr::quotient(c, t) * t).cancelQuotients(all), c);
  EXPECT_EQ((num(2) * SizeExpr::quotient(s - num(1), num(2)) + num(1))
                .cancelQuotients(all),
            s);
  SizeExpr d3 = num(3) * sym("d");
  EXPECT_EQ((num(8) * SizeExpr::quotient(d3, num(8))).cancelQuotients(all), d3);
  // Nested: 2*((e/3)/2) is e/3, and 6*((e/3)/2) is e.
  SizeExpr e3 = SizeExpr::quotient(e, num(3));
  SizeExpr e32 = SizeExpr::quotient(e3, num(2));
  EXPECT_EQ((num(2) * e32).cancelQuotients(all), e3);
  EXPECT_EQ((num(6) * e32).cancelQuotients(all), e);
  // A factor beside it stays: (c/t)*t*n is c*n.
  EXPECT_EQ((SizeExpr::quotient(c, t) * t * sym("n")).cancelQuotients(all),
            c * sym("n"));
}

TEST(CancelQuotients, OnlyExactQuotientsAndWholeMultiples) {
  auto none = [](const SizeExpr &, const SizeExpr &) { return false; };
  auto all = [](const SizeExpr &, const SizeExpr &) { return true; };
  SizeExpr q = SizeExpr::quotient(sym("n"), num(2));
  // A floor quotient (n//2 has no entry check) stays: 2*(n/2) is not n.
  EXPECT_EQ((num(2) * q).cancelQuotients(none), num(2) * q);
  // 3*(n/2) is no multiple of 2*(n/2); (n/2)*t is no multiple of 2.
  EXPECT_EQ((num(3) * q).cancelQuotients(all), num(3) * q);
  EXPECT_EQ((q * sym("t")).cancelQuotients(all), q * sym("t"));
  // A divisor of several terms is left alone.
  SizeExpr r = SizeExpr::quotient(sym("n"), sym("a") + sym("b"));
  SizeExpr times = r * (sym("a") + sym("b"));
  EXPECT_EQ(times.cancelQuotients(all), times);
}

} // namespace
