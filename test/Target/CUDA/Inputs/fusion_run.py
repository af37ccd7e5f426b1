"""Runs Inputs/fusion.ein's functions through `einc run` (argv: einc, the
.ein file, a work dir, then extra einc flags such as --target=cuda-emulated
or --no-fusion; --only=FN: that function alone) and compares each result with numpy, op by op with the
result dtype's rounding (bf16 rounded after every op, as ein computes it).
Prints one line per function: its name and 'ok', or what differed."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "run"))
import run_corpus as rc  # noqa: E402  (round_bf16: one place)
from run_compare import run_compare  # noqa: E402

einc, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
flags = [a for a in sys.argv[4:] if not a.startswith("--only=")]
only = [a[len("--only="):] for a in sys.argv[4:] if a.startswith("--only=")]
rng = np.random.default_rng(31)
A, B, C = 19, 37, 5  # odd sizes: vector tails, misaligned rows


def bf16(a):
    return rc.round_bf16(np.asarray(a, dtype=np.float32))


x = rng.standard_normal((A, B)).astype(np.float32)
y = rng.standard_normal((A, B)).astype(np.float32)
w = rng.standard_normal((B, C)).astype(np.float32)
bias = rng.standard_normal(C).astype(np.float32)
r = rng.standard_normal(B).astype(np.float32)
p = bf16(rng.standard_normal((A, B)))
q = bf16(rng.standard_normal((A, B)))

h = np.maximum(x * y + 1, 0)
g = np.exp(h) - h
refs = {"f": ([("x", x), ("y", y), ("w", w), ("bias", bias)],
              [("f32", np.maximum(g.astype(np.float64) @ w + bias, 0))])}
h = x * y
m = x - y
u = bf16(p * q)
refs["chains"] = ([("x", x), ("y", y), ("r", r), ("p", p), ("q", q)],
                  [("f32", np.tanh(m) * m + np.exp(-m) + r), ("f32", h * 2),
                   ("bf16", bf16(bf16(u * u) - p)),
                   ("f32", (x + y) * (x - r) + p * q + h), ("f32", h),
                   ("f32", np.maximum(m, 0) * y)])

N = 3
wt = rng.standard_normal((C, B)).astype(np.float32)
bc = rng.standard_normal(C).astype(np.float32)
ba = rng.standard_normal(A).astype(np.float32)
pq = bf16(rng.standard_normal((B, C)))
bq = bf16(rng.standard_normal(C))
z = rng.standard_normal((N, A, B)).astype(np.float32)
wz = rng.standard_normal((N, B, C)).astype(np.float32)
t = x.astype(np.float64) @ wt.T
refs["epilogues"] = (
    [("x", x), ("wt", wt), ("bc", bc), ("ba", ba), ("p", p), ("q", pq), ("bq", bq), ("z", z), ("wz", wz)],
    [("f32", np.maximum(t * 0.5 + bc, 0)), ("f32", t + ba[:, None]),
     ("bf16", bf16(np.maximum(p.astype(np.float64) @ pq + bq, 0))),
     ("f32", np.einsum("nab,nbc->nac", z.astype(np.float64), wz) * 2 + bc), ("f32", t), ("f32", np.maximum(t, 0))])

os.makedirs(work, exist_ok=True)
for fn, (inputs, outs) in refs.items():
    if only and fn not in only:
        continue
    print(f"{fn}: {run_compare(einc, source, fn, inputs, outs, work, flags, fn)}")
