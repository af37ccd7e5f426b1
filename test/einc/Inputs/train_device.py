"""`einc train` with its state on a device (test/einc/train-device.test).

On --target=cuda-emulated the parameters, gradients and optimizer states
live in the device's memory between steps, and the loop's accumulation,
scaling, norm and master-weight rounding run as device kernels. Each case
trains on the device and checks it against PyTorch (the same weights,
batches by the documented rule, torch.optim's AdamW, clip_grad_norm_,
GradScaler), as train_oracle.py does for the CPU. Prints `ok NAME` per case,
`FAIL NAME: why` otherwise.

usage: train_device.py EINC OUTDIR [--full]
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

EINC, OUT = sys.argv[1], sys.argv[2]
FULL = "--full" in sys.argv[3:]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpt_torch import splitmix64  # noqa: E402
torch.set_num_threads(1)
os.environ["EIN_CACHE_DIR"] = os.path.join(OUT, "cache")
failures = 0


def report(name, ok, why=""):
    global failures
    failures += not ok
    print(f"ok {name}" if ok else f"FAIL {name}: {why}")
    sys.stdout.flush()


def einc(*args, check=True):
    proc = subprocess.run([EINC, "train", *args], capture_output=True,
                          text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"einc train failed ({proc.returncode}):\n"
                           f"{proc.stdout}\n{proc.stderr}")
    return proc


def log_of(path):
    return [json.loads(line) for line in open(path) if '"loss"' in line]


def rows_for(seed, first, count, n):
    return [splitmix64(seed, first + b) % n for b in range(count)]


MLP = os.path.join(OUT, "mlp.ein")
shutil.copy(os.path.join(HERE, "train_mlp.ein"), MLP)
rng = np.random.default_rng(3)
X = rng.standard_normal((400, 8)).astype(np.float32)
Y = np.tanh(X @ rng.standard_normal((8, 3))).astype(np.float32)
np.save(os.path.join(OUT, "x.npy"), X)
np.save(os.path.join(OUT, "y.npy"), Y)
INIT = {"w1": (rng.standard_normal((8, 16)) * 0.3).astype(np.float32),
        "w2": (rng.standard_normal((16, 3)) * 0.3).astype(np.float32)}
save_file(INIT, os.path.join(OUT, "init.safetensors"))
LOOP = ["--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
        f"y={OUT}/y.npy", "--dim", "B=8", "--print-every", "0",
        "--target=cuda-emulated"]
DATA = LOOP + ["--init", f"{OUT}/init.safetensors"]


def torch_loop(model, steps, accumulate, clip, lr, seed, dtype=None,
               scaler=None):
    """The PyTorch twin: losses, gradient norms, scales, final weights."""
    p = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True)
         for k, v in INIT.items()}
    opt = torch.optim.AdamW([p["w1"], p["w2"]], lr=lr, eps=1e-8,
                            weight_decay=0.01)
    losses, norms, scales = [], [], []
    for t in range(steps):
        opt.zero_grad()
        total = 0.0
        if scaler:
            scales.append(scaler.get_scale())
        for k in range(accumulate):
            idx = rows_for(seed, (t * accumulate + k) * 8, 8, len(X))
            x, y = torch.tensor(X[idx]), torch.tensor(Y[idx])
            if dtype is None:
                out = torch.relu(x @ p["w1"]) @ p["w2"]
            else:
                h = torch.relu(x.to(dtype) @ p["w1"].to(dtype))
                out = (h @ p["w2"].to(dtype)).float()
            loss = ((out - y) ** 2).mean()
            (scaler.scale(loss / accumulate) if scaler
             else loss / accumulate).backward()
            total += loss.item()
        if scaler:
            scaler.unscale_(opt)
        norms.append(float(torch.nn.utils.clip_grad_norm_(
            [p["w1"], p["w2"]], clip if clip else float("inf"))))
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        losses.append(total / accumulate)
    return losses, norms, scales, {k: v.detach().numpy() for k, v in p.items()}


# 1. f32: 4 micro-batches summed on the device, clipping by the global norm
# (a sum of squares on the device), the update in place; a checkpoint
# written from the device's copies. f32 noise over 12 steps: 1e-4.
einc(MLP, *DATA, "--steps", "12", "--lr", "0.05", "--seed", "4",
     "--accumulate", "4", "--clip", "0.05", "--log", f"{OUT}/acc.jsonl",
     "--checkpoint", f"{OUT}/acc.safetensors")
got = log_of(f"{OUT}/acc.jsonl")
ref_loss, ref_norm, _, ref_par = torch_loop(MLP, 12, 4, 0.05, 0.05, 4)
ck = load_file(f"{OUT}/acc.safetensors")
report("accumulate-clip",
       np.allclose([e["loss"] for e in got], ref_loss, rtol=1e-4) and
       np.allclose([e["grad_norm"] for e in got], ref_norm, rtol=1e-4) and
       all(e["clipped"] for e in got) and
       all(np.allclose(ck[k], ref_par[k], rtol=1e-4, atol=1e-6)
           for k in ref_par),
       f"{[e['loss'] for e in got][:3]} vs {ref_loss[:3]}")

# 2. A resume from the device's checkpoint continues bit for bit: 6 steps,
# then 6 more from the checkpoint, against the 12 above.
einc(MLP, *DATA, "--steps", "6", "--lr", "0.05", "--seed", "4",
     "--accumulate", "4", "--clip", "0.05", "--checkpoint",
     f"{OUT}/half.safetensors")
einc(MLP, *LOOP, "--steps", "12", "--lr", "0.05", "--seed", "4",
     "--accumulate", "4", "--clip", "0.05", "--resume",
     f"{OUT}/half.safetensors", "--checkpoint", f"{OUT}/resumed.safetensors",
     "--log", f"{OUT}/resumed.jsonl")
resumed = load_file(f"{OUT}/resumed.safetensors")
report("resume-exact",
       [e["loss"] for e in log_of(f"{OUT}/resumed.jsonl")] ==
       [e["loss"] for e in got[6:]] and
       all(np.array_equal(resumed[k], ck[k]) for k in ck),
       "the resumed run differs from the uninterrupted one")

if FULL:
    # 3. bf16 compute over f32 master weights: the masters stay f32 on the
    # device and are rounded to bf16 there before each step. Within bf16's
    # noise (2e-2), as on the CPU.
    MLP16 = os.path.join(OUT, "mlp16.ein")
    with open(MLP16, "w") as f:
        f.write(open(MLP).read().replace(
            'w1: f32["D H"], w2: f32["H K"]', 'w1: bf16["D H"], w2: bf16["H K"]')
            .replace('relu(einsum(x, w1,', 'relu(einsum(astype(x, bf16), w1,')
            .replace('einsum(h, w2, "b h, h k -> b k")',
                     'astype(einsum(h, w2, "b h, h k -> b k"), f32)'))
    einc(MLP16, *DATA, "--steps", "12", "--lr", "0.01", "--seed", "7",
         "--accumulate", "2", "--log", f"{OUT}/bf16.jsonl", "--checkpoint",
         f"{OUT}/bf16.safetensors")
    ref16, _, _, par16 = torch_loop(MLP16, 12, 2, None, 0.01, 7,
                                    dtype=torch.bfloat16)
    m16 = load_file(f"{OUT}/bf16.safetensors")
    got16 = [e["loss"] for e in log_of(f"{OUT}/bf16.jsonl")]
    report("bf16-master-weights",
           np.allclose(got16, ref16, rtol=2e-2) and
           m16["w1"].dtype == np.float32 and
           np.allclose(m16["w1"], par16["w1"], rtol=2e-2, atol=1e-3),
           f"{got16[:3]} vs {ref16[:3]}")

    # 4. f16 with dynamic loss scaling: the same scales and skipped steps as
    # torch's GradScaler (a gradient that is not finite is found by the
    # device's sum of squares).
    MLPF16 = os.path.join(OUT, "mlpf16.ein")
    with open(MLPF16, "w") as f:
        f.write(open(MLP16).read().replace("bf16", "f16"))
    einc(MLPF16, *DATA, "--steps", "16", "--lr", "0.01", "--seed", "7",
         "--loss-scale", "dynamic:1e9", "--loss-scale-growth-interval", "3",
         "--log", f"{OUT}/f16.jsonl")
    scaler = torch.amp.GradScaler("cpu", init_scale=1e9, growth_interval=3)
    ref_f16, _, ref_scales, _ = torch_loop(MLPF16, 16, 1, None, 0.01, 7,
                                           dtype=torch.float16, scaler=scaler)
    gf = log_of(f"{OUT}/f16.jsonl")
    report("f16-loss-scaling",
           [e["loss_scale"] for e in gf] == ref_scales and
           any(e["skipped"] for e in gf) and
           np.allclose([e["loss"] for e in gf], ref_f16, rtol=1e-3),
           f"scales {[e['loss_scale'] for e in gf]} vs {ref_scales}")

# 5. Bad input on the device: a token beyond the vocabulary is the take's
# error (exit 2) and no checkpoint is written.
BIGRAM = os.path.join(OUT, "bigram.ein")
shutil.copy(os.path.join(HERE, "train_bigram.ein"), BIGRAM)
bad = (np.arange(600) % 11).astype(np.uint16)
bad[50:550] = 200
bad.tofile(os.path.join(OUT, "bad.bin"))
proc = einc(BIGRAM, "--fn", "loss", "--data", f"tokens={OUT}/bad.bin:u16",
            "--dim", "B=4", "--dim", "W=9", "--steps", "2",
            "--target=cuda-emulated", "--checkpoint",
            f"{OUT}/bad.safetensors", check=False)
report("token-out-of-range", proc.returncode == 2 and
       "id 200" in proc.stderr and
       not os.path.exists(f"{OUT}/bad.safetensors"),
       f"exit {proc.returncode}: {proc.stderr}")

print(f"FAILURES {failures}")
