#!/usr/bin/env python3
"""Runs `einc run` on Fortran-ordered .npy inputs and compares with numpy.

Used by run-fortran.test. Every input is saved with np.save from
np.asfortranarray(...) (the script checks that the file says
fortran_order: True), each case runs with and without --size-generic, and
each output file must be byte for byte what np.save writes for numpy's
result in C order: the same header (fortran_order: False), dtype, shape and
values. Inputs are small integers, so every sum is exact and the results can
be compared exactly.

  run_fortran.py EINC FILE.ein WORKDIR

Prints `ok CASE MODE` per run, `FAIL CASE MODE: why` for a failure, and a
summary line `run-fortran: N runs, M failures`.
"""

import io
import os
import subprocess
import sys

import numpy as np

rng = np.random.default_rng(20261123)


def ints(shape, dtype=np.float32, lo=-3, hi=4):
    return rng.integers(lo, hi, size=shape).astype(dtype)


def npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def fortran_order(path):
    """The file's fortran_order flag, as numpy reads it."""
    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read = (np.lib.format.read_array_header_1_0 if major == 1 else
                np.lib.format.read_array_header_2_0)
        return read(f)[1]


class F:
    """An input to save in Fortran order: np.save(np.asfortranarray(a)),
    which writes fortran_order True; arrays that are C-contiguous as well
    (one dim > 1, or empty), which np.save writes in C order, are written by
    hand with numpy's own header writer and fortran_order True."""

    def __init__(self, a):
        self.a = np.asfortranarray(a)


def f_(a):
    return F(a)


def save(path, arr):
    if not isinstance(arr, F):
        np.save(path, arr)
        return
    a = arr.a
    if not a.flags.c_contiguous:
        np.save(path, a)
    else:
        d = np.lib.format.header_data_from_array_1_0(a)
        d["fortran_order"] = True
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, d)
            f.write(a.tobytes(order="F"))
    if not fortran_order(path):
        raise SystemExit(f"{path} is not saved in Fortran order")


# The result dtype of each function of run-fortran.ein (f32 otherwise).
RESULT_DTYPE = {"batched": np.float64, "isum": np.int64}


def cases():
    """(name, function, {param: array as saved}, [expected results])."""
    out = []

    x, w = ints((3, 4)), ints((4, 5))
    out.append(("matmul-small", "matmul", {"x": f_(x), "w": f_(w)}, [x @ w]))
    # Sizes that are not multiples of any tile: the packed micro-kernel path.
    x, w = ints((67, 131)), ints((131, 45))
    out.append(("matmul-tiled", "matmul", {"x": f_(x), "w": f_(w)}, [x @ w]))
    # One Fortran operand, one C operand.
    out.append(("matmul-mixed", "matmul", {"x": f_(x), "w": w}, [x @ w]))
    # f64 files for f32 parameters: converted on reading, layout kept.
    out.append(("matmul-f64-file", "matmul",
                {"x": f_(x.astype(np.float64)), "w": f_(w.astype(np.float64))},
                [x @ w]))
    # A single row: Fortran strides (1, 1).
    x1 = ints((1, 7))
    w1 = ints((7, 3))
    out.append(("matmul-row", "matmul", {"x": f_(x1), "w": f_(w1)}, [x1 @ w1]))
    # Empty contraction axis: zeros.
    out.append(("matmul-empty-k", "matmul",
                {"x": f_(ints((3, 0))), "w": f_(ints((0, 2)))},
                [np.zeros((3, 2), np.float32)]))

    a, c = ints((3, 5, 6), np.float64), ints((3, 6, 4), np.float64)
    out.append(("einsum-batched", "batched", {"a": f_(a), "c": f_(c)},
                [np.einsum("bnk,bkm->bmn", a, c)]))

    t = ints((2, 3, 4))
    out.append(("rearrange-permute", "permute", {"x": f_(t)},
                [t.transpose(2, 0, 1).reshape(4, 6)]))
    out.append(("rearrange-merge", "merge", {"x": f_(t)}, [t.reshape(6, 4)]))
    s = ints((6, 5))
    out.append(("rearrange-split", "split", {"x": f_(s)},
                [s.reshape(2, 3, 5).transpose(2, 0, 1)]))

    r = ints((5, 33, 7))
    out.append(("reduce", "sums", {"x": f_(r)},
                [r.sum(axis=(0, 2)), r.max(axis=1), r.sum(axis=2)]))
    big = ints((130, 70))
    out.append(("reduce-leading-sum", "sums", {"x": f_(big[:, :, None])},
                [big.sum(axis=0), big.max(axis=1)[:, None], big]))
    i = rng.integers(-2**40, 2**40, size=(9, 11)).astype(np.int64)
    out.append(("reduce-i64", "isum", {"x": f_(i)}, [i.sum(axis=0)]))

    x, y, b = ints((9, 13)), ints((9, 13)), ints((13,))
    out.append(("elementwise", "affine", {"x": f_(x), "y": f_(y), "b": b},
                [x * y + b - x / 4]))
    out.append(("elementwise-mixed", "affine", {"x": f_(x), "y": y, "b": b},
                [x * y + b - x / 4]))
    out.append(("identity", "identity", {"x": f_(x)}, [x]))
    return out


def main():
    einc, ein, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    runs = failures = 0
    for name, fn, inputs, expected in cases():
        args = []
        for param, arr in inputs.items():
            path = os.path.join(work, f"{name}-{param}.npy")
            save(path, arr)
            args += ["--in", f"{param}={path}"]
        outs = [os.path.join(work, f"{name}-out{k}.npy")
                for k in range(len(expected))]
        for mode in ([], ["--size-generic"]):
            runs += 1
            label = f"{name} {'size-generic' if mode else 'static'}"
            for o in outs:
                if os.path.exists(o):
                    os.remove(o)
            cmd = [einc, "run", ein, "--fn", fn] + args + mode
            for o in outs:
                cmd += ["--out", o]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"FAIL {label}: exit {proc.returncode}: "
                      f"{proc.stderr.strip()}")
                failures += 1
                continue
            why = []
            for k, (o, ref) in enumerate(zip(outs, expected)):
                dtype = RESULT_DTYPE.get(fn, np.float32)
                want = npy_bytes(np.ascontiguousarray(ref.astype(dtype)))
                with open(o, "rb") as f:
                    got = f.read()
                if fortran_order(o):
                    why.append(f"output {k} is written in Fortran order")
                if got != want:
                    arr = np.load(o)
                    why.append(f"output {k} differs from numpy: got "
                               f"{arr.dtype}{arr.shape} {arr.ravel()[:8]}, "
                               f"want {ref.dtype}{ref.shape} "
                               f"{ref.ravel()[:8]}")
            if why:
                print(f"FAIL {label}: " + "; ".join(why))
                failures += 1
            else:
                print(f"ok {label}")
    print(f"run-fortran: {runs} runs, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
