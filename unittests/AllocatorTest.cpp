// Tests of the caching allocator of compiled code's temporaries: reuse of a
// freed block, alignment, size classes, the cache bound, and concurrent use.
#include "ein/Runtime/Allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace ein::runtime {
namespace {

TEST(CachingAllocator, ReusesAFreedBlockOfTheSameClass) {
  CachingAllocator a(1 << 20);
  void *p = a.allocate(1000);
  ASSERT_NE(p, nullptr);
  a.deallocate(p);
  EXPECT_EQ(a.stats().cachedBytes, CachingAllocator::classSize(1000));
  // 1000 and 1020 share a class (897..1024): the same block comes back.
  void *q = a.allocate(1020);
  EXPECT_EQ(q, p);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.frees, 1u);
  EXPECT_EQ(s.cachedBytes, 0u);
  // Another class does not take it.
  a.deallocate(q);
  void *r = a.allocate(5000);
  EXPECT_NE(r, q);
  EXPECT_EQ(a.stats().misses, 2u);
  a.deallocate(r);
}

TEST(CachingAllocator, CountsLiveBytesAndTheirPeak) {
  CachingAllocator a(1 << 20);
  // 1000 bytes take a block of 1024, 3000 one of 3072; an over-aligned
  // block is uncached and counts the size asked.
  void *p = a.allocate(1000);
  void *q = a.allocate(3000);
  EXPECT_EQ(a.stats().liveBytes, 1024u + 3072u);
  a.deallocate(p);
  void *r = a.allocate(100, 4096);
  EXPECT_EQ(a.stats().liveBytes, 3072u + 100u);
  EXPECT_EQ(a.stats().peakLiveBytes, 1024u + 3072u);
  a.resetPeak();
  EXPECT_EQ(a.stats().peakLiveBytes, 3072u + 100u);
  // A block from the cache counts as live again.
  void *s = a.allocate(1000);
  EXPECT_EQ(s, p);
  EXPECT_EQ(a.stats().peakLiveBytes, 1024u + 3072u + 100u);
  a.deallocate(q);
  a.deallocate(r);
  a.deallocate(s);
  EXPECT_EQ(a.stats().liveBytes, 0u);
}

TEST(CachingAllocator, CountsRequestedBytesApartFromSizeClasses) {
  CachingAllocator a(1 << 20);
  // 1000 and 3000 bytes asked, in blocks of 1024 and 3072.
  void *p = a.allocate(1000);
  void *q = a.allocate(3000);
  EXPECT_EQ(a.stats().liveRequestedBytes, 4000u);
  EXPECT_EQ(a.stats().peakRequestedBytes, 4000u);
  a.deallocate(p);
  EXPECT_EQ(a.stats().liveRequestedBytes, 3000u);
  // A cached block of class 1024 reused for 900 bytes counts 900.
  void *r = a.allocate(900);
  EXPECT_EQ(r, p);
  EXPECT_EQ(a.stats().liveRequestedBytes, 3900u);
  EXPECT_EQ(a.stats().liveBytes, 1024u + 3072u);
  EXPECT_EQ(a.stats().peakRequestedBytes, 4000u);
  a.resetPeak();
  EXPECT_EQ(a.stats().peakRequestedBytes, 3900u);
  a.deallocate(q);
  a.deallocate(r);
  EXPECT_EQ(a.stats().liveRequestedBytes, 0u);
  EXPECT_EQ(a.stats().peakRequestedBytes, 3900u);
}

TEST(CachingAllocator, SizeClassesAreFourPerPowerOfTwo) {
  EXPECT_EQ(CachingAllocator::classSize(0), 64u);
  EXPECT_EQ(CachingAllocator::classSize(1), 64u);
  EXPECT_EQ(CachingAllocator::classSize(64), 64u);
  EXPECT_EQ(CachingAllocator::classSize(65), 80u);
  EXPECT_EQ(CachingAllocator::classSize(80), 80u);
  EXPECT_EQ(CachingAllocator::classSize(81), 96u);
  EXPECT_EQ(CachingAllocator::classSize(128), 128u);
  EXPECT_EQ(CachingAllocator::classSize(129), 160u);
  EXPECT_EQ(CachingAllocator::classSize(1000), 1024u);
  EXPECT_EQ(CachingAllocator::classSize(64u << 20), 64u << 20);
  EXPECT_EQ(CachingAllocator::classSize((64u << 20) + 1), 80u << 20);
  // Every size fits its class, and a class wastes at most a quarter.
  for (size_t size = 1; size < (1u << 20); size = size * 5 / 4 + 1) {
    size_t c = CachingAllocator::classSize(size);
    EXPECT_GE(c, size);
    EXPECT_LE(c, size <= 64 ? 64 : size + size / 4 + 1) << size;
  }
}

TEST(CachingAllocator, BlocksAreAlignedAndUsable) {
  CachingAllocator a(1 << 20);
  std::vector<void *> blocks;
  for (size_t size : {1u, 7u, 64u, 100u, 4096u, 100000u}) {
    void *p = a.allocate(size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << size;
    std::memset(p, 0xab, size);
    blocks.push_back(p);
  }
  // A larger alignment is kept (served uncached).
  for (size_t alignment : {128u, 4096u}) {
    void *p = a.allocate(300, alignment);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
    std::memset(p, 0xcd, 300);
    a.deallocate(p);
  }
  EXPECT_EQ(a.stats().released, 2u);
  EXPECT_EQ(a.allocate(16, 96), nullptr); // not a power of two
  for (void *p : blocks)
    a.deallocate(p);
}

TEST(CachingAllocator, CacheHoldsAtMostItsLimit) {
  CachingAllocator a(10000);
  void *p = a.allocate(4096), *q = a.allocate(4096), *r = a.allocate(4096);
  a.deallocate(p);
  a.deallocate(q);
  // A third 4096-byte block would take the cache past 10000 bytes.
  a.deallocate(r);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.cachedBytes, 8192u);
  EXPECT_EQ(s.released, 1u);
  a.trim();
  EXPECT_EQ(a.stats().cachedBytes, 0u);
  // A cache of 0 bytes holds nothing: every allocation asks the system.
  CachingAllocator none(0);
  none.deallocate(none.allocate(10));
  EXPECT_EQ(none.stats().released, 1u);
  none.deallocate(none.allocate(10));
  EXPECT_EQ(none.stats().misses, 2u);
  EXPECT_EQ(none.stats().hits, 0u);
}

TEST(CachingAllocator, EightThreadsConcurrently) {
  CachingAllocator a(64 << 20);
  constexpr int kThreads = 8, kRounds = 2000;
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::pair<unsigned char *, size_t>> live;
      for (int i = 0; i < kRounds; ++i) {
        size_t size = 1 + size_t((i * 37 + t * 101) % 5000);
        auto *p = static_cast<unsigned char *>(a.allocate(size));
        if (!p) {
          ++bad[t];
          continue;
        }
        // Each block holds its owner's byte until it is freed: a block
        // handed to two threads at once would be overwritten.
        std::memset(p, t + 1, size);
        live.push_back({p, size});
        if (live.size() > 4 || i % 3 == 0) {
          auto [q, n] = live.front();
          live.erase(live.begin());
          for (size_t k = 0; k < n; ++k)
            if (q[k] != t + 1) {
              ++bad[t];
              break;
            }
          a.deallocate(q);
        }
      }
      for (auto [q, n] : live)
        a.deallocate(q);
    });
  for (auto &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(bad[t], 0) << "thread " << t;
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.hits + s.misses, uint64_t(kThreads) * kRounds);
  EXPECT_EQ(s.frees, uint64_t(kThreads) * kRounds);
  EXPECT_GT(s.hits, 0u);
}

} // namespace
} // namespace ein::runtime
