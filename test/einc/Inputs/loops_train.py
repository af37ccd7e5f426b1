"""`einc train` on a model with stacked weights and a loop over its layers
(loops/train.ein) against PyTorch training the same stacked tensors, looped
in Python, with torch.optim.AdamW: the same initial weights (one
safetensors file), the same rows per step (docs/training.md's splitmix64
rule), 12 steps. Every step's loss within 1e-4 relative and the final
weights within 1e-4 (f32 noise). Usage: loops_train.py EINC TMP.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

EINC, OUT = sys.argv[1:3]
HERE = os.path.dirname(os.path.abspath(__file__))
# The sampling hash of docs/training.md, written once for the oracles.
sys.path.insert(0, HERE)
from gpt_torch import splitmix64  # noqa: E402
os.environ["EIN_CACHE_DIR"] = os.path.join(OUT, "cache")
torch.set_num_threads(1)
LAYERS, BATCH, STEPS, SEED, LR = 3, 8, 12, 5, 0.01


rng = np.random.default_rng(2)
X = rng.standard_normal((200, 8)).astype(np.float32)
Y = np.tanh(X @ rng.standard_normal((8, 8))).astype(np.float32)
np.save(os.path.join(OUT, "x.npy"), X)
np.save(os.path.join(OUT, "y.npy"), Y)
INIT = {"w": (0.3 * rng.standard_normal((LAYERS, 8, 16))).astype(np.float32),
        "v": (0.3 * rng.standard_normal((LAYERS, 16, 8))).astype(np.float32),
        "g": (1 + 0.1 * rng.standard_normal((LAYERS, 8))).astype(np.float32)}
save_file(INIT, os.path.join(OUT, "init.safetensors"))

log = os.path.join(OUT, "train.jsonl")
ck = os.path.join(OUT, "train.safetensors")
run = subprocess.run(
    [EINC, "train", os.path.join(HERE, "loops", "train.ein"), "--fn", "loss",
     "--data", f"x={OUT}/x.npy", "--data", f"y={OUT}/y.npy", "--dim",
     f"B={BATCH}", "--init", f"{OUT}/init.safetensors", "--steps",
     str(STEPS), "--optimizer", "adamw", "--lr", str(LR), "--seed",
     str(SEED), "--log", log, "--checkpoint", ck, "--print-every", "0"],
    capture_output=True, text=True)
if run.returncode != 0:
    print(f"FAIL einc train: exit {run.returncode}: {run.stderr.strip()}")
    sys.exit(0)
with open(log) as f:
    ein_losses = [json.loads(line)["loss"] for line in f if '"loss"' in line]
ein_params = load_file(ck)

p = {k: torch.tensor(v, requires_grad=True) for k, v in INIT.items()}
opt = torch.optim.AdamW([p["w"], p["v"], p["g"]], lr=LR)
Xt, Yt = torch.tensor(X), torch.tensor(Y)
ref = []
for t in range(STEPS):
    idx = [splitmix64(SEED, t * BATCH + b) % len(X) for b in range(BATCH)]
    x = Xt[idx]
    for l in range(LAYERS):  # the same stacked tensors, a layer at a time
        x = x + torch.tanh(x @ p["w"][l]) @ p["v"][l] * p["g"][l]
    loss = ((x - Yt[idx]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    ref.append(loss.item())

ok = len(ein_losses) == STEPS
for t, (a, b) in enumerate(zip(ein_losses, ref)):
    if abs(a - b) > 1e-4 * abs(b) + 1e-7:
        print(f"FAIL step {t + 1}: loss {a} vs torch {b}")
        ok = False
for k in INIT:
    got, want = ein_params[k], p[k].detach().numpy()
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4,
                                                  atol=1e-6):
        print(f"FAIL {k}: max |diff| {np.abs(got - want).max()}")
        ok = False
print(f"{'ok' if ok else 'FAIL'} train {STEPS} steps: last loss "
      f"{ein_losses[-1]:.4f}, torch {ref[-1]:.4f}")
