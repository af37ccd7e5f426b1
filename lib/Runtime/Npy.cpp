// numpy .npy reading and writing. See the header for what is supported.
#include "ein/Runtime/Npy.h"
#include "ByteSource.h"

#include "ein/Runtime/FloatConvert.h"
#include "ein/Runtime/OutputFiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {
namespace runtime {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
/// Refuse headers larger than this: real ones are well under 1 KiB (numpy
/// itself refuses more than 10000 bytes by default).
constexpr size_t kMaxHeaderLen = 1u << 20;

//===----------------------------------------------------------------------===//
// Header dict parsing: a tiny subset of Python literal syntax.
//===----------------------------------------------------------------------===//

struct Header {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  /// Returns an error message, empty on success.
  std::string parse(Header &out) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return error("expected '{' to open the header dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (peek() != '\'' && peek() != '"')
        return error("expected a quoted key or '}'");
      if (std::string err = parseString(key); !err.empty())
        return err;
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after key '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (haveDescr)
          return error("duplicate key 'descr'");
        haveDescr = true;
        if (peek() == '[')
          return error("structured dtypes (a list descr) are not supported");
        if (peek() != '\'' && peek() != '"')
          return error("'descr' must be a string");
        if (std::string err = parseString(out.descr); !err.empty())
          return err;
      } else if (key == "fortran_order") {
        if (haveFortran)
          return error("duplicate key 'fortran_order'");
        haveFortran = true;
        if (consumeWord("True"))
          out.fortranOrder = true;
        else if (consumeWord("False"))
          out.fortranOrder = false;
        else
          return error("'fortran_order' must be True or False");
      } else if (key == "shape") {
        if (haveShape)
          return error("duplicate key 'shape'");
        haveShape = true;
        if (std::string err = parseShape(out.shape); !err.empty())
          return err;
      } else {
        return error("unexpected key '" + key +
                     "' (expected descr, fortran_order, shape)");
      }
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return error("expected ',' or '}' after the value of '" + key + "'");
    }
    skipSpace();
    if (pos != text.size())
      return error("unexpected text after the header dict");
    if (!haveDescr)
      return "header has no 'descr' key";
    if (!haveFortran)
      return "header has no 'fortran_order' key";
    if (!haveShape)
      return "header has no 'shape' key";
    return "";
  }

private:
  const std::string &text;
  size_t pos = 0;

  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  bool consume(char c) {
    if (peek() != c)
      return false;
    ++pos;
    return true;
  }
  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    char next = pos + n < text.size() ? text[pos + n] : '\0';
    if (std::isalnum(static_cast<unsigned char>(next)) || next == '_')
      return false;
    pos += n;
    return true;
  }
  void skipSpace() {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' ||
            text[pos] == '\r' || text[pos] == '\f' || text[pos] == '\v'))
      ++pos;
  }
  std::string error(const std::string &what) const {
    return "malformed header: " + what + " at offset " + std::to_string(pos) +
           " of " + quoted();
  }
  std::string quoted() const {
    std::string s = "\"";
    for (char c : text.substr(0, 200)) {
      if (c == '\n')
        s += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20)
        s += '?';
      else
        s += c;
    }
    if (text.size() > 200)
      s += "...";
    return s + "\"";
  }

  std::string parseString(std::string &out) {
    char quote = text[pos++];
    size_t start = pos;
    while (pos < text.size() && text[pos] != quote) {
      if (text[pos] == '\\')
        return error("escape sequences in strings are not supported");
      if (text[pos] == '\n')
        return error("unterminated string");
      ++pos;
    }
    if (pos >= text.size())
      return error("unterminated string");
    out = text.substr(start, pos - start);
    ++pos;
    return "";
  }

  std::string parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return error("'shape' must be a tuple such as (2, 3), (5,) or ()");
    shape.clear();
    bool sawComma = false;
    while (true) {
      skipSpace();
      if (consume(')'))
        break;
      int64_t dim;
      if (std::string err = parseDim(dim); !err.empty())
        return err;
      shape.push_back(dim);
      skipSpace();
      if (consume(',')) {
        sawComma = true;
        continue;
      }
      if (consume(')'))
        break;
      return error("expected ',' or ')' in 'shape'");
    }
    if (shape.size() == 1 && !sawComma)
      return error("'shape' (n) is an int, not a tuple; write (n,)");
    return "";
  }

  std::string parseDim(int64_t &dim) {
    bool negative = false;
    if (consume('-'))
      negative = true;
    else
      consume('+');
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      return error("expected a non-negative integer dim in 'shape'");
    uint64_t value = 0;
    bool tooBig = false;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      unsigned digit = static_cast<unsigned>(text[pos++] - '0');
      if (value >
          (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) /
              10)
        tooBig = true;
      else
        value = value * 10 + digit;
    }
    consume('L'); // Python 2 longs, as old numpy wrote them
    if (negative && value != 0)
      return error("negative dim in 'shape'");
    if (tooBig)
      return error("dim in 'shape' does not fit in 64 bits");
    dim = static_cast<int64_t>(value);
    return "";
  }
};

//===----------------------------------------------------------------------===//
// descr
//===----------------------------------------------------------------------===//

enum class FileType { F64, F32, F16, I64, I32, I8, Bool, U16, U8 };

struct FileDescr {
  FileType type;
  unsigned bytes;
};

/// Empty on success.
std::string parseDescr(const std::string &descr, FileDescr &out) {
  if (descr.empty())
    return "empty 'descr'";
  char order = descr[0];
  std::string code = descr;
  if (order == '<' || order == '>' || order == '|' || order == '=')
    code = descr.substr(1);
  else
    order = '=';
  struct Known {
    const char *code;
    FileType type;
    unsigned bytes;
  };
  static const Known known[] = {
      {"f8", FileType::F64, 8},  {"f4", FileType::F32, 4},
      {"f2", FileType::F16, 2},  {"i8", FileType::I64, 8},
      {"i4", FileType::I32, 4},  {"i1", FileType::I8, 1},
      {"b1", FileType::Bool, 1}, {"?", FileType::Bool, 1},
      {"u2", FileType::U16, 2},  {"u1", FileType::U8, 1},
  };
  for (const Known &k : known) {
    if (code != k.code)
      continue;
    if (order == '>' && k.bytes > 1)
      return "big-endian data ('" + descr +
             "') is not supported; convert with "
             "arr.astype(arr.dtype.newbyteorder('<'))";
    if (order == '|' && k.bytes > 1)
      return "descr '" + descr + "' has no byte order for a " +
             std::to_string(k.bytes) + "-byte type";
    out = {k.type, k.bytes};
    return "";
  }
  std::string what;
  if (!code.empty()) {
    switch (code[0]) {
    case 'c':
      what = " (complex)";
      break;
    case 'O':
      what = " (Python objects)";
      break;
    case 'U':
    case 'S':
    case 'a':
      what = " (strings)";
      break;
    case 'V':
      what = " (void/structured)";
      break;
    case 'M':
    case 'm':
      what = " (datetime)";
      break;
    default:
      break;
    }
  }
  return "unsupported dtype '" + descr + "'" + what +
         "; supported: <f8 <f4 <f2 <i8 <i4 |i1 |b1, and <u2 / |u1 holding raw "
         "bf16 / fp8 bits";
}

StorageType naturalType(FileType t) {
  switch (t) {
  case FileType::F64:
    return StorageType::F64;
  case FileType::F32:
    return StorageType::F32;
  case FileType::F16:
    return StorageType::F16;
  case FileType::I64:
    return StorageType::I64;
  case FileType::I32:
    return StorageType::I32;
  case FileType::I8:
    return StorageType::I8;
  case FileType::Bool:
  case FileType::U16:
  case FileType::U8:
    break;
  }
  return StorageType::Bool;
}

uint32_t readLE(const uint8_t *p, unsigned n) {
  uint32_t v = 0;
  for (unsigned i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

} // namespace

namespace {

/// Reads the preamble and the header dict from `in` (the header at most
/// kMaxHeaderLen bytes), leaving `in` at the first data byte.
ErrorOr<NpyHeader> decodeNpyHeader(ByteSource &in, const std::string &name) {
  auto fail = [&](const std::string &what) {
    return Error::usage(fmt::format("{}: {}", name, what));
  };
  std::string readError;
  size_t got = 0;
  auto readSome = [&](uint8_t *dst, size_t n) {
    return in.read(dst, n, got, readError);
  };

  uint8_t preamble[kMagicLen + 2 + 4];
  if (!readSome(preamble, kMagicLen))
    return fail(readError);
  if (got == 0)
    return fail("empty file, not a .npy file");
  if (got < kMagicLen || std::memcmp(preamble, kMagic, kMagicLen) != 0) {
    if (got < kMagicLen && std::memcmp(preamble, kMagic, got) == 0)
      return fail(fmt::format("truncated .npy file ({} bytes, shorter than "
                              "the magic string)",
                              got));
    return fail("not a .npy file (bad magic: expected \\x93NUMPY)");
  }
  if (!readSome(preamble + kMagicLen, 2))
    return fail(readError);
  if (got < 2)
    return fail("truncated .npy file (no format version)");
  const unsigned major = preamble[6], minor = preamble[7];
  unsigned lenBytes;
  if (major == 1 && minor == 0)
    lenBytes = 2;
  else if ((major == 2 || major == 3) && minor == 0)
    lenBytes = 4;
  else
    return fail(fmt::format("unsupported .npy format version {}.{} "
                            "(supported: 1.0, 2.0, 3.0)",
                            major, minor));
  if (!readSome(preamble + kMagicLen + 2, lenBytes))
    return fail(readError);
  if (got < lenBytes)
    return fail("truncated .npy file (no header length)");
  const size_t preambleLen = kMagicLen + 2 + lenBytes;
  const size_t headerLen = readLE(preamble + kMagicLen + 2, lenBytes);
  if (headerLen > kMaxHeaderLen)
    return fail(fmt::format("header length {} is too long (limit {})",
                            headerLen, kMaxHeaderLen));
  if (headerLen == 0)
    return fail("header is empty (header length 0)");
  std::string headerText(headerLen, '\0');
  if (!readSome(reinterpret_cast<uint8_t *>(headerText.data()), headerLen))
    return fail(readError);
  if (got < headerLen)
    return fail(fmt::format("truncated .npy file: header length {} exceeds "
                            "the {} bytes after the preamble",
                            headerLen, got));
  // Versions 1.0 and 2.0 are latin-1, 3.0 is utf-8: only ASCII matters to
  // us, and non-ASCII bytes can only show up inside strings we reject.
  if (headerText.find('\0') != std::string::npos)
    return fail("malformed header: contains a NUL byte");

  Header parsed;
  if (std::string err = HeaderParser(headerText).parse(parsed); !err.empty())
    return fail(err);
  NpyHeader header;
  header.descr = std::move(parsed.descr);
  header.fortranOrder = parsed.fortranOrder;
  header.shape = std::move(parsed.shape);
  header.dataOffset = preambleLen + headerLen;
  return header;
}

/// Reads a .npy from `in`: the preamble and header first, then exactly the
/// data bytes the header promises, straight into the tensor's buffer, then
/// one more byte to detect trailing data. Nothing is allocated for the data
/// before the header has been checked and its size compared with the
/// input's (when known) and with `maxDataBytes`.
ErrorOr<HostTensor> decodeNpy(ByteSource &in, const std::string &name,
                              std::optional<StorageType> want,
                              uint64_t maxDataBytes) {
  auto fail = [&](const std::string &what) {
    return Error::usage(fmt::format("{}: {}", name, what));
  };
  std::string readError;
  size_t got = 0;
  auto readSome = [&](uint8_t *dst, size_t n) {
    return in.read(dst, n, got, readError);
  };
  ErrorOr<NpyHeader> headerOr = decodeNpyHeader(in, name);
  if (!headerOr)
    return headerOr.error();
  const NpyHeader &header = *headerOr;
  FileDescr descr;
  if (std::string err = parseDescr(header.descr, descr); !err.empty())
    return fail(err);

  // The storage type of the result before any conversion.
  StorageType stored = StorageType::Bool; // every case below sets it
  auto requested = [&]() {
    return want ? fmt::format("{} was requested", storageName(*want))
                : std::string("no element type was requested");
  };
  switch (descr.type) {
  case FileType::U16:
    if (want != StorageType::BF16)
      return fail(fmt::format("'{}' data is read only as raw bf16 bit "
                              "patterns, but {}",
                              header.descr, requested()));
    stored = StorageType::BF16;
    break;
  case FileType::U8:
    if (want != StorageType::F8E4M3 && want != StorageType::F8E5M2)
      return fail(fmt::format("'{}' data is read only as raw f8e4m3 / f8e5m2 "
                              "bit patterns, but {}",
                              header.descr, requested()));
    stored = *want;
    break;
  case FileType::Bool:
    stored = StorageType::Bool;
    break;
  case FileType::F64:
  case FileType::F32:
  case FileType::F16:
  case FileType::I64:
  case FileType::I32:
  case FileType::I8:
    stored = naturalType(descr.type);
    break;
  }

  std::optional<int64_t> count = checkedNumElements(header.shape, descr.bytes);
  if (!count)
    return fail(fmt::format("shape {} is too large: its byte size overflows "
                            "64 bits",
                            shapeTupleStr(header.shape)));
  const uint64_t dataBytes = static_cast<uint64_t>(*count) * descr.bytes;
  const std::string needs =
      fmt::format("shape {} of '{}' needs {} data bytes",
                  shapeTupleStr(header.shape), header.descr, dataBytes);
  auto truncated = [&](uint64_t have) {
    return fail(
        fmt::format("truncated .npy file: {}, file has {}", needs, have));
  };
  auto trailing = [&](const std::string &have) {
    return fail(fmt::format("data size mismatch: {}, file has {} (trailing "
                            "bytes)",
                            needs, have));
  };
  const uint64_t dataStart = header.dataOffset;
  if (in.size) {
    const uint64_t have = *in.size - std::min(*in.size, dataStart);
    if (have < dataBytes)
      return truncated(have);
    if (have > dataBytes)
      return trailing(std::to_string(have));
  }
  // Fortran-order data is kept as it is, with Fortran strides: no second
  // buffer, no transposition.
  if (dataBytes > maxDataBytes)
    return fail(fmt::format("{}, more than this machine's memory allows "
                            "({} bytes)",
                            needs, maxDataBytes));
  if (dataBytes > std::numeric_limits<size_t>::max())
    return fail(fmt::format("{}, more than this machine can address", needs));

  HostTensor t;
  t.type = stored;
  t.shape = header.shape;
  if (header.fortranOrder && header.shape.size() > 1)
    t.layoutStrides = fortranStrides(header.shape);
  t.data.resize(static_cast<size_t>(dataBytes));
  if (!readSome(t.data.data(), t.data.size()))
    return fail(readError);
  if (got < dataBytes)
    return truncated(got);
  // One more byte: a stream (or a file that grew) may hold more.
  uint8_t extra;
  if (!readSome(&extra, 1))
    return fail(readError);
  if (got != 0)
    return trailing(fmt::format("more than {}", dataBytes));

  if (descr.type == FileType::Bool) {
    auto bad = [&](int64_t i) { return t.data[static_cast<size_t>(i)] > 1; };
    for (size_t i = 0; i < t.data.size(); ++i)
      if (bad(static_cast<int64_t>(i))) {
        int64_t first = firstInCOrder(t, static_cast<int64_t>(i), bad);
        return fail(fmt::format("bool element {} has byte value {} (expected "
                                "0 or 1)",
                                first, t.data[t.offsetOf(first)]));
      }
  }

  if (!want || *want == stored)
    return t;
  if (stored == StorageType::Bool)
    return fail(
        fmt::format("bool data cannot be read as {}", storageName(*want)));
  ErrorOr<HostTensor> converted = convertTensor(t, *want);
  if (!converted)
    return fail(converted.error().message);
  return converted;
}

} // namespace

ErrorOr<NpyHeader> parseNpyHeader(const uint8_t *bytes, size_t size,
                                  const std::string &name) {
  MemorySource in(bytes, size);
  return decodeNpyHeader(in, name);
}

ErrorOr<HostTensor> parseNpy(const std::vector<uint8_t> &bytes,
                             const std::string &name,
                             std::optional<StorageType> want) {
  MemorySource in(bytes);
  return decodeNpy(in, name, want, hostMemoryBytes());
}

ErrorOr<HostTensor> parseNpy(const uint8_t *bytes, size_t size,
                             const std::string &name,
                             std::optional<StorageType> want) {
  MemorySource in(bytes, size);
  return decodeNpy(in, name, want, hostMemoryBytes());
}

ErrorOr<HostTensor> readNpy(const std::string &path,
                            std::optional<StorageType> want) {
  return readNpy(path, want, hostMemoryBytes());
}

ErrorOr<HostTensor> readNpy(const std::string &path,
                            std::optional<StorageType> want,
                            uint64_t maxDataBytes) {
  return readFileSource<HostTensor>(path, "a .npy file", [&](ByteSource &in) {
    return decodeNpy(in, path, want, maxDataBytes);
  });
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

/// A tensor ready to be written: numpy's header bytes, and the data in C
/// order (the tensor's own, or a copy: its f32 widening for bf16 / fp8, in C
/// order when the tensor is not).
struct EncodedNpy {
  std::vector<uint8_t> header;
  std::optional<HostTensor> copy;
  /// The data to write after the header.
  const std::vector<uint8_t> &data(const HostTensor &tensor) const {
    return copy ? copy->data : tensor.data;
  }
};

ErrorOr<EncodedNpy> encodeNpy(const HostTensor &tensor) {
  if (!tensor.isConsistent())
    return Error::usage(
        fmt::format("tensor {} has {} bytes of data, which does "
                    "not match its shape and layout",
                    tensor.describe(), tensor.data.size()));
  EncodedNpy encoded;
  // numpy has no bf16 or fp8: those are written widened to f32, exactly.
  const char *descr = dtypeInfo(*toDType(tensor.type)).npyDescr;
  if (!*descr) {
    descr = "<f4";
    ErrorOr<HostTensor> widened = convertTensor(tensor, StorageType::F32);
    if (!widened)
      return widened.error();
    encoded.copy = std::move(*widened);
  }
  // Always C order, whatever the tensor's layout.
  if (encoded.copy && !encoded.copy->isCOrder())
    encoded.copy = encoded.copy->toCOrder();
  else if (!encoded.copy && !tensor.isCOrder())
    encoded.copy = tensor.toCOrder();
  const HostTensor *out = encoded.copy ? &*encoded.copy : &tensor;

  // Exactly numpy's header: keys sorted, repr()s, a trailing ", ", spare
  // spaces for growing the first axis, then padding to 64 bytes and '\n'.
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                  descr, shapeTupleStr(out->shape));
  if (!out->shape.empty()) {
    const size_t growthDigits = 21;
    size_t len = std::to_string(out->shape[0]).size();
    header.append(growthDigits > len ? growthDigits - len : 0, ' ');
  }
  unsigned version = 1;
  size_t preamble = kMagicLen + 2 + 2;
  auto padded = [&](size_t pre) {
    // numpy pads with 1..64 spaces (64, not 0, when already aligned).
    size_t total = pre + header.size() + 1; // + '\n'
    return header.size() + 1 + (64 - total % 64);
  };
  size_t headerLen = padded(preamble);
  if (headerLen > 0xFFFF) {
    version = 2;
    preamble = kMagicLen + 2 + 4;
    headerLen = padded(preamble);
    if (headerLen > 0xFFFFFFFFull)
      return Error::usage(fmt::format(
          "tensor {} needs a .npy header over 4 GiB", tensor.describe()));
  }
  header.append(headerLen - header.size() - 1, ' ');
  header += '\n';

  std::vector<uint8_t> &bytes = encoded.header;
  bytes.reserve(preamble + headerLen);
  bytes.insert(bytes.end(), kMagic, kMagic + kMagicLen);
  bytes.push_back(static_cast<uint8_t>(version));
  bytes.push_back(0);
  for (unsigned i = 0; i < (version == 1 ? 2u : 4u); ++i)
    bytes.push_back(static_cast<uint8_t>(headerLen >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  return encoded;
}

} // namespace

ErrorOr<std::vector<uint8_t>> serializeNpy(const HostTensor &tensor) {
  ErrorOr<EncodedNpy> encoded = encodeNpy(tensor);
  if (!encoded)
    return encoded.error();
  std::vector<uint8_t> bytes = std::move(encoded->header);
  const std::vector<uint8_t> &data = encoded->data(tensor);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

ErrorOr<void> writeNpyTo(int fd, const HostTensor &tensor) {
  ErrorOr<EncodedNpy> encoded = encodeNpy(tensor);
  if (!encoded)
    return encoded.error();
  if (ErrorOr<void> s =
          writeAll(fd, encoded->header.data(), encoded->header.size());
      !s)
    return s;
  const std::vector<uint8_t> &data = encoded->data(tensor);
  return writeAll(fd, data.data(), data.size());
}

ErrorOr<void> writeNpyOutputs(const OutputPlan &plan,
                              const std::vector<const HostTensor *> &tensors) {
  if (tensors.size() != plan.targets.size())
    return Error::usage(fmt::format("{} tensors for {} output files",
                                    tensors.size(), plan.targets.size()));
  // Encoding errors (an inconsistent tensor) come before any file is made.
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!tensors[i]->isConsistent())
      return Error::usage(fmt::format(
          "{}: tensor {} has {} bytes of data, which does not match its "
          "shape and layout",
          plan.targets[i].path, tensors[i]->describe(),
          tensors[i]->data.size()));
  return writeOutputs(plan, [&](size_t index, int fd) {
    return writeNpyTo(fd, *tensors[index]);
  });
}

ErrorOr<void> writeNpy(const std::string &path, const HostTensor &tensor) {
  ErrorOr<OutputPlan> plan = planOutputs({path});
  if (!plan)
    return plan.error();
  return writeNpyOutputs(*plan, {&tensor});
}

} // namespace runtime
} // namespace ein
