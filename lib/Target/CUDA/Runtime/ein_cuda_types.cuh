// ein's dtypes on the GPU: storage types, conversions that round exactly as
// the CPU back end does, the scalar semantics of ein's elementwise ops, the
// strided view, and the index arithmetic the kernels share.
#ifndef EIN_CUDA_TYPES_CUH
#define EIN_CUDA_TYPES_CUH

// ---------------------------------------------------------------- storage
// 16- and 8-bit floats are stored as their bits, as in the CPU back end's C
// ABI (uint16_t / uint8_t). The wrappers have the same size and alignment
// and exist so that conversions can be chosen by type: an entry point casts
// the ABI's `uint16_t *` to `ein_f16_t *` or `ein_bf16_t *`.
struct ein_f16_t {
  uint16_t bits;
};
struct ein_bf16_t {
  uint16_t bits;
};
struct ein_f8e4m3_t {
  uint8_t bits;
};
struct ein_f8e5m2_t {
  uint8_t bits;
};

/// A binary float format narrower than f32 (lib/Runtime/FloatConvert.cpp).
/// Ieee: an all-ones exponent is inf/NaN; otherwise the "FN" convention of
/// e4m3fn (no inf, only S.1111.111 is NaN, overflow gives NaN).
template <int ExpBits, int ManBits, int Bias, bool Ieee> struct EinFormat {
  static constexpr int kExp = ExpBits, kMan = ManBits, kBias = Bias;
  static constexpr bool kIeee = Ieee;
};
using EinF16Format = EinFormat<5, 10, 15, true>;
using EinBF16Format = EinFormat<8, 7, 127, true>;
using EinE4M3Format = EinFormat<4, 3, 7, false>;
using EinE5M2Format = EinFormat<5, 2, 15, true>;

/// f32 or f64 bits -> `Fmt`, rounded to nearest even in one step (so that
/// f64 -> f16 does not round twice). U is the source's integer type.
template <typename Fmt, typename U> EIN_HD uint32_t ein_narrow_bits(U bits) {
  constexpr bool kWide = sizeof(U) == 8;
  constexpr int W = kWide ? 64 : 32, P = kWide ? 52 : 23;
  constexpr int SrcBias = kWide ? 1023 : 127;
  constexpr U SrcExpMask = kWide ? 0x7FF : 0xFF;
  constexpr uint32_t ExpMask = (1u << Fmt::kExp) - 1;
  constexpr uint32_t ManMask = (1u << Fmt::kMan) - 1;
  constexpr uint32_t MaxFinite = Fmt::kIeee
                                     ? (((ExpMask - 1) << Fmt::kMan) | ManMask)
                                     : ((ExpMask << Fmt::kMan) | (ManMask - 1));
  constexpr uint32_t Overflow =
      Fmt::kIeee ? (ExpMask << Fmt::kMan) : ((ExpMask << Fmt::kMan) | ManMask);
  const uint32_t sign = uint32_t(bits >> (W - 1)) << (Fmt::kExp + Fmt::kMan);
  const U exp = (bits >> P) & SrcExpMask;
  const U man = bits & ((U(1) << P) - 1);
  if (exp == SrcExpMask) {
    if (man == 0)
      return sign | Overflow; // inf (NaN on e4m3fn)
    if (!Fmt::kIeee)
      return sign | (ExpMask << Fmt::kMan) | ManMask;
    uint32_t payload = uint32_t(man >> (P - Fmt::kMan)); // the top bits
    return sign | (ExpMask << Fmt::kMan) | (payload ? payload : 1u);
  }
  if (exp == 0 && man == 0)
    return sign;
  // value = sig * 2^(max(exp, 1) - SrcBias - P); te is the target's biased
  // exponent. In the normal range the implicit bit carries into the
  // exponent field of ((te - 1) << kMan); below it the quotient is in units
  // of the smallest subnormal.
  const U sig = man | (exp ? (U(1) << P) : U(0));
  const int te = int(exp ? exp : 1) - SrcBias + Fmt::kBias;
  int shift = P - Fmt::kMan;
  uint32_t base = 0;
  if (te >= 1)
    base = uint32_t(te - 1) << Fmt::kMan;
  else
    shift += 1 - te;
  if (shift > P + 1) // sig < 2^(P+1) <= half an ulp: rounds to zero
    return sign;
  uint64_t q = base + uint64_t(sig >> shift);
  const U rem = sig & ((U(1) << shift) - 1);
  const U half = U(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    ++q; // may carry into the exponent: that is the right answer
  if (q > MaxFinite)
    return sign | Overflow;
  return sign | uint32_t(q);
}

/// `Fmt` bits -> f32, exactly (every value of these formats is an f32).
template <typename Fmt> EIN_HD float ein_widen_bits(uint32_t bits) {
  constexpr int Width = 1 + Fmt::kExp + Fmt::kMan;
  constexpr uint32_t ExpMask = (1u << Fmt::kExp) - 1;
  constexpr uint32_t ManMask = (1u << Fmt::kMan) - 1;
  const uint32_t sign = ((bits >> (Width - 1)) & 1u) << 31;
  const uint32_t exp = (bits >> Fmt::kMan) & ExpMask;
  const uint32_t man = bits & ManMask;
  uint32_t out;
  if (exp == ExpMask && Fmt::kIeee) {
    out = 0x7F800000u | (man << (23 - Fmt::kMan)); // inf, or NaN's payload
  } else if (exp == ExpMask && man == ManMask) {
    out = 0x7FC00000u; // e4m3fn's NaN
  } else if (exp == 0) {
    if (man == 0) {
      out = 0;
    } else { // a subnormal: normalise (every one is an f32 normal here,
             // except bf16's, which stay f32 subnormals: a plain shift)
#ifdef __CUDA_ARCH__
      int lead = 31 - __clz(int(man));
#else
      int lead = 31 - __builtin_clz(man);
#endif
      int e = 1 - Fmt::kBias - Fmt::kMan + lead;
      if (e >= -126)
        out = (uint32_t(e + 127) << 23) | ((man << (23 - lead)) & 0x7FFFFFu);
      else
        out = man << (23 - Fmt::kMan);
    }
  } else {
    out = (uint32_t(int(exp) - Fmt::kBias + 127) << 23) |
          (man << (23 - Fmt::kMan));
  }
  uint32_t word = sign | out;
  float f;
  memcpy(&f, &word, 4);
  return f;
}

EIN_HD uint32_t ein_float_bits(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  return b;
}
EIN_HD uint64_t ein_double_bits(double x) {
  uint64_t b;
  memcpy(&b, &x, 8);
  return b;
}
EIN_HD float ein_bits_float(uint32_t b) {
  float x;
  memcpy(&x, &b, 4);
  return x;
}

// ------------------------------------------------------------- conversions
// to float (exact) and from float / double (one rounding, nearest even).
EIN_HD float ein_to_f32(ein_f16_t x) {
  return ein_widen_bits<EinF16Format>(x.bits);
}
EIN_HD float ein_to_f32(ein_bf16_t x) {
  return ein_bits_float(uint32_t(x.bits) << 16);
}
EIN_HD float ein_to_f32(ein_f8e4m3_t x) {
  return ein_widen_bits<EinE4M3Format>(x.bits);
}
EIN_HD float ein_to_f32(ein_f8e5m2_t x) {
  return ein_widen_bits<EinE5M2Format>(x.bits);
}

EIN_HD ein_f16_t ein_f32_to_f16(float x) {
#if defined(__CUDA_ARCH__)
  // cvt.rn.f16.f32 rounds to nearest even, subnormals and overflow
  // included; only its NaN (canonical 0x7FFF) differs from the CPU's.
  if (x == x)
    return ein_f16_t{__half_as_ushort(__float2half_rn(x))};
#endif
  return ein_f16_t{uint16_t(ein_narrow_bits<EinF16Format>(ein_float_bits(x)))};
}
EIN_HD ein_bf16_t ein_f32_to_bf16(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (x == x) // cvt.rn.bf16.f32, as above
    return ein_bf16_t{__bfloat16_as_ushort(__float2bfloat16_rn(x))};
#endif
  return ein_bf16_t{
      uint16_t(ein_narrow_bits<EinBF16Format>(ein_float_bits(x)))};
}
// fp8 in software: the hardware's cvt (sm_89+) saturates or not, but does
// not give e4m3fn's "past 464 is NaN" rule of the CPU back end.
EIN_HD ein_f8e4m3_t ein_f32_to_f8e4m3(float x) {
  return ein_f8e4m3_t{
      uint8_t(ein_narrow_bits<EinE4M3Format>(ein_float_bits(x)))};
}
EIN_HD ein_f8e5m2_t ein_f32_to_f8e5m2(float x) {
  return ein_f8e5m2_t{
      uint8_t(ein_narrow_bits<EinE5M2Format>(ein_float_bits(x)))};
}

/// The dtype-directed conversion `astype` performs (language.md §6, and
/// `cast` in lib/Conversion/EinToLinalg/Builders.cpp): floats narrow with one
/// rounding to nearest even, f16 <-> bf16 through f32, integers wrap, int ->
/// narrow float through f32 (as LLVM and ein-expand-fp8 lower sitofp),
/// float -> int rounds toward zero and saturates (NaN gives 0).
template <typename To> struct EinCvt;

template <typename T> struct EinIsInt { static constexpr bool value = false; };
template <> struct EinIsInt<int32_t> { static constexpr bool value = true; };
template <> struct EinIsInt<int64_t> { static constexpr bool value = true; };
template <> struct EinIsInt<int8_t> { static constexpr bool value = true; };
template <typename T> struct EinIsLowFloat {
  static constexpr bool value = false;
};
template <> struct EinIsLowFloat<ein_f16_t> {
  static constexpr bool value = true;
};
template <> struct EinIsLowFloat<ein_bf16_t> {
  static constexpr bool value = true;
};
template <> struct EinIsLowFloat<ein_f8e4m3_t> {
  static constexpr bool value = true;
};
template <> struct EinIsLowFloat<ein_f8e5m2_t> {
  static constexpr bool value = true;
};

/// Any dtype -> the type arithmetic on it runs in: f32 for the 16- and 8-bit
/// floats (the CPU back end computes them in f32 and rounds once per op),
/// the type itself otherwise.
template <typename T> struct EinCompute {
  using type = T;
  static EIN_HD T load(T x) { return x; }
};
template <> struct EinCompute<ein_f16_t> {
  using type = float;
  static EIN_HD float load(ein_f16_t x) { return ein_to_f32(x); }
};
template <> struct EinCompute<ein_bf16_t> {
  using type = float;
  static EIN_HD float load(ein_bf16_t x) { return ein_to_f32(x); }
};
template <> struct EinCompute<ein_f8e4m3_t> {
  using type = float;
  static EIN_HD float load(ein_f8e4m3_t x) { return ein_to_f32(x); }
};
template <> struct EinCompute<ein_f8e5m2_t> {
  using type = float;
  static EIN_HD float load(ein_f8e5m2_t x) { return ein_to_f32(x); }
};

/// Float -> integer, toward zero, saturating (saturatingFPToSI).
template <typename I, typename F> EIN_HD I ein_fptosi(F v) {
  const F bound = F(sizeof(I) == 8   ? 9223372036854775808.0
                    : sizeof(I) == 4 ? 2147483648.0
                                     : 128.0);
  if (v >= -bound && v < bound)
    return I(v);
  if (v >= bound)
    return sizeof(I) == 8   ? I(INT64_MAX)
           : sizeof(I) == 4 ? I(INT32_MAX)
                            : I(INT8_MAX);
  if (v < -bound)
    return sizeof(I) == 8   ? I(INT64_MIN)
           : sizeof(I) == 4 ? I(INT32_MIN)
                            : I(INT8_MIN);
  return I(0); // NaN
}

template <> struct EinCvt<double> {
  static EIN_HD double from(double x) { return x; }
  static EIN_HD double from(bool x) { return x ? 1.0 : 0.0; }
  static EIN_HD double from(float x) { return x; }
  static EIN_HD double from(int32_t x) { return double(x); }
  static EIN_HD double from(int64_t x) { return double(x); }
  static EIN_HD double from(int8_t x) { return double(x); }
  template <typename L> static EIN_HD double from(L x) { return ein_to_f32(x); }
};
/// bool: 0 or 1 from a number (x != 0, NaN included), 0/1 as a number.
template <> struct EinCvt<bool> {
  static EIN_HD bool from(bool x) { return x; }
  static EIN_HD bool from(double x) { return x != 0; }
  static EIN_HD bool from(float x) { return x != 0; }
  static EIN_HD bool from(int32_t x) { return x != 0; }
  static EIN_HD bool from(int64_t x) { return x != 0; }
  static EIN_HD bool from(int8_t x) { return x != 0; }
  template <typename L> static EIN_HD bool from(L x) {
    return ein_to_f32(x) != 0;
  }
};
template <> struct EinCvt<float> {
  static EIN_HD float from(bool x) { return x ? 1.0f : 0.0f; }
  static EIN_HD float from(double x) { return float(x); } // IEEE: one rounding
  static EIN_HD float from(float x) { return x; }
  static EIN_HD float from(int32_t x) { return float(x); }
  static EIN_HD float from(int64_t x) { return float(x); }
  static EIN_HD float from(int8_t x) { return float(x); }
  template <typename L> static EIN_HD float from(L x) { return ein_to_f32(x); }
};
template <typename I> struct EinCvtInt {
  static EIN_HD I from(bool x) { return x ? I(1) : I(0); }
  static EIN_HD I from(double x) { return ein_fptosi<I>(x); }
  static EIN_HD I from(float x) { return ein_fptosi<I>(x); }
  // Integers sign-extend or keep the low bits (wrap).
  static EIN_HD I from(int8_t x) { return I(x); }
  static EIN_HD I from(int32_t x) { return from(int64_t(x)); }
  static EIN_HD I from(int64_t x) { return I(uint64_t(x) & kMask); }
  static constexpr uint64_t kMask =
      sizeof(I) == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * sizeof(I))) - 1;
  template <typename L> static EIN_HD I from(L x) {
    return ein_fptosi<I>(ein_to_f32(x));
  }
};
template <> struct EinCvt<int32_t> : EinCvtInt<int32_t> {};
template <> struct EinCvt<int64_t> : EinCvtInt<int64_t> {};
template <> struct EinCvt<int8_t> : EinCvtInt<int8_t> {};

#define EIN_DEFINE_LOW_CVT(T, FMT, FROM_F32)                                   \
  template <> struct EinCvt<T> {                                               \
    static EIN_HD T from(double x) {                                           \
      return T{decltype(T::bits)(ein_narrow_bits<FMT>(ein_double_bits(x)))};   \
    }                                                                          \
    static EIN_HD T from(bool x) { return FROM_F32(x ? 1.0f : 0.0f); }         \
    static EIN_HD T from(float x) { return FROM_F32(x); }                      \
    static EIN_HD T from(int32_t x) { return FROM_F32(float(x)); }             \
    static EIN_HD T from(int64_t x) { return FROM_F32(float(x)); }             \
    static EIN_HD T from(int8_t x) { return FROM_F32(float(x)); }              \
    template <typename L> static EIN_HD T from(L x) {                          \
      return FROM_F32(ein_to_f32(x));                                          \
    }                                                                          \
    static EIN_HD T from(T x) { return x; }                                    \
  };
EIN_DEFINE_LOW_CVT(ein_f16_t, EinF16Format, ein_f32_to_f16)
EIN_DEFINE_LOW_CVT(ein_bf16_t, EinBF16Format, ein_f32_to_bf16)
EIN_DEFINE_LOW_CVT(ein_f8e4m3_t, EinE4M3Format, ein_f32_to_f8e4m3)
EIN_DEFINE_LOW_CVT(ein_f8e5m2_t, EinE5M2Format, ein_f32_to_f8e5m2)
#undef EIN_DEFINE_LOW_CVT

/// astype: `ein_cvt<To>(x)` for any two dtypes.
template <typename To, typename From> EIN_HD To ein_cvt(From x) {
  return EinCvt<To>::from(x);
}

// ------------------------------------------------------- scalar semantics
// Integer + - * and negation wrap (two's complement), computed unsigned so
// that no C++ overflow is undefined.
template <typename I> struct EinUnsigned;
template <> struct EinUnsigned<int32_t> { using type = uint32_t; };
template <> struct EinUnsigned<int64_t> { using type = uint64_t; };
template <> struct EinUnsigned<int8_t> { using type = uint8_t; };
template <typename T> EIN_HD T ein_add(T a, T b) { return a + b; }
template <typename T> EIN_HD T ein_sub(T a, T b) { return a - b; }
template <typename T> EIN_HD T ein_mul(T a, T b) { return a * b; }
template <typename T> EIN_HD T ein_neg(T a) { return -a; }
#define EIN_WRAPPING(I)                                                        \
  template <> EIN_HD I ein_add<I>(I a, I b) {                                  \
    using U = EinUnsigned<I>::type;                                            \
    return I(U(a) + U(b));                                                     \
  }                                                                            \
  template <> EIN_HD I ein_sub<I>(I a, I b) {                                  \
    using U = EinUnsigned<I>::type;                                            \
    return I(U(a) - U(b));                                                     \
  }                                                                            \
  template <> EIN_HD I ein_mul<I>(I a, I b) {                                  \
    using U = EinUnsigned<I>::type;                                            \
    return I(U(a) * U(b));                                                     \
  }                                                                            \
  template <> EIN_HD I ein_neg<I>(I a) {                                       \
    using U = EinUnsigned<I>::type;                                            \
    return I(U(0) - U(a));                                                     \
  }
EIN_WRAPPING(int32_t)
EIN_WRAPPING(int64_t)
EIN_WRAPPING(int8_t)
#undef EIN_WRAPPING

/// Integer division that never traps (nonTrappingDivSI): toward zero,
/// x / 0 is 0, INT_MIN / -1 wraps to INT_MIN.
template <typename I> EIN_HD I ein_div_int(I x, I y) {
  if (y == 0)
    return 0;
  if (y == -1)
    return ein_neg(x);
  return x / y;
}
template <typename T> EIN_HD T ein_div(T x, T y) { return x / y; }
template <> EIN_HD int32_t ein_div<int32_t>(int32_t x, int32_t y) {
  return ein_div_int(x, y);
}
template <> EIN_HD int64_t ein_div<int64_t>(int64_t x, int64_t y) {
  return ein_div_int(x, y);
}
template <> EIN_HD int8_t ein_div<int8_t>(int8_t x, int8_t y) {
  return ein_div_int(x, y);
}

/// Integer power that never traps (nonTrappingIPowI, math.ipowi): wraps;
/// a negative exponent gives 1 for x = 1, +-1 for x = -1, 0 otherwise.
template <typename I> EIN_HD I ein_pow_int(I x, I y) {
  if (y < 0)
    return x == 1 ? I(1) : x == -1 ? ((y & 1) ? I(-1) : I(1)) : I(0);
  I result = 1;
  while (y) {
    if (y & 1)
      result = ein_mul(result, x);
    x = ein_mul(x, x);
    y >>= 1;
  }
  return result;
}
EIN_HD float ein_pow(float x, float y) { return powf(x, y); }
EIN_HD double ein_pow(double x, double y) { return pow(x, y); }
EIN_HD int32_t ein_pow(int32_t x, int32_t y) { return ein_pow_int(x, y); }
EIN_HD int64_t ein_pow(int64_t x, int64_t y) { return ein_pow_int(x, y); }
EIN_HD int8_t ein_pow(int8_t x, int8_t y) { return ein_pow_int(x, y); }

EIN_HD bool ein_signbit(float x) { return ein_float_bits(x) >> 31; }
EIN_HD bool ein_signbit(double x) { return ein_double_bits(x) >> 63; }

/// NaN-propagating max/min ordering -0 below +0 (arith.maximumf /
/// minimumf): what ein's `max`/`min` reductions and float `relu` use.
template <typename F> EIN_HD F ein_maximum(F a, F b) {
  if (a != a || b != b)
    return a != a ? a : b;
  if (a == b) // +0 and -0: the one without the sign bit
    return ein_signbit(a) ? b : a;
  return a > b ? a : b;
}
template <typename F> EIN_HD F ein_minimum(F a, F b) {
  if (a != a || b != b)
    return a != a ? a : b;
  if (a == b)
    return ein_signbit(a) ? a : b;
  return a < b ? a : b;
}
EIN_HD bool ein_maximum(bool a, bool b) { return a || b; }
EIN_HD bool ein_minimum(bool a, bool b) { return a && b; }
EIN_HD int32_t ein_maximum(int32_t a, int32_t b) { return a > b ? a : b; }
EIN_HD int64_t ein_maximum(int64_t a, int64_t b) { return a > b ? a : b; }
EIN_HD int32_t ein_minimum(int32_t a, int32_t b) { return a < b ? a : b; }
EIN_HD int64_t ein_minimum(int64_t a, int64_t b) { return a < b ? a : b; }
EIN_HD int8_t ein_maximum(int8_t a, int8_t b) { return a > b ? a : b; }
EIN_HD int8_t ein_minimum(int8_t a, int8_t b) { return a < b ? a : b; }

template <typename T> EIN_HD T ein_relu(T x) { return ein_maximum(x, T(0)); }
/// 1 / sqrt, both correctly rounded (not the approximate rsqrtf), so that
/// the result does not depend on the target.
EIN_HD float ein_rsqrt(float x) { return 1.0f / sqrtf(x); }
EIN_HD double ein_rsqrt(double x) { return 1.0 / sqrt(x); }

// -------------------------------------------------------------- the view
/// A strided tensor: strides in elements, any non-negative (0 broadcasts).
template <typename T, int R> struct EinView {
  T *data;
  int64_t size[R > 0 ? R : 1];
  int64_t stride[R > 0 ? R : 1];
};

/// The view of `data` with R sizes and strides (from the C ABI, a plan).
template <typename T, int R>
inline EinView<T, R> ein_make_view(T *data, const int64_t *sizes,
                                   const int64_t *strides) {
  EinView<T, R> v;
  v.data = data;
  for (int d = 0; d < R; ++d) {
    v.size[d] = sizes[d];
    v.stride[d] = strides[d];
  }
  return v;
}

template <typename T, int R> EIN_HD int64_t ein_numel(const EinView<T, R> &v) {
  int64_t n = 1;
  for (int d = 0; d < R; ++d)
    n *= v.size[d];
  return n;
}
/// Row-major contiguous (size-1 dims may have any stride).
template <typename T, int R>
EIN_HD bool ein_is_contiguous(const EinView<T, R> &v) {
  int64_t expect = 1;
  for (int d = R - 1; d >= 0; --d) {
    if (v.size[d] != 1 && v.stride[d] != expect)
      return false;
    expect *= v.size[d];
  }
  return true;
}
template <typename T, int R> EIN_HD bool ein_is_scalar(const EinView<T, R> &v) {
  for (int d = 0; d < R; ++d)
    if (v.size[d] != 1 && v.stride[d] != 0)
      return false;
  return true;
}

// ------------------------------------------------------ index arithmetic
/// Division by a run-time constant as a multiply-high and a shift (Granlund
/// and Montgomery; PyTorch's IntDivider), for 32-bit dividends.
struct EinFastDiv {
  uint32_t divisor = 1, mul = 0, shift = 0;
  EinFastDiv() = default;
  __host__ __device__ explicit EinFastDiv(uint32_t d) : divisor(d) {
    for (shift = 0; shift < 32; ++shift)
      if ((1ull << shift) >= d)
        break;
    uint64_t one = 1;
    uint64_t m = ((one << 32) * ((one << shift) - d)) / d + 1;
    mul = uint32_t(m);
  }
  EIN_HD uint32_t div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    uint32_t t = __umulhi(n, mul);
#else
    uint32_t t = uint32_t((uint64_t(n) * mul) >> 32);
#endif
    return uint32_t((uint64_t(t) + n) >> shift);
  }
};

/// Element offsets of N views sharing one index space of rank R, from a
/// linear row-major index: 32-bit fast division when the space fits
/// (Index = uint32_t), plain 64-bit division otherwise.
template <int R, int N, typename Index> struct EinOffsets {
  EinFastDiv div[R > 0 ? R : 1];
  int64_t size[R > 0 ? R : 1];
  int64_t stride[N][R > 0 ? R : 1];

  EIN_HD void offsets(Index linear, int64_t (&out)[N]) const {
    for (int k = 0; k < N; ++k)
      out[k] = 0;
    // ein_collapse puts the dims that matter last: once the quotient is 0,
    // every remaining coordinate is.
    for (int d = R - 1; d >= 0 && linear != 0; --d) {
      Index q, c;
      if (sizeof(Index) == 4) {
        q = Index(div[d].div(uint32_t(linear)));
        c = linear - q * Index(div[d].divisor);
      } else {
        q = linear / Index(size[d]);
        c = linear - q * Index(size[d]);
      }
      EIN_UNROLL
      for (int k = 0; k < N; ++k)
        out[k] += int64_t(c) * stride[k][d];
      linear = q;
    }
  }
};

template <int R, int N, typename Index>
inline EinOffsets<R, N, Index> ein_make_offsets(const int64_t *size,
                                                const int64_t *const *strides) {
  EinOffsets<R, N, Index> o;
  for (int d = 0; d < R; ++d) {
    o.size[d] = size[d];
    o.div[d] = EinFastDiv(
        uint32_t(size[d] > 0 && size[d] < (1ll << 32) ? size[d] : 1));
    for (int k = 0; k < N; ++k)
      o.stride[k][d] = strides[k][d];
  }
  return o;
}

/// Simplifies an index space shared by N views without changing the
/// offsets it produces: drops size-1 dims, merges neighbours that are
/// contiguous in every view, and right-aligns what is left (the leading
/// dims become size 1, stride 0). Returns the number of dims left.
template <int R, int N>
inline int ein_collapse(int64_t (&size)[R > 0 ? R : 1],
                        int64_t (&stride)[N][R > 0 ? R : 1]) {
  int64_t s[R > 0 ? R : 1], st[N][R > 0 ? R : 1];
  int m = 0; // dims kept so far, outermost first
  for (int d = 0; d < R; ++d) {
    if (size[d] == 1)
      continue;
    bool merge = m > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = st[k][m - 1] == stride[k][d] * size[d];
    if (merge) {
      s[m - 1] *= size[d];
      for (int k = 0; k < N; ++k)
        st[k][m - 1] = stride[k][d];
      continue;
    }
    s[m] = size[d];
    for (int k = 0; k < N; ++k)
      st[k][m] = stride[k][d];
    ++m;
  }
  for (int d = 0; d < R; ++d) {
    int from = d - (R - m);
    size[d] = from >= 0 ? s[from] : 1;
    for (int k = 0; k < N; ++k)
      stride[k][d] = from >= 0 ? st[k][from] : 0;
  }
  return m;
}

/// Blocks for `n` work items at `threads` each, a grid-stride loop covering
/// the rest (a few waves of the largest GPU are enough to hide latency).
inline unsigned ein_grid_for(int64_t n, unsigned threads) {
  int64_t blocks = (n + threads - 1) / threads;
  const int64_t cap = 132 * 32; // H100 SMs x blocks in flight
  return unsigned(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

#endif // EIN_CUDA_TYPES_CUH
