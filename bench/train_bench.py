"""The training loop of examples/gpt.ein, side by side: `einc train`
against the same model's PyTorch twin (test/einc/Inputs/gpt_torch.py),
eager and under torch.compile, with the same batches, AdamW and clipping.
Each gets the same number of threads (--threads, default all).

For each it prints the median step time and tokens/s over the steps after
the first few (warm-up), and the ratio to einc. It also prints the time to
the first step: einc train's cold start (an empty disk cache), its warm
start (the same run again), and torch.compile's first step.

    python3 bench/train_bench.py --einc build/bin/einc [--steps 60]
        [--batch 8] [--d-model 64] [--seq 64] [--heads 4] [--threads N]
        [--peak-flops F] [--markdown]

--d-model, --seq and --heads bind the dims of the same file (GPT-2 small's
block is --d-model 768 --heads 12; issue 31's workload --d-model 512 --seq
256 --heads 8). einc's MFU (from its log: the report's FLOPs per step over
the step time and the calibrated peak) is printed for the three loops: the
same FLOPs over each one's step time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "einc", "Inputs"))
import gpt_torch  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--einc", default=os.path.join(ROOT, "build", "bin",
                                                   "einc"))
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--warmup-steps", type=int, default=10)
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--d-model", type=int, default=64)
parser.add_argument("--seq", type=int, default=64)
parser.add_argument("--heads", type=int, default=4)
parser.add_argument("--threads", type=int, default=os.cpu_count())
parser.add_argument("--peak-flops", type=float, default=None,
                    help="the peak for MFU (default: einc calibrate's)")
parser.add_argument("--markdown", action="store_true")
args = parser.parse_args()
torch.set_num_threads(args.threads)
HEADS, SEQ, D_MODEL = args.heads, args.seq, args.d_model
if D_MODEL % HEADS:
    sys.exit(f"--d-model {D_MODEL} is not a multiple of --heads {HEADS}")
tokens_per_step = args.batch * SEQ

work = tempfile.mkdtemp(prefix="ein-train-bench-")
data = os.path.join(work, "stdlib.bin")
init = os.path.join(work, "init.safetensors")
gpt_torch.make_stdlib_bytes(data, 1 << 20)

def init_params():
    return gpt_torch.init_params(0, d_model=D_MODEL, seq=SEQ)


save_file({k: v.contiguous() for k, v in init_params().items()}, init)


def einc_run(cache, log):
    env = dict(os.environ, EIN_CACHE_DIR=cache,
               OMP_NUM_THREADS=str(args.threads))
    start = time.time()
    proc = subprocess.run(
        [args.einc, "train", os.path.join(ROOT, "examples", "gpt.ein"),
         "--fn", "loss", "--data", f"tokens={data}:u8", "--dim",
         f"batch={args.batch}", "--dim", f"d_model={D_MODEL}", "--dim",
         f"seq={SEQ}", "--dim", f"heads={HEADS}", "--steps", str(args.steps), "--init", init,
         "--lr", "1e-3", "--beta2", "0.95", "--weight-decay", "0.1", "--clip",
         "1.0", "--log", log, "--print-every", "0"] +
        (["--peak-flops", str(args.peak_flops)] if args.peak_flops else []),
        capture_output=True, text=True, env=env)
    wall = time.time() - start
    if proc.returncode != 0:
        sys.exit(f"einc train failed:\n{proc.stdout}\n{proc.stderr}")
    prepared = float(proc.stdout.split("prepared in ")[1].split(" s")[0])
    records = [json.loads(line) for line in open(log) if '"loss"' in line]
    steps = [r["seconds"] for r in records]
    # MFU × seconds is FLOPs per step / peak: the same for every step.
    flops_over_peak = next((r["mfu"] * r["seconds"] for r in records
                            if r.get("mfu") is not None), None)
    return prepared, wall, steps, flops_over_peak


cache = os.path.join(work, "cache")
cold, cold_wall, _, _ = einc_run(cache, os.path.join(work, "cold.jsonl"))
warm, warm_wall, ein_steps, flops_over_peak = einc_run(
    cache, os.path.join(work, "warm.jsonl"))


def torch_steps(compiled):
    params = {n: torch.nn.Parameter(v) for n, v in init_params().items()}
    opt = torch.optim.AdamW(list(params.values()), lr=1e-3, betas=(0.9, 0.95),
                            eps=1e-8, weight_decay=0.1)
    loss_fn = gpt_torch.gpt_loss
    if compiled:
        loss_fn = torch.compile(gpt_torch.gpt_loss)
    tokens = gpt_torch.load_tokens(data)
    times = []
    for t in range(args.steps):
        batch = gpt_torch.get_batch(tokens, 0, t, 0, 1, args.batch, SEQ + 1)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(params, batch, HEADS)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        times.append(time.perf_counter() - start)
    return times


eager = torch_steps(False)
compiled = torch_steps(True)


def median(times):
    return statistics.median(times[args.warmup_steps:])


rows = [("einc train", median(ein_steps)), ("torch eager", median(eager)),
        ("torch.compile", median(compiled))]
cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
flags = open("/proc/cpuinfo").read()
isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
print(f"examples/gpt.ein (2 layers, d_model {D_MODEL}, heads {HEADS}, "
      f"seq {SEQ}), batch "
      f"{args.batch}, {args.steps} steps (median after {args.warmup_steps}); "
      f"{cpu}, {isa}, {args.threads} threads; torch {torch.__version__}")
if args.markdown:
    print("\n| loop | step ms | tokens/s | MFU | its time / einc's |\n"
          "|---|---|---|---|---|")
for name, seconds in rows:
    ratio = seconds / rows[0][1]
    mfu = (f"{flops_over_peak / seconds:.3f}" if flops_over_peak is not None
           else "-")
    if args.markdown:
        print(f"| {name} | {seconds * 1e3:.2f} | {tokens_per_step / seconds:,.0f}"
              f" | {mfu} | {ratio:.2f}x |")
    else:
        print(f"{name:14s} {seconds * 1e3:8.2f} ms/step "
              f"{tokens_per_step / seconds:10,.0f} tokens/s  MFU {mfu}  "
              f"its time / einc's {ratio:.2f}x")
print(f"time to the first step: einc train cold {cold:.2f} s (process "
      f"{cold_wall:.2f} s), warm {warm:.3f} s (process {warm_wall:.2f} s); "
      f"torch.compile's first step {compiled[0]:.2f} s, eager's "
      f"{eager[0]:.3f} s")
