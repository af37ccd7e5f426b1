// The collectives compiled code calls: each entry point runs on the calling
// thread's CollectiveScope (its mesh axes' groups), keeping the first error.
#include "ein/Runtime/CollectiveCalls.h"
#include "ein/Runtime/Communicator.h"

#include <fmt/format.h>

#include <cstring>

namespace ein {

namespace {

struct RankContext {
  std::vector<Communicator *> groups;
  std::optional<Error> error;
};

thread_local RankContext *current = nullptr;

/// The group of `axis`, or null after recording why there is none (no
/// scope: a compiled collective called outside a sharded run; an axis the
/// scope has no group for). After a failure every call is null.
Communicator *groupOf(int32_t axis, const char *what) {
  RankContext *context = current;
  if (!context)
    return nullptr;
  if (context->error)
    return nullptr;
  if (axis < 0 || size_t(axis) >= context->groups.size() ||
      !context->groups[size_t(axis)]) {
    context->error = Error::program(
        fmt::format("a compiled {} over mesh axis {} has no group: the rank "
                    "has {} mesh axis group(s)",
                    what, axis, context->groups.size()));
    return nullptr;
  }
  return context->groups[size_t(axis)];
}

void keep(ErrorOr<void> result) {
  if (!result && current && !current->error)
    current->error = result.error();
}

template <typename T> void divide(void *data, int64_t count, double by) {
  T *values = static_cast<T *>(data);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<T>(values[i] / static_cast<T>(by));
}

/// The communicator's reduction of a code (the mean as a sum), or an error
/// naming a code or a type it does not take.
ErrorOr<ReduceOp> reduceOpOf(int32_t op, runtime::StorageType type) {
  auto code = CollectiveReduction(op);
  if (auto why = collectiveRefusal(type, code))
    return Error::usage(*why);
  switch (code) {
  case CollectiveReduction::Sum:
  case CollectiveReduction::Mean:
    return ReduceOp::Sum;
  case CollectiveReduction::Max:
    return ReduceOp::Max;
  case CollectiveReduction::Min:
    return ReduceOp::Min;
  }
  return Error::program(fmt::format("a compiled collective's reduction code "
                                    "{} is none of sum, max, min, mean",
                                    op));
}

/// The mean's division by the group's size, after its sum.
void finishMean(int32_t op, void *data, int64_t count,
                runtime::StorageType type, int size) {
  if (CollectiveReduction(op) != CollectiveReduction::Mean)
    return;
  if (type == runtime::StorageType::F32)
    divide<float>(data, count, double(size));
  else
    divide<double>(data, count, double(size));
}

void *pointer(int64_t address) { return reinterpret_cast<void *>(address); }

} // namespace

std::optional<std::string>
collectiveRefusal(runtime::StorageType type,
                  std::optional<CollectiveReduction> reduction) {
  if (!reduction)
    return std::nullopt;
  if (!isReducibleType(type))
    return fmt::format(
        "a reduction of {} over ranks is not supported yet: f64, f32, "
        "f16, bf16, i64 and i32 are",
        runtime::storageName(type));
  if (*reduction == CollectiveReduction::Mean &&
      type != runtime::StorageType::F32 && type != runtime::StorageType::F64)
    return fmt::format(
        "an average of {} over ranks is not supported yet: f32 and "
        "f64 are",
        runtime::storageName(type));
  return std::nullopt;
}

CollectiveScope::CollectiveScope(std::vector<Communicator *> axisGroups) {
  current = new RankContext{std::move(axisGroups), std::nullopt};
}

CollectiveScope::~CollectiveScope() {
  delete current;
  current = nullptr;
}

std::optional<Error> CollectiveScope::error() const { return current->error; }

bool CollectiveScope::active() { return current != nullptr; }

ErrorOr<void> CollectiveScope::required(const std::string &function) {
  if (active())
    return {};
  return Error::program(fmt::format(
      "'{}' was compiled with its mesh's collectives: it runs on a rank "
      "of a sharded run (inside a CollectiveScope)",
      function));
}

} // namespace ein

using namespace ein;

namespace {
/// Runs `run(group, type, reduction)` on mesh axis `axis`'s group (`what`
/// names the collective), keeping its error.
template <typename Run>
void reduceOn(const char *what, int32_t axis, int32_t type, int32_t op,
              Run run) {
  Communicator *group = groupOf(axis, what);
  if (!group)
    return;
  auto storage = runtime::StorageType(type);
  auto reduce = reduceOpOf(op, storage);
  if (!reduce)
    return keep(reduce.error());
  keep(run(*group, storage, *reduce));
}
} // namespace

extern "C" void ein_comm_all_reduce(int64_t data, int64_t count, int32_t type,
                                    int32_t op, int32_t axis) {
  reduceOn("all-reduce", axis, type, op,
           [&](Communicator &group, runtime::StorageType storage,
               ReduceOp reduce) -> ErrorOr<void> {
             if (auto done =
                     group.allReduce(pointer(data), storage, count, reduce);
                 !done)
               return done;
             finishMean(op, pointer(data), count, storage, group.size());
             return {};
           });
}

extern "C" void ein_comm_reduce_scatter(int64_t send, int64_t recv,
                                        int64_t total, int32_t type, int32_t op,
                                        int32_t axis) {
  reduceOn("reduce-scatter", axis, type, op,
           [&](Communicator &group, runtime::StorageType storage,
               ReduceOp reduce) -> ErrorOr<void> {
             if (auto done = group.reduceScatter(pointer(send), pointer(recv),
                                                 storage, total, reduce);
                 !done)
               return done;
             finishMean(op, pointer(recv), total / group.size(), storage,
                        group.size());
             return {};
           });
}

extern "C" void ein_comm_all_gather(int64_t send, int64_t recv, int64_t count,
                                    int32_t type, int32_t axis) {
  Communicator *group = groupOf(axis, "all-gather");
  if (!group)
    return;
  keep(group->allGather(pointer(send), pointer(recv),
                        runtime::StorageType(type), count));
}

extern "C" int64_t ein_comm_axis_rank(int32_t axis) {
  Communicator *group = groupOf(axis, "collective");
  return group ? group->rank() : 0;
}
