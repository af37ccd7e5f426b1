// Tests of whole calls as CUDA Graphs (ein_cuda_graph.cuh) in the emulation:
// which call runs directly, is captured or is replayed, that a replay reads
// the arguments' current values, and a take's status through a graph.
#include "CUDARuntimeTestUtil.h"
// clang-format off
#include "ein_cuda_program.cuh"
#include "ein_cuda_graph.cuh"
// clang-format on

#include <gtest/gtest.h>

namespace {

struct Twice {
  EIN_HD float operator()(float x) const { return 2.0f * x; }
};

/// A stand-in for a generated entry point: y = (2 x) w through a temporary
/// (stream-ordered memory, freed in the call) and the GEMM's stand-in, for
/// an n x n x and w (column-major: the GEMM's own layout); with `ids`, the
/// index status of a take whose ids must be below n. Counts its calls.
struct Entry {
  const float *x, *w;
  float *y;
  const int64_t *ids = nullptr; // 2 ids
  int64_t n;
  int calls = 0;

  int operator()(cudaStream_t stream) {
    ++calls;
    unsigned long long *status = ids ? ein_status_begin(stream) : nullptr;
    const int64_t sizes[2] = {n, n};
    void *owner = nullptr;
    EinView<float, 2> twice = ein_temp<float, 2>(stream, sizes, &owner);
    EinView<const float, 2> in{x, {n, n}, {n, 1}};
    ein_map(stream, Twice(), twice, in);
    EinGemm g{};
    g.a_type = g.b_type = g.c_type = g.d_type = EIN_DT_F32;
    g.m = g.n = g.k = n;
    g.a = twice.data, g.lda = n, g.stride_a = n * n;
    g.b = w, g.ldb = n, g.stride_b = n * n;
    g.c = y, g.ldc = n, g.stride_c = n * n;
    g.d = y, g.ldd = n, g.stride_d = n * n;
    g.batch = 1, g.alpha = 1, g.beta = 0;
    ein_gemm(g, nullptr, 0, stream);
    ein_free(stream, owner);
    if (status) {
      // The take's kernel: counts the ids out of range.
      const int64_t *id = ids;
      const int64_t limit = n;
      ein_emu::enqueue([status, id, limit] {
        for (int i = 0; i < 2; ++i)
          if (id[i] < 0 || id[i] >= limit)
            ++*status;
      });
      if (ein_status_end(stream, status))
        return 6; // EIN_ERR_INDEX
    }
    return 0;
  }
};

/// (2 x) w for column-major n x n matrices, in double.
std::vector<double> expected(const std::vector<float> &x,
                             const std::vector<float> &w, int64_t n) {
  std::vector<double> y(n * n);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < n; ++p)
        y[j * n + i] += 2.0 * x[p * n + i] * w[j * n + p];
  return y;
}

void expectNear(const std::vector<float> &got, const std::vector<double> &want,
                const char *when) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
        << when << ", element " << i;
}

std::string keyOf(Entry &e) {
  void *data[3] = {const_cast<float *>(e.x), const_cast<float *>(e.w), e.y};
  const int64_t ranks[3] = {2, 2, 2};
  const int64_t sizes[2] = {e.n, e.n}, strides[2] = {e.n, 1};
  const int64_t *s[3] = {sizes, sizes, sizes},
                *t[3] = {strides, strides, strides};
  return ein_graph_key(3, data, ranks, s, t);
}

TEST(CUDAGraphTest, DirectThenCapturedThenReplayedWithCurrentValues) {
  const int64_t n = 5;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(n * n), w(n * n), y(n * n, -1);
  for (float &v : x)
    v = u(rng);
  for (float &v : w)
    v = u(rng);
  Entry entry{x.data(), w.data(), y.data(), nullptr, n};
  EinGraphCache cache;
  const size_t launches = ein_emu_graph_launches();
  // First call: direct.
  ASSERT_EQ(ein_graph_call(cache, keyOf(entry), nullptr, entry), 0);
  EXPECT_EQ(entry.calls, 1);
  EXPECT_EQ(ein_emu_graph_launches(), launches);
  expectNear(y, expected(x, w, n), "direct call");
  // Second: captured (the entry runs once, recording) and launched.
  for (float &v : x)
    v = u(rng);
  std::fill(y.begin(), y.end(), -1);
  ASSERT_EQ(ein_graph_call(cache, keyOf(entry), nullptr, entry), 0);
  EXPECT_EQ(entry.calls, 2);
  EXPECT_EQ(ein_emu_graph_launches(), launches + 1);
  expectNear(y, expected(x, w, n), "captured call");
  // Third and fourth: replays, without the entry, of the values in x and w
  // now (the graph holds their addresses, not their contents).
  for (int round = 0; round < 2; ++round) {
    for (float &v : x)
      v = u(rng);
    for (float &v : w)
      v = u(rng);
    std::fill(y.begin(), y.end(), -1);
    ASSERT_EQ(ein_graph_call(cache, keyOf(entry), nullptr, entry), 0);
    EXPECT_EQ(entry.calls, 2);
    EXPECT_EQ(ein_emu_graph_launches(), launches + 2 + round);
    expectNear(y, expected(x, w, n), "replay");
  }
  // Other arguments (another output buffer) are another graph: direct first.
  std::vector<float> y2(n * n, -1);
  Entry other = entry;
  other.y = y2.data();
  other.calls = 0;
  ASSERT_EQ(ein_graph_call(cache, keyOf(other), nullptr, other), 0);
  EXPECT_EQ(other.calls, 1);
  expectNear(y2, expected(x, w, n), "other arguments");
  EXPECT_EQ(cache.entries.size(), 2u);
}

TEST(CUDAGraphTest, TakeStatusThroughTheGraph) {
  const int64_t n = 3;
  std::vector<float> x(n * n, 1), w(n * n, 1), y(n * n);
  std::vector<int64_t> ids = {0, 2};
  Entry entry{x.data(), w.data(), y.data(), ids.data(), n};
  EinGraphCache cache;
  for (int call = 0; call < 2; ++call)
    ASSERT_EQ(ein_graph_call(cache, keyOf(entry), nullptr, entry), 0);
  ASSERT_TRUE(cache.entries.front().exec) << "the call was not captured";
  EXPECT_TRUE(cache.entries.front().status.used);
  // A replay sees an id out of range, and the next one its correction.
  ids[1] = 3;
  EXPECT_EQ(ein_graph_call(cache, keyOf(entry), nullptr, entry), 6);
  ids[1] = 1;
  EXPECT_EQ(ein_graph_call(cache, keyOf(entry), nullptr, entry), 0);
  ids[0] = -1;
  EXPECT_EQ(ein_graph_call(cache, keyOf(entry), nullptr, entry), 6);
  EXPECT_EQ(entry.calls, 2);
}

TEST(CUDAGraphTest, ACallThatWaitsForItsStreamRunsDirectly) {
  // A call that synchronises (as a sharded function's collectives do)
  // cannot be captured: it runs directly, every time, with its result.
  int calls = 0;
  std::vector<int> out(4, 0);
  auto waits = [&](cudaStream_t stream) {
    ++calls;
    int *p = out.data();
    ein_emu::enqueue([p] { ++p[0]; });
    if (cudaStreamSynchronize(stream) != cudaSuccess)
      return 1; // an entry point aborts here; this one reports
    return 0;
  };
  EinGraphCache cache;
  const size_t launches = ein_emu_graph_launches();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(ein_graph_call(cache, "k", nullptr, waits), 0);
  EXPECT_TRUE(cache.entries.front().refused);
  EXPECT_EQ(ein_emu_graph_launches(), launches);
  // Direct, captured (refused, its recorded work dropped), then direct
  // again and twice more: each direct call's work ran once.
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(out[0], 4);
}

TEST(CUDAGraphTest, KeepsTheMostRecentArgumentSets) {
  int calls = 0;
  auto count = [&](cudaStream_t) { return ++calls, 0; };
  EinGraphCache cache;
  for (int k = 0; k < int(kEinGraphs) + 2; ++k)
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(ein_graph_call(cache, std::to_string(k), nullptr, count), 0);
  EXPECT_EQ(cache.entries.size(), kEinGraphs);
  EXPECT_EQ(cache.entries.front().key, std::to_string(kEinGraphs + 1));
  // Each set: one direct call and one capture; the third call a replay.
  EXPECT_EQ(calls, 2 * (int(kEinGraphs) + 2));
}

} // namespace
