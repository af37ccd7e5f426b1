#!/usr/bin/env python3
"""Per-call overhead of compiled ein functions against torch and numpy.

Each small function of bench/overhead.ein runs on tiny tensors (4 elements,
4x4): its time per call is nearly all overhead. It is timed, in one run and
side by side, through `einc run --time` (the JIT; the median of repeated
calls, input checks included), through an `einc build` object called from a
C program (the median over batches of calls of the C entry point), through
torch (CPU, torch.set_num_threads(2)) and through numpy. The large softmax
(8,8,512,512) shows time and minor page faults per call, its temporaries
reused across calls or not.

    python3 bench/call_overhead.py --einc build/bin/einc [--repeat 3]
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "overhead.ein")


def per_call(fn, target=0.05, batches=15):
    """Median seconds per call of fn over batches of calls (~target s each)."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt > target / 4 or n >= 1 << 20:
            break
        n *= 4
    n = max(1, int(n * target / max(dt, 1e-9)))
    samples = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def workloads(big):
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s, dtype=np.float32)
    w = [
        ("scale", "x * 2, n=4", {"x": f(4)}, lambda x: x * 2),
        ("rowsum", "sum over b, (4,4)", {"x": f(4, 4)}, lambda x: x.sum(-1)),
        ("matmul", "matmul 4x4x4", {"a": f(4, 4), "b": f(4, 4)},
         lambda a, b: a @ b),
        ("flatten", "a b -> (a b), (4,4)", {"x": f(4, 4)},
         lambda x: x.reshape(16)),
        ("transpose", "a b -> b a copy, (4,4)", {"x": f(4, 4)},
         None),
        ("chain", "exp(x*2+1), n=4", {"x": f(4)},
         None),
    ]
    if big:
        w.append(("softmax", "softmax (8,8,512,512)",
                  {"x": f(8, 8, 512, 512)}, None))
    return w


def peer_fns(name, arrays, torch):
    """numpy and torch callables computing what `name` computes."""
    a = list(arrays.values())
    t = [torch.from_numpy(v.copy()) for v in a]
    np_fn = {
        "scale": lambda: a[0] * 2.0,
        "rowsum": lambda: a[0].sum(-1),
        "matmul": lambda: a[0] @ a[1],
        "flatten": lambda: a[0].reshape(16).copy(),
        "transpose": lambda: np.ascontiguousarray(a[0].T),
        "chain": lambda: np.exp(a[0] * 2.0 + 1.0),
        "softmax": lambda: (lambda e: e / e.sum(-1, keepdims=True))(
            np.exp(a[0] - a[0].max(-1, keepdims=True))),
    }[name]
    torch_fn = None
    if torch is not None:
        torch_fn = {
            "scale": lambda: t[0] * 2.0,
            "rowsum": lambda: t[0].sum(-1),
            "matmul": lambda: t[0] @ t[1],
            "flatten": lambda: t[0].reshape(16).clone(),
            "transpose": lambda: t[0].t().contiguous(),
            "chain": lambda: torch.exp(t[0] * 2.0 + 1.0),
            "softmax": lambda: (lambda e: e / e.sum(-1, keepdim=True))(
                torch.exp(t[0] - t[0].amax(-1, keepdim=True))),
        }[name]
    return np_fn, torch_fn


def einc_jit(einc, name, arrays, tmp, env):
    args = [einc, "run", SOURCE, "--fn", name, "--time"]
    for p, v in arrays.items():
        path = os.path.join(tmp, f"{name}_{p}.npy")
        np.save(path, v)
        args += ["--in", f"{p}={path}"]
    out = os.path.join(tmp, f"{name}_out.npy")
    args += ["--out", out]
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"einc run {name}: {proc.stderr}")
    secs = float(re.search(r"time: ([0-9.e+-]+) ms", proc.stdout).group(1)) / 1e3
    m = re.search(r"faults: ([0-9.e+-]+)", proc.stdout)
    return secs, (float(m.group(1)) if m else None), np.load(out)


DRIVER = r"""
#include "overhead.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static long faults(void) {
  struct rusage u; getrusage(RUSAGE_SELF, &u); return u.ru_minflt;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
%(decls)s
static int call(void) { return %(call)s; }
int main(void) {
  %(init)s
  if (call() != 0) { printf("rc\n"); return 1; }
  long n = 1; double dt;
  for (;;) {
    double t0 = now();
    for (long i = 0; i < n; ++i) call();
    dt = now() - t0;
    if (dt > 0.0125 || n >= (1L << 22)) break;
    n *= 4;
  }
  n = (long)(n * 0.05 / (dt > 1e-9 ? dt : 1e-9)); if (n < 1) n = 1;
  double s[15]; long f0 = faults();
  for (int b = 0; b < 15; ++b) {
    double t0 = now();
    for (long i = 0; i < n; ++i) call();
    s[b] = (now() - t0) / n;
  }
  double fpc = (double)(faults() - f0) / (15.0 * n);
  qsort(s, 15, sizeof(double), cmp);
  printf("%%.9g %%.6g\n", s[7], fpc);
  return 0;
}
"""


def einc_aot(einc, name, arrays, out_shape, tmp, cc):
    obj = os.path.join(tmp, "overhead.o")
    hdr = os.path.join(tmp, "overhead.h")
    if not os.path.exists(obj):
        subprocess.run([einc, "build", SOURCE, "-o", obj, "--header", hdr],
                       check=True, capture_output=True)
    decls, init, args = [], [], []
    tensors = list(arrays.items()) + [("out", np.zeros(out_shape, np.float32))]
    for i, (p, v) in enumerate(tensors):
        strides = [s // 4 for s in v.strides]
        decls.append(f"static float t{i}[{max(v.size, 1)}];")
        decls.append(f"static const int64_t z{i}[] = {{{', '.join(map(str, v.shape)) or 0}}};")
        decls.append(f"static const int64_t r{i}[] = {{{', '.join(map(str, strides)) or 0}}};")
        init.append(f"for (long k = 0; k < {v.size}; ++k) t{i}[k] = "
                    f"(float)((k * 7) % 11) * 0.1f - 0.5f;")
        args.append(f"t{i}, {v.ndim}, z{i}, r{i}")
    src = DRIVER % {"decls": "\n".join(decls), "init": "\n  ".join(init),
                    "call": f"ein_{name}({', '.join(args)})"}
    c = os.path.join(tmp, f"drv_{name}.c")
    exe = os.path.join(tmp, f"drv_{name}")
    with open(c, "w") as fh:
        fh.write(src)
    subprocess.run([cc, "-O2", "-I", tmp, c, obj, "-o", exe,
                    "-L/usr/lib/llvm-19/lib", "-Wl,-rpath,/usr/lib/llvm-19/lib",
                    "-lomp", "-lm"], check=True)
    out = subprocess.run([exe], capture_output=True, text=True, check=True)
    secs, flt = out.stdout.split()
    return float(secs), float(flt)


def fmt_us(s):
    return f"{s * 1e6:.2f}" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the whole table (medians and ranges)")
    ap.add_argument("--no-big", action="store_true", help="skip the softmax")
    ap.add_argument("--cc", default="cc")
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(2)
    except ImportError:
        torch = None
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        flags = open("/proc/cpuinfo").read()
        isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    except OSError:
        isa = "?"
    print(f"# host: {cpu}, {os.cpu_count()} CPUs, {isa}; {platform.python_version()}, "
          f"numpy {np.__version__}, torch {torch.__version__ if torch else '-'}")
    env = dict(os.environ)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            for name, label, arrays, _ in workloads(not args.no_big):
                np_fn, torch_fn = peer_fns(name, arrays, torch)
                expected = np_fn()
                jit, jit_faults, got = einc_jit(args.einc, name, arrays, tmp, env)
                if not np.allclose(got, expected, rtol=1e-4, atol=1e-5):
                    raise RuntimeError(f"{name}: einc differs from numpy")
                res = {"jit": jit, "jit_faults": jit_faults}
                if name == "softmax":
                    # The same call without the cache of temporaries.
                    nocache = dict(env, EIN_ALLOC_CACHE_MIB="0")
                    res["jit_nocache"], res["jit_nocache_faults"], _ = einc_jit(
                        args.einc, name, arrays, tmp, nocache)
                res["aot"], res["aot_faults"] = einc_aot(
                    args.einc, name, arrays, expected.shape, tmp, args.cc)
                res["numpy"] = per_call(np_fn, batches=5 if name == "softmax" else 15)
                if torch_fn:
                    res["torch"] = per_call(torch_fn, batches=5 if name == "softmax" else 15)
                for k, v in res.items():
                    rows.setdefault((name, label), {}).setdefault(k, []).append(v)
                print(f"# run {r + 1}: {name}: " + ", ".join(
                    f"{k}={v:.3g}" for k, v in res.items() if v is not None),
                    file=sys.stderr)

    def cell(vals, scale=1e6):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "-"
        m = statistics.median(vals)
        if len(vals) == 1:
            return f"{m * scale:.3g}"
        return f"{m * scale:.3g} ({min(vals) * scale:.3g}–{max(vals) * scale:.3g})"

    print(f"\nmedian (range) over {args.repeat} runs; µs per call\n")
    print("| function | einc run (JIT) | einc build (C) | torch | numpy | "
          "JIT/torch | JIT/numpy |")
    print("|---|---|---|---|---|---|---|")
    for (name, label), res in rows.items():
        if name == "softmax":
            continue
        j, t, n = (statistics.median(res[k]) if k in res else None
                   for k in ("jit", "torch", "numpy"))
        print(f"| {label} | {cell(res['jit'])} | {cell(res['aot'])} | "
              f"{cell(res.get('torch', []))} | {cell(res['numpy'])} | "
              f"{(t / j if t else 0):.2f}x | {n / j:.2f}x |")
    for (name, label), res in rows.items():
        if name != "softmax":
            continue
        print(f"\n{label}: ms per call and minor page faults per call\n")
        print("| path | ms per call | minor faults per call |")
        print("|---|---|---|")
        print(f"| einc run, temporaries cached | {cell(res['jit'], 1e3)} | "
              f"{cell(res['jit_faults'], 1)} |")
        print(f"| einc run, EIN_ALLOC_CACHE_MIB=0 | {cell(res['jit_nocache'], 1e3)} | "
              f"{cell(res['jit_nocache_faults'], 1)} |")
        print(f"| einc build (C, weak malloc) | {cell(res['aot'], 1e3)} | "
              f"{cell(res['aot_faults'], 1)} |")
        print(f"| torch | {cell(res.get('torch', []), 1e3)} | - |")
        print(f"| numpy | {cell(res['numpy'], 1e3)} | - |")


if __name__ == "__main__":
    main()
