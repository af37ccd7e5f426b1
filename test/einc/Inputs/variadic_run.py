# Runs the functions of variadic-run.ein with einc at variadic ranks 0..6
# and compares each output with numpy/einops; prints one line per case.
import sys

import einops
import numpy as np
from einc_case import run_case

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
        failures += not run_case(einc, source, fn, inputs, oracle, tmp, f"{fn}-{r}", f"{fn} rank {r}")
print(f"{failures} failure(s)")
