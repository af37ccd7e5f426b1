"""Inputs and oracle for astype-saturate.ein: float -> int rounds toward zero
and saturates, NaN -> 0, computed with Python integers (not numpy's astype,
whose result is undefined out of range)."""
import math
import sys

import numpy as np


def values(dtype):
    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 0.5, -0.5, 1.99, -1.99, 1e3, -1e3, np.nan, np.inf,
               -np.inf, 2.0**31, -2.0**31, 2.0**31 - 1, -2.0**31 - 1,
               2.0**31 + 0.5, 2.0**63, -2.0**63, 2.0**63 - 1024, 1e30, -1e30,
               65504.0, -65504.0]
    x = rng.normal(0, 1e9, 1000)
    idx = rng.choice(1000, len(special), replace=False)
    x[idx] = special
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def expected(x, bits):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    out = []
    for v in x.astype(np.float64):
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(hi if v > 0 else lo)
        else:
            out.append(min(max(math.trunc(v), lo), hi))
    return out


def main():
    mode, d = sys.argv[1], sys.argv[2]
    kinds = {"f64": np.float64, "f32": np.float32, "f16": np.float16}
    if mode == "make":
        for name, t in kinds.items():
            np.save(f"{d}/{name}.npy", values(t))
        return
    for name, bits in [("f64_i32", 32), ("f64_i64", 64), ("f32_i32", 32),
                       ("f32_i64", 64), ("f16_i32", 32)]:
        x = np.load(f"{d}/{name[:3]}.npy")
        got = np.load(f"{d}/{name}.npy")
        assert got.dtype == np.dtype(f"int{bits}"), got.dtype
        want = expected(x, bits)
        bad = [(i, float(x[i]), int(got[i]), want[i])
               for i in range(len(want)) if int(got[i]) != want[i]]
        assert not bad, f"{name}: {bad[:5]}"
        print(name, "ok")


main()
