// Training data for `einc train`: a dataset file mapped read-only, cut into
// samples (stream windows or rows) and converted into batches. See the header.
#include "ein/Runtime/Dataset.h"

#include "ein/Runtime/Npy.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {
namespace runtime {

uint64_t sampleHash(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

namespace {

/// The element types a dataset may hold.
enum class Elem { U8, U16, U32, I8, I16, I32, I64, F32, F64 };

struct ElemInfo {
  Elem elem;
  const char *name; // as open()'s rawType and elementName() spell it
  const char *code; // the numpy descr without its byte order
  unsigned bytes;
};

constexpr ElemInfo kElems[] = {
    {Elem::U8, "u8", "u1", 1},   {Elem::U16, "u16", "u2", 2},
    {Elem::U32, "u32", "u4", 4}, {Elem::I8, "i8", "i1", 1},
    {Elem::I16, "i16", "i2", 2}, {Elem::I32, "i32", "i4", 4},
    {Elem::I64, "i64", "i8", 8}, {Elem::F32, "f32", "f4", 4},
    {Elem::F64, "f64", "f8", 8},
};

constexpr const char *kSupported =
    "u8 u16 u32 i8 i16 i32 i64 f32 f64 (numpy <u1 <u2 <u4 |i1 <i2 <i4 <i8 "
    "<f4 <f8)";

const ElemInfo *byName(const std::string &name) {
  for (const ElemInfo &info : kElems)
    if (name == info.name)
      return &info;
  return nullptr;
}

/// The element type of a .npy descr, or an error message in `why`.
const ElemInfo *byDescr(const std::string &descr, std::string &why) {
  char order = descr.empty() ? '\0' : descr[0];
  std::string code = descr;
  if (order == '<' || order == '>' || order == '|' || order == '=')
    code = descr.substr(1);
  for (const ElemInfo &info : kElems) {
    if (code != info.code)
      continue;
    if (info.bytes == 1 || order == '<' || order == '=')
      return &info;
    if (order == '>') {
      why = fmt::format("big-endian data ('{}') is not supported; convert "
                        "with arr.astype(arr.dtype.newbyteorder('<'))",
                        descr);
      return nullptr;
    }
    why = fmt::format("descr '{}' has no little-endian byte order", descr);
    return nullptr;
  }
  std::string what;
  if (!code.empty() && (code[0] == 'O'))
    what = " (Python objects)";
  else if (code == "b1" || code == "?")
    what = " (bool)";
  else if (code == "f2" || code == "e")
    what = " (f16)";
  else if (code == "u8")
    what = " (u64: token ids beyond i64 are not supported)";
  why = fmt::format("unsupported dtype '{}'{} for a dataset; supported: {}",
                    descr, what, kSupported);
  return nullptr;
}

bool isFloat(Elem e) {
  switch (e) {
  case Elem::F32:
  case Elem::F64:
    return true;
  case Elem::U8:
  case Elem::U16:
  case Elem::U32:
  case Elem::I8:
  case Elem::I16:
  case Elem::I32:
  case Elem::I64:
    return false;
  }
  return false;
}

template <typename T> T loadLE(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T)); // little-endian hosts only, as Npy.cpp
  return v;
}

/// Converts `n` elements of type Src at `src` into Dst at `dst`; on a value
/// that does not convert, sets `bad` to its index and `why` to what is wrong
/// with it ("4294967295 does not fit in i32").
template <typename Src, typename Dst>
bool convertRun(const uint8_t *src, int64_t n, uint8_t *dst, int64_t &bad,
                std::string &why) {
  for (int64_t i = 0; i < n; ++i) {
    Src v = loadLE<Src>(src + i * sizeof(Src));
    Dst out;
    if constexpr (std::is_integral_v<Dst>) {
      static_assert(std::is_integral_v<Src>, "float data into an int batch");
      using Lim = std::numeric_limits<Dst>;
      bool fits;
      if constexpr (std::is_signed_v<Src>)
        fits = static_cast<int64_t>(v) >= static_cast<int64_t>(Lim::min()) &&
               static_cast<int64_t>(v) <= static_cast<int64_t>(Lim::max());
      else
        fits = static_cast<uint64_t>(v) <= static_cast<uint64_t>(Lim::max());
      if (!fits) {
        bad = i;
        why = fmt::format("{} does not fit in {}", v,
                          sizeof(Dst) == 1   ? "i8"
                          : sizeof(Dst) == 4 ? "i32"
                                             : "i64");
        return false;
      }
      out = static_cast<Dst>(v);
    } else if constexpr (std::is_integral_v<Src>) {
      // An integer (a token id) must arrive exactly, not rounded.
      out = static_cast<Dst>(v);
      if (static_cast<long double>(out) != static_cast<long double>(v)) {
        bad = i;
        why = fmt::format("{} is not exactly representable in {}", v,
                          sizeof(Dst) == 4 ? "f32" : "f64");
        return false;
      }
    } else {
      // f64 into f32 rounds to nearest, as numpy's astype(np.float32); a
      // finite value beyond f32's range would become inf and is refused.
      out = static_cast<Dst>(v);
      if (std::isfinite(v) && !std::isfinite(out)) {
        bad = i;
        why = fmt::format("{} overflows f32", v);
        return false;
      }
    }
    std::memcpy(dst + i * sizeof(Dst), &out, sizeof(Dst));
  }
  return true;
}

template <typename Dst>
bool convertTo(Elem from, const uint8_t *src, int64_t n, uint8_t *dst,
               int64_t &bad, std::string &why) {
  switch (from) {
  case Elem::U8:
    return convertRun<uint8_t, Dst>(src, n, dst, bad, why);
  case Elem::U16:
    return convertRun<uint16_t, Dst>(src, n, dst, bad, why);
  case Elem::U32:
    return convertRun<uint32_t, Dst>(src, n, dst, bad, why);
  case Elem::I8:
    return convertRun<int8_t, Dst>(src, n, dst, bad, why);
  case Elem::I16:
    return convertRun<int16_t, Dst>(src, n, dst, bad, why);
  case Elem::I32:
    return convertRun<int32_t, Dst>(src, n, dst, bad, why);
  case Elem::I64:
    return convertRun<int64_t, Dst>(src, n, dst, bad, why);
  case Elem::F32:
    if constexpr (std::is_floating_point_v<Dst>)
      return convertRun<float, Dst>(src, n, dst, bad, why);
    break;
  case Elem::F64:
    if constexpr (std::is_floating_point_v<Dst>)
      return convertRun<double, Dst>(src, n, dst, bad, why);
    break;
  }
  bad = -1; // float into an integer batch: fill() refuses it up front
  return false;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

} // namespace

struct Dataset::Impl {
  std::string path;
  std::string elementName;
  Elem elem = Elem::U8;
  unsigned elemBytes = 1;
  std::vector<int64_t> shape;
  /// Elements per sample row (the product of the dims after the first).
  int64_t rowElements = 1;
  void *map = nullptr;
  size_t mapLength = 0;
  const uint8_t *data = nullptr; // the first element, inside `map`

  ~Impl() {
    if (map)
      ::munmap(map, mapLength);
  }
};

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Dataset::Dataset(Dataset &&) noexcept = default;
Dataset &Dataset::operator=(Dataset &&) noexcept = default;
Dataset::~Dataset() = default;

const std::vector<int64_t> &Dataset::shape() const { return impl->shape; }
const std::string &Dataset::elementName() const { return impl->elementName; }
const std::string &Dataset::path() const { return impl->path; }

ErrorOr<Dataset> Dataset::open(const std::string &path,
                               const std::string &rawType) {
  auto fail = [&](const std::string &what) {
    return Error::usage(fmt::format("{}: {}", path, what));
  };
  const bool isNpy = endsWith(path, ".npy");
  const ElemInfo *raw = nullptr;
  if (!rawType.empty()) {
    raw = byName(rawType);
    if (!raw)
      return fail(fmt::format("unknown dataset element type '{}'; supported: "
                              "{}",
                              rawType, kSupported));
  } else if (!isNpy) {
    return fail("a raw dataset file (not .npy) needs its element type (u16 "
                "for nanoGPT's .bin files)");
  }

  // O_NONBLOCK: opening a FIFO without a writer would wait forever; it is
  // refused below like every file that is not regular.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail(fmt::format("cannot stat: {}", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(S_ISDIR(st.st_mode)
                    ? "is a directory, not a dataset file"
                    : "is not a regular file (a dataset is memory-mapped)");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return fail("empty file, not a dataset");
  }
  if (static_cast<uint64_t>(st.st_size) > std::numeric_limits<size_t>::max()) {
    ::close(fd);
    return fail("too large to map on this machine");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->mapLength = static_cast<size_t>(st.st_size);
  void *map = ::mmap(nullptr, impl->mapLength, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapErr = errno;
  ::close(fd); // the mapping keeps the file
  if (map == MAP_FAILED)
    return fail(fmt::format("cannot map: {}", std::strerror(mapErr)));
  impl->map = map;
  const uint8_t *bytes = static_cast<const uint8_t *>(map);
  const uint64_t fileSize = impl->mapLength;

  const ElemInfo *info = raw;
  uint64_t dataOffset = 0;
  if (isNpy) {
    ErrorOr<NpyHeader> header = parseNpyHeader(bytes, impl->mapLength, path);
    if (!header)
      return header.error();
    std::string why;
    info = byDescr(header->descr, why);
    if (!info)
      return fail(why);
    if (raw && raw != info)
      return fail(fmt::format("the element type {} was given, but the file "
                              "holds {} ('{}')",
                              raw->name, info->name, header->descr));
    if (header->shape.empty())
      return fail("a 0-d array (shape ()) is not a dataset: save a 1-D token "
                  "stream or an array of rows");
    if (header->fortranOrder && header->shape.size() > 1)
      return fail("Fortran-order data is not supported for a dataset; save "
                  "it with np.save(path, np.ascontiguousarray(x))");
    std::optional<int64_t> count =
        checkedNumElements(header->shape, info->bytes);
    if (!count)
      return fail(fmt::format("shape {} is too large: its byte size "
                              "overflows 64 bits",
                              shapeTupleStr(header->shape)));
    const uint64_t dataBytes = static_cast<uint64_t>(*count) * info->bytes;
    const uint64_t have =
        fileSize - std::min<uint64_t>(fileSize, header->dataOffset);
    if (have != dataBytes)
      return fail(fmt::format(
          "{}: shape {} of '{}' needs {} data bytes, "
          "file has {}",
          have < dataBytes ? "truncated .npy file" : "data size mismatch",
          shapeTupleStr(header->shape), header->descr, dataBytes, have));
    impl->shape = header->shape;
    dataOffset = header->dataOffset;
  } else {
    if (fileSize % info->bytes != 0)
      return fail(fmt::format("size {} bytes is not a multiple of the {}-byte "
                              "element size of {}",
                              fileSize, info->bytes, info->name));
    impl->shape = {static_cast<int64_t>(fileSize / info->bytes)};
  }
  impl->elem = info->elem;
  impl->elemBytes = info->bytes;
  impl->elementName = info->name;
  impl->data = bytes + dataOffset;
  for (size_t i = 1; i < impl->shape.size(); ++i)
    impl->rowElements *= impl->shape[i]; // bounded by the checked count
  if (impl->shape[0] == 0 || impl->rowElements == 0)
    return fail(
        fmt::format("empty dataset (shape {})", shapeTupleStr(impl->shape)));
  return Dataset(std::move(impl));
}

ErrorOr<int64_t> Dataset::sampleCount(const HostTensor &batch, int64_t begin,
                                      int64_t end) const {
  const Impl &d = *impl;
  const int64_t n = d.shape[0];
  if (begin < 0 || begin > end || end > n)
    return Error::usage(fmt::format("{}: the split [{}, {}) is not within "
                                    "the file's {} samples",
                                    d.path, begin, end, n));
  const int64_t length = end - begin;
  auto misfit = [&](const std::string &why) {
    return Error::usage(fmt::format("{}: a batch {} does not fit the "
                                    "dataset of shape {} (split of length "
                                    "{}): {}",
                                    d.path, batch.describe(),
                                    shapeTupleStr(d.shape), length, why));
  };
  if (isStream()) {
    if (batch.rank() != 2)
      return misfit("a token stream fills batches of shape {B, W} (B "
                    "windows of W tokens)");
    const int64_t window = batch.shape[1];
    if (window < 1)
      return misfit("the window length W is 0");
    if (length < window)
      return misfit(
          fmt::format("the split is shorter than one window of {}", window));
    return length - window + 1;
  }
  if (batch.rank() != static_cast<int64_t>(d.shape.size()))
    return misfit(fmt::format("a dataset of rows fills batches of rank {} "
                              "(B, then the rows' shape {})",
                              d.shape.size(),
                              shapeTupleStr(std::vector<int64_t>(
                                  d.shape.begin() + 1, d.shape.end()))));
  for (size_t i = 1; i < d.shape.size(); ++i)
    if (batch.shape[i] != d.shape[i])
      return misfit(fmt::format("dim {} is {} in the batch but {} in the "
                                "file",
                                i, batch.shape[i], d.shape[i]));
  if (length == 0)
    return misfit("the split holds no rows");
  return length;
}

ErrorOr<std::vector<int64_t>> Dataset::fill(HostTensor &batch, int64_t begin,
                                            int64_t end, SampleOrder order,
                                            uint64_t seed,
                                            uint64_t firstSample) const {
  const Impl &d = *impl;
  bool intoFloat = false;
  switch (batch.type) {
  case StorageType::I32:
  case StorageType::I64:
  case StorageType::I8:
    break;
  case StorageType::F32:
  case StorageType::F64:
    intoFloat = true;
    break;
  case StorageType::F16:
  case StorageType::BF16:
  case StorageType::F8E4M3:
  case StorageType::F8E5M2:
  case StorageType::Bool:
    return Error::usage(fmt::format("{}: cannot fill a {} batch from a "
                                    "dataset (supported: i8, i32, i64, f32, "
                                    "f64)",
                                    d.path, batch.describe()));
  }
  if (!intoFloat && isFloat(d.elem))
    return Error::usage(fmt::format("{}: {} data cannot fill the integer "
                                    "batch {} (float data needs an f32 or "
                                    "f64 parameter)",
                                    d.path, d.elementName, batch.describe()));
  ErrorOr<int64_t> starts = sampleCount(batch, begin, end);
  if (!starts)
    return starts.error();
  if (!batch.isConsistent() || !batch.isCOrder())
    return Error::usage(fmt::format("{}: the batch {} is not a dense C-order "
                                    "tensor",
                                    d.path, batch.describe()));
  const int64_t samples = batch.shape[0];
  const int64_t perSample = isStream() ? batch.shape[1] : d.rowElements;
  const uint64_t stride =
      isStream() ? static_cast<uint64_t>(std::max<int64_t>(perSample - 1, 1))
                 : 1;
  const unsigned outBytes = batch.elementBytes();
  std::vector<int64_t> firsts;
  firsts.reserve(static_cast<size_t>(samples));
  for (int64_t b = 0; b < samples; ++b) {
    const uint64_t c = firstSample + static_cast<uint64_t>(b);
    const uint64_t count = static_cast<uint64_t>(*starts);
    uint64_t index = 0;
    switch (order) {
    case SampleOrder::Sequential:
      // Exact (c * stride) mod count, without wrapping at 2^64.
      index = static_cast<uint64_t>(static_cast<unsigned __int128>(c) * stride %
                                    count);
      break;
    case SampleOrder::Random:
      index = sampleHash(seed, c) % count;
      break;
    }
    const int64_t sample = begin + static_cast<int64_t>(index);
    const int64_t first = isStream() ? sample : sample * d.rowElements;
    firsts.push_back(first);
    const uint8_t *src = d.data + first * d.elemBytes;
    uint8_t *dst = batch.data.data() + b * perSample * outBytes;
    int64_t bad = 0;
    std::string why;
    bool ok = false;
    switch (batch.type) {
    case StorageType::I32:
      ok = convertTo<int32_t>(d.elem, src, perSample, dst, bad, why);
      break;
    case StorageType::I64:
      ok = convertTo<int64_t>(d.elem, src, perSample, dst, bad, why);
      break;
    case StorageType::I8:
      ok = convertTo<int8_t>(d.elem, src, perSample, dst, bad, why);
      break;
    case StorageType::F32:
      ok = convertTo<float>(d.elem, src, perSample, dst, bad, why);
      break;
    case StorageType::F64:
      ok = convertTo<double>(d.elem, src, perSample, dst, bad, why);
      break;
    case StorageType::F16:
    case StorageType::BF16:
    case StorageType::F8E4M3:
    case StorageType::F8E5M2:
    case StorageType::Bool:
      break; // refused above
    }
    if (!ok)
      return Error::usage(fmt::format("{}: element {} ({}): {} (filling the "
                                      "batch {})",
                                      d.path, first + bad, d.elementName, why,
                                      batch.describe()));
  }
  return firsts;
}

} // namespace runtime
} // namespace ein
