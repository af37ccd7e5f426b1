#!/usr/bin/env python3
"""Compiled fp8 conversions and arithmetic, checked bit for bit.

Runs `einc run` on small functions that convert to and from f8e4m3 and
f8e5m2 and compute on them, and compares every output with fp8_reference.py
(fp8 values decoded from first principles, exact round-to-nearest-even):

  * fp8 -> f32, f64, f16, bf16: all 256 bit patterns of each format;
  * f16, bf16 -> fp8: all 65536 bit patterns;
  * f32 -> fp8: every fp8 value, every midpoint between neighbours, the
    floats just above and below each, both signs, infinities, NaN, and 2^20
    random f32 bit patterns;
  * f64 -> fp8: the same points, plus points 2^-40 away from each midpoint
    (rounding through f32 would land on the midpoint and round the wrong
    way), and 2^18 random f64 bit patterns;
  * e4m3 <-> e5m2: all 256 patterns;
  * x + y, x * y, x / y, -x for all 65536 pairs of each format: the exact
    result rounded once (einc computes in f32, wide enough for that).

fp8 inputs are raw |u1 bit patterns; fp8 results come back as f32 files
(exact). Values are compared bit for bit (NaN with NaN, zeros by sign). When
ml_dtypes is installed, the reference is also checked against it on the f32
inputs and the 256 bit patterns.

Output: one line per check, `PASS name (N values)` or `FAIL name: ...`,
then `fp8 rounding: N checks, F failures`. Exits non-zero on a failure.

Usage: fp8_rounding.py --einc PATH [--keep DIR]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fp8_reference import FORMATS, decode, ladder, round_fp8  # noqa: E402

FP8 = tuple(FORMATS)

PROGRAM = "\n".join(
    [f'def {src}_to_{dst}(x: {src}["n"]) -> {dst}["n"]:\n    return astype(x, {dst})\n'
     for src in ("f32", "f64", "f16", "bf16") for dst in FP8]
    + [f'def {src}_to_{dst}(x: {src}["n"]) -> {dst}["n"]:\n    return astype(x, {dst})\n'
       for src in FP8 for dst in ("f32", "f64", "f16", "bf16") + FP8 if src != dst]
    + [f'def {name}_{dt}(x: {dt}["n"], y: {dt}["n"]) -> {dt}["n"]:\n    return x {op} y\n'
       for dt in FP8 for name, op in (("add", "+"), ("mul", "*"), ("div", "/"))]
    + [f'def neg_{dt}(x: {dt}["n"]) -> {dt}["n"]:\n    return -x\n' for dt in FP8])


def same_bits(got: np.ndarray, want: np.ndarray):
    """None when equal value for value (NaN matches NaN, zeros by sign)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs widen with a warning
        got = np.asarray(got, dtype=np.float64).reshape(-1)
        want = np.asarray(want, dtype=np.float64).reshape(-1)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    nan = np.isnan(want)
    bad = (np.isnan(got) != nan) | (~nan & ((got != want) | (np.signbit(got) != np.signbit(want))))
    if not bad.any():
        return None
    k = np.nonzero(bad)[0]
    return f"{len(k)} values differ, first at {k[0]}: got {got[k[0]]!r}, expected {want[k[0]]!r}"


def points(dtype: str) -> np.ndarray:
    """Every fp8 value, every midpoint, both signs, specials (float64)."""
    v = ladder(dtype)[0]  # finite values, then one step past the largest
    mids = (v[:-1] + v[1:]) / 2
    p = np.concatenate([v, mids, [np.inf, np.nan, 1e-30, 2.0**-149]])
    return np.concatenate([p, -p])


class Runner:
    def __init__(self, einc: str, work: str):
        self.einc, self.work = einc, work
        self.src = os.path.join(work, "fp8.ein")
        with open(self.src, "w") as f:
            f.write(PROGRAM)
        self.checks, self.failures = 0, 0

    def run(self, fn: str, *inputs: np.ndarray) -> np.ndarray:
        out = os.path.join(self.work, f"{fn}.out.npy")
        cmd = [self.einc, "run", self.src, "--fn", fn, "--out", out]
        for name, arr in zip("xy", inputs):
            path = os.path.join(self.work, f"{fn}.{name}.npy")
            np.save(path, arr)
            cmd += ["--in", f"{name}={path}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"einc exit {r.returncode}: {r.stderr.strip()[:500]}")
        return np.load(out)

    def check(self, name: str, fn: str, inputs, want) -> None:
        self.checks += 1
        try:
            got = self.run(fn, *inputs)
            problem = same_bits(got, want)
        except RuntimeError as err:
            problem = str(err)
        if problem:
            self.failures += 1
            print(f"FAIL {name}: {problem}")
        else:
            print(f"PASS {name} ({np.asarray(want).size} values)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--einc", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    rng = np.random.default_rng(8)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        r = Runner(args.einc, work)
        bits = np.arange(256, dtype=np.uint8)
        half_bits = np.arange(65536, dtype=np.uint16)
        rand32 = rng.integers(0, 2**32, size=1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
        rand64 = rng.integers(0, 2**63, size=1 << 18, dtype=np.uint64).view(np.float64)
        rand64 = np.concatenate([rand64, -rand64])
        for dt in FP8:
            values = decode(bits, dt)
            r.check(f"{dt} -> f32, all 256", f"{dt}_to_f32", [bits], values)
            r.check(f"{dt} -> f64, all 256", f"{dt}_to_f64", [bits], values)
            r.check(f"{dt} -> f16, all 256", f"{dt}_to_f16", [bits], values)
            r.check(f"{dt} -> bf16, all 256", f"{dt}_to_bf16", [bits], values)
            other = [o for o in FP8 if o != dt][0]
            r.check(f"{dt} -> {other}, all 256", f"{dt}_to_{other}", [bits], round_fp8(values, other))

            p = points(dt)
            p32 = p.astype(np.float32)
            x32 = np.concatenate([p32, np.nextafter(p32, np.float32(np.inf)),
                                  np.nextafter(p32, np.float32(-np.inf)), rand32])
            r.check(f"f32 -> {dt}", f"f32_to_{dt}", [x32], round_fp8(x32, dt))
            x64 = np.concatenate([p, np.nextafter(p, np.inf), np.nextafter(p, -np.inf),
                                  p * (1 + 2.0**-40), p * (1 - 2.0**-40), rand64, [5e-324]])
            r.check(f"f64 -> {dt} (one rounding)", f"f64_to_{dt}", [x64], round_fp8(x64, dt))
            f16 = half_bits.view(np.float16)
            r.check(f"f16 -> {dt}, all 65536", f"f16_to_{dt}", [f16], round_fp8(f16, dt))
            bf16 = (half_bits.astype(np.uint32) << 16).view(np.float32)
            r.check(f"bf16 -> {dt}, all 65536", f"bf16_to_{dt}", [half_bits], round_fp8(bf16, dt))

            xs, ys = np.meshgrid(bits, bits, indexing="ij")
            xs, ys = xs.reshape(-1), ys.reshape(-1)
            xv, yv = decode(xs, dt), decode(ys, dt)
            with np.errstate(all="ignore"):
                for op, ref in (("add", xv + yv), ("mul", xv * yv), ("div", xv / yv)):
                    r.check(f"{dt} x {op} y, all pairs", f"{op}_{dt}", [xs, ys], round_fp8(ref, dt))
            r.check(f"-{dt}, all 256", f"neg_{dt}", [bits], -decode(bits, dt))

        try:
            import ml_dtypes
        except ImportError:
            ml_dtypes = None
        if ml_dtypes is not None:
            for dt, md in (("f8e4m3", ml_dtypes.float8_e4m3fn), ("f8e5m2", ml_dtypes.float8_e5m2)):
                r.checks += 1
                with np.errstate(invalid="ignore", over="ignore"):
                    problem = same_bits(round_fp8(rand32, dt), rand32.astype(md).astype(np.float64)) or \
                        same_bits(decode(bits, dt), bits.view(md).astype(np.float64))
                if problem:
                    r.failures += 1
                    print(f"FAIL reference {dt} vs ml_dtypes: {problem}")
                else:
                    print(f"PASS reference {dt} agrees with ml_dtypes")
        print(f"fp8 rounding: {r.checks} checks, {r.failures} failures")
        return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
