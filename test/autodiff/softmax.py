# The softmax backward that recomputes its probabilities
# (test/autodiff/softmax.test), against PyTorch:
#   softmax.py saved EINC SOURCE: the bytes `einc report --train` says an
#     attention head's step saves, beside the bytes PyTorch's autograd saves
#     for the same head (torch.autograd.graph.saved_tensors_hooks, each
#     storage once), written out with torch.softmax and with
#     scaled_dot_product_attention (FlashAttention's backward).
#   softmax.py grads EINC SOURCE TMPDIR [EINC ARGS...]: the gradients of
#     Inputs/softmax_grad.ein's `step` (three softmaxes, a log-softmax) against torch's
#     autograd in f64: |ein - ref| <= 1e-5 + 1e-4 * |ref| (ein in f32).
import json
import math
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

B, S, H, D, C = 2, 8, 2, 4, 8  # batch, seq, heads, head dim, model dim
T, N, W = 5, 3, 4              # softmax_rows' t, softmax_columns' n and w
mode, einc, source, *rest = sys.argv[1:]
failures = 0


def check(label, ok, detail):
    global failures
    if ok:
        print(f"ok {label}: {detail}")
    else:
        failures += 1
        print(f"FAIL {label}: {detail}")


def saved_bytes(fn):
    """The bytes autograd saves while `fn` builds its graph, each storage
    once (q, k and v are views of one projection each), parameters
    excluded."""
    seen, shapes = {}, []

    def pack(t):
        if not (t.is_leaf and t.requires_grad):
            storage = t.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
            shapes.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn()
    loss.backward()
    return sum(seen.values()), shapes


def head_inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, S, C, generator=g)
    ws = [torch.randn(C, H * D, generator=g).requires_grad_()
          for _ in range(3)]
    r = torch.randn(B, S, H, D, generator=g)
    return x, ws, r


def projections(x, ws):
    # b s (h d) -> b h s d: views of one matmul's result each.
    return [(x @ w).view(B, S, H, D).transpose(1, 2) for w in ws]


def torch_softmax_head():
    x, ws, r = head_inputs()
    q, k, v = projections(x, ws)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    mask = torch.ones(S, S, dtype=torch.bool).tril()
    p = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)
    return ((p @ v).transpose(1, 2) * r).sum()


def torch_sdpa_head():
    x, ws, r = head_inputs()
    q, k, v = projections(x, ws)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                         is_causal=True)
    return (o.transpose(1, 2) * r).sum()


if mode == "saved":
    run = subprocess.run(
        [einc, "report", source, "--fn", "attention_step", "--train",
         "--json", "--dim", f"b={B}", "--dim", f"s={S}", "--dim", f"h={H}",
         "--dim", f"d={D}", "--dim", f"c={C}"],
        capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL einc report: {run.stderr.strip()}")
        sys.exit(1)
    train = json.loads(run.stdout)["train"]
    ein = sum(s["bytes"]["value"] for s in train["saved"])
    ein_square = [s["name"] for s in train["saved"]
                  if s["bytes"]["value"] >= B * H * S * S * 4]
    softmax, softmax_shapes = saved_bytes(torch_softmax_head)
    sdpa, sdpa_shapes = saved_bytes(torch_sdpa_head)
    square = (B, H, S, S)
    check("ein saves no b h s s tensor", not ein_square,
          f"{ein} bytes, b h s s: {ein_square or 'none'}")
    check("torch's softmax saves the probabilities",
          square in softmax_shapes, f"{softmax} bytes")
    check("torch's scaled_dot_product_attention saves no b h s s tensor",
          square not in sdpa_shapes, f"{sdpa} bytes")
    # ein against torch's softmax: the probabilities (B*H*S*S f32) less the
    # two row vectors ein keeps (2*B*H*S f32) and the mask both keep (ein's
    # S*S bools; torch's mask is S*S bools too).
    check("ein's bytes are torch's softmax's less the probabilities, plus "
          "two row vectors and the scale",
          ein == softmax - 4 * B * H * S * S + 8 * B * H * S + 4,
          f"ein {ein}, torch softmax {softmax}")
    # ein against FlashAttention's: torch saves the output (B*S*H*D f32)
    # and one logsumexp per row (B*H*S f32); ein saves two numbers per row,
    # the causal mask (S*S bools) and the scale (one f32), not the output.
    check("ein's bytes are scaled_dot_product_attention's less its output "
          "and logsumexp, plus two row vectors, the mask and the scale",
          ein == sdpa - 4 * B * S * H * D - 4 * B * H * S + 8 * B * H * S +
          S * S + 4, f"ein {ein}, torch sdpa {sdpa}")
elif mode == "grads":
    tmp, *extra = rest
    os.makedirs(tmp, exist_ok=True)
    rng = np.random.default_rng(3)
    shapes = {"q": (B, S, H, D), "k": (B, S, H, D), "v": (B, S, H, D),
              "r": (B, S, H, D), "x": (B, H, S, T), "rx": (B, H, S, T),
              "c": (N, W), "rc": (N, W)}
    inputs = {n: rng.standard_normal(s).astype(np.float32)
              for n, s in shapes.items()}
    args = []
    for name, value in inputs.items():
        np.save(f"{tmp}/{name}.npy", value)
        args += ["--in", f"{name}={tmp}/{name}.npy"]
    names = ["loss", "dq", "dk", "dv", "dx", "drx", "dc"]
    outs = [f"{tmp}/{n}.npy" for n in names]
    run = subprocess.run([einc, "run", source, "--fn", "step", *args, *extra] +
                         [a for o in outs for a in ("--out", o)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL einc run: {run.stderr.strip()}")
        sys.exit(1)
    t = {n: torch.tensor(v, dtype=torch.float64,
                         requires_grad=n in ("q", "k", "v", "x", "rx", "c"))
         for n, v in inputs.items()}
    q, k, v = (t[n].transpose(1, 2) for n in ("q", "k", "v"))
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    mask = torch.ones(S, S, dtype=torch.bool).tril()
    p = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)
    loss = (((p @ v).transpose(1, 2) * t["r"]).sum() +
            (torch.softmax((t["x"] * 40.0).masked_fill(
                torch.arange(S)[None, None, :, None] == 0, -1e9), dim=-1) *
             t["rx"]).sum() +
            (torch.softmax(t["c"], dim=0) * t["rc"]).sum() +
            (torch.log_softmax(t["c"], dim=1) * t["rc"]).sum())
    loss.backward()
    expected = [loss.detach()] + [t[n].grad
                                  for n in ("q", "k", "v", "x", "rx", "c")]
    for name, out, ref in zip(names, outs, expected):
        got, ref = np.load(out).astype(np.float64), ref.numpy()
        err = np.abs(got - ref) - (1e-5 + 1e-4 * np.abs(ref))
        check(name, err.max() <= 0,
              f"max |ein - torch| {np.abs(got - ref).max():.3g}")
else:
    print(f"FAIL: unknown mode {mode}")
    failures += 1
print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
