// The C++ API's caches under concurrent calls: 8 threads share compiled
// kernels and plans, and every result is still right.
#include "APITestHelpers.h"

#include <atomic>
#include <thread>

using namespace ein_api_test;
using Index = std::vector<int64_t>;

namespace {

TEST(Concurrency, EightThreadsShareTheCache) {
  ein::Tensor a = iota({6, 5});
  ein::Tensor b = iota({5, 4}, [](int64_t i) { return float(i % 3); });
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        // Half the threads share one pattern; each also has its own sizes.
        int64_t n = 1 + (t + round) % 4;
        ein::Tensor x = iota({n, 5});
        ein::Tensor y = ein::einsum("i j, j k -> i k", x, b);
        ein::Tensor s = ein::reduce(ein::rearrange(x, "i j -> j i"), "j i -> j",
                                    t % 2 ? ein::sum : ein::max);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t k = 0; k < 4; ++k) {
            double acc = 0;
            for (int64_t j = 0; j < 5; ++j)
              acc += element(x, {i, j}) * element(b, {j, k});
            if (std::fabs(element(y, {i, k}) - acc) > 1e-4)
              ++wrong;
          }
        for (int64_t j = 0; j < 5; ++j) {
          double acc = t % 2 ? 0 : -1e30;
          for (int64_t i = 0; i < n; ++i)
            acc = t % 2 ? acc + element(x, {i, j})
                        : std::max(acc, element(x, {i, j}));
          if (std::fabs(element(s, {j}) - acc) > 1e-4)
            ++wrong;
        }
      }
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(wrong.load(), 0);
  (void)a;
}

} // namespace
