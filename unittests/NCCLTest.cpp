// The NCCL communicator (lib/Target/CUDA/NCCL.h) over emulated NCCL on
// simulated ranks: every collective on 1, 2, 3 and 4 ranks against a serial
// loop written here, a split, the refusals, a rank that never arrives (an
// error naming NCCL and the abort on the others), a device stream that
// never finishes or fails (the timeout and ncclCommAbort); compiled code's
// collective entry points (ein/Runtime/CollectiveCalls.h) with NCCL
// communicators as the rank's axis groups; and libnccl.so.2's loading: a
// missing library is an error by name, the toolkit's one loads.
#include "../lib/Target/CUDA/NCCL.h"
#include "ein/Runtime/CollectiveCalls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>
#include <unistd.h>

using namespace ein;
using runtime::StorageType;

namespace {

/// Runs `body` on every rank of `n` simulated ranks, each through its NCCL
/// communicator (emulated NCCL over the simulated rank).
void onNcclRanks(int n, const std::function<void(Communicator &)> &body,
                 double timeout = 30) {
  auto ranks = simulatedRanks(n);
  std::vector<std::thread> threads;
  for (auto &c : ranks) {
    c->setTimeout(timeout);
    threads.emplace_back([&body, host = c.get()] {
      auto nccl = ncclCommunicator(*host, emulatedNccl(), NcclStream{});
      ASSERT_TRUE(nccl) << nccl.error().message;
      body(**nccl);
    });
  }
  for (auto &t : threads)
    t.join();
}

float input(int rank, int64_t i) {
  return float(((rank * 7919 + i * 104729) % 2003) - 1000) / 37.0f;
}

class NcclCollectives : public ::testing::TestWithParam<int> {};

TEST_P(NcclCollectives, AllReduceSumMaxMin) {
  int n = GetParam();
  const int64_t count = 257;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    std::vector<float> expected(count);
    for (int64_t i = 0; i < count; ++i) {
      expected[i] = input(0, i);
      for (int r = 1; r < n; ++r)
        expected[i] = op == ReduceOp::Sum ? expected[i] + input(r, i)
                      : op == ReduceOp::Max
                          ? std::max(expected[i], input(r, i))
                          : std::min(expected[i], input(r, i));
    }
    onNcclRanks(n, [&](Communicator &c) {
      std::vector<float> data(count);
      for (int64_t i = 0; i < count; ++i)
        data[i] = input(c.rank(), i);
      auto r = c.allReduce(data.data(), StorageType::F32, count, op);
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_EQ(data, expected) << reduceOpName(op) << " on rank " << c.rank();
    });
  }
}

TEST_P(NcclCollectives, GatherScatterAllToAllBroadcast) {
  int n = GetParam();
  const int64_t count = 6;
  onNcclRanks(n, [&](Communicator &c) {
    int me = c.rank();
    EXPECT_EQ(c.size(), n);
    EXPECT_EQ(c.name(),
              n == 1 ? "emulated NCCL (1 rank)"
                     : "emulated NCCL (" + std::to_string(n) + " ranks)");
    // all-gather: block r is rank r's values.
    std::vector<int32_t> mine(count), all(count * n);
    for (int64_t i = 0; i < count; ++i)
      mine[i] = int32_t(100 * me + i);
    ASSERT_TRUE(c.allGather(mine.data(), all.data(), StorageType::I32, count));
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        EXPECT_EQ(all[r * count + i], 100 * r + i);
    // reduce-scatter: block `me` of the sum over the ranks.
    std::vector<double> send(count * n), recv(count);
    for (int64_t i = 0; i < count * n; ++i)
      send[i] = 0.5 * (me + 1) * double(i);
    ASSERT_TRUE(c.reduceScatter(send.data(), recv.data(), StorageType::F64,
                                count * n, ReduceOp::Sum));
    double ranksSum = 0.5 * n * (n + 1) / 2.0;
    for (int64_t i = 0; i < count; ++i)
      EXPECT_DOUBLE_EQ(recv[i], ranksSum * double(me * count + i));
    // all-to-all (send/recv in a group): block r goes to rank r.
    std::vector<int64_t> out(count * n), in(count * n);
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        out[r * count + i] = 1000 * me + 10 * r + i;
    ASSERT_TRUE(c.allToAll(out.data(), in.data(), StorageType::I64, count));
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        EXPECT_EQ(in[r * count + i], 1000 * r + 10 * me + i);
    // broadcast from the last rank, in place.
    std::vector<float> b(count, float(me));
    ASSERT_TRUE(c.broadcast(b.data(), StorageType::F32, count, n - 1));
    EXPECT_EQ(b, std::vector<float>(count, float(n - 1)));
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclCollectives, ::testing::Values(1, 2, 3, 4));

/// The entry points compiled code calls, in a scope whose group is the
/// rank's NCCL communicator (the collectives on its stream, the kernels'):
/// a sum and a reduce-scatter on 3 ranks against serial loops.
TEST(NcclCommunicator, CompiledCollectivesEntryPoints) {
  const int n = 3;
  const int64_t count = 6;
  onNcclRanks(n, [&](Communicator &c) {
    CollectiveScope scope({&c});
    std::vector<float> data(count), recv(count / n);
    for (int64_t i = 0; i < count; ++i)
      data[i] = input(c.rank(), i);
    std::vector<float> send = data;
    ein_comm_all_reduce(reinterpret_cast<int64_t>(data.data()), count,
                        int32_t(StorageType::F32),
                        int32_t(CollectiveReduction::Sum), 0);
    ein_comm_reduce_scatter(reinterpret_cast<int64_t>(send.data()),
                            reinterpret_cast<int64_t>(recv.data()), count,
                            int32_t(StorageType::F32),
                            int32_t(CollectiveReduction::Sum), 0);
    ASSERT_FALSE(scope.error()) << scope.error()->message;
    for (int64_t i = 0; i < count; ++i) {
      float sum = input(0, i);
      for (int r = 1; r < n; ++r)
        sum += input(r, i);
      EXPECT_EQ(data[size_t(i)], sum) << "rank " << c.rank();
      if (i / (count / n) == c.rank())
        EXPECT_EQ(recv[size_t(i % (count / n))], sum) << "rank " << c.rank();
    }
    EXPECT_EQ(ein_comm_axis_rank(0), c.rank());
  });
}

TEST(NcclCommunicator, SplitIntoEvenAndOddRanks) {
  onNcclRanks(4, [](Communicator &c) {
    auto part = c.split(c.rank() % 2, c.rank());
    ASSERT_TRUE(part) << part.error().message;
    EXPECT_EQ((*part)->size(), 2);
    EXPECT_EQ((*part)->rank(), c.rank() / 2);
    double v = c.rank();
    ASSERT_TRUE((*part)->allReduce(&v, StorageType::F64, 1, ReduceOp::Sum));
    EXPECT_EQ(v, c.rank() % 2 == 0 ? 0 + 2 : 1 + 3);
  });
}

TEST(NcclCommunicator, RefusesByName) {
  onNcclRanks(2, [](Communicator &c) {
    uint8_t flags[4] = {0};
    auto r = c.allReduce(flags, StorageType::Bool, 4, ReduceOp::Sum);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "all-reduce of bool on NCCL: reductions "
                                 "take f64, f32, bf16, f16, i64 and i32");
    float x[3] = {0};
    auto s = c.reduceScatter(x, x, StorageType::F32, 3, ReduceOp::Sum);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("must be a multiple of the ranks"),
              std::string::npos);
  });
}

TEST(NcclCommunicator, DeadRankIsAnErrorNotAHang) {
  auto start = std::chrono::steady_clock::now();
  onNcclRanks(
      2,
      [](Communicator &c) {
        if (c.rank() == 1)
          return; // never arrives
        float x = 1;
        auto r = c.allReduce(&x, StorageType::F32, 1, ReduceOp::Sum);
        ASSERT_FALSE(r);
        EXPECT_NE(r.error().message.find(
                      "NCCL all-reduce (collective #1) on rank 0 of 2 failed"),
                  std::string::npos)
            << r.error().message;
        EXPECT_NE(r.error().message.find("rank 1 never arrived"),
                  std::string::npos)
            << r.error().message;
        // The communicator was aborted: later calls fail at once.
        auto again = c.allReduce(&x, StorageType::F32, 1, ReduceOp::Sum);
        ASSERT_FALSE(again);
        EXPECT_NE(again.error().message.find("was aborted"), std::string::npos);
      },
      /*timeout=*/0.3);
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      5.0);
}

// The device side of the wait, without a device: a stream that never
// finishes (a peer's kernel waiting forever) times out and aborts; a stream
// that reports a CUDA error fails by its number.
TEST(NcclCommunicator, StalledStreamTimesOutAndAborts) {
  for (int code : {600, 700}) {
    auto ranks = simulatedRanks(1);
    ranks[0]->setTimeout(0.2);
    std::atomic<bool> stalled{false};
    NcclStream stream;
    stream.query = [&] { return stalled ? code : 0; };
    auto nccl = ncclCommunicator(*ranks[0], emulatedNccl(), stream);
    ASSERT_TRUE(nccl) << nccl.error().message;
    stalled = true;
    float x = 1;
    auto start = std::chrono::steady_clock::now();
    auto r = (*nccl)->allReduce(&x, StorageType::F32, 1, ReduceOp::Sum);
    ASSERT_FALSE(r);
    const std::string &m = r.error().message;
    if (code == 600) {
      EXPECT_NE(m.find("NCCL all-reduce (collective #1) on rank 0 of 1 timed "
                       "out after 0.2 s (EIN_COMM_TIMEOUT)"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("(ncclCommAbort)"), std::string::npos) << m;
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              start)
                    .count(),
                2.0);
    } else {
      EXPECT_NE(m.find("the CUDA stream reports error 700"), std::string::npos)
          << m;
    }
    auto again = (*nccl)->broadcast(&x, StorageType::F32, 1, 0);
    ASSERT_FALSE(again);
    EXPECT_NE(again.error().message.find("NCCL broadcast (collective #2)"),
              std::string::npos)
        << again.error().message;
  }
}

TEST(NcclLibrary, MissingLibraryIsAnErrorByName) {
  setenv("EIN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  auto api = openNcclLibrary();
  unsetenv("EIN_NCCL_LIBRARY");
  ASSERT_FALSE(api);
  EXPECT_NE(api.error().message.find("NCCL is needed for CUDA ranks but "
                                     "libnccl.so.2 did not load"),
            std::string::npos);
  EXPECT_NE(api.error().message.find("/nonexistent/libnccl.so.2"),
            std::string::npos);
}

TEST(NcclLibrary, ToolkitLibraryLoads) {
  if (::access("/usr/local/cuda/lib64/libnccl.so.2", R_OK) != 0)
    GTEST_SKIP() << "no NCCL in /usr/local/cuda";
  auto api = openNcclLibrary();
  ASSERT_TRUE(api) << api.error().message;
  EXPECT_GE(api->version, 21800);
  EXPECT_EQ(api->name.rfind("NCCL 2.", 0), 0u) << api->name;
  EXPECT_FALSE(api->emulated);
}

} // namespace
