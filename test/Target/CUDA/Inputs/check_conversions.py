"""Compares the CUDA runtime's conversions (EinCUDAConvertDump, the
emulation) with numpy's float16, an exact bf16 rounding written here, and
fp8_reference.py: f32 and f64 edge values narrowed to f16/bf16/e4m3/e5m2,
and every bit pattern of those formats widened to f32."""

import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, sys.argv[2])
import fp8_reference  # noqa: E402


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def bf16_round(x):
    """float64 array -> bf16 bits (NaN excluded), nearest even, by comparing
    the distances to the two neighbours (exact in float64: the neighbours
    share |x|'s binade, so the subtractions do not round)."""
    sign = np.where(np.signbit(x), 0x8000, 0)
    mag = np.abs(x)
    ladder = BF16_VALUES
    i = np.clip(np.searchsorted(ladder, mag, side="right") - 1, 0, len(ladder) - 2)
    lo, hi = ladder[i], ladder[i + 1]
    with np.errstate(invalid="ignore"):
        d_lo, d_hi = mag - lo, hi - mag
    code = np.where(d_lo < d_hi, i, np.where(d_lo > d_hi, i + 1, np.where(i % 2 == 0, i, i + 1)))
    top = ladder[-1]
    half = top + (top - ladder[-2]) / 2
    code = np.where(mag >= top, len(ladder) - 1, code)
    code = np.where(mag >= half, 0x7F80, code)  # the tie goes up: 0x7F7F is odd
    return (sign | code).astype(np.int64)


BF16_VALUES = np.array(
    [struct.unpack("<f", struct.pack("<I", c << 16))[0] for c in range(0x7F80)],
    dtype=np.float64)

values = [0.0, -0.0, float("inf"), float("-inf"), 1.0, 65504.0, 65519.0,
          65520.0, 65536.0, 448.0, 464.0, 465.0, 57344.0, 61440.0,
          3.0e38, 1e-8, 6e-8, 5.96e-8, 2.98e-8, 1e-40, 1e-45, 5e-324]
rng = np.random.default_rng(0)
values += list(rng.standard_normal(3000) * 10.0 ** rng.integers(-9, 6, 3000))
f16_all = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
# every f16 value and the midpoints between neighbours (f32 ties)
fin = np.sort(np.unique(np.abs(f16_all[np.isfinite(f16_all)].astype(np.float64))))
mids = (fin[:-1] + fin[1:]) / 2
values += list(fin[::3]) + list(mids[::2]) + list(-mids[1::2])
values += list(BF16_VALUES[::37]) + list((BF16_VALUES[:-1:41] + BF16_VALUES[1::41]) / 2)

requests = []
for v in values:
    requests.append("F %x" % f32_bits(float(np.float32(v))))
    requests.append("D %x" % f64_bits(v))
for kind, count in (("H", 65536), ("B", 65536), ("E", 256), ("M", 256)):
    requests += ["%s %x" % (kind, b) for b in range(count)]
out = subprocess.run([sys.argv[1]], input="\n".join(requests) + "\n",
                     capture_output=True, text=True, check=True).stdout.split("\n")

failures = 0


def fail(msg):
    global failures
    failures += 1
    if failures <= 20:
        print("MISMATCH:", msg)


def is_nan_bits(bits, exp, man, ieee):
    e = (bits >> man) & ((1 << exp) - 1)
    m = bits & ((1 << man) - 1)
    return e == (1 << exp) - 1 and (m != 0 if ieee else m == (1 << man) - 1)


line = 0
got = np.array([[int(t, 16) for t in out[i].split()] for i in range(2 * len(values))])
line = 2 * len(values)
for k, source in enumerate(("f32", "f64")):
    x = np.array([float(np.float32(v)) if source == "f32" else v for v in values])
    keep = ~np.isnan(x)
    x, g = x[keep], got[k::2][keep]
    with np.errstate(over="ignore"):  # numpy rounds once from either source
        want = {"f16": (x.astype(np.float32) if source == "f32" else x).astype(np.float16).view(np.uint16).astype(np.int64),
                "bf16": bf16_round(x)}
    for name in ("f8e4m3", "f8e5m2"):
        want[name] = fp8_reference.encode(fp8_reference.round_fp8(x, name), name).astype(np.int64)
    for col, name in enumerate(("f16", "bf16", "f8e4m3", "f8e5m2")):
        for j in np.nonzero(g[:, col] != want[name])[0]:
            fail(f"{source} {x[j]!r} -> {name} {g[j, col]:x}, expected {want[name][j]:x}")

formats = {"H": (5, 10, True), "B": (8, 7, True), "E": (4, 3, False), "M": (5, 2, True)}
for kind, count in (("H", 65536), ("B", 65536), ("E", 256), ("M", 256)):
    exp, man, ieee = formats[kind]
    for b in range(count):
        got = struct.unpack("<f", struct.pack("<I", int(out[line], 16)))[0]
        line += 1
        if kind == "H":
            want = float(np.array([b], np.uint16).view(np.float16)[0])
        elif kind == "B":
            want = struct.unpack("<f", struct.pack("<I", b << 16))[0]
        else:
            want = float(fp8_reference.decode([b], "f8e4m3" if kind == "E" else "f8e5m2")[0])
        if is_nan_bits(b, exp, man, ieee):
            if not np.isnan(got) or np.signbit(got) != bool(b >> (exp + man)):
                fail(f"{kind} {b:x} -> {got!r}, expected a NaN of the same sign")
        elif got != want or np.signbit(got) != np.signbit(want):
            fail(f"{kind} {b:x} -> {got!r}, expected {want!r}")

if failures:
    print(f"{failures} mismatches")
    sys.exit(1)
print(f"all conversions agree ({len(values) * 2} narrowings, {line - len(values) * 2} widenings)")
