#!/usr/bin/env python3
"""f32 GEMMs on one core against OpenBLAS (numpy), in thread CPU time: robust
when other processes load the machine, where wall-clock medians of 2-thread
runs are not. Each einc given (`--einc`, and `--base` to compare builds) is
compiled with `einc build` for the sizes into a shared library called
through ctypes; OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1, so both run on the
calling thread and `time.thread_time` counts only their own work. ein and
numpy alternate call by call; the table gives the medians and
OpenBLAS time / ein time (> 1: ein faster). Results are checked against
numpy.

  python3 bench/gemm_one_core.py --einc build/bin/einc [--base OTHER_EINC]
      [--reps 5] [--only sq:matmul,rag:matmul_at,...]
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse
import ctypes
import statistics
import subprocess
import tempfile
import time

import numpy as np

SHAPES = {"sq": (2048, 2048, 2048), "rag": (1000, 1001, 999)}
# name: (einsum, A's axes, B's axes)
LAYOUTS = {"matmul": ("m k, k n -> m n", "m k", "k n"),
           "matmul_at": ("k m, k n -> m n", "k m", "k n"),
           "matmul_bt": ("m k, n k -> m n", "m k", "n k")}


def build(einc, tmp, tag, fn, m, k, n):
    """A shared library with `run(a, b, c)` calling ein's `fn` on contiguous
    arrays of the given sizes."""
    pattern, xa, ya = LAYOUTS[fn]
    src = os.path.join(tmp, f"{fn}.ein")
    with open(src, "w") as f:
        f.write(f'def {fn}(a: f32["{xa}"], b: f32["{ya}"]) -> f32["m n"]:\n'
                f'    return einsum(a, b, "{pattern}")\n')
    stem = os.path.join(tmp, f"{tag}_{fn}_{m}")
    subprocess.check_call([einc, "build", src, "-o", stem + ".o", "--header", stem + ".h",
                           "--dim", f"m={m}", "--dim", f"k={k}", "--dim", f"n={n}"])
    size = {"m": m, "k": k, "n": n}
    dims = lambda axes: [size[d] for d in axes.split()]
    (a0, a1), (b0, b1) = dims(xa), dims(ya)
    with open(stem + ".c", "w") as f:
        f.write(f'#include "{stem}.h"\n'
                "int run(const float *a, const float *b, float *c) {\n"
                f"  int64_t as[2] = {{{a0}, {a1}}}, ast[2] = {{{a1}, 1}};\n"
                f"  int64_t bs[2] = {{{b0}, {b1}}}, bst[2] = {{{b1}, 1}};\n"
                f"  int64_t cs[2] = {{{m}, {n}}}, cst[2] = {{{n}, 1}};\n"
                f"  return ein_{fn}(a, 2, as, ast, b, 2, bs, bst, c, 2, cs, cst);\n}}\n")
    subprocess.check_call(["clang", "-O2", "-shared", "-fPIC", "-o", stem + ".so", stem + ".c",
                           stem + ".o", "-L/usr/lib/llvm-19/lib", "-lomp",
                           "-Wl,-rpath,/usr/lib/llvm-19/lib"])
    return ctypes.CDLL(stem + ".so").run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--base", help="another einc, timed alongside")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=",".join(f"{s}:{f}" for f in LAYOUTS for s in SHAPES))
    args = ap.parse_args()
    builds = [("einc", args.einc)] + ([("base", args.base)] if args.base else [])
    rng = np.random.default_rng(0)
    print("shape  layout  build  ein GFLOP/s  OpenBLAS GFLOP/s  OpenBLAS/ein")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.only.split(","):
            shape, fn = case.split(":")
            m, k, n = SHAPES[shape]
            a = rng.standard_normal((m, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            x = np.ascontiguousarray(a.T) if fn == "matmul_at" else a
            y = np.ascontiguousarray(b.T) if fn == "matmul_bt" else b
            peer = {"matmul": lambda: a @ b, "matmul_at": lambda: x.T @ b,
                    "matmul_bt": lambda: a @ y.T}[fn]
            c = np.zeros((m, n), np.float32)
            p = ctypes.c_void_p
            for tag, einc in builds:
                run = build(einc, tmp, tag, fn, m, k, n)
                call = lambda: run(p(x.ctypes.data), p(y.ctypes.data), p(c.ctypes.data))
                if call() != 0:
                    raise SystemExit(f"{tag}: ein_{fn} failed")
                expected = peer()
                err = float(np.max(np.abs(c - expected)) / np.max(np.abs(expected)))
                if err > 1e-4:
                    raise SystemExit(f"{tag} {case}: relative error {err:.1e}")
                te, tp = [], []
                for _ in range(args.reps):
                    t0 = time.thread_time(); call(); te.append(time.thread_time() - t0)
                    t0 = time.thread_time(); peer(); tp.append(time.thread_time() - t0)
                flop = 2.0 * m * k * n
                e, o = statistics.median(te), statistics.median(tp)
                print(f"{m}x{k}x{n}  {LAYOUTS[fn][0]}  {tag}  {flop / e / 1e9:.1f}  "
                      f"{flop / o / 1e9:.1f}  {o / e:.3f}x", flush=True)


if __name__ == "__main__":
    main()
