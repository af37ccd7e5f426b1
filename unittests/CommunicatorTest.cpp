// The communicator's collectives on simulated ranks (threads of this
// process), each on 1, 2, 3, 4 and 8 ranks against a serial loop over the
// ranks' inputs written here; the refusals (non-divisible reduce-scatter,
// mismatched calls, differing start-up hashes) and a rank that never
// arrives (a timeout error on the others, within a second).
#include "ein/Runtime/Communicator.h"

#include "ein/Runtime/FloatConvert.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

using namespace ein;
using runtime::StorageType;

namespace {

/// Runs `body` on every rank of `n` simulated ranks, one thread each.
void onRanks(int n, const std::function<void(Communicator &)> &body,
             double timeout = 30) {
  auto ranks = simulatedRanks(n);
  std::vector<std::thread> threads;
  for (auto &c : ranks) {
    c->setTimeout(timeout);
    threads.emplace_back([&body, comm = c.get()] { body(*comm); });
  }
  for (auto &t : threads)
    t.join();
}

/// Rank r's input: distinct, non-trivial values (some negative).
std::vector<float> inputF32(int rank, int64_t count) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] =
        static_cast<float>(((rank * 7919 + i * 104729) % 2003) - 1000) / 37.0f;
  return v;
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllReduceF32SumMaxMin) {
  int n = GetParam();
  const int64_t count = 1001;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    std::vector<float> expected = inputF32(0, count);
    for (int r = 1; r < n; ++r) {
      std::vector<float> in = inputF32(r, count);
      for (int64_t i = 0; i < count; ++i)
        expected[i] = op == ReduceOp::Sum   ? expected[i] + in[i]
                      : op == ReduceOp::Max ? std::max(expected[i], in[i])
                                            : std::min(expected[i], in[i]);
    }
    onRanks(n, [&](Communicator &c) {
      std::vector<float> data = inputF32(c.rank(), count);
      auto r = c.allReduce(data.data(), StorageType::F32, count, op);
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_EQ(data, expected) << reduceOpName(op) << " on rank " << c.rank();
    });
  }
}

TEST_P(Collectives, AllReduceF64AndI64) {
  int n = GetParam();
  const int64_t count = 64;
  std::vector<double> sumD(count, 0);
  std::vector<int64_t> sumI(count, 0);
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < count; ++i) {
      sumD[i] += 0.1 * (r + 1) * (i - 30);
      sumI[i] += (int64_t(1) << 40) * r - i;
    }
  onRanks(n, [&](Communicator &c) {
    std::vector<double> d(count);
    std::vector<int64_t> k(count);
    for (int64_t i = 0; i < count; ++i) {
      d[i] = 0.1 * (c.rank() + 1) * (i - 30);
      k[i] = (int64_t(1) << 40) * c.rank() - i;
    }
    ASSERT_TRUE(c.allReduce(d.data(), StorageType::F64, count, ReduceOp::Sum));
    ASSERT_TRUE(c.allReduce(k.data(), StorageType::I64, count, ReduceOp::Sum));
    EXPECT_EQ(d, sumD);
    EXPECT_EQ(k, sumI);
  });
}

TEST_P(Collectives, AllReduceBF16SumsInF32) {
  int n = GetParam();
  const int64_t count = 257;
  // The oracle: widen each rank's bf16, sum in f32, round once.
  std::vector<float> sum(count, 0);
  for (int r = 0; r < n; ++r) {
    std::vector<float> in = inputF32(r, count);
    for (int64_t i = 0; i < count; ++i)
      sum[i] += runtime::bf16BitsToFloat(runtime::floatToBF16Bits(in[i]));
  }
  onRanks(n, [&](Communicator &c) {
    std::vector<float> in = inputF32(c.rank(), count);
    std::vector<uint16_t> data(count);
    for (int64_t i = 0; i < count; ++i)
      data[i] = runtime::floatToBF16Bits(in[i]);
    ASSERT_TRUE(
        c.allReduce(data.data(), StorageType::BF16, count, ReduceOp::Sum));
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(data[i], runtime::floatToBF16Bits(sum[i])) << "element " << i;
  });
}

TEST_P(Collectives, AllGatherAllToAllBroadcast) {
  int n = GetParam();
  const int64_t count = 13;
  onRanks(n, [&](Communicator &c) {
    std::vector<float> mine = inputF32(c.rank(), count);
    std::vector<float> gathered(count * n);
    ASSERT_TRUE(
        c.allGather(mine.data(), gathered.data(), StorageType::F32, count));
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(gathered[r * count + i], inputF32(r, count)[i]);

    // All-to-all: block b of rank r's send holds r*1000 + b*10 + i.
    std::vector<int32_t> send(count * n), recv(count * n);
    for (int b = 0; b < n; ++b)
      for (int64_t i = 0; i < count; ++i)
        send[b * count + i] = c.rank() * 1000 + b * 10 + int32_t(i);
    ASSERT_TRUE(c.allToAll(send.data(), recv.data(), StorageType::I32, count));
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(recv[r * count + i], r * 1000 + c.rank() * 10 + int32_t(i));

    std::vector<double> b(count, c.rank());
    ASSERT_TRUE(c.broadcast(b.data(), StorageType::F64, count, n - 1));
    EXPECT_EQ(b, std::vector<double>(count, n - 1));
  });
}

TEST_P(Collectives, ReduceScatter) {
  int n = GetParam();
  const int64_t block = 11, total = block * n;
  std::vector<float> sum = inputF32(0, total);
  for (int r = 1; r < n; ++r) {
    std::vector<float> in = inputF32(r, total);
    for (int64_t i = 0; i < total; ++i)
      sum[i] += in[i];
  }
  onRanks(n, [&](Communicator &c) {
    std::vector<float> send = inputF32(c.rank(), total), recv(block);
    ASSERT_TRUE(c.reduceScatter(send.data(), recv.data(), StorageType::F32,
                                total, ReduceOp::Sum));
    for (int64_t i = 0; i < block; ++i)
      ASSERT_EQ(recv[i], sum[c.rank() * block + i]);
  });
}

TEST_P(Collectives, ReduceScatterRefusesANonDivisibleCount) {
  int n = GetParam();
  if (n == 1)
    GTEST_SKIP() << "every count divides over one rank";
  onRanks(n, [&](Communicator &c) {
    std::vector<float> send(n + 1), recv(2);
    auto r = c.reduceScatter(send.data(), recv.data(), StorageType::F32, n + 1,
                             ReduceOp::Sum);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("reduce-scatter of " +
                                     std::to_string(n + 1) + " elements over " +
                                     std::to_string(n) + " ranks"),
              std::string::npos)
        << r.error().message;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4, 8));

TEST(Communicator, ARankThatNeverArrivesTimesOutOnTheOthers) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> errors(3);
  onRanks(
      3,
      [&](Communicator &c) {
        if (c.rank() == 2)
          return; // dies before the collective
        float x = 1;
        auto r = c.allReduce(&x, StorageType::F32, 1, ReduceOp::Sum);
        ASSERT_FALSE(r);
        errors[c.rank()] = r.error().message;
        // The group is broken: the next call fails at once.
        auto again = c.allReduce(&x, StorageType::F32, 1, ReduceOp::Sum);
        ASSERT_FALSE(again);
        EXPECT_NE(again.error().message.find("broken"), std::string::npos);
      },
      /*timeout=*/0.3);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 5);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("all-reduce"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("rank 2 never arrived"), std::string::npos)
        << errors[r];
  }
}

TEST(Communicator, MismatchedCollectivesAreRefused) {
  onRanks(2, [&](Communicator &c) {
    std::vector<float> x(4), y(8);
    ErrorOr<void> r =
        c.rank() == 0
            ? c.allReduce(x.data(), StorageType::F32, 4, ReduceOp::Sum)
            : c.allGather(x.data(), y.data(), StorageType::F32, 4);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("collectives must match"),
              std::string::npos)
        << r.error().message;
  });
}

TEST(Communicator, ReductionOfBoolIsRefusedByName) {
  onRanks(1, [&](Communicator &c) {
    uint8_t b = 1;
    auto r = c.allReduce(&b, StorageType::Bool, 1, ReduceOp::Sum);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("bool"), std::string::npos);
  });
}

TEST(Communicator, MeshAxisGroups) {
  // A 2x3 mesh (dp=2, tp=3): rank = dp*3 + tp. Over tp the groups are the
  // rows {0,1,2}, {3,4,5}; over dp the columns {0,3}, {1,4}, {2,5}.
  onRanks(6, [&](Communicator &c) {
    for (size_t axis : {0u, 1u}) {
      auto group = meshAxisGroup(c, {2, 3}, axis);
      ASSERT_TRUE(group) << group.error().message;
      int dp = c.rank() / 3, tp = c.rank() % 3;
      EXPECT_EQ((*group)->size(), axis == 0 ? 2 : 3);
      EXPECT_EQ((*group)->rank(), axis == 0 ? dp : tp);
      int64_t x = c.rank();
      ASSERT_TRUE((*group)->allReduce(&x, StorageType::I64, 1, ReduceOp::Sum));
      EXPECT_EQ(x,
                axis == 0 ? tp + (tp + 3) : 3 * dp + 3 * dp + 1 + 3 * dp + 2);
    }
  });
}

TEST(Communicator, StartUpHashesMustAgree) {
  onRanks(4, [&](Communicator &c) {
    auto same = checkSameOnAllRanks(c, 42, "the program");
    EXPECT_TRUE(same);
    auto differ = checkSameOnAllRanks(c, c.rank() == 2 ? 7 : 42, "the program");
    ASSERT_FALSE(differ);
    EXPECT_NE(differ.error().message.find("rank 2 does not run what rank 0"),
              std::string::npos)
        << differ.error().message;
  });
}

TEST(Communicator, MalformedTimeoutIsRefused) {
  setenv("EIN_COMM_TIMEOUT", "soon", 1);
  auto t = defaultCommTimeout();
  unsetenv("EIN_COMM_TIMEOUT");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("EIN_COMM_TIMEOUT is 'soon'"),
            std::string::npos);
  auto d = defaultCommTimeout();
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, 300);
}

} // namespace
