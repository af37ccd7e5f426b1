#!/usr/bin/env python3
"""The CUDA back end against PyTorch on one GPU (issue 10's targets).

Two steps, because the GPU machine has no einc (no LLVM/MLIR):

  cuda_bench.py prepare --einc build/bin/einc DIR
      on the CPU machine: writes each case's .ein and the CUDA program
      `einc build --target=cuda --main` makes of it into DIR.
  cuda_bench.py run DIR [--nvcc PATH] [--only NAME]
      on the GPU machine: compiles each program with nvcc, times it (the
      median of CUDA-event-timed calls on zero-filled inputs, transfers
      excluded) and its PyTorch peer in the same run (torch.cuda.Event,
      median after warm-up), and prints one table: times, the ratio
      torch / ein (above 1: ein is faster), TFLOP/s or TB/s, and MFU
      against the H100/H200 dense peak of the dtype.

scripts/gpu-check.sh runs both. Without a GPU `run` stops with exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

# (name, source, function, [(shape, strides or None)] per input, output
# shapes, flops, bytes moved, dtype for MFU, the target from the issue, torch peer)
CASES = [
    {
        "name": "matmul bf16 8192^3 (einsum)",
        "source": 'def mm(a: bf16["m k"], b: bf16["k n"]) -> bf16["m n"]:\n'
                  '    return einsum(a, b, "m k, k n -> m n")\n',
        "fn": "mm",
        "inputs": [(8192, 8192), (8192, 8192)],
        "outputs": [(8192, 8192)],
        "flops": 2 * 8192**3,
        "dtype": "bf16",
        "target": ">= 0.97x torch.matmul",
        "peer": "torch.matmul(a, b)",
    },
    {
        "name": "linear model f32 B=16384 D=32768 K=8192",
        "source": 'def linear(x: f32["b d"], w: f32["d k"]) -> f32["b k"]:\n'
                  '    return einsum(x, w, "b d, d k -> b k")\n',
        "fn": "linear",
        "inputs": [(16384, 32768), (32768, 8192)],
        "outputs": [(16384, 8192)],
        "flops": 2 * 16384 * 32768 * 8192,
        "dtype": "f32",
        "target": ">= torch.einsum",
        "peer": "torch.einsum('bd,dk->bk', a, b)",
    },
    {
        "name": "attention scores bf16 (16,16,2048,128)",
        "source": 'def scores(q: bf16["b h s d"], k: bf16["b h t d"]) -> bf16["b h s t"]:\n'
                  '    return einsum(q, k, "b h s d, b h t d -> b h s t")\n',
        "fn": "scores",
        "inputs": [(16, 16, 2048, 128), (16, 16, 2048, 128)],
        "outputs": [(16, 16, 2048, 2048)],
        "flops": 2 * 16 * 16 * 2048 * 2048 * 128,
        "dtype": "bf16",
        "target": ">= torch.einsum, no permute copy",
        "peer": "torch.einsum('bhsd,bhtd->bhst', a, b)",
    },
    {
        "name": "b s (h d) -> b h s d bf16 (32,2048,16,128)",
        "source": 'def heads(x: bf16["b s (h d)"]) -> bf16["b h s d"]:\n'
                  '    return rearrange(x, "b s (h d) -> b h s d", h=16)\n',
        "fn": "heads",
        "inputs": [(32, 2048, 16 * 128)],
        "outputs": [(32, 16, 2048, 128)],
        "bytes": 2 * 2 * 32 * 2048 * 16 * 128,
        "dtype": "bf16",
        "target": ">= 2 TB/s (einops + contiguous: 1.37)",
        "peer": "einops.rearrange(a, 'b s (h d) -> b h s d', h=16).contiguous()",
    },
    {
        "name": "sum over the last axis f32 (16384,16384)",
        "source": 'def rowsum(x: f32["r c"]) -> f32["r"]:\n'
                  '    return reduce(x, "r c -> r", "sum")\n',
        "fn": "rowsum",
        "inputs": [(16384, 16384)],
        "outputs": [(16384,)],
        "bytes": 4 * 16384 * 16384,
        "dtype": "f32",
        "target": ">= 0.95x torch.sum",
        "peer": "a.sum(dim=-1)",
    },
    {
        "name": "sum over the first axis f32 (16384,16384)",
        "source": 'def colsum(x: f32["r c"]) -> f32["c"]:\n'
                  '    return reduce(x, "r c -> c", "sum")\n',
        "fn": "colsum",
        "inputs": [(16384, 16384)],
        "outputs": [(16384,)],
        "bytes": 4 * 16384 * 16384,
        "dtype": "f32",
        "target": ">= 0.95x torch.sum",
        "peer": "a.sum(dim=0)",
    },
    {
        "name": "2x2 mean pooling f32 (64,64,256,256)",
        "source": 'def pool(x: f32["b c h w"]) -> f32["b c h/2 w/2"]:\n'
                  '    return reduce(x, "b c (h 2) (w 2) -> b c h w", "mean")\n',
        "fn": "pool",
        "inputs": [(64, 64, 256, 256)],
        "outputs": [(64, 64, 128, 128)],
        "bytes": 4 * 64 * 64 * 256 * 256 * 5 // 4,
        "dtype": "f32",
        "target": ">= 1.5x einops",
        "peer": "einops.reduce(a, 'b c (h 2) (w 2) -> b c h w', 'mean')",
    },
    {
        "name": "fused chain f32 (16384,16384): 5 ops, 1 kernel",
        "source": 'def chain(x: f32["r c"], y: f32["r c"]) -> f32["r c"]:\n'
                  '    h = relu(x * y + 1.0)\n'
                  '    return exp(h) - h\n',
        "fn": "chain",
        "inputs": [(16384, 16384), (16384, 16384)],
        "outputs": [(16384, 16384)],
        "bytes": 3 * 4 * 16384 * 16384,
        "dtype": "f32",
        "target": ">= 2x torch eager (one pass over memory)",
        "peer": "(lambda h: torch.exp(h) - h)(torch.relu(a * b + 1.0))",
    },
    {
        "name": "linear + bias + relu bf16 8192^3 (epilogue)",
        "source": 'def linear_relu(x: bf16["b d"], w: bf16["k d"], bias: bf16["k"]) -> bf16["b k"]:\n'
                  '    return relu(einsum(x, w, "b d, k d -> b k") + bias)\n',
        "fn": "linear_relu",
        "inputs": [(8192, 8192), (8192, 8192), (8192,)],
        "outputs": [(8192, 8192)],
        "flops": 2 * 8192**3,
        "dtype": "bf16",
        "target": ">= torch linear + relu",
        "peer": "torch.relu(torch.nn.functional.linear(a, b, c))",
    },
    {
        "name": "softmax f32 (16384,4096): 1 row kernel",
        "source": 'def softmax(x: f32["r n"]) -> f32["r n"]:\n'
                  '    e = exp(x - reduce(x, "r n -> r 1", "max"))\n'
                  '    return e / reduce(e, "r n -> r 1", "sum")\n',
        "fn": "softmax",
        "inputs": [(16384, 4096)],
        "outputs": [(16384, 4096)],
        "bytes": 2 * 4 * 16384 * 4096,
        "dtype": "f32",
        "target": ">= torch.softmax (one read, one write)",
        "peer": "torch.softmax(a, dim=-1)",
    },
    {
        "name": "LayerNorm bf16 (16384,4096): 1 row kernel",
        "source": 'def layer_norm(x: bf16["r d"], gain: bf16["d"], bias: bf16["d"]) -> bf16["r d"]:\n'
                  '    mu = reduce(x, "r d -> r 1", "mean")\n'
                  '    var = reduce(x, "r d -> r 1", "var")\n'
                  '    return (x - mu) * rsqrt(var + 0.00001) * gain + bias\n',
        "fn": "layer_norm",
        "inputs": [(16384, 4096), (4096,), (4096,)],
        "outputs": [(16384, 4096)],
        "bytes": 2 * 2 * 16384 * 4096,
        "dtype": "bf16",
        "target": ">= F.layer_norm (one read, one write)",
        "peer": "torch.nn.functional.layer_norm(a, (4096,), b, c, 1e-5)",
    },
]

def device_peaks():
    """The dense peaks (FLOP/s per dtype) and bandwidth of each GPU, read from
    the cost model's device table (lib/Analysis/Cost.cpp), the one place they
    are kept: {"H100": {"f64": .., "f32": .., "f16": .., "bf16": .., "f8": ..,
    "bandwidth": ..}, ...}."""
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "lib", "Analysis", "Cost.cpp")) as f:
        text = f.read()
    peaks = {}
    for m in re.finditer(r'\{"(\w+)", "[^"]*",\s*([^}]*)\}', text):
        values = [float(v) for v in m.group(2).replace("\n", " ").split(",")]
        if len(values) == 6:
            peaks[m.group(1).upper()] = dict(zip(["f64", "f32", "f16", "bf16", "f8", "bandwidth"], values))
    return peaks


def strides_of(shape):
    out, n = [], 1
    for s in reversed(shape):
        out.append(n)
        n *= s
    return list(reversed(out))


def prepare(args) -> int:
    os.makedirs(args.dir, exist_ok=True)
    for i, case in enumerate(CASES):
        src = os.path.join(args.dir, f"case{i}.ein")
        with open(src, "w") as f:
            f.write(case["source"])
        cu = os.path.join(args.dir, f"case{i}.cu")
        subprocess.run([args.einc, "build", src, "--target=cuda", "--main", case["fn"],
                        "-o", cu, "--header", os.path.join(args.dir, f"case{i}.h")], check=True)
    with open(os.path.join(args.dir, "cases.json"), "w") as f:
        json.dump([{k: v for k, v in c.items()} for c in CASES], f, indent=1)
    print(f"prepared {len(CASES)} benchmark programs in {args.dir}")
    return 0


def run(args) -> int:
    try:
        import torch
        import einops  # noqa: F401
    except ImportError as err:
        print(f"cuda_bench.py run needs torch and einops: {err}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name(0)
    peaks = next((p for key, p in device_peaks().items() if key in device), None)
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 exact, as ein by default
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for i, case in enumerate(CASES):
        if args.only and args.only not in case["name"]:
            continue
        cu = os.path.join(args.dir, f"case{i}.cu")
        exe = os.path.join(args.dir, f"case{i}")
        subprocess.run([args.nvcc, "-std=c++17", "-O3", "--fmad=false", "-arch=native", "-x", "cu",
                        cu, "-o", exe, "-lcublasLt"], check=True)
        cmd = [exe, "--time"]
        for shape in case["inputs"]:
            cmd += ["-"] + [str(s) for s in shape] + [str(s) for s in strides_of(shape)]
        for k, shape in enumerate(case["outputs"]):
            cmd += [os.path.join(args.dir, f"case{i}.out{k}")] + [str(s) for s in shape]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        name = case["name"]
        if proc.returncode != 0:
            # The timed calls replay a CUDA Graph (docs/cuda.md): should
            # that fail on this GPU, say so and time launch by launch.
            print(f"{name}: the CUDA Graph run failed ({proc.stderr.strip()[-300:]}); "
                  "timing again with EIN_CUDA_GRAPHS=0", file=sys.stderr)
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  env=dict(os.environ, EIN_CUDA_GRAPHS="0"))
            name += " (no graph)"
        for k in range(len(case["outputs"])):
            try:
                os.unlink(os.path.join(args.dir, f"case{i}.out{k}"))
            except OSError:
                pass
        if proc.returncode != 0:
            rows.append((name, None, None, proc.stderr.strip()[-200:]))
            continue
        ein_ms = float(proc.stdout.split("ein-time-ms:")[1].split()[0])
        dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[case["dtype"]]
        ts = [torch.zeros(shape, dtype=dt, device="cuda") for shape in case["inputs"]]
        peer = eval("lambda a, b=None, c=None: " + case["peer"], {"torch": torch, "einops": einops})
        torch_ms = time_torch(torch, lambda: peer(*ts))
        del ts
        torch.cuda.empty_cache()
        rows.append((name, ein_ms, torch_ms, ""))
    print(f"device: {device}")
    print(f"{'case':46} {'ein ms':>9} {'torch ms':>9} {'torch/ein':>9} {'rate':>14} {'MFU/BW':>7}  target")
    for (name, ein_ms, torch_ms, err), case in zip(rows, [c for c in CASES if not args.only or args.only in c["name"]]):
        if ein_ms is None:
            print(f"{name:46} FAILED: {err}")
            continue
        rate, frac = "", ""
        if "flops" in case:
            tflops = case["flops"] / (ein_ms * 1e-3) / 1e12
            rate = f"{tflops:.1f} TFLOP/s"
            if peaks:
                frac = f"{tflops * 1e12 / peaks[case['dtype']]:.2f}"
        else:
            tbs = case["bytes"] / (ein_ms * 1e-3) / 1e12
            rate = f"{tbs:.2f} TB/s"
            if peaks:
                frac = f"{tbs * 1e12 / peaks['bandwidth']:.2f}"
        print(f"{name:46} {ein_ms:9.3f} {torch_ms:9.3f} {torch_ms / ein_ms:9.2f} {rate:>14} {frac:>7}  {case['target']}")
    return 0 if all(r[1] is not None for r in rows) else 1


def time_torch(torch, f, min_total_ms=200.0):
    f()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    while len(samples) < 1000 and (sum(samples) < min_total_ms or len(samples) < 5):
        start.record()
        f()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--einc", required=True)
    p.add_argument("dir")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    r.add_argument("--only", help="only cases whose name contains this")
    args = ap.parse_args()
    return prepare(args) if args.step == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
