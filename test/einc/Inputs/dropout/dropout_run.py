# Runs the functions of dropout/model.ein with einc on the target given and
# compares each output bit for bit with the numpy reference (philox.py,
# itself checked first against Random123's known answers and numpy's
# np.random.Philox): so the CPU and the CUDA targets give the same bits.
# Then the kept fraction of 1e6 elements against 1 - p, and the gradient
# (dropout of dy with the same key) against its closed form and torch.
# Prints one line per case.
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import philox  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from einc_case import _run_args  # noqa: E402

einc, source, tmp, target = sys.argv[1:5]
extra = [f"--target={target}", *sys.argv[5:]]
rng = np.random.default_rng(2929)
philox.self_check()
print("reference ok")


def arr(dtype, *shape):
    return rng.standard_normal(shape).astype(dtype)


def key(k):
    return np.array(k, np.int64)


def run(tag, fn, inputs):
    args, out = _run_args(einc, source, fn, inputs, tmp, tag, extra)
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return np.load(out), ""


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


CASES = [
    ("drop", 0.1, [arr(np.float32, 7, 33), key(42)], None),
    ("drop", 0.1, [arr(np.float32, 7, 33), key(-1)], None),
    ("drop", 0.1, [arr(np.float32, 0, 5), key(3)], None),
    ("drop3", 0.5, [arr(np.float64, 3, 4, 5), key(2**62 + 12345)], None),
    ("drop_bf16", 0.25, [arr(np.float32, 100), key(7)], "bf16"),
    ("drop_f16", 0.75, [arr(np.float16, 9, 11), key(9)], None),
    ("keep_all", 0.0, [arr(np.float32, 50), key(1)], None),
    ("transposed", 0.2, [arr(np.float32, 6, 10), key(5)], "T"),
    ("scalar", 0.5, [arr(np.float32), key(11)], None),
    ("around", 0.4, [arr(np.float32, 5, 8), key(13)], "around"),
]

failures = 0
for i, (fn, p, (x, k), how) in enumerate(CASES):
    if how == "bf16":
        # bf16 goes in as its bits in a uint16 .npy; einc writes a bf16
        # result widened to f32 (exact). torch does the rounding.
        import torch
        xb = torch.from_numpy(x).to(torch.bfloat16)
        y_ref = (xb.float() * np.float32(1 / (1 - p))).to(torch.bfloat16)
        keep = philox.keep_mask(x.size, p, int(k))
        y_ref = torch.where(torch.from_numpy(keep), y_ref,
                            torch.zeros((), dtype=torch.bfloat16))
        x_in = xb.view(torch.int16).numpy().view(np.uint16)
        ref = y_ref.float().numpy()
        got, err = run(f"{target}-{i}", fn, [("x", x_in), ("key", k)])
        ok = got is not None and same_bits(got, ref)
    else:
        src = x.T.copy() if how == "T" else (x * np.float32(2) if how == "around" else x)
        ref, _ = philox.dropout(src, p, int(k))
        if how == "around":
            ref = ref + np.float32(1)
        got, err = run(f"{target}-{i}", fn, [("x", x), ("key", k)])
        ok = got is not None and same_bits(got, ref)
    print(f"{'ok' if ok else 'FAIL'} {fn} p={p} {x.dtype}{list(x.shape)} on {target}"
          f"{': ' + err if err else ''}")
    failures += not ok

# Keys computed in the function (key + 1, key * 2): one per dropout site.
x = arr(np.float32, 1000)
got, err = run(f"{target}-sites", "two_sites", [("x", x), ("key", key(5))])
ref = philox.dropout(philox.dropout(x, 0.5, 6)[0], 0.5, 10)[0]
ok = got is not None and same_bits(got, ref)
print(f"{'ok' if ok else 'FAIL'} two_sites with keys key + 1, key * 2 on {target}{': ' + err if err else ''}")
failures += not ok

# Statistics: the kept fraction of 1e6 elements is 1 - p within 5 sigma
# (sigma = sqrt(p (1 - p) / n) = 4.6e-4), and the kept values are x / (1 - p).
n, p = 1_000_000, 0.3
x = np.ones(n, np.float32)
got, err = run(f"{target}-big", "big", [("x", x), ("key", key(2026))])
ref, _ = philox.dropout(x, p, 2026)
kept = float(np.mean(got != 0)) if got is not None else -1
ok = got is not None and same_bits(got, ref) and abs(kept - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
print(f"{'ok' if ok else 'FAIL'} big: kept fraction {kept:.3f} of 1e6 (1 - p = 0.7) {err}")
failures += not ok

# Another key gives another mask (about p (1 - p) * 2 of the elements differ).
got2, _ = run(f"{target}-big2", "big", [("x", x), ("key", key(2027))])
differ = float(np.mean((got != 0) != (got2 != 0))) if got2 is not None else -1
ok = abs(differ - 2 * p * (1 - p)) < 0.01
print(f"{'ok' if ok else 'FAIL'} another key: {differ:.2f} of the mask differs (2 p (1 - p) = 0.42)")
failures += not ok

# The gradient of sum(dropout(tanh(x), p, key) * r): r * keep / (1 - p) *
# (1 - tanh(x)^2), in f64 from the reference mask (f32 tolerance).
x, r = arr(np.float32, 6, 9), arr(np.float32, 6, 9)
got, err = run(f"{target}-grad", "dgrad", [("x", x), ("r", r), ("key", key(77))])
keep = philox.keep_mask(x.size, 0.3, 77).reshape(x.shape)
want = r.astype(np.float64) * keep / 0.7 * (1 - np.tanh(x.astype(np.float64)) ** 2)
ok = got is not None and got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6)
print(f"{'ok' if ok else 'FAIL'} gradient against r * mask / (1 - p) * tanh' {err}")
failures += not ok

# The same gradient by torch's autograd through torch's own dropout
# arithmetic (x * mask * scale) with the reference's mask.
import torch  # noqa: E402
tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
mask = torch.from_numpy(keep.astype(np.float64))
(torch.tanh(tx) * mask / 0.7 * torch.from_numpy(r.astype(np.float64))).sum().backward()
ok = got is not None and np.allclose(got, tx.grad.numpy(), rtol=1e-5, atol=1e-6)
print(f"{'ok' if ok else 'FAIL'} gradient against torch's autograd with the reference mask")
failures += not ok
# p given at run time: the same bits as a literal p of the same value (an
# f32 p is the f32 value, widened), the gradient unchanged, and a p outside
# [0, 1) an error of the inputs (exit 2) naming the dropout and the value.
# The specialised CPU run takes every case; the others (size-generic, the
# emulated CUDA target) the kernel's f64 and f32 p and one refusal, to keep
# the test cheap.
every = target == "cpu" and len(sys.argv) == 5
x = arr(np.float32, 7, 33)
for p_value in (0.1, 0.0, 0.75) if every else (0.1,):
    got, err = run(f"{target}-rate-{p_value}", "drop_rate",
                   [("x", x), ("key", key(42)), ("p", np.array(p_value))])
    ok = got is not None and same_bits(got, philox.dropout(x, p_value, 42)[0])
    print(f"{'ok' if ok else 'FAIL'} run-time p={p_value} f64 on {target}{': ' + err if err else ''}")
    failures += not ok
xd = arr(np.float64, 50)
p32 = np.float32(0.3)
got, err = run(f"{target}-rate-f32", "drop_rate_f32",
               [("x", xd), ("key", key(8)), ("p", np.array(p32))])
ok = got is not None and same_bits(got, philox.dropout(xd, float(p32), 8)[0])
print(f"{'ok' if ok else 'FAIL'} run-time p f32 on {target}{': ' + err if err else ''}")
failures += not ok
if every:
    xs = arr(np.float32, 64)
    got, err = run(f"{target}-rate-computed", "drop_rate_computed",
                   [("x", xs), ("key", key(3)), ("keep", np.array(0.6))])
    ok = got is not None and same_bits(got, philox.dropout(xs, 1.0 - 0.6, 3)[0])
    print(f"{'ok' if ok else 'FAIL'} computed p = 1 - keep on {target}{': ' + err if err else ''}")
    failures += not ok
    xg, r = arr(np.float32, 6, 9), arr(np.float32, 6, 9)
    got, err = run(f"{target}-rate-grad", "dgrad_rate",
                   [("x", xg), ("r", r), ("key", key(77)), ("p", np.array(0.3))])
    keep = philox.keep_mask(xg.size, 0.3, 77).reshape(xg.shape)
    want = r.astype(np.float64) * keep / 0.7 * (1 - np.tanh(xg.astype(np.float64)) ** 2)
    ok = got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-6)
    print(f"{'ok' if ok else 'FAIL'} run-time p gradient on {target}{': ' + err if err else ''}")
    failures += not ok
for bad in (1.0, -0.25, float("nan")) if every else (1.0,):
    args, out = _run_args(einc, source, "drop_rate",
                          [("x", x), ("key", key(1)), ("p", np.array(bad))],
                          tmp, f"{target}-rate-bad", extra)
    r = subprocess.run(args, capture_output=True, text=True)
    msg = r.stderr.strip().splitlines()[0] if r.stderr.strip() else ""
    ok = r.returncode == 2 and not os.path.exists(out) and "outside [0, 1)" in msg
    print(f"{'ok' if ok else 'FAIL'} p={bad} refused: exit {r.returncode}: {msg}")
    failures += not ok
print(f"{failures} failure(s)")
