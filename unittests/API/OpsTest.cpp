// The C++ API's operations against naive loops: rearrange (views and
// copies), reduce, repeat, einsum on strided views, pack/unpack, elementwise.
#include "APITestHelpers.h"

using namespace ein_api_test;
using Index = std::vector<int64_t>;

namespace {

TEST(Rearrange, SplitIsAViewOfTheSameStorage) {
  ein::Tensor x = iota({2, 3, 12});
  ein::Tensor y = ein::rearrange(x, "b s (h d) -> b h s d", {{"h", 4}});
  EXPECT_TRUE(y.shares_storage(x));
  EXPECT_EQ(y.data(), x.data());
  expectTensor(y, {2, 4, 3, 3}, [&](const Index &i) {
    return element(x, {i[0], i[2], i[1] * 3 + i[3]});
  });
  // Merging the heads back is a view too: it undoes the permutation.
  ein::Tensor z = ein::rearrange(y, "b h s d -> b s (h d)");
  EXPECT_TRUE(z.shares_storage(x));
  EXPECT_TRUE(z.is_contiguous());
}

TEST(Rearrange, MergeAcrossAPermutationCopies) {
  ein::Tensor x = iota({2, 3, 5});
  ein::Tensor y = ein::rearrange(x, "a b c -> c (a b)");
  EXPECT_TRUE(y.shares_storage(x)); // a, b adjacent in memory: a view
  ein::Tensor z = ein::rearrange(x, "a b c -> (c a) b");
  EXPECT_FALSE(z.shares_storage(x)); // c, a are not: a kernel copies
  EXPECT_TRUE(z.is_contiguous());
  expectTensor(z, {10, 3}, [&](const Index &i) {
    return element(x, {i[0] % 2, i[1], i[0] / 2});
  });
}

TEST(Rearrange, StridedInputAndUnitAxes) {
  ein::Tensor x = iota({4, 6});
  ein::Tensor t = ein::rearrange(x, "a b -> b a"); // a transposed view
  EXPECT_FALSE(t.is_contiguous());
  ein::Tensor y = ein::rearrange(t, "b (a2 a1) -> 1 (b a1) a2 ()", {{"a1", 2}});
  expectTensor(y, {1, 12, 2, 1}, [&](const Index &i) {
    int64_t b = i[1] / 2, a1 = i[1] % 2, a2 = i[2];
    return element(x, {a2 * 2 + a1, b});
  });
  ein::Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage(x));
  expectTensor(c, {6, 4}, [&](const Index &i) {
    return element(x, {i[1], i[0]});
  });
}

TEST(Rearrange, EllipsisAndLargerCopy) {
  ein::Tensor x = iota({3, 2, 65, 33});
  ein::Tensor y = ein::rearrange(x, "... h w -> ... w h");
  expectTensor(y, {3, 2, 33, 65}, [&](const Index &i) {
    return element(x, {i[0], i[1], i[3], i[2]});
  });
  EXPECT_TRUE(
      ein::explain("rearrange", "... h w -> ... w h", {x}).find("kernel") !=
      std::string::npos);
  EXPECT_TRUE(
      ein::explain("rearrange", "... h w -> ... h w", {x}).find("a view") !=
      std::string::npos);
}

TEST(Reduce, SumMeanMaxOverComposedAxes) {
  ein::Tensor x = iota({2, 6, 4});
  ein::Tensor s = ein::reduce(x, "b (h h2) w -> b h", ein::sum, {{"h2", 3}});
  expectTensor(s, {2, 2}, [&](const Index &i) {
    double acc = 0;
    for (int64_t h2 = 0; h2 < 3; ++h2)
      for (int64_t w = 0; w < 4; ++w)
        acc += element(x, {i[0], i[1] * 3 + h2, w});
    return acc;
  });
  ein::Tensor m = ein::reduce(x, "b h w -> w b", ein::max);
  expectTensor(m, {4, 2}, [&](const Index &i) {
    double best = -1e30;
    for (int64_t h = 0; h < 6; ++h)
      best = std::max(best, element(x, {i[1], h, i[0]}));
    return best;
  });
  ein::Tensor a = ein::reduce(x, "b h w -> b 1 w", ein::mean);
  expectTensor(a, {2, 1, 4}, [&](const Index &i) {
    double acc = 0;
    for (int64_t h = 0; h < 6; ++h)
      acc += element(x, {i[0], h, i[2]});
    return acc / 6;
  });
}

TEST(Reduce, VarIsThePopulationVarianceOverComposedAxes) {
  // Values near 1e4 with a small spread: the one-pass E[x^2]-E[x]^2 loses
  // every digit in f32, the two-pass definition (numpy's) does not.
  ein::Tensor x = ein::astype(iota({2, 6, 4}), ein::f64);
  ein::Tensor shifted = iota({2, 6, 4}, [](int64_t i) {
    return float(1e4 + 0.25 * double(i % 7));
  });
  auto oracle = [&](const ein::Tensor &t, int64_t b, int64_t w0, int64_t h0,
                    int64_t nh) {
    double mean = 0, ss = 0;
    for (int64_t h = h0; h < h0 + nh; ++h)
      mean += element(t, {b, h, w0});
    mean /= double(nh);
    for (int64_t h = h0; h < h0 + nh; ++h)
      ss += (element(t, {b, h, w0}) - mean) * (element(t, {b, h, w0}) - mean);
    return ss / double(nh);
  };
  ein::Tensor v = ein::reduce(x, "b (h2 h3) w -> b h2 w", ein::var, {{"h3", 3}});
  expectTensor(v, {2, 2, 4}, [&](const Index &i) {
    return oracle(x, i[0], i[2], i[1] * 3, 3);
  });
  ein::Tensor f = ein::reduce(shifted, "b h w -> b w", ein::var);
  ASSERT_EQ(f.dtype(), ein::f32);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t w = 0; w < 4; ++w)
      EXPECT_NEAR(element(f, {b, w}), oracle(shifted, b, w, 0, 6), 1e-2)
          << b << " " << w;
}

TEST(Reduce, VarOfIntegersIsAnErrorNamingIt) {
  ein::Tensor x = ein::Tensor::zeros(ein::i32, {3, 4});
  try {
    ein::reduce(x, "a b -> a", ein::var);
    FAIL() << "expected an error";
  } catch (const ein::Error &e) {
    EXPECT_NE(std::string(e.what()).find("var"), std::string::npos) << e.what();
  }
}

TEST(Reduce, MaxOverAnEmptyAxisIsAnError) {
  ein::Tensor x = ein::Tensor::zeros(ein::f32, {3, 0});
  try {
    ein::reduce(x, "a b -> a", ein::max);
    FAIL() << "expected an error";
  } catch (const ein::Error &e) {
    EXPECT_NE(std::string(e.what()).find("max"), std::string::npos) << e.what();
    EXPECT_EQ(e.info().kind, ein::ErrorInfo::Kind::Usage);
  }
  // A sum over it is 0, as numpy's.
  expectTensor(ein::reduce(x, "a b -> a", ein::sum), {3},
               [](const Index &) { return 0.0; });
}

TEST(Repeat, NewAxesAndTiling) {
  ein::Tensor x = iota({2, 3});
  ein::Tensor y = ein::repeat(x, "h w -> (c h) w k", {{"c", 2}, {"k", 3}});
  EXPECT_FALSE(y.shares_storage(x));
  expectTensor(y, {4, 3, 3}, [&](const Index &i) {
    return element(x, {i[0] % 2, i[1]});
  });
  ein::Tensor z = ein::repeat(x, "h w -> h (w 2)");
  expectTensor(z, {2, 6}, [&](const Index &i) {
    return element(x, {i[0], i[1] / 2});
  });
}

TEST(Einsum, MatmulOnATransposedViewWithoutACopy) {
  ein::Tensor a = iota({7, 5});
  ein::Tensor b = iota({9, 7}, [](int64_t i) { return float(i % 13) - 6; });
  ein::Tensor bt = ein::rearrange(b, "m k -> k m"); // a strided view
  EXPECT_TRUE(bt.shares_storage(b));
  EXPECT_FALSE(bt.is_contiguous());
  auto want = [&](const Index &i) {
    double acc = 0;
    for (int64_t k = 0; k < 7; ++k)
      acc += element(b, {i[0], k}) * element(a, {k, i[1]});
    return acc;
  };
  expectTensor(ein::einsum("k n, m k -> m n", a, b), {9, 5}, want);
  expectTensor(ein::einsum("k m, k n -> m n", bt, a), {9, 5}, want);
  expectTensor(ein::einsum("k m, k n -> m n", bt.contiguous(), a), {9, 5},
               want);
}

TEST(Einsum, BatchedAttentionScoresAgainstLoops) {
  ein::Tensor q = iota({2, 5, 12});
  ein::Tensor k =
      iota({2, 4, 12}, [](int64_t i) { return float(i % 7) * 0.5f; });
  auto qh = ein::rearrange(q, "b s (h d) -> b h s d", {{"h", 3}});
  auto kh = ein::rearrange(k, "b t (h d) -> b h t d", {{"h", 3}});
  ein::Tensor s = ein::einsum("b h s d, b h t d -> b h s t", qh, kh);
  expectTensor(s, {2, 3, 5, 4}, [&](const Index &i) {
    double acc = 0;
    for (int64_t d = 0; d < 4; ++d)
      acc += element(q, {i[0], i[2], i[1] * 4 + d}) *
             element(k, {i[0], i[3], i[1] * 4 + d});
    return acc;
  });
}

TEST(Einsum, DiagonalEllipsisBroadcastAndComposedOutput) {
  ein::Tensor x = iota({4, 4});
  expectTensor(ein::einsum("i i -> i", x), {4}, [&](const Index &i) {
    return element(x, {i[0], i[0]});
  });
  ein::Tensor a = iota({3, 1, 2, 5});
  ein::Tensor b = iota({4, 5, 6}, [](int64_t i) { return float(i % 5); });
  ein::Tensor c = ein::einsum("... i j, ... j k -> ... (i k)", a, b);
  expectTensor(c, {3, 4, 12}, [&](const Index &i) {
    double acc = 0;
    int64_t ii = i[2] / 6, kk = i[2] % 6;
    for (int64_t j = 0; j < 5; ++j)
      acc += element(a, {i[0], 0, ii, j}) * element(b, {i[1], j, kk});
    return acc;
  });
}

TEST(PackUnpack, RoundTripAsEinops) {
  ein::Tensor img = iota({2, 3, 4, 5});
  ein::Tensor cls = iota({2, 5}, [](int64_t i) { return 100.0f + float(i); });
  ein::Packed p = ein::pack({img, cls}, "b * c");
  EXPECT_EQ(p.shapes, (ein::PackedShapes{{3, 4}, {}}));
  expectTensor(p.tensor, {2, 13, 5}, [&](const Index &i) {
    return i[1] < 12 ? element(img, {i[0], i[1] / 4, i[1] % 4, i[2]})
                     : element(cls, {i[0], i[2]});
  });
  std::vector<ein::Tensor> parts = ein::unpack(p.tensor, p.shapes, "b * c");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[0].shares_storage(p.tensor)); // unpack gives views
  expectTensor(parts[0], {2, 3, 4, 5},
               [&](const Index &i) { return element(img, i); });
  expectTensor(parts[1], {2, 5},
               [&](const Index &i) { return element(cls, i); });
  // A strided input packs through a copy of its part.
  ein::Tensor t = ein::rearrange(iota({5, 2, 4}), "c b w -> b w c");
  ein::Packed q = ein::pack({t}, "b * c");
  expectTensor(q.tensor, {2, 4, 5},
               [&](const Index &i) { return element(t, i); });
}

TEST(Elementwise, BroadcastingScalarsAndDTypes) {
  ein::Tensor x = iota({3, 4});
  ein::Tensor row = iota({4}, [](int64_t i) { return float(i) + 1; });
  expectTensor(x + row, {3, 4}, [&](const Index &i) {
    return element(x, i) + element(row, {i[1]});
  });
  expectTensor(ein::exp(x * 0.5), {3, 4},
               [&](const Index &i) { return std::exp(element(x, i) * 0.5); });
  ein::Tensor positive = ein::gt(x, ein::scalar(0, ein::f32));
  EXPECT_EQ(positive.dtype(), ein::bool_);
  expectTensor(ein::where(positive, x, -x), {3, 4},
               [&](const Index &i) { return std::fabs(element(x, i)); });
  ein::Tensor n = ein::astype(
      ein::Tensor::from_vector<float>({1.0f, -2.0f, 7.0f}, {3}), ein::i32);
  EXPECT_EQ(n.dtype(), ein::i32);
  EXPECT_EQ(n.at<int32_t>({1}), -2);
  ein::Tensor m = ein::maximum(x, ein::scalar(0, ein::f32));
  expectTensor(m, {3, 4},
               [&](const Index &i) { return std::max(0.0, element(x, i)); });
}

TEST(Errors, CaretInsideThePatternAndNoThrowForms) {
  ein::Tensor x = iota({2, 3, 10});
  try {
    ein::rearrange(x, "b s (h d) -> b h s d", {{"h", 3}});
    FAIL() << "expected an error";
  } catch (const ein::Error &e) {
    EXPECT_STREQ(e.what(),
                 "error: composition (h d): size 10 is not divisible by 3\n"
                 "    rearrange(x, \"b s (h d) -> b h s d\", h=3)\n"
                 "                      ^~~~~");
  }
  auto bad = ein::nothrow::rearrange(x, "b s (h d -> b h s d");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ein::ErrorInfo::Kind::Program);
  EXPECT_NE(bad.error().message.find("unbalanced '('"), std::string::npos)
      << bad.error().message;
  auto missing = ein::nothrow::rearrange(x, "b s c -> b s");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("^"), std::string::npos);
  auto rank = ein::nothrow::einsum("i j, j k -> i k", {x, x});
  ASSERT_FALSE(rank);
  // The tensors' shapes, not the checker's internal names for their dims.
  EXPECT_NE(rank.error().message.find("\"2 3 10\""), std::string::npos)
      << rank.error().message;
  EXPECT_EQ(rank.error().message.find("_anon"), std::string::npos)
      << rank.error().message;
  auto ranked = ein::nothrow::rearrange(x, "a b -> b a");
  ASSERT_FALSE(ranked);
  EXPECT_NE(ranked.error().message.find("\"2 3 10\""), std::string::npos)
      << ranked.error().message;
  EXPECT_EQ(ranked.error().message.find("_anon"), std::string::npos)
      << ranked.error().message;
  auto dtype = ein::nothrow::elementwise("exp", {ein::astype(x, ein::i32)});
  ASSERT_FALSE(dtype);
  EXPECT_NE(dtype.error().message.find("exp needs a float tensor, got i32"),
            std::string::npos);
  auto quote = ein::nothrow::rearrange(x, "a b \" -> a");
  ASSERT_FALSE(quote);
  auto unknown = ein::nothrow::elementwise("frobnicate", {x});
  ASSERT_FALSE(unknown);
  EXPECT_THROW(ein::rearrange(ein::Tensor(), "a -> a"), ein::Error);
}

TEST(Errors, NumpyStylePatternGetsTheSpacedForm) {
  // numpy's "ij,jk->ik" reads as one axis per letter; einops' as axes "ij",
  // "jk", "ik". The error says how to write numpy's meaning, as einc does.
  ein::Tensor a = iota({2, 3}), b = iota({3, 4});
  auto product = ein::nothrow::einsum("ij,jk->ik", {a, b});
  ASSERT_FALSE(product);
  EXPECT_NE(product.error().message.find(
                "\nnote: einops patterns separate axes with spaces (a name "
                "of several letters is one axis); for numpy's one-letter "
                "axes write \"i j, j k -> i k\""),
            std::string::npos)
      << product.error().message;
  auto transposed = ein::nothrow::rearrange(a, "ij->ji");
  ASSERT_FALSE(transposed);
  EXPECT_NE(transposed.error().message.find("write \"i j -> j i\""),
            std::string::npos)
      << transposed.error().message;
  // A pattern that is wrong either way gets no note.
  auto wrong = ein::nothrow::einsum("ij,jk->iz", {a, b});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message.find("note:"), std::string::npos)
      << wrong.error().message;
}

TEST(Errors, SizesThatDoNotFitAreUsageErrors) {
  ein::Tensor a = iota({3, 4}), b = iota({5, 6});
  auto r = ein::nothrow::einsum("i j, j k -> i k", {a, b});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ein::ErrorInfo::Kind::Usage);
  auto s = ein::nothrow::rearrange(a, "i j -> i j", {{"i", 7}});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, ein::ErrorInfo::Kind::Usage);
  auto neg = ein::nothrow::rearrange(a, "i (j k) -> i j k", {{"k", -2}});
  ASSERT_FALSE(neg);
}

} // namespace

namespace {

TEST(EdgeCases, EmptyTensorsScalarsAndHugeSizes) {
  // An empty sum gives zeros; a merge over an empty axis is a view.
  ein::Tensor a = ein::Tensor::zeros(ein::f32, {3, 0});
  ein::Tensor b = ein::Tensor::zeros(ein::f32, {0, 4});
  expectTensor(ein::einsum("i k, k j -> i j", a, b), {3, 4},
               [](const Index &) { return 0.0; });
  ein::Tensor e = ein::Tensor::zeros(ein::f32, {0, 5, 2});
  ein::Tensor m = ein::rearrange(e, "a b c -> c (b a)");
  EXPECT_EQ(m.shape(), (std::vector<int64_t>{2, 0}));
  ein::Tensor c = ein::rearrange(e, "a b c -> (c b) a");
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{10, 0}));
  EXPECT_EQ(
      ein::repeat(ein::Tensor::zeros(ein::f32, {2}), "a -> a c", {{"c", 0}})
          .shape(),
      (std::vector<int64_t>{2, 0}));
  // 0-d tensors.
  ein::Tensor s = ein::scalar(2.0, ein::f32);
  EXPECT_NEAR(ein::exp(s).get({}), std::exp(2.0), 1e-5);
  ein::Tensor u = ein::rearrange(s, " -> 1 1");
  EXPECT_EQ(u.shape(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(u.get({0, 0}), 2.0);
  // Sizes beyond memory or int64 are errors, not crashes.
  auto big = ein::nothrow::repeat(ein::Tensor::zeros(ein::f32, {2}), "a -> a c",
                                  {{"c", int64_t(1) << 60}});
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("overflows"), std::string::npos);
  auto null = ein::nothrow::view(nullptr, ein::f32, {2, 2});
  ASSERT_FALSE(null);
  auto negative = ein::nothrow::view(a.data(), ein::f32, {2}, {-1});
  ASSERT_FALSE(negative);
}

} // namespace
