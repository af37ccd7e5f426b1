#!/usr/bin/env python3
"""Per-call overhead and first-call compile latency of the C++ API, beside
einops and PyTorch in the same run.

EinAPIBench (bench/cpp_api_bench.cpp) times each C++ API call on tiny
tensors (its time is nearly all overhead): the median over batches of the
time per cached call, and the first call of each operation in a fresh
process, once with an empty disk cache (a compilation) and once with the
cache it left (a load). The same calls are timed here through einops on
numpy arrays, einops on torch tensors, and plain numpy / torch.

    python3 bench/cpp_api_overhead.py --bench build/bin/EinAPIBench [--markdown]
"""
import argparse
import os
import platform
import subprocess
import tempfile

import numpy as np

from call_overhead import per_call  # the same timing as the other overhead bench


def cpu_isa():
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return platform.machine()
    if " avx512f" in flags:
        return "AVX-512"
    if " avx2" in flags:
        return "AVX2"
    return platform.machine()


def run_bench(path, mode, cache):
    out = subprocess.run([path, mode], capture_output=True, text=True, check=True,
                         env=dict(os.environ, EIN_CACHE_DIR=cache)).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True, help="EinAPIBench")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        cold = run_bench(args.bench, "first", cache)     # compiles
        warm = run_bench(args.bench, "overhead", cache)  # loads, then times calls

    import einops
    peers = {}
    x = np.ones((2, 3, 8), np.float32)
    a = np.ones((4, 4), np.float32) * 0.5
    v = np.ones((8,), np.float32) * 0.5
    peers["view_rearrange"] = {
        "einops+numpy": per_call(lambda: einops.rearrange(x, "b s (h d) -> b h s d", h=2)),
        "numpy": per_call(lambda: x.reshape(2, 3, 2, 4).transpose(0, 2, 1, 3)),
    }
    peers["kernel_einsum_4x4"] = {
        "einops+numpy": per_call(lambda: einops.einsum(a, a, "i j, j k -> i k")),
        "numpy": per_call(lambda: np.einsum("ij,jk->ik", a, a)),
    }
    peers["kernel_reduce"] = {
        "einops+numpy": per_call(lambda: einops.reduce(x, "b s c -> b c", "sum")),
        "numpy": per_call(lambda: x.sum(axis=1)),
    }
    peers["kernel_exp_8"] = {"numpy": per_call(lambda: np.exp(v))}
    peers["kernel_rearrange_copy"] = {
        "einops+numpy": per_call(lambda: einops.rearrange(x, "b s c -> (c s) b")),
        "numpy": per_call(lambda: x.transpose(2, 1, 0).reshape(24, 2)),
    }
    try:
        import torch
        torch.set_num_threads(2)
        tx, ta, tv = (torch.from_numpy(t) for t in (x, a, v))
        peers["view_rearrange"]["einops+torch"] = per_call(
            lambda: einops.rearrange(tx, "b s (h d) -> b h s d", h=2))
        peers["view_rearrange"]["torch"] = per_call(
            lambda: tx.view(2, 3, 2, 4).permute(0, 2, 1, 3))
        peers["kernel_einsum_4x4"]["einops+torch"] = per_call(
            lambda: einops.einsum(ta, ta, "i j, j k -> i k"))
        peers["kernel_einsum_4x4"]["torch"] = per_call(lambda: torch.einsum("ij,jk->ik", ta, ta))
        peers["kernel_reduce"]["einops+torch"] = per_call(
            lambda: einops.reduce(tx, "b s c -> b c", "sum"))
        peers["kernel_reduce"]["torch"] = per_call(lambda: tx.sum(dim=1))
        peers["kernel_exp_8"]["torch"] = per_call(lambda: torch.exp(tv))
        peers["kernel_rearrange_copy"]["einops+torch"] = per_call(
            lambda: einops.rearrange(tx, "b s c -> (c s) b"))
        peers["kernel_rearrange_copy"]["torch"] = per_call(
            lambda: tx.permute(2, 1, 0).reshape(24, 2))
    except ImportError:
        pass

    names = ["einops+numpy", "einops+torch", "numpy", "torch"]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"ISA {cpu_isa()}; times per call in microseconds (median)")
    header = ["call", "ein C++ API"] + names
    rows = []
    for key in ["view_rearrange", "kernel_einsum_4x4", "kernel_reduce", "kernel_exp_8",
                "kernel_rearrange_copy"]:
        row = [key, f"{warm[key] * 1e6:.2f}"]
        for n in names:
            t = peers[key].get(n)
            row.append(f"{t * 1e6:.2f}" if t is not None else "-")
        rows.append(row)
    first = []
    for key in ["rearrange_view", "einsum", "reduce", "exp", "rearrange_copy"]:
        k = "first_" + key
        first.append([key, f"{cold[k] * 1e3:.2f}", f"{warm[k] * 1e3:.3f}"])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        print()
        print("| first call | compiled (ms) | from the disk cache (ms) |")
        print("|---|---|---|")
        for r in first:
            print("| " + " | ".join(r) + " |")
    else:
        print("  ".join(f"{h:>22}" for h in header))
        for r in rows:
            print("  ".join(f"{c:>22}" for c in r))
        print()
        print(f"{'first call':>22}  {'compiled ms':>14}  {'from disk cache ms':>20}")
        for r in first:
            print(f"{r[0]:>22}  {r[1]:>14}  {r[2]:>20}")


if __name__ == "__main__":
    main()
