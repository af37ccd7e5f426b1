// einc train's data loader (ein/Runtime/Dataset.h): memory-mapped raw and
// .npy datasets, windows and rows, the sample orders, conversions and every
// refused file. Files are written byte by byte at test time; expected
// batches are computed from the formula that wrote the file.
#include "ein/Runtime/Dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace ein;
using namespace ein::runtime;

namespace {

using Bytes = std::vector<uint8_t>;

/// A version 1.0 .npy file: header `dict` padded to a multiple of 64 bytes
/// and ended with '\n' (as np.save writes it), then `data`.
Bytes npyBytes(const std::string &dict, const Bytes &data) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64 != 0)
    h += ' ';
  h += '\n';
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  b.push_back(static_cast<uint8_t>(h.size()));
  b.push_back(static_cast<uint8_t>(h.size() >> 8));
  b.insert(b.end(), h.begin(), h.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string dict(const std::string &descr, const std::string &shape,
                 bool fortran = false) {
  return "{'descr': '" + descr +
         "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

template <typename T> Bytes le(const std::vector<T> &values) {
  Bytes b(values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(b.data(), values.data(), b.size());
  return b;
}

template <typename T> std::vector<T> elements(const HostTensor &t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

HostTensor batchOf(StorageType type, std::vector<int64_t> shape) {
  ErrorOr<HostTensor> t = HostTensor::create(type, std::move(shape));
  EXPECT_TRUE(t);
  return t ? std::move(*t) : HostTensor();
}

/// The stream the raw tests use: element i is 1000 + 3 i (as u16).
std::vector<uint16_t> stream(size_t n) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint16_t>(1000 + 3 * i);
  return v;
}

/// How many lines of /proc/self/maps name `path` (mappings of the file).
int mappingsOf(const std::string &path) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.size() >= path.size() &&
        line.compare(line.size() - path.size(), path.size(), path) == 0)
      ++n;
  return n;
}

class DatasetTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/ein-dataset-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir = buf.data();
  }
  void TearDown() override {
    if (DIR *d = ::opendir(dir.c_str())) {
      while (dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") {
          std::string p = dir + "/" + n;
          if (::unlink(p.c_str()) != 0)
            ::rmdir(p.c_str());
        }
      }
      ::closedir(d);
    }
    ::rmdir(dir.c_str());
  }

  std::string put(const std::string &name, const Bytes &bytes) {
    std::string p = dir + "/" + name;
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  /// Opening `bytes` (written to `name`) fails with a usage error naming the
  /// file and containing `needle`.
  void expectOpenError(const std::string &name, const Bytes &bytes,
                       const std::string &needle,
                       const std::string &rawType = "") {
    std::string p = put(name, bytes);
    ErrorOr<Dataset> d = Dataset::open(p, rawType);
    ASSERT_FALSE(d) << name << " opened";
    EXPECT_EQ(d.error().kind, ErrorKind::Usage);
    EXPECT_NE(d.error().message.find(p), std::string::npos)
        << d.error().message;
    EXPECT_NE(d.error().message.find(needle), std::string::npos)
        << d.error().message;
  }

  std::string dir;
};

// The expected values come from the reference splitmix64, independently of
// this code: sampleHash(s, c) is splitmix64's (c+1)-th output from state s:
//   python3 -c "M=2**64;h=lambda s,c:(lambda z:z^(z>>31))((lambda
//   z:(z^(z>>27))*0x94D049BB133111EB%M)((lambda
//   z:(z^(z>>30))*0xBF58476D1CE4E5B9%M)((s+(c+1)*0x9E3779B97F4A7C15)%M)));
//   print([hex(h(s,c)) for s,c in [(0,0),(0,1),(0,2),(1234567,0),
//   (42,1000000),(2**64-1,2**64-1)]])"
// The first three are also the published splitmix64 outputs for seed 0.
TEST(SampleHash, MatchesReferenceSplitmix64) {
  EXPECT_EQ(sampleHash(0, 0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(sampleHash(0, 1), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(sampleHash(0, 2), 0x06c45d188009454full);
  EXPECT_EQ(sampleHash(1234567, 0), 0x599ed017fb08fc85ull);
  EXPECT_EQ(sampleHash(42, 1000000), 0xb053c53312ac3ffbull);
  EXPECT_EQ(sampleHash(UINT64_MAX, UINT64_MAX), 0xb4d055fcf2cbbd7bull);
}

TEST_F(DatasetTest, RawU16StreamWindowsSequential) {
  std::string p = put("train.bin", le(stream(100)));
  ErrorOr<Dataset> d = Dataset::open(p, "u16");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->shape(), std::vector<int64_t>{100});
  EXPECT_EQ(d->elementName(), "u16");
  EXPECT_EQ(d->path(), p);
  EXPECT_TRUE(d->isStream());

  HostTensor batch = batchOf(StorageType::I32, {4, 9});
  ErrorOr<int64_t> count = d->sampleCount(batch, 0, 100);
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(*count, 92); // starts 0..91
  ErrorOr<int64_t> held = d->sampleCount(batch, 90, 100);
  ASSERT_TRUE(held);
  EXPECT_EQ(*held, 2);

  // Sequential, stride W - 1 = 8: windows start at 0, 8, 16, 24.
  ErrorOr<std::vector<int64_t>> firsts =
      d->fill(batch, 0, 100, SampleOrder::Sequential, 0, 0);
  ASSERT_TRUE(firsts) << firsts.error().message;
  EXPECT_EQ(*firsts, (std::vector<int64_t>{0, 8, 16, 24}));
  std::vector<int32_t> got = elements<int32_t>(batch);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t w = 0; w < 9; ++w)
      EXPECT_EQ(got[b * 9 + w], 1000 + 3 * (8 * b + w)) << b << "," << w;
}

TEST_F(DatasetTest, SequentialWrapsAroundInsideTheSplit) {
  std::string p = put("s.bin", le(stream(40)));
  ErrorOr<Dataset> d = Dataset::open(p, "u16");
  ASSERT_TRUE(d) << d.error().message;
  // Split [10, 30), W = 5: 16 starts (10..25), stride 4. Samples 3, 4, 5
  // start at split offsets 12, 16 mod 16 = 0, 20 mod 16 = 4.
  HostTensor batch = batchOf(StorageType::I64, {3, 5});
  ErrorOr<std::vector<int64_t>> firsts =
      d->fill(batch, 10, 30, SampleOrder::Sequential, 0, 3);
  ASSERT_TRUE(firsts) << firsts.error().message;
  EXPECT_EQ(*firsts, (std::vector<int64_t>{22, 10, 14}));
  std::vector<int64_t> got = elements<int64_t>(batch);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t w = 0; w < 5; ++w)
      EXPECT_EQ(got[b * 5 + w], 1000 + 3 * ((*firsts)[b] + w));

  // A window of 1 moves by 1 (the stride is at least 1), and a counter far
  // beyond 2^64 / stride still wraps exactly: (c * 4) mod 16 with
  // c = 2^64 - 1 is 12 (computed in 128 bits, not modulo 2^64).
  HostTensor far = batchOf(StorageType::I64, {1, 5});
  ErrorOr<std::vector<int64_t>> f =
      d->fill(far, 10, 30, SampleOrder::Sequential, 0, UINT64_MAX);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, std::vector<int64_t>{22});
  HostTensor ones = batchOf(StorageType::I64, {3, 1});
  ErrorOr<std::vector<int64_t>> o =
      d->fill(ones, 38, 40, SampleOrder::Sequential, 0, 0);
  ASSERT_TRUE(o);
  EXPECT_EQ(*o, (std::vector<int64_t>{38, 39, 38}));
}

TEST_F(DatasetTest, RandomStreamFollowsSampleHash) {
  std::string p = put("r.bin", le(stream(100)));
  ErrorOr<Dataset> d = Dataset::open(p, "u16");
  ASSERT_TRUE(d) << d.error().message;
  HostTensor batch = batchOf(StorageType::I32, {4, 9});
  ErrorOr<std::vector<int64_t>> firsts =
      d->fill(batch, 0, 100, SampleOrder::Random, 7, 5);
  ASSERT_TRUE(firsts) << firsts.error().message;
  // python3: [h(7, c) % 92 for c in range(5, 9)] with h as above.
  EXPECT_EQ(*firsts, (std::vector<int64_t>{69, 22, 22, 25}));
  std::vector<int32_t> got = elements<int32_t>(batch);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t w = 0; w < 9; ++w)
      EXPECT_EQ(got[b * 9 + w], 1000 + 3 * ((*firsts)[b] + w));
}

TEST_F(DatasetTest, NpyRowsSequentialAndRandom) {
  // Shape (6, 2, 3) of f32, element i = i / 2.
  std::vector<float> values(36);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) / 2;
  std::string p =
      put("rows.npy", npyBytes(dict("<f4", "(6, 2, 3)"), le(values)));
  ErrorOr<Dataset> d = Dataset::open(p);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->shape(), (std::vector<int64_t>{6, 2, 3}));
  EXPECT_EQ(d->elementName(), "f32");
  EXPECT_FALSE(d->isStream());

  HostTensor batch = batchOf(StorageType::F64, {4, 2, 3});
  ErrorOr<int64_t> count = d->sampleCount(batch, 0, 6);
  ASSERT_TRUE(count);
  EXPECT_EQ(*count, 6);
  ErrorOr<std::vector<int64_t>> firsts =
      d->fill(batch, 0, 6, SampleOrder::Sequential, 0, 4);
  ASSERT_TRUE(firsts) << firsts.error().message;
  // Rows 4, 5, 0, 1: element index row * 6.
  EXPECT_EQ(*firsts, (std::vector<int64_t>{24, 30, 0, 6}));
  std::vector<double> got = elements<double>(batch);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t k = 0; k < 6; ++k)
      EXPECT_EQ(got[b * 6 + k], ((*firsts)[b] + k) / 2.0);

  // Rows within the split [2, 5) only: sequential rows 2, 3, 4, 2.
  HostTensor f32 = batchOf(StorageType::F32, {4, 2, 3});
  ErrorOr<std::vector<int64_t>> split =
      d->fill(f32, 2, 5, SampleOrder::Sequential, 0, 0);
  ASSERT_TRUE(split);
  EXPECT_EQ(*split, (std::vector<int64_t>{12, 18, 24, 12}));
  EXPECT_EQ(elements<float>(f32)[7], 18 / 2.0f + 0.5f);

  // python3: [h(99, c) % 6 for c in range(4)] is [5, 0, 1, 5].
  ErrorOr<std::vector<int64_t>> random =
      d->fill(batch, 0, 6, SampleOrder::Random, 99, 0);
  ASSERT_TRUE(random);
  EXPECT_EQ(*random, (std::vector<int64_t>{30, 0, 6, 30}));
}

TEST_F(DatasetTest, EveryNpyElementType) {
  struct Case {
    const char *descr, *name;
    Bytes data; // the values 1, 2, 200 (or -5 for signed types)
    std::vector<int64_t> expect;
  };
  std::vector<Case> cases = {
      {"|u1", "u8", le<uint8_t>({1, 2, 200}), {1, 2, 200}},
      {"<u1", "u8", le<uint8_t>({1, 2, 200}), {1, 2, 200}},
      {"<u2", "u16", le<uint16_t>({1, 2, 60000}), {1, 2, 60000}},
      {"<u4", "u32", le<uint32_t>({1, 2, 4000000000u}), {1, 2, 4000000000}},
      {"|i1", "i8", le<int8_t>({1, 2, -5}), {1, 2, -5}},
      {"<i2", "i16", le<int16_t>({1, 2, -5}), {1, 2, -5}},
      {"<i4", "i32", le<int32_t>({1, 2, -5}), {1, 2, -5}},
      {"<i8",
       "i64",
       le<int64_t>({1, 2, -(int64_t(1) << 40)}),
       {1, 2, -(int64_t(1) << 40)}},
      {"<f4", "f32", le<float>({1, 2, -5}), {1, 2, -5}},
      {"<f8", "f64", le<double>({1, 2, -5}), {1, 2, -5}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.descr);
    std::string p = put("t.npy", npyBytes(dict(c.descr, "(3,)"), c.data));
    ErrorOr<Dataset> d = Dataset::open(p);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->elementName(), c.name);
    bool isFloat = c.name[0] == 'f';
    HostTensor batch =
        batchOf(isFloat ? StorageType::F64 : StorageType::I64, {1, 3});
    ErrorOr<std::vector<int64_t>> f =
        d->fill(batch, 0, 3, SampleOrder::Sequential, 0, 0);
    ASSERT_TRUE(f) << f.error().message;
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(elementAsDouble(batch, i), static_cast<double>(c.expect[i]));
    // The same type given as the raw type is accepted for a .npy.
    EXPECT_TRUE(Dataset::open(p, c.name));
  }
}

TEST_F(DatasetTest, ConversionsAreCheckedAndFloatIntoIntRefused) {
  std::string u32 = put("u32.bin", le<uint32_t>({7, 3000000000u, 9}));
  ErrorOr<Dataset> d = Dataset::open(u32, "u32");
  ASSERT_TRUE(d);
  HostTensor i32 = batchOf(StorageType::I32, {1, 3});
  ErrorOr<std::vector<int64_t>> f =
      d->fill(i32, 0, 3, SampleOrder::Sequential, 0, 0);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find(u32 + ": element 1 (u32): 3000000000 "
                                         "does not fit in i32"),
            std::string::npos)
      << f.error().message;
  HostTensor i64 = batchOf(StorageType::I64, {1, 3});
  ASSERT_TRUE(d->fill(i64, 0, 3, SampleOrder::Sequential, 0, 0));
  EXPECT_EQ(elements<int64_t>(i64), (std::vector<int64_t>{7, 3000000000, 9}));

  std::string i64p =
      put("big.npy",
          npyBytes(dict("<i8", "(2,)"), le<int64_t>({5, -(int64_t(1) << 40)})));
  ErrorOr<Dataset> big = Dataset::open(i64p);
  ASSERT_TRUE(big);
  HostTensor two = batchOf(StorageType::I32, {1, 2});
  f = big->fill(two, 0, 2, SampleOrder::Sequential, 0, 0);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("-1099511627776 does not fit in i32"),
            std::string::npos)
      << f.error().message;

  // Integers into floats must be exact: 2^24 is, 2^24 + 1 is not in f32.
  std::string ints = put("ints.bin", le<int32_t>({16777216, 16777217}));
  ErrorOr<Dataset> id = Dataset::open(ints, "i32");
  ASSERT_TRUE(id);
  HostTensor one = batchOf(StorageType::F32, {1, 1});
  ASSERT_TRUE(id->fill(one, 0, 1, SampleOrder::Sequential, 0, 0));
  EXPECT_EQ(elements<float>(one)[0], 16777216.0f);
  f = id->fill(one, 1, 2, SampleOrder::Sequential, 0, 0);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("element 1 (i32): 16777217 is not exactly "
                                   "representable in f32"),
            std::string::npos)
      << f.error().message;
  HostTensor f64 = batchOf(StorageType::F64, {1, 2});
  ASSERT_TRUE(id->fill(f64, 0, 2, SampleOrder::Sequential, 0, 0));
  EXPECT_EQ(elements<double>(f64)[1], 16777217.0);

  // f64 into f32 rounds as numpy's astype(np.float32); a finite value
  // beyond f32 is refused; inf stays inf.
  std::string dbl = put("d.npy", npyBytes(dict("<f8", "(3,)"),
                                          le<double>({0.1, INFINITY, 1e300})));
  ErrorOr<Dataset> dd = Dataset::open(dbl);
  ASSERT_TRUE(dd);
  HostTensor pair = batchOf(StorageType::F32, {1, 2});
  ASSERT_TRUE(dd->fill(pair, 0, 2, SampleOrder::Sequential, 0, 0));
  // np.float32(0.1) == 0.10000000149011612
  EXPECT_EQ(static_cast<double>(elements<float>(pair)[0]), 0.10000000149011612);
  EXPECT_TRUE(std::isinf(elements<float>(pair)[1]));
  f = dd->fill(pair, 1, 3, SampleOrder::Sequential, 0, 0);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("element 2 (f64): 1e+300 overflows f32"),
            std::string::npos)
      << f.error().message;

  // Float data never fills an integer batch.
  HostTensor ib = batchOf(StorageType::I64, {1, 2});
  f = dd->fill(ib, 0, 3, SampleOrder::Sequential, 0, 0);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("f64 data cannot fill the integer batch "
                                   "i64[1, 2]"),
            std::string::npos)
      << f.error().message;

  // bool, f16, bf16 and fp8 batches are refused, naming the batch.
  for (StorageType t : {StorageType::Bool, StorageType::F16, StorageType::BF16,
                        StorageType::F8E4M3, StorageType::F8E5M2}) {
    HostTensor b = batchOf(t, {1, 2});
    f = d->fill(b, 0, 3, SampleOrder::Sequential, 0, 0);
    ASSERT_FALSE(f) << storageName(t);
    EXPECT_NE(
        f.error().message.find(std::string("cannot fill a ") + b.describe()),
        std::string::npos)
        << f.error().message;
  }
}

TEST_F(DatasetTest, BatchesThatDoNotFitAreRefused) {
  std::string p = put("s.bin", le(stream(10)));
  ErrorOr<Dataset> d = Dataset::open(p, "u16");
  ASSERT_TRUE(d);
  std::string named = p; // the file each error must name
  auto expectMisfit = [&](ErrorOr<int64_t> r, const std::string &needle) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::Usage);
    EXPECT_NE(r.error().message.find(named), std::string::npos);
    EXPECT_NE(r.error().message.find(needle), std::string::npos)
        << r.error().message;
  };
  expectMisfit(d->sampleCount(batchOf(StorageType::I32, {2, 3, 4}), 0, 10),
               "a batch i32[2, 3, 4] does not fit the dataset of shape (10,) "
               "(split of length 10)");
  expectMisfit(d->sampleCount(batchOf(StorageType::I32, {2, 11}), 0, 10),
               "shorter than one window of 11");
  expectMisfit(d->sampleCount(batchOf(StorageType::I32, {2, 6}), 5, 10),
               "(split of length 5): the split is shorter than one window");
  expectMisfit(d->sampleCount(batchOf(StorageType::I32, {2, 0}), 0, 10),
               "the window length W is 0");
  expectMisfit(d->sampleCount(batchOf(StorageType::I32, {2, 3}), 4, 11),
               "the split [4, 11) is not within the file's 10 samples");
  expectMisfit(d->sampleCount(batchOf(StorageType::I32, {2, 3}), 5, 4),
               "the split [5, 4)");
  // fill refuses the same way, and leaves nothing half-explained.
  HostTensor big = batchOf(StorageType::I32, {2, 11});
  ErrorOr<std::vector<int64_t>> f =
      d->fill(big, 0, 10, SampleOrder::Random, 1, 0);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("shorter than one window"),
            std::string::npos);

  std::string rows =
      put("rows.npy", npyBytes(dict("<i4", "(4, 3)"),
                               le<int32_t>(std::vector<int32_t>(12, 1))));
  ErrorOr<Dataset> r = Dataset::open(rows);
  ASSERT_TRUE(r) << r.error().message;
  named = rows;
  expectMisfit(r->sampleCount(batchOf(StorageType::I32, {2, 4}), 0, 4),
               "dim 1 is 4 in the batch but 3 in the file");
  expectMisfit(r->sampleCount(batchOf(StorageType::I32, {2}), 0, 4),
               "fills batches of rank 2 (B, then the rows' shape (3,))");
  expectMisfit(r->sampleCount(batchOf(StorageType::I32, {2, 3}), 4, 4),
               "the split holds no rows");
}

TEST_F(DatasetTest, RefusedFiles) {
  Bytes ok = le<uint16_t>({1, 2, 3});
  expectOpenError("fortran.npy", npyBytes(dict("<u2", "(3, 1)", true), ok),
                  "Fortran-order data is not supported");
  expectOpenError("be.npy", npyBytes(dict(">u2", "(3,)"), ok),
                  "big-endian data ('>u2') is not supported");
  expectOpenError("obj.npy", npyBytes(dict("|O", "(3,)"), Bytes(24)),
                  "unsupported dtype '|O' (Python objects)");
  expectOpenError("bool.npy", npyBytes(dict("|b1", "(3,)"), Bytes(3)),
                  "unsupported dtype '|b1' (bool)");
  expectOpenError("u64.npy", npyBytes(dict("<u8", "(1,)"), Bytes(8)),
                  "unsupported dtype '<u8' (u64");
  expectOpenError("nobo.npy", npyBytes(dict("|u2", "(3,)"), ok),
                  "descr '|u2' has no little-endian byte order");
  expectOpenError("trunc.npy", npyBytes(dict("<u2", "(4,)"), ok),
                  "truncated .npy file: shape (4,) of '<u2' needs 8 data "
                  "bytes, file has 6");
  expectOpenError("trail.npy", npyBytes(dict("<u2", "(2,)"), ok),
                  "data size mismatch: shape (2,) of '<u2' needs 4 data "
                  "bytes, file has 6");
  expectOpenError("hostile.npy",
                  npyBytes(dict("<u2", "(4611686018427387904, 4)"), ok),
                  "shape (4611686018427387904, 4) is too large");
  expectOpenError("zero.npy", npyBytes(dict("<u2", "(0,)"), {}),
                  "empty dataset (shape (0,))");
  expectOpenError("zerorow.npy", npyBytes(dict("<u2", "(3, 0)"), {}),
                  "empty dataset (shape (3, 0))");
  expectOpenError("scalar.npy", npyBytes(dict("<u2", "()"), le<uint16_t>({1})),
                  "a 0-d array (shape ()) is not a dataset");
  expectOpenError("bad.npy", {'h', 'e', 'l', 'l', 'o'}, "not a .npy file");
  expectOpenError("empty.npy", {}, "empty file, not a dataset");
  expectOpenError("empty.bin", {}, "empty file, not a dataset", "u16");
  expectOpenError("odd.bin", {1, 2, 3},
                  "size 3 bytes is not a multiple of "
                  "the 2-byte element size of u16",
                  "u16");
  expectOpenError("notype.bin", ok, "needs its element type");
  expectOpenError("unknown.bin", ok, "unknown dataset element type 'u17'",
                  "u17");
  expectOpenError("typed.npy", npyBytes(dict("<u2", "(3,)"), ok),
                  "the element type u32 was given, but the file holds u16 "
                  "('<u2')",
                  "u32");

  std::string missing = dir + "/missing.bin";
  ErrorOr<Dataset> m = Dataset::open(missing, "u16");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find(missing + ": cannot open"),
            std::string::npos);
  std::string sub = dir + "/sub.npy";
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  ErrorOr<Dataset> dd = Dataset::open(sub);
  ASSERT_FALSE(dd);
  EXPECT_NE(dd.error().message.find(sub + ": is a directory"),
            std::string::npos);
  // A FIFO without a writer is refused at once, not waited on.
  std::string fifo = dir + "/fifo.bin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ErrorOr<Dataset> ff = Dataset::open(fifo, "u16");
  ASSERT_FALSE(ff);
  EXPECT_NE(ff.error().message.find(fifo + ": is not a regular file"),
            std::string::npos)
      << ff.error().message;
}

TEST_F(DatasetTest, MapsOnceMovesAndUnmaps) {
  // A raw file of i64 and f32 and f64 types besides u16 opens as raw too.
  std::string p = put("map.bin", le<int64_t>({4, 5, 6}));
  EXPECT_EQ(mappingsOf(p), 0);
  {
    ErrorOr<Dataset> d = Dataset::open(p, "i64");
    ASSERT_TRUE(d);
    EXPECT_EQ(mappingsOf(p), 1);
    Dataset moved = std::move(*d);
    Dataset again = std::move(moved);
    EXPECT_EQ(again.shape(), std::vector<int64_t>{3});
    HostTensor b = batchOf(StorageType::I64, {2, 2});
    ErrorOr<std::vector<int64_t>> f =
        again.fill(b, 0, 3, SampleOrder::Sequential, 0, 0);
    ASSERT_TRUE(f);
    // W = 2, stride 1: windows at 0 and 1.
    EXPECT_EQ(elements<int64_t>(b), (std::vector<int64_t>{4, 5, 5, 6}));
    EXPECT_EQ(mappingsOf(p), 1);
  }
  EXPECT_EQ(mappingsOf(p), 0);
  // A file refused after mapping is unmapped too.
  std::string bad = put("bad.npy", npyBytes(dict("<u2", "(9,)"), Bytes(2)));
  EXPECT_FALSE(Dataset::open(bad));
  EXPECT_EQ(mappingsOf(bad), 0);
}

} // namespace
