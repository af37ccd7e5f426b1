"""An independent PyTorch twin of examples/gpt.ein, its data, batches and
training loop: the oracle of test/einc/gpt-grads.test and of the 200-step
`einc train` comparison (issue 29).

Written from the math (torch's own layer_norm, scaled_dot_product_attention,
gelu, cross_entropy and AdamW), not from ein's code. Subcommands:

  gpt_torch.py data --out stdlib.bin [--max-bytes N]
      The token stream: Python's standard library sources as raw bytes (u8).
  gpt_torch.py init --seed S --out init.safetensors [--d-model 64
                    --seq 64 --ffn 4*d_model --vocab 256 --std 0.02 --jitter 0]
      Initial weights under the .ein parameter names.
  gpt_torch.py check EINC FILE.ein init.safetensors --heads H [--batch B
                    --seed S --data stdlib.bin --tmp DIR]
      Runs `EINC run FILE.ein --fn loss_and_grads` on one batch and compares
      the loss and every gradient with torch's (tolerances: TOLERANCES).
  gpt_torch.py selftest data.bin
      Checks of splitmix64, the schedule (also against torch's schedulers)
      and the batching rule.
  gpt_torch.py train init.safetensors data.bin --heads H --steps N ...
      train_reference, printing one loss per line.

The parameters (names, shapes, layout) are those of the header comment of
examples/gpt.ein: a matrix W is applied as x @ W (shape [in, out], the
transpose of an nn.Linear weight); w_qkv's columns are q | k | v, each
heads x head_dim with the head outer; the attention output merges
(heads, head_dim) with the head outer. Every parameter of the torch model is
one tensor of that name, so a safetensors file maps 1:1 both ways.
"""
import argparse
import math
import os
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

LAYERS = 2
BLOCK_PARAMS = ["ln1_g", "ln1_b", "w_qkv", "b_qkv", "w_o", "b_o", "ln2_g",
                "ln2_b", "w_fc", "b_fc", "w_proj", "b_proj"]
PARAM_NAMES = (["wte", "wpe"] +
               [f"l{k}_{n}" for k in range(LAYERS) for n in BLOCK_PARAMS] +
               ["lnf_g", "lnf_b", "w_out"])
LN_EPS = 1e-5

# check's tolerances, per element against torch in f64:
# |ein - ref| <= ATOL + RTOL * |ref| for the loss and every gradient (f32).
RTOL, ATOL = 1e-4, 1e-5


def param_shapes(vocab, d_model, seq, ffn):
    """The shape of every parameter, by name, in PARAM_NAMES order."""
    block = {"ln1_g": [d_model], "ln1_b": [d_model],
             "w_qkv": [d_model, 3 * d_model], "b_qkv": [3 * d_model],
             "w_o": [d_model, d_model], "b_o": [d_model],
             "ln2_g": [d_model], "ln2_b": [d_model],
             "w_fc": [d_model, ffn], "b_fc": [ffn],
             "w_proj": [ffn, d_model], "b_proj": [d_model]}
    shapes = {"wte": [vocab, d_model], "wpe": [seq, d_model]}
    for k in range(LAYERS):
        for n in BLOCK_PARAMS:
            shapes[f"l{k}_{n}"] = block[n]
    shapes.update({"lnf_g": [d_model], "lnf_b": [d_model],
                   "w_out": [d_model, vocab]})
    return shapes


def sizes_of(params):
    """(vocab, d_model, seq, ffn) read back from a parameter dict."""
    vocab, d_model = params["wte"].shape
    return vocab, d_model, params["wpe"].shape[0], params["l0_w_fc"].shape[1]


def init_params(seed, vocab=256, d_model=64, seq=64, ffn=None, std=0.02,
                jitter=0.0):
    """The initial weights: in PARAM_NAMES order, from one torch.Generator
    seeded with `seed`, matrices and embeddings (names starting with w) are
    normal with std `std` (0.02), LayerNorm gains (ending in _g) ones,
    biases (the rest) zeros. All f32.

    jitter > 0 adds normal noise of that std to the gains and biases (drawn
    right after each one's place in the order): the gradient check uses it,
    with a larger std, so that no gain is 1 and no bias 0 (which would hide
    a gain or bias misapplied) and the activations are O(1) (at std 0.02
    they are so small that GELU's tanh and erf forms agree to 1e-6)."""
    ffn = 4 * d_model if ffn is None else ffn
    gen = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in param_shapes(vocab, d_model, seq, ffn).items():
        base = name.split("_", 1)[1] if name[0] == "l" and name[1].isdigit() \
            else name
        if base.startswith("w"):
            params[name] = torch.randn(shape, generator=gen) * std
            continue
        params[name] = torch.ones(shape) if base.endswith("_g") \
            else torch.zeros(shape)
        if jitter > 0:
            params[name] += torch.randn(shape, generator=gen) * jitter
    return params


def gpt_loss(params, tokens, heads):
    """The mean next-token cross-entropy of examples/gpt.ein's loss:
    tokens is [batch, seq + 1] (int64), params a dict of PARAM_NAMES."""
    p = params
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    batch, seq = inputs.shape
    d_model = p["wte"].shape[1]
    head_dim = d_model // heads
    x = F.embedding(inputs, p["wte"]) + p["wpe"][:seq]
    for k in range(LAYERS):
        def w(n):
            return p[f"l{k}_{n}"]
        h = F.layer_norm(x, (d_model,), w("ln1_g"), w("ln1_b"), LN_EPS)
        q, kk, v = (h @ w("w_qkv") + w("b_qkv")).split(d_model, dim=-1)
        q, kk, v = (t.view(batch, seq, heads, head_dim).transpose(1, 2)
                    for t in (q, kk, v))
        o = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
        o = o.transpose(1, 2).reshape(batch, seq, d_model)
        x = x + (o @ w("w_o") + w("b_o"))
        h = F.layer_norm(x, (d_model,), w("ln2_g"), w("ln2_b"), LN_EPS)
        h = F.gelu(h @ w("w_fc") + w("b_fc"), approximate="tanh")
        x = x + (h @ w("w_proj") + w("b_proj"))
    x = F.layer_norm(x, (d_model,), p["lnf_g"], p["lnf_b"], LN_EPS)
    logits = x @ p["w_out"]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           targets.reshape(-1))


# --- data ---------------------------------------------------------------

def stdlib_files():
    """The .py files of this Python's standard library, sorted by their path
    relative to the library's directory, leaving out site-packages,
    dist-packages and test directories (test, tests, idle_test)."""
    root = sysconfig.get_paths()["stdlib"]
    skip = {"site-packages", "dist-packages", "test", "tests", "idle_test",
            "__pycache__"}
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for f in filenames:
            if f.endswith(".py"):
                full = os.path.join(dirpath, f)
                found.append(os.path.relpath(full, root))
    return root, sorted(found)


def make_stdlib_bytes(out_path, max_bytes=1 << 20):
    """Writes the concatenated stdlib .py files (stdlib_files' order) as raw
    bytes, cut at max_bytes: a u8 token stream, deterministic for a given
    Python installation. Returns the number of bytes written."""
    root, files = stdlib_files()
    chunks, total = [], 0
    for rel in files:
        if total >= max_bytes:
            break
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        chunks.append(data[:max_bytes - total])
        total += len(chunks[-1])
    with open(out_path, "wb") as f:
        for c in chunks:
            f.write(c)
    return total


def load_tokens(data_path, dtype=np.uint8):
    """A raw token stream (.bin of u8 or u16, little-endian) as a 1-D
    array, memory-mapped."""
    return np.memmap(data_path, dtype=np.dtype(dtype).newbyteorder("<"),
                     mode="r")


MASK64 = (1 << 64) - 1


def splitmix64(seed, c):
    """splitmix64's output for counter c: z = seed + (c+1)*golden, then the
    three xor-shift-multiply rounds, all mod 2^64."""
    z = (seed + (c + 1) * 0x9E3779B97F4A7C15) & MASK64
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & MASK64
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return z


def batch_starts(seed, step, micro, accum, batch, n, window):
    """The start of each row of micro-batch `micro` of step `step`: sample
    c = (step*accum + micro)*batch + row starts at splitmix64(seed, c) mod
    (n - window + 1)."""
    starts = n - window + 1
    if starts < 1:
        raise ValueError(f"the data has {n} tokens, fewer than one window "
                         f"of {window}")
    base = (step * accum + micro) * batch
    return [splitmix64(seed, base + r) % starts for r in range(batch)]


def get_batch(data, seed, step, micro, accum, batch, window):
    """The [batch, window] int64 tokens of one micro-batch."""
    rows = [np.asarray(data[s:s + window], dtype=np.int64)
            for s in batch_starts(seed, step, micro, accum, batch,
                                  len(data), window)]
    return torch.from_numpy(np.stack(rows))


# --- training -----------------------------------------------------------

def lr_at(t, steps, lr_max, min_lr, warmup):
    """The learning rate of step t (from 0): linear warm-up
    lr_max*(t+1)/warmup for t < warmup, then cosine decay
    min_lr + 0.5*(lr_max - min_lr)*(1 + cos(pi*(t - warmup)/(steps - warmup))).
    (warmup = 0 starts with the cosine at lr_max.)"""
    if t < warmup:
        return lr_max * (t + 1) / warmup
    return min_lr + 0.5 * (lr_max - min_lr) * (
        1 + math.cos(math.pi * (t - warmup) / (steps - warmup)))


def train_reference(init_path, data_path, steps, batch, heads, lr_max=1e-3,
                    min_lr=1e-4, warmup=10, betas=(0.9, 0.95), eps=1e-8,
                    weight_decay=0.1, clip=None, accum=1, seed=0,
                    data_dtype=np.uint8, dtype=torch.float32):
    """Trains the torch model from init_path's weights on data_path's token
    stream and returns the loss of every step (floats).

    Each step t: for micro-batch k of `accum`, the batch of get_batch(seed,
    t, k) (windows of seq + 1 tokens, seq from wpe's shape); the gradient
    is the mean of the micro-batches' gradients (each loss divided by
    accum before backward), the step's loss the mean of their losses. Then,
    if clip is given, torch.nn.utils.clip_grad_norm_(params, clip) (the
    global 2-norm over all gradients; scaled by clip/(norm + 1e-6) when
    that is below 1). Then torch.optim.AdamW (single-tensor code,
    foreach=False, as ein.optim's adamw; weight decay on every parameter)
    with lr = lr_at(t, ...), set before the step."""
    init = load_file(init_path)
    params = {n: torch.nn.Parameter(init[n].to(dtype)) for n in PARAM_NAMES}
    _, _, seq, _ = sizes_of(init)
    data = load_tokens(data_path, data_dtype)
    opt = torch.optim.AdamW(list(params.values()), lr=lr_max, betas=betas,
                            eps=eps, weight_decay=weight_decay, foreach=False)
    losses = []
    for t in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(t, steps, lr_max, min_lr, warmup)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for k in range(accum):
            tokens = get_batch(data, seed, t, k, accum, batch, seq + 1)
            loss = gpt_loss(params, tokens, heads)
            (loss / accum).backward()
            total += loss.item()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(list(params.values()), clip,
                                           foreach=False)
        opt.step()
        losses.append(total / accum)
    return losses


# --- check against einc --------------------------------------------------

def check(einc, ein_file, init_path, heads, batch, seed, data_path, tmp):
    """Runs loss_and_grads of ein_file through `einc run` on batch 0 of the
    data and compares with torch in f64. Prints one line per tensor and
    returns the number of failures."""
    init = load_file(init_path)
    vocab, d_model, seq, ffn = sizes_of(init)
    data = load_tokens(data_path)
    tokens = get_batch(data, seed, 0, 0, 1, batch, seq + 1)
    tokens_npy = os.path.join(tmp, "tokens.npy")
    np.save(tokens_npy, tokens.numpy())
    out = os.path.join(tmp, "out.safetensors")
    if os.path.exists(out):
        os.remove(out)
    args = [einc, "run", ein_file, "--fn", "loss_and_grads",
            "--dim", f"d_model={d_model}", "--dim", f"heads={heads}",
            "--dim", f"seq={seq}", "--dim", f"ffn={ffn}",
            "--dim", f"vocab={vocab}",
            "--in", init_path, "--in", "tokens=" + tokens_npy,
            "--out", "loss=" + out]
    args += [a for n in PARAM_NAMES for a in ("--out", f"g_{n}={out}")]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL einc run (exit {run.returncode}):\n{run.stderr}")
        return 1
    got = load_file(out)

    def reference(dtype):
        params = {n: init[n].to(dtype).requires_grad_() for n in PARAM_NAMES}
        loss = gpt_loss(params, tokens, heads)
        grads = torch.autograd.grad(loss, [params[n] for n in PARAM_NAMES])
        return {"loss": loss.detach(),
                **{f"g_{n}": g for n, g in zip(PARAM_NAMES, grads)}}

    ref64, ref32 = reference(torch.float64), reference(torch.float32)
    failures = 0
    for name in ["loss"] + [f"g_{n}" for n in PARAM_NAMES]:
        want = ref64[name]
        have = got.get(name)
        if have is None or tuple(have.shape) != tuple(want.shape) or \
                have.dtype != torch.float32:
            print(f"FAIL {name}: got "
                  f"{None if have is None else (tuple(have.shape), have.dtype)}"
                  f", want {tuple(want.shape)} f32")
            failures += 1
            continue

        def worst(x):
            # The largest |x - want| / (ATOL + RTOL*|want|): <= 1 passes.
            err = (x.double() - want).abs() / (ATOL + RTOL * want.abs())
            return err.max().item()
        ein_err, torch_err = worst(have), worst(ref32[name])
        ok = ein_err <= 1.0 and bool(torch.isfinite(have).all())
        print(f"{'ok' if ok else 'FAIL'} {name}: ein {ein_err:.3g}, "
              f"torch f32 {torch_err:.3g} of the tolerance; "
              f"max |ref| {want.abs().max().item():.3g}")
        failures += not ok
    print(f"{failures} failure(s)")
    return failures


def selftest(data_path):
    """Checks of this script's own rules against outside facts; prints one
    line each and returns the number of failures."""
    failures = 0

    def report(name, ok, why):
        nonlocal failures
        print(f"{'ok' if ok else 'FAIL'} selftest {name}: {why}")
        failures += not ok

    # Vigna's splitmix64.c from state 0 (= seed 0, counters 0, 1, 2).
    want = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    got = [splitmix64(0, c) for c in range(3)]
    report("splitmix64", got == want, " ".join(f"{z:016x}" for z in got))
    lrs = [lr_at(t, 20, 1.0, 0.1, 4) for t in range(20)]
    report("schedule", lrs[0] == 0.25 and lrs[3] == 1.0 and lrs[4] == 1.0
           and abs(lrs[12] - 0.55) < 1e-12 and 0.1 < lrs[19] < 0.11,
           f"lr(0)={lrs[0]}, lr(3)={lrs[3]}, lr(4)={lrs[4]}, "
           f"lr(12)={lrs[12]:.6g}, lr(19)={lrs[19]:.6g}")
    # The same schedule from torch's own schedulers: LinearLR from
    # 1/warmup to 1 over the warm-up, then CosineAnnealingLR to min_lr.
    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=1.0)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [
        torch.optim.lr_scheduler.LinearLR(opt, 1 / 4, 1.0, total_iters=3),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, 16, eta_min=0.1)],
        milestones=[4])
    theirs = []
    for _ in range(20):
        theirs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    worst = max(abs(x - y) for x, y in zip(lrs, theirs))
    report("schedule-torch", worst < 1e-12,
           f"largest difference {worst:.3g} from torch's LinearLR then "
           f"CosineAnnealingLR over 20 steps")
    # At std 0.02 the logits are near 0: the loss is near ln(vocab).
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init.safetensors")
        save_file(init_params(3, d_model=16, seq=8), init)
        data = load_tokens(data_path)
        loss = gpt_loss(load_file(init), get_batch(data, 0, 0, 0, 1, 4, 9),
                        2).item()
        report("init-loss", abs(loss - math.log(256)) < 0.05,
               f"{loss:.4f} against ln 256 = {math.log(256):.4f}")
        # Samples are numbered across micro-batches, so 4 micro-batches of
        # 2 rows see the rows of one batch of 8: the runs agree.
        a = train_reference(init, data_path, 3, 2, 2, accum=4, clip=1.0)
        b = train_reference(init, data_path, 3, 8, 2, accum=1, clip=1.0)
        report("accumulation", all(abs(x - y) <= 1e-5 * abs(y)
                                   for x, y in zip(a, b)),
               f"{a} against {b}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("data")
    p.add_argument("--out", required=True)
    p.add_argument("--max-bytes", type=int, default=1 << 20)
    p = sub.add_parser("init")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--ffn", type=int, default=None)
    p.add_argument("--std", type=float, default=0.02)
    p.add_argument("--jitter", type=float, default=0.0)
    p = sub.add_parser("check")
    p.add_argument("einc")
    p.add_argument("ein_file")
    p.add_argument("init")
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", help="a u8 token stream; default: "
                   "make_stdlib_bytes of 1 MiB into --tmp")
    p.add_argument("--tmp", help="a directory for the files (default: a "
                   "fresh temporary one)")
    p = sub.add_parser("selftest")
    p.add_argument("data")
    p = sub.add_parser("train")
    p.add_argument("init")
    p.add_argument("data")
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=None)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dtype", choices=["u8", "u16"], default="u8")
    a = parser.parse_args()

    if a.cmd == "data":
        n = make_stdlib_bytes(a.out, a.max_bytes)
        print(f"{n} bytes from {sysconfig.get_paths()['stdlib']}")
    elif a.cmd == "init":
        save_file(init_params(a.seed, a.vocab, a.d_model, a.seq, a.ffn,
                              a.std, a.jitter), a.out)
    elif a.cmd == "check":
        tmp = a.tmp or tempfile.mkdtemp(prefix="gpt-check-")
        os.makedirs(tmp, exist_ok=True)
        data = a.data
        if data is None:
            data = os.path.join(tmp, "stdlib.bin")
            make_stdlib_bytes(data, 1 << 20)
        sys.exit(1 if check(a.einc, a.ein_file, a.init, a.heads, a.batch,
                            a.seed, data, tmp) else 0)
    elif a.cmd == "selftest":
        sys.exit(1 if selftest(a.data) else 0)
    else:
        losses = train_reference(
            a.init, a.data, a.steps, a.batch, a.heads, a.lr, a.min_lr,
            a.warmup, (a.beta1, a.beta2), a.eps, a.weight_decay, a.clip,
            a.accum, a.seed,
            np.uint8 if a.data_dtype == "u8" else np.uint16)
        for t, l in enumerate(losses):
            print(f"{t} {l:.7g}")


if __name__ == "__main__":
    main()
