# take_along's gradient (dx zero except dx[..., ids, ...] = dy) against
# PyTorch's autograd (torch.gather, F.cross_entropy) and central finite
# differences of a numpy forward (np.take_along_axis), in f64: a
# cross-entropy through a projection, the axis in the middle with i32 ids,
# two take_alongs of one input (their gradients add), rank-0 ids.
#
#   grad_take_along.py EINC TMPDIR [EXTRA EINC ARGS...]
#
# Prints `ok NAME` or `FAIL NAME: why` per case, then `N failure(s)`; exits
# 1 on any failure, and when torch cannot be imported (the test must not
# pass without its oracle).
import os
import subprocess
import sys

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # a missing oracle is a failure, not a skip
    print(f"FAIL: grad_take_along.py needs PyTorch (import torch: {e})")
    print("1 failure(s)")
    sys.exit(1)

RTOL = ATOL = 1e-9  # f64, the same terms maybe in another order
EPS = 1e-6          # central differences: error ~EPS^2 and ~1e-16 / EPS
FD_TOL = 1e-6

SOURCE = '''
def log_softmax(x: f64["b s v"]) -> f64["b s v"]:
    shifted = x - reduce(x, "b s v -> b s 1", "max")
    return shifted - log(reduce(exp(shifted), "b s v -> b s 1", "sum"))

def ce_loss(h: f64["b s d"], w: f64["d v"], targets: i64["b s"]) -> f64[""]:
    logits = einsum(h, w, "b s d, d v -> b s v")
    return -reduce(take_along(log_softmax(logits), targets, "v"), "b s ->", "mean")

def cross_entropy(h: f64["b s d"], w: f64["d v"], targets: i64["b s"]) -> (f64[""], f64["b s d"], f64["d v"]):
    l = ce_loss(h, w, targets)
    dh, dw = grad(l, wrt=[h, w])
    return l, dh, dw

def middle_loss(x: f64["a v c"], ids: i32["a c"], r: f64["a c"]) -> f64[""]:
    return reduce(tanh(take_along(x, ids, "v")) * r, "a c ->", "sum")

def middle(x: f64["a v c"], ids: i32["a c"], r: f64["a c"]) -> (f64[""], f64["a v c"]):
    l = middle_loss(x, ids, r)
    return l, grad(l, wrt=[x])

def twice_loss(x: f64["v n"], ids: i64["n"], other: i64["n"]) -> f64[""]:
    return reduce(take_along(x, ids, "v") * take_along(x, other, "v"), "n ->", "sum")

def twice(x: f64["v n"], ids: i64["n"], other: i64["n"]) -> (f64[""], f64["v n"]):
    l = twice_loss(x, ids, other)
    return l, grad(l, wrt=[x])

def scalar_loss(x: f64["v"], i: i64[""]) -> f64[""]:
    return take_along(x, i, "v") * 3.0

def scalar(x: f64["v"], i: i64[""]) -> (f64[""], f64["v"]):
    l = scalar_loss(x, i)
    return l, grad(l, wrt=[x])
'''


def along(x, ids, axis):
    """numpy's take_along_axis without the kept axis."""
    i = np.expand_dims(np.asarray(ids, np.int64), axis)
    return np.squeeze(np.take_along_axis(x, i, axis=axis), axis)


def np_cross_entropy(v):
    logits = np.einsum("bsd,dv->bsv", v["h"], v["w"])
    s = logits - logits.max(axis=-1, keepdims=True)
    logp = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
    return -along(logp, v["targets"], 2).mean()


def np_middle(v):
    return np.sum(np.tanh(along(v["x"], v["ids"], 1)) * v["r"])


def np_twice(v):
    return np.sum(along(v["x"], v["ids"], 0) * along(v["x"], v["other"], 0))


def np_scalar(v):
    return along(v["x"], v["i"], 0) * 3.0


def t(a):
    return torch.tensor(np.asarray(a))


def torch_cross_entropy(v):
    h, w = t(v["h"]).requires_grad_(), t(v["w"]).requires_grad_()
    logits = torch.einsum("bsd,dv->bsv", h, w)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           t(v["targets"]).reshape(-1))
    loss.backward()
    return loss, [h.grad, w.grad]


def torch_middle(v):
    x = t(v["x"]).requires_grad_()
    ids = t(v["ids"]).long().unsqueeze(1)
    loss = (torch.tanh(x.gather(1, ids).squeeze(1)) * t(v["r"])).sum()
    loss.backward()
    return loss, [x.grad]


def torch_twice(v):
    x = t(v["x"]).requires_grad_()
    a = x.gather(0, t(v["ids"]).unsqueeze(0)).squeeze(0)
    b = x.gather(0, t(v["other"]).unsqueeze(0)).squeeze(0)
    loss = (a * b).sum()
    loss.backward()
    return loss, [x.grad]


def torch_scalar(v):
    x = t(v["x"]).requires_grad_()
    loss = x.gather(0, t(v["i"]).reshape(1)).squeeze(0) * 3.0
    loss.backward()
    return loss, [x.grad]


rng = np.random.default_rng(2929)
CASES = [
    # name, function, inputs, torch oracle, numpy forward, the input
    # differentiated by finite differences and its gradient's output
    ("cross_entropy", "cross_entropy",
     {"h": rng.normal(size=(2, 3, 4)), "w": rng.normal(size=(4, 7)),
      "targets": rng.integers(0, 7, (2, 3)).astype(np.int64)},
     torch_cross_entropy, np_cross_entropy, "w", 2),
    ("middle_axis_i32", "middle",
     {"x": rng.normal(size=(3, 5, 2)),
      "ids": rng.integers(0, 5, (3, 2)).astype(np.int32),
      "r": rng.normal(size=(3, 2))},
     torch_middle, np_middle, "x", 1),
    # Two take_alongs of one input, ids that coincide in places: their
    # gradients add up (2 * x at a coinciding position).
    ("twice_same_input", "twice",
     {"x": rng.normal(size=(4, 6)),
      "ids": np.array([0, 1, 3, 3, 2, 0], np.int64),
      "other": np.array([0, 2, 3, 1, 2, 3], np.int64)},
     torch_twice, np_twice, "x", 1),
    ("rank0_ids", "scalar",
     {"x": rng.normal(size=(5,)), "i": np.array(3, np.int64)},
     torch_scalar, np_scalar, "x", 1),
]


def run(einc, source, fn, inputs, outputs, tmp, extra):
    args = [einc, "run", source, "--fn", fn, *extra]
    for name, value in inputs.items():
        path = os.path.join(tmp, f"{fn}-{name}.npy")
        np.save(path, value)
        args += ["--in", f"{name}={path}"]
    outs = [os.path.join(tmp, f"{fn}-out{k}.npy") for k in range(outputs)]
    for o in outs:
        args += ["--out", o]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"einc run exit {r.returncode}: {r.stderr.strip()}")
    return [np.load(o) for o in outs]


def main():
    einc, tmp = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    os.makedirs(tmp, exist_ok=True)
    source = os.path.join(tmp, "take_along_grad.ein")
    with open(source, "w") as f:
        f.write(SOURCE)
    failures = 0
    for name, fn, inputs, oracle, forward, fd_of, out in CASES:
        try:
            loss_ref, grads_ref = oracle(inputs)
            got = run(einc, source, fn, inputs, 1 + len(grads_ref), tmp, extra)
            why = []
            if not np.allclose(got[0], loss_ref.detach().numpy(), rtol=RTOL, atol=ATOL):
                why.append(f"loss {got[0]} != torch {loss_ref.item()}")
            for k, g in enumerate(grads_ref):
                if not np.allclose(got[1 + k], g.numpy(), rtol=RTOL, atol=ATOL):
                    err = np.abs(got[1 + k] - g.numpy()).max()
                    why.append(f"gradient {k} differs from torch's by {err:.3g}")
            # Central differences of the numpy forward in the input fd_of.
            x = inputs[fd_of]
            fd = np.zeros_like(x)
            for idx in np.ndindex(x.shape):
                vals = []
                for sign in (1, -1):
                    moved = dict(inputs)
                    moved[fd_of] = x.copy()
                    moved[fd_of][idx] += sign * EPS
                    vals.append(float(forward(moved)))
                fd[idx] = (vals[0] - vals[1]) / (2 * EPS)
            if not np.allclose(got[out], fd, rtol=FD_TOL, atol=FD_TOL):
                err = np.abs(got[out] - fd).max()
                why.append(f"gradient of {fd_of} differs from finite differences by {err:.3g}")
        except RuntimeError as e:
            why = [str(e)]
        if why:
            failures += 1
            print(f"FAIL {name}: {'; '.join(why)}")
        else:
            print(f"ok {name}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
