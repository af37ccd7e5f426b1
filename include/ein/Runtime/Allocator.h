// The caching allocator behind the temporaries of compiled code: the buffers
// a compiled function allocates and frees on every call come back from a
// cache instead of the system, so a second call reuses the first call's
// memory (no page faults anew).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ein::runtime {

/// Counters of a CachingAllocator (a snapshot).
struct AllocatorStats {
  uint64_t hits = 0;        // allocations served from the cache
  uint64_t misses = 0;      // allocations that asked the system
  uint64_t frees = 0;       // deallocations
  uint64_t released = 0;    // freed blocks returned to the system
  uint64_t cachedBytes = 0; // bytes held in the cache now
  uint64_t liveBytes = 0;   // bytes of blocks allocated and not yet freed
  /// The most liveBytes has been since the allocator began or resetPeak:
  /// the peak of a compiled call's temporaries at their size classes.
  uint64_t peakLiveBytes = 0;
  /// The bytes asked for by the blocks live now (liveBytes less the
  /// rounding up to size classes, up to ~19% of a block), and their peak
  /// since the allocator began or resetPeak: the peak of a compiled call's
  /// temporaries as the code sized them, which `einc train` compares with
  /// `einc report --train`'s peak.
  uint64_t liveRequestedBytes = 0;
  uint64_t peakRequestedBytes = 0;
};

/// A thread-safe allocator with size-bucketed free lists. Sizes round up to
/// a size class (four classes per power of two, at least 64 bytes); a freed
/// block goes to its class's free list unless the cache would then hold more
/// than `cacheLimit` bytes, and an allocation takes a block of its class
/// from the list when there is one. Blocks are 64-byte aligned; a larger
/// alignment is served uncached. One lock guards the lists: allocations are
/// per loop nest, not per element, so it is rarely contended.
class CachingAllocator {
public:
  static constexpr size_t kAlignment = 64;

  explicit CachingAllocator(size_t cacheLimit);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;

  /// A block of at least `size` bytes aligned to `alignment` (a power of
  /// two; at least kAlignment is given), or null when the system has none.
  void *allocate(size_t size, size_t alignment = kAlignment);
  /// Returns a block of this allocator (null is ignored).
  void deallocate(void *p);
  /// Returns every cached block to the system.
  void trim();
  AllocatorStats stats() const;
  /// Starts a new peak of live bytes from the bytes live now.
  void resetPeak();
  size_t cacheLimit() const { return limit; }

  /// The size class of `size`: the bytes a block for it holds.
  static size_t classSize(size_t size);

private:
  static constexpr unsigned kClasses = 256;
  static unsigned classIndex(size_t size);
  static size_t sizeOfClass(unsigned index);
  /// Counts a block of `bytes` for `requested` bytes asked live (the lock
  /// held).
  void noteAllocated(size_t bytes, size_t requested);

  size_t limit;
  mutable std::mutex mutex;
  std::array<std::vector<void *>, kClasses> freeLists;
  AllocatorStats counters;
};

/// The process's allocator of compiled code's temporaries. Its cache limit
/// is EIN_ALLOC_CACHE_MIB mebibytes when set (0 turns the cache off), else
/// 2 GiB.
CachingAllocator &temporaryAllocator();

} // namespace ein::runtime

// The allocation functions compiled code calls (MLIR's generic allocation
// functions, finalize-memref-to-llvm{use-generic-functions}), over
// temporaryAllocator(). The JIT resolves the code's calls to these.
extern "C" {
void *ein_runtime_alloc(uint64_t size);
void *ein_runtime_aligned_alloc(uint64_t alignment, uint64_t size);
void ein_runtime_free(void *p);
}
