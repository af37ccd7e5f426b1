// A sharded run's collectives and block operations between the compiled
// parts (docs/distributed.md §4): completing partial results over a group,
// gathering and moving blocks between ranks and a reshard's local slice, in
// the memory the parts run on (the host's or a device's), and a
// vocab-parallel take on host tensors.
#include "ShardedBlocks.h"
#include "LocalProgram.h"
#include "ein/Target/DeviceMemory.h"

#include <fmt/format.h>

#include <cstring>
#include <type_traits>

namespace ein {

namespace {

template <typename T> void scale(runtime::HostTensor &t, double by) {
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    T a;
    std::memcpy(&a, t.data.data() + i * sizeof(T), sizeof(T));
    a = static_cast<T>(a / static_cast<T>(by));
    std::memcpy(t.data.data() + i * sizeof(T), &a, sizeof(T));
  }
}

/// The type a product of T is computed in: an integer's unsigned type,
/// which wraps as the unsharded product does.
template <typename T, bool = std::is_integral_v<T>> struct Wrapping {
  using type = T;
};
template <typename T> struct Wrapping<T, true> {
  using type = std::make_unsigned_t<T>;
};

/// The product over `group` of `value`'s partial products, in rank order.
template <typename T>
ErrorOr<void> multiplyAll(Communicator &group, runtime::HostTensor &value) {
  int64_t n = value.numElements();
  std::vector<T> all(size_t(n) * size_t(group.size()));
  if (auto gathered =
          group.allGather(value.data.data(), all.data(), value.type, n);
      !gathered)
    return gathered;
  for (int64_t i = 0; i < n; ++i) {
    using Wide = typename Wrapping<T>::type;
    Wide product = Wide(all[size_t(i)]);
    for (int64_t q = 1; q < group.size(); ++q)
      product = Wide(product * Wide(all[size_t(q * n + i)]));
    T out = T(product);
    std::memcpy(value.data.data() + size_t(i) * sizeof(T), &out, sizeof(T));
  }
  return {};
}

/// Calls `run(wholeByte, blockByte, bytes)` for each contiguous run of the
/// block of `blockShape` at `offset` in a C-order tensor of `wholeShape`
/// (the innermost dim is one run).
template <typename Run>
void forEachBlockRun(const std::vector<int64_t> &wholeShape,
                     const std::vector<int64_t> &blockShape,
                     const std::vector<int64_t> &offset, size_t bytes,
                     Run run) {
  size_t rank = wholeShape.size();
  for (int64_t n : blockShape)
    if (n == 0)
      return;
  std::vector<int64_t> ws = runtime::cOrderStrides(wholeShape),
                       bs = runtime::cOrderStrides(blockShape);
  size_t length = rank ? size_t(blockShape[rank - 1]) * bytes : bytes;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t w = 0, b = 0;
    for (size_t d = 0; d < rank; ++d) {
      w += (index[d] + offset[d]) * ws[d];
      b += index[d] * bs[d];
    }
    if (!run(size_t(w) * bytes, size_t(b) * bytes, length))
      return;
    // Next index over all but the innermost dim.
    size_t d = rank ? rank - 1 : 0;
    bool done = true;
    while (d-- > 0) {
      if (++index[d] < blockShape[d]) {
        done = false;
        break;
      }
      index[d] = 0;
    }
    if (done)
      return;
  }
}

/// copyBlock in `memory`: `block` (of `blockShape`) and `whole` are its
/// buffers.
ErrorOr<void> copyBlockIn(DeviceMemory &memory, void *whole,
                          const std::vector<int64_t> &wholeShape, void *block,
                          const std::vector<int64_t> &blockShape,
                          const std::vector<int64_t> &offset, size_t bytes,
                          bool toBlock) {
  ErrorOr<void> copied;
  forEachBlockRun(wholeShape, blockShape, offset, bytes,
                  [&](size_t w, size_t b, size_t length) {
                    uint8_t *wp = static_cast<uint8_t *>(whole) + w;
                    uint8_t *bp = static_cast<uint8_t *>(block) + b;
                    copied = memory.copyWithin(toBlock ? bp : wp,
                                               toBlock ? wp : bp, length);
                    return bool(copied);
                  });
  return copied;
}

/// Gathers `value`'s blocks along dim `d` over `group` (ranked by their
/// coordinate on the axis; its buffers are `value`'s memory's): the group's
/// blocks in rank order, whole along `d`. Any dim, not only the leading
/// one: each rank's block is copied into its place of the whole (the
/// all-gather concatenates flat buffers).
ErrorOr<void> allGather(Communicator &group, DeviceTensor &value, size_t d) {
  if (d >= value.shape().size())
    return Error::program("a sharded run's all-gather has no gathered dim");
  DeviceMemory &memory = value.memory();
  int64_t count = value.host().numElements();
  int64_t n = group.size();
  auto all = DeviceTensor::create(memory, value.type(), {n * count});
  if (!all)
    return all.error();
  if (auto gathered =
          group.allGather(value.data(), all->data(), value.type(), count);
      !gathered)
    return gathered;
  std::vector<int64_t> shape = value.shape();
  shape[d] *= n;
  auto whole = DeviceTensor::create(memory, value.type(), shape);
  if (!whole)
    return whole.error();
  for (int64_t q = 0; q < n; ++q) {
    std::vector<int64_t> offset(shape.size(), 0);
    offset[d] = q * value.shape()[d];
    if (auto placed = copyBlockIn(
            memory, whole->data(), shape,
            static_cast<uint8_t *>(all->data()) + size_t(q) * value.byteSize(),
            value.shape(), offset, value.host().elementBytes(), false);
        !placed)
      return placed;
  }
  value = std::move(*whole);
  return {};
}

/// Moves `value`'s split over `group` from dim `from` to dim `to`: block q
/// of this rank's `to` goes to rank q, and the blocks received are placed
/// along `from` in rank order (each copied into its place: any dims).
ErrorOr<void> allToAll(Communicator &group, DeviceTensor &value, size_t from,
                       size_t to) {
  int64_t n = group.size();
  size_t rank = value.shape().size();
  if (from >= rank || to >= rank || value.shape()[to] % n != 0)
    return Error::program("a sharded run's all-to-all has no dims to move");
  DeviceMemory &memory = value.memory();
  size_t bytes = value.host().elementBytes();
  std::vector<int64_t> chunkShape = value.shape();
  chunkShape[to] /= n;
  int64_t chunkCount = value.host().numElements() / n;
  size_t chunkBytes = size_t(chunkCount) * bytes;
  auto send = DeviceTensor::create(memory, value.type(), {n * chunkCount});
  if (!send)
    return send.error();
  auto recv = DeviceTensor::create(memory, value.type(), {n * chunkCount});
  if (!recv)
    return recv.error();
  auto chunkAt = [&](DeviceTensor &t, int64_t q) {
    return static_cast<uint8_t *>(t.data()) + size_t(q) * chunkBytes;
  };
  for (int64_t q = 0; q < n; ++q) {
    std::vector<int64_t> offset(rank, 0);
    offset[to] = q * chunkShape[to];
    if (auto cut =
            copyBlockIn(memory, value.data(), value.shape(), chunkAt(*send, q),
                        chunkShape, offset, bytes, true);
        !cut)
      return cut;
  }
  if (auto moved =
          group.allToAll(send->data(), recv->data(), value.type(), chunkCount);
      !moved)
    return moved;
  std::vector<int64_t> shape = chunkShape;
  shape[from] *= n;
  auto out = DeviceTensor::create(memory, value.type(), shape);
  if (!out)
    return out.error();
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int64_t> offset(rank, 0);
    offset[from] = r * chunkShape[from];
    if (auto placed = copyBlockIn(memory, out->data(), shape, chunkAt(*recv, r),
                                  chunkShape, offset, bytes, false);
        !placed)
      return placed;
  }
  value = std::move(*out);
  return {};
}

/// The communicator's operation that completes `kind` (any and all as a
/// max and a min of 0 and 1).
ReduceOp reduceOpOf(ReduceKind kind) {
  return kind == ReduceKind::Max || kind == ReduceKind::Any   ? ReduceOp::Max
         : kind == ReduceKind::Min || kind == ReduceKind::All ? ReduceOp::Min
                                                              : ReduceOp::Sum;
}

} // namespace

/// Completes `c`'s partial results in `value` over `group` (the ranks
/// that differ only on the collective's axis): sum, max or min in place;
/// a mean is a sum divided by the group's size. f16 and bf16 are widened to
/// f32, reduced (and divided) there and rounded back once; so is fp8's max
/// and min (exact: the result is one of the values, which f32 holds); its
/// sum and mean are refused (each rank's partial sum, rounded to 3 or 2
/// mantissa bits, would not sum to the unsharded result).
ErrorOr<void> completePartials(Communicator &group, runtime::HostTensor &value,
                               const InferredCollective &c, DType dtype) {
  runtime::StorageType type = value.type;
  bool wide =
      type == runtime::StorageType::F32 || type == runtime::StorageType::F64;
  bool fp8 = type == runtime::StorageType::F8E4M3 ||
             type == runtime::StorageType::F8E5M2;
  bool exact = c.reduction == ReduceKind::Max || c.reduction == ReduceKind::Min;
  if (!wide && isFloat(dtype) && (isReducibleType(type) || (fp8 && exact))) {
    auto widened = runtime::convertTensor(value, runtime::StorageType::F32);
    if (!widened)
      return widened.error();
    if (auto done = completePartials(group, *widened, c, DType::F32); !done)
      return done;
    auto narrowed = runtime::convertTensor(*widened, type);
    if (!narrowed)
      return narrowed.error();
    value = std::move(*narrowed);
    return {};
  }
  // any and all of bool: a max and a min of 0 and 1, in i32.
  if (type == runtime::StorageType::Bool) {
    if (c.reduction != ReduceKind::Any && c.reduction != ReduceKind::All)
      return Error::usage(fmt::format(
          "a sharded run's {} ({}) of a bool value is not supported yet",
          collectiveName(c.kind), reduceKindName(c.reduction)));
    int64_t n = value.numElements();
    std::vector<int32_t> flags(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      flags[size_t(i)] = value.data[size_t(i)] != 0;
    if (auto done = group.allReduce(flags.data(), runtime::StorageType::I32, n,
                                    reduceOpOf(c.reduction));
        !done)
      return done;
    for (int64_t i = 0; i < n; ++i)
      value.data[size_t(i)] = uint8_t(flags[size_t(i)]);
    return {};
  }
  // A product: the blocks' gathered and multiplied in rank order.
  if (c.reduction == ReduceKind::Prod) {
    switch (type) {
    case runtime::StorageType::F32:
      return multiplyAll<float>(group, value);
    case runtime::StorageType::F64:
      return multiplyAll<double>(group, value);
    case runtime::StorageType::I32:
      return multiplyAll<int32_t>(group, value);
    case runtime::StorageType::I64:
      return multiplyAll<int64_t>(group, value);
    case runtime::StorageType::F16:
    case runtime::StorageType::BF16:
    case runtime::StorageType::F8E4M3:
    case runtime::StorageType::F8E5M2:
    case runtime::StorageType::I8:
    case runtime::StorageType::Bool:
      break;
    }
    return Error::usage(fmt::format(
        "a sharded run's {} (prod) of a {} value is not supported yet",
        collectiveName(c.kind), dtypeName(dtype)));
  }
  // Integers are summed exactly; a mean's division is done in f32 and f64
  // only.
  if (!isReducibleType(type) || (c.reduction == ReduceKind::Mean && !wide))
    return Error::usage(fmt::format(
        "a sharded run's {} ({}) of a {} value is not supported yet",
        collectiveName(c.kind), reduceKindName(c.reduction), dtypeName(dtype)));
  if (auto done = group.allReduce(value.data.data(), type, value.numElements(),
                                  reduceOpOf(c.reduction));
      !done)
    return done;
  if (c.reduction == ReduceKind::Mean) {
    if (type == runtime::StorageType::F32)
      scale<float>(value, double(group.size()));
    else
      scale<double>(value, double(group.size()));
  }
  return {};
}

ErrorOr<void> completeOn(Communicator &hostGroup, Communicator &group,
                         DeviceTensor &value, const InferredCollective &c,
                         DType dtype) {
  if (value.memory().isHost())
    return completePartials(hostGroup, value.host(), c, dtype);
  runtime::StorageType type = value.type();
  bool exact =
      type == runtime::StorageType::F32 || type == runtime::StorageType::F64 ||
      type == runtime::StorageType::I32 || type == runtime::StorageType::I64;
  if (exact &&
      (c.reduction == ReduceKind::Sum || c.reduction == ReduceKind::Max ||
       c.reduction == ReduceKind::Min))
    return group.allReduce(value.data(), type, value.host().numElements(),
                           reduceOpOf(c.reduction));
  auto host = value.toHost();
  if (!host)
    return host.error();
  if (auto done = completePartials(hostGroup, *host, c, dtype); !done)
    return done;
  auto placed = DeviceTensor::place(value.memory(), std::move(*host));
  if (!placed)
    return placed.error();
  value = std::move(*placed);
  return {};
}

ErrorOr<void> moveBlocks(Communicator &group, const CheckedFunction &fn,
                         const InferredCollective &c, DeviceTensor &value) {
  if (c.kind == CollectiveKind::AllToAll)
    return allToAll(group, value, gatheredDim(fn, c), scatteredDim(fn, c));
  return allGather(group, value, gatheredDim(fn, c));
}

ErrorOr<void> keepBlock(DeviceTensor &value, size_t d, int64_t q, int64_t n) {
  if (d >= value.shape().size() || value.shape()[d] % n != 0)
    return Error::program("a sharded run's local slice has no dim to split");
  std::vector<int64_t> shape = value.shape(), offset(shape.size(), 0);
  shape[d] /= n;
  offset[d] = q * shape[d];
  auto block = DeviceTensor::create(value.memory(), value.type(), shape);
  if (!block)
    return block.error();
  if (auto cut = copyBlockIn(value.memory(), value.data(), value.shape(),
                             block->data(), shape, offset,
                             value.host().elementBytes(), true);
      !cut)
    return cut;
  value = std::move(*block);
  return {};
}

/// A vocab-parallel take on one rank (vocabParallel): `table` is the
/// rank's block along `axis`, rows [lo, lo + block) of the whole; each id's
/// row where the block holds it, zeros elsewhere, into `out` (C order).
/// An id outside [0, vocab) of the whole is the compiled take's error.
ErrorOr<void> takeBlock(const runtime::HostTensor &table,
                        const runtime::HostTensor &ids,
                        runtime::HostTensor &out, size_t axis, int64_t lo,
                        int64_t vocab, const TakeSite &site,
                        const Bindings &env) {
  bool wide = ids.type == runtime::StorageType::I64;
  if ((!wide && ids.type != runtime::StorageType::I32) ||
      axis >= table.shape.size())
    return Error::program("a vocab-parallel take's ids are not integers");
  int64_t pre = 1, post = 1, block = table.shape[axis];
  for (size_t d = 0; d < table.shape.size(); ++d)
    (d < axis ? pre : post) *= d == axis ? 1 : table.shape[d];
  int64_t n = ids.numElements();
  size_t row = size_t(post) * table.elementBytes();
  if (out.data.size() != size_t(pre * n) * row)
    return Error::program("a vocab-parallel take's result has not its size");
  int64_t bad = 0, firstBad = -1, firstId = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t id =
        wide ? ids.dataAs<int64_t>()[k] : int64_t(ids.dataAs<int32_t>()[k]);
    if (id < 0 || id >= vocab) {
      if (bad++ == 0)
        firstBad = k, firstId = id;
      continue;
    }
    for (int64_t p = 0; p < pre; ++p) {
      uint8_t *to = out.data.data() + size_t(p * n + k) * row;
      if (id >= lo && id < lo + block)
        std::memcpy(to, table.data.data() + size_t(p * block + id - lo) * row,
                    row);
      else
        std::memset(to, 0, row);
    }
  }
  if (bad == 0)
    return {};
  std::vector<int64_t> position(ids.shape.size());
  for (size_t d = ids.shape.size(); d-- > 0;) {
    position[d] = firstBad % ids.shape[d];
    firstBad /= ids.shape[d];
  }
  return takeIdError(site, firstId, position, bad, env);
}

void copyBlock(runtime::HostTensor &whole, runtime::HostTensor &block,
               const std::vector<int64_t> &offset, bool toBlock) {
  forEachBlockRun(whole.shape, block.shape, offset, whole.elementBytes(),
                  [&](size_t w, size_t b, size_t length) {
                    uint8_t *wp = whole.data.data() + w;
                    uint8_t *bp = block.data.data() + b;
                    std::memcpy(toBlock ? bp : wp, toBlock ? wp : bp, length);
                    return true;
                  });
}

} // namespace ein
