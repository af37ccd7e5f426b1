#!/usr/bin/env python3
"""Time and quality of the einsum contraction order (lib/Analysis/
ContractionOrder.cpp) on large einsums: 20-operand chains, rings, grids,
stars, random tensor networks (and one of 13 operands, the exhaustive
search's largest), against opt_einsum's 'dp' and 'greedy'.

The time of one search is measured through `einc report`: a file with the
einsum in REPEAT functions minus a file with it in one, divided by
REPEAT - 1 (so process start and parsing cancel), best of three.

  python3 bench/contraction_order.py --einc build/bin/einc [--repeat 11] [--dp-timeout 60]
"""
import argparse
import os
import string
import subprocess
import sys
import tempfile
import time

import numpy as np
import opt_einsum as oe

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "run"))
from opt_einsum_equations import random_equation  # noqa: E402

LETTERS = string.ascii_letters


def chain(n, rng):
    eq = ",".join(LETTERS[i] + LETTERS[i + 1] for i in range(n)) + "->" + LETTERS[0] + LETTERS[n]
    return eq, {c: int(rng.integers(2, 64)) for c in LETTERS[: n + 1]}


def ring(n, rng):
    terms = [LETTERS[i] + LETTERS[(i + 1) % n] for i in range(n)]
    return ",".join(terms) + "->", {c: int(rng.integers(2, 64)) for c in LETTERS[:n]}


def grid(rows, cols, rng):
    bonds = {}

    def bond(a, b):
        key = (min(a, b), max(a, b))
        if key not in bonds:
            bonds[key] = LETTERS[len(bonds)]
        return bonds[key]

    terms = []
    for r in range(rows):
        for c in range(cols):
            t = ""
            for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < rows and 0 <= cc < cols:
                    t += bond(r * cols + c, rr * cols + cc)
            terms.append(t)
    return ",".join(terms) + "->", {c: int(rng.integers(2, 8)) for c in bonds.values()}


def star(n, rng):
    # A hub "abc...": every other operand a vector over one of its indices.
    hub = LETTERS[: n - 1]
    return hub + "," + ",".join(hub) + "->", {c: int(rng.integers(2, 6)) for c in hub}


def shared_sum(n, rng):
    # Every operand holds the summed index 'z': one clique.
    terms = [LETTERS[i] + "z" for i in range(n)]
    out = LETTERS[:n]
    sizes = {c: int(rng.integers(2, 8)) for c in out}
    sizes["z"] = 4
    return ",".join(terms) + "->" + out, sizes


def hadamard(n, rng):
    return ",".join(["ab"] * n) + "->ab", {"a": 30, "b": 40}


def random_network(n, regularity, rng):
    return random_equation(rng, n, regularity)


def shapes_of(eq, sizes):
    return [tuple(sizes[c] for c in t) for t in eq.split("->")[0].split(",")]


def ein_file(path, eq, sizes, copies):
    lhs, rhs = eq.split("->")
    terms = lhs.split(",")
    pattern = ", ".join(" ".join(t) for t in terms) + " -> " + " ".join(rhs)
    params = ", ".join(f'x{i}: f32["{" ".join(str(sizes[c]) for c in t)}"]' for i, t in enumerate(terms))
    args = "".join(f"x{i}, " for i in range(len(terms)))
    out = " ".join(str(sizes[c]) for c in rhs)
    with open(path, "w") as f:
        for k in range(copies):
            f.write(f'def f{k}({params}) -> f32["{out}"]:\n    return einsum({args}"{pattern}")\n\n')


def report(einc, path):
    t0 = time.perf_counter()
    proc = subprocess.run([einc, "report", path, "--json"], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"einc report failed: {proc.stderr}")
    import json
    return dt, json.loads(proc.stdout)["functions"][0]["ops"][0]["flops"]


def opt_einsum_dp(eq, shapes, timeout):
    """opt_einsum's 'dp' count and time, in a child process (it can take
    hours on a star); (None, timeout) when it does not finish in time."""
    code = ("import sys, time, opt_einsum as oe; t = time.perf_counter(); "
            f"c = oe.contract_path({eq!r}, *{shapes!r}, shapes=True, optimize='dp')[1].opt_cost; "
            "print(int(c), time.perf_counter() - t)")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=timeout, check=True).stdout.split()
    except subprocess.TimeoutExpired:
        return None, timeout
    return int(out[0]), float(out[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--dp-timeout", type=float, default=60, help="seconds for opt_einsum's dp")
    args = ap.parse_args()
    if args.repeat < 2:
        ap.error("--repeat must be at least 2 (the time per search is the difference of two runs)")
    rng = np.random.default_rng(3)
    cases = [("chain 20", chain(20, rng)), ("ring 20", ring(20, rng)), ("grid 4x5", grid(4, 5, rng)),
             ("star 1+19", star(20, rng)), ("shared index 20", shared_sum(20, rng)),
             ("hadamard 20", hadamard(20, rng))]
    for reg in (3, 4):
        for seed in range(3):
            cases.append((f"random reg {reg} #{seed}", random_network(20, reg, rng)))
    # 13 operands: the most the exhaustive search takes (every order).
    cases.append(("random reg 3, 13 operands", random_network(13, 3, rng)))
    print("| einsum (20 operands unless said) | ms per search | ein FLOPs | dp FLOPs | greedy FLOPs | ein/dp | dp s |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        one, many = os.path.join(tmp, "one.ein"), os.path.join(tmp, "many.ein")
        for name, (eq, sizes) in cases:
            ein_file(one, eq, sizes, 1)
            ein_file(many, eq, sizes, args.repeat)
            best = float("inf")
            for _ in range(3):
                t1, flops = report(args.einc, one)
                tn, _ = report(args.einc, many)
                best = min(best, (tn - t1) / (args.repeat - 1))
            shapes = shapes_of(eq, sizes)
            greedy = int(oe.contract_path(eq, *shapes, shapes=True, optimize="greedy")[1].opt_cost)
            dp, dp_s = opt_einsum_dp(eq, shapes, args.dp_timeout)
            dp_text = f"{dp:.3e}" if dp else f"(> {args.dp_timeout} s)"
            ratio = f"{flops / dp:.3f}" if dp else "-"
            print(f"| {name} | {max(best, 0) * 1e3:.1f} | {flops:.3e} | {dp_text} | {greedy:.3e} | "
                  f"{ratio} | {dp_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
