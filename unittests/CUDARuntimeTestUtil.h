// The CUDA runtime in emulation (lib/Target/CUDA/Runtime, in its documented
// concatenation order) and helpers the CUDA runtime tests share.
#ifndef EIN_UNITTESTS_CUDARUNTIMETESTUTIL_H
#define EIN_UNITTESTS_CUDARUNTIMETESTUTIL_H

// clang-format off
#include "ein_cuda_emu.h"
#include "ein_cuda_runtime.cuh"
#include "ein_cuda_types.cuh"
#include "ein_cuda_map.cuh"
#include "ein_cuda_reduce.cuh"
#include "ein_cuda_rows.cuh"
#include "ein_cuda_gemm.cuh"
#include "ein_gemm_plan.h"
#include "ein_cuda_contract.cuh"
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ein_cuda_test {

/// A low-precision format's value for `bits`, from first principles
/// (sign * 2^e * 1.m), as float64: independent of the runtime's decoder.
inline double decode(uint32_t bits, int expBits, int manBits, int bias,
                     bool ieee) {
  const int width = 1 + expBits + manBits;
  const double sign = (bits >> (width - 1)) & 1 ? -1.0 : 1.0;
  const uint32_t exp = (bits >> manBits) & ((1u << expBits) - 1);
  const uint32_t man = bits & ((1u << manBits) - 1);
  const uint32_t top = (1u << expBits) - 1;
  if (ieee && exp == top)
    return man ? NAN : sign * INFINITY;
  if (!ieee && exp == top && man == (1u << manBits) - 1)
    return NAN;
  if (exp == 0)
    return sign * std::ldexp(double(man), 1 - bias - manBits);
  return sign *
         std::ldexp(1.0 + std::ldexp(double(man), -manBits), int(exp) - bias);
}

/// Round-to-nearest-even into a format by comparing with its two
/// neighbouring values (as test/run/fp8_reference.py does): the bit
/// pattern, NaN as sign | all-ones exponent | the top payload bits (at
/// least 1) on IEEE formats, S.1111.111 on e4m3fn.
struct Rounder {
  int expBits, manBits, bias;
  bool ieee;
  std::vector<double> values; // finite non-negative values, by code
  Rounder(int e, int m, int b, bool i)
      : expBits(e), manBits(m), bias(b), ieee(i) {
    for (uint32_t c = 0; c < (1u << (e + m)); ++c) {
      double v = decode(c, e, m, b, i);
      if (!std::isfinite(v))
        break;
      values.push_back(v);
    }
  }
  uint32_t round(double x, uint64_t nanPayloadTop) const {
    const uint32_t signBit = std::signbit(x) ? 1u << (expBits + manBits) : 0;
    const uint32_t expAll = ((1u << expBits) - 1) << manBits;
    if (std::isnan(x)) {
      if (!ieee)
        return signBit | expAll | ((1u << manBits) - 1);
      return signBit | expAll | uint32_t(nanPayloadTop ? nanPayloadTop : 1);
    }
    const uint32_t overflow = ieee ? expAll : expAll | ((1u << manBits) - 1);
    double mag = std::fabs(x);
    const double maxV = values.back();
    const double step = maxV - values[values.size() - 2];
    const bool maxOdd = (values.size() - 1) % 2;
    if (mag > maxV + step / 2 || (mag == maxV + step / 2 && maxOdd))
      return signBit | overflow; // halfway: to even (e4m3fn's 448 is even)
    if (mag >= maxV)
      return signBit | uint32_t(values.size() - 1);
    size_t lo = std::upper_bound(values.begin(), values.end(), mag) -
                values.begin() - 1;
    double a = values[lo], b = values[lo + 1];
    // 2|x| against a + b is exact in double for these formats' values
    // unless |x| has more bits than a double: compare differences instead.
    double da = mag - a, db = b - mag;
    size_t code = da < db ? lo : da > db ? lo + 1 : (lo % 2 ? lo + 1 : lo);
    return signBit | uint32_t(code);
  }
};

/// A strided view over a buffer of its own: the axes laid out in a random
/// memory order, each padded (a slice of a larger tensor), starting at an
/// offset; with `broadcast`, some axes get stride 0.
template <typename T, int R> struct Strided {
  std::vector<T> buffer;
  EinView<T, R> view;
  Strided(const int64_t (&sizes)[R > 0 ? R : 1], std::mt19937 &rng,
          bool permute, bool pad, bool broadcast) {
    int order[R > 0 ? R : 1];
    for (int d = 0; d < R; ++d)
      order[d] = d;
    if (permute)
      std::shuffle(order, order + R, rng);
    int64_t stride = 1;
    for (int i = R - 1; i >= 0; --i) {
      int d = order[i];
      view.size[d] = sizes[d];
      bool zero = broadcast && rng() % 3 == 0;
      view.stride[d] = zero ? 0 : stride;
      if (!zero)
        stride *= sizes[d] + (pad ? int64_t(rng() % 3) : 0);
    }
    int64_t offset = pad ? int64_t(rng() % 5) : 0;
    buffer.resize(size_t(stride + offset + 1));
    view.data = buffer.data() + offset;
  }
  /// The view's element at a multi-index.
  T &at(const int64_t *idx) {
    int64_t o = 0;
    for (int d = 0; d < R; ++d)
      o += idx[d] * view.stride[d];
    return view.data[o];
  }
};

/// Calls f(idx) for every multi-index of `sizes`, row-major.
template <int R, typename F> void forEachIndex(const int64_t *sizes, F f) {
  int64_t idx[R > 0 ? R : 1] = {};
  for (int d = 0; d < R; ++d)
    if (sizes[d] == 0)
      return;
  for (;;) {
    f(static_cast<const int64_t *>(idx));
    int d = R - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < sizes[d])
        break;
      idx[d] = 0;
    }
    if (d < 0)
      return;
  }
}

inline bool sameFloat(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) ||
         (a == b && std::signbit(a) == std::signbit(b));
}

} // namespace ein_cuda_test

#endif // EIN_UNITTESTS_CUDARUNTIMETESTUTIL_H
