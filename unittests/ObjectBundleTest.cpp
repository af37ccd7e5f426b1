// Tests the JIT cache's bundle of object files (ObjectBundle.h): objects
// round-trip, and truncated, padded, altered or hostile files are errors.
#include "ein/Execution/ObjectBundle.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using ein::packObjects;
using ein::unpackObjects;

const std::vector<std::string> kObjects = {"\x7f"
                                           "ELF first object",
                                           std::string("second\0with nul", 15),
                                           "x"};

TEST(ObjectBundle, RoundTrips) {
  std::string packed = packObjects(kObjects);
  auto objects = unpackObjects(packed);
  ASSERT_TRUE(objects) << objects.error().message;
  ASSERT_EQ(objects->size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ((*objects)[i], kObjects[i]);
  // One empty object is kept as one.
  auto one = unpackObjects(packObjects({""}));
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_TRUE((*one)[0].empty());
}

TEST(ObjectBundle, RefusesEveryTruncation) {
  std::string packed = packObjects(kObjects);
  for (size_t n = 0; n < packed.size(); ++n) {
    auto cut = unpackObjects(std::string_view(packed).substr(0, n));
    EXPECT_FALSE(cut) << "cut to " << n << " bytes";
  }
}

TEST(ObjectBundle, RefusesPaddingAndAlteredBytes) {
  std::string packed = packObjects(kObjects);
  EXPECT_FALSE(unpackObjects(packed + '\0'));
  for (size_t i = 0; i < packed.size(); ++i) {
    std::string altered = packed;
    altered[i] ^= 0x20;
    EXPECT_FALSE(unpackObjects(altered)) << "byte " << i << " altered";
  }
  auto error = unpackObjects("EINOBJS2" + packed.substr(8));
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("magic"), std::string::npos);
}

/// A file whose checksum is right but whose count and sizes lie (written on
/// purpose, not damaged): refused, with no read past its end.
std::string forged(uint64_t count, std::vector<uint64_t> sizes,
                   std::string data) {
  std::string out = "EINOBJS1";
  auto put = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i)
      out.push_back(char((v >> (8 * i)) & 0xff));
  };
  put(count);
  for (uint64_t s : sizes)
    put(s);
  out += data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : out) {
    h ^= uint8_t(c);
    h *= 0x100000001b3ull;
  }
  put(h);
  return out;
}

TEST(ObjectBundle, RefusesHostileSizes) {
  // The forger's checksum is right: a well-formed forgery is accepted.
  auto fine = unpackObjects(forged(2, {1, 2}, "abc"));
  ASSERT_TRUE(fine) << fine.error().message;
  EXPECT_EQ((*fine)[1], "bc");
  EXPECT_FALSE(unpackObjects(forged(0, {}, "")));
  EXPECT_FALSE(unpackObjects(forged(UINT64_MAX, {1}, "a")));
  EXPECT_FALSE(unpackObjects(forged(3, {1, 2}, "abc")));
  EXPECT_FALSE(unpackObjects(forged(2, {1, UINT64_MAX}, "abc")));
  EXPECT_FALSE(unpackObjects(forged(2, {UINT64_MAX, 4}, "abc")));
  EXPECT_FALSE(unpackObjects(forged(2, {1, 1}, "abc")));
  EXPECT_FALSE(unpackObjects(forged(2, {2, 2}, "abc")));
}

} // namespace
