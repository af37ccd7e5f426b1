"""The oracle of test/einc/loops.test: PyTorch (f64, autograd) running the
same stacked weights in a Python loop, against `einc run`.

  loops_run.py mlp EINC TMP TARGET LAYERS...
      loops/mlp.ein's `step` (the loss and the gradients of x, w, v, g) with
      `layers` = each of LAYERS (0: an empty loop), on --target=TARGET.
  loops_run.py gpt EINC GPT_STACKED_EIN TMP
      examples/gpt_stacked.ein's loss_and_grads against gpt_torch.py's
      gpt_loss (torch's layer_norm, scaled_dot_product_attention, gelu,
      cross_entropy) on the per-layer views of the same stacked tensors.

Each tensor is compared per element: |ein - ref| <= ATOL + RTOL * |ref|.
Prints `ok NAME` or `FAIL NAME: why` per tensor, then `N failure(s)`.
"""
import os
import subprocess
import sys

import numpy as np
import torch

RTOL, ATOL = 1e-4, 1e-5
HERE = os.path.dirname(os.path.abspath(__file__))


def compare(label, got, ref):
    ref = np.asarray(ref, np.float64)
    got = np.asarray(got, np.float64)
    if got.shape != ref.shape:
        print(f"FAIL {label}: shape {got.shape}, expected {ref.shape}")
        return False
    err = np.abs(got - ref) - (ATOL + RTOL * np.abs(ref))
    if got.size and err.max() > 0:
        print(f"FAIL {label}: off by {np.abs(got - ref).max():.3g}")
        return False
    print(f"ok {label} {list(got.shape)}")
    return True


def run_einc(einc, source, fn, inputs, outputs, tmp, tag, extra=()):
    """`einc run` with the inputs in one .npz and each output NAME to one
    .npz; returns the outputs by name, or None after printing why."""
    state = os.path.join(tmp, f"{tag}-in.npz")
    np.savez(state, **inputs)
    out = os.path.join(tmp, f"{tag}-out.npz")
    if os.path.exists(out):
        os.remove(out)
    args = [einc, "run", source, "--fn", fn, "--in", state, *extra]
    for name in outputs:
        args += ["--out", f"{name}={out}"]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL {tag}: einc exit {run.returncode}: {run.stderr.strip()}")
        return None
    got = np.load(out)
    return {name: got[name] for name in outputs}


def mlp(einc, tmp, target, layer_counts):
    source = os.path.join(HERE, "loops", "mlp.ein")
    failures = 0
    for layers in layer_counts:
        rng = np.random.default_rng(layers)
        b, d, e = 4, 8, 6
        inputs = {
            "x": rng.standard_normal((b, d)).astype(np.float32),
            "w": (0.4 * rng.standard_normal((layers, d, e))).astype(np.float32),
            "v": (0.4 * rng.standard_normal((layers, e, d))).astype(np.float32),
            "g": rng.standard_normal((layers, d)).astype(np.float32),
        }
        tag = f"mlp-{target}-{layers}"
        got = run_einc(einc, source, "step", inputs,
                       ["l", "dx", "dw", "dv", "dg"], tmp, tag,
                       [f"--target={target}"])
        if got is None:
            failures += 1
            continue
        t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
             for k, v in inputs.items()}
        x, aux = t["x"], t["x"].mean() * 0
        for l in range(layers):
            y = (torch.tanh(x @ t["w"][l]) @ t["v"][l]) * t["g"][l]
            x = x + y / (l + 1)
            aux = aux + y.mean()
        loss = (x * x).mean() + aux * aux
        loss.backward()
        failures += not compare(f"{tag} loss", got["l"], loss.detach())
        for k in "xwvg":
            # An empty loop reads no row: torch leaves the gradient None.
            ref = t[k].grad if t[k].grad is not None else torch.zeros_like(t[k])
            failures += not compare(f"{tag} d{k}", got["d" + k], ref.detach())
    return failures


def gpt(einc, source, tmp):
    sys.path.insert(0, HERE)
    import gpt_torch
    d_model, seq, heads, batch = 32, 16, 2, 2
    params = gpt_torch.init_params(3, d_model=d_model, seq=seq, std=0.2,
                                   jitter=0.2)
    # Stacked: each block parameter's layers along a new leading axis.
    stacked = {n: torch.stack([params[f"l{k}_{n}"]
                               for k in range(gpt_torch.LAYERS)])
               for n in gpt_torch.BLOCK_PARAMS}
    names = (["wte", "wpe"] + gpt_torch.BLOCK_PARAMS +
             ["lnf_g", "lnf_b", "w_out"])
    tensors = {n: (stacked[n] if n in stacked else params[n]) for n in names}
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, 256, (batch, seq + 1), dtype=np.int64)
    inputs = {"tokens": tokens}
    inputs.update({n: t.numpy().astype(np.float32) for n, t in tensors.items()})
    got = run_einc(einc, source, "loss_and_grads", inputs,
                   ["loss"] + [f"g_{n}" for n in names], tmp, "gpt",
                   ["--dim", f"heads={heads}", "--dim", f"d_model={d_model}",
                    "--dim", f"seq={seq}"])
    if got is None:
        return 1
    leaves = {n: t.double().requires_grad_(True) for n, t in tensors.items()}
    # gpt_loss reads lK_NAME: the rows of the stacked leaves, in a loop.
    views = {n: leaves[n] for n in names if n not in stacked}
    for n in gpt_torch.BLOCK_PARAMS:
        for k in range(gpt_torch.LAYERS):
            views[f"l{k}_{n}"] = leaves[n][k]
    loss = gpt_torch.gpt_loss(views, torch.tensor(tokens), heads)
    loss.backward()
    failures = not compare("gpt loss", got["loss"], loss.detach())
    for n in names:
        failures += not compare(f"gpt g_{n}", got[f"g_{n}"],
                                leaves[n].grad.detach())
    return failures


def main():
    mode = sys.argv[1]
    if mode == "mlp":
        einc, tmp, target = sys.argv[2:5]
        failures = mlp(einc, tmp, target, [int(n) for n in sys.argv[5:]])
    else:
        einc, source, tmp = sys.argv[2:5]
        failures = gpt(einc, source, tmp)
    print(f"{failures} failure(s)")


if __name__ == "__main__":
    main()
