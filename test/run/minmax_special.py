#!/usr/bin/env python3
"""max/min reductions (ein-min-max-reductions) on NaN, +-inf and +-0.

Rows of random values of several lengths (1 to 1000, vector tails
included) get NaNs of both signs, infinities and zeros of both signs at
random places; `reduce(x, "a b -> a", "max")` and `min` (last axis) and
`"a b -> b"` (first axis) are compiled for f32, f64, f16 and bf16, size
specialised and size generic, and compared bit for bit with an oracle
written here from IEEE 754-2019 maximum/minimum (any NaN gives NaN; -0 <
+0), and by value with torch.amax/amin (torch returns either zero of
+-0 ties, whichever comes first, so zero signs are only compared with the
oracle).

Output: one line per check, `PASS name` or `FAIL name: ...`, then
`minmax special: N checks, F failures`.

Usage: minmax_special.py --einc PATH
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = ("f32", "f64", "f16", "bf16")


def program() -> str:
    out = []
    for dt in DTYPES:
        for op in ("max", "min"):
            out.append(f'def {op}_last_{dt}(x: {dt}["a b"]) -> {dt}["a"]:\n'
                       f'    return reduce(x, "a b -> a", "{op}")\n')
            out.append(f'def {op}_first_{dt}(x: {dt}["a b"]) -> {dt}["b"]:\n'
                       f'    return reduce(x, "a b -> b", "{op}")\n')
    return "\n".join(out)


def ieee(values, is_max: bool) -> float:
    """IEEE 754-2019 maximum / minimum of a sequence (float64 values)."""
    best = None
    for v in values:
        if np.isnan(v):
            return float("nan")
        if best is None:
            best = v
        elif v == best and v == 0:
            # -0 < +0
            if is_max and not np.signbit(v):
                best = v
            if not is_max and np.signbit(v):
                best = v
        elif (v > best) == is_max and v != best:
            best = v
    return best


def bf16_exact(x: np.ndarray) -> np.ndarray:
    """f32 values cut to bf16 (their low 16 bits cleared: exact bf16)."""
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def matrix(rng, rows: int, n: int, dt: str) -> np.ndarray:
    x = rng.standard_normal((rows, n)) * 100
    specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]
    for r in range(rows):
        kind = r % 8
        picks = {0: [], 1: [np.nan], 2: [-np.nan], 3: [np.inf], 4: [-np.inf],
                 5: [0.0, -0.0], 6: [np.inf, -np.inf, -np.nan],
                 7: list(rng.choice(specials, 3))}[kind]
        for v in picks:
            x[r, rng.integers(0, n)] = v
        if kind == 5:  # a row of zeros of both signs only
            x[r] = np.where(rng.integers(0, 2, n) == 1, 0.0, -0.0)
            if n > 1:
                x[r, 0], x[r, -1] = -0.0, 0.0
    if dt == "f64":
        return x
    x32 = x.astype(np.float32)
    # -nan keeps its sign through astype; make sure of it.
    x32[np.isnan(x) & np.signbit(x)] = -np.float32(np.nan)
    if dt == "f16":
        return x32.astype(np.float16)
    if dt == "bf16":
        return bf16_exact(x32)
    return x32


def same(got: float, want: float) -> bool:
    if np.isnan(want):
        return bool(np.isnan(got))
    return got == want and np.signbit(got) == np.signbit(want)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    work = tempfile.mkdtemp(prefix="minmax-special-")
    src = os.path.join(work, "m.ein")
    with open(src, "w") as f:
        f.write(program())
    rng = np.random.default_rng(7)
    checks = failures = 0
    for dt in DTYPES:
        for n in (1, 7, 8, 9, 33, 1000):
            x = matrix(rng, 24, n, dt)
            xin = os.path.join(work, f"x_{dt}_{n}.npy")
            np.save(xin, x)
            xs = x.astype(np.float64)
            for op in ("max", "min"):
                for axis, name in ((1, "last"), (0, "first")):
                    for generic in (False, True):
                        checks += 1
                        fn = f"{op}_{name}_{dt}"
                        label = f"{fn} n={n}{' size-generic' if generic else ''}"
                        out = os.path.join(work, "out.npy")
                        cmd = [args.einc, "run", src, "--fn", fn, "--in",
                               f"x={xin}", "--out", out]
                        if generic:
                            cmd.append("--size-generic")
                        r = subprocess.run(cmd, capture_output=True, text=True)
                        if r.returncode != 0:
                            failures += 1
                            print(f"FAIL {label}: {r.stderr.strip()[:300]}")
                            continue
                        got = np.load(out).astype(np.float64)
                        lines = xs if axis == 1 else xs.T
                        want = [ieee(v, op == "max") for v in lines]
                        bad = [i for i, (g, w) in enumerate(zip(got, want))
                               if not same(g, w)]
                        if torch is not None:
                            t = torch.from_numpy(xs)
                            tw = (torch.amax if op == "max" else torch.amin)(t, axis).numpy()
                            bad += [i for i, (g, w) in enumerate(zip(got, tw))
                                    if not ((np.isnan(g) and np.isnan(w)) or g == w)]
                        if bad:
                            failures += 1
                            i = bad[0]
                            print(f"FAIL {label}: line {i}: got {got[i]!r}, "
                                  f"expected {want[i]!r} ({list(lines[i][:12])})")
                        else:
                            print(f"PASS {label}")
    print(f"minmax special: {checks} checks, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
