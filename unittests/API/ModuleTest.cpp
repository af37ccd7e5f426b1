// The C++ API's modules (load, call, report), tensors and .npy files.
#include "APITestHelpers.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace ein_api_test;
using Index = std::vector<int64_t>;

namespace {

std::string examples() { return EIN_SOURCE_DIR "/examples/"; }

TEST(Module, CallsMultiheadAtOtherSizesThanItsDims) {
  // multihead.ein's dims are the lecture's (batch 2, seq 3, heads 2,
  // hidden1 4, hidden2 2); --dim-style overrides give other sizes.
  ein::Module m = ein::Module::load(examples() + "multihead.ein",
                                    {{"batch", 3}, {"seq", 5}});
  EXPECT_EQ(m.functions(), std::vector<std::string>{"multihead"});
  ein::Tensor x = iota({3, 5, 8});
  ein::Tensor w = iota({4, 2}, [](int64_t i) { return float(i) - 3; });
  auto [y] = m.call<1>("multihead", x, w);
  expectTensor(y, {3, 5, 4}, [&](const Index &i) {
    int64_t h = i[2] / 2, o = i[2] % 2;
    double acc = 0;
    for (int64_t k = 0; k < 4; ++k)
      acc += element(x, {i[0], i[1], h * 4 + k}) * element(w, {k, o});
    return acc;
  });
  // A transposed view as an input: no copy needed by the caller.
  ein::Tensor wt = ein::rearrange(iota({2, 4}), "o k -> k o");
  auto results = m.call("multihead", x, wt);
  ASSERT_EQ(results.size(), 1u);
  expectTensor(results[0], {3, 5, 4}, [&](const Index &i) {
    int64_t h = i[2] / 2, o = i[2] % 2;
    double acc = 0;
    for (int64_t k = 0; k < 4; ++k)
      acc += element(x, {i[0], i[1], h * 4 + k}) * element(wt, {k, o});
    return acc;
  });
}

TEST(Module, ReportCountsTheLecturesFlops) {
  ein::Module m = ein::Module::load(examples() + "multihead.ein");
  ein::CostReport r = m.report("multihead");
  // 2 * batch * seq * heads * hidden1 * hidden2 = 2*2*3*2*4*2.
  EXPECT_EQ(r.flops, 192);
  EXPECT_NE(r.text.find("multihead"), std::string::npos);
  EXPECT_EQ(r.json.front(), '{');
  ein::CostReport big = m.report("multihead", {{"batch", 16}, {"seq", 2048}});
  EXPECT_EQ(big.flops, 2.0 * 16 * 2048 * 2 * 4 * 2);
}

TEST(Module, ErrorsAreEincsDiagnostics) {
  auto missing = ein::nothrow::load_module("/nonexistent/x.ein");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open file"),
            std::string::npos);
  auto bad = ein::nothrow::module_from_source(
      "def f(x: f32[\"a b\"]) -> f32[\"a\"]:\n    return rearrange(x, \"a b -> "
      "a c\")\n",
      "bad.ein");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.ein:2:"), std::string::npos)
      << bad.error().message;
  ein::Module m = ein::Module::load(examples() + "multihead.ein");
  auto wrong =
      ein::nothrow::call(m, "multihead", {iota({2, 3, 7}), iota({4, 2})});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, ein::ErrorInfo::Kind::Usage);
  auto none = ein::nothrow::call(m, "nothing", {});
  ASSERT_FALSE(none);
  EXPECT_THROW((m.call<2>("multihead", iota({2, 3, 8}), iota({4, 2}))),
               ein::Error);
}

TEST(Module, TakeErrorNamesTheTakeTheIdAndTheBound) {
  // Two takes; only the second one's ids are out of range. The module's
  // code is size-generic, and the bound still shows its number.
  ein::Module m = ein::Module::from_source(
      "def f(t: f32[\"vocab d\"], a: i64[\"n\"], b: i64[\"k\"]) -> "
      "(f32[\"n d\"], f32[\"k d\"]):\n"
      "    return take(t, a, \"vocab\"), take(t, b, \"vocab\")\n",
      "two.ein");
  ein::Tensor t = iota({5, 2});
  ein::Tensor a = ein::Tensor::from_vector(std::vector<int64_t>{0, 4}, {2});
  ein::Tensor b =
      ein::Tensor::from_vector(std::vector<int64_t>{1, 7, 2, -1}, {4});
  auto bad = ein::nothrow::call(m, "f", {t, a, b});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ein::ErrorInfo::Kind::Usage);
  EXPECT_NE(bad.error().message.find(
                "take at two.ein:2:33: id 7 (at [1] of its ids) is out of "
                "range [0, vocab=5); 2 ids are out of range in all"),
            std::string::npos)
      << bad.error().message;
  EXPECT_EQ(bad.error().message.find("two.ein:2:12"), std::string::npos)
      << bad.error().message;
}

TEST(Tensor, ViewsElementAccessAndNpyRoundTrip) {
  std::vector<double> data{1, 2, 3, 4, 5, 6};
  ein::TensorView v{data.data(), ein::f64, {3, 2}, {1, 3}}; // Fortran order
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.at<double>({1, 1}), 5);
  v.at<double>({0, 1}) = 40;
  EXPECT_EQ(data[3], 40);
  EXPECT_THROW(v.at<float>({0, 0}), ein::Error);
  EXPECT_THROW(v.at<double>({3, 0}), ein::Error);
  EXPECT_THROW(v.get({0}), ein::Error);
  ein::Tensor h = ein::Tensor::zeros(ein::bf16, {2});
  h.set({1}, 1.5);
  EXPECT_EQ(h.get({1}), 1.5);
  EXPECT_THROW(ein::Tensor::zeros(ein::i32, {1}).set({0}, 0.5), ein::Error);

  char dir[] = "/tmp/ein-api-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/v.npy";
  ein::save_npy(v, path);
  ein::Tensor back = ein::load_npy(path);
  expectTensor(back, {3, 2}, [&](const Index &i) { return element(v, i); });
  std::ofstream(std::string(dir) + "/bad.npy") << "not an npy file";
  auto bad = ein::nothrow::load_npy(std::string(dir) + "/bad.npy");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ein::ErrorInfo::Kind::Usage);
  std::remove(path.c_str());
  std::remove((std::string(dir) + "/bad.npy").c_str());
  rmdir(dir);
  EXPECT_THROW(ein::Tensor::zeros(ein::f32, {-1}), ein::Error);
  EXPECT_THROW(ein::Tensor::zeros(ein::f32, {1 << 30, 1 << 30, 1 << 30}),
               ein::Error);
  // On a device, or without one, an overflowing size is an error too.
  EXPECT_THROW(
      ein::Tensor::zeros(ein::f32, {1 << 30, 1 << 30, 1 << 30}, ein::cuda),
      ein::Error);
}

} // namespace
