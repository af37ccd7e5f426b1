#!/usr/bin/env python3
"""Side-by-side CPU benchmark of elementwise math and max/min reductions.

einc (JIT, `einc run --time`: the median of repeated calls after a warm-up,
compile time excluded) against torch on the CPU (torch.set_num_threads(2))
and numpy, in one run, on 16M-element f32 tensors (4096 x 4096; --quick:
1024 x 1024). Peers are timed in this process the same way (warm-up, then
the median of calls over at least 0.2 s). Each configuration is measured
--repeat times; the table gives the median einc/peer throughput ratio
(> 1: einc is faster) and its range. Results are checked against torch.
The host's vector ISA is printed with the table.

  python3 bench/math_bench.py --einc build/bin/einc [--quick] [--repeat N]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_bench import median_time  # noqa: E402 (one timing rule for both)


def einc_time(einc, fn, x, tmp):
    path = os.path.join(tmp, "x.npy")
    np.save(path, x)
    out = os.path.join(tmp, f"{fn}_out.npy")
    args = [einc, "run", os.path.join(HERE, "math_workloads.ein"), "--fn", fn,
            "--time", "--in", f"x={path}", "--out", out]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"einc failed on {fn}: {proc.stderr}")
    m = re.search(r"time: ([0-9.e+-]+) ms", proc.stdout)
    return float(m.group(1)) / 1e3, np.load(out)


def isa():
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        pass
    return "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "SSE"


def workloads(torch, n):
    F = torch.nn.functional
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n), dtype=np.float32) * 4
    pos = np.abs(x) + np.float32(1e-3)
    tx, tpos = torch.from_numpy(x), torch.from_numpy(pos)
    sig = lambda: 1 / (1 + np.exp(-x))
    return [
        ("exp", "exp_", x, torch.exp, tx, lambda: np.exp(x)),
        ("log", "log_", pos, torch.log, tpos, lambda: np.log(pos)),
        ("tanh", "tanh_", x, torch.tanh, tx, lambda: np.tanh(x)),
        ("sigmoid", "sigmoid_", x, torch.sigmoid, tx, sig),
        ("silu", "silu_", x, F.silu, tx, lambda: x * sig()),
        ("gelu (erf)", "gelu_", x, F.gelu, tx, None),
        ("gelu_tanh", "gelu_tanh_", x, lambda t: F.gelu(t, approximate="tanh"), tx, None),
        ("max over last axis", "max_last", x, lambda t: torch.amax(t, -1), tx,
         lambda: np.max(x, -1)),
        ("min over last axis", "min_last", x, lambda t: torch.amin(t, -1), tx,
         lambda: np.min(x, -1)),
    ]


def reductions(torch, quick):
    """Reductions over the last axis: long rows ((16, 1024, 4096) as
    16384 x 4096) and short ones (65536 x 64)."""
    rng = np.random.default_rng(1)
    shapes = [(1024, 4096), (4096, 64)] if quick else [(16384, 4096), (65536, 64)]
    out = []
    for shape in shapes:
        x = rng.standard_normal(shape, dtype=np.float32)
        tx = torch.from_numpy(x)
        for op, tfn in (("max", torch.amax), ("min", torch.amin),
                        ("mean", torch.mean), ("sum", torch.sum)):
            out.append((f"{op} over last axis {shape}", f"{op}_last", x,
                        lambda t, tfn=tfn: tfn(t, -1), tx,
                        lambda x=x, op=op: getattr(np, op)(x, -1)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--quick", action="store_true", help="1024 x 1024")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help="workloads whose title contains this")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(2)
    n = 1024 if args.quick else 4096
    print(f"{n}x{n} f32, ISA {isa()}, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), numpy {np.__version__}, "
          f"{args.repeat} runs: median [min, max]")
    print("| workload | einc ms | torch ms | numpy ms | einc/torch | einc/numpy | max err vs torch |")
    print("|---|---|---|---|---|---|---|")
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for title, fn, x, tfn, tx, nfn in (workloads(torch, n) +
                                           reductions(torch, args.quick)):
            if args.only and args.only not in title:
                continue
            te, tt, tn, err = [], [], [], 0.0
            for _ in range(args.repeat):
                t, got = einc_time(args.einc, fn, x, tmp)
                te.append(t)
                tt.append(median_time(lambda: tfn(tx)))
                if nfn:
                    tn.append(median_time(nfn))
                want = tfn(tx).numpy().astype(np.float64)
                scale = np.maximum(np.abs(want), 1.0)
                err = max(err, float(np.max(np.abs(got - want) / scale)))
            # A sum's rounding grows with the row: f32 accumulated in a
            # different order than torch's differs by about eps * sqrt(n).
            tol = 1e-5 * (max(1.0, x.shape[-1] / 64) if fn in ("sum_last", "mean_last")
                          else 1.0)
            if err > tol:
                bad.append(title)

            def cell(ts):
                return "%.2f" % (1e3 * np.median(ts)) if ts else "-"

            def ratio(ts):
                if not ts:
                    return "-"
                r = sorted(p / e for p, e in zip(ts, te))
                return "%.2fx [%.2f, %.2f]" % (np.median(r), r[0], r[-1])

            print(f"| {title} | {cell(te)} | {cell(tt)} | {cell(tn)} | "
                  f"{ratio(tt)} | {ratio(tn)} | {err:.1e} |")
            sys.stdout.flush()
    if bad:
        print("result mismatch against torch:", bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
