# Runs the functions of variadic-run.ein with einc at variadic ranks 0..6
# and compares each output with numpy/einops; prints one line per case.
import os
import subprocess
import sys

import einops
import numpy as np

einc, source, tmp = sys.argv[1:4]
rng = np.random.default_rng(0)
# The variadic's sizes at rank r: the first r of these (1s included: a named
# variadic's dims never broadcast).
BATCH = [2, 3, 1, 2, 1, 3]


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def cases(r):
    b = tuple(BATCH[:r])
    x = arr(*b, 4)
    yield "proj", [("x", x), ("w", arr(4, 5))], lambda x, w: np.einsum("...n,nm->...m", x, w)
    yield "proj_anon", [("x", x), ("w", arr(4, 5))], lambda x, w: np.einsum("...n,nm->...m", x, w)
    yield "scale", [("x", x)], lambda x: x * 2
    yield "add", [("x", x), ("y", arr(*b, 4))], lambda x, y: x + y * 3
    yield "add_middle", [("x", arr(2, *b, 4)), ("y", arr(2, *b, 4))], lambda x, y: x - y
    yield "dot", [("x", x), ("y", arr(*b, 4))], lambda x, y: np.einsum("...n,...n->...", x, y)
    yield "flatten", [("x", arr(*b, 2, 3))], lambda x: einops.rearrange(x, "... h w -> ... (h w)")
    yield "swap", [("x", arr(2, *b, 3))], lambda x: einops.rearrange(x, "a ... b -> b ... a")
    yield "merge", [("x", x)], lambda x: einops.rearrange(x, "... n -> (...) n")
    yield "total", [("x", x)], lambda x: einops.reduce(x, "... n -> n", "sum")
    yield "rowmax", [("x", x)], lambda x: einops.reduce(x, "... n -> ...", "max")
    yield "tile", [("x", x)], lambda x: einops.repeat(x, "... n -> ... n r", r=3)
    yield "scaled_sum", [("x", x), ("s", arr(*b))], lambda x, s: x.sum(-1) * s


failures = 0
for r in range(7):
    for fn, inputs, oracle in cases(r):
        args = [einc, "run", source, "--fn", fn]
        for name, value in inputs:
            path = os.path.join(tmp, f"{fn}-{r}-{name}.npy")
            np.save(path, value)
            args += ["--in", f"{name}={path}"]
        out = os.path.join(tmp, f"{fn}-{r}-out.npy")
        run = subprocess.run(args + ["--out", out], capture_output=True, text=True)
        expected = np.asarray(oracle(*[v for _, v in inputs]), np.float32)
        if run.returncode != 0:
            print(f"FAIL {fn} rank {r}: exit {run.returncode}: {run.stderr.strip()}")
            failures += 1
            continue
        got = np.load(out)
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
            print(f"FAIL {fn} rank {r}: got shape {got.shape}, expected {expected.shape}")
            failures += 1
            continue
        print(f"ok {fn} rank {r} shape {got.shape}")
print(f"{failures} failure(s)")
