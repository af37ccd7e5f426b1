# Runs bf16 contractions with `einc run` on the vdpbf16ps kernel (the host's
# avx512bf16) and on the widening one (--cpu-features=-avx512bf16), fusion
# on and off, and compares each result with numpy: f64 math on the
# bf16-rounded inputs, within f32 accumulation error.
import argparse
import os
import subprocess
import sys

import numpy as np

SOURCE = '''def mm(a: bf16["m k"], b: bf16["k n"]) -> f32["m n"]:
    return relu(einsum(a, b, "m k, k n -> m n", acc=f32))

def tm(a: bf16["k m"], b: bf16["k n"]) -> f32["m n"]:
    return einsum(a, b, "k m, k n -> m n", acc=f32)

def bm(a: bf16["b m k"], b: bf16["b k n"]) -> f32["b m n"]:
    return einsum(a, b, "b m k, b k n -> b m n", acc=f32)
'''


def round_bf16(x):
    """float32 -> nearest-even bf16, as float32 (einc rounds f32 files so)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


rng = np.random.default_rng(31)
# (function, a's shape, b's shape, reference on float64): odd k, k = 1, an
# odd last k block (301 = 256 + 45), m and n off the 6 x 64 tile, a batch.
CASES = [
    ("mm", (37, 71), (71, 45), lambda a, b: np.maximum(a @ b, 0)),
    ("mm", (7, 1), (1, 130), lambda a, b: np.maximum(a @ b, 0)),
    ("tm", (301, 13), (301, 70), lambda a, b: a.T @ b),
    ("bm", (2, 9, 5), (2, 5, 17), lambda a, b: a @ b),
]
# The last: blocks so small that every case crosses k blocks (kc 5, made
# even: 6; odd last blocks), m chunks and n blocks.
VARIANTS = [[], ["--cpu-features=-avx512bf16"], ["--no-fusion"],
            ["--no-fusion", "--cpu-features=-avx512bf16"],
            ["--tiles=mc=7,nc=70,kc=5,work-items=3"]]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--einc", required=True)
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    src = os.path.join(args.dir, "bf16.ein")
    with open(src, "w") as f:
        f.write(SOURCE)
    runs = 0
    for i, (fn, sa, sb, ref) in enumerate(CASES):
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        pa, pb = (os.path.join(args.dir, f"{n}{i}.npy") for n in "ab")
        np.save(pa, a)
        np.save(pb, b)
        ra, rb = round_bf16(a).astype(np.float64), round_bf16(b).astype(np.float64)
        want = ref(ra, rb)
        # f32 sums of exact bf16 products: k roundings of at most one f32 ulp
        # of the running sum of magnitudes.
        bound = ref(np.abs(ra), np.abs(rb)) * (sa[-1 if fn != "tm" else 0] + 1) * 2.0**-23
        for variant in VARIANTS:
            out = os.path.join(args.dir, f"r{i}.npy")
            cmd = [args.einc, "run", src, "--fn", fn, "--in", f"a={pa}", "--in", f"b={pb}",
                   "--out", out] + variant
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"FAIL {fn} {sa} {variant}: exit {done.returncode}: {done.stderr}")
                return 1
            got = np.load(out).astype(np.float64)
            err = np.abs(got - want)
            if got.shape != want.shape or not np.all(err <= bound + 1e-30):
                print(f"FAIL {fn} {sa} {variant}: max error {err.max()}, bound {bound.max()}")
                return 1
            runs += 1
    print(f"bf16 dot: {runs} runs agree with numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
