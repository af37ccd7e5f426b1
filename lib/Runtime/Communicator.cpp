// What every communicator shares: the reference reduction, the timeout's
// setting, mesh-axis sub-groups and the start-up agreement check.
#include "ein/Runtime/Communicator.h"

#include "ein/Runtime/FloatConvert.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ein {

using runtime::StorageType;

Communicator::Communicator() : timeoutSeconds(300) {
  if (auto t = defaultCommTimeout())
    timeoutSeconds = *t;
}
Communicator::~Communicator() = default;

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  }
  return "?";
}

ErrorOr<double> defaultCommTimeout() {
  const char *text = std::getenv("EIN_COMM_TIMEOUT");
  if (!text || !*text)
    return 300.0;
  char *end = nullptr;
  errno = 0;
  double seconds = std::strtod(text, &end);
  if (errno || *end || !(seconds > 0) || !std::isfinite(seconds))
    return Error::usage(fmt::format(
        "EIN_COMM_TIMEOUT is '{}'; it must be a positive number of seconds",
        text));
  return seconds;
}

bool isReducibleType(StorageType type) {
  switch (type) {
  case StorageType::F64:
  case StorageType::F32:
  case StorageType::F16:
  case StorageType::BF16:
  case StorageType::I64:
  case StorageType::I32:
    return true;
  case StorageType::F8E4M3:
  case StorageType::F8E5M2:
  case StorageType::I8:
  case StorageType::Bool:
    return false;
  }
  return false;
}

namespace {

template <typename T> T combine(T a, T b, ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return a + b;
  case ReduceOp::Max:
    return std::max(a, b);
  case ReduceOp::Min:
    return std::min(a, b);
  }
  return a;
}

template <typename T>
void reduceTyped(const std::vector<const void *> &inputs, void *out,
                 int64_t count, ReduceOp op) {
  T *o = static_cast<T *>(out);
  // Into a temporary first: `out` may be one of the inputs (in place).
  std::vector<T> acc(static_cast<const T *>(inputs[0]),
                     static_cast<const T *>(inputs[0]) + count);
  for (size_t k = 1; k < inputs.size(); ++k) {
    const T *in = static_cast<const T *>(inputs[k]);
    for (int64_t i = 0; i < count; ++i)
      acc[i] = combine(acc[i], in[i], op);
  }
  std::copy(acc.begin(), acc.end(), o);
}

float widen16(uint16_t bits, StorageType type) {
  return type == StorageType::BF16 ? runtime::bf16BitsToFloat(bits)
                                   : runtime::f16BitsToFloat(bits);
}

void reduce16(const std::vector<const void *> &inputs, void *out,
              StorageType type, int64_t count, ReduceOp op) {
  std::vector<float> acc(count);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const uint16_t *in = static_cast<const uint16_t *>(inputs[k]);
    for (int64_t i = 0; i < count; ++i) {
      float v = widen16(in[i], type);
      acc[i] = k == 0 ? v : combine(acc[i], v, op);
    }
  }
  uint16_t *o = static_cast<uint16_t *>(out);
  for (int64_t i = 0; i < count; ++i)
    o[i] = type == StorageType::BF16 ? runtime::floatToBF16Bits(acc[i])
                                     : runtime::floatToF16Bits(acc[i]);
}

} // namespace

ErrorOr<void> reduceBuffers(const std::vector<const void *> &inputs, void *out,
                            StorageType type, int64_t count, ReduceOp op) {
  if (inputs.empty() || count <= 0)
    return {};
  switch (type) {
  case StorageType::F64:
    reduceTyped<double>(inputs, out, count, op);
    return {};
  case StorageType::F32:
    reduceTyped<float>(inputs, out, count, op);
    return {};
  case StorageType::I64:
    reduceTyped<int64_t>(inputs, out, count, op);
    return {};
  case StorageType::I32:
    reduceTyped<int32_t>(inputs, out, count, op);
    return {};
  case StorageType::BF16:
  case StorageType::F16:
    reduce16(inputs, out, type, count, op);
    return {};
  case StorageType::F8E4M3:
  case StorageType::F8E5M2:
  case StorageType::I8:
  case StorageType::Bool:
    break;
  }
  return Error::usage(fmt::format("a {} reduction of {} is not supported (the "
                                  "reducible types are f64, f32, bf16, f16, "
                                  "i64 and i32)",
                                  reduceOpName(op),
                                  runtime::storageName(type)));
}

ErrorOr<std::unique_ptr<Communicator>>
meshAxisGroup(Communicator &world, const std::vector<int64_t> &meshShape,
              size_t axis) {
  int64_t product = 1;
  for (int64_t s : meshShape)
    product *= s;
  if (axis >= meshShape.size())
    return Error::usage(
        fmt::format("mesh axis {} of a {}-axis mesh", axis, meshShape.size()));
  if (product != world.size())
    return Error::usage(fmt::format("the mesh has {} ranks but the job has {}",
                                    product, world.size()));
  // Row-major coordinates of this rank; the color is the linear index of
  // the coordinates without `axis`, the key the coordinate on `axis`.
  int64_t rest = world.rank(), color = 0, key = 0;
  std::vector<int64_t> coord(meshShape.size());
  for (size_t i = meshShape.size(); i-- > 0;) {
    coord[i] = rest % meshShape[i];
    rest /= meshShape[i];
  }
  for (size_t i = 0; i < meshShape.size(); ++i) {
    if (i == axis)
      key = coord[i];
    else
      color = color * meshShape[i] + coord[i];
  }
  return world.split(static_cast<int>(color), static_cast<int>(key));
}

ErrorOr<void> checkSameOnAllRanks(Communicator &comm, uint64_t hash,
                                  const std::string &what) {
  std::vector<uint64_t> all(comm.size());
  if (auto r = comm.allGather(&hash, all.data(), StorageType::I64, 1); !r)
    return r.error();
  std::vector<std::string> differing;
  for (int r = 1; r < comm.size(); ++r)
    if (all[r] != all[0])
      differing.push_back(std::to_string(r));
  if (differing.empty())
    return {};
  return Error::usage(fmt::format(
      "rank{} {} {} not run what rank 0 runs: the hash of {} differs "
      "(rank 0: {:016x}, rank {}: {:016x}); every rank must run the same "
      "einc with the same files and options",
      differing.size() > 1 ? "s" : "", fmt::join(differing, ", "),
      differing.size() > 1 ? "do" : "does", what, all[0], differing[0],
      all[std::stoi(differing[0])]));
}

} // namespace ein
