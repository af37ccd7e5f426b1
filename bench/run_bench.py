#!/usr/bin/env python3
"""Side-by-side CPU benchmark: einc-compiled code against numpy (and einops,
torch when installed), in one run, on the workloads of issue 3; each einc
workload twice, size-specialised and size-generic.

Each workload is JIT-compiled once by `einc run --time` (compile time is not
timed: einc reports the median of repeated calls after a warm-up); numpy is
timed in this process the same way (warm-up, then the median of calls over
at least 0.2 s). The table prints times and the ratio of throughputs
(> 1 means einc is faster). Results are also checked against numpy.

  python3 bench/run_bench.py --einc build/bin/einc [--quick] [--markdown]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def median_time(fn, min_total=0.2, min_calls=5, max_total=5.0):
    fn()
    samples = []
    total = 0.0
    while total < min_total or (len(samples) < min_calls and total < max_total):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        samples.append(dt)
        total += dt
    samples.sort()
    return samples[len(samples) // 2]


def einc_time(einc, fn, inputs, tmp, extra=()):
    args = [einc, "run", os.path.join(HERE, "workloads.ein"), "--fn", fn, "--time"]
    args += list(extra)
    for name, array in inputs.items():
        path = os.path.join(tmp, f"{fn}_{name}.npy")
        np.save(path, array)
        args += ["--in", f"{name}={path}"]
    out = os.path.join(tmp, f"{fn}_out.npy")
    args += ["--out", out]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"einc failed on {fn}: {proc.stderr}")
    m = re.search(r"time: ([0-9.e+-]+) ms", proc.stdout)
    return float(m.group(1)) / 1e3, np.load(out)


def torch_peer(run):
    """{"torch": fn} running `run(as_tensor)` on torch's CPU with 2 threads,
    or {} when torch is not installed."""
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(2)
    return {"torch (2 threads)": lambda: run(torch.from_numpy)}


def workloads(quick):
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s, dtype=np.float32)
    n = 512 if quick else 2048
    a, b = f(n, n), f(n, n)
    q, k = f(8, 8, 256, 64), f(8, 8, 256, 64)
    x = f(16, 1024, 16 * 64) if not quick else f(4, 256, 16 * 64)
    r = f(16, 1024, 4096) if not quick else f(4, 256, 1024)
    yield ("matmul %d^3" % n, "matmul", {"a": a, "b": b}, 2.0 * n ** 3,
           dict({"numpy.matmul": lambda: np.matmul(a, b)},
                **torch_peer(lambda t: t(a) @ t(b))), lambda: a @ b, "GFLOP/s")
    yield ("attention scores (8,8,256,64)", "scores", {"q": q, "k": k},
           2.0 * 8 * 8 * 256 * 256 * 64,
           {"numpy.einsum(optimize=True)":
            lambda: np.einsum("bhsd,bhtd->bhst", q, k, optimize=True)},
           lambda: np.einsum("bhsd,bhtd->bhst", q, k), "GFLOP/s")
    # Ragged and small GEMMs (m k n): edges in every block; no packing pays
    # for itself at the small ones.
    for (mm, kk, nn) in ([(1000, 1001, 999)] if not quick else []) + [
            (64, 64, 64), (100, 37, 50)]:
        ra, rb = f(mm, kk), f(kk, nn)
        yield ("matmul %dx%dx%d (m k n)" % (mm, kk, nn), "matmul",
               {"a": ra, "b": rb}, 2.0 * mm * kk * nn,
               dict({"numpy.matmul": lambda ra=ra, rb=rb: np.matmul(ra, rb)},
                    **torch_peer(lambda t, ra=ra, rb=rb: t(ra) @ t(rb))),
               lambda ra=ra, rb=rb: ra @ rb, "GFLOP/s")
    # The multi-head projection: x f32[8, 512, 8 * 64] split into 8 heads,
    # each projected by w f32[64, 64]; peers run it as one flat matmul.
    xm, wm = f(8, 512, 8 * 64), f(64, 64)
    yield ("multihead proj x(8,512,8*64) w(64,64)", "multihead_proj",
           {"x": xm, "w": wm}, 2.0 * 8 * 512 * 8 * 64 * 64,
           dict({"numpy x.reshape(-1, 64) @ w":
                 lambda: (xm.reshape(-1, 64) @ wm).reshape(8, 512, 8, 64)},
                **torch_peer(lambda t: (t(xm).view(-1, 64) @ t(wm)).view(8, 512, 8, 64))),
           lambda: (xm.reshape(-1, 64) @ wm).reshape(8, 512, 8, 64), "GFLOP/s")
    # The same matmul with A given transposed (k m): read through the
    # packing step of the contraction, no transpose pass.
    at = np.ascontiguousarray(a.T)
    yield ("matmul %d^3, A given as k m" % n, "matmul_at", {"a": at, "b": b}, 2.0 * n ** 3,
           {"numpy.matmul(a.T, b)": lambda: np.matmul(at.T, b)}, lambda: at.T @ b, "GFLOP/s")
    bs, s, hd = x.shape
    yield ("b s (h d) -> b h s d %s" % (x.shape,), "split_heads", {"x": x},
           2.0 * x.nbytes,
           {"numpy reshape+transpose+copy":
            lambda: np.ascontiguousarray(x.reshape(bs, s, 16, hd // 16).transpose(0, 2, 1, 3))},
           lambda: x.reshape(bs, s, 16, hd // 16).transpose(0, 2, 1, 3), "GB/s")
    yield ("reduce mean last axis %s" % (r.shape,), "mean_last", {"x": r},
           float(r.nbytes), {"numpy.mean": lambda: r.mean(axis=2)},
           lambda: r.mean(axis=2), "GB/s")
    yield ("reduce sum first axis %s" % (r.shape,), "sum_first", {"x": r},
           float(r.nbytes), {"numpy.sum": lambda: r.sum(axis=0)},
           lambda: r.sum(axis=0), "GB/s")
    # Mixed precision: 16- and 8-bit storage, f32 accumulation and result.
    # numpy has no fp8 and no f16 BLAS: its peer widens to f32 and calls
    # OpenBLAS (for fp8 the f32 copies are made outside the timing).
    m = 256 if quick else 1024
    h1, h2 = f(m, m).astype(np.float16), f(m, m).astype(np.float16)
    yield ("f16 matmul %d^3, f32 acc" % m, "matmul_f16", {"a": h1, "b": h2}, 2.0 * m ** 3,
           {"numpy widen f16 to f32 + matmul":
            lambda: h1.astype(np.float32) @ h2.astype(np.float32)},
           lambda: h1.astype(np.float32) @ h2.astype(np.float32), "GFLOP/s")
    # e4m3 values k/8, |k| <= 15 (at most 4 significant bits), as f32 files
    # that einc reads exactly.
    e1, e2 = (rng.integers(-15, 16, (m, m)).astype(np.float32) / 8 for _ in range(2))
    yield ("f8e4m3 matmul %d^3, f32 acc" % m, "matmul_e4m3", {"a": e1, "b": e2}, 2.0 * m ** 3,
           {"numpy.matmul on f32 copies": lambda: e1 @ e2},
           lambda: e1 @ e2, "GFLOP/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", default="",
                    help="run only the workloads whose title contains this")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for title, fn, inputs, work, peers, reference, unit in workloads(args.quick):
            if args.only not in title:
                continue
            scale = 1e9
            t_ein, result = einc_time(args.einc, fn, inputs, tmp)
            # The same function compiled size-generic (no size known at
            # compile time, as `einc build` makes it), timed side by side.
            t_gen, generic = einc_time(args.einc, fn, inputs, tmp,
                                       ["--size-generic"])
            expected = reference()
            err = max(float(np.max(np.abs(r - expected)) /
                            max(1.0, float(np.max(np.abs(expected)))))
                      for r in (result, generic))
            for peer, run in peers.items():
                t_peer = median_time(run)
                rows.append((title, peer, t_ein, t_peer, work / t_ein / scale,
                             work / t_peer / scale, unit, t_peer / t_ein, err,
                             t_ein / t_gen))
    header = ("workload", "peer", "einc ms", "peer ms", "einc rate",
              "peer rate", "einc/peer", "max rel err", "generic/specialised")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
    for (title, peer, te, tp, re_, rp, unit, ratio, err, gen) in rows:
        cells = (title, peer, "%.3f" % (te * 1e3), "%.3f" % (tp * 1e3),
                 "%.3g %s" % (re_, unit), "%.3g %s" % (rp, unit),
                 "%.3fx" % ratio, "%.1e" % err, "%.2fx" % gen)
        if args.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print("  ".join(cells))
    bad = [r for r in rows if r[8] > 1e-3]
    if bad:
        print("result mismatch against numpy:", [r[0] for r in bad])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
