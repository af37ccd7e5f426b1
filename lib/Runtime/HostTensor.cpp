// Host tensors: storage types, checked sizes and dtype conversions.
#include "ein/Runtime/HostTensor.h"

#include "ein/Runtime/FloatConvert.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ein runtime assumes a little-endian host"
#endif

namespace ein {
namespace runtime {

// StorageType and DType are both generated from DTypes.def, so a value cast
// converts them; these asserts hold every row to that.
#define EIN_DTYPE(Enum, ...)                                                   \
  static_assert(static_cast<unsigned>(StorageType::Enum) ==                    \
                static_cast<unsigned>(DType::Enum));
#include "ein/Shape/DTypes.def"

StorageType toStorage(DType type) {
  return static_cast<StorageType>(static_cast<unsigned>(type));
}

std::optional<DType> toDType(StorageType type) {
  return static_cast<DType>(static_cast<unsigned>(type));
}

unsigned storageBytes(StorageType type) { return dtypeBytes(*toDType(type)); }

const char *storageName(StorageType type) { return dtypeName(*toDType(type)); }

std::optional<StorageType> parseStorageType(const std::string &name) {
  if (std::optional<DType> type = parseDType(name))
    return toStorage(*type);
  return std::nullopt;
}

bool isFloatStorage(StorageType type) { return isFloat(*toDType(type)); }

std::optional<int64_t> checkedNumElements(const std::vector<int64_t> &shape,
                                          unsigned elementBytes) {
  int64_t nonzero = elementBytes == 0 ? 1 : static_cast<int64_t>(elementBytes);
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d == 0) {
      zero = true;
      continue;
    }
    if (__builtin_mul_overflow(nonzero, d, &nonzero))
      return std::nullopt;
  }
  if (zero)
    return 0;
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d; // cannot overflow: bounded by `nonzero`
  return count;
}

namespace {
/// The smaller of a cgroup v2 memory limit (when this process has one) and
/// `limit`.
uint64_t withCgroupLimit(uint64_t limit) {
  int fd = ::open("/sys/fs/cgroup/memory.max", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return limit;
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0 || !std::isdigit(static_cast<unsigned char>(buf[0])))
    return limit; // "max": no limit
  uint64_t value = std::strtoull(buf, nullptr, 10);
  return value > 0 && value < limit ? value : limit;
}
} // namespace

uint64_t hostMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
  uint64_t limit = std::numeric_limits<uint64_t>::max();
  if (pages > 0 && pageSize > 0)
    limit = static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
  return withCgroupLimit(limit);
}

std::string shapeTupleStr(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  s += ")";
  return s;
}

ErrorOr<HostTensor> HostTensor::create(StorageType type,
                                       std::vector<int64_t> shape) {
  unsigned bytes = storageBytes(type);
  std::optional<int64_t> count = checkedNumElements(shape, bytes);
  if (!count)
    return Error::usage("invalid shape " + shapeTupleStr(shape) + " for " +
                        storageName(type) +
                        ": a dim is negative or the size overflows 64 bits");
  int64_t size = *count * bytes;
  if (static_cast<uint64_t>(size) > std::numeric_limits<size_t>::max() / 2)
    return Error::usage("tensor of shape " + shapeTupleStr(shape) +
                        " is too large");
  // Empty inputs make results of any size cheap to ask for (reduce over an
  // empty (0, 2**40) input gives 2**40 zeros): refuse what cannot fit in
  // memory rather than fail inside the allocator.
  if (uint64_t memory = hostMemoryBytes(); static_cast<uint64_t>(size) > memory)
    return Error::usage("tensor of shape " + shapeTupleStr(shape) + " needs " +
                        std::to_string(size) +
                        " bytes, more than this machine's memory (" +
                        std::to_string(memory) + " bytes)");
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(size), 0);
  return t;
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t HostTensor::byteSize() const {
  return static_cast<size_t>(numElements()) * elementBytes();
}

std::vector<int64_t> cOrderStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i] == 0 ? 1 : shape[i];
  }
  return s;
}

std::vector<int64_t> fortranStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    s[i] = acc;
    acc *= shape[i] == 0 ? 1 : shape[i];
  }
  return s;
}

std::vector<int64_t> HostTensor::strides() const {
  return layoutStrides.empty() ? cOrderStrides(shape) : layoutStrides;
}

std::vector<int64_t> HostTensor::byteStrides() const {
  std::vector<int64_t> s = strides();
  for (int64_t &x : s)
    x *= elementBytes();
  return s;
}

namespace {
bool hasZeroDim(const std::vector<int64_t> &shape) {
  return std::find(shape.begin(), shape.end(), 0) != shape.end();
}
} // namespace

bool HostTensor::isCOrder() const {
  if (layoutStrides.empty())
    return true;
  if (layoutStrides.size() != shape.size())
    return false;
  if (hasZeroDim(shape))
    return true;
  std::vector<int64_t> c = cOrderStrides(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] > 1 && layoutStrides[i] != c[i])
      return false;
  return true;
}

bool HostTensor::isConsistent() const {
  std::optional<int64_t> count = checkedNumElements(shape, elementBytes());
  if (!count || static_cast<uint64_t>(*count) * elementBytes() !=
                    static_cast<uint64_t>(data.size()))
    return false;
  if (layoutStrides.empty())
    return true;
  if (layoutStrides.size() != shape.size())
    return false;
  for (int64_t s : layoutStrides)
    if (s < 0)
      return false;
  if (*count == 0)
    return true;
  // Dense: the dims of size > 1, by increasing stride, have strides 1 and
  // the running products of their sizes (so two such dims never share one).
  std::vector<size_t> dims;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] > 1)
      dims.push_back(i);
  std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) {
    return layoutStrides[a] < layoutStrides[b];
  });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (layoutStrides[d] != expected)
      return false;
    expected *= shape[d]; // at most *count: no overflow
  }
  return true;
}

int64_t HostTensor::offsetOf(int64_t index) const {
  if (layoutStrides.empty())
    return index;
  int64_t offset = 0;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] <= 1)
      continue;
    offset += (index % shape[k]) * layoutStrides[k];
    index /= shape[k];
  }
  return offset;
}

int64_t HostTensor::indexAt(int64_t offset) const {
  if (layoutStrides.empty())
    return offset;
  // Dense layouts are mixed-radix numbers: each dim's index is one digit.
  int64_t index = 0;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] <= 1)
      continue;
    index = index * shape[k] + (offset / layoutStrides[k]) % shape[k];
  }
  return index;
}

HostTensor HostTensor::toCOrder() const {
  HostTensor c;
  c.type = type;
  c.shape = shape;
  if (isCOrder()) {
    c.data = data;
    return c;
  }
  c.data.resize(data.size());
  const unsigned bytes = elementBytes();
  const size_t rank = shape.size();
  const int64_t count = numElements();
  // An odometer over the C-order multi-index, carrying its storage offset.
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(c.data.data() + i * bytes, data.data() + offset * bytes, bytes);
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < shape[k]) {
        offset += layoutStrides[k];
        break;
      }
      offset -= (shape[k] - 1) * layoutStrides[k];
      index[k] = 0;
    }
  }
  return c;
}

int64_t firstInCOrder(const HostTensor &t, int64_t found,
                      const std::function<bool(int64_t offset)> &bad) {
  if (t.isCOrder())
    return found;
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    if (bad(t.offsetOf(i)))
      return i;
  return t.indexAt(found);
}

std::string HostTensor::describe() const {
  std::string s = storageName(type);
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

namespace {

template <typename T> T load(const HostTensor &t, int64_t i) {
  T v;
  std::memcpy(&v, t.data.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T> void store(HostTensor &t, int64_t i, T v) {
  std::memcpy(t.data.data() + i * sizeof(T), &v, sizeof(T));
}

bool isIntStorage(StorageType t) {
  return !isFloatStorage(t) && t != StorageType::Bool;
}

/// Element i (a storage offset) of an integer tensor, sign-extended.
int64_t loadInt(const HostTensor &t, int64_t i) {
  switch (t.type) {
  case StorageType::I64:
    return load<int64_t>(t, i);
  case StorageType::I32:
    return load<int32_t>(t, i);
  case StorageType::I8:
    return load<int8_t>(t, i);
  case StorageType::F64:
  case StorageType::F32:
  case StorageType::F16:
  case StorageType::BF16:
  case StorageType::F8E4M3:
  case StorageType::F8E5M2:
  case StorageType::Bool:
    break; // not integers: callers convert only integer tensors this way
  }
  return 0;
}

/// Element i of a float tensor as f32; exact for every type but f64.
float loadFloat(const HostTensor &t, int64_t i) {
  switch (t.type) {
  case StorageType::F32:
    return load<float>(t, i);
  case StorageType::F16:
    return f16BitsToFloat(load<uint16_t>(t, i));
  case StorageType::BF16:
    return bf16BitsToFloat(load<uint16_t>(t, i));
  case StorageType::F8E4M3:
    return f8e4m3BitsToFloat(load<uint8_t>(t, i));
  case StorageType::F8E5M2:
    return f8e5m2BitsToFloat(load<uint8_t>(t, i));
  case StorageType::F64:
    return static_cast<float>(load<double>(t, i));
  case StorageType::I64:
  case StorageType::I32:
  case StorageType::I8:
  case StorageType::Bool:
    break; // not floats: callers convert only float tensors this way
  }
  return static_cast<float>(
      decodeElement(t.data.data() + i * storageBytes(t.type), t.type));
}

/// Whether every value of `from` is exactly a value of `to` (both float).
bool floatWidens(StorageType from, StorageType to) {
  auto rank = [](StorageType t) {
    switch (t) {
    case StorageType::F8E4M3:
    case StorageType::F8E5M2:
      return 0;
    case StorageType::F16:
    case StorageType::BF16:
      return 1;
    case StorageType::F32:
      return 2;
    case StorageType::F64:
    case StorageType::I64: // not floats: callers ask only about floats
    case StorageType::I32:
    case StorageType::I8:
    case StorageType::Bool:
      return 3;
    }
    return 3;
  };
  // f16 and bf16 do not contain each other; every fp8 fits in both.
  return rank(from) < rank(to);
}

} // namespace

double decodeElement(const void *p, StorageType type) {
  auto as = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (type) {
  case StorageType::F64:
    return as(double());
  case StorageType::F32:
    return as(float());
  case StorageType::F16:
    return f16BitsToFloat(as(uint16_t()));
  case StorageType::BF16:
    return bf16BitsToFloat(as(uint16_t()));
  case StorageType::F8E4M3:
    return f8e4m3BitsToFloat(as(uint8_t()));
  case StorageType::F8E5M2:
    return f8e5m2BitsToFloat(as(uint8_t()));
  case StorageType::I64:
    return static_cast<double>(as(int64_t()));
  case StorageType::I32:
    return as(int32_t());
  case StorageType::I8:
    return as(int8_t());
  case StorageType::Bool:
    return as(uint8_t());
  }
  return 0;
}

double elementAsDouble(const HostTensor &t, int64_t index) {
  return decodeElement(t.data.data() + t.offsetOf(index) * t.elementBytes(),
                       t.type);
}

ErrorOr<HostTensor> convertTensor(const HostTensor &src, StorageType to) {
  if (!src.isConsistent())
    return Error::usage(std::string("tensor ") + src.describe() + " has " +
                        std::to_string(src.data.size()) +
                        " bytes of data, which does not match its shape "
                        "and layout");
  if (src.type == to)
    return src;
  const StorageType from = src.type;
  auto unsupported = [&]() {
    return Error::usage(std::string("cannot convert ") + storageName(from) +
                        " to " + storageName(to) +
                        " (only exact widenings, f32 -> f16/bf16/fp8 and "
                        "value-checked f64 -> f32 / narrower integers are "
                        "allowed)");
  };

  // Element by element in storage order: the result keeps src's layout.
  ErrorOr<HostTensor> made = HostTensor::create(to, src.shape);
  if (!made)
    return made;
  HostTensor &dst = *made;
  dst.layoutStrides = src.layoutStrides;
  const int64_t n = src.numElements();

  // Integers: every value that fits in `to` converts exactly (widenings
  // always; narrowings such as i64 -> i32 or i32 -> i8 checked value by
  // value).
  if (isIntStorage(from) && isIntStorage(to)) {
    const int bits = 8 * static_cast<int>(storageBytes(to));
    auto bad = [&](int64_t i) {
      int64_t v = loadInt(src, i);
      return bits < 64 && (v < -(int64_t(1) << (bits - 1)) ||
                           v >= (int64_t(1) << (bits - 1)));
    };
    for (int64_t i = 0; i < n; ++i) {
      if (bad(i)) {
        int64_t first = firstInCOrder(src, i, bad);
        return Error::usage(fmt::format(
            "cannot convert {} to {}: element {} ({}) is out of the {} range",
            storageName(from), storageName(to), first,
            loadInt(src, src.offsetOf(first)), storageName(to)));
      }
      int64_t v = loadInt(src, i);
      // Little-endian: the value's low bytes are the narrower integer.
      std::memcpy(dst.data.data() + i * storageBytes(to), &v, storageBytes(to));
    }
    return made;
  }
  if (!isFloatStorage(from) || !isFloatStorage(to))
    return unsupported();

  if (from == StorageType::F64 && to == StorageType::F32) {
    auto bad = [&](int64_t i) {
      double v = load<double>(src, i);
      return !std::isnan(v) && static_cast<double>(static_cast<float>(v)) != v;
    };
    for (int64_t i = 0; i < n; ++i) {
      if (bad(i)) {
        int64_t first = firstInCOrder(src, i, bad);
        return Error::usage(fmt::format(
            "cannot convert f64 to f32 exactly: element {} ({}) is not "
            "representable in f32; to round every element to the nearest "
            "f32, save the array as float32 (in numpy: "
            "np.save(path, x.astype(np.float32)))",
            first,
            fmt::format("{:.17g}", load<double>(src, src.offsetOf(first)))));
      }
      store<float>(dst, i, static_cast<float>(load<double>(src, i)));
    }
    return made;
  }
  if (to == StorageType::F64) {
    // from is narrower than f64: exact through f32.
    for (int64_t i = 0; i < n; ++i)
      store<double>(dst, i, static_cast<double>(loadFloat(src, i)));
    return made;
  }
  // Targets of at most 32 bits: the source must be f32 (rounding) or a
  // narrower format contained in the target (exact).
  if (from != StorageType::F32 && !floatWidens(from, to))
    return unsupported();
  for (int64_t i = 0; i < n; ++i) {
    float f = loadFloat(src, i);
    switch (to) {
    case StorageType::F32:
      store<float>(dst, i, f);
      break;
    case StorageType::F16:
      store<uint16_t>(dst, i, floatToF16Bits(f));
      break;
    case StorageType::BF16:
      store<uint16_t>(dst, i, floatToBF16Bits(f));
      break;
    case StorageType::F8E4M3:
      store<uint8_t>(dst, i, floatToF8E4M3Bits(f));
      break;
    case StorageType::F8E5M2:
      store<uint8_t>(dst, i, floatToF8E5M2Bits(f));
      break;
    case StorageType::F64: // handled above
    case StorageType::I64:
    case StorageType::I32:
    case StorageType::I8:
    case StorageType::Bool:
      return unsupported();
    }
  }
  return made;
}

} // namespace runtime
} // namespace ein
