# Runs the functions of anonymous-run.ein with einc on inputs whose
# anonymous dims agree or broadcast (size 1), and compares each output with
# numpy; prints one line per case.
import os
import subprocess
import sys

import numpy as np

einc, source, tmp = sys.argv[1:4]
rng = np.random.default_rng(1)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = [
    ("add", [(5, 3), (5, 3)], lambda x, y: x + y),
    ("add", [(1, 3), (5, 3)], lambda x, y: x + y),
    ("add", [(5, 3), (1, 3)], lambda x, y: x + y),
    ("mul_named", [(5, 3), (5, 3)], lambda x, y: x * y),
    ("mul_named", [(1, 3), (5, 3)], lambda x, y: x * y),
    ("sub_ellipsis", [(2, 4, 3), (2, 4, 3)], lambda x, y: x - y),
    ("sub_ellipsis", [(2, 1, 3), (1, 4, 3)], lambda x, y: x - y),
    ("sub_ellipsis", [(3,), (3,)], lambda x, y: x - y),
    # Different ranks broadcast by name (here: by the sizes, 4 is one dim).
    ("sub_ellipsis", [(2, 4, 3), (4, 3)], lambda x, y: x - y),
    ("einsum_ellipsis", [(2, 4, 3), (4, 3)], lambda x, y: np.einsum("...n,...n->...n", x, y)),
    ("einsum_ellipsis", [(2, 1, 3), (4, 3)], lambda x, y: np.einsum("...n,...n->...n", x, y)),
    ("einsum_ellipsis", [(3,), (2, 2, 3)], lambda x, y: np.einsum("...n,...n->...n", x, y)),
    ("einsum_ellipsis", [(1, 2, 1, 2, 1, 3), (2, 1, 2, 1, 2, 3)], lambda x, y: np.einsum("...n,...n->...n", x, y)),
    ("dot_ellipsis", [(2, 3), (2, 3)], lambda x, y: np.einsum("...n,...n->...", x, y)),
    ("dot_ellipsis", [(5, 1, 3), (4, 3)], lambda x, y: np.einsum("...n,...n->...", x, y)),
    ("contract", [(5, 3), (5, 3)], lambda x, y: np.einsum("in,in->n", x, y)),
]

failures = 0
for i, (fn, shapes, oracle) in enumerate(CASES):
    inputs = [("x", arr(*shapes[0])), ("y", arr(*shapes[1]))]
    args = [einc, "run", source, "--fn", fn]
    for name, value in inputs:
        path = os.path.join(tmp, f"{i}-{name}.npy")
        np.save(path, value)
        args += ["--in", f"{name}={path}"]
    out = os.path.join(tmp, f"{i}-out.npy")
    run = subprocess.run(args + ["--out", out], capture_output=True, text=True)
    expected = np.asarray(oracle(*[v for _, v in inputs]), np.float32)
    label = f"{fn} {shapes[0]} {shapes[1]}"
    if run.returncode != 0:
        print(f"FAIL {label}: exit {run.returncode}: {run.stderr.strip()}")
        failures += 1
        continue
    got = np.load(out)
    if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
        print(f"FAIL {label}: got shape {got.shape}, expected {expected.shape}")
        failures += 1
        continue
    print(f"ok {label} -> {got.shape}")
print(f"{failures} failure(s)")
