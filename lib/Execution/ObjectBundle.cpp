// Several object files in one (include/ein/Execution/ObjectBundle.h).
#include "ein/Execution/ObjectBundle.h"
#include "ein/Support/Hash.h"

#include <fmt/format.h>

#include <cstdint>

namespace ein {

namespace {

constexpr std::string_view kMagic = "EINOBJS1";
/// More objects than any compilation makes (CodeGen.cpp's partitions): a
/// larger count is a damaged file, refused before its sizes are read.
constexpr uint64_t kMaxObjects = 1024;

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t getU64(std::string_view bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(uint8_t(bytes[at + i])) << (8 * i);
  return v;
}

} // namespace

std::string packObjects(const std::vector<std::string> &objects) {
  std::string out(kMagic);
  putU64(out, objects.size());
  for (const std::string &o : objects)
    putU64(out, o.size());
  for (const std::string &o : objects)
    out += o;
  putU64(out, fnv1a(out));
  return out;
}

ErrorOr<std::vector<std::string_view>> unpackObjects(std::string_view bytes) {
  auto bad = [&](std::string why) {
    return Error::program(fmt::format(
        "not an object bundle of einc ({} bytes): {}", bytes.size(), why));
  };
  // The magic, the count and the checksum at least.
  if (bytes.size() < kMagic.size() + 16)
    return bad("too short");
  if (bytes.substr(0, kMagic.size()) != kMagic)
    return bad("no EINOBJS1 magic");
  std::string_view body = bytes.substr(0, bytes.size() - 8);
  if (fnv1a(body) != getU64(bytes, body.size()))
    return bad("its checksum does not match (truncated or altered)");
  uint64_t count = getU64(body, kMagic.size());
  if (count == 0 || count > kMaxObjects)
    return bad(fmt::format("{} objects", count));
  size_t at = kMagic.size() + 8;
  if ((body.size() - at) / 8 < count)
    return bad("its sizes are cut short");
  size_t data = at + 8 * count;
  std::vector<std::string_view> objects;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = getU64(body, at + 8 * i);
    if (size > body.size() - data)
      return bad(
          fmt::format("object {} of {} bytes overruns the file", i, size));
    objects.push_back(body.substr(data, size));
    data += size;
  }
  if (data != body.size())
    return bad(
        fmt::format("{} bytes after its last object", body.size() - data));
  return objects;
}

} // namespace ein
