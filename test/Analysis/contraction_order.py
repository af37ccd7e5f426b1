#!/usr/bin/env python3
"""The einsum contraction order of the cost model checked against opt_einsum.

For every equation of opt_einsum's own tests (opt_einsum_equations.py, shared
with the execution corpus) under several assignments of concrete sizes, and
for seeded random contractions of 8 to 20 operands, this writes a .ein file
with one function per equation, reads ein's FLOP count and contraction order
from `einc report --json`, and checks with opt_einsum (3.4):

  * that the count ein reports is what opt_einsum counts for the order ein
    reports (contract_path(..., optimize=ein's path).opt_cost): the order is
    valid and its FLOPs are counted by opt_einsum's convention;
  * that it is no more than opt_einsum's best: the least opt_cost of its
    'optimal' (up to 8 operands; it is exponential), 'dp' and 'greedy'
    optimizers. opt_cost counts every
    step as flop_count(indices, something summed, terms): the product of
    the sizes of all indices of its operands, times 2 when an index is
    summed away (times 1 when not, for two operands), the convention of
    docs/cost-model.md. Both ein's orders and dp's may begin with
    one-operand steps that sum an index only that operand has.

And for more seeded random contractions of 14 to 20 operands, where ein's
search may give up its exact search (docs/cost-model.md), that ein's count
is no more than opt_einsum's 'greedy' ('dp' can take minutes on them).

Prints one FAIL line per violation, then a summary; exits 1 on a failure.

  python3 test/Analysis/contraction_order.py --einc build/bin/einc
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from fractions import Fraction

sys.dont_write_bytecode = True

try:
    import numpy as np
    import opt_einsum as oe
except ImportError as err:  # pragma: no cover - environment problem
    print(f"error: contraction_order.py needs numpy and opt_einsum "
          f"(scripts/setup.sh installs them): {err}", file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "run"))
from opt_einsum_equations import (  # noqa: E402
    OPT_EINSUM_FROZEN,
    ein_einsum_side,
    np_tokens,
    numpy_explicit,
    random_equation,
)

# The sizes opt_einsum's tests give its letters (opt_einsum/testing.py,
# _default_dim_dict); other letters get 3.
OPT_EINSUM_TEST_SIZES = dict(zip("abcdefghijklmopqABC",
                                 [2, 3, 4, 5, 4, 3, 2, 6, 5, 4, 3, 2, 5, 7, 4, 3, 2, 3, 4]))
OPTIMAL_MAX_OPERANDS = 8


def size_sets() -> list[tuple[str, object]]:
    """(name, letter -> size) for the fixed equations; '...' is two dims."""
    sets: list[tuple[str, object]] = [
        ("corpus", lambda c: 2 + (ord(c) * 7 + 3) % 3),  # run_corpus.py's
        ("opt_einsum", lambda c: OPT_EINSUM_TEST_SIZES.get(c, 3)),
    ]
    for seed, (lo, hi) in enumerate([(2, 9), (2, 30), (2, 100), (2, 1000)]):
        rng = np.random.default_rng(100 + seed)
        table = {c: int(rng.integers(lo, hi + 1))
                 for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"}
        sets.append((f"random{lo}-{hi}", table.get))
    return sets


def shape_of(term: str, sizes) -> tuple[int, ...]:
    shape: list[int] = []
    for tok in np_tokens(term):
        shape += [3, 2] if tok == "..." else [sizes(tok)]
    return tuple(shape)


def valid_equations() -> list[str]:
    """opt_einsum's equations that numpy accepts, outputs made explicit."""
    small = size_sets()[0][1]
    valid = []
    for eq in OPT_EINSUM_FROZEN:
        if any(t != "..." and not t.isalpha() for t in np_tokens(eq.replace(",", "").replace("->", ""))):
            continue  # stray dots: an error test of opt_einsum
        explicit = numpy_explicit(eq)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np.einsum(explicit, *[np.zeros(shape_of(t, small)) for t in explicit.split("->")[0].split(",")])
        except Exception:
            continue  # an error test of opt_einsum (invalid for numpy too)
        valid.append(explicit)
    return valid


def fixed_cases(equations: list[str], sizes) -> list[tuple[str, list[tuple[int, ...]]]]:
    """(explicit equation, shapes) for every equation under `sizes`."""
    return [(eq, [shape_of(t, sizes) for t in eq.split("->")[0].split(",")]) for eq in equations]


def random_case(rng, n: int, regularity: int, n_out: int, global_dim: bool):
    eq, size = random_equation(rng, n, regularity, n_out, global_dim)
    return eq, [tuple(size[c] for c in t) for t in eq.split("->")[0].split(",")]


def random_cases() -> list[tuple[str, list[tuple[int, ...]]]]:
    rng = np.random.default_rng(7)
    cases = []
    for n in range(8, 21):
        for regularity in (2, 3, 4):
            n_out = int(rng.integers(0, 4))
            cases.append(random_case(rng, n, regularity, n_out, global_dim=bool(n % 3 == 0)))
    return cases


def greedy_cases() -> list[tuple[str, list[tuple[int, ...]]]]:
    """Random networks of 14 to 20 operands checked against 'greedy' only:
    bench/contraction_order.py's "random reg 4 #1", then 28 more (seed 21:
    one of them, like that one, found ein's greedy worse than opt_einsum's
    when the two broke ties differently)."""
    eq = ("rJjhMeL,BJ,cKHxIz,orHmu,t,DNhvt,IEds,yCfpAz,bDc,lgbs,lCM,yGF,xek,un,"
          "wiGqm,pqdanAk,KF,iawvB,LNf,Egoj->")
    size = dict(zip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN",
                    [2, 8, 9, 8, 3, 7, 9, 6, 2, 6, 9, 9, 8, 6, 3, 2, 5, 2, 9, 6,
                     9, 7, 5, 7, 4, 7, 5, 4, 6, 4, 5, 4, 6, 4, 3, 4, 3, 8, 3, 3]))
    cases = [(eq, [tuple(size[c] for c in t) for t in eq[:-2].split(",")])]
    rng = np.random.default_rng(21)
    for n in range(14, 21):
        for regularity in (3, 4, 4, 5):
            if n * regularity // 2 + 4 > 52:
                regularity = 4  # random_equation has 52 index letters
            n_out = int(rng.integers(0, 3))
            cases.append(random_case(rng, n, regularity, n_out, global_dim=False))
    return cases


def ein_source(cases) -> str:
    lines = []
    for k, (eq, shapes) in enumerate(cases):
        lhs, rhs = eq.split("->")
        terms = lhs.split(",")
        pattern = ", ".join(ein_einsum_side(t) for t in terms) + " -> " + ein_einsum_side(rhs)
        params = ", ".join(f'x{i}: f32["{" ".join(map(str, s))}"]' for i, s in enumerate(shapes))
        size = {}
        for term, shape in zip(terms, shapes):
            dims = list(shape)
            for tok in np_tokens(term):
                if tok == "...":
                    size["..."], dims = dims[:2], dims[2:]
                else:
                    size[tok], dims = [dims[0]], dims[1:]
        out_shape = [d for tok in np_tokens(rhs) for d in size[tok]]
        args = "".join(f"x{i}, " for i in range(len(shapes)))
        lines.append(f'def f{k}({params}) -> f32["{" ".join(map(str, out_shape))}"]:\n'
                     f'    return einsum({args}"{pattern}")\n')
    return "\n".join(lines)


def ein_report(einc: str, cases, tmp: str, name: str) -> list[tuple[int, list]]:
    path = os.path.join(tmp, f"{name}.ein")
    with open(path, "w") as f:
        f.write(ein_source(cases))
    proc = subprocess.run([einc, "report", path, "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: einc report {path} failed:\n{proc.stderr}")
    functions = json.loads(proc.stdout)["functions"]
    result = []
    for k, fn in enumerate(functions):
        assert fn["name"] == f"f{k}", fn["name"]
        (op,) = [o for o in fn["ops"] if o["op"] == "einsum"]
        result.append((op["flops"], [tuple(p) for p in op.get("path", [])]))
    return result


def opt_cost(eq: str, shapes, optimize) -> tuple[int, list]:
    info = oe.contract_path(eq, *shapes, shapes=True, optimize=optimize)
    return int(info[1].opt_cost), info[0]


def check(label: str, eq: str, shapes, ein_flops: int, ein_path, stats,
          greedy_only: bool = False) -> list[str]:
    failures = []
    n = len(shapes)
    # The count of ein's own order, as opt_einsum counts it.
    if n >= 3:
        counted, _ = opt_cost(eq, shapes, list(ein_path))
        if counted != ein_flops:
            failures.append(f"FAIL {label} {eq} {shapes}: ein reports {ein_flops} FLOPs for "
                            f"order {ein_path}, opt_einsum counts {counted} for it")
    bounds = {}
    if n <= OPTIMAL_MAX_OPERANDS and not greedy_only:
        bounds["optimal"], _ = opt_cost(eq, shapes, "optimal")
    if not greedy_only:
        bounds["dp"], _ = opt_cost(eq, shapes, "dp")
    if n >= 3:
        bounds["greedy"], _ = opt_cost(eq, shapes, "greedy")
    if n >= 3 and any(len(step) == 1 for step in ein_path):
        stats["one_operand"] += 1
    best_name, best = min(bounds.items(), key=lambda kv: kv[1])
    if ein_flops > best:
        failures.append(f"FAIL {label} {eq} {shapes}: ein {ein_flops} FLOPs > "
                        f"opt_einsum {best_name} {best} (ein order {ein_path})")
    if best > 0:
        ratio = Fraction(ein_flops, best)
        if ratio > stats["worst"][0]:
            stats["worst"] = (ratio, f"{label} {eq}: ein {ein_flops}, opt_einsum {best_name} {best}")
    if ein_flops < best:
        stats["better"] += 1
    stats["checked"] += 1
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--einc", required=True, help="path to the einc binary")
    args = parser.parse_args()

    stats = {"checked": 0, "better": 0, "one_operand": 0, "worst": (Fraction(0), "")}
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        equations = valid_equations()
        groups = [(name, fixed_cases(equations, sizes)) for name, sizes in size_sets()]
        groups.append(("random", random_cases()))
        groups.append(("random-greedy", greedy_cases()))
        for name, cases in groups:
            for (eq, shapes), (flops, path) in zip(cases, ein_report(args.einc, cases, tmp, name)):
                failures += check(name, eq, shapes, flops, path, stats,
                                  greedy_only=name == "random-greedy")
    for line in failures:
        print(line)
    n_fixed = len(groups[0][1])
    ratio, where = stats["worst"]
    print(f"opt_einsum equations: {n_fixed} x {len(groups) - 2} size sets, "
          f"random: {len(groups[-2][1])} (8 to 20 operands), "
          f"{len(groups[-1][1])} against 'greedy' (14 to 20 operands)")
    print(f"ein below opt_einsum's best: {stats['better']}; ein orders with "
          f"one-operand steps: {stats['one_operand']}")
    print(f"largest ein/opt_einsum ratio: {float(ratio):.4f} ({where})")
    print(f"contraction order: {stats['checked']} checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
