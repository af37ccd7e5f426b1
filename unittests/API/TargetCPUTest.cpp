// ein::set_cpu: kernels compiled for a named CPU (einc's --cpu), checked
// against naive loops; bad names and CPUs this host cannot run are errors.
#include "APITestHelpers.h"

using namespace ein_api_test;
using Index = std::vector<int64_t>;

namespace {

/// Restores the host target when a test ends, passed or not.
struct HostAfterwards {
  ~HostAfterwards() { ein::set_cpu(""); }
};

TEST(TargetCPU, KernelsForAnAVX2CPUAgreeWithLoops) {
  HostAfterwards restore;
  ein::Tensor a = iota({11, 37});
  ein::Tensor b = iota({37, 19}, [](int64_t i) { return float(i % 7) - 3; });
  auto want = [&](const Index &i) {
    double acc = 0;
    for (int64_t k = 0; k < 37; ++k)
      acc += element(a, {i[0], k}) * element(b, {k, i[1]});
    return acc;
  };
  expectTensor(ein::einsum("m k, k n -> m n", a, b), {11, 19}, want);
  size_t before = ein::cache_stats().compiled + ein::cache_stats().loaded;
  ein::set_cpu("x86-64-v3");
  // The same call compiles again, for the other CPU (not the host's kernel
  // from the cache).
  expectTensor(ein::einsum("m k, k n -> m n", a, b), {11, 19}, want);
  EXPECT_GT(ein::cache_stats().compiled + ein::cache_stats().loaded, before);
  ein::set_cpu("x86-64-v3", "-fma");
  expectTensor(ein::einsum("m k, k n -> m n", a, b), {11, 19}, want);
}

TEST(TargetCPU, UnknownNamesAreUsageErrorsWithASuggestion) {
  HostAfterwards restore;
  auto name = ein::nothrow::set_cpu("skylake-avx51");
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().kind, ein::ErrorInfo::Kind::Usage);
  EXPECT_NE(name.error().message.find("did you mean 'skylake-avx512'?"),
            std::string::npos)
      << name.error().message;
  auto feature = ein::nothrow::set_cpu("", "+avx512ff");
  ASSERT_FALSE(feature);
  EXPECT_NE(feature.error().message.find("did you mean 'avx512f'?"),
            std::string::npos)
      << feature.error().message;
  EXPECT_THROW(ein::set_cpu("", "avx2"), ein::Error);
}

TEST(TargetCPU, ACPUThisHostCannotRunIsRefused) {
  HostAfterwards restore;
  auto v4 = ein::nothrow::set_cpu("x86-64-v4");
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd")) {
    ASSERT_TRUE(v4) << v4.error().message;
    ein::Tensor x = iota({5, 33});
    expectTensor(ein::reduce(x, "a b -> b", ein::Reduction::Sum), {33},
                 [&](const Index &i) {
                   double acc = 0;
                   for (int64_t r = 0; r < 5; ++r)
                     acc += element(x, {r, i[0]});
                   return acc;
                 });
  } else {
    ASSERT_FALSE(v4);
    EXPECT_NE(v4.error().message.find("cannot run code for it"),
              std::string::npos)
        << v4.error().message;
  }
}

} // namespace
