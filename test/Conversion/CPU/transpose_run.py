#!/usr/bin/env python3
"""Runs transposing copies (rearrange / repeat whose output's contiguous axis
is not the input's, tiled by ein-tile-transposes) through einc and checks
every result against numpy.

Two parts:

  run    `einc run`, size-specialised and `--size-generic`, on contiguous
         inputs of many shapes: odd, powers of two, sizes below, at and
         above the register tile (8) and the cache block (64), 1-element
         axes; dtypes f32, f64, f16, i32, i64, bool (bool and 64-bit types
         take other tile sizes or the fallback loops).
  views  the size-generic object of `einc build` called through ctypes on
         numpy views (sizes and strides known only at run time): offsets,
         steps along the contiguous axis (the run-time unit-stride check
         fails: strided loops), steps along other axes, stride 0
         (broadcast inputs), transposed inputs, and an output that is a view
         of a larger buffer (elements outside it must stay untouched); merged
         outputs also into a view with a step along its last axis.

Also merged outputs (`b s (h d)`, `(c h) w`, `b (h w) c`), which write a split
view of the output (ein-merged-outputs-in-place), transposed or not.

Values are small integers, exact in every dtype: results must match
exactly. Output: `PASS part case` or `FAIL part case: ...`, then
`transpose-run: N checks, F failures`; exits non-zero on a failure.

Usage: transpose_run.py --einc einc [--cc cc] [--lib-dir LLVM_LIB_DIR]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
          "i32": np.int32, "i64": np.int64, "bool": np.bool_}

# name -> (signature in, signature out, body, numpy reference)
FUNCTIONS = {
    "t2": ("m n", "n m", 'rearrange(x, "m n -> n m")', lambda x: x.T),
    "bhwc": ("b h w c", "b c h w", 'rearrange(x, "b h w c -> b c h w")',
             lambda x: x.transpose(0, 3, 1, 2)),
    "cab": ("a b c", "c a b", 'rearrange(x, "a b c -> c a b")',
            lambda x: x.transpose(2, 0, 1)),
    "cba": ("a b c", "c b a", 'rearrange(x, "a b c -> c b a")',
            lambda x: x.transpose(2, 1, 0)),
    "bca": ("a b c", "b c a", 'rearrange(x, "a b c -> b c a")',
            lambda x: x.transpose(1, 2, 0)),
    # Not a transpose (the last axis stays last): must stay correct.
    "shd": ("b s h d", "b h s d", 'rearrange(x, "b s h d -> b h s d")',
            lambda x: x.transpose(0, 2, 1, 3)),
    # A transpose with a broadcast axis between.
    "rep": ("h w", "w r h", 'repeat(x, "h w -> w r h", r=3)',
            lambda x: np.broadcast_to(x.T[:, None, :], (x.shape[1], 3, x.shape[0]))),
    # Merged outputs, written through a split view of the output
    # (ein-merged-outputs-in-place): not a transpose, a repeat, a transpose.
    "mrg": ("b h s d", "b s h*d", 'rearrange(x, "b h s d -> b s (h d)")',
            lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)),
    "rows": ("h w", "4*h w", 'repeat(x, "h w -> (c h) w", c=4)', lambda x: np.tile(x, (4, 1))),
    "chl": ("b c h w", "b h*w c", 'rearrange(x, "b c h w -> b (h w) c")',
            lambda x: x.transpose(0, 2, 3, 1).reshape(x.shape[0], -1, x.shape[1])),
}
# Their outputs are also written as views with a step along the last axis.
MERGED = ("mrg", "rows", "chl")

SHAPES = {
    "t2": [(1, 1), (1, 9), (9, 1), (7, 7), (8, 8), (9, 17), (16, 16),
           (63, 65), (64, 64), (65, 63), (128, 8), (8, 128), (100, 3), (3, 100),
           (130, 67)],
    "bhwc": [(2, 8, 8, 16), (1, 1, 1, 1), (3, 7, 9, 11), (2, 64, 1, 64),
             (2, 4, 16, 64), (1, 9, 9, 1), (2, 3, 5, 130)],
    "cab": [(5, 9, 17), (2, 64, 64), (1, 1, 8), (3, 70, 70), (8, 8, 8)],
    "cba": [(5, 9, 17), (16, 3, 16), (65, 2, 66), (1, 1, 1)],
    "bca": [(5, 9, 17), (17, 3, 9), (64, 2, 64)],
    "shd": [(2, 9, 3, 8), (1, 16, 4, 16)],
    "rep": [(9, 17), (16, 8), (1, 1), (70, 66)],
    "mrg": [(2, 3, 5, 7), (1, 16, 4, 16), (2, 1, 9, 8)],
    "rows": [(9, 17), (1, 1), (64, 64)],
    "chl": [(2, 19, 5, 13), (1, 64, 8, 8), (2, 8, 1, 1)],
}


def program(dtypes):
    lines = []
    for dt in dtypes:
        for name, (sin, sout, body, _) in FUNCTIONS.items():
            lines.append(f'def {name}_{dt}(x: {dt}["{sin}"]) -> {dt}["{sout}"]:\n'
                         f"    return {body}\n")
    return "\n".join(lines)


def values(rng, shape, dt):
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(-100, 100, shape).astype(DTYPES[dt])


class Checks:
    def __init__(self):
        self.n = self.failed = 0

    def check(self, part, case, got, want):
        self.n += 1
        if got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want):
            print(f"PASS {part} {case}")
        else:
            self.failed += 1
            print(f"FAIL {part} {case}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")


def run_part(args, tmp, src, checks):
    rng = np.random.default_rng(1)
    for dt in DTYPES:
        for name, shapes in SHAPES.items():
            for shape in shapes:
                x = values(rng, shape, dt)
                xin, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
                np.save(xin, x)
                want = np.ascontiguousarray(FUNCTIONS[name][3](x))
                for extra in ([], ["--size-generic"]):
                    if os.path.exists(out):
                        os.remove(out)
                    proc = subprocess.run(
                        [args.einc, "run", src, "--fn", f"{name}_{dt}", "--in",
                         f"x={xin}", "--out", out] + extra, capture_output=True, text=True)
                    case = f"{name}_{dt}{list(shape)}{' generic' if extra else ''}"
                    if proc.returncode != 0:
                        checks.n += 1
                        checks.failed += 1
                        print(f"FAIL run {case}: {proc.stderr.strip()}")
                        continue
                    checks.check("run", case, np.load(out), want)


def views_part(args, tmp, checks):
    dts = ["f32", "f64", "f16", "i32"]
    src = os.path.join(tmp, "v.ein")
    with open(src, "w") as f:
        f.write(program(dts))
    obj, header = os.path.join(tmp, "v.o"), os.path.join(tmp, "v.h")
    subprocess.run([args.einc, "build", src, "-o", obj, "--header", header], check=True)
    wrapper = os.path.join(tmp, "wrap.c")
    with open(wrapper, "w") as f:
        f.write('#include "v.h"\n')
        for dt in dts:
            for name in FUNCTIONS:
                f.write(f"int w_{name}_{dt}(const void *x, int64_t xr, const int64_t *xs,"
                        f" const int64_t *xt, void *y, int64_t yr, const int64_t *ys,"
                        f" const int64_t *yt) {{ return ein_{name}_{dt}((void *)x, xr, xs, xt,"
                        f" (void *)y, yr, ys, yt); }}\n")
    lib = os.path.join(tmp, "libv.so")
    subprocess.run([args.cc, "-O1", "-w", "-shared", "-fPIC", "-I", tmp, wrapper, obj, "-o", lib,
                    f"-L{args.lib_dir}", f"-Wl,-rpath,{args.lib_dir}", "-lomp", "-lm"],
                   check=True)
    so = ctypes.CDLL(lib)

    def call(fn, x, y):
        a = []
        for t in (x, y):
            a += [ctypes.c_void_p(t.ctypes.data), ctypes.c_int64(t.ndim),
                  (ctypes.c_int64 * t.ndim)(*t.shape),
                  (ctypes.c_int64 * t.ndim)(*(s // t.itemsize for s in t.strides))]
        return fn(*a)

    rng = np.random.default_rng(2)
    for dt in dts:
        big = values(rng, (3, 140, 150), dt)
        big4 = values(rng, (2, 21, 9, 20), dt)
        inputs = {
            "t2": {"contiguous": big[0, :64, :64], "offset": big[1, 3:70, 5:72],
                   "step-inner": big[0, 1:40, ::2], "step-outer": big[2, ::2, 1:90],
                   "transposed": big[0].T[10:80, 3:90],
                   "stride0-rows": np.broadcast_to(big[0, 0, 3:70], (40, 67)),
                   "stride0-cols": np.broadcast_to(big[0, 2:50, 7:8], (48, 33))},
            "cab": {"offset": big[:, 7:72, 9:75], "steps": big[:, ::3, 1::1][:, :, 2:130],
                    "step-inner": big[:, 1:33, ::3]},
            "rep": {"offset": big[1, 4:70, 2:99], "transposed": big[2].T[1:66, 5:99]},
            "bca": {"offset": big[:, 11:80, 13:78]},
            "mrg": {"offset": big4[:, 1:4, 2:9, 3:17], "step-inner": big4[:, :, 1:8, ::2]},
            "rows": {"offset": big[1, 4:70, 2:99], "transposed": big[2].T[1:66, 5:99]},
            "chl": {"offset": big4[:, 1:19, 2:7, 3:14], "step-inner": big4[:, 2:20, :, ::3]},
        }
        for name, cases in inputs.items():
            fn = getattr(so, f"w_{name}_{dt}")
            for label, x in cases.items():
                want = np.ascontiguousarray(FUNCTIONS[name][3](x))
                # The output: a window of a larger buffer, the rest must stay;
                # for merged outputs also one with a step along the last axis.
                for step in (1, 2) if name in MERGED else (1,):
                    shape = want.shape[:-1] + (step * want.shape[-1],)
                    pad = np.full(tuple(s + 6 for s in shape), 7, DTYPES[dt])
                    window = tuple(slice(3, 3 + s) for s in shape[:-1]) + (
                        slice(3, 3 + shape[-1], step),)
                    y = pad[window]
                    expected = pad.copy()
                    expected[window] = want
                    rc = call(fn, x, y)
                    case = f"{name}_{dt} {label}{list(x.shape)}{' output-step' if step > 1 else ''}"
                    if rc != 0:
                        checks.n += 1
                        checks.failed += 1
                        print(f"FAIL views {case}: returned {rc}")
                        continue
                    checks.check("views", case, pad, expected)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--lib-dir", default="/usr/lib/llvm-19/lib")
    args = ap.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "t.ein")
        with open(src, "w") as f:
            f.write(program(DTYPES))
        run_part(args, tmp, src, checks)
        views_part(args, tmp, checks)
    print(f"transpose-run: {checks.n} checks, {checks.failed} failures")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
