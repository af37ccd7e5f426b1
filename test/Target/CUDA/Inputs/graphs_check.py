"""Runs the program einc built from graphs.ein (its main(), emulated CUDA)
plainly, with EIN_GRAPH_REPEAT=3 (direct, captured into a CUDA Graph and
launched, replayed; the results kept are the replay's), with graphs off, and
with --time; each result against numpy. Prints one line per run.

usage: graphs_check.py PROG DIR
"""
import os
import subprocess
import sys

import numpy as np

prog, work = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)
n, v, d, e = 7, 11, 5, 6
tokens = rng.integers(0, v, n).astype(np.int64)
table = rng.standard_normal((v, d)).astype(np.float32)
w = rng.standard_normal((d, e)).astype(np.float32)
h = table[tokens].astype(np.float64) @ w
want = np.exp(h - h.max(axis=1, keepdims=True)) * n


def run(name, env=None, extra=()):
    args = [prog, *extra]
    for array in (tokens, table, w):
        path = os.path.join(work, f"{name}-in{len(args)}.bin")
        array.tofile(path)
        strides = [s // array.itemsize for s in array.strides]
        args += [path, *map(str, array.shape), *map(str, strides)]
    out = os.path.join(work, f"{name}-out.bin")
    args += [out, str(n), str(e)]
    proc = subprocess.run(args, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))
    if proc.returncode != 0:
        print(f"{name}: exit {proc.returncode}: {proc.stderr.strip()}")
        return
    got = np.fromfile(out, dtype=np.float32).reshape(n, e)
    error = np.abs(got - want).max()
    said = " ".join(line for line in proc.stdout.splitlines()
                    if line.startswith("ein-"))
    print(f"{name}: {'ok' if error < 1e-4 else f'WRONG (max error {error})'}"
          f" {said}".rstrip())


run("plain")
run("repeat", {"EIN_GRAPH_REPEAT": "3"})
run("repeat-off", {"EIN_GRAPH_REPEAT": "3", "EIN_CUDA_GRAPHS": "0"})
run("time", extra=["--time"])
tokens[3] = v  # out of range: the take's error, found by a direct call
run("bad-id")
