// safetensors reading and writing (ein/Runtime/SafeTensors.h) in memory:
// what the writer refuses, what the reader's JSON accepts, and every ein type
// through a file. test/einc/run-safetensors.test checks the files against the
// `safetensors` package itself.
#include "ein/Runtime/SafeTensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace ein;
using namespace ein::runtime;

namespace {

using Bytes = std::vector<uint8_t>;

/// A file of `header` and `data`: the 8-byte size, then both.
Bytes fileOf(const std::string &header, const Bytes &data = {}) {
  Bytes b;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    b.push_back(static_cast<uint8_t>(n >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

HostTensor f32Tensor(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t = *HostTensor::create(StorageType::F32, std::move(shape));
  std::memcpy(t.data.data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::string messageOf(const ErrorOr<SafeTensors> &r) {
  return r ? std::string("(no error)") : r.error().message;
}

TEST(SafeTensorsTest, EveryTypeRoundTripsBitForBit) {
  for (DType dtype : allDTypes()) {
    StorageType type = toStorage(dtype);
    HostTensor t = *HostTensor::create(type, {2, 3});
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] =
          type == StorageType::Bool ? i % 2 : static_cast<uint8_t>(i * 37 + 1);
    auto bytes = serializeSafeTensors({{"t", &t}});
    ASSERT_TRUE(bytes) << storageName(type) << ": " << bytes.error().message;
    auto read = parseSafeTensors(*bytes, "mem");
    ASSERT_TRUE(read) << storageName(type) << ": " << messageOf(read);
    auto back = read->tensor("t");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->type, type) << storageName(type);
    EXPECT_EQ(back->shape, t.shape);
    EXPECT_EQ(back->data, t.data) << storageName(type);
  }
}

TEST(SafeTensorsTest, MetadataNamesAndOrderSurvive) {
  HostTensor a = f32Tensor({2}, {1, 2}), b = f32Tensor({}, {3});
  // Quotes, a backslash, a control character and non-ASCII in names.
  std::string odd = "w\"q\\\n\xce\xb1";
  auto bytes = serializeSafeTensors({{odd, &a}, {"b", &b}},
                                    {{"format", "pt"}, {"step", "7"}});
  ASSERT_TRUE(bytes) << bytes.error().message;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | (*bytes)[i];
  EXPECT_EQ((8 + n) % 8, 0u) << "the data starts 8-byte aligned";
  auto read = parseSafeTensors(*bytes, "mem");
  ASSERT_TRUE(read) << messageOf(read);
  ASSERT_EQ(read->entries.size(), 2u);
  EXPECT_EQ(read->entries[0].name, odd);
  EXPECT_EQ(read->entries[1].name, "b");
  EXPECT_EQ(read->entries[1].shape, std::vector<int64_t>{});
  using Meta = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(read->metadata, (Meta{{"format", "pt"}, {"step", "7"}}));
  auto back = read->tensor(odd);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->data, a.data);
}

TEST(SafeTensorsTest, FortranOrderIsWrittenInCOrder) {
  HostTensor t = f32Tensor({2, 3}, {1, 4, 2, 5, 3, 6}); // columns stored
  t.layoutStrides = fortranStrides(t.shape);
  auto read = parseSafeTensors(*serializeSafeTensors({{"t", &t}}), "mem");
  ASSERT_TRUE(read) << messageOf(read);
  auto back = read->tensor("t");
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->isCOrder());
  EXPECT_EQ(back->data, f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6}).data);
}

TEST(SafeTensorsTest, WriterRefusesBadNames) {
  HostTensor t = f32Tensor({1}, {1});
  auto refused = [&](std::vector<NamedTensor> tensors) {
    auto r = serializeSafeTensors(tensors);
    return r ? std::string("(written)") : r.error().message;
  };
  EXPECT_EQ(refused({{"", &t}}), "a tensor's name is empty");
  EXPECT_EQ(refused({{"__metadata__", &t}}),
            "a tensor cannot be named '__metadata__': the format keeps that "
            "key for metadata");
  EXPECT_EQ(refused({{"a", &t}, {"a", &t}}), "two tensors are named 'a'");
  EXPECT_EQ(refused({{"a\xff", &t}}), "the tensor name 'a\\xff' is not UTF-8 "
                                      "(byte that never occurs in UTF-8)");
  HostTensor bad = t;
  bad.data.pop_back();
  EXPECT_NE(refused({{"a", &bad}}).find("does not match its shape"),
            std::string::npos);
}

TEST(SafeTensorsTest, ReaderTakesJsonAsJsonIs) {
  // Escapes, spaces between tokens, an empty metadata object, a tensor of
  // no elements, and an empty file of tensors.
  auto read = parseSafeTensors(
      fileOf("{ \"__metadata__\" : { } , \"\\u03b1\\ud83d\\ude00\" : "
             "{ \"shape\" : [ 0 , 3 ] , \"data_offsets\" : [ 0 , 0 ] , "
             "\"dtype\" : \"F32\" } }   "),
      "mem");
  ASSERT_TRUE(read) << messageOf(read);
  ASSERT_EQ(read->entries.size(), 1u);
  EXPECT_EQ(read->entries[0].name, "\xce\xb1\xf0\x9f\x98\x80");
  EXPECT_EQ(read->entries[0].shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(parseSafeTensors(fileOf("{}"), "mem"));
}

TEST(SafeTensorsTest, ReaderRefusesWhatJsonOrTheFormatForbids) {
  auto error = [](const std::string &header, Bytes data = {}) {
    return messageOf(parseSafeTensors(fileOf(header, data), "mem"));
  };
  std::string x = R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  Bytes four(4, 0);
  EXPECT_EQ(error("{" + x + ",}", four),
            "mem: malformed header at byte 54: expected a string");
  EXPECT_EQ(error("{" + x + "}x", four),
            "mem: malformed header at byte 54: unexpected text after the "
            "header's object");
  EXPECT_EQ(
      error(R"({"x":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", four),
      "mem: malformed header at byte 29: tensor 'x': a dim of shape has "
      "a leading zero");
  EXPECT_EQ(error(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",
                  four),
            "mem: malformed header at byte 47: tensor 'x': data_offsets must "
            "be [BEGIN, END], not 3 numbers");
  EXPECT_EQ(error(R"({"__metadata__":{"a":1}})"),
            "mem: malformed header at byte 21: the metadata value of 'a' must "
            "be a string");
  EXPECT_EQ(error(R"({"__metadata__":{"a":"1","a":"2"}})"),
            "mem: malformed header at byte 25: the metadata key 'a' appears "
            "twice");
  EXPECT_EQ(error("{\"x\\ud800\":1}"),
            "mem: malformed header at byte 3: a high surrogate without its "
            "low surrogate");
  EXPECT_EQ(error("{\"a\tb\":1}"),
            "mem: malformed header at byte 3: a control character in a "
            "string");
  EXPECT_EQ(
      error(
          R"({"x":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})"),
      "mem: malformed header at byte 29: tensor 'x': a dim of shape is too "
      "large");
}

TEST(SafeTensorsTest, ConvertsOnRequestByTheTensorRules) {
  HostTensor t = f32Tensor({2}, {1.5f, 0.1f});
  auto read = parseSafeTensors(*serializeSafeTensors({{"t", &t}}), "f");
  ASSERT_TRUE(read);
  auto wide = read->tensor("t", StorageType::F64);
  ASSERT_TRUE(wide) << wide.error().message;
  EXPECT_EQ(elementAsDouble(*wide, 1), static_cast<double>(0.1f));
  auto toInt = read->tensor("t", StorageType::I32);
  ASSERT_FALSE(toInt);
  EXPECT_EQ(toInt.error().message.rfind("f: tensor 't': ", 0), 0u)
      << toInt.error().message;
}

} // namespace
