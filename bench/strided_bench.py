#!/usr/bin/env python3
"""Strided views through `einc build`: the size-generic object of
bench/workloads.ein called from Python (ctypes) on numpy views, side by side
with numpy on the same views, in one run.

  python3 bench/strided_bench.py --einc build/bin/einc [--quick] [--markdown]

Workloads: `b s (h d) -> b h s d` on a slice with step 2 along s (numpy:
reshape + transpose + copy of the same view); the 2048^3 matmul with A
contiguous, A transposed in memory (a Fortran-order view, strides (1, m))
and B transposed, timed against the contiguous call of the same object.
Results are checked against numpy. Compilation is not timed.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

from run_bench import median_time  # the same timing rule as run_bench.py

HERE = os.path.dirname(os.path.abspath(__file__))


def build(einc, tmp):
    obj, header = os.path.join(tmp, "w.o"), os.path.join(tmp, "w.h")
    subprocess.run([einc, "build", os.path.join(HERE, "workloads.ein"), "-o", obj,
                    "--header", header], check=True)
    # Non-inline wrappers of the header's entry points, for ctypes.
    wrapper = os.path.join(tmp, "wrap.c")
    with open(wrapper, "w") as f:
        f.write('#include "w.h"\n')
        for name, tensors in (("split_heads", ("x", "y")), ("matmul", ("a", "b", "c"))):
            params = ", ".join(f"{'const ' if t != tensors[-1] else ''}float *{t}, int64_t {t}r,"
                               f" const int64_t *{t}s, const int64_t *{t}t" for t in tensors)
            args = ", ".join(f"{t}, {t}r, {t}s, {t}t" for t in tensors)
            f.write(f"int {name}({params}) {{ return ein_{name}({args}); }}\n")
    lib = os.path.join(tmp, "libw.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I", tmp, wrapper, obj, "-o", lib,
                    "-L/usr/lib/llvm-19/lib", "-Wl,-rpath,/usr/lib/llvm-19/lib",
                    "-lomp", "-lm"], check=True)
    return ctypes.CDLL(lib)


def view_args(a):
    """(data, rank, sizes, strides in elements) of a numpy view."""
    sizes = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    strides = (ctypes.c_int64 * max(a.ndim, 1))(*(s // a.itemsize for s in a.strides))
    return [ctypes.c_void_p(a.ctypes.data), ctypes.c_int64(a.ndim), sizes, strides]


def call(fn, *arrays):
    args = []
    for a in arrays:
        args += view_args(a)
    rc = fn(*args)
    if rc != 0:
        raise RuntimeError(f"{fn.__name__} returned {rc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(args.einc, tmp)
        # b s (h d) -> b h s d on every other s of a larger buffer.
        b, s, hd = (4, 256, 1024) if args.quick else (16, 1024, 1024)
        big = rng.standard_normal((b, 2 * s, hd), dtype=np.float32)
        x = big[:, ::2, :]
        y = np.empty((b, 16, s, hd // 16), np.float32)
        ref = lambda: np.ascontiguousarray(
            x.reshape(b, s, 16, hd // 16).transpose(0, 2, 1, 3))
        t_ein = median_time(lambda: call(lib.split_heads, x, y))
        t_np = median_time(ref)
        err = float(np.max(np.abs(y - ref())))
        rows.append(("b s (h d) -> b h s d, x[:, ::2, :] %s" % (x.shape,),
                     "numpy reshape+transpose+copy of the view", t_ein, t_np,
                     t_np / t_ein, err))
        # The matmul object on contiguous and transposed operands.
        n = 512 if args.quick else 2048
        a = rng.standard_normal((n, n), dtype=np.float32)
        bm = rng.standard_normal((n, n), dtype=np.float32)
        c = np.empty((n, n), np.float32)
        expected = a @ bm
        t_contig = median_time(lambda: call(lib.matmul, a, bm, c))
        err = float(np.max(np.abs(c - expected)) / np.max(np.abs(expected)))
        for label, av, bv in (("A Fortran-order (strides (1, m))", np.asfortranarray(a), bm),
                              ("B transposed view (strides (1, k))", a, np.asfortranarray(bm))):
            t = median_time(lambda: call(lib.matmul, av, bv, c))
            e = float(np.max(np.abs(c - expected)) / np.max(np.abs(expected)))
            rows.append(("matmul %d^3, %s" % (n, label), "the same object, contiguous",
                         t, t_contig, t_contig / t, max(e, err)))
    header = ("workload", "peer", "einc ms", "peer ms", "einc/peer", "max err")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
    for (title, peer, te, tp, ratio, err) in rows:
        cells = (title, peer, "%.3f" % (te * 1e3), "%.3f" % (tp * 1e3),
                 "%.2fx" % ratio, "%.1e" % err)
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))
    if any(r[5] > 1e-3 for r in rows):
        print("result mismatch against numpy")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
