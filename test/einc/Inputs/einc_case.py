# Runs one einc function on numpy inputs and compares its output with an
# oracle: the harness the *_run.py scripts of this folder share.
import os
import subprocess

import numpy as np


def _run_args(einc, source, fn, inputs, tmp, tag, extra):
    """The `einc run` command on `inputs` saved under `tmp` with prefix
    `tag`, and its output path (removed if a previous run left it)."""
    args = [einc, "run", source, "--fn", fn, *extra]
    for name, value in inputs:
        path = os.path.join(tmp, f"{tag}-{name}.npy")
        np.save(path, value)
        args += ["--in", f"{name}={path}"]
    out = os.path.join(tmp, f"{tag}-out.npy")
    if os.path.exists(out):
        os.remove(out)
    return args + ["--out", out], out


def run_refused(einc, source, fn, inputs, tmp, tag, extra=()):
    """Runs `einc run` on inputs it should refuse; returns (exit code,
    whether the output file was written, stderr)."""
    args, out = _run_args(einc, source, fn, inputs, tmp, tag, extra)
    run = subprocess.run(args, capture_output=True, text=True)
    return run.returncode, os.path.exists(out), run.stderr


def run_case(einc, source, fn, inputs, oracle, tmp, tag, label, extra=()):
    """Saves `inputs` ([(param, array)]) under `tmp` with prefix `tag`, runs
    `einc run`, compares with `oracle(*arrays)` (f32, rtol = atol = 1e-5)
    and prints one line: `ok LABEL -> SHAPE` or `FAIL LABEL: why`. Returns
    True when the case passed. `extra` are further einc arguments."""
    args, out = _run_args(einc, source, fn, inputs, tmp, tag, extra)
    run = subprocess.run(args, capture_output=True, text=True)
    expected = np.asarray(oracle(*[v for _, v in inputs]), np.float32)
    if run.returncode != 0:
        print(f"FAIL {label}: exit {run.returncode}: {run.stderr.strip()}")
        return False
    got = np.load(out)
    if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
        print(f"FAIL {label}: got shape {got.shape}, expected {expected.shape}")
        return False
    print(f"ok {label} -> {got.shape}")
    return True


def run_target_cases(cases):
    """The main of a script run as `SCRIPT EINC SOURCE TMP TARGET`: runs each
    (function, inputs, oracle) of `cases` with --target=TARGET through
    run_case and prints one line per case, then `N failure(s)`."""
    import sys
    einc, source, tmp, target = sys.argv[1:5]
    failures = 0
    for i, (fn, inputs, oracle) in enumerate(cases):
        failures += not run_case(einc, source, fn, inputs, oracle, tmp,
                                 f"{target}-{i}", f"{fn} on {target}",
                                 [f"--target={target}"])
    print(f"{failures} failure(s)")
