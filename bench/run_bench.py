#!/usr/bin/env python3
"""Side-by-side CPU benchmark: einc-compiled code against numpy (and einops,
torch when installed), in one run, on the workloads of issue 3; each einc
workload twice, size-specialised and size-generic.

Each workload is JIT-compiled once by `einc run --time` (compile time is not
timed: einc reports the median of repeated calls after a warm-up); numpy is
timed in this process the same way (warm-up, then the median of calls over
at least 0.2 s). The table prints times and the ratio of throughputs
(> 1 means einc is faster). Results are also checked against numpy.

  python3 bench/run_bench.py --einc build/bin/einc [--quick] [--markdown]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def median_time(fn, min_total=0.2, min_calls=5, max_total=5.0):
    fn()
    samples = []
    total = 0.0
    while total < min_total or (len(samples) < min_calls and total < max_total):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        samples.append(dt)
        total += dt
    samples.sort()
    return samples[len(samples) // 2]


def einc_time(einc, fn, inputs, tmp, extra=()):
    # fn may be (name, number of results): the first result is compared.
    fn, results = fn if isinstance(fn, tuple) else (fn, 1)
    args = [einc, "run", os.path.join(HERE, "workloads.ein"), "--fn", fn, "--time"]
    args += list(extra)
    for name, array in inputs.items():
        path = os.path.join(tmp, f"{fn}_{name}.npy")
        np.save(path, array)
        args += ["--in", f"{name}={path}"]
    out = os.path.join(tmp, f"{fn}_out.npy")
    args += ["--out", out]
    for i in range(1, results):
        args += ["--out", os.path.join(tmp, f"{fn}_out{i}.npy")]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"einc failed on {fn}: {proc.stderr}")
    m = re.search(r"time: ([0-9.e+-]+) ms", proc.stdout)
    return float(m.group(1)) / 1e3, np.load(out)


def torch_peer(run):
    """{"torch": fn} running `run(as_tensor)` on torch's CPU with 2 threads,
    or {} when torch is not installed."""
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(2)
    return {"torch (2 threads)": lambda: run(torch.from_numpy)}


def round_bf16(a):
    """float32 -> nearest-even bf16, as float32."""
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def torch_bf16_peer(a, b):
    """{"torch": fn} multiplying `a` and `b` as bf16 tensors (made outside
    the timing) on torch's CPU with 2 threads, or {} without torch."""
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(2)
    ta, tb = torch.from_numpy(a).bfloat16(), torch.from_numpy(b).bfloat16()
    return {"torch bf16 matmul (2 threads)": lambda: torch.matmul(ta, tb)}


def torch_int8_peer(a, b):
    """{"torch": fn} multiplying the int8 `a` and `b` into int32 with
    torch._int_mm on the CPU with 2 threads, or {} without torch or without
    a CPU _int_mm."""
    try:
        import torch
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        torch._int_mm(ta[:32, :32], tb[:32, :32])
    except (ImportError, AttributeError, RuntimeError):
        return {}
    torch.set_num_threads(2)
    return {"torch._int_mm (2 threads)": lambda: torch._int_mm(ta, tb)}


def workloads(quick):
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s, dtype=np.float32)
    n = 512 if quick else 2048
    a, b = f(n, n), f(n, n)
    q, k = f(8, 8, 256, 64), f(8, 8, 256, 64)
    x = f(16, 1024, 16 * 64) if not quick else f(4, 256, 16 * 64)
    r = f(16, 1024, 4096) if not quick else f(4, 256, 1024)
    yield ("matmul %d^3" % n, "matmul", {"a": a, "b": b}, 2.0 * n ** 3,
           dict({"numpy.matmul": lambda: np.matmul(a, b)},
                **torch_peer(lambda t: t(a) @ t(b))), lambda: a @ b, "GFLOP/s")
    yield ("attention scores (8,8,256,64)", "scores", {"q": q, "k": k},
           2.0 * 8 * 8 * 256 * 256 * 64,
           {"numpy.einsum(optimize=True)":
            lambda: np.einsum("bhsd,bhtd->bhst", q, k, optimize=True)},
           lambda: np.einsum("bhsd,bhtd->bhst", q, k), "GFLOP/s")
    # Ragged and small GEMMs (m k n): edges in every block; no packing pays
    # for itself at the small ones.
    for (mm, kk, nn) in ([(1000, 1001, 999)] if not quick else []) + [
            (64, 64, 64), (100, 37, 50)]:
        ra, rb = f(mm, kk), f(kk, nn)
        yield ("matmul %dx%dx%d (m k n)" % (mm, kk, nn), "matmul",
               {"a": ra, "b": rb}, 2.0 * mm * kk * nn,
               dict({"numpy.matmul": lambda ra=ra, rb=rb: np.matmul(ra, rb)},
                    **torch_peer(lambda t, ra=ra, rb=rb: t(ra) @ t(rb))),
               lambda ra=ra, rb=rb: ra @ rb, "GFLOP/s")
    # The multi-head projection: x f32[8, 512, 8 * 64] split into 8 heads,
    # each projected by w f32[64, 64]; peers run it as one flat matmul.
    xm, wm = f(8, 512, 8 * 64), f(64, 64)
    yield ("multihead proj x(8,512,8*64) w(64,64)", "multihead_proj",
           {"x": xm, "w": wm}, 2.0 * 8 * 512 * 8 * 64 * 64,
           dict({"numpy x.reshape(-1, 64) @ w":
                 lambda: (xm.reshape(-1, 64) @ wm).reshape(8, 512, 8, 64)},
                **torch_peer(lambda t: (t(xm).view(-1, 64) @ t(wm)).view(8, 512, 8, 64))),
           lambda: (xm.reshape(-1, 64) @ wm).reshape(8, 512, 8, 64), "GFLOP/s")
    # The same matmul with A given transposed (k m): read through the
    # packing step of the contraction, no transpose pass.
    at = np.ascontiguousarray(a.T)
    yield ("matmul %d^3, A given as k m" % n, "matmul_at", {"a": at, "b": b}, 2.0 * n ** 3,
           {"numpy.matmul(a.T, b)": lambda: np.matmul(at.T, b)}, lambda: at.T @ b, "GFLOP/s")
    bs, s, hd = x.shape
    yield ("b s (h d) -> b h s d %s" % (x.shape,), "split_heads", {"x": x},
           2.0 * x.nbytes,
           {"numpy reshape+transpose+copy":
            lambda: np.ascontiguousarray(x.reshape(bs, s, 16, hd // 16).transpose(0, 2, 1, 3))},
           lambda: x.reshape(bs, s, 16, hd // 16).transpose(0, 2, 1, 3), "GB/s")
    yield ("reduce mean last axis %s" % (r.shape,), "mean_last", {"x": r},
           float(r.nbytes), {"numpy.mean": lambda: r.mean(axis=2)},
           lambda: r.mean(axis=2), "GB/s")
    yield ("reduce sum first axis %s" % (r.shape,), "sum_first", {"x": r},
           float(r.nbytes), {"numpy.sum": lambda: r.sum(axis=0)},
           lambda: r.sum(axis=0), "GB/s")
    # Mixed precision: 16- and 8-bit storage, f32 accumulation and result.
    # numpy has no fp8 and no f16 BLAS: its peer widens to f32 and calls
    # OpenBLAS (for fp8 the f32 copies are made outside the timing).
    m = 256 if quick else 1024
    h1, h2 = f(m, m).astype(np.float16), f(m, m).astype(np.float16)
    yield ("f16 matmul %d^3, f32 acc" % m, "matmul_f16", {"a": h1, "b": h2}, 2.0 * m ** 3,
           {"numpy widen f16 to f32 + matmul":
            lambda: h1.astype(np.float32) @ h2.astype(np.float32)},
           lambda: h1.astype(np.float32) @ h2.astype(np.float32), "GFLOP/s")
    # bf16 (inputs as f32 files that einc rounds to nearest even; the
    # reference is f32 math on the same rounded values): vdpbf16ps where the
    # CPU has avx512bf16. torch multiplies the bf16 tensors (oneDNN).
    g1, g2 = round_bf16(f(m, m)), round_bf16(f(m, m))
    yield ("bf16 matmul %d^3, f32 acc" % m, "matmul_bf16", {"a": g1, "b": g2}, 2.0 * m ** 3,
           torch_bf16_peer(g1, g2), lambda: g1 @ g2, "GFLOP/s")
    # e4m3 values k/8, |k| <= 15 (at most 4 significant bits), as f32 files
    # that einc reads exactly.
    e1, e2 = (rng.integers(-15, 16, (m, m)).astype(np.float32) / 8 for _ in range(2))
    yield ("f8e4m3 matmul %d^3, f32 acc" % m, "matmul_e4m3", {"a": e1, "b": e2}, 2.0 * m ** 3,
           {"numpy.matmul on f32 copies": lambda: e1 @ e2},
           lambda: e1 @ e2, "GFLOP/s")
    # int8 GEMM (issue 31): i8 operands, exact i32 sums. torch's CPU peer is
    # torch._int_mm where this torch has it, else numpy's int32 matmul on
    # widened copies (made outside the timing). The f32 row before it is
    # einc's own f32 matmul at the same size: the speedup over f32.
    s1, s2 = f(m, m), f(m, m)
    yield ("f32 matmul %d^3 (beside int8)" % m, "matmul", {"a": s1, "b": s2}, 2.0 * m ** 3,
           {"numpy.matmul": lambda: np.matmul(s1, s2)}, lambda: s1 @ s2, "GFLOP/s")
    q1, q2 = (rng.integers(-128, 128, (m, m)).astype(np.int8) for _ in range(2))
    w1, w2 = q1.astype(np.int32), q2.astype(np.int32)
    yield ("int8 matmul %d^3 acc i32" % m, "matmul_i8", {"a": q1, "b": q2}, 2.0 * m ** 3,
           dict({"numpy int32 matmul": lambda: w1 @ w2}, **torch_int8_peer(q1, q2)),
           lambda: w1 @ w2, "GOP/s")
    yield from data_movement(quick, f)
    yield from programs(quick, f)


def programs(quick, f):
    """Issue 13: whole programs against PyTorch (2 threads): an attention
    head, a softmax, the lecture's MLP forward and an SGD step of it."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(2)
    T = torch.from_numpy
    s = 128 if quick else 512
    q, k, v = f(8, 8, s, 64), f(8, 8, s, 64), f(8, 8, s, 64)

    def attention_ref():
        sc = np.einsum("bhsd,bhtd->bhst", q, k) * 0.125
        e = np.exp(sc - sc.max(-1, keepdims=True))
        return np.einsum("bhst,bhtd->bhsd", e / e.sum(-1, keepdims=True), v)
    tq, tk, tv = T(q), T(k), T(v)
    yield ("attention head (8,8,%d,64)" % s, "attention_head",
           {"q": q, "k": k, "v": v}, 4.0 * 8 * 8 * s * s * 64,
           {"torch SDPA": lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)},
           attention_ref, "GFLOP/s")
    x = f(8, 8, s, s)
    tx = T(x)

    def softmax_ref():
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    yield ("softmax (8,8,%d,%d)" % (s, s), "softmax_rows", {"x": x},
           2.0 * x.nbytes, {"torch.softmax": lambda: torch.softmax(tx, -1)},
           softmax_ref, "GB/s")
    yield from norms_and_causal(quick, f, torch)
    B, D, H, K = (256, 128, 256, 32) if quick else (1024, 512, 1024, 64)
    xb, yb = f(B, D), f(B, K)
    w1 = (f(D, H) / np.float32(np.sqrt(D))).astype(np.float32)
    w2 = (f(H, K) / np.float32(np.sqrt(H))).astype(np.float32)
    lr = np.array(0.01, dtype=np.float32)
    txb, tyb = T(xb), T(yb)
    tw1, tw2 = T(w1).clone().requires_grad_(), T(w2).clone().requires_grad_()
    flops = 2.0 * B * D * H + 2.0 * B * H * K

    def forward_ref():
        h2 = np.maximum(xb @ w1, 0) @ w2
        return np.array(((h2 - yb) ** 2).mean(), dtype=np.float32)

    def torch_forward():
        with torch.no_grad():
            return ((torch.relu(txb @ tw1) @ tw2 - tyb) ** 2).mean()

    def torch_step():
        tw1.grad = tw2.grad = None
        loss = ((torch.relu(txb @ tw1) @ tw2 - tyb) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            return loss, tw1 - 0.01 * tw1.grad, tw2 - 0.01 * tw2.grad
    yield ("MLP forward B=%d D=%d H=%d K=%d" % (B, D, H, K), "mlp_forward",
           {"x": xb, "y": yb, "w1": w1, "w2": w2}, flops,
           {"torch": torch_forward}, forward_ref, "GFLOP/s")
    # Forward + backward (weight gradients 2x the forward's matmuls, the
    # data gradient of h1 one more) + SGD.
    yield ("MLP SGD step B=%d D=%d H=%d K=%d" % (B, D, H, K),
           ("mlp_sgd_step", 3), {"x": xb, "y": yb, "w1": w1, "w2": w2, "lr": lr},
           3.0 * flops - 2.0 * B * D * H,
           {"torch autograd + SGD": torch_step}, forward_ref, "GFLOP/s")


def norms_and_causal(quick, f, torch):
    """Issue 31: a LayerNorm and a causal attention head written with kept-1
    reductions (row-fused like the plain forms) against torch's fused
    kernels, 2 threads."""
    T = torch.from_numpy
    n, d = (512, 1024) if quick else (4096, 1024)
    x, g, beta = f(n, d), f(d), f(d)
    tx, tg, tb = T(x), T(g), T(beta)

    def layer_norm_ref():
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + beta
    yield ("layer norm (%d,%d)" % (n, d), "layer_norm", {"x": x, "g": g, "beta": beta},
           2.0 * x.nbytes, {"torch.nn.functional.layer_norm":
                            lambda: torch.nn.functional.layer_norm(tx, (d,), tg, tb)},
           layer_norm_ref, "GB/s")
    b, h, s = (1, 8, 512) if quick else (4, 8, 2048)
    q, k, v = f(b, h, s, 64), f(b, h, s, 64), f(b, h, s, 64)
    tq, tk, tv = T(q), T(k), T(v)

    def causal_ref():
        sc = (q @ k.swapaxes(-1, -2)) * np.float32(0.125)
        sc = np.where(np.tril(np.ones((s, s), dtype=bool)), sc, np.float32(-1e9))
        e = np.exp(sc - sc.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v
    # FLOPs of the unmasked head (both GEMMs whole), as for the plain head.
    yield ("causal attention (%d,%d,%d,64)" % (b, h, s), "causal_attention",
           {"q": q, "k": k, "v": v}, 4.0 * b * h * s * s * 64,
           {"F.scaled_dot_product_attention(is_causal=True)":
            lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)},
           causal_ref, "GFLOP/s")


def data_movement(quick, f):
    """Issue 13: transposes, repeat, pooling and reductions (GB/s: bytes read
    plus written), against numpy and, when installed, torch on 2 threads
    (`permute(...).contiguous()`, einops on torch tensors)."""
    try:
        import torch
        import einops
        torch.set_num_threads(2)
    except ImportError:
        torch = None

    def peers(np_name, np_fn, torch_fns):
        out = {np_name: np_fn}
        if torch is not None:
            out.update(torch_fns)
        return out

    t = (lambda a: torch.from_numpy(a)) if torch is not None else None
    s = 4 if quick else 1
    cases = []
    m, n = 4096 // s, 4096 // s
    x = f(m, n)
    cases.append(("m n -> n m (%d, %d)" % x.shape, "transpose_2d", x,
                  lambda x: x.T, lambda tx: tx.t(), "m n -> n m", {}))
    x = f(4001 // s, 4099 // s)
    cases.append(("m n -> n m (%d, %d)" % x.shape, "transpose_2d", x,
                  lambda x: x.T, lambda tx: tx.t(), "m n -> n m", {}))
    for h, w in ((64, 64), (63, 65)):
        x = f(16 // s, h * w, 256)
        cases.append(("b (h w) c -> b c h w %s, h=%d" % (x.shape, h),
                      "to_chw%d" % h, x,
                      lambda x, h=h, w=w: x.reshape(x.shape[0], h, w, -1).transpose(0, 3, 1, 2),
                      lambda tx, h=h, w=w: tx.reshape(tx.shape[0], h, w, -1).permute(0, 3, 1, 2),
                      "b (h w) c -> b c h w", {"h": h}))
    x = f(16 // s, 1024, 16, 64)
    cases.append(("b s h d -> b h s d %s" % (x.shape,), "swap_sh", x,
                  lambda x: x.transpose(0, 2, 1, 3), lambda tx: tx.permute(0, 2, 1, 3),
                  "b s h d -> b h s d", {}))
    x = f(16 // s, 16, 1024, 64)
    cases.append(("b h s d -> b s (h d) %s" % (x.shape,), "merge_heads", x,
                  lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1),
                  lambda tx: tx.permute(0, 2, 1, 3).reshape(tx.shape[0], tx.shape[2], -1),
                  "b h s d -> b s (h d)", {}))
    for title, fn, x, np_view, torch_view, pattern, kw in cases:
        tx = t(x) if t else None
        yield (title, fn, {"x": x}, 2.0 * x.nbytes,
               peers("numpy transpose+copy", lambda x=x, v=np_view: np.ascontiguousarray(v(x)),
                     {"torch permute().contiguous()":
                      lambda tx=tx, v=torch_view: v(tx).contiguous(),
                      "einops.rearrange(torch)":
                      lambda tx=tx, p=pattern, kw=kw: einops.rearrange(tx, p, **kw).contiguous()}),
               lambda x=x, v=np_view: v(x), "GB/s")
    g = f(4 * 1140 // s, 1700)
    tg = t(g) if t else None
    yield ("repeat h w -> (c h) w %s, c=4" % (g.shape,), "repeat_rows", {"x": g},
           5.0 * g.nbytes,
           peers("numpy.tile", lambda: np.tile(g, (4, 1)),
                 {"torch repeat": lambda: tg.repeat(4, 1),
                  "einops.repeat(torch)":
                  lambda: einops.repeat(tg, "h w -> (c h) w", c=4).contiguous()}),
           lambda: np.tile(g, (4, 1)), "GB/s")
    yield ("repeat h w -> h w c %s, c=4" % (g.shape,), "repeat_last", {"x": g},
           5.0 * g.nbytes,
           peers("numpy broadcast_to+copy",
                 lambda: np.ascontiguousarray(np.broadcast_to(g[:, :, None], g.shape + (4,))),
                 {"torch expand().contiguous()":
                  lambda: tg[:, :, None].expand(-1, -1, 4).contiguous(),
                  "einops.repeat(torch)":
                  lambda: einops.repeat(tg, "h w -> h w c", c=4).contiguous()}),
           lambda: np.broadcast_to(g[:, :, None], g.shape + (4,)), "GB/s")
    p = f(16 // s, 32, 256, 256)
    tp = t(p) if t else None
    b_, c_, hh, ww = p.shape
    blocks = lambda a: a.reshape(b_, c_, hh // 2, 2, ww // 2, 2)
    for op in ("max", "mean"):
        ref = (lambda op=op: blocks(p).max(axis=(3, 5))) if op == "max" else \
              (lambda op=op: blocks(p).mean(axis=(3, 5)))
        tfn = (lambda: torch.nn.functional.max_pool2d(tp, 2)) if op == "max" else \
              (lambda: torch.nn.functional.avg_pool2d(tp, 2))
        yield ("pool 2x2 %s %s" % (op, p.shape), "pool_" + op, {"x": p}, 1.25 * p.nbytes,
               peers("numpy reshape+%s" % op, ref,
                     {"torch %s_pool2d" % ("max" if op == "max" else "avg"): tfn,
                      "einops.reduce(torch)":
                      lambda op=op: einops.reduce(tp, "b c (h h2) (w w2) -> b c h w", op,
                                                  h2=2, w2=2)}),
               ref, "GB/s")
    r = f(16 // s, 1024, 4096)
    tr = t(r) if t else None
    for fn, axis, op in (("sum_last", 2, "sum"), ("mean_last", 2, "mean"),
                         ("sum_first", 0, "sum"), ("mean_first", 0, "mean")):
        ref = lambda axis=axis, op=op: getattr(r, op)(axis=axis)
        yield ("reduce %s %s axis %s" % (op, "last" if axis else "first", r.shape), fn,
               {"x": r}, float(r.nbytes),
               peers("numpy.%s" % op, ref,
                     {"torch.%s" % op: lambda axis=axis, op=op: getattr(tr, op)(dim=axis)}),
               ref, "GB/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--einc", required=True)
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", default="",
                    help="comma-separated: run only the workloads whose title "
                    "contains one of these")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for title, fn, inputs, work, peers, reference, unit in workloads(args.quick):
            if not any(w in title for w in args.only.split(",")):
                continue
            scale = 1e9
            t_ein, result = einc_time(args.einc, fn, inputs, tmp)
            # The same function compiled size-generic (no size known at
            # compile time, as `einc build` makes it), timed side by side.
            t_gen, generic = einc_time(args.einc, fn, inputs, tmp,
                                       ["--size-generic"])
            expected = reference()
            err = max(float(np.max(np.abs(r - expected)) /
                            max(1.0, float(np.max(np.abs(expected)))))
                      for r in (result, generic))
            for peer, run in peers.items():
                t_peer = median_time(run)
                rows.append((title, peer, t_ein, t_peer, work / t_ein / scale,
                             work / t_peer / scale, unit, t_peer / t_ein, err,
                             t_ein / t_gen))
    header = ("workload", "peer", "einc ms", "peer ms", "einc rate",
              "peer rate", "einc/peer", "max rel err", "generic/specialised")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
    for (title, peer, te, tp, re_, rp, unit, ratio, err, gen) in rows:
        cells = (title, peer, "%.3f" % (te * 1e3), "%.3f" % (tp * 1e3),
                 "%.3g %s" % (re_, unit), "%.3g %s" % (rp, unit),
                 "%.3fx" % ratio, "%.1e" % err, "%.2fx" % gen)
        if args.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print("  ".join(cells))
    bad = [r for r in rows if r[8] > 1e-3]
    if bad:
        print("result mismatch against numpy:", [r[0] for r in bad])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
