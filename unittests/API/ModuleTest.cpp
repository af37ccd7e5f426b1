// The C++ API's modules (load, call, report), tensors and .npy, safetensors
// and .npz files.
#include "APITestHelpers.h"

#include <cmath>
#include <cstdio>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
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

TEST(Module, LoopOverStackedWeightsUnrollsPerCall) {
  // `layers` is bound by each call's inputs, and the loop unrolled for it
  // (the module's size-generic code cannot leave it free); 0 layers is an
  // empty loop.
  ein::Module m = ein::Module::from_source(
      "def f(w: f32[\"layers d\"], x: f32[\"d\"]) -> f32[\"d\"]:\n"
      "    for l in range(layers):\n"
      "        x = x * w[l] + 1\n"
      "    return x\n",
      "loop.ein");
  for (int64_t layers : {3, 0}) {
    ein::Tensor w =
        iota({layers, 4}, [](int64_t i) { return float(i % 5) - 2; });
    ein::Tensor x = iota({4});
    auto [y] = m.call<1>("f", w, x);
    expectTensor(y, {4}, [&](const Index &i) {
      double v = element(x, {i[0]});
      for (int64_t l = 0; l < layers; ++l)
        v = v * element(w, {l, i[0]}) + 1;
      return v;
    });
  }
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

// A linear model's loss, and its training step with grad().
const char *linearStep =
    "def loss(x: f32[\"b d\"], w: f32[\"d k\"], y: f32[\"b k\"]) -> "
    "f32[\"\"]:\n"
    "    p = einsum(x, w, \"b d, d k -> b k\")\n"
    "    return reduce((p - y) ** 2, \"b k ->\", \"mean\")\n"
    "\n"
    "def step(x: f32[\"b d\"], w: f32[\"d k\"], y: f32[\"b k\"]) -> "
    "(f32[\"\"], f32[\"d k\"]):\n"
    "    l = loss(x, w, y)\n"
    "    dw = grad(l, wrt=w)\n"
    "    return l, dw\n";

TEST(Module, TrainReportCountsTheStepByHand) {
  ein::Module m = ein::Module::from_source(linearStep, "linear.ein");
  ein::TrainReportOptions adam;
  adam.optimizer = "adam";
  ein::Sizes sizes = {{"b", 4}, {"d", 3}, {"k", 2}};
  ein::TrainReport r = m.train_report("step", sizes, adam);
  // w is d*k = 6 f32s; its gradient as many; adam keeps 2 states of it
  // and spends 13 FLOPs per element (docs/autodiff.md's table).
  EXPECT_EQ(r.parameter_bytes, 24);
  EXPECT_EQ(r.gradient_bytes, 24);
  EXPECT_EQ(r.optimizer_state_bytes, 48);
  EXPECT_EQ(r.optimizer_flops, 13 * 6);
  // The forward's matmul is 2*b*d*k; the backward's weight gradient the
  // same again (x needs no data gradient), plus elementwise work.
  EXPECT_GE(r.forward_flops, 2 * 4 * 3 * 2);
  EXPECT_GE(r.backward_flops, 2 * 4 * 3 * 2);
  EXPECT_EQ(r.total_flops, r.forward_flops + r.backward_flops +
                               r.recompute_flops + r.optimizer_flops);
  EXPECT_GE(r.peak_bytes, r.parameter_bytes + r.gradient_bytes);
  EXPECT_NE(r.text.find("optimizer states"), std::string::npos) << r.text;
  EXPECT_EQ(r.json.rfind("{\"report\":", 0), 0u);
  EXPECT_NE(r.json.find("\"optimizer_flops\":{\"value\":78,"),
            std::string::npos)
      << r.json;
  EXPECT_GT(r.peak_flops, 0);
  EXPECT_DOUBLE_EQ(r.mfu(2.0), r.total_flops / 2.0 / r.peak_flops);
  // The loss function differentiated by name: the same account.
  ein::TrainReportOptions params = adam;
  params.params = {"w"};
  ein::TrainReport byName = m.train_report("loss", sizes, params);
  EXPECT_EQ(byName.total_flops, r.total_flops);
  EXPECT_EQ(byName.peak_bytes, r.peak_bytes);
  // Unbound sizes leave the counts unknown, not wrong.
  EXPECT_TRUE(std::isnan(m.train_report("step").forward_flops));
}

TEST(Module, TrainReportErrorsAreEinsMessages) {
  ein::Module m = ein::Module::from_source(linearStep, "linear.ein");
  auto noGrad = ein::nothrow::train_report(m, "loss");
  ASSERT_FALSE(noGrad);
  EXPECT_EQ(noGrad.error().kind, ein::ErrorInfo::Kind::Usage);
  EXPECT_NE(noGrad.error().message.find("'loss' has no grad()"),
            std::string::npos)
      << noGrad.error().message;
  ein::TrainReportOptions bad;
  bad.params = {"x2"};
  auto badParam = ein::nothrow::train_report(m, "loss", {}, bad);
  ASSERT_FALSE(badParam);
  EXPECT_NE(badParam.error().message.find("'x2' is not a parameter of 'loss'"),
            std::string::npos);
  bad = {};
  bad.optimizer = "lion";
  EXPECT_FALSE(ein::nothrow::train_report(m, "step", {}, bad));
  bad = {};
  bad.act_dtype = ein::i32;
  EXPECT_FALSE(ein::nothrow::train_report(m, "step", {}, bad));
  bad = {};
  bad.device = "tpu";
  EXPECT_FALSE(ein::nothrow::train_report(m, "step", {}, bad));
  EXPECT_FALSE(ein::nothrow::train_report(m, "nothing"));
}

TEST(Module, SignatureNamesTheGradients) {
  ein::Module m = ein::Module::from_source(linearStep, "linear.ein");
  ein::Signature step = m.signature("step");
  ASSERT_EQ(step.params.size(), 3u);
  EXPECT_EQ(step.params[1].name, "w");
  EXPECT_EQ(step.params[1].shape, "d k");
  EXPECT_EQ(step.params[1].dtype, ein::f32);
  ASSERT_EQ(step.results.size(), 2u);
  EXPECT_EQ(step.gradient_of, (std::vector<int>{-1, 1}));
  EXPECT_EQ(step.is_loss, (std::vector<bool>{true, false}));
  EXPECT_EQ(step.results[0].shape, "");
  ein::Signature loss = m.signature("loss");
  EXPECT_EQ(loss.gradient_of, (std::vector<int>{-1}));
  EXPECT_EQ(loss.is_loss, (std::vector<bool>{false}));
  EXPECT_FALSE(ein::nothrow::signature(m, "nothing"));
}

TEST(Module, JITRuntimeLibrariesStayLocal) {
  // The JIT's runtime libraries (libmlir_c_runner_utils, libomp) are loaded
  // RTLD_LOCAL: made global, the libLLVM they bring crashed a later library
  // carrying its own LLVM (triton's, under torch; test_module.py).
  ein::Module m = ein::Module::load(examples() + "multihead.ein");
  m.call("multihead", iota({2, 3, 8}), iota({4, 2}));
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "_mlir_ciface_printMemrefF32"), nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "__kmpc_fork_call"), nullptr);
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

TEST(Module, ShardedProgramIsRefusedByName) {
  // A file with a mesh loads, but its unsharded program is never called in
  // place of the sharded one: Module::call names call_sharded
  // (DistributedTest.cpp runs it).
  auto sharded = ein::Module::from_source(
      "mesh tp\n\ndef f(x: f32[\"n@tp\"]) -> f32[\"n@tp\"]:\n    return "
      "x\n",
      "sharded.ein");
  EXPECT_EQ(sharded.functions(), std::vector<std::string>{"f"});
  auto called = ein::nothrow::call(sharded, "f", {iota({4})});
  ASSERT_FALSE(called);
  EXPECT_EQ(called.error().kind, ein::ErrorInfo::Kind::Usage);
  EXPECT_NE(called.error().message.find("sharded.ein"), std::string::npos)
      << called.error().message;
  EXPECT_NE(called.error().message.find("declares a mesh"), std::string::npos)
      << called.error().message;
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

// A file the `safetensors` package wrote (safetensors.torch.save of
// {"a": bf16 [[1.5, -2], [0.25, 3]], "b": i32 [7, -8, 9]}), read; then a
// strided bf16 view and an i64 tensor written, checked byte by byte against
// the format (the header's fields, the data at its offsets) and read back.
TEST(Tensor, SafetensorsFromThePackageAndBack) {
  const unsigned char written[] = {
      0x78, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x22, 0x62, 0x22,
      0x3a, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x22, 0x49,
      0x33, 0x32, 0x22, 0x2c, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a,
      0x5b, 0x33, 0x5d, 0x2c, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66,
      0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x5b, 0x30, 0x2c, 0x31, 0x32,
      0x5d, 0x7d, 0x2c, 0x22, 0x61, 0x22, 0x3a, 0x7b, 0x22, 0x64, 0x74, 0x79,
      0x70, 0x65, 0x22, 0x3a, 0x22, 0x42, 0x46, 0x31, 0x36, 0x22, 0x2c, 0x22,
      0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x5b, 0x32, 0x2c, 0x32, 0x5d,
      0x2c, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65,
      0x74, 0x73, 0x22, 0x3a, 0x5b, 0x31, 0x32, 0x2c, 0x32, 0x30, 0x5d, 0x7d,
      0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x07, 0x00, 0x00, 0x00,
      0xf8, 0xff, 0xff, 0xff, 0x09, 0x00, 0x00, 0x00, 0xc0, 0x3f, 0x00, 0xc0,
      0x80, 0x3e, 0x40, 0x40};
  char dir[] = "/tmp/ein-api-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string in = std::string(dir) + "/in.safetensors";
  std::ofstream(in, std::ios::binary)
      .write(reinterpret_cast<const char *>(written), sizeof written);
  auto tensors = ein::load_safetensors(in);
  ASSERT_EQ(tensors.size(), 2u);
  const ein::Tensor &a = tensors.at("a"), &b = tensors.at("b");
  EXPECT_EQ(a.dtype(), ein::bf16);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a.get({0, 0}), 1.5);
  EXPECT_EQ(a.get({0, 1}), -2);
  EXPECT_EQ(a.get({1, 0}), 0.25);
  EXPECT_EQ(b.dtype(), ein::i32);
  EXPECT_EQ(b.get({1}), -8);

  // A transposed view of `a` is written in C order.
  std::vector<uint16_t> bits{0x3fc0, 0xc000, 0x3e80, 0x4040};
  ein::TensorView aT{bits.data(), ein::bf16, {2, 2}, {1, 2}};
  ein::Tensor c = ein::Tensor::zeros(ein::i64, {1});
  c.set({0}, -3);
  std::string out = std::string(dir) + "/out.safetensors";
  ein::save_safetensors({{"aT", aT}, {"c", c}}, out);
  std::ifstream file(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)),
                    std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 8 + 8);
  std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find(R"("aT":{"dtype":"BF16","shape":[2,2],)"
                        R"("data_offsets":[0,8]})"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find(R"("c":{"dtype":"I64","shape":[1],)"
                        R"("data_offsets":[8,16]})"),
            std::string::npos)
      << header;
  const unsigned char expected[] = {0xc0, 0x3f, 0x80, 0x3e, 0x00, 0xc0,
                                    0x40, 0x40, 0xfd, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(
      bytes.substr(8 + n),
      std::string(reinterpret_cast<const char *>(expected), sizeof expected));
  EXPECT_EQ(ein::load_safetensors(out).at("aT").get({0, 1}), 0.25);

  std::ofstream(std::string(dir) + "/bad.safetensors") << "not a file";
  auto bad =
      ein::nothrow::load_safetensors(std::string(dir) + "/bad.safetensors");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ein::ErrorInfo::Kind::Usage);
  for (const char *f :
       {"/in.safetensors", "/out.safetensors", "/bad.safetensors"})
    std::remove((std::string(dir) + f).c_str());
  rmdir(dir);
}

TEST(Tensor, NpzFromNumpyAndBack) {
  // np.savez_compressed(f, x=np.array([1.5, -2.0], np.float32),
  //                     n=np.array([[1, 2, 3]], np.int64))
  const char written[] =
      "\x50\x4b\x03\x04\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\xd6\x43\x4b\x05"
      "\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x78\x2e\x6e\x70\x79\x01"
      "\x00\x10\x00\x88\x00\x00\x00\x00\x00\x00\x00\x4b\x00\x00\x00\x00\x00\x00"
      "\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8\x50\xc6\x50\xad\x9e\x92\x5a\x9c\x5c"
      "\xa4\x6e\xa5\xa0\x6e\x93\x66\xa2\xae\xa3\xa0\x9e\x96\x5f\x54\x52\x94\x98"
      "\x17\x9f\x5f\x94\x92\x0a\x12\x77\x4b\xcc\x29\x4e\x05\x8a\x17\x67\x24\x16"
      "\xa4\x02\xf9\x1a\x46\x3a\x9a\x3a\x0a\xb5\x0a\x14\x00\x2e\x06\x86\x03\xf6"
      "\x0c\x40\x02\x00\x50\x4b\x03\x04\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00"
      "\x95\xee\x46\xdc\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x6e\x2e"
      "\x6e\x70\x79\x01\x00\x10\x00\x98\x00\x00\x00\x00\x00\x00\x00\x4f\x00\x00"
      "\x00\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8\x50\xc6\x50\xad\x9e"
      "\x92\x5a\x9c\x5c\xa4\x6e\xa5\xa0\x6e\x93\x69\xa1\xae\xa3\xa0\x9e\x96\x5f"
      "\x54\x52\x94\x98\x17\x9f\x5f\x94\x92\x0a\x12\x77\x4b\xcc\x29\x4e\x05\x8a"
      "\x17\x67\x24\x16\xa4\x02\xf9\x1a\x86\x3a\x0a\xc6\x9a\x3a\x0a\xb5\x0a\x64"
      "\x03\x2e\x46\x06\x08\x60\x82\xd2\xcc\x50\x1a\x00\x50\x4b\x01\x02\x2d\x03"
      "\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\xd6\x43\x4b\x05\x4b\x00\x00\x00"
      "\x88\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01"
      "\x00\x00\x00\x00\x78\x2e\x6e\x70\x79\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00"
      "\x00\x08\x00\x00\x00\x21\x00\x95\xee\x46\xdc\x4f\x00\x00\x00\x98\x00\x00"
      "\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x82\x00\x00"
      "\x00\x6e\x2e\x6e\x70\x79\x50\x4b\x05\x06\x00\x00\x00\x00\x02\x00\x02\x00"
      "\x66\x00\x00\x00\x08\x01\x00\x00\x00\x00";
  char dir[] = "/tmp/ein-api-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string in = std::string(dir) + "/in.npz";
  std::ofstream(in, std::ios::binary).write(written, sizeof written - 1);
  auto arrays = ein::load_npz(in);
  ASSERT_EQ(arrays.size(), 2u);
  const ein::Tensor &x = arrays.at("x"), &n = arrays.at("n");
  EXPECT_EQ(x.dtype(), ein::f32);
  EXPECT_EQ(x.get({0}), 1.5);
  EXPECT_EQ(x.get({1}), -2);
  EXPECT_EQ(n.dtype(), ein::i64);
  EXPECT_EQ(n.shape(), (Index{1, 3}));
  EXPECT_EQ(n.get({0, 2}), 3);

  // A transposed bf16 view is written in C order, widened to f32.
  std::vector<uint16_t> bits{0x3fc0, 0xc000, 0x3e80, 0x4040};
  ein::TensorView aT{bits.data(), ein::bf16, {2, 2}, {1, 2}};
  std::string out = std::string(dir) + "/out.npz";
  ein::save_npz({{"aT", aT}, {"n", n}}, out);
  auto back = ein::load_npz(out);
  ASSERT_EQ(back.size(), 2u);
  const ein::Tensor &b = back.at("aT");
  EXPECT_EQ(b.dtype(), ein::f32);
  EXPECT_TRUE(b.is_contiguous());
  EXPECT_EQ(b.get({0, 0}), 1.5);
  EXPECT_EQ(b.get({0, 1}), 0.25);
  EXPECT_EQ(b.get({1, 0}), -2);
  EXPECT_EQ(b.get({1, 1}), 3);
  EXPECT_EQ(back.at("n").get({0, 1}), 2);

  std::ofstream(std::string(dir) + "/bad.npz") << "not an archive";
  auto bad = ein::nothrow::load_npz(std::string(dir) + "/bad.npz");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ein::ErrorInfo::Kind::Usage);
  for (const char *f : {"/in.npz", "/out.npz", "/bad.npz"})
    std::remove((std::string(dir) + f).c_str());
  rmdir(dir);
}
