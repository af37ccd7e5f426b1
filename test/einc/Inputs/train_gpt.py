"""examples/gpt.ein trained by `einc train` and by its PyTorch twin
(gpt_torch.py) on bytes of Python's standard library: the same initial
weights (one safetensors file), the same batches, AdamW, the warm-up and
cosine schedule and clipping. The loss of every step must agree within
1e-3 relative in f32 (the issue's bound; the two measure ~1e-5 apart).

usage: train_gpt.py EINC GPT.ein OUTDIR [STEPS [EINC-ARG...]]
(EINC-ARGs are added to einc train's: --target=cuda-emulated.)
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

EINC, MODEL, OUT = sys.argv[1:4]
STEPS = int(sys.argv[4]) if len(sys.argv) > 4 else 200
EXTRA = sys.argv[5:]
# 10 warm-up steps, or 1 in a short run (the schedule needs a step to decay).
WARMUP = 10 if STEPS > 10 else 1
BATCH, HEADS, SEED = 8, 4, 3
data = os.path.join(OUT, "stdlib.bin")
init = os.path.join(OUT, "init.safetensors")
log = os.path.join(OUT, "gpt.jsonl")
gpt_torch.make_stdlib_bytes(data, 1 << 20)
save_file({k: v.contiguous() for k, v in gpt_torch.init_params(0).items()},
          init)

start = time.time()
proc = subprocess.run(
    [EINC, "train", MODEL, "--fn", "loss", "--data", f"tokens={data}:u8",
     "--dim", f"batch={BATCH}", "--steps", str(STEPS), "--seed", str(SEED),
     "--init", init, "--lr", "1e-3", "--schedule", "cosine", "--warmup", str(WARMUP),
     "--min-lr", "1e-4", "--beta1", "0.9", "--beta2", "0.95", "--eps", "1e-8",
     "--weight-decay", "0.1", "--clip", "1.0", "--log", log,
     "--print-every", "50", "--no-cache", *EXTRA],
    capture_output=True, text=True)
ein_seconds = time.time() - start
if proc.returncode != 0:
    print(f"FAIL einc train: exit {proc.returncode}\n{proc.stdout}\n"
          f"{proc.stderr}")
    sys.exit(1)
ein = [json.loads(line)["loss"] for line in open(log) if '"loss"' in line]

start = time.time()
ref = gpt_torch.train_reference(init, data, STEPS, BATCH, HEADS, lr_max=1e-3,
                                min_lr=1e-4, warmup=WARMUP, betas=(0.9, 0.95),
                                eps=1e-8, weight_decay=0.1, clip=1.0,
                                seed=SEED)
torch_seconds = time.time() - start

worst = max(abs(a - b) / abs(b) for a, b in zip(ein, ref))
ok = len(ein) == len(ref) == STEPS and worst <= 1e-3
print(f"{'ok' if ok else 'FAIL'} gpt-{STEPS}-steps: loss {ref[0]:.4f} -> "
      f"{ref[-1]:.4f} (torch), {ein[0]:.4f} -> {ein[-1]:.4f} (einc train); "
      f"worst relative difference {worst:.2e} (bound 1e-3)")
print(f"time: einc train {ein_seconds:.1f} s (compile included), torch "
      f"{torch_seconds:.1f} s", file=sys.stderr)
if not ok:
    for t, (a, b) in enumerate(zip(ein, ref)):
        if abs(a - b) > 1e-3 * abs(b):
            print(f"  step {t + 1}: einc {a} torch {b}")
            break

# The memory check on the same run: every step's measured peak (the
# loop's tensors and the compiled code's temporaries, as asked for) within
# 10% of `einc report --train`'s peak. Measured on the CPU only (null on the
# other targets, whose temporaries are not counted in this process).
steps = [json.loads(line) for line in open(log) if '"loss"' in line]
if any(s["memory_bytes"] is None for s in steps):
    print("skip gpt-memory: this target measures no memory")
else:
    ratios = [s["memory_bytes"] / s["report_peak_bytes"] for s in steps]
    mem_ok = len(ratios) == STEPS and all(abs(r - 1) <= 0.10 for r in ratios)
    print(f"{'ok' if mem_ok else 'FAIL'} gpt-memory: measured "
          f"{steps[-1]['memory_bytes']} bytes against report --train's "
          f"{steps[-1]['report_peak_bytes']}, ratio {min(ratios):.3f} to "
          f"{max(ratios):.3f} over {len(ratios)} steps (bound 1 +- 0.10)")
