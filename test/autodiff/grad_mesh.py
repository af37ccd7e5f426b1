# Sharded gradients (issue 30: "every op of the execution corpus that has a
# sharded variant, and its gradient"): each case of grad_fd.py with one of
# its named dims of even size split over a mesh axis (`mesh tp` and `shard
# NAME -> tp` before its source), run by `einc run --mesh tp=2 --ranks 2
# --simulate`, its loss and gradients against the same oracle as grad_fd.py
# (the numpy forward and central finite differences, in f64), or refused by
# name (mesh_corpus.py's refusals). Never a wrong answer.
#
#   grad_mesh.py EINC TMPDIR [--sample N] [--offset K|rotate] [EXTRA...]
#
# Prints `ok NAME@DIM`, `refused NAME@DIM: why` (with --verbose) or
# `FAIL NAME@DIM: why` per variant, then `mesh grad: V variants, E equal, R
# refused, F failures`; exits 1 on any failure.
import argparse
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "run"))
import grad_fd as gf  # noqa: E402
import mesh_corpus  # noqa: E402
import run_corpus as rc  # noqa: E402

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def variants(ranks):
    """(case, its seed, the dim split): one per named dim of a size that
    ranks divides (a dim written in a composed group, `(h d)`, is left
    out: only its major factor may be split, and the checker says so)."""
    out = []
    for i, case in enumerate(gf.CASES):
        seed = 1000 + i  # grad_fd.py's: the same inputs
        inputs, _ = gf.case_inputs(case, seed)
        sizes = {}
        for name, shape, _ in case.params:
            tokens = shape.split()
            if len(tokens) != inputs[name].ndim:
                continue
            for t, n in zip(tokens, inputs[name].shape):
                if NAME.match(t):
                    sizes.setdefault(t, n)
        for dim in sorted(sizes):
            if sizes[dim] >= ranks and sizes[dim] % ranks == 0:
                out.append((case, seed, dim))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("einc")
    ap.add_argument("tmp")
    ap.add_argument("--sample", type=int, default=1,
                    help="run 1 variant in N, from --offset")
    ap.add_argument("--offset", default="0", metavar="K|rotate")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--verbose", action="store_true")
    args, extra = ap.parse_known_args()
    chosen = variants(args.ranks)[rc.sample_offset(args)::max(1, args.sample)]
    mesh = ["--mesh", f"tp={args.ranks}", "--ranks", str(args.ranks),
            "--simulate"] + extra
    os.makedirs(args.tmp, exist_ok=True)

    def one(v):
        case, seed, dim = v
        return gf.run(case, args.einc, args.tmp, mesh, seed,
                      (dim, f"mesh tp\nshard {dim} -> tp\n",
                       mesh_corpus.REFUSALS))

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        lines = list(pool.map(one, chosen))
    counts = {"ok": 0, "refused": 0, "FAIL": 0}
    for line in lines:
        kind = line.split(" ", 1)[0]
        counts[kind] += 1
        if kind == "FAIL" or args.verbose:
            print(line)
    print(f"mesh grad: {len(chosen)} variants, {counts['ok']} equal, "
          f"{counts['refused']} refused, {counts['FAIL']} failures")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
