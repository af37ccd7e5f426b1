#!/usr/bin/env python3
"""Runs the programs of Inputs/fusion.ein through `einc run` fused (the default),
with --no-fusion and size-generic, on shapes whose rows do not divide the
row tiles (8, and 64 with contractions), and compares every result with numpy (float64 references).

  fusion_run.py --einc EINC
Prints one line per case and 'fusion run: N cases, F failures'.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def erf(x):
    return np.vectorize(math.erf)(x)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def cases(rng):
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    for shape in [(2, 3, 13, 7), (1, 1, 1, 1), (2, 2, 8, 33), (1, 2, 17, 512)]:
        x = f(*shape) * 4
        yield "softmax", {"x": x}, softmax(x.astype(np.float64))
    for shape in [(9, 5), (1, 1), (16, 1000)]:
        x = f(*shape) * 3
        d = x.astype(np.float64) - x.max(-1, keepdims=True)
        yield "log_softmax", {"x": x}, d - np.log(np.exp(d).sum(-1, keepdims=True))
    for shape in [(2, 11, 6), (3, 8, 64), (1, 1, 1)]:
        x, g, b = f(*shape) + 1.5, f(shape[-1]), f(shape[-1])
        x64 = x.astype(np.float64)
        c = x64 - x64.mean(-1, keepdims=True)
        ref = c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5) * g + b
        yield "layer_norm", {"x": x, "g": g, "beta": b}, ref
    for shape in [(5, 7), (3, 129)]:
        x, b = f(*shape), f(shape[-1])
        y = x.astype(np.float64) * 2.0 + b
        ref = 0.5 * y * (1 + erf(y / math.sqrt(2))) / (1 + np.exp(-x.astype(np.float64)))
        yield "gelu_chain", {"x": x, "b": b}, ref
    # Rows per contraction tile: 64 (a tile's rows beyond s are cut off).
    for (bb, h, s, t, d) in [(1, 2, 9, 13, 8), (2, 1, 16, 40, 5),
                             (1, 2, 130, 70, 33), (1, 1, 64, 512, 64)]:
        q, k, v = f(bb, h, s, d), f(bb, h, t, d), f(bb, h, t, d)
        sc = np.einsum("bhsd,bhtd->bhst", q.astype(np.float64), k) * 0.125
        ref = np.einsum("bhst,bhtd->bhsd", softmax(sc), v)
        yield "attention", {"q": q, "k": k, "v": v}, ref
        if s == 130:  # the scores are a result too: not fused
            yield "attention_and_scores", {"q": q, "k": k, "v": v}, (ref, sc)
    x = f(7, 10)
    yield "column_center", {"x": x}, x - x.astype(np.float64).mean(0)
    # Epilogues in the GEMM kernel: edges of the register tile (6 x 16 on
    # AVX2) and of the k blocks (320) in both directions, and an empty sum
    # (d = 0: the epilogue of zeros).
    gelu = lambda y: 0.5 * y * (1 + erf(y / math.sqrt(2)))
    for (b, d, h) in [(13, 17, 19), (64, 700, 48), (1, 1, 1), (130, 9, 200),
                      (3, 0, 5)]:
        # Entries of x w of about 1 whatever d (f32 sums of d terms).
        x, w = f(b, d) / math.sqrt(max(d, 1)), f(d, h)
        c = x.astype(np.float64) @ w
        bias, s, y = f(h), f(b), f(h, b)
        yield "relu_matmul", {"x": x, "w": w}, np.maximum(c, 0)
        yield "bias_gelu", {"x": x, "w": w, "bias": bias}, gelu(c + bias)
        yield "scale_rows", {"x": x, "w": w, "s": s}, c * s[:, None]
        yield "add_transposed", {"x": x, "w": w, "y": y}, c + y.T
    x, w, bias = f(3, 10, 20), f(3, 20, 30), f(3, 30)
    yield "batched_tanh", {"x": x, "w": w, "bias": bias}, np.tanh(
        np.einsum("nbd,ndh->nbh", x.astype(np.float64), w) + bias[:, None, :])
    x, w = f(5, 6, 7), f(6, 7, 9)
    yield "two_sums_sigmoid", {"x": x, "w": w}, 1 / (1 + np.exp(
        -np.einsum("bde,deh->bh", x.astype(np.float64), w)))


def run(einc, fn, inputs, tmp, extra, results):
    """The results of `fn` (a list of `results` arrays), or None and the
    error."""
    args = [einc, "run", os.path.join(HERE, "Inputs", "fusion.ein"), "--fn", fn] + extra
    for name, array in inputs.items():
        path = os.path.join(tmp, f"{name}.npy")
        np.save(path, array)
        args += ["--in", f"{name}={path}"]
    outs = [os.path.join(tmp, f"out{i}.npy") for i in range(results)]
    for out in outs:
        if os.path.exists(out):
            os.remove(out)
        args += ["--out", out]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    return [np.load(out) for out in outs], ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--einc", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(13)
    total = failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for fn, inputs, ref in cases(rng):
            shape = "x".join(map(str, next(iter(inputs.values())).shape))
            for mode, extra in [("fused", []), ("no-fusion", ["--no-fusion"]),
                                ("size-generic", ["--size-generic"])]:
                total += 1
                refs = ref if isinstance(ref, tuple) else (ref,)
                got, err = run(args.einc, fn, inputs, tmp, extra, len(refs))
                ok = got is not None and all(
                    g.shape == r.shape and np.allclose(g, r, rtol=2e-5, atol=2e-6)
                    for g, r in zip(got, refs))
                if not ok:
                    failures += 1
                    detail = err or "max abs err " + ", ".join(
                        f"{np.abs(g - r).max():.3g}" for g, r in zip(got, refs))
                    print(f"FAIL {fn} {shape} {mode}: {detail}")
                else:
                    print(f"ok {fn} {shape} {mode}")
    print(f"fusion run: {total} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
