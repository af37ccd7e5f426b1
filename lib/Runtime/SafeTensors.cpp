// safetensors reading and writing. See the header for what is checked.
#include "ein/Runtime/SafeTensors.h"
#include "ByteSource.h"

#include "ein/Syntax/Unicode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace ein {
namespace runtime {

namespace {

/// The reference implementation's limit on the header's size.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char *kMetadataKey = "__metadata__";

/// The format's dtypes: its spelling, bytes per element, and ein's type when
/// ein has one. Every ein type has a row (SafeTensorsTest checks it); the
/// others are listed so that a file holding them still checks and an error
/// can name them.
struct FormatDType {
  const char *name;
  unsigned bytes;
  std::optional<StorageType> type;
};
const FormatDType kFormatDTypes[] = {
    {"F64", 8, StorageType::F64},
    {"F32", 4, StorageType::F32},
    {"F16", 2, StorageType::F16},
    {"BF16", 2, StorageType::BF16},
    {"F8_E4M3", 1, StorageType::F8E4M3},
    {"F8_E5M2", 1, StorageType::F8E5M2},
    {"I64", 8, StorageType::I64},
    {"I32", 4, StorageType::I32},
    {"I8", 1, StorageType::I8},
    {"BOOL", 1, StorageType::Bool},
    {"U64", 8, std::nullopt},
    {"U32", 4, std::nullopt},
    {"U16", 2, std::nullopt},
    {"I16", 2, std::nullopt},
    {"U8", 1, std::nullopt},
    {"F8_E8M0", 1, std::nullopt},
};

const FormatDType *findFormatDType(const std::string &name) {
  for (const FormatDType &d : kFormatDTypes)
    if (name == d.name)
      return &d;
  return nullptr;
}

const FormatDType &formatDTypeOf(StorageType type) {
  for (const FormatDType &d : kFormatDTypes)
    if (d.type == type)
      return d;
  // Unreachable while every type has a row (SafeTensorsTest).
  static const FormatDType none{"?", 0, std::nullopt};
  return none;
}

/// A name or a string for messages: quoted, invalid UTF-8 escaped.
std::string quoted(const std::string &s) {
  return "'" + unicode::sanitizeUtf8(s) + "'";
}

//===----------------------------------------------------------------------===//
// The header: a strict reader of the JSON the format allows.
//===----------------------------------------------------------------------===//

class HeaderReader {
public:
  explicit HeaderReader(const std::string &text) : text(text) {}

  /// Reads the header into `out`'s entries and metadata; an error message,
  /// empty on success.
  std::string read(SafeTensors &out) {
    if (text.empty() || text[0] != '{')
      return "the header does not start with '{' (not a safetensors file?)";
    ++pos;
    std::set<std::string> keys;
    bool first = true;
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      if (!first && !consume(','))
        return error("expected ',' or '}' after a tensor");
      if (!first)
        skipSpace();
      first = false;
      std::string key;
      size_t keyStart = pos;
      if (std::string err = string(key); !err.empty())
        return err;
      if (!keys.insert(key).second)
        return errorAt(keyStart,
                       fmt::format("the key {} appears twice", quoted(key)));
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after a key");
      skipSpace();
      std::string err =
          key == kMetadataKey ? metadata(out) : tensor(key, out.entries);
      if (!err.empty())
        return err;
    }
    skipSpace();
    if (pos != text.size())
      return error("unexpected text after the header's object");
    return "";
  }

private:
  const std::string &text;
  size_t pos = 0;

  std::string error(const std::string &what) const {
    return errorAt(pos, what);
  }
  std::string errorAt(size_t at, const std::string &what) const {
    return fmt::format("malformed header at byte {}: {}", at, what);
  }
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos >= text.size())
      return false;
    ++pos;
    return true;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool hex4(uint32_t &value) {
    value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      unsigned digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return false;
      value = value * 16 + digit;
      ++pos;
    }
    return true;
  }

  /// A JSON string (the text is valid UTF-8: checked before).
  std::string string(std::string &out) {
    if (!consume('"'))
      return error("expected a string");
    while (true) {
      if (pos >= text.size())
        return error("a string is not closed");
      char c = text[pos++];
      if (c == '"')
        return "";
      if (static_cast<unsigned char>(c) < 0x20)
        return errorAt(pos - 1, "a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++pos;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        size_t escapeStart = pos - 2;
        uint32_t unit;
        if (!hex4(unit))
          return errorAt(escapeStart, "expected four hex digits after \\u");
        if (unit >= 0xDC00 && unit <= 0xDFFF)
          return errorAt(escapeStart, "a lone low surrogate in a \\u escape");
        if (unit >= 0xD800 && unit <= 0xDBFF) {
          uint32_t low;
          if (!consume('\\') || !consume('u') || !hex4(low) || low < 0xDC00 ||
              low > 0xDFFF)
            return errorAt(escapeStart,
                           "a high surrogate without its low surrogate");
          unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
        }
        out += unicode::encodeUtf8(unit);
        break;
      }
      default:
        --pos;
        return error("an unknown escape in a string");
      }
    }
  }

  /// A non-negative JSON integer that fits in uint64 (no sign, fraction or
  /// exponent, no leading zero), as the reference's usize fields take.
  std::string integer(uint64_t &out, const std::string &what) {
    size_t start = pos;
    if (!(peek() >= '0' && peek() <= '9'))
      return error(fmt::format("{} must be a non-negative integer", what));
    if (peek() == '0' && pos + 1 < text.size() && text[pos + 1] >= '0' &&
        text[pos + 1] <= '9')
      return error(fmt::format("{} has a leading zero", what));
    out = 0;
    while (peek() >= '0' && peek() <= '9') {
      unsigned digit = text[pos] - '0';
      if (out > (std::numeric_limits<uint64_t>::max() - digit) / 10)
        return errorAt(start, fmt::format("{} is too large", what));
      out = out * 10 + digit;
      ++pos;
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E')
      return errorAt(start, fmt::format("{} must be an integer", what));
    return "";
  }

  /// [INT, ...], each named `what`.
  std::string integers(std::vector<uint64_t> &out, const std::string &what) {
    if (!consume('['))
      return error(fmt::format("{} must be a list", what));
    skipSpace();
    if (consume(']'))
      return "";
    while (true) {
      skipSpace();
      uint64_t v;
      if (std::string err = integer(v, what); !err.empty())
        return err;
      out.push_back(v);
      skipSpace();
      if (consume(']'))
        return "";
      if (!consume(','))
        return error(fmt::format("expected ',' or ']' in {}", what));
    }
  }

  std::string metadata(SafeTensors &out) {
    if (!consume('{'))
      return error("__metadata__ must be an object of strings");
    std::set<std::string> keys;
    skipSpace();
    if (consume('}'))
      return "";
    while (true) {
      skipSpace();
      std::string key, value;
      size_t keyStart = pos;
      if (std::string err = string(key); !err.empty())
        return err;
      if (!keys.insert(key).second)
        return errorAt(
            keyStart,
            fmt::format("the metadata key {} appears twice", quoted(key)));
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after a metadata key");
      skipSpace();
      if (peek() != '"')
        return error(fmt::format("the metadata value of {} must be a string",
                                 quoted(key)));
      if (std::string err = string(value); !err.empty())
        return err;
      out.metadata.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (consume('}'))
        return "";
      if (!consume(','))
        return error("expected ',' or '}' in __metadata__");
    }
  }

  std::string tensor(const std::string &name,
                     std::vector<SafeTensorsEntry> &entries) {
    std::string what = fmt::format("tensor {}", quoted(name));
    if (!consume('{'))
      return error(fmt::format("{} must be an object", what));
    SafeTensorsEntry entry;
    entry.name = name;
    bool haveDType = false, haveShape = false, haveOffsets = false;
    std::vector<uint64_t> offsets;
    size_t start = pos - 1, offsetsStart = 0;
    skipSpace();
    if (!consume('}')) {
      while (true) {
        skipSpace();
        std::string key;
        size_t keyStart = pos;
        if (std::string err = string(key); !err.empty())
          return err;
        skipSpace();
        if (!consume(':'))
          return error("expected ':' after a key");
        skipSpace();
        size_t valueStart = pos;
        if (key == "data_offsets")
          offsetsStart = pos;
        bool *seen = key == "dtype"          ? &haveDType
                     : key == "shape"        ? &haveShape
                     : key == "data_offsets" ? &haveOffsets
                                             : nullptr;
        if (!seen)
          return errorAt(keyStart, fmt::format("{} has the unknown field {}",
                                               what, quoted(key)));
        if (*seen)
          return errorAt(keyStart, fmt::format("{} has the field {} twice",
                                               what, quoted(key)));
        *seen = true;
        std::string err;
        if (key == "dtype") {
          err = peek() == '"'
                    ? string(entry.dtype)
                    : error(fmt::format("{}: dtype must be a string", what));
        } else if (key == "shape") {
          std::vector<uint64_t> dims;
          err = integers(dims, what + ": a dim of shape");
          for (uint64_t d : dims) {
            if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
              return errorAt(valueStart,
                             fmt::format("{}: dim {} is too large", what, d));
            entry.shape.push_back(static_cast<int64_t>(d));
          }
        } else {
          err = integers(offsets, what + ": data_offsets");
        }
        if (!err.empty())
          return err;
        skipSpace();
        if (consume('}'))
          break;
        if (!consume(','))
          return error(fmt::format("expected ',' or '}}' in {}", what));
      }
    }
    const char *missing = !haveDType     ? "dtype"
                          : !haveShape   ? "shape"
                          : !haveOffsets ? "data_offsets"
                                         : nullptr;
    if (missing)
      return errorAt(start, fmt::format("{} has no {}", what, missing));
    if (offsets.size() != 2)
      return errorAt(offsetsStart,
                     fmt::format("{}: data_offsets must be [BEGIN, END], not "
                                 "{} numbers",
                                 what, offsets.size()));
    entry.begin = offsets[0];
    entry.end = offsets[1];
    entries.push_back(std::move(entry));
    return "";
  }
};

/// Checks what the header says against itself: known dtypes, byte ranges
/// matching the shapes, and ranges tiling the data. The data's size.
ErrorOr<uint64_t> checkEntries(std::vector<SafeTensorsEntry> &entries,
                               const std::string &name) {
  auto fail = [&](const std::string &what) {
    return Error::usage(fmt::format("{}: {}", name, what));
  };
  for (SafeTensorsEntry &e : entries) {
    const FormatDType *d = findFormatDType(e.dtype);
    if (!d)
      return fail(fmt::format("tensor {} has the unknown dtype {}",
                              quoted(e.name), quoted(e.dtype)));
    e.type = d->type;
    std::optional<int64_t> bytes = checkedNumElements(e.shape, d->bytes);
    if (!bytes)
      return fail(fmt::format("tensor {}: the size of shape {} overflows",
                              quoted(e.name), shapeTupleStr(e.shape)));
    *bytes *= d->bytes;
    if (e.end < e.begin)
      return fail(fmt::format("tensor {}: data_offsets [{}, {}] end before "
                              "they begin",
                              quoted(e.name), e.begin, e.end));
    if (e.end - e.begin != static_cast<uint64_t>(*bytes))
      return fail(fmt::format(
          "tensor {}: data_offsets [{}, {}] hold {} bytes, but {} {} takes {}",
          quoted(e.name), e.begin, e.end, e.end - e.begin, e.dtype,
          shapeTupleStr(e.shape), *bytes));
  }
  std::vector<const SafeTensorsEntry *> byOffset;
  for (const SafeTensorsEntry &e : entries)
    byOffset.push_back(&e);
  std::stable_sort(byOffset.begin(), byOffset.end(),
                   [](const SafeTensorsEntry *a, const SafeTensorsEntry *b) {
                     return std::make_pair(a->begin, a->end) <
                            std::make_pair(b->begin, b->end);
                   });
  uint64_t next = 0;
  for (const SafeTensorsEntry *e : byOffset) {
    if (e->begin != next)
      return fail(fmt::format(
          "tensor {} starts at byte {} of the data, where {} (the tensors, "
          "in offset order, must tile the data without gaps or overlaps)",
          quoted(e->name), e->begin,
          next == 0 ? std::string("the data begins at 0")
                    : fmt::format("the tensor before it ends at {}", next)));
    next = e->end;
  }
  return next;
}

/// Reads a safetensors file from `in` (see the header for the checks).
ErrorOr<SafeTensors> decode(ByteSource &in, const std::string &name,
                            uint64_t maxDataBytes) {
  auto fail = [&](const std::string &what) {
    return Error::usage(fmt::format("{}: {}", name, what));
  };
  std::string readError;
  size_t got = 0;
  uint8_t sizeBytes[8];
  if (!in.read(sizeBytes, 8, got, readError))
    return fail(readError);
  if (got == 0)
    return fail("empty file, not a safetensors file");
  if (got < 8)
    return fail(fmt::format("the file is {} bytes, too short for a "
                            "safetensors header size (8 bytes)",
                            got));
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | sizeBytes[i];
  if (headerBytes > kMaxHeaderBytes)
    return fail(fmt::format("the header size {} is over the format's limit "
                            "of {} bytes (not a safetensors file?)",
                            headerBytes, kMaxHeaderBytes));
  if (in.size && headerBytes > *in.size - 8)
    return fail(fmt::format("the header size {} runs past the end of the "
                            "file ({} bytes)",
                            headerBytes, *in.size));
  std::string header(headerBytes, '\0');
  if (!in.read(reinterpret_cast<uint8_t *>(header.data()), headerBytes, got,
               readError))
    return fail(readError);
  if (got < headerBytes)
    return fail(fmt::format("truncated: the header should be {} bytes, the "
                            "file ends after {}",
                            headerBytes, got));
  for (size_t i = 0; i < header.size();) {
    unicode::DecodedChar c = unicode::decodeUtf8(header, i);
    if (!c.valid())
      return fail(fmt::format("the header is not UTF-8 at byte {} ({})", i,
                              unicode::describe(c.error)));
    i += c.size;
  }

  SafeTensors out;
  out.path = name;
  if (std::string err = HeaderReader(header).read(out); !err.empty())
    return fail(err);
  ErrorOr<uint64_t> dataBytes = checkEntries(out.entries, name);
  if (!dataBytes)
    return dataBytes.error();
  if (in.size && *in.size - 8 - headerBytes != *dataBytes)
    return fail(fmt::format("the header's tensors take {} bytes of data, but "
                            "the file holds {}",
                            *dataBytes, *in.size - 8 - headerBytes));
  if (*dataBytes > maxDataBytes)
    return fail(fmt::format("the data takes {} bytes, more than this "
                            "machine's limit of {} bytes",
                            *dataBytes, maxDataBytes));
  out.data.resize(*dataBytes);
  if (!in.read(out.data.data(), out.data.size(), got, readError))
    return fail(readError);
  if (got < out.data.size())
    return fail(fmt::format("truncated: the data should be {} bytes, the file "
                            "ends after {}",
                            out.data.size(), got));
  uint8_t extra;
  if (!in.read(&extra, 1, got, readError))
    return fail(readError);
  if (got != 0)
    return fail("trailing bytes after the last tensor's data");
  return out;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// `s` as a JSON string: quotes, backslashes and control characters escaped;
/// UTF-8 as it is.
std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::optional<std::string> invalidUtf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    unicode::DecodedChar c = unicode::decodeUtf8(s, i);
    if (!c.valid())
      return std::string(unicode::describe(c.error));
    i += c.size;
  }
  return std::nullopt;
}

/// What a file of `tensors` is made of: its first 8 + N bytes, then each
/// tensor's data in C order (the tensor's own bytes, or a C-order copy).
struct Encoded {
  std::vector<uint8_t> head;
  std::vector<HostTensor> copies; // C-order copies of tensors not in C order
  std::vector<const std::vector<uint8_t> *> data;
};

ErrorOr<Encoded>
encode(const std::vector<NamedTensor> &tensors,
       const std::vector<std::pair<std::string, std::string>> &metadata) {
  Encoded out;
  std::set<std::string> names;
  std::string json = "{";
  if (!metadata.empty()) {
    std::set<std::string> keys;
    json += jsonString(kMetadataKey) + ":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      auto &[key, value] = metadata[i];
      if (!keys.insert(key).second)
        return Error::usage(
            fmt::format("the metadata key {} is given twice", quoted(key)));
      for (const std::string *s : {&key, &value})
        if (auto bad = invalidUtf8(*s))
          return Error::usage(fmt::format("the metadata {} is not UTF-8 ({})",
                                          quoted(*s), *bad));
      json += (i ? "," : "") + jsonString(key) + ":" + jsonString(value);
    }
    json += "}";
  }
  out.copies.reserve(tensors.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string &name = tensors[i].name;
    const HostTensor &t = *tensors[i].tensor;
    if (name.empty())
      return Error::usage("a tensor's name is empty");
    if (name == kMetadataKey)
      return Error::usage(
          fmt::format("a tensor cannot be named {}: the format keeps that "
                      "key for metadata",
                      quoted(name)));
    if (auto bad = invalidUtf8(name))
      return Error::usage(fmt::format("the tensor name {} is not UTF-8 ({})",
                                      quoted(name), *bad));
    if (!names.insert(name).second)
      return Error::usage(
          fmt::format("two tensors are named {}", quoted(name)));
    if (!t.isConsistent())
      return Error::usage(fmt::format(
          "tensor {} ({}) has {} bytes of data, which does not match its "
          "shape and layout",
          quoted(name), t.describe(), t.data.size()));
    if (t.isCOrder()) {
      out.data.push_back(&t.data);
    } else {
      out.copies.push_back(t.toCOrder());
      out.data.push_back(&out.copies.back().data);
    }
    uint64_t bytes = out.data.back()->size();
    std::string shape;
    for (size_t d = 0; d < t.shape.size(); ++d)
      shape += fmt::format("{}{}", d ? "," : "", t.shape[d]);
    if (json.size() > 1)
      json += ",";
    json += fmt::format(
        "{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
        jsonString(name), formatDTypeOf(t.type).name, shape, offset,
        offset + bytes);
    offset += bytes;
  }
  json += "}";
  // The data starts 8-byte aligned, as the reference writer pads it.
  while ((8 + json.size()) % 8 != 0)
    json += ' ';
  if (json.size() > kMaxHeaderBytes)
    return Error::usage(fmt::format("the header would be {} bytes, over the "
                                    "format's limit of {}",
                                    json.size(), kMaxHeaderBytes));
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    out.head.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.head.insert(out.head.end(), json.begin(), json.end());
  return out;
}

} // namespace

const SafeTensorsEntry *SafeTensors::find(const std::string &name) const {
  for (const SafeTensorsEntry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

ErrorOr<HostTensor> SafeTensors::tensor(const std::string &name,
                                        std::optional<StorageType> want) const {
  const SafeTensorsEntry *e = find(name);
  if (!e)
    return Error::usage(
        fmt::format("{}: has no tensor {}", path, quoted(name)));
  if (!e->type)
    return Error::usage(fmt::format("{}: tensor {} is {}, which ein has no "
                                    "type for",
                                    path, quoted(name), e->dtype));
  HostTensor t;
  t.type = *e->type;
  t.shape = e->shape;
  t.data.assign(data.begin() + e->begin, data.begin() + e->end);
  if (!want || *want == t.type)
    return t;
  ErrorOr<HostTensor> converted = convertTensor(t, *want);
  if (!converted)
    return Error::usage(fmt::format("{}: tensor {}: {}", path, quoted(name),
                                    converted.error().message));
  return converted;
}

ErrorOr<SafeTensors> parseSafeTensors(const std::vector<uint8_t> &bytes,
                                      const std::string &name) {
  MemorySource in(bytes);
  return decode(in, name, hostMemoryBytes());
}

ErrorOr<SafeTensors> readSafeTensors(const std::string &path) {
  return readSafeTensors(path, hostMemoryBytes());
}

ErrorOr<SafeTensors> readSafeTensors(const std::string &path,
                                     uint64_t maxDataBytes) {
  return readFileSource<SafeTensors>(
      path, "a safetensors file",
      [&](ByteSource &in) { return decode(in, path, maxDataBytes); });
}

ErrorOr<std::vector<uint8_t>> serializeSafeTensors(
    const std::vector<NamedTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  ErrorOr<Encoded> encoded = encode(tensors, metadata);
  if (!encoded)
    return encoded.error();
  std::vector<uint8_t> bytes = std::move(encoded->head);
  for (const std::vector<uint8_t> *d : encoded->data)
    bytes.insert(bytes.end(), d->begin(), d->end());
  return bytes;
}

ErrorOr<void> writeSafeTensorsTo(
    int fd, const std::vector<NamedTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  ErrorOr<Encoded> encoded = encode(tensors, metadata);
  if (!encoded)
    return encoded.error();
  if (ErrorOr<void> s =
          writeAll(fd, encoded->head.data(), encoded->head.size());
      !s)
    return s;
  for (const std::vector<uint8_t> *d : encoded->data)
    if (ErrorOr<void> s = writeAll(fd, d->data(), d->size()); !s)
      return s;
  return {};
}

ErrorOr<void> writeSafeTensors(
    const std::string &path, const std::vector<NamedTensor> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  ErrorOr<OutputPlan> plan = planOutputs({path});
  if (!plan)
    return plan.error();
  return writeOutputs(*plan, [&](size_t, int fd) {
    return writeSafeTensorsTo(fd, tensors, metadata);
  });
}

bool isSafeTensorsPath(const std::string &path) {
  static const std::string ext = ".safetensors";
  return path.size() > ext.size() &&
         path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

} // namespace runtime
} // namespace ein
