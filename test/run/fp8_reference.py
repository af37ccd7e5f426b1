"""fp8 (OCP f8e4m3fn, f8e5m2) reference values for the tests, from first
principles: every finite value decoded from its bit pattern, and rounding to
nearest even by comparing 2|x| with the sum of its two neighbours (exact in
float64: fp8 values have at most 4 significant bits). Independent of einc's
runtime and of ml_dtypes, whose float64 -> fp8 casts round twice (via
float32).

Conventions (OCP 8-bit floating point, as ml_dtypes): e5m2 has infinities
and overflows to them; e4m3fn has none, its one NaN per sign is S.1111.111,
and anything that rounds past 448 is NaN (464, the halfway point, rounds to
448).
"""

import numpy as np

# exponent bits, mantissa bits, bias, has infinities
FORMATS = {"f8e4m3": (4, 3, 7, False), "f8e5m2": (5, 2, 15, True)}


def decode(bits, dtype: str) -> np.ndarray:
    """fp8 bit patterns (uint8) -> float64 values."""
    e, m, bias, ieee = FORMATS[dtype]
    b = np.asarray(bits, dtype=np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp = (b >> m) & ((1 << e) - 1)
    man = b & ((1 << m) - 1)
    val = np.where(exp == 0, man * 2.0 ** (1 - bias - m),
                   (1 + man / 2.0**m) * 2.0 ** (exp - bias))
    top = (1 << e) - 1
    if ieee:
        val = np.where(exp == top, np.where(man == 0, np.inf, np.nan), val)
    else:
        val = np.where((exp == top) & (man == (1 << m) - 1), np.nan, val)
    return sign * val


def ladder(dtype: str):
    """The finite non-negative values in order with their codes, then one
    step past the largest (the overflow target)."""
    e, m, bias, ieee = FORMATS[dtype]
    codes = np.arange(128)
    vals = decode(codes, dtype)
    keep = np.isfinite(vals)
    vals, codes = vals[keep], codes[keep]
    past = vals[-1] + 2.0 ** (int(np.log2(vals[-1])) - m)
    return np.append(vals, past), np.append(codes, codes[-1] + 1), ieee


def round_fp8(a, dtype: str) -> np.ndarray:
    """float64 -> the nearest fp8 value (ties to the even code), as float64."""
    with np.errstate(all="ignore"):  # NaN, inf and 2 * huge are expected
        a = np.asarray(a, dtype=np.float64)
    vals, codes, ieee = ladder(dtype)
    mag = np.abs(a)
    with np.errstate(all="ignore"):
        i = np.clip(np.searchsorted(vals, mag, side="right") - 1, 0, len(vals) - 2)
        lo, hi = vals[i], vals[i + 1]
        up = (2 * mag > lo + hi) | ((2 * mag == lo + hi) & (codes[i] % 2 == 1))
        r = np.where(up, hi, lo)
        r = np.where(mag >= vals[-1], vals[-1], r)
    r = np.where(r == vals[-1], np.inf if ieee else np.nan, r)
    r = np.where(np.isnan(a), np.nan, r)
    return np.asarray(np.copysign(r, a), dtype=np.float64).reshape(a.shape)


def encode(a, dtype: str) -> np.ndarray:
    """Values already representable in `dtype` -> their uint8 bit patterns
    (NaN as the quiet NaN of its sign)."""
    a = np.asarray(a, dtype=np.float64)
    e, m, _, ieee = FORMATS[dtype]
    codes = np.arange(128)
    vals = decode(codes, dtype)
    if ieee:  # +inf after the finite values, in order
        keep = ~np.isnan(vals)
    else:
        keep = np.isfinite(vals)
    vals, codes = vals[keep], codes[keep]
    mag = np.abs(a)
    with np.errstate(invalid="ignore"):
        i = np.clip(np.searchsorted(vals, mag), 0, len(vals) - 1)
        exact = (vals[i] == mag) | np.isnan(a)
    if not exact.all():
        raise ValueError(f"{a[~exact].reshape(-1)[0]} is not a {dtype} value")
    nan = ((1 << (e + m)) - 1) if not ieee else (((1 << e) - 1) << m) | (1 << (m - 1))
    out = np.where(np.isnan(a), nan, codes[i]) | np.where(np.signbit(a), 0x80, 0)
    return out.astype(np.uint8)
