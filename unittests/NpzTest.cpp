// .npz reading and writing (ein/Runtime/Npz.h) in memory: archives numpy
// wrote (np.savez, np.savez_compressed: bytes kept below), every type through
// an archive and back, ZIP64 records, what the writer refuses, and hostile
// archives (every truncation, every flipped byte, overlapping members,
// lying sizes). test/einc/run-npz.test checks files against numpy itself.
#include "ein/Runtime/Npz.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace ein;
using namespace ein::runtime;

namespace {

using Bytes = std::vector<uint8_t>;

// np.savez(f, x=np.array([1.5, -2.0], np.float32),
//          n=np.array([[1, 2, 3]], np.int64)), and np.savez_compressed(...)
// of the same arrays (numpy 2, Python 3.11: ZIP64 extra fields in the local
// headers).
const char kSavez[] =
    "\x50\x4b\x03\x04\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00\xd6\x43\x4b\x05"
    "\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x78\x2e\x6e\x70\x79\x01"
    "\x00\x10\x00\x88\x00\x00\x00\x00\x00\x00\x00\x88\x00\x00\x00\x00\x00\x00"
    "\x00\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72"
    "\x27\x3a\x20\x27\x3c\x66\x34\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e"
    "\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73"
    "\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x29\x2c\x20\x7d\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x0a\x00\x00\xc0\x3f\x00\x00\x00\xc0\x50\x4b\x03\x04\x2d\x00\x00"
    "\x00\x00\x00\x00\x00\x21\x00\x95\xee\x46\xdc\xff\xff\xff\xff\xff\xff\xff"
    "\xff\x05\x00\x14\x00\x6e\x2e\x6e\x70\x79\x01\x00\x10\x00\x98\x00\x00\x00"
    "\x00\x00\x00\x00\x98\x00\x00\x00\x00\x00\x00\x00\x93\x4e\x55\x4d\x50\x59"
    "\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x69\x38"
    "\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27"
    "\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20"
    "\x28\x31\x2c\x20\x33\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x01\x00\x00\x00"
    "\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00"
    "\x00\x00\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00"
    "\xd6\x43\x4b\x05\x88\x00\x00\x00\x88\x00\x00\x00\x05\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00\x00\x78\x2e\x6e\x70\x79\x50"
    "\x4b\x01\x02\x2d\x03\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00\x95\xee\x46"
    "\xdc\x98\x00\x00\x00\x98\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x80\x01\xbf\x00\x00\x00\x6e\x2e\x6e\x70\x79\x50\x4b\x05\x06"
    "\x00\x00\x00\x00\x02\x00\x02\x00\x66\x00\x00\x00\x8e\x01\x00\x00\x00\x00";
constexpr size_t kSavezSize = 522;
const char kSavezCompressed[] =
    "\x50\x4b\x03\x04\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\xd6\x43\x4b\x05"
    "\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x78\x2e\x6e\x70\x79\x01"
    "\x00\x10\x00\x88\x00\x00\x00\x00\x00\x00\x00\x4b\x00\x00\x00\x00\x00\x00"
    "\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8\x50\xc6\x50\xad\x9e\x92\x5a\x9c\x5c"
    "\xa4\x6e\xa5\xa0\x6e\x93\x66\xa2\xae\xa3\xa0\x9e\x96\x5f\x54\x52\x94\x98"
    "\x17\x9f\x5f\x94\x92\x0a\x12\x77\x4b\xcc\x29\x4e\x05\x8a\x17\x67\x24\x16"
    "\xa4\x02\xf9\x1a\x46\x3a\x9a\x3a\x0a\xb5\x0a\x14\x00\x2e\x06\x86\x03\xf6"
    "\x0c\x40\x02\x00\x50\x4b\x03\x04\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00"
    "\x95\xee\x46\xdc\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x6e\x2e"
    "\x6e\x70\x79\x01\x00\x10\x00\x98\x00\x00\x00\x00\x00\x00\x00\x4f\x00\x00"
    "\x00\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8\x50\xc6\x50\xad\x9e"
    "\x92\x5a\x9c\x5c\xa4\x6e\xa5\xa0\x6e\x93\x69\xa1\xae\xa3\xa0\x9e\x96\x5f"
    "\x54\x52\x94\x98\x17\x9f\x5f\x94\x92\x0a\x12\x77\x4b\xcc\x29\x4e\x05\x8a"
    "\x17\x67\x24\x16\xa4\x02\xf9\x1a\x86\x3a\x0a\xc6\x9a\x3a\x0a\xb5\x0a\x64"
    "\x03\x2e\x46\x06\x08\x60\x82\xd2\xcc\x50\x1a\x00\x50\x4b\x01\x02\x2d\x03"
    "\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\xd6\x43\x4b\x05\x4b\x00\x00\x00"
    "\x88\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01"
    "\x00\x00\x00\x00\x78\x2e\x6e\x70\x79\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00"
    "\x00\x08\x00\x00\x00\x21\x00\x95\xee\x46\xdc\x4f\x00\x00\x00\x98\x00\x00"
    "\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x82\x00\x00"
    "\x00\x6e\x2e\x6e\x70\x79\x50\x4b\x05\x06\x00\x00\x00\x00\x02\x00\x02\x00"
    "\x66\x00\x00\x00\x08\x01\x00\x00\x00\x00";
constexpr size_t kSavezCompressedSize = 388;

Bytes bytesOf(const char *data, size_t size) {
  return Bytes(reinterpret_cast<const uint8_t *>(data),
               reinterpret_cast<const uint8_t *>(data) + size);
}

HostTensor f32Tensor(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t = *HostTensor::create(StorageType::F32, std::move(shape));
  std::memcpy(t.data.data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::string messageOf(const ErrorOr<Npz> &r) {
  return r ? std::string("(no error)") : r.error().message;
}

uint32_t get32(const Bytes &b, size_t at) {
  return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | uint32_t(b[at + 3]) << 24;
}
void put32(Bytes &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
/// The offset of the `k`-th central directory entry.
size_t centralAt(const Bytes &b, unsigned k) {
  for (size_t at = 0; at + 4 <= b.size(); ++at)
    if (get32(b, at) == 0x02014b50 && k-- == 0)
      return at;
  return 0;
}

void expectNumpysArrays(const Bytes &bytes) {
  auto npz = parseNpz(bytes, "np.npz");
  ASSERT_TRUE(npz) << messageOf(npz);
  ASSERT_EQ(npz->entries.size(), 2u);
  EXPECT_EQ(npz->entries[0].name, "x");
  EXPECT_EQ(npz->entries[0].descr, "<f4");
  EXPECT_EQ(npz->entries[1].name, "n");
  EXPECT_EQ(npz->entries[1].shape, (std::vector<int64_t>{1, 3}));
  auto x = npz->tensor("x");
  ASSERT_TRUE(x) << x.error().message;
  EXPECT_EQ(x->type, StorageType::F32);
  EXPECT_EQ(x->shape, std::vector<int64_t>{2});
  EXPECT_EQ(elementAsDouble(*x, 0), 1.5);
  EXPECT_EQ(elementAsDouble(*x, 1), -2.0);
  auto n = npz->tensor("n", StorageType::I32); // value-checked narrowing
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->type, StorageType::I32);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(elementAsDouble(*n, i), i + 1);
  auto none = npz->tensor("y");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "np.npz: has no array 'y' (no member 'y.npy')");
}

TEST(NpzTest, ReadsWhatNumpyWrites) {
  expectNumpysArrays(bytesOf(kSavez, kSavezSize));
  expectNumpysArrays(bytesOf(kSavezCompressed, kSavezCompressedSize));
  auto z = parseNpz(bytesOf(kSavezCompressed, kSavezCompressedSize), "z.npz");
  ASSERT_TRUE(z);
  EXPECT_TRUE(z->entries[0].deflated);
}

TEST(NpzTest, EveryTypeRoundTrips) {
  for (DType dtype : allDTypes()) {
    StorageType type = toStorage(dtype);
    HostTensor t = *HostTensor::create(type, {2, 3});
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] =
          type == StorageType::Bool ? i % 2 : static_cast<uint8_t>(i * 7 + 1);
    for (bool zip64 : {false, true}) {
      auto bytes = serializeNpz({{"t", &t}, {"scalar", &t}}, zip64);
      ASSERT_TRUE(bytes) << storageName(type) << ": " << bytes.error().message;
      auto read = parseNpz(*bytes, "mem.npz");
      ASSERT_TRUE(read) << storageName(type) << ": " << messageOf(read);
      ASSERT_EQ(read->entries.size(), 2u);
      EXPECT_EQ(read->entries[1].name, "scalar");
      // numpy has no bf16 or fp8: they come back as f32, exactly.
      auto back = read->tensor("t", type);
      ASSERT_TRUE(back) << back.error().message;
      EXPECT_EQ(back->type, type) << storageName(type);
      EXPECT_EQ(back->shape, t.shape);
      EXPECT_EQ(back->data, t.data) << storageName(type);
    }
  }
}

TEST(NpzTest, ZeroDimsAndUtf8NamesRoundTrip) {
  HostTensor scalar = f32Tensor({}, {4.25f});
  HostTensor empty = *HostTensor::create(StorageType::I64, {0, 3});
  auto bytes = serializeNpz({{"\xcf\x80", &scalar}, {"a/b", &empty}});
  ASSERT_TRUE(bytes) << bytes.error().message;
  auto read = parseNpz(*bytes, "mem.npz");
  ASSERT_TRUE(read) << messageOf(read);
  auto pi = read->tensor("\xcf\x80");
  ASSERT_TRUE(pi) << pi.error().message;
  EXPECT_TRUE(pi->shape.empty());
  EXPECT_EQ(elementAsDouble(*pi, 0), 4.25);
  auto e = read->tensor("a/b");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->shape, (std::vector<int64_t>{0, 3}));
  // The UTF-8 flag (bit 11) on the non-ASCII name only.
  EXPECT_EQ((*bytes)[7] & 0x08, 0x08);
}

TEST(NpzTest, WritingIsDeterministic) {
  HostTensor t = f32Tensor({2}, {1, 2});
  auto a = serializeNpz({{"t", &t}}), b = serializeNpz({{"t", &t}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

TEST(NpzTest, WriterRefusesBadNames) {
  HostTensor t = f32Tensor({1}, {1});
  auto empty = serializeNpz({{"", &t}});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, "a tensor's name is empty");
  auto twice = serializeNpz({{"a", &t}, {"a", &t}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message, "two tensors are named 'a'");
  auto utf8 = serializeNpz({{"a\xff", &t}});
  ASSERT_FALSE(utf8);
  EXPECT_NE(utf8.error().message.find("is not UTF-8"), std::string::npos);
}

TEST(NpzTest, EveryTruncationIsAnErrorNamingTheFile) {
  for (const Bytes &whole : {bytesOf(kSavez, kSavezSize),
                             bytesOf(kSavezCompressed, kSavezCompressedSize)})
    for (size_t n = 0; n < whole.size(); ++n) {
      auto r = parseNpz(Bytes(whole.begin(), whole.begin() + n), "cut.npz");
      ASSERT_FALSE(r) << n;
      EXPECT_EQ(r.error().message.rfind("cut.npz: ", 0), 0u)
          << r.error().message;
    }
}

TEST(NpzTest, EveryFlippedByteIsCaughtOrHarmless) {
  // A flipped byte must give an error naming the file, or an archive whose
  // arrays are still numpy's (a timestamp, an attribute, padding).
  for (const Bytes &whole : {bytesOf(kSavez, kSavezSize),
                             bytesOf(kSavezCompressed, kSavezCompressedSize)})
    for (size_t i = 0; i < whole.size(); ++i) {
      Bytes b = whole;
      b[i] ^= 0x41;
      auto r = parseNpz(b, "flip.npz");
      if (!r) {
        EXPECT_EQ(r.error().message.rfind("flip.npz: ", 0), 0u)
            << r.error().message;
        continue;
      }
      for (const NpzEntry &e : r->entries) {
        auto t = r->tensor(e.name);
        if (!t)
          continue; // a header field the npy reader refuses
        if (e.name == "x" && t->shape == std::vector<int64_t>{2} &&
            t->type == StorageType::F32) {
          EXPECT_EQ(elementAsDouble(*t, 0), 1.5) << "byte " << i;
          EXPECT_EQ(elementAsDouble(*t, 1), -2.0) << "byte " << i;
        }
      }
    }
}

TEST(NpzTest, RefusesOverlapsLiesAndLimits) {
  HostTensor t = f32Tensor({2}, {1, 2});
  Bytes good = *serializeNpz({{"a", &t}, {"b", &t}});
  // Member a's sizes grown to cover b's local header.
  {
    Bytes b = good;
    size_t cd = centralAt(b, 0);
    put32(b, cd + 20, get32(b, cd + 20) + 10);
    put32(b, cd + 24, get32(b, cd + 24) + 10);
    auto r = parseNpz(b, "o.npz");
    ASSERT_FALSE(r);
    EXPECT_NE(messageOf(r).find("o.npz: two members overlap"),
              std::string::npos)
        << messageOf(r);
  }
  // A 32-bit size of 0xFFFFFFFF with no ZIP64 extra field to say it.
  {
    Bytes b = good;
    put32(b, centralAt(b, 1) + 24, 0xFFFFFFFF);
    auto r = parseNpz(b, "z.npz");
    EXPECT_EQ(messageOf(r), "z.npz: member 'b.npy': a size or offset is "
                            "0xFFFFFFFF but it has no ZIP64 extra field");
  }
  // The local header of b names another member.
  {
    Bytes b = good;
    size_t local = get32(b, centralAt(b, 1) + 42);
    b[local + 30] = 'c';
    auto r = parseNpz(b, "n.npz");
    EXPECT_EQ(messageOf(r),
              "n.npz: member 'b.npy': its local header names another member");
  }
  // Limits: the archive's size, and its members' unpacked sizes.
  auto small = parseNpz(good, "l.npz", 64);
  EXPECT_NE(messageOf(small).find("more than this machine's limit of 64"),
            std::string::npos)
      << messageOf(small);
  // A deflated member claiming 5000 bytes (deflate could give that much):
  // refused by its claim, before anything is unpacked.
  Bytes z = bytesOf(kSavezCompressed, kSavezCompressedSize);
  put32(z, centralAt(z, 0) + 24, 5000);
  auto unpacked = parseNpz(z, "l.npz", z.size());
  EXPECT_EQ(messageOf(unpacked), fmt::format("l.npz: its members unpack to "
                                             "more than this machine's limit "
                                             "of {} bytes",
                                             z.size()));
  auto lie = parseNpz(z, "l.npz");
  EXPECT_EQ(messageOf(lie), "l.npz: member 'x.npy': its deflated data "
                            "unpacks to 136 bytes, not its size of 5000");
  EXPECT_TRUE(parseNpz(good, "l.npz", 2 * good.size()));
}

TEST(NpzTest, ForcedZip64HasItsRecords) {
  HostTensor t = f32Tensor({2}, {1, 2});
  Bytes plain = *serializeNpz({{"a", &t}});
  Bytes big = *serializeNpz({{"a", &t}}, /*zip64=*/true);
  auto has = [](const Bytes &b, uint32_t sig) {
    for (size_t at = 0; at + 4 <= b.size(); ++at)
      if (get32(b, at) == sig)
        return true;
    return false;
  };
  EXPECT_FALSE(has(plain, 0x06064b50));
  EXPECT_TRUE(has(big, 0x06064b50)); // the ZIP64 end record
  EXPECT_TRUE(has(big, 0x07064b50)); // its locator
  EXPECT_EQ(get32(big, centralAt(big, 0) + 42), 0xFFFFFFFFu);
}

TEST(NpzTest, NamesIsNpzPath) {
  EXPECT_TRUE(isNpzPath("state.npz"));
  EXPECT_TRUE(isNpzPath("dir/x.npz"));
  EXPECT_FALSE(isNpzPath(".npz"));
  EXPECT_FALSE(isNpzPath("x.npy"));
  EXPECT_FALSE(isNpzPath("x.npz.tmp"));
}

} // namespace
