#!/usr/bin/env python3
"""Sharded runs (issue 30, docs/distributed.md §4) against numpy.

Each case is a sharded .ein function, run by `einc run --mesh ... --ranks N
--simulate` on 1, 2 and 4 simulated ranks (8 for the MLPs); its results are compared with
numpy computing the unsharded function in float64 (the oracle), within
1e-5 of the result's largest magnitude (f32). Where no reduction crosses
ranks, the sharded results must also equal the one-rank run bit for bit
(the issue's "sharded equals unsharded"); where one does, within 1e-6
relative to the largest magnitude.

Prints one line per run and `mesh run: N runs, M failures` at the end.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

def gelu(x):
    # The exact (erf) GELU, as ein's gelu and torch's default.
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def attention(x, w_q, w_k, w_v, w_o, heads=2):
    b, s, d = x.shape
    split = lambda t: t.reshape(b, s, heads, -1).transpose(0, 2, 1, 3)
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(b, s, -1)
    return [o @ w_o]


def mlp_grad(x, w_fc, w_proj):
    import torch
    x, w_fc, w_proj = (torch.tensor(t, requires_grad=True)
                       for t in (x, w_fc, w_proj))
    y = torch.tanh(x @ w_fc) @ w_proj
    loss = (y * y).mean()
    loss.backward()
    return [loss.detach().numpy(), w_fc.grad.numpy(), w_proj.grad.numpy(),
            x.grad.numpy()]


def dropout(x, p, key):
    # The Philox mask of the whole tensor (test/einc/Inputs/dropout/
    # philox.py), x * (1 / (1 - p)) rounded to f32 where kept.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "einc", "Inputs", "dropout"))
    import philox
    keep = philox.keep_mask(x.size, p, int(key)).reshape(x.shape)
    y = x.astype(np.float32) * np.float32(1.0 / (1.0 - p))
    return np.where(keep, y.astype(np.float64), 0.0)


def fp8(a, dtype):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fp8_reference
    return fp8_reference.round_fp8(a, dtype).astype(np.float64)


def rmsnorm(x, g):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * g


def block(x, g_attn, w_q, w_k, w_v, w_o, g_mlp, w_fc, w_proj):
    h = x + attention(rmsnorm(x, g_attn), w_q, w_k, w_v, w_o)[0]
    return h + gelu(rmsnorm(h, g_mlp) @ w_fc) @ w_proj


MEGATRON_BLOCK_INPUTS = {"x": (4, 3, 8), "g_attn": (8,), "w_q": (8, 8),
                         "w_k": (8, 8), "w_v": (8, 8), "w_o": (8, 8),
                         "g_mlp": (8,), "w_fc": (8, 16), "w_proj": (16, 8)}

MEGATRON = ["--dim", "b=4", "--dim", "s=3", "--dim", "d=8", "--dim",
            "heads=2", "--dim", "e=4", "--dim", "f=16"]
MEGATRON_MESHES = [("dp=1,tp=1", 1), ("dp=2,tp=1", 2), ("dp=1,tp=2", 2),
                   ("dp=2,tp=2", 4)]

CASES = [
    # name, source, function, meshes (each a --mesh value and rank count),
    # inputs (name -> shape), oracle, crosses (a reduction crosses ranks)
    ("mlp-column-row",
     """mesh tp

def mlp(x: f32["b d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> f32["b d"]:
    h = relu(einsum(x, w_fc, "b d, d f -> b f"))
    return einsum(h, w_proj, "b f, f d -> b d")
""", "mlp", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4), ("tp=8", 8)],
     {"x": (4, 8), "w_fc": (8, 16), "w_proj": (16, 8)},
     lambda x, w_fc, w_proj: [np.maximum(x @ w_fc, 0) @ w_proj], True),
    ("batch-split",
     """mesh dp

def layer(x: f32["b@dp d"], w: f32["d e"], g: f32["e"]) -> f32["b@dp e"]:
    return tanh(einsum(x, w, "b d, d e -> b e")) * g
""", "layer", [("dp=1", 1), ("dp=2", 2), ("dp=4", 4)],
     {"x": (8, 6), "w": (6, 5), "g": (5,)},
     lambda x, w, g: [np.tanh(x @ w) * g], False),
    # A reshard gathering a split dim inside the function (an all-gather
    # between parts): the leading dim, then a non-leading one.
    ("gather-leading",
     """mesh tp

def lead(x: f32["b@tp d"], w: f32["d f"]) -> f32["b f"]:
    y = reshard(einsum(x, w, "b d, d f -> b f"), "b f")
    return y * 2.0 + reduce(y, "b f -> f", "sum")
""", "lead", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (8, 3), "w": (3, 5)},
     lambda x, w: [(x @ w) * 2 + (x @ w).sum(0)], False),
    ("gather-inner",
     """mesh tp

def inner(x: f32["b d"], w: f32["d f@tp"]) -> f32["b f"]:
    h = reshard(einsum(x, w, "b d, d f -> b f"), "b f")
    m = reduce(h, "b f -> b", "max")
    return h - rearrange(m, "b -> b 1")
""", "inner", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (4, 3), "w": (3, 8)},
     lambda x, w: [x @ w - (x @ w).max(1, keepdims=True)], False),
    # A reshard moving the split from one dim to another (an all-to-all
    # between parts): onto the leading dim, then onto a non-leading one.
    ("alltoall-to-leading",
     """mesh tp

def move(x: f32["b d"], w: f32["d f@tp"]) -> f32["b@tp f"]:
    h = einsum(x, w, "b d, d f -> b f")
    g = reshard(h, "b@tp f")
    return tanh(g) * 2.0 - reduce(g, "b f -> b 1", "max")
""", "move", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (8, 3), "w": (3, 8)},
     lambda x, w: [np.tanh(x @ w) * 2 - (x @ w).max(1, keepdims=True)],
     False),
    ("alltoall-to-inner",
     """mesh tp

def lead(x: f32["b@tp d"], w: f32["d f"]) -> f32["b f@tp"]:
    h = einsum(x, w, "b d, d f -> b f")
    return reshard(h, "b f@tp") + 1.0
""", "lead", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (8, 3), "w": (3, 8)},
     lambda x, w: [x @ w + 1], False),
    # A rearrange moving a split dim off the major position of a result
    # dim: its all-gather (b does not divide into the blocks) or all-to-all
    # (it does) runs on the operand before it. The layouts need b's size:
    # the inputs give it, or a `dim`.
    ("rearrange-gather",
     """mesh tp

def flat(x: f32["b f@tp"]) -> f32["(b f)"]:
    return rearrange(tanh(x), "b f -> (b f)") * 2.0
""", "flat", [("tp=2", 2), ("tp=4", 4)], {"x": (3, 8)},
     lambda x: [np.tanh(x).reshape(-1) * 2], False),
    ("rearrange-alltoall",
     """mesh tp
dim b = 8

def merge(x: f32["b f@tp"], g: f32["f@tp"]) -> f32["(b f)@tp"]:
    y = rearrange(x * g, "b f -> (b f)")
    return y - reduce(y, "n -> 1", "max")
""", "merge", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (8, 4), "g": (4,)},
     lambda x, g: [(x * g).reshape(-1) - (x * g).max()], True),
    # A repeat and a reduce whose split axis lands off a result dim's
    # major position: each gathers its operand first.
    ("repeat-reduce-gather",
     """mesh tp

def f(x: f32["a@tp b"], y: f32["d@tp b c"]) -> (f32["(3 a) b"], f32["(c d)"]):
    return repeat(x, "a b -> (r a) b", r=3), reduce(y, "a b c -> (c a)", "sum")
""", "f", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (4, 3), "y": (4, 3, 2)},
     lambda x, y: [np.tile(x, (3, 1)), y.sum(1).T.reshape(-1)], False),
    # A split dim whose size is a split name over a number (h/2 of a
    # pooling): the block's (h/tp)/2 is the whole's block.
    ("quotient-split",
     """mesh tp
shard h -> tp

def pool(x: f32["h w"]) -> f32["_ _"]:
    return reduce(x, "(h2 2) w -> h2 w", "max")
""", "pool", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)], {"x": (8, 3)},
     lambda x: [x.reshape(4, 2, 3).max(1)], False),
    # A split through a pattern's major factor that does not divide into
    # the blocks (h = 12/2 = 6 over 4 ranks; over 2 it divides, a min
    # all-reduce): the reduce's operand is gathered first. The check needs
    # n's size for that (`dim n`).
    ("uneven-major-gather",
     """mesh tp
shard n -> tp
dim n = 12

def f(x: f32["n w"]) -> f32["b w"]:
    return reduce(x, "(h b) w -> b w", "min", b=2)
""", "f", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)], {"x": (12, 3)},
     lambda x: [x.reshape(6, 2, 3).min(0)], False),
    # A reshard adding a split (a local slice, no communication).
    ("reshard-add-split",
     """mesh tp

def add(x: f32["b d"], w: f32["d f"]) -> f32["b@tp f"]:
    g = reshard(einsum(x, w, "b d, d f -> b f"), "b@tp f")
    return tanh(g) - reduce(g, "b f -> b 1", "max")
""", "add", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (8, 3), "w": (3, 5)},
     lambda x, w: [np.tanh(x @ w) - (x @ w).max(1, keepdims=True)], False),
    # A var over a split dim and a take_along picking along one: the
    # operand is gathered first (an all-gather), so the op is the whole's,
    # bit for bit.
    ("var-over-split",
     """mesh tp

def f(x: f32["a k@tp"], y: f32["j@tp c"]) -> (f32["a"], f32["c"]):
    return reduce(x, "a k -> a", "var"), reduce(y, "j c -> c", "var")
""", "f", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (3, 8), "y": (8, 5)},
     lambda x, y: [x.var(1), y.var(0)], False),
    ("take-along-split",
     """mesh tp
shard v -> tp

def pick(x: f32["b v"], ids: i64["b"]) -> f32["b"]:
    return take_along(x, ids, "v")
""", "pick", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (5, 8), "ids": ("ids", (5,), 8)},
     lambda x, ids: [x[np.arange(5), ids.astype(np.int64)]], False),
    # Dropout of a split value: the mask is drawn by the index in the whole
    # tensor, so the operand is gathered first; the mask is the unsharded
    # one (philox.py's), bit for bit.
    ("dropout-split",
     """mesh dp, tp
shard a -> tp

def f(x: f32["b@dp a"], key: i64[""]) -> (f32["b@dp a"], f32["b a"]):
    y = dropout(x, 0.25, key)
    return tanh(y), y
""", "f", [("dp=1,tp=1", 1), ("dp=1,tp=2", 2), ("dp=2,tp=2", 4),
           ("dp=1,tp=4", 4)],
     {"x": (4, 8), "key": ("ids", (), 1 << 40)},
     lambda x, key: (lambda y: [np.tanh(y), y])(dropout(x, 0.25, key)),
     False),
    # pack and unpack of tensors split in the `*` part: each is gathered
    # first (two tensors split along one name, at the same op).
    ("pack-split",
     """mesh tp
shard h -> tp

def f(img: f32["b h w c"], cls: f32["b c"], x: f32["b k@tp"]) -> (f32["b (h*w+1) c"], f32["b h w c"], f32["b (2*k)"]):
    p, ps = pack([img, cls], "b * c")
    img2, cls2 = unpack(p * 2, ps, "b * c")
    q, _ = pack([x, x * 3], "b *")
    return p, img2, q
""", "f", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"img": (2, 4, 3, 2), "cls": (2, 2), "x": (2, 4)},
     lambda img, cls, x: [
         np.concatenate([img.reshape(2, 12, 2), cls[:, None, :]], 1),
         img * 2, np.concatenate([x, x * 3], 1)], False),
    # fp8 max and min over a split dim: exact (the result is one of the
    # values), widened to f32 for the all-reduce; rounding is monotonic, so
    # the oracle rounds numpy's max and min (fp8_reference.py).
    ("fp8-max-min-over-split",
     """mesh tp

def f(x: f32["b k@tp"]) -> (f32["b"], f32["b"]):
    e = astype(x, f8e4m3)
    m = astype(x * 100, f8e5m2)
    return astype(reduce(e, "b k -> b", "max"), f32), astype(reduce(m, "b k -> b", "min"), f32)
""", "f", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)], {"x": (5, 8)},
     lambda x: [fp8(x.max(1), "f8e4m3"), fp8((x * 100).min(1), "f8e5m2")],
     False),
    # A result typed with anonymous dims takes the shard rule of the name
    # its size names (alone or in a product).
    ("anonymous-result",
     """mesh tp
shard f -> tp

def anon(x: f32["b f"], w: f32["f"]) -> (f32["_ _"], f32["..."], f32["_"]):
    return x * w, w + 1.0, rearrange(x, "b f -> (f b)")
""", "anon", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (3, 8), "w": (8,)},
     lambda x, w: [x * w, w + 1, x.T.reshape(-1)], False),
    ("reduce-scatter",
     """mesh tp

def proj(h: f32["b f@tp"], w: f32["f@tp d"]) -> f32["b d@tp"]:
    return einsum(h, w, "b f, f d -> b d")
""", "proj", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"h": (3, 8), "w": (8, 12)},
     lambda h, w: [h @ w], True),
    # A reduce-scatter result split on its leading dim (above: on its
    # second).
    ("reduce-scatter-leading",
     """mesh tp

def proj(w: f32["f@tp d"], h: f32["f@tp b"]) -> f32["d@tp b"]:
    return einsum(w, h, "f d, f b -> d b")
""", "proj", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"w": (8, 12), "h": (8, 3)},
     lambda w, h: [w.T @ h], True),
    ("mean-max-over-split",
     """mesh tp

def stats(x: f32["b k@tp"]) -> (f32["b"], f32["b"], f32["b"]):
    return reduce(x, "b k -> b", "mean"), reduce(x, "b k -> b", "max"), reduce(x, "b k -> b", "min")
""", "stats", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (5, 16)},
     lambda x: [x.mean(1), x.max(1), x.min(1)], True),
    # any and all over a split dim: a max and a min of the blocks' flags.
    ("any-all-over-split",
     """mesh tp

def flags(x: f32["b k@tp"]) -> (bool["b"], bool["b"]):
    p = x > 1.5
    return reduce(p, "b k -> b", "any"), reduce(x > -1.5, "b k -> b", "all")
""", "flags", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)], {"x": (6, 8)},
     lambda x: [(x > 1.5).any(1).astype(np.float64),
                (x > -1.5).all(1).astype(np.float64)], False),
    # prod over a split dim: the blocks' products gathered and multiplied.
    ("prod-over-split",
     """mesh tp

def prods(x: f32["b k@tp"], n: i32["b k@tp"]) -> (f32["b"], i32["b"]):
    return reduce(x, "b k -> b", "prod"), reduce(n, "b k -> b", "prod")
""", "prods", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (5, 8), "n": ("ids", (5, 8), 7)},
     lambda x, n: [x.prod(1), n.prod(1)], True),
    ("mlp-2d-mesh",
     """mesh dp, tp

def mlp(x: f32["b@dp s d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> f32["b@dp s d"]:
    h = relu(einsum(x, w_fc, "b s d, d f -> b s f"))
    return einsum(h, w_proj, "b s f, f d -> b s d")
""", "mlp", [("dp=1,tp=1", 1), ("dp=2,tp=1", 2), ("dp=1,tp=2", 2),
             ("dp=2,tp=2", 4), ("dp=2,tp=4", 8), ("dp=4,tp=2", 8)],
     {"x": (4, 3, 8), "w_fc": (8, 16), "w_proj": (16, 8)},
     lambda x, w_fc, w_proj: [np.maximum(x @ w_fc, 0) @ w_proj], True),
    ("residual",
     """mesh tp

def block(x: f32["b d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> f32["b d"]:
    h = relu(einsum(x, w_fc, "b d, d f -> b f"))
    return x + einsum(h, w_proj, "b f, f d -> b d")
""", "block", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (4, 8), "w_fc": (8, 16), "w_proj": (16, 8)},
     lambda x, w_fc, w_proj: [x + np.maximum(x @ w_fc, 0) @ w_proj], True),
    ("embedding-column-split",
     """mesh tp

def embed(table: f32["vocab d@tp"], ids: i64["n"]) -> f32["n d@tp"]:
    return take(table, ids, "vocab")
""", "embed", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"table": (10, 8), "ids": ("ids", (6,), 10)},
     lambda table, ids: [table[ids.astype(np.int64)]], False),
    # A vocab-parallel take (the table split along the ids' axis): each
    # rank's rows, zeros for the others' ids, all-reduced; then read
    # completed inside the function, and its take of the ids of every row.
    ("vocab-parallel-take",
     """mesh tp

def embed(table: f32["vocab@tp d"], ids: i64["n"], w: f32["d e"]) -> (f32["n d"], f32["n e"]):
    x = take(table, ids, "vocab")
    return x, einsum(tanh(x), w, "n d, d e -> n e")
""", "embed", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"table": (16, 6), "ids": ("ids", (9,), 16), "w": (6, 3)},
     lambda table, ids, w: [table[ids.astype(np.int64)],
                            np.tanh(table[ids.astype(np.int64)]) @ w], False),
    # A result also read, later, as partial sums by a sum of partials: its
    # all-reduce waits until that read.
    ("partial-read-later",
     """mesh tp

def f(h: f32["b f@tp"], w: f32["f@tp d"], w2: f32["f@tp d"]) -> (f32["b d"], f32["b d"]):
    y = einsum(h, w, "b f, f d -> b d")
    y2 = einsum(h, w2, "b f, f d -> b d")
    return y, y + y2
""", "f", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"h": (3, 8), "w": (8, 4), "w2": (8, 4)},
     lambda h, w, w2: [h @ w, h @ w + h @ w2], True),
    # A result read, completed, by an einsum that makes new partial sums
    # over the same axis.
    ("complete-then-partial",
     """mesh tp

def f(h: f32["b f@tp"], w: f32["f@tp d"]) -> (f32["b d"], f32["d"]):
    y = einsum(h, w, "b f, f d -> b d")
    return y, einsum(y, h, "b d, b f -> d")
""", "f", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"h": (3, 8), "w": (8, 4)},
     lambda h, w: [h @ w, np.einsum("bd,bf->d", h @ w, h)], True),
    # A log-softmax over a split vocabulary (max, then sum, all-reduced),
    # a layer norm over a split width (two means), and results of three
    # layouts.
    ("log-softmax-split-vocab",
     """mesh tp

def lsm(x: f32["b v@tp"]) -> f32["b v@tp"]:
    m = reduce(x, "b v -> b 1", "max")
    s = reduce(exp(x - m), "b v -> b 1", "sum")
    return x - m - log(s)
""", "lsm", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)], {"x": (3, 8)},
     lambda x: [x - x.max(1, keepdims=True)
                - np.log(np.exp(x - x.max(1, keepdims=True))
                         .sum(1, keepdims=True))], True),
    ("layer-norm-split-width",
     """mesh tp

def ln(x: f32["b d@tp"], g: f32["d@tp"]) -> f32["b d@tp"]:
    c = x - reduce(x, "b d -> b 1", "mean")
    return c * rsqrt(reduce(c * c, "b d -> b 1", "mean") + 1e-5) * g
""", "ln", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)], {"x": (3, 8), "g": (8,)},
     lambda x, g: [(x - x.mean(1, keepdims=True))
                   / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g], True),
    ("three-layouts",
     """mesh tp

def both(x: f32["b d@tp"], w: f32["d@tp e"]) -> (f32["b e"], f32["b d@tp"], f32[""]):
    y = einsum(x, w, "b d, d e -> b e")
    return y, x * 2.0, reduce(y, "b e ->", "sum")
""", "both", [("tp=1", 1), ("tp=2", 2), ("tp=4", 4)],
     {"x": (3, 8), "w": (8, 5)},
     lambda x, w: [x @ w, 2 * x, np.array((x @ w).sum())], True),
    # grad(): the backward's collectives (a column-parallel input's data
    # gradient summed over tp, the weights' gradients over dp), against
    # torch.autograd.
    ("mlp-grad-2d-mesh",
     """mesh dp, tp

def step(x: f32["b@dp d"], w_fc: f32["d f@tp"], w_proj: f32["f@tp d"]) -> (f32[""], f32["d f@tp"], f32["f@tp d"], f32["b@dp d"]):
    h = tanh(einsum(x, w_fc, "b d, d f -> b f"))
    y = einsum(h, w_proj, "b f, f d -> b d")
    l = reduce(y * y, "b d ->", "mean")
    gfc, gproj, gx = grad(l, wrt=[w_fc, w_proj, x])
    return l, gfc, gproj, gx
""", "step", [("dp=1,tp=1", 1), ("dp=2,tp=1", 2), ("dp=1,tp=2", 2),
              ("dp=2,tp=2", 4), ("dp=1,tp=4", 4)],
     {"x": (4, 8), "w_fc": (8, 16), "w_proj": (16, 8)}, mlp_grad, True),
    # examples/megatron_block.ein's functions, with small sizes: the block
    # and its loss all-reduce inside the function.
    ("megatron-block", "@megatron_block.ein", "block", MEGATRON_MESHES,
     MEGATRON_BLOCK_INPUTS, lambda **p: [block(**p)], True),
    ("megatron-loss", "@megatron_block.ein", "loss", MEGATRON_MESHES,
     MEGATRON_BLOCK_INPUTS, lambda **p: [np.array((block(**p) ** 2).mean())],
     True),
    ("megatron-mlp", "@megatron_block.ein", "mlp", MEGATRON_MESHES,
     {"x": (4, 3, 8), "w_fc": (8, 16), "w_proj": (16, 8)},
     lambda x, w_fc, w_proj: [gelu(x @ w_fc) @ w_proj], True),
    ("megatron-attention", "@megatron_block.ein", "attention",
     MEGATRON_MESHES,
     {"x": (4, 3, 8), "w_q": (8, 8), "w_k": (8, 8), "w_v": (8, 8),
      "w_o": (8, 8)}, attention, True),
    ("megatron-rmsnorm", "@megatron_block.ein", "rmsnorm", MEGATRON_MESHES,
     {"x": (4, 3, 8), "g": (8,)},
     lambda x, g: [rmsnorm(x, g)], False),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--einc", required=True)
    ap.add_argument("--examples", required=True,
                    help="the examples/ folder (megatron_block.ein)")
    ap.add_argument("--mpi", action="store_true",
                    help="MPI ranks (einc launches mpirun) for the meshes "
                    "of at most --max-ranks ranks, not simulated ones")
    ap.add_argument("--max-ranks", type=int, default=8)
    ap.add_argument("--target", default="",
                    help="run on this --target (cuda-emulated), each run "
                    "also compared with the unsharded CPU run (within 1e-5 "
                    "of the largest magnitude: the target's own rounding)")
    ap.add_argument("--only", default="",
                    help="comma-separated case names (default: all)")
    args = ap.parse_args()
    rng = np.random.default_rng(30)
    runs = failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, source, fn, meshes, shapes, oracle, crosses in CASES:
            if args.only and name not in args.only.split(","):
                continue
            meshes = [(m, n) for m, n in meshes if n <= args.max_ranks]
            extra = []
            if source.startswith("@"):
                path = os.path.join(args.examples, source[1:])
                extra = MEGATRON
            else:
                path = os.path.join(tmp, name + ".ein")
                with open(path, "w") as f:
                    f.write(source)
            # A shape, or ("ids", shape, bound): i64 ids in [0, bound).
            inputs = {k: rng.integers(0, s[2], s[1]).astype(np.int64)
                      if s[0] == "ids" else
                      rng.standard_normal(s).astype(np.float32)
                      for k, s in shapes.items()}
            ins = []
            for k, v in inputs.items():
                p = os.path.join(tmp, f"{name}-{k}.npy")
                np.save(p, v)
                ins += ["--in", f"{k}={p}"]
            want = oracle(**{k: v.astype(np.float64)
                             for k, v in inputs.items()})
            first = None
            cpu = None
            if args.target:
                # The unsharded CPU run: the one-rank mesh on --target=cpu
                # (a case without one: its first mesh's CPU run, which
                # mesh-run.test holds to numpy and the one-rank run).
                mesh, ranks = next(((m, n) for m, n in meshes if n == 1),
                                   meshes[0])
                outs = [os.path.join(tmp, f"{name}-cpu-{i}.npy")
                        for i in range(len(want))]
                cmd = [args.einc, "run", path, "--fn", fn, "--mesh", mesh,
                       "--ranks", str(ranks), "--simulate"] + extra + ins
                for o in outs:
                    cmd += ["--out", o]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode == 0:
                    cpu = [np.load(o) for o in outs]
            for mesh, ranks in meshes:
                runs += 1
                outs = [os.path.join(tmp, f"{name}-{mesh}-{i}.npy")
                        for i in range(len(want))]
                cmd = [args.einc, "run", path, "--fn", fn, "--mesh", mesh,
                       "--ranks", str(ranks)] + extra + ins
                if not args.mpi:
                    cmd.append("--simulate")
                if args.target:
                    cmd.append("--target=" + args.target)
                for o in outs:
                    cmd += ["--out", o]
                r = subprocess.run(cmd, capture_output=True, text=True)
                why = []
                if r.returncode != 0:
                    why.append(f"exit {r.returncode}: {r.stderr.strip()}")
                else:
                    # bool results compared as 0 and 1.
                    got = [a.astype(np.float64) if a.dtype == np.bool_ else a
                           for a in map(np.load, outs)]
                    for i, (g, w) in enumerate(zip(got, want)):
                        scale = max(np.abs(w).max(), 1e-30)
                        if g.shape != w.shape:
                            why.append(f"result {i}: shape {g.shape}, "
                                       f"want {w.shape}")
                        elif np.abs(g - w).max() > 1e-5 * scale:
                            why.append(f"result {i}: off numpy by "
                                       f"{np.abs(g - w).max() / scale:.3g}")
                    if args.target and cpu is None:
                        why.append("the unsharded CPU run failed")
                    # The target's own rounding (its GEMMs' and maths'
                    # order) differs from the CPU's on one rank already:
                    # 1e-5 of the largest magnitude; sharded against
                    # unsharded on the target is the one-rank check below.
                    for i, (g, c) in enumerate(zip(got, cpu or [])):
                        scale = max(np.abs(c).max(), 1e-30)
                        if np.abs(g - c).max() > 1e-5 * scale:
                            why.append(f"result {i}: off the unsharded CPU "
                                       f"run by "
                                       f"{np.abs(g - c).max() / scale:.3g}")
                    if first is None:
                        first = got
                    else:
                        for i, (g, u) in enumerate(zip(got, first)):
                            if not crosses and not np.array_equal(g, u):
                                why.append(f"result {i}: not bit for bit "
                                           f"the one-rank run's")
                            scale = max(np.abs(u).max(), 1e-30)
                            if np.abs(g - u).max() > 1e-6 * scale:
                                why.append(f"result {i}: off the one-rank "
                                           f"run by "
                                           f"{np.abs(g - u).max() / scale:.3g}")
                status = "FAIL" if why else "ok"
                failures += bool(why)
                print(f"{status} {name} --mesh {mesh} --ranks {ranks}"
                      + ("" if not why else ": " + "; ".join(why)))
    print(f"mesh run: {runs} runs, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
