"""One function of a .ein file through `einc run`, its results against
numpy references: what Inputs/fusion_run.py and Inputs/rows_run.py do per
function."""

import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "run"))
import run_corpus as rc  # noqa: E402  (RTOL: one place)


def run_compare(einc, source, fn, inputs, outs, work, flags, tag):
    """Runs `fn` of `source` with `flags` on `inputs` ([(name, array)], saved
    under `work` with names starting `tag`) and compares each result with
    its reference (`outs`: [(dtype, array)]) at the dtype's tolerance.
    Returns what differed, or 'ok'."""
    args = [einc, "run", source, "--fn", fn] + flags
    for name, value in inputs:
        path = os.path.join(work, f"{tag}_{name}.npy")
        np.save(path, value)
        args += ["--in", f"{name}={path}"]
    paths = [os.path.join(work, f"{tag}_out{k}.npy") for k in range(len(outs))]
    for path in paths:
        args += ["--out", path]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        return f"einc exited {run.returncode}: {run.stderr.strip()}"
    bad = []
    for k, ((dtype, ref), path) in enumerate(zip(outs, paths)):
        got = np.load(path).astype(np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=rc.RTOL[dtype], atol=rc.RTOL[dtype]):
            bad.append(f"out{k} differs (max error {np.max(np.abs(got - ref)) if got.shape == ref.shape else got.shape})")
    return "ok" if not bad else "; ".join(bad)
