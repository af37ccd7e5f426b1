#!/usr/bin/env python3
"""Per-call overhead of ein's einops functions against einops itself, on tiny
tensors (the cost of a call, not of its arithmetic), side by side in one run,
on numpy and on torch inputs.

Usage: PYTHONPATH=build/python python3 bench/python_overhead.py [--calls N]
       [--repeats R] [--clock wall|cpu]
Prints one row per (backend, case): the median time of one call in
microseconds for einops and for ein (the median over --repeats batches of
--calls calls each, after a warm-up that compiles ein's kernels), and their
ratio. --clock cpu times with this process's CPU time instead of the wall
clock: steadier on a loaded machine (tiny tensors run on the calling thread
in both, so the two agree on an idle one).
"""
import argparse
import os
import platform
import statistics
import time

import einops
import numpy as np

import ein

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

CASES = [
    # (name, function, args, keyword lengths)
    ("rearrange view", "rearrange", ("b s (h d) -> b h s d",), {"h": 2}),
    ("rearrange copy", "rearrange", ("b s c -> c (b s)",), {}),
    ("reduce sum", "reduce", ("b s (h d) -> b h", "sum"), {"h": 2}),
    ("repeat", "repeat", ("b s c -> b s c r",), {"r": 2}),
    ("einsum", "einsum", ("b s c, b t c -> b s t",), {}),
]


def per_call(fn, calls, repeats, clock):
    for _ in range(max(10, calls // 10)):
        fn()
    times = []
    for _ in range(repeats):
        start = clock()
        for _ in range(calls):
            fn()
        times.append((clock() - start) / calls)
    return statistics.median(times) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    backends = [("numpy", x)]
    if torch is not None:
        torch.set_num_threads(1)
        backends.append(("torch", torch.from_numpy(x.copy())))
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, einops {einops.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else "")
          + f"; {args.clock} clock, load average {os.getloadavg()[0]:.1f}")
    print(f"{'backend':8} {'case':16} {'einops us':>10} {'ein us':>10} {'ein/einops':>11}")
    for backend, t in backends:
        for name, op, pattern_args, lengths in CASES:
            def call(lib):
                f = getattr(lib, op)
                if op == "einsum":
                    return lambda: f(t, t, pattern_args[0])
                return lambda: f(t, *pattern_args, **lengths)
            a = call(einops)()
            b = call(ein)()
            assert np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6), name
            te = per_call(call(einops), args.calls, args.repeats, clock)
            ti = per_call(call(ein), args.calls, args.repeats, clock)
            print(f"{backend:8} {name:16} {te:10.2f} {ti:10.2f} {ti / te:11.2f}")


if __name__ == "__main__":
    main()
