# Runs the functions of arange/model.ein with einc on the target given and
# compares each output with numpy; prints one line per case.
import numpy as np
from einc_case import run_target_cases

rng = np.random.default_rng(5)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def causal_softmax(x):
    t, s = x.shape
    m = np.where(np.arange(s)[None, :] <= np.arange(t)[:, None], x,
                 np.float32(-1e9))
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


CASES = [
    ("count", [("x", arr(7))], lambda x: np.arange(7, dtype=np.int64)),
    ("count", [("x", arr(0))], lambda x: np.arange(0, dtype=np.int64)),
    ("count_plus", [("x", arr(5))], lambda x: np.arange(6, dtype=np.float32)),
    ("count_const", [("x", arr(3))], lambda x: np.arange(4, dtype=np.int32)),
    ("causal_softmax", [("x", arr(6, 6))], causal_softmax),
    ("causal_softmax", [("x", arr(4, 9))], causal_softmax),
]

run_target_cases(CASES)
