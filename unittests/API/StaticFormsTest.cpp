// The compile-time pattern forms of ein/API/Static.h at run time: they give
// what the run-time forms give, Shaped results carry their shape strings,
// and what only the run time can check (sizes, a Shaped tensor's dtype and
// rank) still raises ein::Error. (The compile errors are test/cpp-api.)
#include "APITestHelpers.h"

#include <string>
#include <type_traits>

using namespace ein_api_test;
using Index = std::vector<int64_t>;
using ein::f32;
using ein::f64;
using ein::Shaped;

namespace {

/// Whether `f` raises an ein::Error whose message contains `needle`.
template <class F> bool raises(F &&f, const std::string &needle) {
  try {
    f();
  } catch (const ein::Error &e) {
    if (std::string(e.what()).find(needle) != std::string::npos)
      return true;
    ADD_FAILURE() << "unexpected message: " << e.what();
    return false;
  }
  return false;
}

TEST(StaticForms, RearrangeIsTheRunTimeForm) {
  ein::Tensor x = iota({2, 3, 12});
  ein::Tensor y = ein::rearrange<"b s (h d) -> b h s d">(x, ein::size<"h">(4));
  EXPECT_TRUE(y.shares_storage(x)); // a view, as the run-time form
  expectTensor(y, {2, 4, 3, 3}, [&](const Index &i) {
    return element(x, {i[0], i[2], i[1] * 3 + i[3]});
  });
  ein::Tensor z = ein::rearrange<"b s (h d) -> b h s d">(x, {{"h", 4}});
  EXPECT_EQ(z.shape(), y.shape());
  EXPECT_EQ(z.strides(), y.strides());
}

TEST(StaticForms, EinsumPicksTheRightOverload) {
  ein::Tensor a = iota({3, 4}), b = iota({4, 5});
  ein::Tensor c = ein::einsum<"i j, j k -> i k">(a, b);
  ein::Tensor d = ein::einsum("i j, j k -> i k", a, b);
  expectTensor(c, {3, 5}, [&](const Index &i) { return element(d, i); });
  expectTensor(c, {3, 5}, [&](const Index &i) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j)
      s += element(a, {i[0], j}) * element(b, {j, i[1]});
    return s;
  });
}

TEST(StaticForms, ShapedAttentionChain) {
  const int64_t B = 2, S = 3, T = 5, H = 2, D = 4;
  Shaped<f32, "b s (h d)"> q(iota({B, S, H * D}));
  Shaped<f32, "b t (h d)"> k(iota(
      {B, T, H * D}, [](int64_t i) { return float(i % 13) * 0.5f - 2.0f; }));
  auto qh = ein::rearrange<"b s (h d) -> b h s d">(q, ein::size<"h">(H));
  auto kh = ein::rearrange<"b t (h d) -> b h t d">(k, ein::size<"h">(H));
  auto s = ein::einsum<"b h s d, b h t d -> b h s t">(qh, kh);
  auto m = ein::reduce<"b h s t -> b h s">(s, ein::max);
  static_assert(std::is_same_v<decltype(s), Shaped<f32, "b h s t">>);
  static_assert(std::is_same_v<decltype(m), Shaped<f32, "b h s">>);
  ASSERT_EQ(s.tensor().shape(), (Index{B, H, S, T}));
  expectTensor(m, {B, H, S}, [&](const Index &i) {
    double best = -1e30;
    for (int64_t t = 0; t < T; ++t) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d)
        dot += element(q, {i[0], i[2], i[1] * D + d}) *
               element(k, {i[0], t, i[1] * D + d});
      best = std::max(best, dot);
    }
    return best;
  });
}

TEST(StaticForms, ReduceWithAccAndRepeatWithSizes) {
  Shaped<f32, "n m"> x(iota({4, 6}));
  auto total = ein::reduce<"n m -> n">(x, ein::sum, ein::acc<f64>);
  static_assert(std::is_same_v<decltype(total), Shaped<f64, "n">>);
  EXPECT_EQ(total.tensor().dtype(), f64);
  expectTensor(total, {4}, [&](const Index &i) {
    double s = 0;
    for (int64_t j = 0; j < 6; ++j)
      s += element(x, {i[0], j});
    return s;
  });
  auto pooled = ein::reduce<"(n 2) (m m2) -> n m">(x.tensor(), ein::mean,
                                                   ein::size<"m2">(3));
  expectTensor(pooled, {2, 2}, [&](const Index &i) {
    double s = 0;
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 3; ++b)
        s += element(x, {i[0] * 2 + a, i[1] * 3 + b});
    return s / 6;
  });
  auto tiled = ein::repeat<"n m -> c n m">(x, ein::size<"c">(3));
  static_assert(std::is_same_v<decltype(tiled), Shaped<f32, "c n m">>);
  expectTensor(tiled, {3, 4, 6}, [&](const Index &i) {
    return element(x, {i[1], i[2]});
  });
}

TEST(StaticForms, PackAndUnpack) {
  ein::Tensor img = iota({2, 3, 4, 5}), cls = iota({2, 5});
  ein::Packed p = ein::pack<"b * c">({img, cls});
  ASSERT_EQ(p.tensor.shape(), (Index{2, 13, 5}));
  std::vector<ein::Tensor> parts = ein::unpack<"b * c">(p.tensor, p.shapes);
  ASSERT_EQ(parts.size(), 2u);
  expectTensor(parts[0], {2, 3, 4, 5},
               [&](const Index &i) { return element(img, i); });
  expectTensor(parts[1], {2, 5},
               [&](const Index &i) { return element(cls, i); });
}

TEST(StaticForms, WhatOnlyTheRunTimeKnowsStillRaises) {
  ein::Tensor x = iota({2, 3, 12});
  // 12 is not a multiple of 5: the run-time form's error.
  EXPECT_TRUE(raises(
      [&] { ein::rearrange<"b s (h d) -> b h s d">(x, ein::size<"h">(5)); },
      "error:"));
  // A Shaped tensor checks its dtype and rank when it is made.
  EXPECT_TRUE(raises(
      [&] { Shaped<f32, "b s"> bad(x); },
      "ein::Shaped<f32, \"b s\"> needs a tensor of dtype f32 and rank 2"));
  EXPECT_TRUE(raises([&] { Shaped<f64, "b s d"> bad(x); },
                     "needs a tensor of dtype f64 and rank 3"));
  EXPECT_TRUE(raises([&] { Shaped<f32, "b s d"> bad{ein::Tensor()}; },
                     "got no tensor"));
  Shaped<f32, "b ..."> any(x); // `...`: rank at least 1
  EXPECT_EQ(any.tensor().rank(), 3);
}

} // namespace
