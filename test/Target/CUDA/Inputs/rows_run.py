"""Runs Inputs/rows.ein's functions through `einc run` (argv: einc, the .ein
file, a work dir, then extra einc flags such as --target=cuda-emulated or
--no-fusion; --only=FN: that function alone; --sizes=N,...: those row
lengths, else 1, 7, 33 and 1000) and compares each result with numpy (bf16
rounded after every op, as ein computes it).
Prints one line per function and row length: its name and 'ok', or what
differed."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "run"))
import run_corpus as rc  # noqa: E402  (round_bf16: one place)
from run_compare import run_compare  # noqa: E402

einc, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
flags = [a for a in sys.argv[4:] if not a.startswith("--only=") and not a.startswith("--sizes=")]
only = [a[len("--only="):] for a in sys.argv[4:] if a.startswith("--only=")]
sizes = [int(n) for a in sys.argv[4:] if a.startswith("--sizes=") for n in a[len("--sizes="):].split(",")]
rng = np.random.default_rng(31)


def bf16(a):
    return rc.round_bf16(np.asarray(a, dtype=np.float32))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def cases(n):
    """Per function: inputs, and per result its dtype and reference."""
    x = rng.standard_normal((3, n)).astype(np.float32) * 4
    x3 = rng.standard_normal((2, 3, n)).astype(np.float32) * 4
    xb = bf16(rng.standard_normal((3, n)) * 4)
    d = 10 + rng.standard_normal((2, 3, n)).astype(np.float32)
    gain = rng.standard_normal(n).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    gb = bf16(rng.standard_normal(n))
    s = min(n, 40)
    scores = rng.standard_normal((2, 2, s, s)).astype(np.float32) * 4
    mask = np.tril(np.ones((s, s), dtype=bool))
    eb = bf16(np.exp(bf16(xb - xb.max(axis=1, keepdims=True))))
    ms = bf16(np.mean(bf16(xb * xb), axis=1, keepdims=True))
    shifted = x - x.max(axis=1, keepdims=True)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {
        "softmax": ([("x", x)], [("f32", softmax(x))]),
        "softmax_dropped": ([("x", x3)], [("f32", softmax(x3))]),
        "softmax_named": ([("x", x3)], [("f32", softmax(x3))]),
        "softmax_bf16": ([("x", xb)], [("bf16", bf16(eb / bf16(eb.sum(axis=1, keepdims=True))))]),
        "layer_norm": ([("x", d), ("gain", gain), ("bias", bias)],
                       [("f32", (d - d.mean(axis=2, keepdims=True)) / np.sqrt(d.var(axis=2, keepdims=True) + 1e-5) * gain + bias)]),
        "rms_norm": ([("x", xb), ("gain", gb)],
                     [("bf16", bf16(bf16(xb * bf16(1 / np.sqrt(bf16(ms + 1e-6)))) * gb))]),
        "causal_softmax": ([("scores", scores)], [("f32", softmax(np.where(mask, scores, -1e9)))]),
        "log_softmax": ([("x", x)], [("f32", shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))]),
        "partial": ([("x", x)], [("f32", e / e.sum(axis=1, keepdims=True)), ("f32", x.max(axis=1, keepdims=True)),
                                 ("f32", x - x.max(axis=0, keepdims=True))]),
    }


os.makedirs(work, exist_ok=True)
for n in sizes or (1, 7, 33, 1000):
    for fn, (inputs, outs) in cases(n).items():
        if only and fn not in only:
            continue
        print(f"{fn} {n}: {run_compare(einc, source, fn, inputs, outs, work, flags, f'{fn}_{n}')}")
