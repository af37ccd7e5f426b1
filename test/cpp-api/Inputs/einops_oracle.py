#!/usr/bin/env python3
"""Cross-checks the C++ API against einops and numpy (the oracle).

Each case is one API call on random inputs: the inputs are written as .npy,
EinAPIOracle runs the calls (unittests/API/OracleRunner.cpp), and every
result is compared with einops' (or numpy's) on the same arrays. An input
marked strided is written with its axes reversed, and the runner passes the
reversed view of it (a non-contiguous tensor) to the API.

Usage: einops_oracle.py --runner PATH --dir DIR [--stats] [--device cuda]
With --device cuda the runner moves every input to the CUDA device first
(EIN_CUDA=emulated: the CUDA back end's code run on the CPU), so the same
calls run there.
Prints one line per case ("NAME ok view|copy" or what went wrong), then
"N cases, F failed"; exits 1 when F > 0.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import einops

rng = np.random.default_rng(7)


def rand(shape, dtype="float32"):
    if dtype.startswith("int"):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.standard_normal(shape).astype(dtype)


# (name, op, pattern, sizes, [(array, strided)], expected, view-or-copy)
CASES = []


def case(name, op, pattern, sizes, inputs, expected, kind=None):
    CASES.append((name, op, pattern, sizes, inputs, expected, kind))


x = rand((2, 5, 12))
case("split_heads", "rearrange", "b s (h d) -> b h s d", {"h": 3}, [(x, False)],
     einops.rearrange(x, "b s (h d) -> b h s d", h=3), "view")
case("merge_view", "rearrange", "b s c -> (b s) c", {}, [(x, False)],
     einops.rearrange(x, "b s c -> (b s) c"), "view")
case("transpose_copy", "rearrange", "b s c -> c (b s)", {}, [(x, True)],
     einops.rearrange(x, "b s c -> c (b s)"))
case("permute_merge", "rearrange", "b s (h d) -> (b h) d s", {"d": 4}, [(x, False)],
     einops.rearrange(x, "b s (h d) -> (b h) d s", d=4), "copy")
y = rand((3, 4, 6, 7), "float64")
case("ellipsis_f64", "rearrange", "... h w -> ... (w h)", {}, [(y, False)],
     einops.rearrange(y, "... h w -> ... (w h)"), "copy")
case("strided_pixels", "rearrange", "b c (h h2) (w w2) -> b (h w) (c h2 w2)",
     {"h2": 2, "w2": 1}, [(rand((2, 3, 4, 5)), True)], None)
CASES[-1] = CASES[-1][:5] + (
    einops.rearrange(CASES[-1][4][0][0], "b c (h h2) (w w2) -> b (h w) (c h2 w2)",
                     h2=2, w2=1), None)
i = rand((4, 6), "int32")
case("int_unit_axes", "rearrange", "a b -> 1 b () a", {}, [(i, False)],
     einops.rearrange(i, "a b -> 1 b () a"))
m = rand((6, 5)) > 0
case("bool_transpose", "rearrange", "a b -> b a", {}, [(m, True)],
     einops.rearrange(m, "a b -> b a"))

for how in ["sum", "mean", "max", "min", "prod"]:
    r = rand((3, 8, 5))
    case(f"reduce_{how}", f"reduce:{how}", "b (h h2) w -> b h", {"h2": 2},
         [(r, how in ("max", "mean"))],
         einops.reduce(r, "b (h h2) w -> b h", how, h2=2))
r = rand((3, 8, 5), "int64")
case("reduce_int_sum", "reduce:sum", "b h w -> w b", {}, [(r, False)],
     einops.reduce(r, "b h w -> w b", "sum"))
b = rand((4, 7)) > 0
case("reduce_any", "reduce:any", "a b -> a", {}, [(b, False)], b.any(axis=1))
case("reduce_all_strided", "reduce:all", "a b -> b", {}, [(b, True)], b.all(axis=0))
case("reduce_to_scalar", "reduce:sum", "a b c -> ", {}, [(x, True)],
     np.asarray(einops.reduce(x, "a b c ->", "sum")))
case("pool", "reduce:max", "c (h h2) (w w2) -> c h w", {"h2": 2, "w2": 2},
     [(rand((3, 6, 8)), False)], None)
CASES[-1] = CASES[-1][:5] + (einops.reduce(CASES[-1][4][0][0], "c (h h2) (w w2) -> c h w",
                                           "max", h2=2, w2=2), None)

t = rand((3, 4))
case("repeat_new_axis", "repeat", "h w -> c h w", {"c": 3}, [(t, False)],
     einops.repeat(t, "h w -> c h w", c=3), "copy")
case("repeat_tile_strided", "repeat", "h w -> (c h) (w 2)", {"c": 2}, [(t, True)],
     einops.repeat(t, "h w -> (c h) (w 2)", c=2))
case("repeat_f16", "repeat", "h w -> h w k", {"k": 2}, [(t.astype("float16"), False)],
     einops.repeat(t.astype("float16"), "h w -> h w k", k=2))

a = rand((17, 33))
bb = rand((33, 9))
case("matmul", "einsum", "m k, k n -> m n", {}, [(a, False), (bb, False)], a @ bb)
case("matmul_transposed_view", "einsum", "m k, k n -> m n", {}, [(a, True), (bb, True)],
     a @ bb)
q = rand((2, 5, 12))
k = rand((2, 6, 12))
qh = einops.rearrange(q, "b s (h d) -> b h s d", h=3)
kh = einops.rearrange(k, "b t (h d) -> b h t d", h=3)
case("attention_scores", "einsum", "b h s d, b h t d -> b h s t", {},
     [(qh, False), (kh, True)], np.einsum("bhsd,bhtd->bhst", qh, kh))
case("composed_einsum", "einsum", "b s (h d), b t (h d) -> b h s t", {"h": 3},
     [(q, False), (k, False)], np.einsum("bhsd,bhtd->bhst", qh, kh))
sq = rand((5, 5))
case("trace_diag", "einsum", "i i -> i", {}, [(sq, True)], np.diag(sq).copy())
# `_` is an axis name in einops' einsum, as any other (not an anonymous axis).
us = rand((2, 3))
case("einsum_underscore_name", "einsum", "_ b -> b _", {}, [(us, False)],
     einops.einsum(us, "_ b -> b _"))
v3 = rand((4, 3, 2))
case("three_operands", "einsum", "a b, b c, c d -> a d", {},
     [(rand((4, 3)), False), (rand((3, 2)), False), (rand((2, 5)), False)], None)
ops3 = [o for o, _ in CASES[-1][4]]
CASES[-1] = CASES[-1][:5] + (ops3[0] @ ops3[1] @ ops3[2], None)
e1 = rand((3, 1, 2, 5))
e2 = rand((4, 5, 6))
case("ellipsis_broadcast", "einsum", "... i j, ... j k -> ... i k", {},
     [(e1, False), (e2, False)], np.matmul(e1, e2))
ii = rand((6, 7), "int32")
case("int_matmul", "einsum", "m k, n k -> m n", {}, [(ii, False), (rand((5, 7), "int32"), False)],
     None)
CASES[-1] = CASES[-1][:5] + (CASES[-1][4][0][0] @ CASES[-1][4][1][0].T, None)

img = rand((2, 3, 4, 5))
cls = rand((2, 5))
case("pack", "pack", "b * c", {}, [(img, False), (cls, True)],
     einops.pack([img, cls], "b * c")[0])
packed, ps = einops.pack([img, cls], "b * c")
case("unpack", "unpack", "b * c", {"__parts": ps}, [(packed, False)],
     einops.unpack(packed, ps, "b * c"), "view")

g = rand((3, 4))
h = rand((4,))
case("add_broadcast", "add", "", {}, [(g, True), (h, False)], g + h)
case("exp_strided", "exp", "", {}, [(g, True)], np.exp(g))
case("gelu_tanh", "gelu_tanh", "", {}, [(g, False)],
     (0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3))))
     .astype("float32"))
case("where", "where", "", {}, [(g > 0, False), (g, False), (-g, True)],
     np.where(g > 0, g, -g))
case("maximum_int", "max", "", {}, [(i, False), (i[::-1].copy(), True)], None)
CASES[-1] = CASES[-1][:5] + (np.maximum(i, i[::-1].copy()), None)
case("lt_bool", "lt", "", {}, [(g, False), (h, False)], g < h)

# A module function (compiled size-generic, disk-cached like the kernels) at
# its file's sizes, one input a transposed view.
mx = rand((2, 3, 8))
mw = rand((4, 2))
MULTIHEAD = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "..", "..", "..", "examples", "multihead.ein")
case("module_multihead", "module:multihead", MULTIHEAD, {}, [(mx, False), (mw, True)],
     einops.rearrange(np.einsum("bshk,ko->bsho",
                                einops.rearrange(mx, "b s (h k) -> b s h k", h=2), mw),
                      "b s h o -> b s (h o)"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--stats", action="store_true",
                        help="print the runner's kernel cache counts")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    lines = []
    for name, op, pattern, sizes, inputs, expected, kind in CASES:
        specs = []
        for n, (arr, strided) in enumerate(inputs):
            path = os.path.join(args.dir, f"{name}.in{n}.npy")
            # A strided input: the file holds the reversed-axes array, and
            # the runner passes its reversed view (the original, strided).
            np.save(path, np.ascontiguousarray(arr.transpose()) if strided else arr)
            specs.append(("T:" if strided else "") + path)
        if op == "unpack":
            size_text = ";".join(" ".join(str(s) for s in p) for p in sizes["__parts"])
        else:
            size_text = ",".join(f"{k}={v}" for k, v in sizes.items()) or "-"
        out = os.path.join(args.dir, f"{name}.out.npy")
        lines.append("\t".join([name, op, pattern, size_text, ",".join(specs), out]))
    cases_path = os.path.join(args.dir, "cases.tsv")
    with open(cases_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    run = subprocess.run([args.runner, cases_path, "--device", args.device]
                         + (["--stats"] if args.stats else []),
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"runner failed ({run.returncode}): {run.stderr}")
        return 1
    reports = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    if args.stats:
        print("kernels:", reports.pop("kernels:", "missing"))
    failed = 0
    for name, op, pattern, sizes, inputs, expected, kind in CASES:
        report = reports.get(name, "missing")
        problem = None
        if not report.startswith("ok"):
            problem = report
        elif kind and report.split()[1] != kind:
            problem = f"expected a {kind}, got a {report.split()[1]}"
        else:
            outs = expected if op == "unpack" else [expected]
            for n, want in enumerate(outs):
                path = os.path.join(args.dir, f"{name}.out.npy")
                if op == "unpack":
                    path = f"{path}.{n}.npy"
                got = np.load(path)
                want = np.asarray(want)
                if got.shape != want.shape:
                    problem = f"shape {got.shape}, expected {want.shape}"
                elif got.dtype != want.dtype:
                    problem = f"dtype {got.dtype}, expected {want.dtype}"
                elif not np.allclose(got.astype("float64"), want.astype("float64"),
                                     rtol=2e-3 if want.dtype == np.float16 else 1e-4,
                                     atol=1e-4):
                    problem = f"values differ: max |diff| {np.abs(got.astype('float64') - want).max()}"
        if problem:
            failed += 1
            print(f"{name} FAILED: {problem}")
        else:
            print(f"{name} {report}")
    print(f"{len(CASES)} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
