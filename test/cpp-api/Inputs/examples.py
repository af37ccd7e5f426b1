"""Inputs and a numpy oracle for examples/cpp (test/cpp-api/install.test).

  examples.py gen DIR                 random inputs at odd sizes, as .npy
  examples.py attention DIR HEADS     DIR/out.npy, DIR/weights.npy vs numpy
  examples.py mlp DIR ACT             DIR/mlp_ACT.npy vs numpy (gelu, relu)
  examples.py train-gen DIR           a linear model, rows, initial weights
  examples.py train DIR               DIR/log.jsonl, DIR/run.safetensors vs
                                      AdamW in numpy over the steps logged
  examples.py headers PREFIX          the installed headers are the public
                                      ones, and include nothing but each
                                      other and the standard library

The oracle is written here from the definitions, independently of ein.
"""
import math
import os
import re
import sys

import numpy as np

# Odd sizes: batch 2, 5 queries, 6 keys, 3 heads of 7; 11 -> 13 -> 6 MLP.
B, S, T, H, D = 2, 5, 6, 3, 7
I, HID, O = 11, 13, 6


def gen(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261124)
    f32 = np.float32
    arrays = {
        "q": rng.standard_normal((B, S, H * D)).astype(f32),
        "k": rng.standard_normal((B, T, H * D)).astype(f32),
        "v": rng.standard_normal((B, T, H * D)).astype(f32),
        "x": rng.standard_normal((B, S, I)).astype(f32),
        "w1": (rng.standard_normal((I, HID)) / math.sqrt(I)).astype(f32),
        "b1": rng.standard_normal(HID).astype(f32),
        "w2": (rng.standard_normal((HID, O)) / math.sqrt(HID)).astype(f32),
        "b2": rng.standard_normal(O).astype(f32),
    }
    for name, a in arrays.items():
        np.save(os.path.join(out, name + ".npy"), a)


def load(d, name):
    return np.load(os.path.join(d, name + ".npy")).astype(np.float64)


def close(name, got, want, rtol=1e-4, atol=1e-5):
    if got.shape != want.shape:
        sys.exit(f"{name}: shape {got.shape}, expected {want.shape}")
    if got.dtype != np.float32:
        sys.exit(f"{name}: dtype {got.dtype}, expected float32")
    err = np.max(np.abs(got.astype(np.float64) - want))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        sys.exit(f"{name}: max abs error {err:.3g} (rtol {rtol}, atol {atol})")
    print(f"{name}: {list(got.shape)} matches numpy (max abs error {err:.2g})")


def attention(d, heads):
    q, k, v = (load(d, n) for n in "qkv")
    b, s, hd = q.shape
    t = k.shape[1]
    dh = hd // heads
    # b s (h d) -> b h s d, by reshape and transpose.
    qh = q.reshape(b, s, heads, dh).transpose(0, 2, 1, 3)
    kh = k.reshape(b, t, heads, dh).transpose(0, 2, 1, 3)
    vh = v.reshape(b, t, heads, dh).transpose(0, 2, 1, 3)
    scores = np.matmul(qh, kh.transpose(0, 1, 3, 2)) / math.sqrt(dh)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    o = np.matmul(p, vh)  # b h s d
    out = o.transpose(0, 2, 1, 3).reshape(b, s, heads * dh)
    close("weights", np.load(os.path.join(d, "weights.npy")), p)
    close("attention", np.load(os.path.join(d, "out.npy")), out)


def mlp(d, act):
    x, w1, b1, w2, b2 = (load(d, n) for n in ["x", "w1", "b1", "w2", "b2"])
    pre = x @ w1 + b1
    if act == "gelu":
        erf = np.vectorize(math.erf)
        y = 0.5 * pre * (1.0 + erf(pre / math.sqrt(2.0)))
    else:
        y = np.maximum(pre, 0.0)
    out = y @ w2 + b2
    close(f"mlp {act}", np.load(os.path.join(d, f"mlp_{act}.npy")), out)


# The model of examples/cpp/train.cpp's test: y ~ x w, mean squared error.
TN, TD = 10, 4
LINEAR = """dim N = 10
dim D = 4
dim K = 1

def loss(x: f64["N D"], y: f64["N K"], w: f64["D K"]) -> f64[""]:
    return reduce((einsum(x, w, "n d, d k -> n k") - y) ** 2, "n k ->", "mean")
"""


def train_gen(out):
    from safetensors.numpy import save_file
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261129)
    x = rng.standard_normal((TN, TD))
    y = np.tanh(x @ rng.standard_normal((TD, 1)))
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "y.npy"), y)
    save_file({"w": rng.standard_normal((TD, 1)) * 0.1},
              os.path.join(out, "init.safetensors"))
    with open(os.path.join(out, "linear.ein"), "w") as f:
        f.write(LINEAR)


def train(out, lr=0.05, wd=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.AdamW's update, written out, on the full batch."""
    import json
    from safetensors.numpy import load_file
    x = np.load(os.path.join(out, "x.npy"))
    y = np.load(os.path.join(out, "y.npy"))
    w = load_file(os.path.join(out, "init.safetensors"))["w"]
    with open(os.path.join(out, "log.jsonl")) as f:
        logged = [json.loads(line)["loss"] for line in f if '"loss"' in line]
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, got in enumerate(logged, 1):
        r = x @ w - y
        loss = float(np.mean(r ** 2))
        if abs(got - loss) > 1e-10 * loss:
            sys.exit(f"train: step {t}: loss {got}, numpy {loss}")
        g = 2 * x.T @ r / TN
        w = w * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    saved = load_file(os.path.join(out, "run.safetensors"))["w"]
    if not np.allclose(saved, w, rtol=1e-10, atol=1e-12):
        sys.exit(f"train: checkpoint w {saved.ravel()}, numpy {w.ravel()}")
    print(f"train: {len(logged)} steps match numpy")


def headers(prefix):
    inc = os.path.join(prefix, "include")
    found = sorted(os.path.relpath(os.path.join(r, f), inc)
                   for r, _, fs in os.walk(inc) for f in fs)
    public = [f for f in found
              if f == "ein/ein.h" or re.fullmatch(r"ein/API/[A-Za-z]+\.h", f)]
    if found != public or "ein/ein.h" not in found:
        sys.exit(f"installed headers other than the public ones: "
                 f"{sorted(set(found) - set(public))}")
    for f in found:
        text = open(os.path.join(inc, f)).read()
        for quote, name in re.findall(r'#\s*include\s*([<"])([^>"]+)[>"]', text):
            if name.startswith(("mlir", "llvm", "fmt")):
                sys.exit(f"{f} includes {name}")
            if name.startswith("ein/"):
                # Static.h is optional (__has_include); any other ein header
                # it names must be installed.
                if name not in found and name != "ein/API/Static.h":
                    sys.exit(f"{f} includes {name}, which is not installed")
            elif quote == '"':
                sys.exit(f"{f} includes \"{name}\", not an installed header")
    print("headers:", " ".join(found))


if __name__ == "__main__":
    cmd, arg = sys.argv[1], sys.argv[2]
    if cmd == "gen":
        gen(arg)
    elif cmd == "attention":
        attention(arg, int(sys.argv[3]))
    elif cmd == "mlp":
        mlp(arg, sys.argv[3])
    elif cmd == "train-gen":
        train_gen(arg)
    elif cmd == "train":
        train(arg)
    elif cmd == "headers":
        headers(arg)
    else:
        sys.exit(f"unknown command {cmd}")
