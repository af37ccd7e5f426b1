// CUDA device tensors of the C++ API: moving tensors, views of device
// memory, operations on the device, mixed devices, element access, files,
// and threads sharing the device's caches. lit runs them with
// EIN_CUDA=emulated (the CUDA back end's code on the CPU); without a device
// they skip, saying so. Values come from naive loops over the CPU inputs.
#include "APITestHelpers.h"

#include <cstdio>
#include <thread>
#include <unistd.h>

using namespace ein_api_test;

namespace {

#define SKIP_WITHOUT_CUDA()                                                    \
  if (!ein::cuda_available())                                                  \
  GTEST_SKIP() << "skipped: no CUDA device (EIN_CUDA=emulated runs the CUDA "  \
                  "code on the CPU)"

TEST(Device, RoundTripKeepsValuesAndDevices) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor x = iota({3, 5, 4});
  ein::Tensor d = x.to(ein::cuda);
  EXPECT_EQ(d.device(), ein::cuda);
  EXPECT_EQ(d.shape(), x.shape());
  EXPECT_FALSE(d.shares_storage(x));
  EXPECT_TRUE(d.to(ein::cuda).shares_storage(d)); // already there: no copy
  ein::Tensor back = d.to(ein::cpu);
  EXPECT_EQ(back.device(), ein::cpu);
  expectTensor(back, {3, 5, 4},
               [&](const std::vector<int64_t> &i) { return element(x, i); });
  EXPECT_NE(ein::device_name(ein::cuda).find("CUDA"), std::string::npos);
  EXPECT_EQ(ein::device_name(ein::cpu), "cpu");
}

TEST(Device, StridedHostAndDeviceViewsCopyDense) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor x = iota({4, 6});
  // A transposed host view goes over dense; a transposed device view comes
  // back through a copy kernel on the device.
  ein::Tensor t = ein::rearrange(x, "a b -> b a");
  ein::Tensor dt = t.to(ein::cuda);
  EXPECT_TRUE(dt.is_contiguous());
  ein::Tensor d = x.to(ein::cuda);
  ein::Tensor view = ein::rearrange(d, "a b -> b a");
  EXPECT_TRUE(view.shares_storage(d));
  EXPECT_FALSE(view.is_contiguous());
  for (const ein::Tensor &got :
       {dt.to(ein::cpu), view.to(ein::cpu), view.contiguous().to(ein::cpu)})
    expectTensor(got, {6, 4}, [&](const std::vector<int64_t> &i) {
      return element(x, {i[1], i[0]});
    });
  ein::Tensor c = view.clone();
  EXPECT_EQ(c.device(), ein::cuda);
  EXPECT_FALSE(c.shares_storage(d));
}

TEST(Device, ViewsOfDeviceMemoryAreViews) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor d = iota({2, 5, 12}).to(ein::cuda);
  ein::Tensor heads = ein::rearrange(d, "b s (h d) -> b h s d", {{"h", 3}});
  EXPECT_TRUE(heads.shares_storage(d));
  EXPECT_EQ(heads.device(), ein::cuda);
  EXPECT_EQ(heads.data(), d.data());
  EXPECT_EQ(heads.strides(), (std::vector<int64_t>{60, 4, 12, 1}));
  EXPECT_NE(
      ein::explain("rearrange", "b s c -> s (b c)", {d})
          .find("a kernel writing a new tensor (480 bytes) on the CUDA device"),
      std::string::npos);
  EXPECT_NE(ein::explain("rearrange", "b s (h d) -> b h s d", {d}, {{"h", 3}})
                .find("a view (no copy, no kernel)"),
            std::string::npos);
  auto parts = ein::unpack(d, {{2}, {3}}, "b * c");
  EXPECT_TRUE(parts[1].shares_storage(d));
  EXPECT_EQ(parts[1].device(), ein::cuda);
}

TEST(Device, OperationsRunOnTheInputsDevice) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor a = iota({2, 3, 4}), b = iota({2, 3, 5}, [](int64_t i) {
                                     return float(i % 7) - 2.5f;
                                   });
  ein::Tensor da = a.to(ein::cuda), db = b.to(ein::cuda);
  ein::Tensor s = ein::einsum("n k i, n k j -> n i j", da, db);
  EXPECT_EQ(s.device(), ein::cuda);
  expectTensor(s.to(ein::cpu), {2, 4, 5}, [&](const std::vector<int64_t> &i) {
    double acc = 0;
    for (int64_t k = 0; k < 3; ++k)
      acc += element(a, {i[0], k, i[1]}) * element(b, {i[0], k, i[2]});
    return acc;
  });
  ein::Tensor m = ein::reduce(da, "n k i -> n i", ein::max);
  expectTensor(m.to(ein::cpu), {2, 4}, [&](const std::vector<int64_t> &i) {
    double best = -1e30;
    for (int64_t k = 0; k < 3; ++k)
      best = std::max(best, element(a, {i[0], k, i[1]}));
    return best;
  });
  ein::Tensor r = ein::repeat(da, "n k i -> n k i r", {{"r", 2}});
  expectTensor(r.to(ein::cpu), {2, 3, 4, 2},
               [&](const std::vector<int64_t> &i) {
                 return element(a, {i[0], i[1], i[2]});
               });
  // A CPU scalar joins a device tensor on the device.
  ein::Tensor e = ein::exp(da) * ein::scalar(0.5, ein::f32);
  EXPECT_EQ(e.device(), ein::cuda);
  expectTensor(e.to(ein::cpu), {2, 3, 4}, [&](const std::vector<int64_t> &i) {
    return std::exp(element(a, i)) * 0.5;
  });
  ein::Tensor h = ein::astype(da, ein::f64);
  EXPECT_EQ(h.dtype(), ein::f64);
  expectTensor(h.to(ein::cpu), {2, 3, 4},
               [&](const std::vector<int64_t> &i) { return element(a, i); });
  // ... in an einsum too.
  ein::Tensor scaled =
      ein::einsum("n k i, -> n k i", da, ein::scalar(3, ein::f32));
  expectTensor(
      scaled.to(ein::cpu), {2, 3, 4},
      [&](const std::vector<int64_t> &i) { return 3 * element(a, i); });
  auto packed = ein::pack({da, da}, "n * i");
  EXPECT_EQ(packed.tensor.device(), ein::cuda);
  expectTensor(packed.tensor.to(ein::cpu), {2, 6, 4},
               [&](const std::vector<int64_t> &i) {
                 return element(a, {i[0], i[1] % 3, i[2]});
               });
}

TEST(Device, ZerosEmptyAndUnitTensors) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor z = ein::Tensor::zeros(ein::i32, {3, 4}, ein::cuda);
  EXPECT_EQ(z.device(), ein::cuda);
  expectTensor(z.to(ein::cpu), {3, 4},
               [](const std::vector<int64_t> &) { return 0.0; });
  ein::Tensor empty = ein::Tensor::zeros(ein::f32, {0, 5}).to(ein::cuda);
  ein::Tensor summed = ein::reduce(empty, "a b -> b", ein::sum);
  expectTensor(summed.to(ein::cpu), {5},
               [](const std::vector<int64_t> &) { return 0.0; });
  // 2^62 bytes: more than any device has, a clear error.
  auto huge = ein::nothrow::zeros(ein::f32, {1 << 30, 1 << 30}, ein::cuda);
  ASSERT_FALSE(huge);
  EXPECT_NE(
      huge.error().message.find("cannot allocate 4611686018427387904 "
                                "bytes on the CUDA device: out of memory"),
      std::string::npos)
      << huge.error().message;
  ein::Tensor one = ein::scalar(2.5, ein::f64).to(ein::cuda);
  EXPECT_EQ(one.device(), ein::cuda);
  EXPECT_EQ(one.to(ein::cpu).get({}), 2.5);
}

TEST(Device, MixedDevicesAndElementAccessAreErrors) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor a = iota({2, 3});
  ein::Tensor d = a.to(ein::cuda);
  auto mixed = ein::nothrow::einsum("a b, a b -> a", {a, d});
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.error().message.find("different devices (input 0 is on "
                                       "cpu, input 1 on cuda)"),
            std::string::npos)
      << mixed.error().message;
  auto added = ein::nothrow::elementwise("add", {a, d});
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().message.find("different devices"), std::string::npos);
  auto read = ein::nothrow::get(d, {0, 0});
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("copy it with .to(ein::cpu)"),
            std::string::npos)
      << read.error().message;
  EXPECT_THROW(d.at<float>({0, 0}), ein::Error);
  // A wrong pattern on the device is einc's diagnostic, as on the CPU.
  auto bad = ein::nothrow::rearrange(d, "a b -> a c");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("^"), std::string::npos);
}

TEST(Device, SaveNpyOfADeviceTensor) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor x = iota({3, 4});
  ein::Tensor view = ein::rearrange(x.to(ein::cuda), "a b -> b a");
  std::string path = ::testing::TempDir() + "/ein-device-" +
                     std::to_string(::getpid()) + ".npy";
  ein::save_npy(view, path);
  ein::Tensor back = ein::load_npy(path);
  std::remove(path.c_str());
  expectTensor(back, {4, 3}, [&](const std::vector<int64_t> &i) {
    return element(x, {i[1], i[0]});
  });
}

TEST(Device, ModuleCallsRunOnTheDevice) {
  SKIP_WITHOUT_CUDA();
  ein::Module mod = ein::Module::from_source(
      "def scores(q: f32[\"b s d\"], k: f32[\"b t d\"]) -> f32[\"b s t\"]:\n"
      "    return einsum(q, k, \"b s d, b t d -> b s t\")\n");
  ein::Tensor q = iota({2, 3, 4}), k = iota({2, 5, 4}, [](int64_t i) {
                                     return float(i % 5) - 1.0f;
                                   });
  auto [s] = mod.call<1>("scores", q.to(ein::cuda), k.to(ein::cuda));
  EXPECT_EQ(s.device(), ein::cuda);
  expectTensor(s.to(ein::cpu), {2, 3, 5}, [&](const std::vector<int64_t> &i) {
    double acc = 0;
    for (int64_t d = 0; d < 4; ++d)
      acc += element(q, {i[0], i[1], d}) * element(k, {i[0], i[2], d});
    return acc;
  });
  // Other sizes reuse the size-generic library.
  size_t before = ein::cache_stats().compiled;
  auto [s2] = mod.call<1>("scores", iota({1, 2, 4}).to(ein::cuda),
                          iota({1, 3, 4}).to(ein::cuda));
  EXPECT_EQ(s2.shape(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(ein::cache_stats().compiled, before);
}

TEST(Device, ViewsOfBorrowedDeviceMemory) {
  SKIP_WITHOUT_CUDA();
  // Another framework's device memory (the Python package's DLPack inputs):
  // a transposed view of it, read in place by a module function.
  ein::Tensor x = iota({4, 6});
  ein::Tensor d = x.to(ein::cuda);
  auto v = ein::nothrow::view(d.data(), ein::f32, {6, 4}, {1, 6}, ein::cuda);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->device(), ein::cuda);
  EXPECT_EQ(v->data(), d.data());
  ein::Module mod = ein::Module::from_source(
      "def twice(x: f32[\"a b\"]) -> f32[\"a b\"]:\n    return x * 2.0\n");
  auto [y] = mod.call<1>("twice", *v);
  EXPECT_EQ(y.device(), ein::cuda);
  expectTensor(y.to(ein::cpu), {6, 4}, [&](const std::vector<int64_t> &i) {
    return 2 * element(x, {i[1], i[0]});
  });
}

TEST(Device, ThreadsShareTheDeviceCaches) {
  SKIP_WITHOUT_CUDA();
  ein::Tensor x = iota({4, 6});
  ein::Tensor d = x.to(ein::cuda);
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      ein::Tensor s = ein::reduce(d, "a b -> b", ein::sum).to(ein::cpu);
      bool good = true;
      for (int64_t b = 0; b < 6; ++b) {
        double want = 0;
        for (int64_t a = 0; a < 4; ++a)
          want += element(x, {a, b});
        good &= std::fabs(element(s, {b}) - want) < 1e-4;
      }
      ok[t] = good;
    });
  for (auto &t : threads)
    t.join();
  for (int t = 0; t < 8; ++t)
    EXPECT_TRUE(ok[t]) << "thread " << t;
}

} // namespace
