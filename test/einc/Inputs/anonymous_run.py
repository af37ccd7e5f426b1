# Runs the functions of anonymous-run.ein with einc on inputs whose
# anonymous dims agree or broadcast (size 1), and compares each output with
# numpy; prints one line per case.
import sys

import numpy as np
from einc_case import run_case

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
    label = f"{fn} {shapes[0]} {shapes[1]}"
    failures += not run_case(einc, source, fn, inputs, oracle, tmp, str(i), label)
print(f"{failures} failure(s)")
