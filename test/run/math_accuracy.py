#!/usr/bin/env python3
"""Accuracy of the compiled elementwise math functions, in ulps.

Each function of the language that is not exact arithmetic (exp, log, tanh,
erf, sigmoid, silu, gelu, gelu_tanh, softplus, sin, cos, sqrt, rsqrt) is
compiled by `einc run` for f32, f64, f16 and bf16 and run on:

  * f16 and bf16: every one of the 65536 bit patterns;
  * f32: 2^20 random bit patterns (every exponent, subnormals included),
    2^20 points evenly spread over the function's useful domain, and the
    edges: the overflow and underflow thresholds of exp and the floats
    next to them, the smallest and largest subnormals and normals, 1 and
    its neighbours;
  * f64: 2^18 random bit patterns and 2^18 evenly spread points, and the
    same edges;
  * always: +0, -0, +inf, -inf, NaN.

The reference is computed in numpy's longdouble (x87 extended, 64-bit
mantissa) from the input einc actually saw, with math.erf (glibc, double)
for erf; no scipy. The error of a finite result is |got - ref| divided by
the ulp of the dtype at |ref| (the spacing of the dtype's numbers there,
subnormal spacing below the smallest normal). Where the reference rounded
to the dtype is not finite (NaN, an infinity, an overflow), the result must
be that value exactly; at the special inputs (+-0, +-inf, NaN) the result
must equal the reference exactly, zeros by sign.

BOUNDS is the table of docs/lowering.md ("Accuracy of the math functions"):
the maximum error measured on this machine, rounded up a little. Output:
one line per function and dtype, `PASS fn dtype: max N ulp at x=... (bound
B, P points)` or `FAIL ...`, then `math accuracy: N checks, F failures`.
Exits non-zero on a failure.

Usage: math_accuracy.py --einc PATH [--only FN] [--keep DIR]
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

LD = np.longdouble
DTYPES = ("f32", "f64", "f16", "bf16")
# Precision p (mantissa bits, implicit one included) and smallest normal
# exponent of each dtype.
FORMAT = {"f64": (53, -1022), "f32": (24, -126), "f16": (11, -14),
          "bf16": (8, -126)}
_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    return _erf(np.asarray(x, dtype=np.float64)).astype(np.float64).astype(LD)


def sigmoid(x):
    with np.errstate(over="ignore"):
        return LD(1) / (LD(1) + np.exp(-x))


REFERENCE = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "erf": erf,
    "sigmoid": sigmoid,
    "silu": lambda x: x * sigmoid(x),
    "gelu": lambda x: LD(0.5) * x * (LD(1) + erf(x / np.sqrt(LD(2)))),
    "gelu_tanh": lambda x: LD(0.5) * x * (LD(1) + np.tanh(
        np.sqrt(LD(2) / LD(np.pi)) * (x + LD(0.044715) * x * x * x))),
    "softplus": lambda x: np.maximum(x, LD(0)) + np.log1p(np.exp(-np.abs(x))),
    "sin": np.sin,
    "cos": np.cos,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: LD(1) / np.sqrt(x),
}
FUNCTIONS = tuple(REFERENCE)
# Where the function's values change: the evenly spread points lie here.
DOMAIN = {"exp": (-105.0, 90.0), "log": (0.0, 100.0), "tanh": (-10.0, 10.0),
          "erf": (-5.0, 5.0), "sigmoid": (-105.0, 90.0),
          "silu": (-105.0, 90.0), "gelu": (-15.0, 15.0),
          "gelu_tanh": (-15.0, 15.0), "softplus": (-105.0, 90.0),
          "sin": (-100.0, 100.0), "cos": (-100.0, 100.0),
          "sqrt": (0.0, 100.0), "rsqrt": (0.0, 100.0)}

# The composite functions are measured in ulps of max(|ref|, 1): their
# formulas (torch's) cancel or underflow in the tails where the value is
# tiny (1 + erf(x) for x << 0, 1 / (1 + exp(-x)) once exp(-x) overflows),
# whatever the accuracy of exp, erf and tanh, which are measured apart.
FLOOR = {"sigmoid": 1.0, "silu": 1.0, "gelu": 1.0, "gelu_tanh": 1.0,
         "softplus": 1.0}

# Maximum error in ulps, function -> dtype -> bound (docs/lowering.md).
BOUNDS = {
    "exp": {"f32": 2.5, "f64": 1, "f16": 0.51, "bf16": 0.51},
    "log": {"f32": 1, "f64": 1, "f16": 0.51, "bf16": 0.51},
    "tanh": {"f32": 5, "f64": 2.5, "f16": 0.51, "bf16": 0.51},
    "erf": {"f32": 5, "f64": 1, "f16": 0.51, "bf16": 0.51},
    "sigmoid": {"f32": 1, "f64": 1, "f16": 0.51, "bf16": 0.51},
    "silu": {"f32": 2, "f64": 2, "f16": 0.51, "bf16": 0.51},
    "gelu": {"f32": 3.5, "f64": 2, "f16": 0.51, "bf16": 0.51},
    "gelu_tanh": {"f32": 5.5, "f64": 1.5, "f16": 0.51, "bf16": 0.51},
    "softplus": {"f32": 1.5, "f64": 1, "f16": 0.51, "bf16": 0.51},
    "sin": {"f32": 1, "f64": 1, "f16": 0.51, "bf16": 0.51},
    "cos": {"f32": 1, "f64": 1, "f16": 0.51, "bf16": 0.51},
    "sqrt": {"f32": 0.51, "f64": 0.51, "f16": 0.51, "bf16": 0.51},
    "rsqrt": {"f32": 1.5, "f64": 1.5, "f16": 0.51, "bf16": 0.51},
}


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])


def bf16_round(x32: np.ndarray) -> np.ndarray:
    """f32 values rounded to bf16 (nearest even), as f32; NaN stays NaN."""
    bits = x32.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x32), np.float32(np.nan), out)


def to_dtype(x, dtype: str) -> np.ndarray:
    """float64 values rounded to dtype, as the numpy array einc reads."""
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "f64":
            return np.asarray(x, dtype=np.float64)
        if dtype == "f32":
            return np.asarray(x, dtype=np.float32)
        if dtype == "f16":
            return np.asarray(x, dtype=np.float16)
        return bf16_round(np.asarray(x, dtype=np.float32))


def edges(dtype: str) -> np.ndarray:
    """Exponent extremes and the thresholds of exp, in dtype."""
    p, emin = FORMAT[dtype]
    big = {"f64": np.finfo(np.float64).max, "f32": np.finfo(np.float32).max,
           "f16": 65504.0, "bf16": float(bf16_round(np.float32(3.3895e38)))}[dtype]
    pts = [2.0 ** emin, 2.0 ** (emin - p + 1), 2.0 ** emin - 2.0 ** (emin - p + 1),
           big, 1.0, 1.0 + 2.0 ** (1 - p), 1.0 - 2.0 ** -p, 0.5, 2.0, 1e-4]
    # exp overflows past log(max), its result turns subnormal below
    # log(smallest normal) and flushes to 0 below log(smallest subnormal).
    pts += [math.log(big), emin * math.log(2), (emin - p + 1) * math.log(2),
            (emin - p) * math.log(2)]
    x = to_dtype(np.array(pts), dtype).astype(np.float64)
    step = np.float64(2.0 ** -p)
    with np.errstate(over="ignore"):
        near = np.concatenate([x * (1 + k * step) for k in (-2, -1, 1, 2)])
    x = np.concatenate([x, near])
    return to_dtype(np.concatenate([x, -x]), dtype)


def inputs(fn: str, dtype: str, rng) -> np.ndarray:
    if dtype in ("f16", "bf16"):
        bits = np.arange(1 << 16, dtype=np.uint32)
        if dtype == "f16":
            return bits.astype(np.uint16).view(np.float16)
        return (bits << 16).view(np.float32)
    n = 1 << (20 if dtype == "f32" else 18)
    lo, hi = DOMAIN[fn]
    if dtype == "f32":
        random = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        random = rng.integers(0, 1 << 63, n, dtype=np.uint64) | (
            rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63))
        random = random.view(np.float64)
    spread = to_dtype(np.linspace(lo, hi, n), dtype)
    x = np.concatenate([random, spread, edges(dtype), to_dtype(SPECIAL, dtype)])
    return x[~np.isnan(x) | (np.arange(x.size) >= x.size - 1)]  # one NaN


def ulp(ref: np.ndarray, dtype: str) -> np.ndarray:
    p, emin = FORMAT[dtype]
    _, e = np.frexp(np.abs(ref))  # |ref| = m 2^e, m in [0.5, 1)
    e = np.maximum(e.astype(np.int64) - 1, emin)
    return np.ldexp(np.ones(ref.shape, dtype=LD), (e - p + 1).astype(np.int32))


def measure(fn: str, dtype: str, x: np.ndarray, got: np.ndarray):
    """(max ulp error, the input there, a list of problems)."""
    with np.errstate(all="ignore"):
        xl = x.astype(np.float64).astype(LD)
        ref = REFERENCE[fn](xl).astype(LD)
        rounded = to_dtype(ref.astype(np.float64), dtype).astype(np.float64)
    got = got.astype(np.float64)
    problems = []
    special = np.isin(xl.astype(np.float64), SPECIAL) | np.isnan(xl)
    for i in np.flatnonzero(special):
        want = rounded[i]
        same = (np.isnan(want) and np.isnan(got[i])) or (
            want == got[i] and np.signbit(want) == np.signbit(got[i]))
        if not same:
            problems.append(f"{fn}({x[i]}) = {got[i]}, expected {want}")
    exact = ~np.isfinite(rounded)
    bad = exact & ~((np.isnan(rounded) & np.isnan(got)) | (rounded == got))
    for i in np.flatnonzero(bad)[:3]:
        problems.append(f"{fn}({x[i]!r}) = {got[i]}, expected {rounded[i]}")
    finite = ~exact
    nonfinite = finite & ~np.isfinite(got)
    for i in np.flatnonzero(nonfinite)[:3]:
        problems.append(f"{fn}({x[i]!r}) = {got[i]}, expected {float(ref[i])}")
    err = np.zeros(x.size, dtype=LD)
    ok = finite & np.isfinite(got)
    scale = np.maximum(np.abs(ref[ok]), LD(FLOOR.get(fn, 0.0)))
    err[ok] = np.abs(got[ok].astype(LD) - ref[ok]) / ulp(scale, dtype)
    worst = int(np.argmax(err))
    return float(err[worst]), x[worst], problems


def program() -> str:
    lines = []
    for fn in FUNCTIONS:
        for dt in DTYPES:
            lines.append(f'def {fn}_{dt}(x: {dt}["n"]) -> {dt}["n"]:\n'
                         f'    return {fn}(x)\n')
    return "\n".join(lines)


def run(einc: str, work: str, src: str, name: str, x: np.ndarray) -> np.ndarray:
    xin = os.path.join(work, f"{name}.x.npy")
    out = os.path.join(work, f"{name}.out.npy")
    np.save(xin, x)
    cmd = [einc, "run", src, "--fn", name, "--in", f"x={xin}", "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"einc exit {r.returncode}: {r.stderr.strip()[:500]}")
    return np.load(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--only", help="one function")
    ap.add_argument("--keep", help="keep the work files in this directory")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="math-accuracy-")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "math.ein")
    with open(src, "w") as f:
        f.write(program())
    rng = np.random.default_rng(13)
    checks = failures = 0
    for fn in FUNCTIONS:
        if args.only and fn != args.only:
            continue
        for dt in DTYPES:
            checks += 1
            x = inputs(fn, dt, rng)
            try:
                got = run(args.einc, work, src, f"{fn}_{dt}", x)
                worst, at, problems = measure(fn, dt, x, got)
            except RuntimeError as err:
                worst, at, problems = math.inf, None, [str(err)]
            bound = BOUNDS[fn][dt]
            line = (f"{fn} {dt}: max {worst:.3f} ulp at x={float(at)!r} "
                    f"(bound {bound}, {x.size} points)")
            if problems or not worst <= bound:
                failures += 1
                print(f"FAIL {line}" + "".join(f"\n  {p}" for p in problems[:6]))
            else:
                print(f"PASS {line}")
            sys.stdout.flush()
    print(f"math accuracy: {checks} checks, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
