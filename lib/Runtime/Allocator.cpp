// The caching allocator of compiled code's temporaries; see Allocator.h.
#include "ein/Runtime/Allocator.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ein::runtime {

namespace {

/// Sits in the kAlignment bytes before each block: the block's class (or
/// kUncached) and where the system's allocation starts.
struct Header {
  uint64_t magic;
  uint32_t cls;
  uint32_t unused;
  uint64_t offset;    // from the system's allocation to the block
  uint64_t bytes;     // the block's size (its class's, or the size asked)
  uint64_t requested; // the size asked
};
static_assert(sizeof(Header) <= CachingAllocator::kAlignment);

constexpr uint64_t kMagic = 0x65696e616c6c6f63; // "einalloc"
constexpr uint32_t kUncached = ~0u;

Header *headerOf(void *p) {
  return reinterpret_cast<Header *>(static_cast<char *>(p) -
                                    CachingAllocator::kAlignment);
}

} // namespace

CachingAllocator::CachingAllocator(size_t cacheLimit) : limit(cacheLimit) {}

CachingAllocator::~CachingAllocator() { trim(); }

unsigned CachingAllocator::classIndex(size_t size) {
  if (size <= kAlignment)
    return 0;
  // 2^(e-1) < size <= 2^e; four classes split each such range.
  unsigned e = 64 - unsigned(__builtin_clzll(uint64_t(size - 1)));
  size_t base = size_t(1) << (e - 1), step = base / 4;
  size_t j = (size - base + step - 1) / step; // 1..4
  return (e - 7) * 4 + unsigned(j);           // 64 < size <= 128 -> 1..4
}

size_t CachingAllocator::sizeOfClass(unsigned index) {
  if (index == 0)
    return kAlignment;
  unsigned e = (index - 1) / 4 + 7, j = (index - 1) % 4 + 1;
  size_t base = size_t(1) << (e - 1);
  return base + j * (base / 4);
}

size_t CachingAllocator::classSize(size_t size) {
  return sizeOfClass(classIndex(size));
}

void *CachingAllocator::allocate(size_t size, size_t alignment) {
  if (alignment < kAlignment)
    alignment = kAlignment;
  // Sizes near SIZE_MAX have no class (and no memory).
  if (size > (size_t(1) << 56) || (alignment & (alignment - 1)) != 0)
    return nullptr;
  bool cached = alignment == kAlignment;
  unsigned cls = cached ? classIndex(size) : kUncached;
  size_t bytes = cached ? sizeOfClass(cls) : size;
  if (cached) {
    std::lock_guard<std::mutex> lock(mutex);
    auto &list = freeLists[cls];
    if (!list.empty()) {
      void *p = list.back();
      list.pop_back();
      counters.cachedBytes -= bytes;
      ++counters.hits;
      noteAllocated(bytes, size);
      headerOf(p)->requested = size;
      return p;
    }
    ++counters.misses;
  } else {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.misses;
  }
  // The header takes `alignment` bytes before the block (at least
  // kAlignment), so the block keeps the alignment.
  void *base = nullptr;
  if (posix_memalign(&base, alignment, alignment + bytes) != 0)
    return nullptr;
  void *p = static_cast<char *>(base) + alignment;
  Header *h = headerOf(p);
  h->magic = kMagic;
  h->cls = cls;
  h->unused = 0;
  h->offset = alignment;
  h->bytes = bytes;
  h->requested = size;
  {
    std::lock_guard<std::mutex> lock(mutex);
    noteAllocated(bytes, size);
  }
  return p;
}

void CachingAllocator::deallocate(void *p) {
  if (!p)
    return;
  Header *h = headerOf(p);
  void *base = static_cast<char *>(p) - h->offset;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.frees;
    counters.liveBytes -= h->bytes;
    counters.liveRequestedBytes -= h->requested;
    if (h->cls != kUncached) {
      size_t bytes = sizeOfClass(h->cls);
      if (counters.cachedBytes + bytes <= limit) {
        freeLists[h->cls].push_back(p);
        counters.cachedBytes += bytes;
        return;
      }
    }
    ++counters.released;
  }
  std::free(base);
}

void CachingAllocator::noteAllocated(size_t bytes, size_t requested) {
  counters.liveBytes += bytes;
  counters.peakLiveBytes = std::max(counters.peakLiveBytes, counters.liveBytes);
  counters.liveRequestedBytes += requested;
  counters.peakRequestedBytes =
      std::max(counters.peakRequestedBytes, counters.liveRequestedBytes);
}

void CachingAllocator::resetPeak() {
  std::lock_guard<std::mutex> lock(mutex);
  counters.peakLiveBytes = counters.liveBytes;
  counters.peakRequestedBytes = counters.liveRequestedBytes;
}

void CachingAllocator::trim() {
  std::array<std::vector<void *>, kClasses> lists;
  {
    std::lock_guard<std::mutex> lock(mutex);
    lists.swap(freeLists);
    counters.cachedBytes = 0;
  }
  for (auto &list : lists)
    for (void *p : list)
      std::free(static_cast<char *>(p) - headerOf(p)->offset);
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

CachingAllocator &temporaryAllocator() {
  // Never destroyed: compiled code may run in other threads at exit.
  static CachingAllocator *allocator = [] {
    size_t limit = size_t(2) << 30;
    if (const char *mib = std::getenv("EIN_ALLOC_CACHE_MIB"); mib && *mib) {
      char *end = nullptr;
      unsigned long long v = std::strtoull(mib, &end, 10);
      if (end && *end == '\0' && v < (1ull << 40))
        limit = size_t(v) << 20;
    }
    return new CachingAllocator(limit);
  }();
  return *allocator;
}

} // namespace ein::runtime

extern "C" {
void *ein_runtime_alloc(uint64_t size) {
  return ein::runtime::temporaryAllocator().allocate(size);
}
void *ein_runtime_aligned_alloc(uint64_t alignment, uint64_t size) {
  return ein::runtime::temporaryAllocator().allocate(size, alignment);
}
void ein_runtime_free(void *p) {
  ein::runtime::temporaryAllocator().deallocate(p);
}
}
