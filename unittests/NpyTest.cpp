// numpy .npy reading and writing (ein/Runtime/Npy.h) and host tensors.
// Fixture files are written byte by byte at test time: no Python needed.
// test/Runtime/npy_roundtrip.py writes the same variants with numpy itself.
#include "ein/Runtime/Npy.h"
#include "ein/Runtime/FloatConvert.h"
#include "ein/Runtime/HostTensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
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

/// A .npy file: magic, version, header length, `header` (padded with spaces
/// to a multiple of 64 and ended with '\n' when `pad`), then `data`.
Bytes npyBytes(unsigned major, const std::string &header, const Bytes &data,
               bool pad = true) {
  std::string h = header;
  size_t pre = major == 1 ? 10 : 12;
  if (pad) {
    while ((pre + h.size() + 1) % 64 != 0)
      h += ' ';
    h += '\n';
  }
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < pre - 8; ++i)
    b.push_back(static_cast<uint8_t>(h.size() >> (8 * i)));
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

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i);
  return v;
}

class NpyTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/ein-npy-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir = buf.data();
  }
  void TearDown() override {
    for (const std::string &name : listDir())
      ::unlink((dir + "/" + name).c_str());
    ::rmdir(dir.c_str());
  }

  std::string path(const std::string &name) const { return dir + "/" + name; }

  std::string put(const std::string &name, const Bytes &bytes) {
    std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  Bytes slurp(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(in)),
                 std::istreambuf_iterator<char>());
  }

  std::vector<std::string> listDir() const {
    std::vector<std::string> names;
    if (DIR *d = ::opendir(dir.c_str())) {
      while (dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..")
          names.push_back(n);
      }
      ::closedir(d);
    }
    return names;
  }

  /// Reads `bytes` (written to `name`) expecting an error that names the file
  /// and contains `needle`, of kind Usage (einc run exits 2 for it).
  void expectError(const std::string &name, const Bytes &bytes,
                   const std::string &needle,
                   std::optional<StorageType> want = std::nullopt) {
    std::string p = put(name, bytes);
    ErrorOr<HostTensor> r = readNpy(p, want);
    ASSERT_FALSE(r) << name << " read as " << r->describe();
    EXPECT_EQ(r.error().kind, ErrorKind::Usage);
    EXPECT_NE(r.error().message.find(p + ": "), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find(needle), std::string::npos)
        << "error for " << name << " lacks '" << needle
        << "': " << r.error().message;
  }

  std::string dir;
};

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

TEST(NpyHostTensorTest, SizesAndStrides) {
  ErrorOr<HostTensor> t = HostTensor::create(StorageType::F32, {2, 3, 4});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->numElements(), 24);
  EXPECT_EQ(t->byteSize(), 96u);
  EXPECT_EQ(t->data.size(), 96u);
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t->byteStrides(), (std::vector<int64_t>{48, 16, 4}));
  EXPECT_EQ(t->describe(), "f32[2, 3, 4]");
  EXPECT_TRUE(t->isConsistent());

  ErrorOr<HostTensor> s = HostTensor::create(StorageType::Bool, {});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->numElements(), 1);
  EXPECT_EQ(s->byteSize(), 1u);
  EXPECT_EQ(s->describe(), "bool[]");

  ErrorOr<HostTensor> z = HostTensor::create(StorageType::F64, {3, 0, 5});
  ASSERT_TRUE(z);
  EXPECT_EQ(z->numElements(), 0);
  EXPECT_EQ(z->byteSize(), 0u);
  EXPECT_EQ(z->strides(), (std::vector<int64_t>{5, 5, 1}));
}

TEST(NpyHostTensorTest, CheckedElementCounts) {
  const int64_t big = int64_t(1) << 40;
  EXPECT_EQ(checkedNumElements({}), 1);
  EXPECT_EQ(checkedNumElements({big, 1 << 20}), big << 20);
  EXPECT_EQ(checkedNumElements({big, 1 << 23}), std::nullopt);
  EXPECT_EQ(checkedNumElements({big, 1 << 20}, 8), std::nullopt);
  EXPECT_EQ(checkedNumElements({big, 1 << 20}, 4), big << 20);
  EXPECT_EQ(checkedNumElements({-1, 3}), std::nullopt);
  // As in numpy, the nonzero dims must not overflow even next to a zero.
  EXPECT_EQ(checkedNumElements({0, big, big}), std::nullopt);
  EXPECT_EQ(checkedNumElements({0, big}), 0);
  ErrorOr<HostTensor> huge = HostTensor::create(StorageType::F32, {big, big});
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().kind, ErrorKind::Usage);
  EXPECT_FALSE(HostTensor::create(StorageType::F32, {2, -3}));
  EXPECT_EQ(shapeTupleStr({}), "()");
  EXPECT_EQ(shapeTupleStr({5}), "(5,)");
  EXPECT_EQ(shapeTupleStr({2, 3}), "(2, 3)");
}

TEST(NpyHostTensorTest, LayoutStrides) {
  // numpy: np.zeros((2, 3, 4), order='F').strides == (4, 8, 24) for f4; in
  // elements 1, 2, 6. A zero dim counts as 1, as in C order.
  EXPECT_EQ(fortranStrides({2, 3, 4}), (std::vector<int64_t>{1, 2, 6}));
  EXPECT_EQ(cOrderStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(fortranStrides({3, 0, 5}), (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(fortranStrides({}), (std::vector<int64_t>{}));

  // A hand-made Fortran tensor: [[0 1 2] [3 4 5]] stored 0 3 1 4 2 5.
  HostTensor t = *HostTensor::create(StorageType::F32, {2, 3});
  std::vector<float> stored = {0, 3, 1, 4, 2, 5};
  std::memcpy(t.data.data(), stored.data(), 24);
  t.layoutStrides = {1, 2};
  EXPECT_TRUE(t.isConsistent());
  EXPECT_FALSE(t.isCOrder());
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t.byteStrides(), (std::vector<int64_t>{4, 8}));
  // x.flat[k] of the C-order view is element k; its storage offset is
  // i + 2j for (i, j) = divmod(k, 3).
  const int64_t offsets[] = {0, 2, 4, 1, 3, 5};
  for (int64_t k = 0; k < 6; ++k) {
    EXPECT_EQ(t.offsetOf(k), offsets[k]) << k;
    EXPECT_EQ(t.indexAt(offsets[k]), k) << k;
    EXPECT_EQ(elementAsDouble(t, k), static_cast<double>(k)) << k;
  }
  HostTensor c = t.toCOrder();
  EXPECT_TRUE(c.layoutStrides.empty());
  EXPECT_TRUE(c.isCOrder());
  EXPECT_EQ(c.shape, t.shape);
  EXPECT_EQ(elements<float>(c), iota(6));
  EXPECT_EQ(elements<float>(t), stored) << "toCOrder changed its source";

  // A permutation that is neither C nor Fortran: shape (2, 3, 4) stored as
  // its transpose (1, 0, 2), i.e. j major, then i, then k: strides 4, 8, 1.
  HostTensor p = *HostTensor::create(StorageType::I32, {2, 3, 4});
  p.layoutStrides = {4, 8, 1};
  for (int32_t i = 0; i < 2; ++i)
    for (int32_t j = 0; j < 3; ++j)
      for (int32_t k = 0; k < 4; ++k)
        p.dataAs<int32_t>()[4 * i + 8 * j + k] = 12 * i + 4 * j + k;
  EXPECT_TRUE(p.isConsistent());
  EXPECT_FALSE(p.isCOrder());
  std::vector<int32_t> want(24);
  for (int32_t k = 0; k < 24; ++k) {
    want[k] = k;
    EXPECT_EQ(p.indexAt(p.offsetOf(k)), k);
  }
  EXPECT_EQ(elements<int32_t>(p.toCOrder()), want);

  // Layouts that are not dense, or not one stride per dim, are inconsistent.
  const std::vector<std::vector<int64_t>> bad = {
      {1},     // one stride for two dims
      {1, 1},  // both dims at stride 1: elements overlap
      {1, 3},  // a gap: element (1, 2) would be at offset 7 of 6
      {2, 1},  // overlap: (1, 0) and (0, 2) at one offset
      {-1, 2}, // negative
      {3, 2}}; // C order would be {3, 1}
  for (const std::vector<int64_t> &strides : bad) {
    HostTensor b = t;
    b.layoutStrides = strides;
    EXPECT_FALSE(b.isConsistent()) << shapeTupleStr(strides);
  }
  // C strides spelled out are C order.
  HostTensor spelled = t.toCOrder();
  spelled.layoutStrides = {3, 1};
  EXPECT_TRUE(spelled.isConsistent());
  EXPECT_TRUE(spelled.isCOrder());

  // Dims of size 1 take any non-negative stride; only the other dims decide
  // the order (numpy: a (1, 3) array is both C- and F-contiguous).
  HostTensor row = *HostTensor::create(StorageType::F32, {1, 3});
  row.layoutStrides = fortranStrides(row.shape);
  EXPECT_EQ(row.layoutStrides, (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(row.isConsistent());
  EXPECT_TRUE(row.isCOrder());
  row.layoutStrides = {1000, 1};
  EXPECT_TRUE(row.isConsistent());
  EXPECT_TRUE(row.isCOrder());
  // Empty tensors hold no element to order.
  HostTensor empty = *HostTensor::create(StorageType::F32, {3, 0});
  empty.layoutStrides = fortranStrides(empty.shape);
  EXPECT_TRUE(empty.isConsistent());
  EXPECT_TRUE(empty.isCOrder());
  EXPECT_TRUE(empty.toCOrder().data.empty());
}

TEST(NpyHostTensorTest, ConversionsKeepTheLayout) {
  // f64 Fortran (2, 3) holding [[0 1 2] [3 4 5]] / 4.
  HostTensor f64 = *HostTensor::create(StorageType::F64, {2, 3});
  f64.layoutStrides = {1, 2};
  std::vector<double> stored = {0, 0.75, 0.25, 1, 0.5, 1.25};
  std::memcpy(f64.data.data(), stored.data(), 48);
  ErrorOr<HostTensor> f32 = convertTensor(f64, StorageType::F32);
  ASSERT_TRUE(f32) << f32.error().message;
  EXPECT_EQ(f32->layoutStrides, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(elements<float>(*f32),
            (std::vector<float>{0, 0.75f, 0.25f, 1, 0.5f, 1.25f}));
  ErrorOr<HostTensor> bf = convertTensor(*f32, StorageType::BF16);
  ASSERT_TRUE(bf);
  EXPECT_EQ(bf->layoutStrides, (std::vector<int64_t>{1, 2}));
  // bf16 bits of 0, 0.75, 0.25, 1, 0.5, 1.25.
  EXPECT_EQ(
      elements<uint16_t>(*bf),
      (std::vector<uint16_t>{0x0000, 0x3F40, 0x3E80, 0x3F80, 0x3F00, 0x3FA0}));

  // The error names the first bad element in C order, by its C index:
  // here C elements 2 (0, 2) and 3 (1, 0) are inexact; in storage order
  // (1, 0), at offset 1, comes first.
  stored = {0, 0.2, 1, 4, 0.1, 5};
  std::memcpy(f64.data.data(), stored.data(), 48);
  ErrorOr<HostTensor> r = convertTensor(f64, StorageType::F32);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("element 2 (0.10000000000000001) is not "
                                   "representable in f32"),
            std::string::npos)
      << r.error().message;

  HostTensor i64 = *HostTensor::create(StorageType::I64, {2, 3});
  i64.layoutStrides = {1, 2};
  std::vector<int64_t> iv = {0, int64_t(1) << 40, 1, 4, int64_t(1) << 33, 5};
  std::memcpy(i64.data.data(), iv.data(), 48);
  ErrorOr<HostTensor> i32 = convertTensor(i64, StorageType::I32);
  ASSERT_FALSE(i32);
  EXPECT_NE(i32.error().message.find("element 2 (8589934592) is out of the "
                                     "i32 range"),
            std::string::npos)
      << i32.error().message;
  iv = {0, 3, 1, 4, 2, -5};
  std::memcpy(i64.data.data(), iv.data(), 48);
  i32 = convertTensor(i64, StorageType::I32);
  ASSERT_TRUE(i32);
  EXPECT_EQ(i32->layoutStrides, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(elements<int32_t>(*i32), (std::vector<int32_t>{0, 3, 1, 4, 2, -5}));

  // A layout that is not dense is refused, not read out of bounds.
  HostTensor gap = *f32;
  gap.layoutStrides = {1, 3};
  EXPECT_FALSE(convertTensor(gap, StorageType::F64));
}

TEST(NpyHostTensorTest, StorageTypes) {
  EXPECT_EQ(storageBytes(StorageType::BF16), 2u);
  EXPECT_EQ(storageBytes(StorageType::F8E5M2), 1u);
  EXPECT_EQ(storageBytes(StorageType::Bool), 1u);
  EXPECT_EQ(parseStorageType("f8e4m3"), StorageType::F8E4M3);
  EXPECT_EQ(parseStorageType("bool"), StorageType::Bool);
  EXPECT_EQ(parseStorageType("f128"), std::nullopt);
  for (DType d :
       {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
        DType::F8E5M2, DType::I64, DType::I32, DType::Bool}) {
    EXPECT_EQ(toDType(toStorage(d)), d);
    EXPECT_EQ(storageBytes(toStorage(d)), dtypeBytes(d));
    EXPECT_STREQ(storageName(toStorage(d)), dtypeName(d));
  }
}

TEST(NpyHostTensorTest, Conversions) {
  HostTensor f32 = *HostTensor::create(StorageType::F32, {3});
  std::vector<float> v = {1.0f, 1.0f + std::ldexp(1.0f, -8), 500.0f};
  std::memcpy(f32.data.data(), v.data(), 12);

  ErrorOr<HostTensor> bf = convertTensor(f32, StorageType::BF16);
  ASSERT_TRUE(bf);
  EXPECT_EQ(elements<uint16_t>(*bf),
            (std::vector<uint16_t>{0x3F80, 0x3F80, 0x43FA}));
  ErrorOr<HostTensor> e4 = convertTensor(f32, StorageType::F8E4M3);
  ASSERT_TRUE(e4);
  EXPECT_EQ(elements<uint8_t>(*e4), (std::vector<uint8_t>{0x38, 0x38, 0x7F}));

  // Exact widenings.
  ErrorOr<HostTensor> back = convertTensor(*bf, StorageType::F64);
  ASSERT_TRUE(back);
  EXPECT_EQ(elements<double>(*back), (std::vector<double>{1, 1, 500}));
  EXPECT_TRUE(convertTensor(*e4, StorageType::F16));
  EXPECT_TRUE(convertTensor(*e4, StorageType::BF16));

  // Not allowed.
  for (StorageType to : {StorageType::I32, StorageType::Bool}) {
    ErrorOr<HostTensor> r = convertTensor(f32, to);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("cannot convert f32"), std::string::npos);
  }
  EXPECT_FALSE(convertTensor(*bf, StorageType::F16));   // bf16 -> f16
  EXPECT_FALSE(convertTensor(*back, StorageType::F16)); // f64 -> f16
  EXPECT_FALSE(convertTensor(*e4, StorageType::F8E5M2));

  // Value-checked narrowing.
  HostTensor i64 = *HostTensor::create(StorageType::I64, {2});
  std::vector<int64_t> iv = {-5, int64_t(1) << 31};
  std::memcpy(i64.data.data(), iv.data(), 16);
  ErrorOr<HostTensor> i32 = convertTensor(i64, StorageType::I32);
  ASSERT_FALSE(i32);
  EXPECT_NE(i32.error().message.find("element 1 (2147483648)"),
            std::string::npos)
      << i32.error().message;
  iv[1] = -(int64_t(1) << 31);
  std::memcpy(i64.data.data(), iv.data(), 16);
  i32 = convertTensor(i64, StorageType::I32);
  ASSERT_TRUE(i32);
  EXPECT_EQ(elements<int32_t>(*i32),
            (std::vector<int32_t>{-5, std::numeric_limits<int32_t>::min()}));

  HostTensor bad = f32;
  bad.data.pop_back();
  EXPECT_FALSE(convertTensor(bad, StorageType::F64));
}

//===----------------------------------------------------------------------===//
// Reading: valid files
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, ReadsV1F32) {
  std::string p = put("a.npy", npyBytes(1, dict("<f4", "(2, 3)"), le(iota(6))));
  ErrorOr<HostTensor> t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::F32);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements<float>(*t), iota(6));
  // Asking for the natural type is the same.
  ErrorOr<HostTensor> u = readNpy(p, StorageType::F32);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->data, t->data);
}

TEST_F(NpyTest, ReadsV2AndV3Headers) {
  for (unsigned major : {2u, 3u}) {
    std::string p = put("v" + std::to_string(major) + ".npy",
                        npyBytes(major, dict("<i8", "(4,)"),
                                 le(std::vector<int64_t>{1, -2, 3, -4})));
    ErrorOr<HostTensor> t = readNpy(p);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->type, StorageType::I64);
    EXPECT_EQ(elements<int64_t>(*t), (std::vector<int64_t>{1, -2, 3, -4}));
  }
  // Version 3.0: a utf-8 header (only ASCII matters to us).
  std::string p = put(
      "v3u.npy", npyBytes(3, dict("<i4", "(1,)"), le(std::vector<int32_t>{7})));
  ErrorOr<HostTensor> t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(elements<int32_t>(*t), (std::vector<int32_t>{7}));
}

TEST_F(NpyTest, HeaderSpellings) {
  const Bytes data = le(iota(6));
  const char *headers[] = {
      "{'descr':'<f4','fortran_order':False,'shape':(2,3)}",
      "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
      "{'descr': '<f4',\n 'fortran_order': False,\n 'shape': (2L, 3L),\n}",
      "\t{'descr': 'f4', 'fortran_order': False, 'shape': (2, 3)}  ",
      "{'descr': '=f4', 'fortran_order': False, 'shape': (+2, 3)}",
  };
  int i = 0;
  for (const char *h : headers) {
    std::string p =
        put("h" + std::to_string(i++) + ".npy", npyBytes(1, h, data));
    ErrorOr<HostTensor> t = readNpy(p);
    ASSERT_TRUE(t) << h << ": " << t.error().message;
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3})) << h;
    EXPECT_EQ(elements<float>(*t), iota(6)) << h;
  }
  // Unpadded header without the final newline.
  std::string p = put("nopad.npy", npyBytes(1, dict("<f4", "(2, 3)"), data,
                                            /*pad=*/false));
  EXPECT_TRUE(readNpy(p));
}

TEST_F(NpyTest, FortranOrderIsKeptWithFortranStrides) {
  // A 2x3 matrix [[0 1 2] [3 4 5]] stored column-major: 0 3 1 4 2 5 (what
  // np.save writes for np.asfortranarray(np.arange(6.).reshape(2, 3))). It
  // is read as it is, not transposed, with Fortran strides.
  const std::vector<float> stored = {0, 3, 1, 4, 2, 5};
  std::string p =
      put("f.npy", npyBytes(1, dict("<f4", "(2, 3)", true), le(stored)));
  ErrorOr<HostTensor> t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements<float>(*t), stored);
  EXPECT_EQ(t->layoutStrides, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t->byteStrides(), (std::vector<int64_t>{4, 8}));
  EXPECT_FALSE(t->isCOrder());
  EXPECT_TRUE(t->isConsistent());
  EXPECT_EQ(elements<float>(t->toCOrder()), iota(6));
  for (int64_t k = 0; k < 6; ++k)
    EXPECT_EQ(elementAsDouble(*t, k), static_cast<double>(k));
  // Asking for the natural type is the same.
  ErrorOr<HostTensor> same = readNpy(p, StorageType::F32);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->data, t->data);
  EXPECT_EQ(same->layoutStrides, t->layoutStrides);

  // 3-d: element (i, j, k) of shape (2, 3, 4) has C index 12i + 4j + k and
  // Fortran index i + 2j + 6k.
  std::vector<int32_t> fdata(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        fdata[i + 2 * j + 6 * k] = 12 * i + 4 * j + k;
  p = put("f3.npy", npyBytes(1, dict("<i4", "(2, 3, 4)", true), le(fdata)));
  t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::I32);
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 2, 6}));
  EXPECT_EQ(elements<int32_t>(*t), fdata);
  std::vector<int32_t> want32(24);
  for (int i = 0; i < 24; ++i)
    want32[i] = i;
  EXPECT_EQ(elements<int32_t>(t->toCOrder()), want32);

  // Converted on reading (i32 -> i64): element by element, the layout kept.
  t = readNpy(p, StorageType::I64);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::I64);
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 2, 6}));
  EXPECT_EQ(elements<int64_t>(*t),
            std::vector<int64_t>(fdata.begin(), fdata.end()));
  std::vector<int64_t> want(24);
  for (int i = 0; i < 24; ++i)
    want[i] = i;
  EXPECT_EQ(elements<int64_t>(t->toCOrder()), want);

  // f64 -> f32, value-checked: the first inexact element in C order is
  // named by its C index (2: row 0, column 2), though (1, 0), at storage
  // offset 1, is met first.
  p = put("fd.npy", npyBytes(1, dict("<f8", "(2, 3)", true),
                             le(std::vector<double>{0, 0.2, 1, 4, 0.1, 5})));
  expectError("fd.npy", slurp(p), "element 2 (0.10000000000000001)",
              StorageType::F32);
  p = put("fd-exact.npy",
          npyBytes(1, dict("<f8", "(2, 3)", true),
                   le(std::vector<double>{0, 3, 1, 4, 2, 5.5})));
  t = readNpy(p, StorageType::F32);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(elements<float>(*t), (std::vector<float>{0, 3, 1, 4, 2, 5.5f}));

  // f32 -> bf16, rounded, the layout kept; raw bf16 bits (<u2) likewise.
  p = put("fb.npy", npyBytes(1, dict("<f4", "(2, 2)", true),
                             le(std::vector<float>{
                                 1.0f, 1.0f + std::ldexp(1.0f, -8),
                                 1.0f + 3 * std::ldexp(1.0f, -8), -61440.0f})));
  t = readNpy(p, StorageType::BF16);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(elements<uint16_t>(*t),
            (std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F82, 0xC770}));
  p = put("fu.npy", npyBytes(1, dict("<u2", "(2, 2)", true),
                             le(std::vector<uint16_t>{1, 2, 3, 4})));
  t = readNpy(p, StorageType::BF16);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(elements<uint16_t>(*t), (std::vector<uint16_t>{1, 2, 3, 4}));
  EXPECT_EQ(elements<uint16_t>(t->toCOrder()),
            (std::vector<uint16_t>{1, 3, 2, 4}));

  // A bad bool byte is named by its C index too: (0, 1) (C index 1, value
  // 7) is first in C order, (1, 0) (storage offset 1, value 9) in storage.
  p = put("fbool.npy",
          npyBytes(1, dict("|b1", "(2, 2)", true), Bytes{0, 9, 7, 1}));
  expectError("fbool.npy", slurp(p), "bool element 1 has byte value 7");
}

TEST_F(NpyTest, FortranOrderOfRankBelowTwoOrEmpty) {
  // 1-d and 0-d Fortran arrays are C ones: no layout.
  std::string p =
      put("f1.npy", npyBytes(1, dict("<f4", "(3,)", true), le(iota(3))));
  ErrorOr<HostTensor> t = readNpy(p);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->layoutStrides.empty());
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1}));
  EXPECT_EQ(elements<float>(*t), iota(3));
  p = put("f0d.npy",
          npyBytes(1, dict("<f8", "()", true), le(std::vector<double>{2.5})));
  t = readNpy(p, StorageType::F32);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->shape.empty());
  EXPECT_TRUE(t->layoutStrides.empty());
  EXPECT_EQ(elements<float>(*t), (std::vector<float>{2.5f}));

  // Zero-size: Fortran strides (numpy: np.zeros((3, 0), 'f4', order='F')
  // .strides == (4, 12)), no data, C order as far as anything can tell.
  p = put("fz.npy", npyBytes(1, dict("<f4", "(3, 0)", true), {}));
  t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(t->data.empty());
  EXPECT_TRUE(t->isConsistent());
  EXPECT_TRUE(t->isCOrder());
  t = readNpy(p, StorageType::F64);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(t->data.empty());

  // A (1, 3) Fortran array: strides (1, 1), and its data is in C order.
  p = put("f13.npy", npyBytes(1, dict("<f4", "(1, 3)", true), le(iota(3))));
  t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->strides(), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(t->isCOrder());
  EXPECT_EQ(elements<float>(t->toCOrder()), iota(3));
}

TEST_F(NpyTest, ZeroDimAndZeroSize) {
  std::string p = put(
      "s.npy", npyBytes(1, dict("<f8", "()"), le(std::vector<double>{2.5})));
  ErrorOr<HostTensor> t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->shape.empty());
  EXPECT_EQ(t->numElements(), 1);
  EXPECT_EQ(elements<double>(*t), (std::vector<double>{2.5}));

  for (const char *shape : {"(0,)", "(2, 0, 3)", "(0, 1000000000000)"}) {
    p = put("z.npy", npyBytes(1, dict("<f4", shape), {}));
    t = readNpy(p);
    ASSERT_TRUE(t) << shape << ": " << t.error().message;
    EXPECT_EQ(t->numElements(), 0);
    EXPECT_TRUE(t->data.empty());
  }
}

TEST_F(NpyTest, BoolF16F64I32) {
  std::string p =
      put("b.npy", npyBytes(1, dict("|b1", "(4,)"), Bytes{1, 0, 0, 1}));
  ErrorOr<HostTensor> t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::Bool);
  EXPECT_EQ(elements<uint8_t>(*t), (Bytes{1, 0, 0, 1}));
  // numpy's other spelling of bool.
  p = put("b2.npy", npyBytes(1, dict("|?", "(1,)"), Bytes{1}));
  EXPECT_TRUE(readNpy(p));
  // Only 0/1 are bools.
  expectError("b3.npy", npyBytes(1, dict("|b1", "(2,)"), Bytes{1, 2}),
              "bool element 1 has byte value 2");
  expectError("b4.npy", npyBytes(1, dict("|b1", "(1,)"), Bytes{1}),
              "bool data cannot be read as f32", StorageType::F32);

  std::vector<uint16_t> halves = {0x3C00, 0xC000, 0x7BFF, 0x0001};
  p = put("h.npy", npyBytes(1, dict("<f2", "(2, 2)"), le(halves)));
  t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::F16);
  EXPECT_EQ(elements<uint16_t>(*t), halves);
  t = readNpy(p, StorageType::F32);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(elements<float>(*t),
            (std::vector<float>{1, -2, 65504, std::ldexp(1.0f, -24)}));

  p = put("d.npy", npyBytes(1, dict("<f8", "(2,)"),
                            le(std::vector<double>{0.5, -1e300})));
  t = readNpy(p);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->type, StorageType::F64);
  EXPECT_EQ(elements<double>(*t), (std::vector<double>{0.5, -1e300}));

  p = put("i.npy", npyBytes(1, dict("<i4", "(3,)"),
                            le(std::vector<int32_t>{-1, 0, 1 << 30})));
  t = readNpy(p);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->type, StorageType::I32);
  EXPECT_EQ(elements<int32_t>(*t), (std::vector<int32_t>{-1, 0, 1 << 30}));
}

TEST_F(NpyTest, RequestedConversions) {
  // f32 file -> bf16 / f16 / fp8, round to nearest even.
  std::vector<float> v = {1.0f,
                          1.0f + std::ldexp(1.0f, -8),
                          1.0f + 3 * std::ldexp(1.0f, -8),
                          464.0f,
                          465.0f,
                          -61440.0f};
  std::string p = put("f.npy", npyBytes(1, dict("<f4", "(6,)"), le(v)));
  ErrorOr<HostTensor> t = readNpy(p, StorageType::BF16);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::BF16);
  EXPECT_EQ(
      elements<uint16_t>(*t),
      (std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F82, 0x43E8, 0x43E8, 0xC770}));
  t = readNpy(p, StorageType::F16);
  ASSERT_TRUE(t);
  EXPECT_EQ(
      elements<uint16_t>(*t),
      (std::vector<uint16_t>{0x3C00, 0x3C04, 0x3C0C, 0x5F40, 0x5F44, 0xFB80}));
  t = readNpy(p, StorageType::F8E4M3);
  ASSERT_TRUE(t);
  EXPECT_EQ(elements<uint8_t>(*t),
            (std::vector<uint8_t>{0x38, 0x38, 0x38, 0x7E, 0x7F, 0xFF}));
  t = readNpy(p, StorageType::F8E5M2);
  ASSERT_TRUE(t);
  EXPECT_EQ(elements<uint8_t>(*t),
            (std::vector<uint8_t>{0x3C, 0x3C, 0x3C, 0x5F, 0x5F, 0xFC}));
  t = readNpy(p, StorageType::F64);
  ASSERT_TRUE(t);
  EXPECT_EQ(elements<double>(*t)[3], 464.0);
  expectError("f2.npy", npyBytes(1, dict("<f4", "(1,)"), le(iota(1))),
              "cannot convert f32 to i32", StorageType::I32);

  // u2 -> bf16 raw bits, u1 -> fp8 raw bits.
  std::vector<uint16_t> raw16 = {0x3F80, 0x7FC1, 0xFF80};
  p = put("u2.npy", npyBytes(1, dict("<u2", "(3,)"), le(raw16)));
  t = readNpy(p, StorageType::BF16);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::BF16);
  EXPECT_EQ(elements<uint16_t>(*t), raw16);
  expectError("u2b.npy", npyBytes(1, dict("<u2", "(3,)"), le(raw16)),
              "no element type was requested");
  expectError("u2c.npy", npyBytes(1, dict("<u2", "(3,)"), le(raw16)),
              "raw bf16 bit patterns, but f16 was requested", StorageType::F16);
  Bytes raw8 = {0x38, 0x7F, 0x80};
  for (StorageType want : {StorageType::F8E4M3, StorageType::F8E5M2}) {
    p = put("u1.npy", npyBytes(1, dict("|u1", "(3,)"), raw8));
    t = readNpy(p, want);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->type, want);
    EXPECT_EQ(t->data, raw8);
  }
  expectError("u1b.npy", npyBytes(1, dict("|u1", "(3,)"), raw8),
              "raw f8e4m3 / f8e5m2 bit patterns, but bf16 was requested",
              StorageType::BF16);

  // f64 -> f32 only when exact; i64 -> i32 only in range.
  p = put("d.npy", npyBytes(1, dict("<f8", "(3,)"),
                            le(std::vector<double>{0.5, NAN, -INFINITY})));
  t = readNpy(p, StorageType::F32);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(elements<float>(*t)[0], 0.5f);
  EXPECT_TRUE(std::isnan(elements<float>(*t)[1]));
  expectError(
      "d2.npy",
      npyBytes(1, dict("<f8", "(2,)"), le(std::vector<double>{1.0, 0.1})),
      "element 1 (0.10000000000000001) is not representable in f32",
      StorageType::F32);
  // The refusal says how to fix the file.
  expectError(
      "d4.npy",
      npyBytes(1, dict("<f8", "(2,)"), le(std::vector<double>{1.0, 0.1})),
      "round every element to the nearest f32, save the array as float32 (in "
      "numpy: np.save(path, x.astype(np.float32)))",
      StorageType::F32);
  expectError("d3.npy",
              npyBytes(1, dict("<f8", "(1,)"), le(std::vector<double>{1.0})),
              "cannot convert f64 to bf16", StorageType::BF16);
  p = put("l.npy",
          npyBytes(1, dict("<i8", "(2,)"), le(std::vector<int64_t>{3, -4})));
  t = readNpy(p, StorageType::I32);
  ASSERT_TRUE(t);
  EXPECT_EQ(elements<int32_t>(*t), (std::vector<int32_t>{3, -4}));
  // i8 ("|i1", signed): read as itself, widened exactly, narrowed in range.
  Bytes rawI8 = {0x7F, 0x80, 0xFF};
  p = put("b.npy", npyBytes(1, dict("|i1", "(3,)"), rawI8));
  t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->type, StorageType::I8);
  EXPECT_EQ(t->data, rawI8);
  t = readNpy(p, StorageType::I64);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(elements<int64_t>(*t), (std::vector<int64_t>{127, -128, -1}));
  p = put("i.npy", npyBytes(1, dict("<i4", "(2,)"),
                            le(std::vector<int32_t>{-128, 127})));
  t = readNpy(p, StorageType::I8);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->data, (Bytes{0x80, 0x7F}));
  expectError(
      "i2.npy",
      npyBytes(1, dict("<i4", "(2,)"), le(std::vector<int32_t>{5, 128})),
      "cannot convert i32 to i8: element 1 (128) is out of the i8 range",
      StorageType::I8);
  expectError("b2.npy", npyBytes(1, dict("|i1", "(1,)"), Bytes{1}),
              "cannot convert i8 to f32", StorageType::F32);
}

//===----------------------------------------------------------------------===//
// Reading: errors
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, MissingFileAndDirectory) {
  ErrorOr<HostTensor> r = readNpy(path("nope.npy"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_NE(r.error().message.find("nope.npy: cannot open"), std::string::npos)
      << r.error().message;
  r = readNpy(dir);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is a directory"), std::string::npos)
      << r.error().message;
}

TEST_F(NpyTest, BadPreamble) {
  expectError("empty.npy", {}, "empty file, not a .npy file");
  expectError("text.npy", Bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r'},
              "bad magic");
  expectError("short.npy", Bytes{0x93, 'N', 'U', 'M'}, "truncated");
  expectError("nover.npy", Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1},
              "truncated .npy file (no format version)");
  expectError("nolen.npy", Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x10},
              "no header length");
  Bytes v4 = npyBytes(1, dict("<f4", "(1,)"), le(iota(1)));
  v4[6] = 4;
  expectError("v4.npy", v4, "unsupported .npy format version 4.0");
  Bytes v11 = npyBytes(1, dict("<f4", "(1,)"), le(iota(1)));
  v11[7] = 1;
  expectError("v11.npy", v11, "version 1.1");
}

TEST_F(NpyTest, BadHeaderLength) {
  // Header length field larger than the file.
  Bytes b = npyBytes(1, dict("<f4", "(1,)"), {});
  b.resize(b.size() - 20);
  expectError("trunc_header.npy", b, "header length 118 exceeds the 98 bytes");
  // Absurd v2 header length.
  Bytes big = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xFF, 0xFF, 0xFF, 0x7F};
  expectError("huge_header.npy", big, "is too long");
  // Zero and too short for the dict.
  Bytes zero = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  expectError("zero_header.npy", zero, "header is empty");
  Bytes tiny = npyBytes(1, dict("<f4", "(1,)"), le(iota(1)));
  tiny[8] = 20; // header now stops inside the dict
  tiny[9] = 0;
  expectError("tiny_header.npy", tiny, "malformed header");
}

TEST_F(NpyTest, MalformedHeaders) {
  struct Case {
    const char *header;
    const char *needle;
  } cases[] = {
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "no 'shape' key"},
      {"{'fortran_order': False, 'shape': (1,)}", "no 'descr' key"},
      {"{'descr': '<f4', 'shape': (1,)}", "no 'fortran_order' key"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (1,)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
       "unexpected key 'x'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",
       "'fortran_order' must be True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}",
       "'fortran_order' must be True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}",
       "'shape' must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}",
       "is an int, not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,, 2)}",
       "expected a non-negative integer dim"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
       "negative dim"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': "
       "(99999999999999999999,)}",
       "does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk",
       "unexpected text after the header dict"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}",
       "expected ',' or '}'"},
      {"{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}",
       "expected ':'"},
      {"{'descr': '<f4\\n', 'fortran_order': False, 'shape': (1,)}",
       "escape sequences"},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (1,)}",
       "expected a quoted key"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}",
       "structured dtypes"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (1,)}",
       "'descr' must be a string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected"},
  };
  int i = 0;
  for (const Case &c : cases)
    expectError("m" + std::to_string(i++) + ".npy",
                npyBytes(1, c.header, le(iota(1))), c.needle);
  // A NUL byte inside the header.
  std::string withNul = dict("<f4", "(1,)");
  withNul[3] = '\0';
  expectError("nul.npy", npyBytes(1, withNul, le(iota(1))), "NUL byte");
}

TEST_F(NpyTest, UnsupportedDescrs) {
  struct Case {
    const char *descr;
    const char *needle;
  } cases[] = {
      {">f4", "big-endian data ('>f4') is not supported"},
      {">i8", "big-endian"},
      {"<c8", "unsupported dtype '<c8' (complex)"},
      {"|O", "unsupported dtype '|O' (Python objects)"},
      {"O", "(Python objects)"},
      {"<U3", "unsupported dtype '<U3' (strings)"},
      {"|S5", "(strings)"},
      {"<M8[ns]", "(datetime)"},
      {"|V8", "(void/structured)"},
      {"<u4", "unsupported dtype '<u4'"},
      {"<i2", "unsupported dtype '<i2'"},
      {"<f16", "unsupported dtype '<f16'"},
      {"|f4", "no byte order for a 4-byte type"},
      {"", "empty 'descr'"},
  };
  int i = 0;
  for (const Case &c : cases)
    expectError("u" + std::to_string(i++) + ".npy",
                npyBytes(1, dict(c.descr, "(1,)"), Bytes(16, 0)), c.needle);
  // Single-byte types have no byte order: '>u1' and '>b1' are fine.
  std::string p = put("bu1.npy", npyBytes(1, dict(">u1", "(1,)"), Bytes{0x38}));
  EXPECT_TRUE(readNpy(p, StorageType::F8E4M3));
}

TEST_F(NpyTest, DataSizeMismatch) {
  expectError("short.npy", npyBytes(1, dict("<f4", "(2, 3)"), le(iota(5))),
              "truncated .npy file: shape (2, 3) of '<f4' needs 24 data "
              "bytes, file has 20");
  expectError("long.npy", npyBytes(1, dict("<f4", "(2, 3)"), le(iota(7))),
              "needs 24 data bytes, file has 28 (trailing bytes)");
  expectError("odd.npy", npyBytes(1, dict("<f8", "()"), Bytes(7, 0)),
              "needs 8 data bytes, file has 7");
  expectError("nodata.npy", npyBytes(1, dict("<i4", "(1,)"), {}), "file has 0");
}

TEST_F(NpyTest, AbsurdShapes) {
  expectError("huge.npy",
              npyBytes(1, dict("<f4", "(4294967296, 4294967296)"), {}),
              "shape (4294967296, 4294967296) is too large");
  // The count fits but the byte size does not.
  expectError("huge2.npy",
              npyBytes(1, dict("<f8", "(2305843009213693952,)"), {}),
              "is too large");
  // Fits in int64 but not in the file.
  expectError("huge3.npy",
              npyBytes(1, dict("<f4", "(1000000000000,)"), le(iota(2))),
              "needs 4000000000000 data bytes, file has 8");
  // A zero dim does not hide an overflowing product (numpy agrees).
  expectError("huge4.npy",
              npyBytes(1, dict("<f4", "(0, 4294967296, 4294967296)"), {}),
              "too large");
}

/// A pipe holding `bytes` (at most a pipe buffer) with its write end closed,
/// readable by path as /dev/fd/N: a stream with no size known up front.
class PipeInput {
public:
  explicit PipeInput(const Bytes &bytes, bool closeWriter = true) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    readFd = fds[0];
    writeFd = fds[1];
    EXPECT_EQ(::write(writeFd, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
    if (closeWriter) {
      ::close(writeFd);
      writeFd = -1;
    }
  }
  ~PipeInput() {
    ::close(readFd);
    if (writeFd >= 0)
      ::close(writeFd);
  }
  std::string path() const { return "/dev/fd/" + std::to_string(readFd); }

private:
  int readFd = -1, writeFd = -1;
};

TEST_F(NpyTest, StreamsAreReadOnlyAsFarAsTheHeaderSays) {
  // A complete file through a pipe reads as from a regular file.
  Bytes good = npyBytes(1, dict("<f4", "(2,)"), le(iota(2)));
  {
    PipeInput in(good);
    ErrorOr<HostTensor> r = readNpy(in.path());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(elements<float>(*r), iota(2));
  }
  // Truncated data, trailing data, a truncated header.
  {
    PipeInput in(npyBytes(1, dict("<f4", "(2, 3)"), le(iota(5))));
    ErrorOr<HostTensor> r = readNpy(in.path());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("needs 24 data bytes, file has 20"),
              std::string::npos)
        << r.error().message;
  }
  {
    PipeInput in(npyBytes(1, dict("<f4", "(2, 3)"), le(iota(7))));
    ErrorOr<HostTensor> r = readNpy(in.path());
    ASSERT_FALSE(r);
    EXPECT_NE(
        r.error().message.find("needs 24 data bytes, file has more than 24 "
                               "(trailing bytes)"),
        std::string::npos)
        << r.error().message;
  }
  {
    Bytes b = npyBytes(1, dict("<f4", "(1,)"), {});
    b.resize(b.size() - 20);
    PipeInput in(b);
    ErrorOr<HostTensor> r = readNpy(in.path());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("header length 118 exceeds the 98 bytes"),
              std::string::npos)
        << r.error().message;
  }
  // The writer stays open: had the reader waited for the end of the input,
  // this test would hang. Trailing data is detected with one extra byte.
  {
    Bytes more = good;
    more.push_back(0);
    PipeInput in(more, /*closeWriter=*/false);
    ErrorOr<HostTensor> r = readNpy(in.path());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("(trailing bytes)"), std::string::npos)
        << r.error().message;
  }
  // An absurd header length is refused from the length field alone.
  {
    PipeInput in(
        Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xFF, 0xFF, 0xFF, 0x7F},
        /*closeWriter=*/false);
    ErrorOr<HostTensor> r = readNpy(in.path());
    ASSERT_FALSE(r);
    EXPECT_NE(
        r.error().message.find("header length 2147483647 is too long (limit "
                               "1048576)"),
        std::string::npos)
        << r.error().message;
  }
}

TEST_F(NpyTest, DataBeyondMemoryIsRefusedBeforeReading) {
  // A stream cannot be sized up front: the declared size is compared with
  // the machine's memory before anything is allocated or read.
  Bytes huge = npyBytes(1, dict("<f4", "(1000000000000000,)"), {});
  {
    PipeInput in(huge, /*closeWriter=*/false);
    ErrorOr<HostTensor> r = readNpy(in.path());
    ASSERT_FALSE(r);
    EXPECT_NE(
        r.error().message.find("shape (1000000000000000,) of '<f4' needs "
                               "4000000000000000 data bytes, more than this "
                               "machine's memory allows"),
        std::string::npos)
        << r.error().message;
  }
  EXPECT_GT(hostMemoryBytes(), uint64_t(1) << 20);
  EXPECT_LT(hostMemoryBytes(), uint64_t(4000000000000000));

  // An explicit limit applies to regular files too, Fortran order included:
  // it is read as it is, with no second buffer.
  std::string p =
      put("lim.npy", npyBytes(1, dict("<f4", "(4, 4)"), le(iota(16))));
  EXPECT_TRUE(readNpy(p, std::nullopt, 64));
  ErrorOr<HostTensor> r = readNpy(p, std::nullopt, 63);
  ASSERT_FALSE(r);
  EXPECT_NE(
      r.error().message.find("needs 64 data bytes, more than this machine's "
                             "memory allows (63 bytes)"),
      std::string::npos)
      << r.error().message;
  p = put("limf.npy", npyBytes(1, dict("<f4", "(4, 4)", true), le(iota(16))));
  EXPECT_TRUE(readNpy(p, std::nullopt, 64));
  r = readNpy(p, std::nullopt, 63);
  ASSERT_FALSE(r);
  EXPECT_NE(
      r.error().message.find("needs 64 data bytes, more than this machine's "
                             "memory allows (63 bytes)"),
      std::string::npos)
      << r.error().message;
}

TEST_F(NpyTest, RegularFilesAreSizedBeforeTheDataIsRead) {
  // A regular file whose size does not match the header fails on its size,
  // before any data is allocated: the shape here is 4 TB.
  std::string p =
      put("big.npy", npyBytes(1, dict("<f4", "(1000000000000,)"), le(iota(2))));
  ErrorOr<HostTensor> r = readNpy(p, std::nullopt, ~uint64_t(0));
  ASSERT_FALSE(r);
  EXPECT_NE(
      r.error().message.find("needs 4000000000000 data bytes, file has 8"),
      std::string::npos)
      << r.error().message;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// Checks the header np.save would write: `dict` padded with spaces to
/// `headerLen` bytes and a final newline (values printed by numpy 2.4.6:
/// np.save(io.BytesIO(), a) for the arrays named in each test).
void expectNumpyHeader(const Bytes &b, const std::string &dictText,
                       unsigned headerLen, size_t fileLen) {
  ASSERT_GE(b.size(), 10u + headerLen);
  EXPECT_EQ(b.size(), fileLen);
  EXPECT_EQ(std::memcmp(b.data(), "\x93NUMPY\x01\x00", 8), 0);
  EXPECT_EQ(b[8] | (b[9] << 8), static_cast<int>(headerLen));
  std::string header(reinterpret_cast<const char *>(b.data() + 10), headerLen);
  std::string want = dictText;
  want.append(headerLen - 1 - want.size(), ' ');
  want += '\n';
  EXPECT_EQ(header, want);
}

TEST_F(NpyTest, WritesWhatNumpyWrites) {
  // np.arange(6, dtype='<f4').reshape(2, 3): 152 bytes, header length 118.
  HostTensor t = *HostTensor::create(StorageType::F32, {2, 3});
  std::vector<float> v = iota(6);
  std::memcpy(t.data.data(), v.data(), 24);
  std::string p = path("out.npy");
  ErrorOr<void> s = writeNpy(p, t);
  ASSERT_TRUE(s) << s.error().message;
  Bytes b = slurp(p);
  expectNumpyHeader(
      b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 118,
      152);
  EXPECT_EQ(std::memcmp(b.data() + 128, v.data(), 24), 0);

  // np.array(2.5): 136 bytes.
  HostTensor s0 = *HostTensor::create(StorageType::F64, {});
  double d = 2.5;
  std::memcpy(s0.data.data(), &d, 8);
  ErrorOr<Bytes> sb = serializeNpy(s0);
  ASSERT_TRUE(sb);
  expectNumpyHeader(
      *sb, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 118, 136);

  // np.zeros((0,), bool): 128 bytes.
  sb = serializeNpy(*HostTensor::create(StorageType::Bool, {0}));
  ASSERT_TRUE(sb);
  expectNumpyHeader(*sb,
                    "{'descr': '|b1', 'fortran_order': False, 'shape': (0,), }",
                    118, 128);

  // np.zeros((1,) * 64, '<i8'): 328 bytes, header length 310.
  sb = serializeNpy(
      *HostTensor::create(StorageType::I64, std::vector<int64_t>(64, 1)));
  ASSERT_TRUE(sb);
  std::string ones;
  for (int i = 0; i < 64; ++i)
    ones += i ? ", 1" : "1";
  expectNumpyHeader(*sb,
                    "{'descr': '<i8', 'fortran_order': False, 'shape': (" +
                        ones + "), }",
                    310, 328);

  // np.zeros((3, 0, 10**12), '<f2'): 128 bytes.
  sb = serializeNpy(
      *HostTensor::create(StorageType::F16, {3, 0, 1000000000000}));
  ASSERT_TRUE(sb);
  expectNumpyHeader(*sb,
                    "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 0, "
                    "1000000000000), }",
                    118, 128);
}

TEST_F(NpyTest, FortranTensorsAreWrittenInCOrder) {
  // Read Fortran, write: what np.save writes for the C-order array
  // np.arange(6, dtype='<f4').reshape(2, 3) (152 bytes, header length 118).
  std::string p =
      put("f.npy", npyBytes(1, dict("<f4", "(2, 3)", true),
                            le(std::vector<float>{0, 3, 1, 4, 2, 5})));
  ErrorOr<HostTensor> t = readNpy(p);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_FALSE(t->isCOrder());
  ErrorOr<Bytes> b = serializeNpy(*t);
  ASSERT_TRUE(b) << b.error().message;
  expectNumpyHeader(*b,
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, "
                    "3), }",
                    118, 152);
  EXPECT_EQ(Bytes(b->begin() + 128, b->end()), le(iota(6)));
  std::string out = path("out.npy");
  ASSERT_TRUE(writeNpy(out, *t));
  EXPECT_EQ(slurp(out), *b);
  ErrorOr<HostTensor> back = readNpy(out);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->layoutStrides.empty());
  EXPECT_EQ(elements<float>(*back), iota(6));

  // bf16 Fortran: widened to f32, then C order.
  p = put("fu.npy",
          npyBytes(1, dict("<u2", "(2, 2)", true),
                   le(std::vector<uint16_t>{0x3F80, 0x4040, 0x4000, 0x4080})));
  t = readNpy(p, StorageType::BF16);
  ASSERT_TRUE(t) << t.error().message;
  b = serializeNpy(*t);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(Bytes(b->end() - 16, b->end()), le(std::vector<float>{1, 2, 3, 4}));

  // An inconsistent layout is refused before anything is written.
  HostTensor gap = *readNpy(out);
  gap.layoutStrides = {1, 3};
  EXPECT_FALSE(serializeNpy(gap));
  EXPECT_FALSE(writeNpy(path("gap.npy"), gap));
}

TEST_F(NpyTest, RoundTripsEveryStorageType) {
  for (StorageType type :
       {StorageType::F64, StorageType::F32, StorageType::F16, StorageType::I64,
        StorageType::I32, StorageType::Bool}) {
    HostTensor t = *HostTensor::create(type, {2, 3, 5});
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] =
          static_cast<uint8_t>(type == StorageType::Bool ? i % 2 : i * 37 + 1);
    std::string p = path(std::string(storageName(type)) + ".npy");
    ErrorOr<void> s = writeNpy(p, t);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(slurp(p).size() % 64, t.data.size() % 64);
    ErrorOr<HostTensor> r = readNpy(p, type);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->type, type);
    EXPECT_EQ(r->shape, t.shape);
    EXPECT_EQ(r->data, t.data) << storageName(type);
  }
}

TEST_F(NpyTest, LowPrecisionIsWrittenAsF32) {
  for (StorageType type :
       {StorageType::BF16, StorageType::F8E4M3, StorageType::F8E5M2}) {
    HostTensor t = *HostTensor::create(type, {256});
    unsigned bytes = storageBytes(type);
    for (int i = 0; i < 256; ++i) {
      uint16_t bits = static_cast<uint16_t>(bytes == 2 ? (i << 8) | i : i);
      std::memcpy(t.data.data() + i * bytes, &bits, bytes);
    }
    std::string p = path(std::string(storageName(type)) + ".npy");
    ErrorOr<void> s = writeNpy(p, t);
    ASSERT_TRUE(s) << s.error().message;
    ErrorOr<HostTensor> f = readNpy(p);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->type, StorageType::F32);
    // Widening is exact, so reading back as the low-precision type (with
    // round to nearest even) recovers every bit pattern, NaNs included.
    ErrorOr<HostTensor> back = readNpy(p, type);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->data, t.data) << storageName(type);
    if (type == StorageType::F8E4M3) {
      EXPECT_EQ(elements<float>(*f)[0x7E], 448.0f);
      EXPECT_TRUE(std::isnan(elements<float>(*f)[0x7F]));
    }
  }
}

TEST_F(NpyTest, WritesVersion2WhenTheHeaderNeedsIt) {
  // 30000 dims of 1: a header of ~90 KB, too long for a 16-bit length.
  HostTensor t =
      *HostTensor::create(StorageType::I32, std::vector<int64_t>(30000, 1));
  int32_t v = 42;
  std::memcpy(t.data.data(), &v, 4);
  std::string p = path("v2.npy");
  ASSERT_TRUE(writeNpy(p, t));
  Bytes b = slurp(p);
  ASSERT_GT(b.size(), 12u);
  EXPECT_EQ(b[6], 2);
  EXPECT_EQ(b[7], 0);
  uint32_t hl = b[8] | (b[9] << 8) | (b[10] << 16) | (uint32_t(b[11]) << 24);
  EXPECT_EQ((12 + hl) % 64, 0u);
  EXPECT_EQ(b[12 + hl - 1], '\n');
  ErrorOr<HostTensor> r = readNpy(p);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->shape.size(), 30000u);
  EXPECT_EQ(elements<int32_t>(*r), (std::vector<int32_t>{42}));
}

TEST_F(NpyTest, WritingIsAtomic) {
  std::string p = path("keep.npy");
  HostTensor good = *HostTensor::create(StorageType::F32, {2});
  ASSERT_TRUE(writeNpy(p, good));
  Bytes before = slurp(p);

  // An inconsistent tensor: nothing is written, the old file survives.
  HostTensor bad = good;
  bad.data.resize(5);
  ErrorOr<void> s = writeNpy(p, bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find(p + ": tensor f32[2] has 5 bytes"),
            std::string::npos)
      << s.error().message;
  EXPECT_EQ(slurp(p), before);

  // A missing directory: no file appears anywhere.
  s = writeNpy(path("no/such/dir/x.npy"), good);
  ASSERT_FALSE(s);
  EXPECT_NE(
      s.error().message.find("no such directory '" + path("no/such/dir") + "'"),
      std::string::npos)
      << s.error().message;

  // The destination is a directory: error, directory untouched.
  ASSERT_EQ(::mkdir(path("sub").c_str(), 0777), 0);
  s = writeNpy(path("sub"), good);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("is a directory"), std::string::npos)
      << s.error().message;
  ::rmdir(path("sub").c_str());

  // Overwriting replaces the content.
  HostTensor other = *HostTensor::create(StorageType::I64, {3});
  ASSERT_TRUE(writeNpy(p, other));
  ErrorOr<HostTensor> r = readNpy(p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->type, StorageType::I64);

  // No temporary files are left behind.
  std::vector<std::string> names = listDir();
  EXPECT_EQ(names, (std::vector<std::string>{"keep.npy"}));
}

TEST_F(NpyTest, ReadOnlyDirectoryFailsCleanly) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root ignores directory permissions";
  ASSERT_EQ(::mkdir(path("ro").c_str(), 0555), 0);
  ErrorOr<void> s =
      writeNpy(path("ro/x.npy"), *HostTensor::create(StorageType::F32, {1}));
  EXPECT_FALSE(s);
  EXPECT_NE(s.error().message.find("permission denied: cannot create files in "
                                   "directory"),
            std::string::npos)
      << s.error().message;
  ::rmdir(path("ro").c_str());
}

} // namespace
