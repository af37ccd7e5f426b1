// Helpers of the C++ API's tests: tensors of known values and naive loops
// that compute what an operation must give (the tests' oracle).
#pragma once

#include <ein/ein.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

namespace ein_api_test {

/// A C-order f32 tensor whose element at flat index i is f(i).
inline ein::Tensor iota(
    std::vector<int64_t> shape,
    std::function<float(int64_t)> f = [](int64_t i) {
      return float(i % 97) * 0.25f - 3.0f;
    }) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = f(i);
  return ein::Tensor::from_vector(v, shape);
}

/// Calls f(index) for every index of `shape` in C order.
inline void
forEachIndex(const std::vector<int64_t> &shape,
             const std::function<void(const std::vector<int64_t> &)> &f) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(index);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// Element `index` of `t` read through its strides (independent of get()).
inline double element(const ein::Tensor &t, const std::vector<int64_t> &index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d)
    offset += index[d] * t.strides()[d];
  switch (t.dtype()) {
  case ein::DType::F32:
    return static_cast<const float *>(t.data())[offset];
  case ein::DType::F64:
    return static_cast<const double *>(t.data())[offset];
  case ein::DType::I32:
    return static_cast<const int32_t *>(t.data())[offset];
  case ein::DType::I64:
    return double(static_cast<const int64_t *>(t.data())[offset]);
  case ein::DType::Bool:
    return static_cast<const uint8_t *>(t.data())[offset];
  case ein::DType::I8:
    return static_cast<const int8_t *>(t.data())[offset];
  case ein::DType::F16:
  case ein::DType::BF16:
  case ein::DType::F8E4M3:
  case ein::DType::F8E5M2:
    break; // read through get() where a test needs them
  }
  ADD_FAILURE() << "element: no reader for dtype " << ein::name(t.dtype());
  return 0;
}

/// Expects `t` to have `shape` and element(index) == want(index) within a
/// relative tolerance.
inline void
expectTensor(const ein::Tensor &t, const std::vector<int64_t> &shape,
             const std::function<double(const std::vector<int64_t> &)> &want,
             double tolerance = 1e-5) {
  ASSERT_EQ(t.shape(), shape);
  int failures = 0;
  forEachIndex(shape, [&](const std::vector<int64_t> &index) {
    double got = element(t, index), expected = want(index);
    double scale = std::max(1.0, std::fabs(expected));
    if (!(std::fabs(got - expected) <= tolerance * scale) && failures++ < 5) {
      std::string at;
      for (int64_t i : index)
        at += std::to_string(i) + ",";
      ADD_FAILURE() << "at (" << at << "): got " << got << ", expected "
                    << expected;
    }
  });
}

} // namespace ein_api_test
