# `grad` of whole programs against PyTorch's autograd (CPU, f64 reference):
# the lecture's MLP (f32 and f64) and the transformer block of
# examples/transformer.ein (with examples/gated_mlp.ein; f64, and f32 with a
# tolerance for f32 rounding), its loss sum(block(...) * r), gradients with
# respect to the input and every weight.
#
#   grad_torch.py EINC TMPDIR [EXTRA EINC ARGS...]
#
# Prints `ok NAME` or `FAIL NAME: why` per program, then `N failure(s)`;
# exits 1 on any failure, and also when torch cannot be imported (this test
# must not pass without its oracle).
import os
import re
import shutil
import subprocess
import sys

import numpy as np

try:
    import torch
except ImportError as e:  # a missing oracle is a failure, not a skip
    print(f"FAIL: grad_torch.py needs PyTorch (import torch: {e}); "
          "install it (scripts/setup.sh installs it) or run with a Python that has it")
    print("1 failure(s)")
    sys.exit(1)

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")

# --- the MLP ------------------------------------------------------------------

MLP = """
def loss(x: {t}["b d"], w1: {t}["d h"], w2: {t}["h k"], y: {t}["b k"]) -> {t}[""]:
    a = relu(einsum(x, w1, "b d, d h -> b h"))
    p = einsum(a, w2, "b h, h k -> b k")
    return reduce((p - y) ** 2, "b k ->", "mean")

def step(x: {t}["b d"], w1: {t}["d h"], w2: {t}["h k"], y: {t}["b k"]) -> ({t}[""], {t}["d h"], {t}["h k"]):
    l = loss(x, w1, w2, y)
    dw1, dw2 = grad(l, wrt=[w1, w2])
    return l, dw1, dw2
"""


def mlp_torch(x, w1, w2, y):
    a = torch.relu(x @ w1)
    p = a @ w2
    return ((p - y) ** 2).mean()


def mlp_inputs(rng):
    return {"x": rng.normal(size=(6, 5)), "w1": rng.normal(size=(5, 7)) * 0.5,
            "w2": rng.normal(size=(7, 3)) * 0.5, "y": rng.normal(size=(6, 3))}


# --- the transformer block ------------------------------------------------------

HEADS, HALF, BATCH, SEQ, HIDDEN, FFN = 4, 2, 2, 5, 8, 12
BLOCK_PARAMS = [
    ("x", "batch seq hidden", (BATCH, SEQ, HIDDEN), 1.0),
    ("g_attn", "hidden", (HIDDEN,), None),
    ("w_qkv", "hidden (3 heads 2 half)", (HIDDEN, 3 * HEADS * 2 * HALF), 0.3),
    ("w_out", "(heads 2 half) hidden", (HEADS * 2 * HALF, HIDDEN), 0.3),
    ("g_mlp", "hidden", (HIDDEN,), None),
    ("w_gate", "hidden ffn", (HIDDEN, FFN), 0.3),
    ("w_up", "hidden ffn", (HIDDEN, FFN), 0.3),
    ("w_down", "ffn hidden", (FFN, HIDDEN), 0.3),
]


def block_wrapper(t):
    names = [n for n, *_ in BLOCK_PARAMS]
    params = ", ".join(f'{n}: {t}["{s}"]' for n, s, *_ in BLOCK_PARAMS)
    results = ", ".join([f'{t}[""]'] + [f'{t}["{s}"]' for _, s, *_ in BLOCK_PARAMS])
    grads = ", ".join(f"d_{n}" for n in names)
    return (f"from transformer import block\n\n"
            f'def step({params}, r: {t}["batch seq hidden"]) -> ({results}):\n'
            f"    out = block({', '.join(names)})\n"
            f'    l = reduce(out * r, "b s m ->", "sum")\n'
            f"    {grads} = grad(l, wrt=[{', '.join(names)}])\n"
            f"    return l, {grads}\n")


def rmsnorm(x, g):
    ms = (x * x).sum(-1, keepdim=True) / x.shape[-1]
    return x * torch.rsqrt(ms + 1e-6) * g


def rotary(x, angle):
    x1, x2 = x[..., :HALF], x[..., HALF:]
    c, sn = torch.cos(angle), torch.sin(angle)
    return torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], -1)


def attention(x, w_qkv, w_out):
    b, s, _ = x.shape
    e = 2 * HALF
    qkv = x @ w_qkv
    q, k, v = (qkv[..., i * HEADS * e:(i + 1) * HEADS * e].reshape(b, s, HEADS, e) for i in range(3))
    q, k = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3)
    freq = torch.exp(torch.arange(HALF, dtype=x.dtype) * (-np.log(10000.0) / HALF))
    angle = torch.outer(torch.arange(s, dtype=x.dtype), freq)
    scores = torch.einsum("bhse,bhte->bhst", rotary(q, angle), rotary(k, angle)) / np.sqrt(e)
    allowed = torch.arange(s)[None, :] <= torch.arange(s)[:, None]
    masked = torch.where(allowed, scores, torch.tensor(-1e9, dtype=x.dtype))
    p = torch.exp(masked - masked.amax(-1, keepdim=True))
    p = p / p.sum(-1, keepdim=True)
    o = torch.einsum("bhst,bthe->bshe", p, v).reshape(b, s, HEADS * e)
    return o @ w_out


def block_torch(x, g_attn, w_qkv, w_out, g_mlp, w_gate, w_up, w_down, r):
    h = x + attention(rmsnorm(x, g_attn), w_qkv, w_out)
    hn = rmsnorm(h, g_mlp)
    out = h + (torch.nn.functional.silu(hn @ w_gate) * (hn @ w_up)) @ w_down
    return (out * r).sum()


def block_inputs(rng):
    inputs = {}
    for name, _, shape, scale in BLOCK_PARAMS:
        inputs[name] = (rng.uniform(0.5, 1.5, size=shape) if scale is None
                        else rng.normal(size=shape) * scale)
    inputs["r"] = rng.normal(size=(BATCH, SEQ, HIDDEN))
    return inputs


# gated_mlp.ein's patterns with '...', and the same with named axes.
EXPLICIT = [('einsum(x, w, "... i, i o -> ... o")', 'einsum(x, w, "b s i, i o -> b s o")'),
            ('reduce(x * x, "... d -> ... 1", "sum")', 'reduce(x * x, "b s d -> b s 1", "sum")')]


def block_files(d, t, explicit=False):
    """Copies of the example and its import, in dtype t, and the wrapper.
    `explicit` writes gated_mlp.ein's dense and rmsnorm with named axes
    instead of '...' (every call in the block has rank 3), a variant that
    checks the rest of the block when the '...' patterns fail."""
    for name in ("transformer.ein", "gated_mlp.ein"):
        with open(os.path.join(EXAMPLES, name)) as f:
            text = f.read()
        if t != "f32":
            text = re.sub(r"\bf32\b", t, text)
        if explicit and name == "gated_mlp.ein":
            for old, new in EXPLICIT:
                if old not in text:
                    raise RuntimeError(f"examples/gated_mlp.ein has no {old} to rewrite")
                text = text.replace(old, new)
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    path = os.path.join(d, "wrapper.ein")
    with open(path, "w") as f:
        f.write(block_wrapper(t))
    return path


# --- contractions of three or more operands -------------------------------------

# A LoRA adapter (examples/lora.ein's lora_step, its loss sum(y * g)): grad()
# splits the einsum into x A, then (x A) B, and differentiates the chain.
LORA = """
def step(x: {t}["b i"], a: {t}["i r"], w: {t}["r o"], g: {t}["b o"]) -> ({t}[""], {t}["b i"], {t}["i r"], {t}["r o"]):
    l = reduce(einsum(x, a, w, "b i, i r, r o -> b o") * g, "b o ->", "sum")
    dx, da, dw = grad(l, wrt=[x, a, w])
    return l, dx, da, dw
"""


def lora_torch(x, a, w, g):
    return (((x @ a) @ w) * g).sum()


def lora_inputs(rng):
    return {"x": rng.normal(size=(6, 5)), "a": rng.normal(size=(5, 2)),
            "w": rng.normal(size=(2, 4)), "g": rng.normal(size=(6, 4))}


# Four operands with '...', a composed axis, an axis summed in one operand
# alone (a one-operand step of the order) and one in no other operand's
# reach until the last step: the split's pattern sides and sizes.
CHAIN = """
dim h = 2
def step(x: {t}["b s (h d)"], u: {t}["h d r k"], v: {t}["r o"], c: {t}["o"]) -> ({t}[""], {t}["b s (h d)"], {t}["h d r k"], {t}["r o"], {t}["o"]):
    y = einsum(x, u, v, c, "... (h d), h d r k, r o, o -> ... o", h=2)
    l = reduce(y * y, "b s o ->", "sum")
    dx, du, dv, dc = grad(l, wrt=[x, u, v, c])
    return l, dx, du, dv, dc
"""


def chain_torch(x, u, v, c):
    b, s, _ = x.shape
    y = torch.einsum("bshd,hdrk,ro,o->bso", x.reshape(b, s, 2, -1), u, v, c)
    return (y * y).sum()


def chain_inputs(rng):
    return {"x": rng.normal(size=(2, 3, 6)), "u": rng.normal(size=(2, 3, 4, 2)) * 0.5,
            "v": rng.normal(size=(4, 5)) * 0.5, "c": rng.normal(size=(5,))}


# --- the harness ------------------------------------------------------------------

# (name, dtype, files, einc function, inputs, torch loss, wrt, rtol, atol).
# The reference is always torch in f64 on the same (rounded) inputs; f32
# programs get tolerances for f32 rounding through the program.
def programs():
    def text_files(text, t):
        def write(d):
            path = os.path.join(d, "program.ein")
            with open(path, "w") as f:
                f.write(text.format(t=t))
            return path
        return write

    def mlp_files(t):
        return text_files(MLP, t)

    block_wrt = [n for n, *_ in BLOCK_PARAMS]
    return [
        ("mlp_f64", "f64", mlp_files("f64"), mlp_inputs, mlp_torch, ["w1", "w2"], 1e-10, 1e-10),
        ("mlp_f32", "f32", mlp_files("f32"), mlp_inputs, mlp_torch, ["w1", "w2"], 1e-4, 1e-5),
        ("transformer_block_f64", "f64", lambda d: block_files(d, "f64"), block_inputs,
         block_torch, block_wrt, 1e-8, 1e-9),
        ("transformer_block_f32", "f32", lambda d: block_files(d, "f32"), block_inputs,
         block_torch, block_wrt, 1e-3, 1e-4),
        # The same block with gated_mlp.ein's '...' patterns written with
        # named axes (not a substitute for the two above: they must pass too).
        ("transformer_block_f64_without_ellipsis", "f64",
         lambda d: block_files(d, "f64", explicit=True), block_inputs,
         block_torch, block_wrt, 1e-8, 1e-9),
        ("lora_f32", "f32", text_files(LORA, "f32"), lora_inputs, lora_torch,
         ["x", "a", "w"], 1e-4, 1e-5),
        ("chain4_f64", "f64", text_files(CHAIN, "f64"), chain_inputs, chain_torch,
         ["x", "u", "v", "c"], 1e-10, 1e-10),
    ]


def check(name, t, write, make_inputs, torch_loss, wrt, rtol, atol, einc, tmp, extra, seed):
    d = os.path.join(tmp, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = write(d)
    np_dtype = np.float64 if t == "f64" else np.float32
    inputs = {k: np.asarray(v, np_dtype) for k, v in make_inputs(np.random.default_rng(seed)).items()}
    args = [einc, "run", path, "--fn", "step", *extra]
    for k, v in inputs.items():
        p = os.path.join(d, f"in-{k}.npy")
        np.save(p, v)
        args += ["--in", f"{k}={p}"]
    outs = [os.path.join(d, f"out-{i}.npy") for i in range(1 + len(wrt))]
    for p in outs:
        args += ["--out", p]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
        # From the first error on (warnings before it are noise here).
        first = next((i for i, l in enumerate(lines) if "error:" in l), 0)
        msg = " | ".join(lines[first:])
        return f"FAIL {name}: einc exit {proc.returncode}: {msg}"
    got = [np.load(p) for p in outs]

    tensors = {k: torch.tensor(v.astype(np.float64), requires_grad=k in wrt) for k, v in inputs.items()}
    loss = torch_loss(**tensors)
    expected = [loss.detach().numpy()] + [
        g.numpy() for g in torch.autograd.grad(loss, [tensors[w] for w in wrt])]

    problems = []
    for label, g, e in zip(["loss"] + [f"d/d{w}" for w in wrt], got, expected):
        if g.shape != e.shape:
            problems.append(f"{label}: shape {g.shape}, torch {e.shape}")
            continue
        if g.dtype != np_dtype:
            problems.append(f"{label}: dtype {g.dtype}, expected {np.dtype(np_dtype)}")
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        err = np.abs(g.astype(np.float64) - e)
        bound = atol * scale + rtol * np.abs(e)
        if not np.all(err <= bound) or not np.all(np.isfinite(g)):
            i = np.unravel_index(np.argmax(np.where(np.isfinite(err), err - bound, np.inf)), g.shape)
            problems.append(f"{label}: max error {np.max(err):.3g} (bound {atol * scale:.3g} + "
                            f"{rtol:g} relative); at {tuple(int(k) for k in i)} einc "
                            f"{float(g[i])!r}, torch {float(e[i])!r}")
    if problems:
        return f"FAIL {name}: " + "; ".join(problems)
    return f"ok {name}"


def main():
    if len(sys.argv) < 3:
        print("usage: grad_torch.py EINC TMPDIR [EXTRA EINC ARGS...]", file=sys.stderr)
        return 2
    einc, tmp, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(tmp, exist_ok=True)
    failures = 0
    for seed, program in enumerate(programs()):
        try:
            line = check(*program, einc, tmp, extra, seed)
        except Exception as e:  # a bug of this script: report it as a failure
            line = f"FAIL {program[0]}: harness error {type(e).__name__}: {e}"
        print(line, flush=True)
        failures += line.startswith("FAIL")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
