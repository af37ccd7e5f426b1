// Simulated ranks: N threads of one process, one Communicator each, whose
// collectives meet in shared memory (for tests, as PyTorch's fake process
// group and JAX's forced host devices). Each collective posts its buffers,
// waits for every rank (bounded by the timeout), computes its result from
// the others' buffers into a private copy, waits again so that no buffer is
// written while another rank reads it, then writes its output.
#include "ein/Runtime/Communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

namespace ein {

using runtime::StorageType;

namespace {

enum class Kind { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::AllReduce:
    return "all-reduce";
  case Kind::AllGather:
    return "all-gather";
  case Kind::ReduceScatter:
    return "reduce-scatter";
  case Kind::AllToAll:
    return "all-to-all";
  case Kind::Broadcast:
    return "broadcast";
  }
  return "?";
}

/// What one rank posted for the collective in progress.
struct Slot {
  Kind kind = Kind::AllReduce;
  StorageType type = StorageType::F32;
  int64_t count = 0;
  int root = 0;
  ReduceOp op = ReduceOp::Sum;
  const void *send = nullptr;
};

/// The state the ranks of one group share.
struct World {
  explicit World(int n) : n(n), entered(n, 0), slots(n) {}
  const int n;
  std::mutex mutex;
  std::condition_variable arrivedAll;
  int arrived = 0;
  int64_t generation = 0;
  /// How many waits each rank has entered: a rank behind the others' count
  /// is the one missing.
  std::vector<int64_t> entered;
  bool broken = false;
  std::string brokenBecause;
  std::vector<Slot> slots;
  /// Sub-groups, by (the split's number, color).
  std::map<std::pair<int64_t, int>, std::shared_ptr<World>> children;
};

std::string rankList(const std::vector<int> &ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

class SimulatedCommunicator final : public Communicator {
public:
  SimulatedCommunicator(std::shared_ptr<World> world, int rank)
      : world(std::move(world)), myRank(rank) {}

  int rank() const override { return myRank; }
  int size() const override { return world->n; }
  std::string name() const override {
    return fmt::format("{} simulated ranks", world->n);
  }

  ErrorOr<void> allReduce(void *data, StorageType type, int64_t count,
                          ReduceOp op) override {
    if (auto r = checkReducible(Kind::AllReduce, type, op); !r)
      return r;
    size_t bytes = count * runtime::storageBytes(type);
    std::vector<char> result(bytes);
    return run(
        {Kind::AllReduce, type, count, 0, op, data},
        [&]() -> ErrorOr<void> {
          return reduceBuffers(sends(), result.data(), type, count, op);
        },
        [&] { copy(data, result.data(), bytes); });
  }

  ErrorOr<void> allGather(const void *send, void *recv, StorageType type,
                          int64_t count) override {
    size_t block = count * runtime::storageBytes(type);
    std::vector<char> result(block * world->n);
    return run(
        {Kind::AllGather, type, count, 0, ReduceOp::Sum, send},
        [&]() -> ErrorOr<void> {
          for (int r = 0; r < world->n; ++r)
            copy(result.data() + r * block, world->slots[r].send, block);
          return {};
        },
        [&] { copy(recv, result.data(), result.size()); });
  }

  ErrorOr<void> reduceScatter(const void *send, void *recv, StorageType type,
                              int64_t total, ReduceOp op) override {
    if (auto r = checkReducible(Kind::ReduceScatter, type, op); !r)
      return r;
    if (total % world->n != 0)
      return Error::usage(fmt::format(
          "reduce-scatter of {} elements over {} ranks: {} is not a multiple "
          "of {}, so the ranks' blocks would differ in size",
          total, world->n, total, world->n));
    int64_t count = total / world->n;
    size_t elem = runtime::storageBytes(type), block = count * elem;
    std::vector<char> result(block);
    return run(
        {Kind::ReduceScatter, type, total, 0, op, send},
        [&]() -> ErrorOr<void> {
          std::vector<const void *> parts;
          for (const void *s : sends())
            parts.push_back(static_cast<const char *>(s) + myRank * block);
          return reduceBuffers(parts, result.data(), type, count, op);
        },
        [&] { copy(recv, result.data(), block); });
  }

  ErrorOr<void> allToAll(const void *send, void *recv, StorageType type,
                         int64_t count) override {
    size_t block = count * runtime::storageBytes(type);
    std::vector<char> result(block * world->n);
    return run(
        {Kind::AllToAll, type, count, 0, ReduceOp::Sum, send},
        [&]() -> ErrorOr<void> {
          for (int r = 0; r < world->n; ++r)
            copy(result.data() + r * block,
                 static_cast<const char *>(world->slots[r].send) +
                     myRank * block,
                 block);
          return {};
        },
        [&] { copy(recv, result.data(), result.size()); });
  }

  ErrorOr<void> broadcast(void *data, StorageType type, int64_t count,
                          int root) override {
    if (root < 0 || root >= world->n)
      return Error::usage(fmt::format(
          "broadcast from rank {}, but the group's ranks are 0 to {}", root,
          world->n - 1));
    size_t bytes = count * runtime::storageBytes(type);
    std::vector<char> result(bytes);
    return run(
        {Kind::Broadcast, type, count, root, ReduceOp::Sum, data},
        [&]() -> ErrorOr<void> {
          copy(result.data(), world->slots[root].send, bytes);
          return {};
        },
        [&] { copy(data, result.data(), bytes); });
  }

  ErrorOr<std::unique_ptr<Communicator>> split(int color, int key) override {
    int64_t mine[2] = {color, key};
    std::vector<int64_t> all(2 * world->n);
    if (auto r = allGather(mine, all.data(), StorageType::I64, 2); !r)
      return r.error();
    std::vector<std::pair<int64_t, int>> members; // (key, parent rank)
    for (int r = 0; r < world->n; ++r)
      if (all[2 * r] == color)
        members.push_back({all[2 * r + 1], r});
    std::sort(members.begin(), members.end());
    int newRank = 0;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i].second == myRank)
        newRank = static_cast<int>(i);
    std::shared_ptr<World> child;
    {
      std::lock_guard<std::mutex> lock(world->mutex);
      auto &slot = world->children[{splits, color}];
      if (!slot)
        slot = std::make_shared<World>(static_cast<int>(members.size()));
      child = slot;
    }
    ++splits;
    auto comm = std::make_unique<SimulatedCommunicator>(child, newRank);
    comm->setTimeout(timeout());
    return std::unique_ptr<Communicator>(std::move(comm));
  }

private:
  static void copy(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src)
      std::memmove(dst, src, bytes);
  }

  std::vector<const void *> sends() const {
    std::vector<const void *> out;
    for (const Slot &s : world->slots)
      out.push_back(s.send);
    return out;
  }

  ErrorOr<void> checkReducible(Kind kind, StorageType type, ReduceOp op) {
    if (isReducibleType(type))
      return {};
    return Error::usage(fmt::format(
        "{} ({}) of {} is not supported (the reducible types are f64, f32, "
        "bf16, f16, i64 and i32)",
        kindName(kind), reduceOpName(op), runtime::storageName(type)));
  }

  /// Waits until every rank of the group has entered this wait, at most
  /// timeout() seconds.
  ErrorOr<void> wait(Kind kind) {
    std::unique_lock<std::mutex> lock(world->mutex);
    if (world->broken)
      return Error::usage(fmt::format("{} on rank {}: {}", kindName(kind),
                                      myRank, world->brokenBecause));
    int64_t mine = ++world->entered[myRank];
    if (++world->arrived == world->n) {
      world->arrived = 0;
      ++world->generation;
      world->arrivedAll.notify_all();
      return {};
    }
    int64_t generation = world->generation;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(timeout());
    world->arrivedAll.wait_until(lock, deadline, [&] {
      return world->generation != generation || world->broken;
    });
    if (world->generation != generation)
      return {};
    std::vector<int> missing;
    for (int r = 0; r < world->n; ++r)
      if (world->entered[r] < mine)
        missing.push_back(r);
    if (!world->broken) {
      world->broken = true;
      world->brokenBecause = fmt::format(
          "the group of {} ranks is broken: rank{} {} did not arrive at a "
          "{} within {} s (EIN_COMM_TIMEOUT)",
          world->n, missing.size() > 1 ? "s" : "", rankList(missing),
          kindName(kind), timeout());
      world->arrivedAll.notify_all();
    }
    return Error::usage(fmt::format(
        "{} on rank {} of {} simulated ranks timed out after {} s: rank{} {} "
        "never arrived",
        kindName(kind), myRank, world->n, timeout(),
        missing.size() > 1 ? "s" : "", rankList(missing)));
  }

  /// Posts `slot`, meets the others, checks that they called the same
  /// collective, computes, meets them again, then finishes.
  template <typename Compute, typename Finish>
  ErrorOr<void> run(Slot slot, Compute compute, Finish finish) {
    if (slot.count < 0)
      return Error::usage(
          fmt::format("{} of {} elements", kindName(slot.kind), slot.count));
    {
      std::lock_guard<std::mutex> lock(world->mutex);
      world->slots[myRank] = slot;
    }
    if (auto r = wait(slot.kind); !r)
      return r;
    ErrorOr<void> result = agree(slot);
    if (result)
      result = compute();
    if (auto r = wait(slot.kind); !r)
      return r;
    if (!result)
      return result;
    finish();
    return {};
  }

  /// Every rank must call the same collective with the same arguments.
  ErrorOr<void> agree(const Slot &mine) {
    for (int r = 0; r < world->n; ++r) {
      const Slot &s = world->slots[r];
      if (s.kind == mine.kind && s.type == mine.type && s.count == mine.count &&
          s.root == mine.root && s.op == mine.op)
        continue;
      return Error::usage(fmt::format(
          "rank {} called {} of {} {} (root {}) where rank {} called {} of "
          "{} {} (root {}): the ranks' collectives must match",
          r, kindName(s.kind), s.count, runtime::storageName(s.type), s.root,
          myRank, kindName(mine.kind), mine.count,
          runtime::storageName(mine.type), mine.root));
    }
    return {};
  }

  std::shared_ptr<World> world;
  int myRank;
  int64_t splits = 0;
};

} // namespace

std::vector<std::unique_ptr<Communicator>> simulatedRanks(int n) {
  auto world = std::make_shared<World>(n);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r)
    out.push_back(std::make_unique<SimulatedCommunicator>(world, r));
  return out;
}

} // namespace ein
