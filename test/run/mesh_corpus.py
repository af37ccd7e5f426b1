#!/usr/bin/env python3
"""Sharded variants of the execution corpus (run_corpus.py) on simulated ranks.

For each corpus case that runs (exit 0) and names its parameters' dims, one
dim name of an even size is split over a mesh axis by a rule (`mesh tp` and
`shard NAME -> tp` prepended to the program), and the case runs with
`einc run --mesh tp=2 --ranks 2 --simulate` (--ranks N: tp=N, a dim
divisible by N). Its results must equal the
case's own reference (numpy / einops, run_corpus.compare's tolerances), or
the run must refuse by name (exit 1 or 2 with `error:` and a message that
says what is not supported, or a layout error of `einc check`): never a
wrong answer, a crash or a hang.

Output: one line per failure, then
    mesh corpus: N variants, E equal, R refused, F failures
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
import run_corpus as rc  # noqa: E402

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
PARAM = re.compile(r"(\w+)\s*:\s*\w+\[\"([^\"]*)\"\]")


def variant(case, ranks):
    """The case's source with one dim split over tp, or None."""
    if (case.expect_rc != 0 or case.files or case.in_args is not None
            or case.extra_args or "mesh" in case.source or case.xfail):
        return None
    header = case.source.split(f"def {case.fn}(", 1)
    if len(header) != 2:
        return None
    signature = header[1].split("->", 1)[0]
    inputs = dict(case.inputs)
    sizes = {}
    for param, type_ in PARAM.findall(signature):
        data = inputs.get(param)
        if not isinstance(data, np.ndarray):
            continue
        tokens = type_.split()
        if len(tokens) != data.ndim or not all(
                NAME.match(t) or t.isdigit() for t in tokens):
            continue
        for t, n in zip(tokens, data.shape):
            if NAME.match(t):
                sizes.setdefault(t, n)
    names = sorted(n for n, s in sizes.items()
                   if s >= ranks and s % ranks == 0)
    if not names:
        return None
    # The same choice every run: the case id picks among the names.
    name = names[sum(map(ord, case.cid)) % len(names)]
    return name, f"mesh tp\nshard {name} -> tp\n" + case.source


REFUSALS = ("not supported yet", "is declared replicated", "splits two axes",
            "splits two dims",
            "split along different mesh axes", "does not divide",
            "must be whole", "not supported", "entry check")


def run(einc, case, name, source, workdir, ranks, extra=()):
    d = os.path.join(workdir, rc.safe_name(case.cid))
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "f.ein")
    with open(src, "w") as f:
        f.write(source)
    cmd = [einc, "run", src, "--fn", case.fn, "--mesh", f"tp={ranks}",
           "--ranks", str(ranks), "--simulate"] + list(extra)
    for param, data in case.inputs:
        path = os.path.join(d, f"in_{param}.npy")
        np.save(path, np.asarray(data))
        cmd += ["--in", f"{param}={path}"]
    outs = [os.path.join(d, f"r{k}.npy") for k in range(len(case.outs))]
    for o in outs:
        cmd += ["--out", o]
    for dim, value in case.dims:
        cmd += ["--dim", f"{dim}={value}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=rc.EINC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "fail", f"timeout after {rc.EINC_TIMEOUT_S}s"
    errors = [l for l in (proc.stderr or "").splitlines() if "error:" in l]
    head = errors[0] if errors else (proc.stderr or "").strip()[:200]
    if proc.returncode in (1, 2) and "error:" in head:
        if any(r in proc.stderr for r in REFUSALS):
            return "refused", head
        return "fail", f"exit {proc.returncode}, not a refusal: {head}"
    if proc.returncode != 0:
        return "fail", f"exit {proc.returncode}: {head}"
    problems = []
    for k, (path, out) in enumerate(zip(outs, case.outs)):
        why = rc.compare(np.load(path), out)
        if why:
            problems.append(f"result {k}: {why}")
    return ("fail", "; ".join(problems)) if problems else ("equal", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--einc", required=True)
    ap.add_argument("--sample", type=int, default=1,
                    help="run 1 variant in N, from --offset")
    ap.add_argument("--offset", default="0", metavar="K|rotate",
                    help="the first variant of --sample (rotate: moves "
                    "with every commit, as run_corpus.py's)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ranks", type=int, default=2,
                    help="simulated ranks: the size of tp")
    ap.add_argument("--einc-arg", action="append", default=[],
                    help="an extra einc argument (--target=cuda-emulated)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    cases, _ = rc.all_run_cases()
    variants = []
    for case in cases:
        v = variant(case, args.ranks)
        if v:
            variants.append((case, *v))
    variants = variants[rc.sample_offset(args)::max(1, args.sample)]
    tmp = tempfile.mkdtemp()
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(
                lambda v: run(args.einc, v[0], v[1], v[2], tmp, args.ranks,
                              args.einc_arg),
                variants))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = {"equal": 0, "refused": 0, "fail": 0}
    for (case, name, _), (status, what) in zip(variants, results):
        counts[status] += 1
        if status == "fail" or (args.verbose and status == "refused"):
            print(f"{status.upper()} {case.cid} (shard {name} -> tp): {what}")
    print(f"mesh corpus: {len(variants)} variants, {counts['equal']} equal, "
          f"{counts['refused']} refused, {counts['fail']} failures")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
