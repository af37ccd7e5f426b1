// numpy .npz (ZIP of .npy members) reading and writing. See the header for
// what is checked.
#include "ein/Runtime/Npz.h"
#include "ByteSource.h"

#include "ein/Runtime/Npy.h"
#include "ein/Syntax/Unicode.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <sys/stat.h>

namespace ein {
namespace runtime {

namespace {

// The ZIP records' signatures (APPNOTE.TXT 4.3).
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalBytes = 30, kCentralBytes = 46, kEndBytes = 22;
constexpr size_t kZip64EndBytes = 56, kZip64LocatorBytes = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kFlagEncrypted = 1 << 0, kFlagStrongEncryption = 1 << 6;
constexpr uint16_t kFlagUtf8 = 1 << 11;
constexpr uint16_t kMethodStored = 0, kMethodDeflated = 8;
constexpr uint32_t kMax32 = 0xFFFFFFFF;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr uint64_t kMaxDeflateRatio = 1032;
/// 1980-01-01 00:00 in MS-DOS form: the earliest date ZIP can say.
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1, kDosTime = 0;

uint64_t getLE(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = n; i-- > 0;)
    v = v << 8 | p[i];
  return v;
}

void putLE(std::vector<uint8_t> &out, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::string quoted(const std::string &s) {
  return "'" + unicode::sanitizeUtf8(s) + "'";
}

/// CRC-32 (zlib's, the one ZIP uses) of `size` bytes, in chunks that fit
/// zlib's uInt.
uint32_t crc32Of(const uint8_t *data, uint64_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    uInt chunk = static_cast<uInt>(std::min<uint64_t>(size, 1u << 30));
    crc = crc32(crc, data, chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

/// Inflates the raw deflate stream `in` into exactly `out.size()` bytes; an
/// error message, empty on success.
std::string inflateExactly(const uint8_t *in, uint64_t inSize,
                           std::vector<uint8_t> &out) {
  z_stream z;
  std::memset(&z, 0, sizeof z);
  // Negative window bits: a raw deflate stream, as ZIP stores it.
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
    return "zlib cannot start inflating";
  uint64_t inLeft = inSize, outLeft = out.size();
  z.next_in = const_cast<Bytef *>(in);
  z.next_out = out.data();
  uint8_t spare; // catches data beyond the promised size
  int status = Z_OK;
  std::string error;
  while (status == Z_OK) {
    if (z.avail_in == 0 && inLeft > 0) {
      z.avail_in = static_cast<uInt>(std::min<uint64_t>(inLeft, 1u << 30));
      inLeft -= z.avail_in;
    }
    if (z.avail_out == 0) {
      if (outLeft > 0) {
        z.avail_out = static_cast<uInt>(std::min<uint64_t>(outLeft, 1u << 30));
        outLeft -= z.avail_out;
      } else {
        z.next_out = &spare;
        z.avail_out = 1;
      }
    }
    status = inflate(&z, Z_NO_FLUSH);
    if (z.next_out == &spare + 1) {
      error = fmt::format("its deflated data unpacks to more than its size "
                          "of {} bytes",
                          out.size());
      break;
    }
    if (status == Z_BUF_ERROR && z.avail_in == 0 && inLeft == 0)
      error = "its deflated data ends early (truncated)";
    else if (status != Z_OK && status != Z_STREAM_END)
      error = fmt::format("its deflated data is corrupt (zlib: {})",
                          z.msg ? z.msg : "error " + std::to_string(status));
  }
  uint64_t produced = z.total_out, unused = z.avail_in + inLeft;
  inflateEnd(&z);
  if (!error.empty())
    return error;
  if (produced != out.size())
    return fmt::format("its deflated data unpacks to {} bytes, not its size "
                       "of {}",
                       produced, out.size());
  if (unused != 0)
    return fmt::format("{} bytes follow the end of its deflated data", unused);
  return "";
}

/// A member as the central directory describes it.
struct Member {
  std::string name; // as stored: "x.npy"
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0, size = 0, localOffset = 0;
  uint64_t dataStart = 0; // from the local header
};

/// Reads the ZIP64 extra field of a central entry (`extra`, `n` bytes): the
/// 64-bit values of the fields whose 32-bit ones are 0xFFFFFFFF, in order.
std::string readZip64Extra(const uint8_t *extra, size_t n, Member &m,
                           bool needSize, bool needCompressed,
                           bool needOffset) {
  bool found = false;
  for (size_t i = 0; i < n;) {
    if (n - i < 4)
      return "its extra field is cut short";
    uint16_t id = getLE(extra + i, 2), len = getLE(extra + i + 2, 2);
    if (len > n - i - 4)
      return "an extra field runs past its entry";
    if (id == kZip64ExtraId) {
      if (found)
        return "it has two ZIP64 extra fields";
      found = true;
      const uint8_t *p = extra + i + 4;
      size_t left = len;
      for (auto [need, field] : {std::pair{needSize, &m.size},
                                 std::pair{needCompressed, &m.compressedSize},
                                 std::pair{needOffset, &m.localOffset}}) {
        if (!need)
          continue;
        if (left < 8)
          return "its ZIP64 extra field is too short for the sizes it "
                 "stands for";
        *field = getLE(p, 8);
        p += 8;
        left -= 8;
      }
    }
    i += 4 + len;
  }
  if (!found && (needSize || needCompressed || needOffset))
    return "a size or offset is 0xFFFFFFFF but it has no ZIP64 extra field";
  return "";
}

/// Parses the whole archive in `out.bytes` into `out.entries`.
ErrorOr<void> decode(Npz &out, uint64_t maxBytes) {
  const std::vector<uint8_t> &b = out.bytes;
  const uint64_t size = b.size();
  auto fail = [&](const std::string &what) {
    return Error::usage(fmt::format("{}: {}", out.path, what));
  };
  if (size == 0)
    return fail("empty file, not an .npz archive");
  if (size < kEndBytes)
    return fail(fmt::format("the file is {} bytes, too short for a ZIP "
                            "archive (an .npz file)",
                            size));
  // 1. The end record: the last one whose comment runs exactly to the end.
  std::optional<uint64_t> endAt;
  uint64_t lowest = size - kEndBytes > kMax16 ? size - kEndBytes - kMax16 : 0;
  for (uint64_t at = size - kEndBytes + 1; at-- > lowest;)
    if (getLE(&b[at], 4) == kEndSig &&
        getLE(&b[at + 20], 2) == size - kEndBytes - at) {
      endAt = at;
      break;
    }
  if (!endAt)
    return fail("no ZIP end record at its end (not an .npz archive?)");
  const uint8_t *end = &b[*endAt];
  uint64_t disk = getLE(end + 4, 2), cdDisk = getLE(end + 6, 2);
  uint64_t diskEntries = getLE(end + 8, 2), entries = getLE(end + 10, 2);
  uint64_t cdSize = getLE(end + 12, 4), cdOffset = getLE(end + 16, 4);
  uint64_t cdEnd = *endAt;
  // 2. ZIP64: a locator just before the end record, pointing at the ZIP64
  // end record, which holds the 64-bit counts and offsets.
  bool sentinel = diskEntries == kMax16 || entries == kMax16 ||
                  cdSize == kMax32 || cdOffset == kMax32;
  if (*endAt >= kZip64LocatorBytes &&
      getLE(&b[*endAt - kZip64LocatorBytes], 4) == kZip64LocatorSig) {
    uint64_t locatorAt = *endAt - kZip64LocatorBytes;
    const uint8_t *loc = &b[locatorAt];
    uint64_t recordAt = getLE(loc + 8, 8);
    if (getLE(loc + 4, 4) != 0 || getLE(loc + 16, 4) > 1)
      return fail("a multi-disk ZIP archive (not supported)");
    if (recordAt > locatorAt || locatorAt - recordAt < kZip64EndBytes)
      return fail(fmt::format("the ZIP64 end record's offset {} is not "
                              "before its locator at {}",
                              recordAt, locatorAt));
    const uint8_t *rec = &b[recordAt];
    if (getLE(rec, 4) != kZip64EndSig)
      return fail(fmt::format("no ZIP64 end record at offset {}", recordAt));
    uint64_t recordSize = getLE(rec + 4, 8);
    if (recordSize < kZip64EndBytes - 12 ||
        recordSize != locatorAt - recordAt - 12)
      return fail(fmt::format("the ZIP64 end record's size {} does not "
                              "reach its locator",
                              recordSize));
    disk = getLE(rec + 16, 4);
    cdDisk = getLE(rec + 20, 4);
    diskEntries = getLE(rec + 24, 8);
    entries = getLE(rec + 32, 8);
    cdSize = getLE(rec + 40, 8);
    cdOffset = getLE(rec + 48, 8);
    cdEnd = recordAt;
  } else if (sentinel) {
    return fail("the ZIP end record's counts call for ZIP64, but it has no "
                "ZIP64 locator");
  }
  if (disk != 0 || cdDisk != 0 || diskEntries != entries)
    return fail("a multi-disk ZIP archive (not supported)");
  if (cdOffset > cdEnd || cdEnd - cdOffset != cdSize)
    return fail(fmt::format("the central directory ({} bytes at offset {}) "
                            "does not end where the end record begins (at {})",
                            cdSize, cdOffset, cdEnd));
  if (entries > cdSize / kCentralBytes)
    return fail(fmt::format("{} members cannot fit a central directory of "
                            "{} bytes",
                            entries, cdSize));

  // 3. The central directory, entry by entry.
  std::vector<Member> members;
  std::set<std::string> names;
  uint64_t at = cdOffset;
  for (uint64_t k = 0; k < entries; ++k) {
    if (cdEnd - at < kCentralBytes || getLE(&b[at], 4) != kCentralSig)
      return fail(fmt::format("central directory entry {} at offset {} is "
                              "malformed",
                              k + 1, at));
    const uint8_t *e = &b[at];
    Member m;
    m.flags = getLE(e + 8, 2);
    m.method = getLE(e + 10, 2);
    m.crc = getLE(e + 16, 4);
    m.compressedSize = getLE(e + 20, 4);
    m.size = getLE(e + 24, 4);
    uint64_t nameLen = getLE(e + 28, 2), extraLen = getLE(e + 30, 2),
             commentLen = getLE(e + 32, 2);
    uint64_t startDisk = getLE(e + 34, 2);
    m.localOffset = getLE(e + 42, 4);
    if (cdEnd - at - kCentralBytes < nameLen + extraLen + commentLen)
      return fail(fmt::format("central directory entry {} runs past the "
                              "central directory",
                              k + 1));
    m.name.assign(reinterpret_cast<const char *>(e + kCentralBytes), nameLen);
    auto bad = [&](const std::string &what) {
      return fail(fmt::format("member {}: {}", quoted(m.name), what));
    };
    bool needSize = m.size == kMax32,
         needCompressed = m.compressedSize == kMax32,
         needOffset = m.localOffset == kMax32;
    if (std::string err =
            readZip64Extra(e + kCentralBytes + nameLen, extraLen, m, needSize,
                           needCompressed, needOffset);
        !err.empty())
      return bad(err);
    if (startDisk != 0 && startDisk != kMax16)
      return fail("a multi-disk ZIP archive (not supported)");
    if (m.flags & (kFlagEncrypted | kFlagStrongEncryption))
      return bad("it is encrypted (not supported)");
    if (m.method != kMethodStored && m.method != kMethodDeflated)
      return bad(fmt::format("it uses compression method {} (only stored, 0, "
                             "and deflated, 8, as numpy writes them, are "
                             "supported)",
                             m.method));
    static const std::string ext = ".npy";
    if (m.name.size() <= ext.size() ||
        m.name.compare(m.name.size() - ext.size(), ext.size(), ext) != 0)
      return bad("not an .npy member (an .npz archive holds NAME.npy files "
                 "only)");
    if (!names.insert(m.name).second)
      return bad("the archive holds two members of this name");
    // Deflate packs at most 1032 bytes into one (258-byte matches of 2
    // bits): a bigger claim is a lie, refused before anything is allocated.
    if (m.method == kMethodDeflated &&
        m.size / kMaxDeflateRatio > m.compressedSize)
      return bad(fmt::format("its size {} is more than deflate can unpack "
                             "from its {} compressed bytes",
                             m.size, m.compressedSize));
    if (m.method == kMethodStored && m.compressedSize != m.size)
      return bad(fmt::format("it is stored, but its compressed size {} is not "
                             "its size {}",
                             m.compressedSize, m.size));
    members.push_back(std::move(m));
    at += kCentralBytes + nameLen + extraLen + commentLen;
  }
  if (at != cdEnd)
    return fail(fmt::format("the central directory holds {} bytes after its "
                            "{} entries",
                            cdEnd - at, entries));

  // 4. Each member's local header, and where its data lies: before the
  // central directory, overlapping no other member.
  std::vector<std::pair<uint64_t, uint64_t>> spans; // [local header, data end)
  uint64_t total = 0;
  for (Member &m : members) {
    auto bad = [&](const std::string &what) {
      return fail(fmt::format("member {}: {}", quoted(m.name), what));
    };
    if (m.localOffset > cdOffset || cdOffset - m.localOffset < kLocalBytes)
      return bad(fmt::format("its local header offset {} is not before the "
                             "central directory at {}",
                             m.localOffset, cdOffset));
    const uint8_t *l = &b[m.localOffset];
    if (getLE(l, 4) != kLocalSig)
      return bad(fmt::format("no local header at offset {}", m.localOffset));
    uint64_t flags = getLE(l + 6, 2), method = getLE(l + 8, 2);
    uint64_t nameLen = getLE(l + 26, 2), extraLen = getLE(l + 28, 2);
    uint64_t room = cdOffset - m.localOffset - kLocalBytes;
    if (nameLen + extraLen > room ||
        m.compressedSize > room - nameLen - extraLen)
      return bad(fmt::format("its data ({} bytes after its local header at "
                             "{}) runs into the central directory",
                             m.compressedSize, m.localOffset));
    if (std::string(reinterpret_cast<const char *>(l + kLocalBytes), nameLen) !=
        m.name)
      return bad("its local header names another member");
    if (flags & (kFlagEncrypted | kFlagStrongEncryption))
      return bad("it is encrypted (not supported)");
    if (method != m.method)
      return bad(fmt::format("its local header says method {}, the central "
                             "directory {}",
                             method, m.method));
    m.dataStart = m.localOffset + kLocalBytes + nameLen + extraLen;
    spans.push_back({m.localOffset, m.dataStart + m.compressedSize});
    if (m.size > maxBytes - std::min(total, maxBytes))
      return fail(fmt::format("its members unpack to more than this "
                              "machine's limit of {} bytes",
                              maxBytes));
    total += m.size;
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      return fail(
          fmt::format("two members overlap (at offset {})", spans[i].first));

  // 5. The members' bytes: unpacked, their CRC-32 checked, their .npy
  // headers read.
  for (const Member &m : members) {
    std::string label = fmt::format("{}: member {}", out.path, quoted(m.name));
    auto bad = [&](const std::string &what) {
      return Error::usage(fmt::format("{}: {}", label, what));
    };
    NpzEntry entry;
    entry.name = m.name.substr(0, m.name.size() - 4);
    entry.deflated = m.method == kMethodDeflated;
    entry.size = m.size;
    const uint8_t *data = &b[0] + m.dataStart;
    if (entry.deflated) {
      std::vector<uint8_t> unpacked(m.size);
      if (std::string err = inflateExactly(data, m.compressedSize, unpacked);
          !err.empty())
        return bad(err);
      entry.inflatedIndex = out.inflated.size();
      out.inflated.push_back(std::move(unpacked));
      data = out.inflated.back().data();
    } else {
      entry.offset = m.dataStart;
    }
    uint32_t crc = crc32Of(data, m.size);
    if (crc != m.crc)
      return bad(fmt::format("CRC-32 mismatch: the archive says {:08x}, its "
                             "data gives {:08x} (a corrupt file)",
                             m.crc, crc));
    ErrorOr<NpyHeader> header = parseNpyHeader(data, m.size, label);
    if (!header)
      return header.error();
    entry.descr = header->descr;
    entry.shape = header->shape;
    out.entries.push_back(std::move(entry));
  }
  return {};
}

/// Checks the names of the tensors to write: non-empty, UTF-8, unique.
ErrorOr<void> checkNames(const std::vector<NamedTensor> &tensors) {
  std::set<std::string> names;
  for (const NamedTensor &t : tensors) {
    if (t.name.empty())
      return Error::usage("a tensor's name is empty");
    for (size_t i = 0; i < t.name.size();) {
      unicode::DecodedChar c = unicode::decodeUtf8(t.name, i);
      if (!c.valid())
        return Error::usage(fmt::format("the tensor name {} is not UTF-8 ({})",
                                        quoted(t.name),
                                        unicode::describe(c.error)));
      i += c.size;
    }
    if (!names.insert(t.name).second)
      return Error::usage(
          fmt::format("two tensors are named {}", quoted(t.name)));
  }
  return {};
}

/// Emits the archive of `tensors` through `sink(bytes, size)`, a member at
/// a time.
template <typename Sink>
ErrorOr<void> emit(const std::vector<NamedTensor> &tensors, bool zip64,
                   Sink sink) {
  if (ErrorOr<void> ok = checkNames(tensors); !ok)
    return ok;
  struct Written {
    std::string name;
    uint32_t crc;
    uint64_t size, offset;
  };
  std::vector<Written> written;
  uint64_t offset = 0;
  auto flagsOf = [](const std::string &name) -> uint16_t {
    for (char c : name)
      if (static_cast<unsigned char>(c) >= 0x80)
        return kFlagUtf8;
    return 0;
  };
  for (const NamedTensor &t : tensors) {
    ErrorOr<std::vector<uint8_t>> npy = serializeNpy(*t.tensor);
    if (!npy)
      return Error::usage(
          fmt::format("tensor {}: {}", quoted(t.name), npy.error().message));
    Written w{t.name + ".npy", crc32Of(npy->data(), npy->size()), npy->size(),
              offset};
    bool big = zip64 || w.size >= kMax32;
    std::vector<uint8_t> head;
    putLE(head, kLocalSig, 4);
    putLE(head, big ? 45 : 20, 2); // version needed: 4.5 for ZIP64
    putLE(head, flagsOf(w.name), 2);
    putLE(head, kMethodStored, 2);
    putLE(head, kDosTime, 2);
    putLE(head, kDosDate, 2);
    putLE(head, w.crc, 4);
    putLE(head, big ? kMax32 : w.size, 4);
    putLE(head, big ? kMax32 : w.size, 4);
    putLE(head, w.name.size(), 2);
    putLE(head, big ? 20 : 0, 2);
    head.insert(head.end(), w.name.begin(), w.name.end());
    if (big) {
      putLE(head, kZip64ExtraId, 2);
      putLE(head, 16, 2);
      putLE(head, w.size, 8);
      putLE(head, w.size, 8);
    }
    if (ErrorOr<void> s = sink(head.data(), head.size()); !s)
      return s;
    if (ErrorOr<void> s = sink(npy->data(), npy->size()); !s)
      return s;
    offset += head.size() + npy->size();
    written.push_back(std::move(w));
  }
  std::vector<uint8_t> tail;
  uint64_t cdOffset = offset;
  for (const Written &w : written) {
    bool bigSize = zip64 || w.size >= kMax32;
    bool bigOffset = zip64 || w.offset >= kMax32;
    uint16_t extra = 8 * (2 * bigSize + bigOffset);
    putLE(tail, kCentralSig, 4);
    putLE(tail, 3 << 8 | (extra ? 45 : 20), 2); // made by: Unix
    putLE(tail, extra ? 45 : 20, 2);
    putLE(tail, flagsOf(w.name), 2);
    putLE(tail, kMethodStored, 2);
    putLE(tail, kDosTime, 2);
    putLE(tail, kDosDate, 2);
    putLE(tail, w.crc, 4);
    putLE(tail, bigSize ? kMax32 : w.size, 4);
    putLE(tail, bigSize ? kMax32 : w.size, 4);
    putLE(tail, w.name.size(), 2);
    putLE(tail, extra ? extra + 4 : 0, 2);
    putLE(tail, 0, 2);                       // comment
    putLE(tail, 0, 2);                       // disk
    putLE(tail, 0, 2);                       // internal attributes
    putLE(tail, uint32_t(0100644) << 16, 4); // a regular file, rw-r--r--
    putLE(tail, bigOffset ? kMax32 : w.offset, 4);
    tail.insert(tail.end(), w.name.begin(), w.name.end());
    if (extra) {
      putLE(tail, kZip64ExtraId, 2);
      putLE(tail, extra, 2);
      if (bigSize) {
        putLE(tail, w.size, 8);
        putLE(tail, w.size, 8);
      }
      if (bigOffset)
        putLE(tail, w.offset, 8);
    }
  }
  uint64_t cdSize = tail.size(), count = written.size();
  bool bigEnd =
      zip64 || count >= kMax16 || cdSize >= kMax32 || cdOffset >= kMax32;
  if (bigEnd) {
    uint64_t recordAt = cdOffset + cdSize;
    putLE(tail, kZip64EndSig, 4);
    putLE(tail, kZip64EndBytes - 12, 8);
    putLE(tail, 3 << 8 | 45, 2);
    putLE(tail, 45, 2);
    putLE(tail, 0, 4);
    putLE(tail, 0, 4);
    putLE(tail, count, 8);
    putLE(tail, count, 8);
    putLE(tail, cdSize, 8);
    putLE(tail, cdOffset, 8);
    putLE(tail, kZip64LocatorSig, 4);
    putLE(tail, 0, 4);
    putLE(tail, recordAt, 8);
    putLE(tail, 1, 4);
  }
  putLE(tail, kEndSig, 4);
  putLE(tail, 0, 2);
  putLE(tail, 0, 2);
  putLE(tail, bigEnd ? kMax16 : count, 2);
  putLE(tail, bigEnd ? kMax16 : count, 2);
  putLE(tail, bigEnd ? kMax32 : cdSize, 4);
  putLE(tail, bigEnd ? kMax32 : cdOffset, 4);
  putLE(tail, 0, 2);
  return sink(tail.data(), tail.size());
}

Error notRegular(const std::string &path) {
  return Error::usage(fmt::format("{}: not a regular file: an .npz archive "
                                  "(ZIP) is read from its end, so it cannot "
                                  "come from a pipe or a device",
                                  path));
}

} // namespace

const NpzEntry *Npz::find(const std::string &name) const {
  for (const NpzEntry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

ErrorOr<HostTensor> Npz::tensor(const std::string &name,
                                std::optional<StorageType> want) const {
  const NpzEntry *e = find(name);
  if (!e)
    return Error::usage(fmt::format("{}: has no array {} (no member {})", path,
                                    quoted(name), quoted(name + ".npy")));
  const uint8_t *data = e->deflated ? inflated[e->inflatedIndex].data()
                                    : bytes.data() + e->offset;
  return parseNpy(data, e->size,
                  fmt::format("{}: member {}", path, quoted(name + ".npy")),
                  want);
}

ErrorOr<Npz> parseNpz(std::vector<uint8_t> bytes, const std::string &name,
                      uint64_t maxBytes) {
  Npz out;
  out.path = name;
  out.bytes = std::move(bytes);
  if (out.bytes.size() > maxBytes)
    return Error::usage(fmt::format("{}: the archive is {} bytes, more than "
                                    "this machine's limit of {} bytes",
                                    name, out.bytes.size(), maxBytes));
  if (ErrorOr<void> ok = decode(out, maxBytes); !ok)
    return ok.error();
  return out;
}

ErrorOr<Npz> parseNpz(std::vector<uint8_t> bytes, const std::string &name) {
  return parseNpz(std::move(bytes), name, hostMemoryBytes());
}

ErrorOr<Npz> readNpz(const std::string &path) {
  return readNpz(path, hostMemoryBytes());
}

ErrorOr<Npz> readNpz(const std::string &path, uint64_t maxBytes) {
  // A FIFO is refused before it is opened: opening one blocks until a
  // writer comes.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) &&
      !S_ISDIR(st.st_mode))
    return notRegular(path);
  return readFileSource<Npz>(
      path, "an .npz archive", [&](ByteSource &in) -> ErrorOr<Npz> {
        if (!in.size)
          return notRegular(path);
        if (*in.size > maxBytes)
          return Error::usage(fmt::format(
              "{}: the archive is {} bytes, more than this machine's limit "
              "of {} bytes",
              path, *in.size, maxBytes));
        std::vector<uint8_t> bytes(*in.size);
        size_t got = 0;
        std::string error;
        if (!in.read(bytes.data(), bytes.size(), got, error))
          return Error::usage(fmt::format("{}: {}", path, error));
        if (got != bytes.size())
          return Error::usage(fmt::format("{}: the file shrank while being "
                                          "read",
                                          path));
        return parseNpz(std::move(bytes), path, maxBytes);
      });
}

ErrorOr<std::vector<uint8_t>>
serializeNpz(const std::vector<NamedTensor> &tensors, bool zip64) {
  std::vector<uint8_t> out;
  ErrorOr<void> ok =
      emit(tensors, zip64, [&](const uint8_t *p, size_t n) -> ErrorOr<void> {
        out.insert(out.end(), p, p + n);
        return {};
      });
  if (!ok)
    return ok.error();
  return out;
}

ErrorOr<void> writeNpzTo(int fd, const std::vector<NamedTensor> &tensors,
                         bool zip64) {
  return emit(tensors, zip64,
              [&](const uint8_t *p, size_t n) { return writeAll(fd, p, n); });
}

ErrorOr<void> writeNpz(const std::string &path,
                       const std::vector<NamedTensor> &tensors) {
  ErrorOr<OutputPlan> plan = planOutputs({path});
  if (!plan)
    return plan.error();
  return writeOutputs(*plan,
                      [&](size_t, int fd) { return writeNpzTo(fd, tensors); });
}

bool isNpzPath(const std::string &path) {
  static const std::string ext = ".npz";
  return path.size() > ext.size() &&
         path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

} // namespace runtime
} // namespace ein
