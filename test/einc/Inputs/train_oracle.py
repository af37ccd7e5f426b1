"""`einc train` against an independent PyTorch loop (test/einc/train.test).

Each case trains a model with `einc train` and with torch (the same initial
weights from one safetensors file, the same batches chosen by the documented
rule re-implemented here, torch.optim's optimizer, torch's clip_grad_norm_,
the documented schedule) and compares the losses of every step and the
final weights. Prints `ok NAME` per case, `FAIL NAME: why` otherwise.

usage: train_oracle.py EINC OUTDIR
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

EINC, OUT = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
# The sampling hash of docs/training.md, written once for the oracles.
sys.path.insert(0, HERE)
from gpt_torch import splitmix64  # noqa: E402
MASK = (1 << 64) - 1
torch.set_num_threads(1)
# The compiled code's disk cache stays in the test's directory.
os.environ["EIN_CACHE_DIR"] = os.path.join(OUT, "cache")
failures = 0


def rows_for(seed, first, count, n):
    return [splitmix64(seed, first + b) % n for b in range(count)]


def windows_for(seed, first, count, n, w):
    return [splitmix64(seed, first + b) % (n - w + 1) for b in range(count)]


def report(name, ok, why=""):
    global failures
    if ok:
        print(f"ok {name}")
    else:
        failures += 1
        print(f"FAIL {name}: {why}")
    sys.stdout.flush()


def einc(*args, check=True):
    proc = subprocess.run([EINC, "train", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"einc train failed ({proc.returncode}):\n"
                           f"{proc.stdout}\n{proc.stderr}")
    return proc


def losses_of(log):
    with open(log) as f:
        return [json.loads(line) for line in f if '"loss"' in line]


def lr_at(step, lr, steps, schedule, warmup, min_lr):
    if schedule == "constant":
        return lr
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(steps - warmup, 1)
    return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * progress)) / 2


# ---------------------------------------------------------------------------
# The MLP of train_model.ein: rows of x, y; loss = mean((relu(x w1) w2 - y)^2)

def mlp_loss(x, y, p):
    h = torch.relu(x @ p["w1"])
    return ((h @ p["w2"] - y) ** 2).mean()


def torch_mlp(init, x, y, *, steps, batch, accumulate=1, seed=0, lr=1e-3,
              schedule="constant", warmup=0, min_lr=0.0, clip=0.0,
              weight_decay=0.01, optimizer="adamw", betas=(0.9, 0.999),
              eps=1e-8):
    p = {k: torch.tensor(v, dtype=torch.float64 if v.dtype == np.float64
                         else torch.float32, requires_grad=True)
         for k, v in init.items()}
    params = [p["w1"], p["w2"]]
    if optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps,
                                weight_decay=weight_decay)
    elif optimizer == "adam":
        opt = torch.optim.Adam(params, lr=lr, betas=betas, eps=eps)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=lr)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    X, Y = torch.tensor(x), torch.tensor(y)
    losses = []
    for t in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(t, lr, steps, schedule, warmup, min_lr)
        opt.zero_grad()
        total = 0.0
        for k in range(accumulate):
            idx = rows_for(seed, (t * accumulate + k) * batch, batch, len(x))
            loss = mlp_loss(X[idx], Y[idx], p)
            (loss / accumulate).backward()
            total += loss.item()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        losses.append(total / accumulate)
    return losses, {k: v.detach().numpy() for k, v in p.items()}


MLP = os.path.join(OUT, "mlp.ein")
shutil.copy(os.path.join(HERE, "train_mlp.ein"), MLP)
rng = np.random.default_rng(1)
X = rng.standard_normal((500, 8)).astype(np.float32)
W = rng.standard_normal((8, 3)).astype(np.float32)
Y = np.tanh(X @ W).astype(np.float32)
np.save(os.path.join(OUT, "x.npy"), X)
np.save(os.path.join(OUT, "y.npy"), Y)
INIT = {"w1": (rng.standard_normal((8, 16)) * 0.3).astype(np.float32),
        "w2": (rng.standard_normal((16, 3)) * 0.3).astype(np.float32)}
save_file(INIT, os.path.join(OUT, "init.safetensors"))


def run_mlp(name, batch, extra, **torch_args):
    log = os.path.join(OUT, f"{name}.jsonl")
    ck = os.path.join(OUT, f"{name}.safetensors")
    args = [MLP, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
            f"y={OUT}/y.npy", "--dim", f"B={batch}", "--init",
            f"{OUT}/init.safetensors", "--log", log, "--checkpoint", ck,
            "--print-every", "0", *extra]
    einc(*args)
    return losses_of(log), load_file(ck)


def compare(name, ein_losses, ein_params, ref_losses, ref_params, rtol):
    got = [e["loss"] for e in ein_losses]
    if len(got) != len(ref_losses):
        return report(name, False, f"{len(got)} steps, torch {len(ref_losses)}")
    for t, (a, b) in enumerate(zip(got, ref_losses)):
        if abs(a - b) > rtol * abs(b) + 1e-7:
            return report(name, False, f"step {t + 1}: loss {a} vs torch {b}")
    for k, ref in ref_params.items():
        if not np.allclose(ein_params[k], ref, rtol=rtol, atol=1e-6):
            diff = np.abs(ein_params[k] - ref).max()
            return report(name, False, f"{k}: max |diff| {diff}")
    report(name, True)


# 1. AdamW at a constant rate, random rows: every step's loss and the final
# weights as torch's, within f32 noise (1e-4 relative over 40 steps).
steps = 40
e_loss, e_par = run_mlp("adamw", 16, ["--steps", str(steps), "--lr", "0.01",
                                      "--seed", "7"])
r_loss, r_par = torch_mlp(INIT, X, Y, steps=steps, batch=16, seed=7, lr=0.01)
compare("adamw-constant", e_loss, e_par, r_loss, r_par, 1e-4)

# 2. Warm-up then cosine decay, clipping (a bound small enough to clip every
# step) and 4 micro-batches per step.
e_loss, e_par = run_mlp("cosine", 8, [
    "--steps", str(steps), "--lr", "0.02", "--schedule", "cosine", "--warmup",
    "5", "--min-lr", "0.001", "--clip", "0.05", "--accumulate", "4", "--seed",
    "3"])
r_loss, r_par = torch_mlp(INIT, X, Y, steps=steps, batch=8, accumulate=4,
                          seed=3, lr=0.02, schedule="cosine", warmup=5,
                          min_lr=0.001, clip=0.05)
compare("cosine-clip-accumulate", e_loss, e_par, r_loss, r_par, 1e-4)
lrs = [e["lr"] for e in e_loss]
want = [lr_at(t, 0.02, steps, "cosine", 5, 0.001) for t in range(steps)]
report("schedule", np.allclose(lrs, want, rtol=1e-8, atol=0),
       f"{lrs[:6]} vs {want[:6]}")
report("clipped", all(e["clipped"] for e in e_loss),
       "a step was not clipped at --clip 0.05")

# 3. Accumulating 4 micro-batches of 8 is one batch of 32: the micro-batches
# take consecutive samples, so the two runs see the same rows.
a_loss, a_par = run_mlp("acc4", 8, ["--steps", "10", "--accumulate", "4"])
b_loss, b_par = run_mlp("batch32", 32, ["--steps", "10"])
compare("accumulate-equals-batch", a_loss, a_par,
        [e["loss"] for e in b_loss], b_par, 1e-5)

# 4. SGD, momentum and Adam as torch.optim's.
for opt in ["sgd", "momentum", "adam"]:
    e_loss, e_par = run_mlp(opt, 16, ["--steps", "20", "--lr", "0.05",
                                      "--optimizer", opt])
    r_loss, r_par = torch_mlp(INIT, X, Y, steps=20, batch=16, lr=0.05,
                              optimizer=opt)
    compare(f"optimizer-{opt}", e_loss, e_par, r_loss, r_par, 1e-4)

# 4b. bf16 compute over f32 master weights: the model's weights are bf16,
# the optimizer updates f32 masters (the checkpoint holds them), as torch's
# f32 parameters cast to bf16 in the forward. Within bf16's noise (2e-2
# relative; the two round alike and measure ~1e-7 apart).
MLP16 = os.path.join(OUT, "mlp16.ein")
with open(MLP16, "w") as f:
    f.write('''dim D = 8
dim H = 16
dim K = 3

def loss(x: f32["B D"], y: f32["B K"], w1: bf16["D H"], w2: bf16["H K"]) -> f32[""]:
    h = relu(einsum(astype(x, bf16), w1, "b d, d h -> b h"))
    out = astype(einsum(h, w2, "b h, h k -> b k"), f32)
    return reduce((out - y) ** 2, "b k ->", "mean")
''')
einc(MLP16, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=16", "--init", f"{OUT}/init.safetensors",
     "--steps", "40", "--lr", "0.01", "--seed", "7", "--accumulate", "2",
     "--log", f"{OUT}/bf16.jsonl", "--checkpoint", f"{OUT}/bf16.safetensors",
     "--print-every", "0")
p16 = {k: torch.tensor(v, requires_grad=True) for k, v in INIT.items()}
opt16 = torch.optim.AdamW([p16["w1"], p16["w2"]], lr=0.01, eps=1e-8,
                          weight_decay=0.01)
ref16 = []
for t in range(40):
    opt16.zero_grad()
    total = 0.0
    for k in range(2):
        idx = rows_for(7, (t * 2 + k) * 16, 16, len(X))
        h = torch.relu(torch.tensor(X[idx]).to(torch.bfloat16) @
                       p16["w1"].to(torch.bfloat16))
        out = (h @ p16["w2"].to(torch.bfloat16)).float()
        loss16 = ((out - torch.tensor(Y[idx])) ** 2).mean()
        (loss16 / 2).backward()
        total += loss16.item()
    opt16.step()
    ref16.append(total / 2)
got16 = [e["loss"] for e in losses_of(f"{OUT}/bf16.jsonl")]
masters = load_file(f"{OUT}/bf16.safetensors")
report("bf16-master-weights",
       np.allclose(got16, ref16, rtol=2e-2, atol=0) and
       masters["w1"].dtype == np.float32 and
       np.allclose(masters["w1"], p16["w1"].detach().numpy(), rtol=2e-2,
                   atol=1e-3),
       f"{got16[:3]} vs {ref16[:3]}, masters {masters['w1'].dtype}")

# 4c. f16 with dynamic loss scaling, as torch.amp.GradScaler: the same
# scale at every step (halved on a gradient that is not finite, the step
# skipped; doubled after 5 good steps in a row), the same losses.
MLPF16 = os.path.join(OUT, "mlpf16.ein")
with open(MLPF16, "w") as f:
    f.write(open(MLP16).read().replace("bf16", "f16"))
einc(MLPF16, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=16", "--init", f"{OUT}/init.safetensors",
     "--steps", "40", "--lr", "0.01", "--seed", "7", "--loss-scale",
     "dynamic:1e9", "--loss-scale-growth-interval", "5", "--log",
     f"{OUT}/f16.jsonl", "--print-every", "0")
pf = {k: torch.tensor(v, requires_grad=True) for k, v in INIT.items()}
optf = torch.optim.AdamW([pf["w1"], pf["w2"]], lr=0.01, eps=1e-8,
                         weight_decay=0.01)
scaler = torch.amp.GradScaler("cpu", init_scale=1e9, growth_interval=5)
ref_f16, ref_scales = [], []
for t in range(40):
    optf.zero_grad()
    idx = rows_for(7, t * 16, 16, len(X))
    h = torch.relu(torch.tensor(X[idx]).to(torch.float16) @
                   pf["w1"].to(torch.float16))
    out = (h @ pf["w2"].to(torch.float16)).float()
    lossf = ((out - torch.tensor(Y[idx])) ** 2).mean()
    ref_scales.append(scaler.get_scale())
    scaler.scale(lossf).backward()
    scaler.step(optf)
    scaler.update()
    ref_f16.append(lossf.item())
got_f16 = losses_of(f"{OUT}/f16.jsonl")
scales = [e["loss_scale"] for e in got_f16]
skipped = [e["skipped"] for e in got_f16]
grew = any(b > a for a, b in zip(ref_scales, ref_scales[1:]))
report("f16-loss-scaling",
       scales == ref_scales and grew and any(skipped) and not all(skipped) and
       np.allclose([e["loss"] for e in got_f16], ref_f16, rtol=1e-3, atol=0),
       f"scales {scales[:16]} vs torch {ref_scales[:16]}")

# 4d. Fed inputs: --key gives `key` a fresh random i64 each micro-batch
# (the documented rule, re-implemented here), --scalar gives `weight` 1 in
# training and 0 in evaluation. The key picks which bias enters the loss,
# so the biases trained show the keys were those of the rule.
KEYED = os.path.join(OUT, "keyed.ein")
with open(KEYED, "w") as f:
    f.write(open(MLP).read().replace('w2: f32["H K"]) -> f32[""]:', '''w2: f32["H K"],
         key: i64[""], weight: f64[""], bias: f32["7"]) -> f32[""]:''').replace(
        '    return reduce((einsum(h, w2, "b h, h k -> b k") - y) ** 2, "b k ->", "mean")',
        '''    mse = reduce((einsum(h, w2, "b h, h k -> b k") - y) ** 2, "b k ->", "mean")
    pick = take(bias, (key % 7 + 7) % 7, "7")
    return mse * astype(weight, f32) + pick * pick'''))
save_file({**INIT, "bias": np.linspace(-1, 1, 7).astype(np.float32)},
          os.path.join(OUT, "keyed-init.safetensors"))
einc(KEYED, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=16", "--init",
     f"{OUT}/keyed-init.safetensors", "--steps", "12", "--lr", "0.05",
     "--seed", "9", "--accumulate", "2", "--key", "key", "--scalar",
     "weight=1:0", "--val-fraction", "0.2", "--eval-every", "6",
     "--log", f"{OUT}/keyed.jsonl", "--checkpoint",
     f"{OUT}/keyed.safetensors", "--print-every", "0")


def key_of(seed, index, counter):
    bits = splitmix64(seed + 0x6B6579 + index, counter)
    return bits - (1 << 64) if bits >= 1 << 63 else bits


pk = {k: torch.tensor(v, requires_grad=True) for k, v in
      {**INIT, "bias": np.linspace(-1, 1, 7).astype(np.float32)}.items()}
optk = torch.optim.AdamW(list(pk.values()), lr=0.05, eps=1e-8,
                         weight_decay=0.01)
ref_keyed, ref_val = [], []
n_rows = 500 - int(500 * 0.2)
for t in range(12):
    optk.zero_grad()
    total = 0.0
    for k in range(2):
        idx = rows_for(9, (t * 2 + k) * 16, 16, n_rows)
        pick = pk["bias"][key_of(9, 0, t * 2 + k) % 7]
        lk = mlp_loss(torch.tensor(X[idx]), torch.tensor(Y[idx]), pk) + \
            pick * pick
        (lk / 2).backward()
        total += lk.item()
    optk.step()
    ref_keyed.append(total / 2)
    if (t + 1) % 6 == 0:
        with torch.no_grad():
            pick = pk["bias"][key_of(9, 0, (1 << 63)) % 7]
            ref_val.append((pick * pick).item())
lines = [json.loads(l) for l in open(f"{OUT}/keyed.jsonl")]
got_keyed = [l["loss"] for l in lines if "loss" in l]
got_val = [l["val_loss"] for l in lines if "val_loss" in l]
bias = load_file(f"{OUT}/keyed.safetensors")["bias"]
report("key-and-scalar",
       np.allclose(got_keyed, ref_keyed, rtol=1e-4, atol=1e-6) and
       np.allclose(got_val, ref_val, rtol=1e-4, atol=1e-7) and
       np.allclose(bias, pk["bias"].detach().numpy(), rtol=1e-4, atol=1e-6),
       f"{got_keyed[:3]} vs {ref_keyed[:3]}; val {got_val} vs {ref_val}")

# 4e. Dropout in training: the loss drops hidden units by dropout(h, 0.25,
# key) with --key feeding the key; torch applies the mask of the Philox
# reference (Inputs/dropout/philox.py, checked against Random123's vectors)
# for the same keys. A `training` scalar (1 in steps, 0 in evaluation)
# chooses the dropped or the plain activations.
sys.path.insert(0, os.path.join(HERE, "dropout"))
import philox  # noqa: E402

DROP = os.path.join(OUT, "dropout-mlp.ein")
with open(DROP, "w") as f:
    f.write('''dim D = 8
dim H = 16
dim K = 3

def loss(x: f32["B D"], y: f32["B K"], w1: f32["D H"], w2: f32["H K"],
         key: i64[""], training: f64[""]) -> f32[""]:
    h = relu(einsum(x, w1, "b d, d h -> b h"))
    h = where(training > 0.5, dropout(h, 0.25, key), h)
    return reduce((einsum(h, w2, "b h, h k -> b k") - y) ** 2, "b k ->", "mean")
''')
einc(DROP, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=16", "--init", f"{OUT}/init.safetensors",
     "--steps", "20", "--lr", "0.01", "--seed", "4", "--key", "key",
     "--scalar", "training=1:0", "--val-fraction", "0.2", "--eval-every",
     "10", "--log", f"{OUT}/dropout.jsonl", "--print-every", "0")
pd = {k: torch.tensor(v, requires_grad=True) for k, v in INIT.items()}
optd = torch.optim.AdamW([pd["w1"], pd["w2"]], lr=0.01, eps=1e-8,
                         weight_decay=0.01)
ref_drop, ref_drop_val = [], []
for t in range(20):
    optd.zero_grad()
    idx = rows_for(4, t * 16, 16, n_rows)
    h = torch.relu(torch.tensor(X[idx]) @ pd["w1"])
    keep = philox.keep_mask(16 * 16, 0.25, key_of(4, 0, t)).reshape(16, 16)
    h = torch.where(torch.tensor(keep), h * np.float32(1 / 0.75),
                    torch.zeros(()))
    ld = ((h @ pd["w2"] - torch.tensor(Y[idx])) ** 2).mean()
    ld.backward()
    optd.step()
    ref_drop.append(ld.item())
    if (t + 1) % 10 == 0:
        with torch.no_grad():
            vidx = rows_for(5, 0, 16, 100)
            vx = torch.tensor(X[n_rows:][vidx])
            vy = torch.tensor(Y[n_rows:][vidx])
            ref_drop_val.append(mlp_loss(vx, vy, pd).item())
lines = [json.loads(l) for l in open(f"{OUT}/dropout.jsonl")]
got_drop = [l["loss"] for l in lines if "loss" in l]
got_drop_val = [l["val_loss"] for l in lines if "val_loss" in l]
report("dropout-training",
       np.allclose(got_drop, ref_drop, rtol=1e-4, atol=1e-6) and
       np.allclose(got_drop_val, ref_drop_val, rtol=1e-4, atol=1e-6),
       f"{got_drop[:3]} vs {ref_drop[:3]}; val {got_drop_val} vs "
       f"{ref_drop_val}")

# 4f. The same rate given at run time: p a parameter fed by --scalar
# p=0.25:0 (0.25 in the steps, 0 in evaluation, where dropout keeps every
# element unscaled), no `training` switch. The same Philox bits and scale
# as the literal 0.25, so the losses equal the run above bit for bit.
DROP_RATE = os.path.join(OUT, "dropout-rate-mlp.ein")
with open(DROP_RATE, "w") as f:
    f.write(open(DROP).read().replace(
        'key: i64[""], training: f64[""])', 'key: i64[""], p: f64[""])').replace(
        '    h = where(training > 0.5, dropout(h, 0.25, key), h)\n',
        '    h = dropout(h, p, key)\n'))
einc(DROP_RATE, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=16", "--init", f"{OUT}/init.safetensors",
     "--steps", "20", "--lr", "0.01", "--seed", "4", "--key", "key",
     "--scalar", "p=0.25:0", "--val-fraction", "0.2", "--eval-every",
     "10", "--log", f"{OUT}/dropout-rate.jsonl", "--print-every", "0")
lines = [json.loads(l) for l in open(f"{OUT}/dropout-rate.jsonl")]
got_rate = [l["loss"] for l in lines if "loss" in l]
got_rate_val = [l["val_loss"] for l in lines if "val_loss" in l]
report("dropout-rate-scalar",
       got_rate == got_drop and got_rate_val == got_drop_val and
       "dropout(h, p, key)" in open(DROP_RATE).read(),
       f"{got_rate[:3]} vs {got_drop[:3]}; val {got_rate_val} vs "
       f"{got_drop_val}")

# 5. Resume: 20 steps in one run, or 8 then 12 from the checkpoint, give the
# same losses and the same final state, bit for bit.
full_loss, full_par = run_mlp("full", 16, ["--steps", "20", "--lr", "0.01"])
first = os.path.join(OUT, "first8.safetensors")
einc(MLP, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=16", "--init", f"{OUT}/init.safetensors",
     "--steps", "8", "--lr", "0.01", "--checkpoint", first,
     "--log", f"{OUT}/first8.jsonl", "--print-every", "0")
# (--steps 8 ends the schedule at 8; a constant rate does not depend on it.)
rest = os.path.join(OUT, "rest.safetensors")
einc(MLP, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=16", "--resume", first, "--steps", "20",
     "--lr", "0.01", "--checkpoint", rest, "--log", f"{OUT}/first8.jsonl",
     "--print-every", "0")
resumed = losses_of(f"{OUT}/first8.jsonl")
rest_par = load_file(rest)
same = ([e["loss"] for e in resumed] == [e["loss"] for e in full_loss] and
        all(np.array_equal(rest_par[k], full_par[k]) for k in full_par))
report("resume-exact", same,
       f"{[e['loss'] for e in resumed][6:10]} vs "
       f"{[e['loss'] for e in full_loss][6:10]}")
meta = json.loads(open(rest, "rb").read()[8:8 + int.from_bytes(
    open(rest, "rb").read()[:8], "little")])["__metadata__"]
report("checkpoint-metadata", meta.get("step") == "20" and
       meta.get("optimizer") == "adamw" and "optimizer.exp_avg.w1" in rest_par,
       str(meta))

# 6. The seeded initialisation, re-implemented from docs/training.md: one
# SGD step at a learning rate too small to move an f32 weight leaves it.
einc(MLP, "--fn", "loss", "--data", f"x={OUT}/x.npy", "--data",
     f"y={OUT}/y.npy", "--dim", "B=4", "--steps", "1", "--optimizer", "sgd",
     "--lr", "1e-30", "--seed", "11", "--init-rule", "w2=uniform:0.5",
     "--checkpoint", f"{OUT}/seeded.safetensors", "--print-every", "0")
seeded = load_file(f"{OUT}/seeded.safetensors")


def fnv1a(name):
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) & MASK
    return h


def unit(key, i):
    return ((splitmix64(key, i) >> 11) + 0.5) * 2.0 ** -53


def expected_init(name, shape, rule, seed):
    key = seed ^ fnv1a(name)
    n = int(np.prod(shape))
    if rule[0] == "normal":
        v = [rule[1] * math.sqrt(-2 * math.log(unit(key, 2 * i))) *
             math.cos(2 * math.pi * unit(key, 2 * i + 1)) for i in range(n)]
    else:
        v = [rule[1] * (2 * unit(key, i) - 1) for i in range(n)]
    return np.array(v, dtype=np.float32).reshape(shape)


ok = (np.allclose(seeded["w1"], expected_init("w1", (8, 16), ("normal", 0.02),
                                              11), rtol=1e-6, atol=1e-9) and
      np.allclose(seeded["w2"], expected_init("w2", (16, 3), ("uniform", 0.5),
                                              11), rtol=1e-6, atol=1e-9))
report("seeded-init", ok, "the weights differ from the documented rule")

# ---------------------------------------------------------------------------
# 7. A token stream: a bigram model over a raw u16 file, windows picked by
# the documented rule, validation on the held-out tail.

BIGRAM = os.path.join(OUT, "bigram.ein")
shutil.copy(os.path.join(HERE, "train_bigram.ein"), BIGRAM)
stream = (np.arange(3000) * 7 % 11).astype(np.uint16)
stream[::13] = rng.integers(0, 11, size=len(stream[::13]))
stream.tofile(os.path.join(OUT, "tokens.bin"))
table0 = (rng.standard_normal((11, 11)) * 0.1).astype(np.float32)
save_file({"table": table0}, os.path.join(OUT, "bigram-init.safetensors"))
einc(BIGRAM, "--fn", "loss", "--data", f"tokens={OUT}/tokens.bin:u16",
     "--dim", "B=4", "--dim", "W=9", "--val-fraction", "0.1", "--eval-every",
     "10", "--eval-batches", "2", "--init", f"{OUT}/bigram-init.safetensors",
     "--steps", "30", "--lr", "0.05", "--seed", "5", "--log",
     f"{OUT}/bigram.jsonl", "--plot", f"{OUT}/bigram.svg", "--print-every",
     "0")
table = torch.tensor(table0, requires_grad=True)
opt = torch.optim.AdamW([table], lr=0.05, eps=1e-8, weight_decay=0.01)
toks = torch.tensor(stream.astype(np.int64))
n_train = 3000 - int(3000 * 0.1)


def bigram_loss(starts, begin):
    batch = torch.stack([toks[begin + s:begin + s + 9] for s in starts])
    logp = torch.log_softmax(table[batch[:, :-1]], dim=-1)
    return -logp.gather(-1, batch[:, 1:, None]).mean()


ref, ref_val = [], []
for t in range(30):
    opt.zero_grad()
    loss = bigram_loss(windows_for(5, t * 4, 4, n_train, 9), 0)
    loss.backward()
    opt.step()
    ref.append(loss.item())
    if (t + 1) % 10 == 0:
        with torch.no_grad():
            ref_val.append(sum(bigram_loss(windows_for(6, e * 4, 4, 300, 9),
                                           n_train).item()
                               for e in range(2)) / 2)
lines = [json.loads(l) for l in open(f"{OUT}/bigram.jsonl")]
got = [l["loss"] for l in lines if "loss" in l]
got_val = [l["val_loss"] for l in lines if "val_loss" in l]
report("stream-windows", np.allclose(got, ref, rtol=1e-4, atol=1e-6),
       f"{got[:4]} vs {ref[:4]}")
report("validation", np.allclose(got_val, ref_val, rtol=1e-4, atol=1e-6),
       f"{got_val} vs {ref_val}")
svg = open(f"{OUT}/bigram.svg").read()
report("plot", svg.startswith("<?xml") or svg.startswith("<svg"),
       svg[:80])

# 8. A token beyond the vocabulary: the take's error, exit 2, no step taken.
bad = stream.copy()
bad[100:2900] = 200
bad.tofile(os.path.join(OUT, "bad.bin"))
proc = einc(BIGRAM, "--fn", "loss", "--data", f"tokens={OUT}/bad.bin:u16",
            "--dim", "B=4", "--dim", "W=9", "--steps", "3", "--checkpoint",
            f"{OUT}/bad.safetensors", check=False)
report("token-out-of-range", proc.returncode == 2 and
       "id 200" in proc.stderr and "out of range [0, V=11)" in proc.stderr and
       not os.path.exists(f"{OUT}/bad.safetensors"),
       f"exit {proc.returncode}: {proc.stderr}")

# 9. SIGINT: the first stops after the step and writes the checkpoint; a
# resume from it ends where an uninterrupted run ends.
long_args = [EINC, "train", MLP, "--fn", "loss", "--data", f"x={OUT}/x.npy",
             "--data", f"y={OUT}/y.npy", "--dim", "B=16", "--init",
             f"{OUT}/init.safetensors", "--steps", "200000", "--lr", "0.001",
             "--checkpoint", f"{OUT}/int.safetensors", "--print-every", "1"]
proc = subprocess.Popen(long_args, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
for line in proc.stdout:
    if line.startswith("step"):
        break
time.sleep(0.2)
proc.send_signal(signal.SIGINT)
out, err = proc.communicate(timeout=60)
meta_int = {}
if os.path.exists(f"{OUT}/int.safetensors"):
    raw = open(f"{OUT}/int.safetensors", "rb").read()
    meta_int = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])[
        "__metadata__"]
report("sigint-checkpoint", proc.returncode == 2 and "interrupted after step"
       in err and 0 < int(meta_int.get("step", "0")) < 200000,
       f"exit {proc.returncode}: {err} {meta_int}")

# A second SIGINT quits at once: here the checkpoint goes to a FIFO nobody
# reads, so the first SIGINT's write waits, and only the second ends it.
fifo = f"{OUT}/never-read.safetensors"
os.mkfifo(fifo)
long_args[long_args.index("--checkpoint") + 1] = fifo
proc = subprocess.Popen(long_args, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
for line in proc.stdout:
    if line.startswith("step"):
        break
proc.send_signal(signal.SIGINT)
time.sleep(1.0)
waiting = proc.poll() is None
proc.send_signal(signal.SIGINT)
try:
    proc.communicate(timeout=30)
except subprocess.TimeoutExpired:
    proc.kill()
    proc.communicate()
report("second-sigint", waiting and proc.returncode == -signal.SIGINT,
       f"waiting {waiting}, exit {proc.returncode}")

print("FAILURES", failures)
