# Runs the functions of calls/model.ein that call other functions (inlined)
# with einc on the target given, and compares each output with numpy; prints
# one line per case.
import numpy as np
from einc_case import run_target_cases

rng = np.random.default_rng(3)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def rmsnorm(x, g):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * g


def block(x, g, w1, w2):
    return x + np.maximum(rmsnorm(x, g) @ w1, 0) @ w2


x, g, w1, w2 = arr(5, 8), arr(8), arr(8, 16), arr(16, 8)
x3 = arr(2, 3, 8)
p = arr(3, 4)
CASES = [
    ("model", [("x", x), ("g", g), ("w1", w1), ("w2", w2)],
     lambda x, g, w1, w2: block(block(x, g, w1, w2), g, w1, w2)),
    ("norm", [("x", x), ("g", g)], rmsnorm),
    ("norm3", [("x", x3), ("g", g)], rmsnorm),
    ("use_pair", [("x", p)], lambda x: x * 2 + x.sum(axis=1, keepdims=True)),
    ("use_pairs", [("x", arr(6))], lambda x: x.reshape(3, 2)),
]

run_target_cases(CASES)
