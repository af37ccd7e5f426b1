// The C++ API's tensors: storage, views, element access, .npy files.
#include "Internal.h"

#include "ein/Runtime/FloatConvert.h"
#include "ein/Runtime/Npy.h"
#include "ein/Runtime/Npz.h"
#include "ein/Runtime/SafeTensors.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace ein::api {
namespace detail {

// The public ein::api::DType is written out in include/ein/API/Types.h, which
// includes nothing internal; these asserts hold it to DTypes.def: each row
// names a public enumerator of the same value, size and name.
constexpr bool sameName(const char *a, const char *b) {
  for (; *a && *a == *b; ++a, ++b) {
  }
  return *a == *b;
}
#define EIN_DTYPE(Enum, Name, Bytes, ...)                                      \
  static_assert(static_cast<unsigned>(DType::Enum) ==                          \
                    static_cast<unsigned>(ein::DType::Enum) &&                 \
                itemsize(DType::Enum) == Bytes &&                              \
                sameName(name(DType::Enum), Name));
#include "ein/Shape/DTypes.def"

// Switches listing the rows, so that -Wswitch names a public enumerator
// that has no row.
ein::DType internal(DType t) {
  switch (t) {
#define EIN_DTYPE(Enum, ...)                                                   \
  case DType::Enum:                                                            \
    return ein::DType::Enum;
#include "ein/Shape/DTypes.def"
  }
  return ein::DType::F32;
}
DType external(ein::DType t) {
  switch (t) {
#define EIN_DTYPE(Enum, ...)                                                   \
  case ein::DType::Enum:                                                       \
    return DType::Enum;
#include "ein/Shape/DTypes.def"
  }
  return DType::F32;
}

ErrorInfo toInfo(const ein::Error &error) {
  ErrorInfo info;
  info.kind = error.kind == ErrorKind::Usage ? ErrorInfo::Kind::Usage
                                             : ErrorInfo::Kind::Program;
  // einc prints "einc: error: ..." for errors without a file; the API has
  // no tool name, so the text starts at "error:".
  std::string text = error.str("ein");
  if (text.rfind("ein: ", 0) == 0)
    text = text.substr(5);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  info.message = std::move(text);
  return info;
}

ErrorInfo usageError(const std::string &message) {
  return {ErrorInfo::Kind::Usage, "error: " + message};
}
ErrorInfo programError(const std::string &message) {
  return {ErrorInfo::Kind::Program, "error: " + message};
}

Result<size_t> checkedBytes(DType dtype, const std::vector<int64_t> &shape) {
  auto count = runtime::checkedNumElements(shape, itemsize(dtype));
  if (!count)
    return usageError(fmt::format("cannot make a tensor of shape {}: a size "
                                  "is negative or the size overflows",
                                  runtime::shapeTupleStr(shape)));
  return size_t(*count) * itemsize(dtype);
}

Result<Tensor> allocateHost(DType dtype, const std::vector<int64_t> &shape,
                            bool zero) {
  auto checked = checkedBytes(dtype, shape);
  if (!checked)
    return checked.error();
  uint64_t bytes = *checked;
  // The machine's memory is read from /proc and cgroup files: only for
  // sizes where it could matter (a small call must not pay for it).
  if (bytes > (uint64_t(1) << 26) && bytes > runtime::hostMemoryBytes())
    return usageError(fmt::format(
        "cannot make a tensor of shape {} ({} bytes): more than this "
        "machine's memory",
        runtime::shapeTupleStr(shape), bytes));
  auto storage = std::make_shared<Storage>();
  // 64-byte aligned (a cache line, an AVX-512 vector); never 0 bytes.
  size_t rounded = (bytes + 63) / 64 * 64;
  storage->base = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!storage->base)
    return usageError(fmt::format("cannot allocate {} bytes", bytes));
  storage->owned = true;
  storage->bytes = bytes;
  if (zero)
    std::memset(storage->base, 0, bytes);
  return Tensor(std::move(storage), dtype, cpu, shape,
                runtime::cOrderStrides(shape), 0);
}

std::string axesString(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : " ") + n;
  return s;
}

void stridedCopy(const Tensor &src, const Tensor &dst) {
  int64_t n = src.numel();
  if (n == 0)
    return;
  size_t item = itemsize(src.dtype());
  size_t rank = src.shape().size();
  // The innermost dims that are contiguous in both go as one memcpy.
  int64_t run = 1;
  size_t outer = rank;
  while (outer > 0) {
    size_t d = outer - 1;
    if (src.strides()[d] != run && src.shape()[d] != 1)
      break;
    if (dst.strides()[d] != run && dst.shape()[d] != 1)
      break;
    run *= src.shape()[d];
    --outer;
  }
  std::vector<int64_t> index(outer, 0);
  auto *s = static_cast<const char *>(src.data());
  auto *t = static_cast<char *>(dst.data());
  for (int64_t done = 0; done < n; done += run) {
    int64_t so = 0, to = 0;
    for (size_t d = 0; d < outer; ++d) {
      so += index[d] * src.strides()[d];
      to += index[d] * dst.strides()[d];
    }
    std::memcpy(t + to * int64_t(item), s + so * int64_t(item),
                size_t(run) * item);
    for (size_t d = outer; d-- > 0;) {
      if (++index[d] < src.shape()[d])
        break;
      index[d] = 0;
    }
  }
}

namespace {

std::optional<std::string> encode(void *p, DType t, double v) {
  auto integral = [&](double lo, double hi) -> std::optional<std::string> {
    if (!(v == std::floor(v) && v >= lo && v <= hi))
      return fmt::format("{} cannot hold {}", name(t), v);
    return std::nullopt;
  };
  switch (t) {
  case DType::F64:
    *static_cast<double *>(p) = v;
    break;
  case DType::F32:
    *static_cast<float *>(p) = float(v);
    break;
  case DType::F16:
    *static_cast<uint16_t *>(p) = runtime::floatToF16Bits(float(v));
    break;
  case DType::BF16:
    *static_cast<uint16_t *>(p) = runtime::floatToBF16Bits(float(v));
    break;
  case DType::F8E4M3:
    *static_cast<uint8_t *>(p) = runtime::floatToF8E4M3Bits(float(v));
    break;
  case DType::F8E5M2:
    *static_cast<uint8_t *>(p) = runtime::floatToF8E5M2Bits(float(v));
    break;
  case DType::I64:
    if (auto e = integral(-9223372036854775808.0, 9223372036854774784.0))
      return e;
    *static_cast<int64_t *>(p) = int64_t(v);
    break;
  case DType::I32:
    if (auto e = integral(-2147483648.0, 2147483647.0))
      return e;
    *static_cast<int32_t *>(p) = int32_t(v);
    break;
  case DType::I8:
    if (auto e = integral(-128.0, 127.0))
      return e;
    *static_cast<int8_t *>(p) = int8_t(v);
    break;
  case DType::Bool:
    if (v != 0 && v != 1)
      return fmt::format("bool cannot hold {} (only 0 or 1)", v);
    *static_cast<uint8_t *>(p) = uint8_t(v);
    break;
  }
  return std::nullopt;
}

Result<char *> pointerAt(const Tensor &t, const std::vector<int64_t> &index) {
  if (!t.defined())
    return usageError("element access on an undefined tensor");
  if (t.device() != cpu)
    return usageError(fmt::format("element access to a CUDA tensor ({}); "
                                  "copy it with .to(ein::cpu) first",
                                  t.describe()));
  if (index.size() != t.shape().size())
    return usageError(fmt::format("index {} has {} entries; the tensor {} has "
                                  "rank {}",
                                  runtime::shapeTupleStr(index), index.size(),
                                  t.describe(), t.rank()));
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= t.shape()[d])
      return usageError(fmt::format("index {} is out of range in dim {} of "
                                    "size {}",
                                    runtime::shapeTupleStr(index), d,
                                    t.shape()[d]));
    offset += index[d] * t.strides()[d];
  }
  return static_cast<char *>(t.data()) + offset * int64_t(itemsize(t.dtype()));
}

std::vector<int64_t> unflatten(const Tensor &t, int64_t flat) {
  std::vector<int64_t> index(t.shape().size());
  for (size_t d = index.size(); d-- > 0;) {
    index[d] = flat % t.shape()[d];
    flat /= t.shape()[d];
  }
  return index;
}

} // namespace
} // namespace detail

using namespace detail;

Tensor::Tensor(std::shared_ptr<detail::Storage> storage, DType dtype,
               Device device, std::vector<int64_t> shape,
               std::vector<int64_t> strides, int64_t offset)
    : storage_(std::move(storage)), offset_(offset), dtype_(dtype),
      device_(device), shape_(std::move(shape)), strides_(std::move(strides)) {
  data_ =
      static_cast<char *>(storage_->base) + offset_ * int64_t(itemsize(dtype_));
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape_)
    n *= s;
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] == 0)
      return true;
    if (shape_[d] != 1 && strides_[d] != expected)
      return false;
    expected *= shape_[d];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined())
    return "an undefined tensor";
  std::string dims;
  for (int64_t s : shape_)
    dims += (dims.empty() ? "" : ", ") + std::to_string(s);
  return fmt::format("{}[{}] strides {}{}", name(dtype_), dims,
                     runtime::shapeTupleStr(strides_),
                     device_ == cuda ? " on cuda" : "");
}

ErrorInfo Tensor::dtypeMismatch(DType as) const {
  return usageError(
      fmt::format("the tensor holds {}, not {}", name(dtype_), name(as)));
}

ErrorInfo Tensor::indexError(std::initializer_list<int64_t> index) const {
  // Also a CUDA tensor's element access: pointerAt says so.
  auto p = pointerAt(*this, std::vector<int64_t>(index));
  return p ? usageError("bad index") : p.error();
}

namespace nothrow {

Result<Tensor> zeros(DType dtype, std::vector<int64_t> shape, Device device) {
  return allocate(dtype, shape, true, device);
}

Result<Tensor> view(void *data, DType dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides, Device device) {
  if (device == cuda)
    if (auto usable = nothrow::device_name(cuda); !usable)
      return usable.error();
  if (!runtime::checkedNumElements(shape, itemsize(dtype)))
    return usageError(fmt::format("cannot view shape {}: a size is negative "
                                  "or the size overflows",
                                  runtime::shapeTupleStr(shape)));
  if (strides.empty())
    strides = runtime::cOrderStrides(shape);
  if (strides.size() != shape.size())
    return usageError(fmt::format("shape {} has {} dims but {} strides were "
                                  "given",
                                  runtime::shapeTupleStr(shape), shape.size(),
                                  strides.size()));
  for (int64_t s : strides)
    if (s < 0)
      return usageError(fmt::format("strides {}: negative strides are not "
                                    "supported",
                                    runtime::shapeTupleStr(strides)));
  if (!data && runtime::checkedNumElements(shape).value_or(0) > 0)
    return usageError("a view of a null pointer");
  auto storage = std::make_shared<Storage>();
  storage->base = data;
  storage->device = device;
  return Tensor(std::move(storage), dtype, device, std::move(shape),
                std::move(strides), 0);
}

Result<Tensor> from_data(DType dtype, std::vector<int64_t> shape,
                         const void *data, size_t count) {
  auto t = allocate(dtype, shape, false);
  if (!t)
    return t;
  if (int64_t(count) != t->numel())
    return usageError(fmt::format("{} values given for shape {} ({} "
                                  "elements)",
                                  count, runtime::shapeTupleStr(shape),
                                  t->numel()));
  if (count)
    std::memcpy(t->data(), data, count * itemsize(dtype));
  return t;
}

Result<double> get(const Tensor &t, const std::vector<int64_t> &index) {
  auto p = pointerAt(t, index);
  if (!p)
    return p.error();
  return runtime::decodeElement(*p, runtime::toStorage(internal(t.dtype())));
}

Result<void> set(const Tensor &t, const std::vector<int64_t> &index,
                 double value) {
  auto p = pointerAt(t, index);
  if (!p)
    return p.error();
  if (auto why = encode(*p, t.dtype(), value))
    return usageError(*why);
  return {};
}

Result<double> flat(const Tensor &t, int64_t index) {
  if (!t.defined() || index < 0 || index >= t.numel())
    return usageError(fmt::format("flat index {} is out of range for {}", index,
                                  t.describe()));
  return get(t, unflatten(t, index));
}

Result<Tensor> scalar(double value, DType dtype) {
  auto t = allocate(dtype, {}, false);
  if (!t)
    return t;
  if (auto why = encode(t->data(), dtype, value))
    return usageError(*why);
  return t;
}

namespace {

/// A host tensor read from a file as an API tensor, in the file's layout
/// (a Fortran-order .npy stays a strided tensor).
Result<Tensor> fromHost(const runtime::HostTensor &host) {
  auto stored = runtime::toDType(host.type);
  DType dtype = stored ? external(*stored) : bool_;
  auto t = allocate(dtype, host.shape, false);
  if (!t)
    return t;
  std::vector<int64_t> strides = host.strides();
  if (!host.data.empty())
    std::memcpy(t->data(), host.data.data(), host.data.size());
  return Tensor(t->storage(), dtype, cpu, host.shape, strides, 0);
}

/// `t` as a C-order host tensor (copied from a device or a strided view);
/// `what` names the call for the undefined-tensor error.
Result<runtime::HostTensor> toHost(const Tensor &t, const char *what) {
  if (!t.defined())
    return usageError(fmt::format("{} of an undefined tensor", what));
  Tensor dense = t;
  if (t.device() != cpu) {
    auto host = to(t, cpu);
    if (!host)
      return host.error();
    dense = *host;
  } else if (!t.is_contiguous()) {
    auto copy = clone(t);
    if (!copy)
      return copy.error();
    dense = *copy;
  }
  runtime::HostTensor host;
  host.type = runtime::toStorage(internal(t.dtype()));
  host.shape = t.shape();
  auto *bytes = static_cast<const uint8_t *>(dense.data());
  host.data.assign(bytes, bytes + dense.numel() * int64_t(itemsize(t.dtype())));
  return host;
}

} // namespace

Result<Tensor> load_npy(const std::string &path) {
  auto host = runtime::readNpy(path);
  if (!host)
    return toInfo(host.error());
  return fromHost(*host);
}

Result<void> save_npy(const Tensor &t, const std::string &path) {
  auto host = toHost(t, "save_npy");
  if (!host)
    return host.error();
  if (auto written = runtime::writeNpy(path, *host); !written)
    return toInfo(written.error());
  return {};
}

namespace {

/// Every tensor of a file read by name (a safetensors file or an .npz
/// archive: both list `entries` and read one by `tensor(name)`).
template <typename File>
Result<std::map<std::string, Tensor>> tensorsByName(const File &file) {
  std::map<std::string, Tensor> tensors;
  for (const auto &entry : file.entries) {
    auto host = file.tensor(entry.name);
    if (!host)
      return toInfo(host.error());
    auto t = fromHost(*host);
    if (!t)
      return t.error();
    tensors.emplace(entry.name, std::move(*t));
  }
  return tensors;
}

/// `tensors` written by name through `write` (writeSafeTensors, writeNpz);
/// `caller` names the API function in errors.
template <typename Write>
Result<void> writeByName(const std::map<std::string, Tensor> &tensors,
                         const char *caller, Write &&write) {
  std::vector<runtime::HostTensor> hosts;
  hosts.reserve(tensors.size());
  std::vector<runtime::NamedTensor> named;
  for (auto &[name, t] : tensors) {
    auto host = toHost(t, caller);
    if (!host)
      return host.error();
    hosts.push_back(std::move(*host));
    named.push_back({name, &hosts.back()});
  }
  if (auto written = write(named); !written)
    return toInfo(written.error());
  return {};
}

} // namespace

Result<std::map<std::string, Tensor>>
load_safetensors(const std::string &path) {
  auto file = runtime::readSafeTensors(path);
  if (!file)
    return toInfo(file.error());
  return tensorsByName(*file);
}

Result<void> save_safetensors(const std::map<std::string, Tensor> &tensors,
                              const std::string &path) {
  return writeByName(tensors, "save_safetensors",
                     [&](const std::vector<runtime::NamedTensor> &named) {
                       return runtime::writeSafeTensors(path, named);
                     });
}

Result<std::map<std::string, Tensor>> load_npz(const std::string &path) {
  auto file = runtime::readNpz(path);
  if (!file)
    return toInfo(file.error());
  return tensorsByName(*file);
}

Result<void> save_npz(const std::map<std::string, Tensor> &tensors,
                      const std::string &path) {
  return writeByName(tensors, "save_npz",
                     [&](const std::vector<runtime::NamedTensor> &named) {
                       return runtime::writeNpz(path, named);
                     });
}

} // namespace nothrow
} // namespace ein::api
