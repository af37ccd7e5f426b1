# Trains examples/train_mlp.ein for STEPS steps of SGD and of AdamW, each
# step one `einc run` of the compiled step (forward, grad, optimizer), from
# the same initial weights as a PyTorch CPU reference (torch.optim.SGD and
# AdamW on the same model): the losses agree step by step within f32
# tolerance, the final weights too, and the loss falls.
# Usage: train_mlp.py EINC SOURCE TMPDIR STEPS [EXTRA EINC ARGS...]
import os
import subprocess
import sys

import numpy as np

try:
    import torch
except ImportError as err:
    print(f"FAIL: PyTorch is the oracle of this test and is missing ({err}); "
          "scripts/setup.sh installs it")
    sys.exit(1)

einc, source, tmp, steps, *extra = sys.argv[1:]
steps = int(steps)
os.makedirs(tmp, exist_ok=True)
B, D, H, K = 64, 16, 32, 4
rng = np.random.default_rng(2024)


def init(fan_in, fan_out):
    # The lecture's initialisation: randn / sqrt(fan_in), truncated to +-3.
    w = rng.standard_normal((fan_in, fan_out))
    while np.any(np.abs(w) > 3):
        bad = np.abs(w) > 3
        w[bad] = rng.standard_normal(bad.sum())
    return (w / np.sqrt(fan_in)).astype(np.float32)


x = rng.standard_normal((B, D)).astype(np.float32)
y = np.tanh(x @ rng.standard_normal((D, K))).astype(np.float32)
w1_0, w2_0 = init(D, H), init(H, K)
hyper = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
         "weight_decay": 0.01}


def save(name, value):
    # Tensors are f32; the optimizer's hyper-parameters (Python floats, as
    # torch.optim's) f64.
    path = f"{tmp}/{name}.npy"
    np.save(path, np.asarray(value, np.float64 if isinstance(value, float)
                             else np.float32))
    return path


def einc_step(fn, inputs, outputs):
    args = [einc, "run", source, "--fn", fn, *extra]
    for name, value in inputs.items():
        args += ["--in", f"{name}={save('in-' + name, value)}"]
    paths = [f"{tmp}/out-{name}.npy" for name in outputs]
    for p in paths:
        args += ["--out", p]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL {fn}: einc exit {run.returncode}: {run.stderr.strip()}")
        sys.exit(1)
    return [np.load(p) for p in paths]


def torch_model(w1, w2):
    p1 = torch.nn.Parameter(torch.tensor(w1))
    p2 = torch.nn.Parameter(torch.tensor(w2))
    tx, ty = torch.tensor(x), torch.tensor(y)

    def loss():
        return ((torch.relu(tx @ p1) @ p2 - ty) ** 2).mean()
    return p1, p2, loss


failures = 0


def compare(label, ours, theirs, rtol=2e-4, atol=1e-6):
    global failures
    err = np.abs(np.asarray(ours) - np.asarray(theirs))
    bound = atol + rtol * np.abs(np.asarray(theirs))
    if np.all(err <= bound):
        return True
    failures += 1
    print(f"FAIL {label}: max error {err.max():.3g}")
    return False


for optimizer in ("sgd", "adamw"):
    w1, w2 = w1_0.copy(), w2_0.copy()
    m1, v1 = np.zeros_like(w1), np.zeros_like(w1)
    m2, v2 = np.zeros_like(w2), np.zeros_like(w2)
    p1, p2, torch_loss = torch_model(w1_0, w2_0)
    opt = (torch.optim.SGD([p1, p2], lr=hyper["lr"]) if optimizer == "sgd"
           else torch.optim.AdamW([p1, p2], lr=hyper["lr"],
                                  betas=(hyper["beta1"], hyper["beta2"]),
                                  eps=hyper["eps"],
                                  weight_decay=hyper["weight_decay"]))
    losses, ok = [], True
    for t in range(1, steps + 1):
        if optimizer == "sgd":
            l, w1, w2 = einc_step("sgd_step", {"x": x, "y": y, "w1": w1,
                                               "w2": w2, "lr": hyper["lr"]},
                                  ["l", "w1", "w2"])
        else:
            l, w1, w2, m1, v1, m2, v2 = einc_step(
                "adamw_step",
                {"x": x, "y": y, "w1": w1, "w2": w2, "m1": m1, "v1": v1,
                 "m2": m2, "v2": v2, **hyper, "step": float(t)},
                ["l", "w1", "w2", "m1", "v1", "m2", "v2"])
        opt.zero_grad()
        reference = torch_loss()
        reference.backward()
        opt.step()
        losses.append(float(l))
        ok &= compare(f"{optimizer} loss at step {t}", l,
                      reference.detach().numpy())
    ok &= compare(f"{optimizer} w1 after {steps} steps", w1,
                  p1.detach().numpy(), rtol=1e-3, atol=1e-5)
    ok &= compare(f"{optimizer} w2 after {steps} steps", w2,
                  p2.detach().numpy(), rtol=1e-3, atol=1e-5)
    if not losses[-1] < losses[0]:
        failures += 1
        ok = False
        print(f"FAIL {optimizer}: the loss did not fall: {losses[0]} -> "
              f"{losses[-1]}")
    if ok:
        print(f"ok {optimizer}: {steps} steps, loss {losses[0]:.4f} -> "
              f"{losses[-1]:.4f}, as PyTorch")
print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
