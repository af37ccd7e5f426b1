#!/usr/bin/env python3
"""Execution corpus for `einc run`: compiled results compared with numpy/einops.

Every case is a `.ein` program, its inputs written as .npy files (random,
seeded: the corpus is the same on every run), run with `einc run`, and its
outputs compared with a reference computed here with numpy and einops.

Categories:

  einops      every case of test/einops/einops_agreement.py that einops
              accepts (rearrange, reduce, repeat, einsum), run for real. The
              case table is imported from that file, not copied; case ids are
              its indices (einops#012 is its #012).
  opt_einsum  every einsum expression in opt_einsum's own tests
              (tests/test_contract.py, test_paths.py, test_input.py,
              test_backends.py, test_sharing.py, test_blas.py,
              test_edge_cases.py), read from the installed package's source
              (OPT_EINSUM_FROZEN in opt_einsum_equations.py, a copy of
              opt_einsum 3.4.0's, is used when it is not installed; the
              equations are shared with test/Analysis/contraction_order.py),
              single letters turned into ein patterns, small
              sizes per letter. Implicit outputs (`"ab,bc"`) get numpy's output
              (labels seen once, sorted). Expressions numpy rejects (error
              tests) are dropped. Left out by design: size-1 broadcasting
              between operands (test_singleton_dimension_broadcast: "ij,ij->j"
              on (10,2) and (1,2), "...ij,...jk->...ik" on (1,5) and (5,5)):
              ein requires equal sizes, so these equations run with equal
              sizes instead.
  generated   seeded random and hand-written programs: rearrange / reduce /
              repeat patterns (compositions, decompositions with keyword sizes,
              `...`, `1`, `()`, anonymous numbers, all five reductions, reduce
              acc=), elementwise expression trees (`+ - * / **`, broadcasting
              by name and against `1` dims, `exp log sqrt rsqrt relu tanh`,
              unary minus, `astype` between all six dtypes), integer `/` and
              `**` on the operands that trap in C (divisors 0 and -1 next to
              INT_MIN, negative exponents of 0), several-result
              functions, einsums of 1-5 operands (executed pairwise; diagonals,
              `...`, composed inputs and outputs, acc=), chains (softmax, layer
              norm, attention, MLP, pooling; gen-rows-*: LayerNorm, RMSNorm,
              causal softmax and attention with kept-1 reductions at the row
              tiles' edges, fused and not), pack and unpack, inf/NaN/-0.0,
              integers over their whole range, larger tensors, and corners of
              the lowering and the driver (returning a parameter or one value
              twice, views of views, folded constants, --time, ...), empty
              tensors (gen-empty: size-0 dims in every op; reductions over
              empty axes give numpy's sum 0, prod 1, mean NaN), every named
              math function of include/ein/Shape/Elementwise.def on every float
              dtype, fused and with --no-fusion, after a contraction and in
              an elementwise chain (gen-lower-*, with regressions of the CPU
              lowering's passes). Dtypes f64
              f32 f16 bf16 i32 i64; then the generators again on f8e4m3 and
              f8e5m2 operands, and fp8 corners (every bit pattern, overflow,
              NaN, subnormals); integers only where meaningful, no integer
              overflow, no division by zero, positive inputs for log / sqrt /
              rsqrt / `**`.
  examples    the functions of examples/*.ein with small --dim sizes.
  negative    inputs that do not fit the signature (wrong rank, a dim that
              disagrees with another input, with --dim or with a `dim`
              declaration, a failing entry check, max / min over an empty
              axis, a split by a size-0 axis, a missing / unknown / twice
              given --in, malformed .npy files, a wrong --out count, ...):
              `einc run` must exit 2 with `einc: error: ...` and must neither
              create an output file nor replace an existing one nor leave a
              temporary file (each case runs with and without existing
              outputs). A variadic whose rank differs between two
              parameters is a clean exit 2.

Types: parameters are typed with numbers (`f32["2 3"]`) or with names
(`f32["n0 n1"]`, sizes bound from the .npy files, sometimes also given by
--dim); results with numbers, names, or `_` dims.

Inputs: f64/f32/i32/i64 are written in their own dtype; f16 inputs as f16
files or as f32 files (einc rounds them to nearest even); bf16 inputs as f32
files (rounded likewise) or as raw uint16 bf16 bit patterns; fp8 inputs as
f32 files (rounded likewise) or raw uint8 bit patterns. The reference
starts from the values einc actually sees (the rounded ones).

Comparison (shapes and the .npy dtype of each output must match exactly;
bf16 and fp8 results are f32 files):
  * exact equality for integer results, for data movement (rearrange,
    repeat, pack, unpack, returning a parameter), for max/min reductions, and
    for the larger cases whose float inputs are small integers (every sum is
    exact there);
  * floats otherwise: |got - ref| <= rtol * k * (|ref| + m) elementwise, where
    m = max |ref| over the result (a floor for values near zero after
    cancellation), rtol = 1e-12 (f64), 1e-5 (f32), 1e-2 (f16, bf16), one
    unit in the last place for fp8 (0.125 for f8e4m3, 0.25 for f8e5m2), and
    k = max(1, K) for f64/f32, K being the number of terms reduced into each
    output element (the reduction length), k = 1 for 16- and 8-bit floats.
    The reference is computed in float64 (integers in int64), fp8 rounding
    by fp8_reference.py. For f16/bf16/fp8 it is computed
    from the rounded inputs and rounded to the dtype after every operation
    (via f32, as einc computes each op in f32 and rounds once); reductions
    and einsums accumulate at full precision (einc accumulates in f32).
  * NaN and infinities must match exactly.

Known bugs outside the lowering (front end, driver) are cases marked xfail
with the reason: expected to fail, counted apart, listed with --verbose; one
that passes is reported as XPASS and counts as a failure, so that its mark is
removed once the bug is fixed.

Usage:
    run_corpus.py --einc PATH [--filter SUBSTR] [--keep DIR] [--verbose] [--jobs N]

--filter keeps the cases whose id or description contains SUBSTR; --keep
writes each case's program, inputs, outputs and command line (cmd.sh) under
DIR/<case id>/; --jobs is the number of parallel einc runs (default 2).

Output: one line per failure (case id, description, what differed, the head
of einc's stderr), the number of cases per category, the number of expected
failures, then
    run corpus: N cases, F failures
    P passed, F failed
(P = N - F - expected failures). Exits non-zero when F > 0, or (unfiltered
runs) when there are fewer than 500 cases.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

sys.dont_write_bytecode = True  # importing einops_agreement leaves no cache

try:
    import numpy as np
    import einops
except ImportError as err:  # pragma: no cover - environment problem
    print(f"error: run_corpus.py needs numpy and einops: {err}", file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "einops"))
sys.path.insert(0, HERE)
import einops_agreement as agreement  # noqa: E402
from fp8_reference import decode as decode_fp8, encode as encode_fp8, round_fp8  # noqa: E402
from opt_einsum_equations import (  # noqa: E402
    ein_einsum_side,
    np_tokens,
    numpy_explicit,
    opt_einsum_expressions,
)

MIN_CASES = 500
EINC_TIMEOUT_S = 120
MAX_ELEMENTS = 4096  # generated tensors stay small

FLOATS = ("f64", "f32", "f16", "bf16")
FP8 = ("f8e4m3", "f8e5m2")  # drawn only by the fp8 generators
INTS = ("i32", "i64")
DTYPES = FLOATS + INTS
# fp8: one unit in the last place (3 and 2 mantissa bits), for a result that
# lands on the other side of a rounding boundary than the float64 reference.
RTOL = {"f64": 1e-12, "f32": 1e-5, "f16": 1e-2, "bf16": 1e-2, "f8e4m3": 0.125, "f8e5m2": 0.25}
# The dtype of the .npy file einc writes for a result of each dtype.
FILE_DTYPE = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "bf16": np.float32,
    "f8e4m3": np.float32,
    "f8e5m2": np.float32,
    "i32": np.int32,
    "i64": np.int64,
    "i8": np.int8,
    "bool": np.bool_,
}
# i8 is drawn only by i8_cases (random generators would overflow it).
INT_RANGE = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "i8": (-128, 127)}


# --------------------------------------------------------------------------
# Dtype semantics of the reference
# --------------------------------------------------------------------------


def round_bf16(a) -> np.ndarray:
    """float32 -> nearest-even bf16, returned as float32."""
    a = np.array(a, dtype=np.float32)  # a copy, C order, any rank (0 too)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, out).reshape(a.shape)


def quantize(a, dtype: str) -> np.ndarray:
    """The reference value rounded to `dtype` (floats kept as float64)."""
    a = np.asarray(a)
    if dtype == "bool":
        return np.asarray(a, dtype=np.bool_)
    if dtype in INT_RANGE:
        a = np.asarray(a, dtype=np.int64)
        lo, hi = INT_RANGE[dtype]
        if a.size and (a.min() < lo or a.max() > hi):
            raise OverflowError(f"integer reference overflows {dtype}")
        return a
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "f64":
            return a
        if dtype == "f32":
            return a.astype(np.float32).astype(np.float64)
        if dtype == "f16":
            return a.astype(np.float32).astype(np.float16).astype(np.float64)
        if dtype in FP8:
            return round_fp8(a, dtype)
        return round_bf16(a.astype(np.float32)).astype(np.float64)


def tstr(dtype: str, dims) -> str:
    return f'{dtype}["' + " ".join(str(d) for d in dims) + '"]'


def make_input(rng: np.random.Generator, shape, dtype: str, domain: str = "any"):
    """Random input: (file content, reference values einc will see).

    domain: any (floats in [-1, 1], ints in [-3, 3]), pos ([0.5, 2] / [1, 4]),
    near1 ([0.95, 1.05] / +-1), frac (k + 0.25/0.5/0.75: casts to int exactly),
    wide (ints over their whole range; floats as any).
    """
    shape = tuple(int(s) for s in shape)
    if dtype == "bool":
        arr = rng.random(size=shape) < (0.8 if domain == "near1" else 0.5)
        return arr, arr
    if dtype in INTS:
        if domain == "wide":  # the whole range: data movement must keep every bit
            info = np.iinfo(np.int32 if dtype == "i32" else np.int64)
            arr = rng.integers(info.min, info.max, size=shape, dtype=np.int64, endpoint=True)
            arr = arr.astype(np.int32 if dtype == "i32" else np.int64)
            return arr, arr.astype(np.int64)
        if domain == "pos":
            v = rng.integers(1, 5, size=shape)
        elif domain == "near1":
            v = rng.choice(np.array([-1, 1]), size=shape)
        else:
            v = rng.integers(-3, 4, size=shape)
        npd = np.int32 if dtype == "i32" else np.int64
        arr = np.asarray(v, dtype=npd)
        return arr, arr.astype(np.int64)
    if domain == "pos":
        v = rng.uniform(0.5, 2.0, size=shape)
    elif domain == "near1":
        v = rng.uniform(0.95, 1.05, size=shape)
    elif domain == "frac":
        v = rng.integers(-3, 4, size=shape) + rng.choice(np.array([0.25, 0.5, 0.75]), size=shape)
    else:
        v = rng.uniform(-1.0, 1.0, size=shape)
    v = np.asarray(v, dtype=np.float64)
    if dtype == "f64":
        return v, v
    if dtype == "f32":
        f = v.astype(np.float32)
        return f, f.astype(np.float64)
    if dtype == "f16":  # an f16 file, or an f32 file (einc rounds to nearest even)
        h = v.astype(np.float32).astype(np.float16)
        if rng.random() < 0.3:
            return v.astype(np.float32), h.astype(np.float64)
        return h, h.astype(np.float64)
    if dtype in FP8:  # an f32 file (rounded by einc) or raw |u1 bit patterns
        r = round_fp8(v, dtype)
        if rng.random() < 0.4:
            return encode_fp8(r, dtype), r
        return v.astype(np.float32), r
    # bf16: an f32 file (rounded by einc) or raw bit patterns.
    f = v.astype(np.float32)
    r = round_bf16(f)
    if rng.random() < 0.3:
        bits = (np.array(r, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16).reshape(shape)
        return bits, r.astype(np.float64)
    return f, r.astype(np.float64)


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


@dataclass
class Out:
    dtype: str  # the declared result dtype
    ref: np.ndarray  # float64 (floats) or int64 (integers)
    exact: bool = False
    K: int = 1  # reduction length


@dataclass
class RunCase:
    cid: str
    category: str
    desc: str
    source: str
    fn: str = "f"
    inputs: list = field(default_factory=list)  # (param, ndarray | bytes)
    outs: list = field(default_factory=list)  # Out per result
    dims: list = field(default_factory=list)  # (name, value) for --dim
    expect_rc: int = 0
    stderr_has: str = ""
    in_args: Optional[list] = None  # (param, file name) overriding `inputs`
    n_out: Optional[int] = None  # number of --out given (negative cases)
    same_out: bool = False  # the same --out path twice
    preexisting: bool = False  # outputs exist before the run (sentinels)
    xfail: str = ""  # a known bug outside the lowering: expected to fail
    extra_args: list = field(default_factory=list)  # more einc run options
    files: list = field(default_factory=list)  # (name, text) written beside f.ein (imports)


# ---- 1. einops_agreement's accepted cases --------------------------------


def split_einsum_side(side: str) -> list[str]:
    return side.replace("...", " ... ").replace("(", " ( ").replace(")", " ) ").split()


def einsum_param_dims(pattern: str, shapes) -> list[list[str]]:
    """Per operand, one dim name per dim (labels -> L<i>, '...' dims -> E<j>)."""
    label_names: dict[str, str] = {}
    per_op: list[list[str]] = []
    for spec, shape in zip(pattern.split("->")[0].split(","), shapes):
        tokens = split_einsum_side(spec)
        n_ell = len(shape) - (len(tokens) - 1) if "..." in tokens else 0
        names: list[str] = []
        for tok in tokens:
            if tok == "...":
                names += [f"E{j}" for j in range(n_ell)]
            else:
                names.append(label_names.setdefault(tok, f"L{len(label_names)}"))
        per_op.append(names)
    return per_op


def contraction_length(shapes, ins: list[list[str]], out: list[str]) -> int:
    """Terms summed into each output element of an einsum: the sizes of the
    labels absent from the output (each counted once), and of the '...' dims
    when the output has no '...'."""
    sizes: dict[str, int] = {}
    ell: tuple = ()
    for tokens, shape in zip(ins, shapes):
        if "..." in tokens:
            n_ell = len(shape) - (len(tokens) - 1)
            pos = tokens.index("...")
            ell = max(ell, tuple(shape[pos : pos + n_ell]), key=len)
            dims = list(shape[:pos]) + list(shape[pos + n_ell :])
            tokens = [t for t in tokens if t != "..."]
        else:
            dims = list(shape)
        for t, d in zip(tokens, dims):
            sizes[t] = d
    k = 1
    for t, d in sizes.items():
        if t not in out:
            k *= d
    if "..." not in out:
        for d in ell:
            k *= d
    return max(1, k)


def einops_cases() -> list[RunCase]:
    cases: list[RunCase] = []
    movement_dtypes = ("f32", "i32", "f64", "bf16", "i64", "f16")
    reduce_dtypes = ("f32", "f64", "i32", "bf16", "f16", "i64")
    einsum_dtypes = ("f32", "f64", "i64", "bf16", "f16", "i32")
    for i, case in enumerate(agreement.all_cases()):
        truth = agreement.einops_truth(case)
        if not truth.accepted:
            continue
        rng = np.random.default_rng(1000 + i)
        n_seen = len(cases)
        if case.op in ("rearrange", "repeat"):
            dtype = movement_dtypes[n_seen % len(movement_dtypes)]
        elif case.op == "reduce":
            dtype = reduce_dtypes[n_seen % len(reduce_dtypes)]
            if case.reduction == "mean" and dtype in INTS:
                dtype = "f32" if dtype == "i32" else "f64"
        else:
            dtype = einsum_dtypes[n_seen % len(einsum_dtypes)]
        if case.reduction in ("any", "all"):
            dtype = "bool"
        domain = "near1" if case.reduction == "prod" else "any"
        if case.op in ("rearrange", "repeat") or case.reduction in ("max", "min"):
            domain = "wide"
        named = i % 2 == 1
        files, vals = [], []
        for shape in case.shapes:
            f, v = make_input(rng, shape, dtype, domain)
            files.append(f)
            vals.append(v)
        sizes = dict(case.sizes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if case.op == "einsum":
                ref = einops.einsum(*vals, case.pattern)
            elif case.op == "rearrange":
                ref = einops.rearrange(vals[0], case.pattern, **sizes)
            elif case.op == "repeat":
                ref = einops.repeat(vals[0], case.pattern, **sizes)
            else:
                ref = einops.reduce(vals[0], case.pattern, case.reduction, **sizes)
        exact = (case.op in ("rearrange", "repeat") or dtype in INTS or dtype == "bool"
                 or case.reduction in ("max", "min"))
        if case.op == "einsum":
            lhs, rhs = case.pattern.split("->")
            K = contraction_length(case.shapes, [split_einsum_side(t) for t in lhs.split(",")], split_einsum_side(rhs))
        elif case.op == "reduce":
            K = max(1, int(np.prod(case.shapes[0], dtype=np.int64)) // max(1, int(np.prod(truth.shape, dtype=np.int64))))
        else:
            K = 1
        out = Out(dtype, quantize(ref, dtype), exact, K)
        # The program.
        pnames = ["x"] if len(case.shapes) == 1 else [f"x{k}" for k in range(len(case.shapes))]
        if named and case.op == "einsum":
            per_op = einsum_param_dims(case.pattern, case.shapes)
            ptypes = [tstr(dtype, dims) for dims in per_op]
            rtype = tstr(dtype, ["_"] * len(truth.shape))
        elif named:
            ptypes = [tstr(dtype, [f"n{d}" for d in range(len(s))]) for s in case.shapes]
            rtype = tstr(dtype, ["_"] * len(truth.shape))
        else:
            ptypes = [tstr(dtype, s) for s in case.shapes]
            rtype = tstr(dtype, truth.shape)
        params = ", ".join(f"{n}: {t}" for n, t in zip(pnames, ptypes))
        kwargs = "".join(f", {k}={v}" for k, v in case.sizes)
        if case.op == "einsum":
            call = f'einsum({", ".join(pnames)}, "{case.pattern}")'
        elif case.op == "reduce":
            call = f'reduce(x, "{case.pattern}", "{case.reduction}"{kwargs})'
        else:
            call = f'{case.op}(x, "{case.pattern}"{kwargs})'
        source = f"def f({params}) -> {rtype}:\n    return {call}\n"
        cases.append(
            RunCase(
                cid=f"einops#{i:03d}",
                category="einops",
                desc=f"{dtype} {case.describe()}",
                source=source,
                inputs=list(zip(pnames, files)),
                outs=[out],
            )
        )
    return cases


# ---- 2. opt_einsum's test expressions -------------------------------------
# The expressions and their helpers are in opt_einsum_equations.py, shared
# with test/Analysis/contraction_order.py.


def opt_einsum_cases() -> tuple[list[RunCase], str]:
    exprs, origin = opt_einsum_expressions()
    cases: list[RunCase] = []
    cycle = ("f64", "f32", "i32", "bf16", "f32", "f16", "i64", "f32")
    for n, eq in enumerate(exprs):
        if any(t != "..." and not t.isalpha() for t in np_tokens(eq.replace(",", "").replace("->", ""))):
            continue  # stray dots: an error test
        explicit = numpy_explicit(eq)
        lhs, rhs = explicit.split("->")
        terms = lhs.split(",")
        letters = sorted(set(c for c in lhs if c.isalpha()))
        size = {c: 2 + (ord(c) * 7 + 3) % 3 for c in letters}  # 2..4
        ell = (3, 2)
        shapes = []
        for t in terms:
            shape = []
            for tok in ein_einsum_side(t).split():
                shape += list(ell) if tok == "..." else [size[tok]]
            shapes.append(tuple(shape))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                zeros = [np.zeros(s) for s in shapes]
                np.einsum(eq, *zeros)
                if np.einsum(explicit, *zeros).shape != np.einsum(eq, *zeros).shape:
                    raise AssertionError("implicit output")
        except Exception:
            continue  # an error test of opt_einsum (invalid for numpy too)
        if os.environ.get("RUN_CORPUS_DEBUG"):
            print("opt_einsum:", eq, explicit, shapes, file=sys.stderr)
        rng = np.random.default_rng(2000 + n)
        dtype = cycle[n % len(cycle)]
        acc = None
        if dtype in ("bf16", "f16") and n % 3 == 0:
            acc = "f32"
        if dtype == "i32" and n % 2 == 0:
            acc = "i64"
        files, vals = [], []
        for s in shapes:
            f, v = make_input(rng, s, dtype, "any")
            if dtype in INTS:  # keep long products small
                f = np.clip(f, -2, 2)
                v = np.clip(v, -2, 2)
            files.append(f)
            vals.append(v)
        ref = np.einsum(explicit, *[v.astype(np.int64 if dtype in INTS else np.float64) for v in vals])
        rdtype = acc or dtype
        pattern = ", ".join(ein_einsum_side(t) for t in terms) + " -> " + ein_einsum_side(rhs)
        pnames = [f"x{k}" for k in range(len(terms))]
        named = n % 2 == 0
        if named:
            ptypes = []
            for t in terms:
                dims = []
                for tok in ein_einsum_side(t).split():
                    dims += ["e0", "e1"] if tok == "..." else [f"{tok}"]
                ptypes.append(tstr(dtype, dims))
            rdims = []
            for tok in ein_einsum_side(rhs).split():
                rdims += ["e0", "e1"] if tok == "..." else [tok]
            rtype = tstr(rdtype, rdims)
        else:
            ptypes = [tstr(dtype, s) for s in shapes]
            rtype = tstr(rdtype, ref.shape)
        params = ", ".join(f"{p}: {t}" for p, t in zip(pnames, ptypes))
        accs = f", acc={acc}" if acc else ""
        source = f'def f({params}) -> {rtype}:\n    return einsum({", ".join(pnames)}, "{pattern}"{accs})\n'
        K = contraction_length(shapes, [np_tokens(t) for t in terms], np_tokens(rhs))
        cases.append(
            RunCase(
                cid=f"opt_einsum#{n:03d}",
                category="opt_einsum",
                desc=f'{dtype}{"->" + acc if acc else ""} "{eq}" as "{pattern}" {shapes}',
                source=source,
                inputs=list(zip(pnames, files)),
                outs=[Out(rdtype, quantize(ref, rdtype), rdtype in INTS, K)],
            )
        )
    return cases, origin


# ---- 3. generated programs -----------------------------------------------

AXIS_POOL = ["a", "b", "c", "h", "w", "k", "t", "p", "q", "r", "s2", "ch", "x1", "yy", "hw", "e"]


def fmt_item(item) -> str:
    kind = item[0]
    if kind == "axis":
        return item[1]
    if kind == "num":
        return str(item[1])
    if kind == "ell":
        return "..."
    if kind == "unit":
        return item[1]
    return "(" + " ".join(fmt_item(x) for x in item[1]) + ")"


def fmt_side(items) -> str:
    return " ".join(fmt_item(x) for x in items)


def group_randomly(rng, items, p_group=0.3, p_unit=0.12, allow_unit=True):
    """Groups consecutive items into compositions; inserts unit axes."""
    out = []
    i = 0
    while i < len(items):
        if rng.random() < p_group and i + 1 <= len(items):
            n = int(rng.integers(1, 4))
            members = items[i : i + n]
            if allow_unit and rng.random() < 0.1:
                members = members + [("unit", "1")] if rng.random() < 0.5 else members
            out.append(("group", members))
            i += n
        else:
            out.append(items[i])
            i += 1
        if allow_unit and rng.random() < p_unit:
            out.append(("unit", "1" if rng.random() < 0.5 else "()"))
    if allow_unit and rng.random() < p_unit:
        out.insert(0, ("unit", "1" if rng.random() < 0.5 else "()"))
    return out


def random_input_side(rng, allow_numbers: bool, allow_ellipsis: bool = True):
    """(left items, input shape, named axes {name: size}, kwargs, ellipsis?)."""
    names = list(rng.permutation(AXIS_POOL))
    items, shape, axes, kwargs = [], [], {}, {}
    rank = int(rng.integers(0, 5))
    has_ell = allow_ellipsis and rng.random() < 0.35
    ell_at = int(rng.integers(0, rank + 1)) if has_ell else -1
    ell_shape = [int(x) for x in rng.integers(1, 4, size=int(rng.integers(0, 3)))] if has_ell else []

    def new_axis():
        name = names.pop()
        size = int(rng.choice([1, 2, 2, 3, 3, 4]))
        axes[name] = size
        return name, size

    for pos in range(rank + 1):
        if pos == ell_at:
            items.append(("ell",))
            shape += ell_shape
        if pos == rank:
            break
        r = rng.random()
        if r < 0.55:
            name, size = new_axis()
            items.append(("axis", name))
            shape.append(size)
            if rng.random() < 0.1:
                kwargs[name] = size
        elif r < 0.9:
            members, total, unknown = [], 1, None
            for _ in range(int(rng.integers(2, 4))):
                if allow_numbers and rng.random() < 0.25:
                    n = int(rng.integers(2, 4))
                    members.append(("num", n))
                    total *= n
                else:
                    name, size = new_axis()
                    members.append(("axis", name))
                    total *= size
                    if unknown is None:
                        unknown = name
                    else:
                        kwargs[name] = size
            if unknown is not None and rng.random() < 0.3:
                kwargs[unknown] = axes[unknown]
            items.append(("group", members))
            shape.append(total)
        else:
            items.append(("unit", "1" if rng.random() < 0.5 else "()"))
            shape.append(1)
    return items, shape, axes, kwargs, has_ell


def einops_call(op, x, pattern, reduction=None, **sizes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "rearrange":
            return einops.rearrange(x, pattern, **sizes)
        if op == "repeat":
            return einops.repeat(x, pattern, **sizes)
        return einops.reduce(x, pattern, reduction, **sizes)


def param_dims(shape, named: bool):
    return [f"n{d}" for d in range(len(shape))] if named else list(shape)


def gen_pattern_case(rng, op: str, idx: int, dtype: Optional[str] = None) -> Optional[RunCase]:
    for _attempt in range(50):
        items, shape, axes, kwargs, has_ell = random_input_side(rng, allow_numbers=(op == "reduce"))
        named = [("axis", a) for a in axes]
        if op == "rearrange":
            right = named + ([("ell",)] if has_ell else [])
        elif op == "reduce":
            keep = [x for x in named if rng.random() < 0.5]
            right = keep + ([("ell",)] if has_ell and rng.random() < 0.6 else [])
        else:  # repeat
            right = named + ([("ell",)] if has_ell else [])
            for _ in range(int(rng.integers(1, 3))):
                if rng.random() < 0.6:
                    name = [n for n in AXIS_POOL + ["nn", "mm", "uu"] if n not in axes and n not in kwargs][0]
                    size = int(rng.integers(1, 4))
                    kwargs[name] = size
                    axes[name] = size
                    right.append(("axis", name))
                else:
                    right.append(("num", int(rng.integers(2, 4))))
        right = [right[k] for k in rng.permutation(len(right))] if right else []
        right = group_randomly(rng, right)
        pattern = f"{fmt_side(items)} -> {fmt_side(right)}"
        if op == "reduce":
            reduction = str(rng.choice(["sum", "mean", "max", "min", "prod"]))
        else:
            reduction = None
        if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            continue
        try:
            probe = einops_call(op, np.zeros(shape), pattern, reduction, **kwargs)
        except Exception:
            continue
        if probe.size > MAX_ELEMENTS:
            continue
        break
    else:
        return None
    dtype = dtype or str(rng.choice(DTYPES))
    if reduction == "mean" and dtype in INTS:
        dtype = "f32"
    domain = "near1" if reduction == "prod" else "any"
    if reduction in (None, "max", "min"):
        domain = "wide"
    f, v = make_input(rng, shape, dtype, domain)
    # reduce with acc=: the result has the acc dtype; elements are converted
    # to it (an acc of 16 bits accumulates in f32) and reduced.
    acc = None
    if reduction and rng.random() < 0.25:
        choices = {"bf16": ["f32", "f64"], "f16": ["f32"], "f32": ["f64", "bf16"], "f64": ["f32"], "i32": ["i64"], "i64": [],
                   "f8e4m3": ["f32", "f16"], "f8e5m2": ["f32", "bf16"]}[dtype]
        if choices:
            acc = str(rng.choice(choices))
    rdtype = acc or dtype
    ref = einops_call(op, quantize(v, rdtype) if acc and acc not in ("bf16", "f16") else v, pattern, reduction, **kwargs)
    if reduction in ("sum", "mean", "prod") and rdtype not in INTS:
        exact = False
    else:
        exact = True
    K = max(1, int(np.prod(shape, dtype=np.int64)) // max(1, ref.size)) if op == "reduce" else 1
    style = int(rng.integers(0, 3))  # 0 numbers, 1 names + `_` results, 2 names + --dim
    pdims = param_dims(shape, style > 0)
    rdims = list(ref.shape) if style == 0 else ["_"] * ref.ndim
    kw = "".join(f", {k}={v}" for k, v in kwargs.items())
    red = f', "{reduction}"' if reduction else ""
    accs = f", acc={acc}" if acc else ""
    source = f'def f(x: {tstr(dtype, pdims)}) -> {tstr(rdtype, rdims)}:\n    return {op}(x, "{pattern}"{red}{kw}{accs})\n'
    dims = [(f"n{d}", s) for d, s in enumerate(shape) if rng.random() < 0.5] if style == 2 else []
    return RunCase(
        cid=f"gen-{dtype + '-' if dtype in FP8 else ''}{op}#{idx:03d}",
        category="generated",
        desc=f'{dtype} {op} {tuple(shape)} "{pattern}"{red}{kw}{accs}',
        source=source,
        inputs=[("x", f)],
        outs=[Out(rdtype, quantize(ref, rdtype), exact, K)],
        dims=dims,
    )


# -- elementwise expression trees ------------------------------------------


@dataclass
class Val:
    text: str
    arr: np.ndarray  # reference (float64 / int64), one dim per entry of `axes`
    dtype: str
    axes: list  # dim names; "1" for a unit dim
    pos: bool = False  # strictly positive (>= ~0.3)
    K: int = 1
    atom: bool = False  # a name or a call: needs no parentheses


def par(v: Val) -> str:
    return v.text if v.atom else f"({v.text})"


def align(v: Val, shape: list) -> np.ndarray:
    """Reshapes v's reference to broadcast against `shape` the way ein does."""
    a = v.arr
    if len(v.axes) == len(shape) or not v.axes:
        return a
    # Ranks differ: unit dims of the smaller shape are dropped, its names
    # matched in order.
    kept = [(n, s) for n, s in zip(v.axes, a.shape) if n != "1"]
    a = a.reshape([s for _, s in kept])
    new = []
    it = iter(kept)
    pending = next(it, None)
    for name in shape:
        if pending is not None and pending[0] == name:
            new.append(pending[1])
            pending = next(it, None)
        else:
            new.append(1)
    return a.reshape(new)


class ExprGen:
    """Random elementwise programs over named dims."""

    def __init__(self, rng, sizes: dict):
        self.rng = rng
        self.sizes = sizes  # dim name -> size
        self.params: list = []  # (name, dtype, dims, file, Val)

    def param(self, dtype, dims, domain) -> Val:
        rng = self.rng
        # Reuse a parameter of the same type now and then.
        for name, pd, pdims, _f, val in self.params:
            if pd == dtype and pdims == dims and (val.pos or domain != "pos") and domain != "frac" and rng.random() < 0.3:
                return val
        shape = [1 if d == "1" else self.sizes[d] for d in dims]
        f, v = make_input(rng, shape, dtype, domain)
        name = f"x{len(self.params)}"
        val = Val(name, v, dtype, list(dims), pos=(domain == "pos"), atom=True)
        self.params.append((name, dtype, list(dims), f, val))
        return val

    def literal(self, dtype, pos=False) -> Val:
        if dtype in INTS:
            n = int(self.rng.choice([1, 2, 3]))
            return Val(str(n), np.array(n, dtype=np.int64), dtype, [], pos=True, atom=True)
        x = float(self.rng.choice([0.5, 1.5, 2.0, 3.0]))
        text = str(x) if self.rng.random() < 0.7 or x != int(x) else str(int(x))
        return Val(text, quantize(np.array(x), dtype), dtype, [], pos=True, atom=True)

    def variant(self, dims) -> list:
        """A shape that broadcasts against `dims` and gives `dims`."""
        r = self.rng.random()
        if r < 0.45 or not dims:
            return list(dims)
        if r < 0.75:  # a subsequence (smaller rank)
            keep = [d for d in dims if self.rng.random() < 0.5]
            return keep
        # same rank, some dims unit
        return [d if self.rng.random() < 0.6 else "1" for d in dims]

    def binary(self, op, a: Val, b: Val, dims, dtype) -> Val:
        A, B = align(a, dims), align(b, dims)
        if dtype in INTS:
            if op == "+":
                r = A + B
            elif op == "-":
                r = A - B
            elif op == "*":
                r = A * B
            else:
                r = np.sign(A) * np.sign(B) * (np.abs(A) // np.abs(B))
        else:
            with np.errstate(all="ignore"):
                r = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](A, B)
        r = np.broadcast_to(r, [1 if d == "1" else self.sizes[d] for d in dims]) if dims else np.asarray(r)
        pos = {"+": a.pos and b.pos, "*": a.pos and b.pos, "/": a.pos and b.pos and dtype not in INTS, "-": False}[op]
        return Val(f"{par(a)} {op} {par(b)}", quantize(np.array(r), dtype), dtype, list(dims), pos, max(a.K, b.K))

    def tree(self, dims, dtype, depth, need_pos=False, root=False) -> Val:
        rng = self.rng
        if depth <= 0 or rng.random() < (0.03 if root else 0.2):
            return self.param(dtype, dims, "pos" if need_pos else "any")
        r = rng.random()
        if dtype in INTS:
            if r < 0.1:  # x ** 2, x ** 3 (ipowi)
                x = self.tree(dims, dtype, min(depth - 1, 1), need_pos)
                n = int(rng.choice([0, 1, 2, 3]))
                return Val(f"{par(x)} ** {n}", quantize(x.arr ** n, dtype), dtype, dims, x.pos or n == 0, x.K)
            if r < 0.6:
                # '/' truncates toward zero: its result may be 0, never "pos"
                op = str(rng.choice(["+", "*", "/"] if need_pos else ["+", "*", "-", "/"]))
                if need_pos and op == "/":
                    op = "+"
                return self.binop(op, dims, dtype, depth, need_pos)
            if r < 0.75 and not need_pos:
                x = self.tree(dims, dtype, depth - 1)
                if rng.random() < 0.5:
                    return Val(f"relu({x.text})", np.maximum(x.arr, 0), dtype, dims, False, x.K, atom=True)
                return Val(f"-{par(x)}", -x.arr, dtype, dims, False, x.K)
            if r < 0.9:  # astype from another dtype
                other = "i64" if dtype == "i32" else "i32"
                if need_pos or rng.random() < 0.4:
                    x = self.tree(dims, other, depth - 1, need_pos)
                    ref = x.arr
                else:  # float -> int truncates toward zero; inputs are k + 1/4, 1/2, 3/4
                    x = self.param(str(rng.choice(["f32", "f64", "f16", "bf16"])), dims, "frac")
                    ref = np.trunc(x.arr)
                return Val(f"astype({x.text}, {dtype})", quantize(ref, dtype), dtype, dims, x.pos, x.K, atom=True)
            return self.param(dtype, dims, "pos" if need_pos else "any")
        # floats
        if r < 0.4:
            ops = ["+", "*", "/"] if need_pos else ["+", "-", "*", "/"]
            return self.binop(str(rng.choice(ops)), dims, dtype, depth, need_pos)
        if r < 0.9:
            fns = ["exp", "sqrt", "rsqrt", "square", "pow"] if need_pos else ["exp", "log", "sqrt", "rsqrt", "relu", "tanh", "neg", "square", "pow"]
            fn = str(rng.choice(fns))
            if fn == "pow":  # positive base ** (a literal or a tensor in [-1, 1])
                x = self.tree(dims, dtype, depth - 1, True)
                if rng.random() < 0.5:
                    e = Val(str(rng.choice(["0.5", "-1", "3", "-0.5", "2"])), None, dtype, [], atom=True)
                    e.arr = quantize(np.array(float(e.text)), dtype)
                    if e.text.startswith("-"):
                        e.text = f"({e.text})" if rng.random() < 0.5 else e.text  # x ** -1 parses
                        e.atom = True
                else:
                    e = self.tree(self.variant(dims), dtype, 0)
                with np.errstate(all="ignore"):
                    ref = np.power(x.arr, align(e, dims))
                return Val(f"{par(x)} ** {par(e)}", quantize(ref, dtype), dtype, dims, True, x.K)
            child_pos = fn in ("log", "sqrt", "rsqrt")
            x = self.tree(dims, dtype, depth - 1, child_pos or (need_pos and fn == "square"))
            with np.errstate(all="ignore"):
                if fn == "exp":
                    ref, pos, text = np.exp(x.arr), True, f"exp({x.text})"
                elif fn == "log":
                    ref, pos, text = np.log(x.arr), False, f"log({x.text})"
                elif fn == "sqrt":
                    ref, pos, text = np.sqrt(x.arr), True, f"sqrt({x.text})"
                elif fn == "rsqrt":
                    ref, pos, text = 1.0 / np.sqrt(x.arr), True, f"rsqrt({x.text})"
                elif fn == "relu":
                    ref, pos, text = np.maximum(x.arr, 0.0), False, f"relu({x.text})"
                elif fn == "tanh":
                    ref, pos, text = np.tanh(x.arr), False, f"tanh({x.text})"
                elif fn == "neg":
                    ref, pos, text = -x.arr, False, f"-{par(x)}"
                else:
                    ref, pos, text = x.arr * x.arr, x.pos, f"{par(x)} ** 2"
            atom = fn not in ("neg", "square")
            return Val(text, quantize(ref, dtype), dtype, dims, pos, x.K, atom=atom)
        if r < 0.95:  # astype from another dtype
            src = str(rng.choice([d for d in DTYPES if d != dtype]))
            x = self.tree(dims, src, depth - 1, need_pos)
            return Val(f"astype({x.text}, {dtype})", quantize(x.arr.astype(np.float64), dtype), dtype, dims, x.pos, x.K, atom=True)
        return self.param(dtype, dims, "pos" if need_pos else "any")

    def binop(self, op, dims, dtype, depth, need_pos) -> Val:
        rng = self.rng
        a = self.tree(dims, dtype, depth - 1, need_pos)
        if rng.random() < 0.25:
            b = self.literal(dtype)
        else:
            b = self.tree(self.variant(dims), dtype, depth - 1, need_pos or op == "/")
        if op == "/" and not b.pos:
            b = self.literal(dtype)
        if op != "/" and rng.random() < 0.5:
            a, b = b, a
        if not a.axes and not b.axes and dims:
            b = self.param(dtype, dims, "pos" if (need_pos or op == "/") else "any")
        # the wider operand must be full-rank `dims` (true by construction)
        return self.binary(op, a, b, dims, dtype)


def new_dim_sizes(rng, n) -> dict:
    names = ["b", "s", "d", "hh", "t", "m"]
    return {names[k]: int(rng.integers(1, 6)) for k in range(n)}


def emit_function(name, params, results, body_lines) -> str:
    ps = ", ".join(f"{p}: {t}" for p, t in params)
    rs = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    return f"def {name}({ps}) -> {rs}:\n" + "".join(f"    {l}\n" for l in body_lines)


def gen_elementwise_case(rng, idx: int, n_results: int = 1, dtypes: Optional[list] = None) -> RunCase:
    sizes = new_dim_sizes(rng, int(rng.integers(0, 5)))
    base = list(sizes)
    g = ExprGen(rng, sizes)
    results, lines, outs, rtypes = [], [], [], []
    for k in range(n_results):
        dtype = str(rng.choice(dtypes or ["f32", "f64", "f16", "bf16", "f32", "i32", "i64"]))
        dims = base if k == 0 else [d for d in base if rng.random() < 0.7]
        # (now and then a bare parameter: returning an argument is a case too)
        v = g.tree(dims, dtype, int(rng.integers(1, 4)), root=True)
        name = f"r{k}"
        lines.append(f"{name} = {v.text}")
        results.append(name)
        rtypes.append(tstr(dtype, dims))
        ref = np.broadcast_to(v.arr, [sizes[d] for d in dims]) if dims else v.arr
        outs.append(Out(dtype, np.array(ref), dtype in INTS, v.K))
    lines.append("return " + ", ".join(results))
    params = [(p[0], tstr(p[1], p[2])) for p in g.params]  # every tree has a parameter leaf
    source = emit_function("f", params, rtypes, lines)
    dims = [(d, s) for d, s in sizes.items() if rng.random() < 0.3]
    return RunCase(
        cid=f"gen-{'fp8-' if dtypes else ''}{'elementwise' if n_results == 1 else 'multi'}#{idx:03d}",
        category="generated",
        desc=" ; ".join(lines),
        source=source,
        inputs=[(p[0], p[3]) for p in g.params],
        outs=outs,
        dims=dims,
    )


# -- einsums -----------------------------------------------------------------

LABEL_POOL = ["i", "j", "k", "l", "m", "b", "h", "d", "s", "t", "r", "q"]


def gen_einsum_case(rng, idx: int, n_ops: int, dtype: Optional[str] = None) -> RunCase:
    for _ in range(100):
        labels = list(rng.permutation(LABEL_POOL))[: int(rng.integers(2, 7))]
        size = {l: int(rng.choice([1, 2, 2, 3, 3, 4])) for l in labels}
        ops = []
        for _o in range(n_ops):
            rank = int(rng.integers(0, 4))
            chosen = [str(x) for x in rng.choice(labels, size=rank, replace=rank > len(labels) or rng.random() < 0.15)]
            ops.append(chosen)
        used = [l for op in ops for l in op]
        if not used:
            continue
        ell = []
        ell_ops = set()
        if rng.random() < 0.25:
            ell = [int(x) for x in rng.integers(1, 4, size=int(rng.integers(1, 3)))]
            ell_ops = {k for k in range(n_ops) if rng.random() < 0.7} or {0}
        present = sorted(set(used), key=used.index)
        out = [l for l in present if rng.random() < 0.5]
        out = [out[k] for k in rng.permutation(len(out))] if out else []
        out_items = [("axis", l) for l in out] + ([("ell",)] if ell else [])
        if ell:
            pos = int(rng.integers(0, len(out_items)))
            out_items.insert(pos, out_items.pop())
        grouped = group_randomly(rng, out_items, p_group=0.2, allow_unit=False) if rng.random() < 0.3 else out_items
        # shapes; now and then two adjacent labels of an operand composed
        # "(j k)" (an ein extension; the members' sizes come as keywords)
        shapes, np_shapes, terms, np_terms, op_items = [], [], [], [], []
        kwargs: dict[str, int] = {}
        for k, op in enumerate(ops):
            toks = list(op)
            if k in ell_ops:
                toks.insert(int(rng.integers(0, len(toks) + 1)), "...")
            items = list(toks)
            if rng.random() < 0.25:
                spots = [i for i in range(len(items) - 1)
                         if "..." not in (items[i], items[i + 1]) and items[i] != items[i + 1]
                         and toks.count(items[i]) == 1 and toks.count(items[i + 1]) == 1]
                if spots:
                    i = spots[int(rng.integers(0, len(spots)))]
                    items[i : i + 2] = [(items[i], items[i + 1])]
                    kwargs[items[i][0]] = size[items[i][0]]
            op_items.append(items)
            terms.append(" ".join(f"({it[0]} {it[1]})" if isinstance(it, tuple) else it for it in items))
            np_terms.append("".join(toks))
            shp, nps = [], []
            for t in items:
                if isinstance(t, tuple):
                    shp.append(size[t[0]] * size[t[1]])
                    nps += [size[t[0]], size[t[1]]]
                elif t == "...":
                    shp += ell
                    nps += ell
                else:
                    shp.append(size[t])
                    nps.append(size[t])
            shapes.append(tuple(shp))
            np_shapes.append(tuple(nps))
        if max(int(np.prod(s, dtype=np.int64)) for s in shapes) > MAX_ELEMENTS:
            continue
        np_out = "".join("..." if it[0] == "ell" else it[1] for it in out_items)
        np_eq = ",".join(np_terms) + "->" + np_out
        out_shape = []
        for it in grouped:
            if it[0] == "group":
                n = 1
                for m in it[1]:
                    n *= int(np.prod(ell)) if m[0] == "ell" else size[m[1]]
                out_shape.append(n)
            elif it[0] == "ell":
                out_shape += ell
            else:
                out_shape.append(size[it[1]])
        if int(np.prod(out_shape, dtype=np.int64)) > MAX_ELEMENTS:
            continue
        break
    dtype = dtype or str(rng.choice(["f32", "f64", "f16", "bf16", "i32", "i64", "f32"]))
    acc = None
    if dtype in ("f16", "bf16") + FP8 and rng.random() < 0.5:
        acc = "f32"
    elif dtype == "i32" and rng.random() < 0.4:
        acc = str(rng.choice(["i64", "f32", "f64"]))
    elif dtype == "f32" and rng.random() < 0.2:
        acc = "f64"
    elif dtype == "f64" and rng.random() < 0.2:
        acc = "f32"  # operands are rounded to f32 first
    files, vals = [], []
    for s in shapes:
        f, v = make_input(rng, s, dtype, "any")
        files.append(f)
        vals.append(quantize(v, acc) if acc == "f32" and dtype == "f64" else v)
    ref = np.einsum(np_eq, *[v.astype(np.int64 if dtype in INTS else np.float64).reshape(ns) for v, ns in zip(vals, np_shapes)])
    ref = ref.reshape(out_shape)
    rdtype = acc or dtype
    pattern = ", ".join(terms) + " -> " + fmt_side(grouped)
    pnames = [f"x{k}" for k in range(n_ops)]
    named = rng.random() < 0.5
    # A composition whose member is also a plain dim elsewhere needs the
    # checker to solve 3*nb == 3 or 2*nb == nk*nb (it binds bare names only):
    # such cases use numbers.
    plain = {t for items in op_items for t in items if isinstance(t, str)}
    if any(isinstance(t, tuple) and (t[0] in plain or t[1] in plain) for items in op_items for t in items):
        named = False
    if named:
        ptypes = []
        for k, items in enumerate(op_items):
            dims = []
            for tok in items:
                if isinstance(tok, tuple):
                    dims.append(f"n{tok[0]}*n{tok[1]}")
                else:
                    dims += [f"e{j}" for j in range(len(ell))] if tok == "..." else [f"n{tok}"]
            ptypes.append(tstr(dtype, dims))
        rtype = tstr(rdtype, ["_"] * len(out_shape))
        # Labels seen only inside compositions cannot be bound from the
        # input shapes: give them with --dim.
        dims_arg = [(f"n{t}", size[t]) for items in op_items for tup in items if isinstance(tup, tuple) for t in tup]
    else:
        ptypes = [tstr(dtype, s) for s in shapes]
        rtype = tstr(rdtype, out_shape)
        dims_arg = []
    params = ", ".join(f"{p}: {t}" for p, t in zip(pnames, ptypes))
    accs = f", acc={acc}" if acc else ""
    accs += "".join(f", {k}={v}" for k, v in kwargs.items())
    source = f'def f({params}) -> {rtype}:\n    return einsum({", ".join(pnames)}, "{pattern}"{accs})\n'
    K = contraction_length(np_shapes, [np_tokens(t) for t in np_terms], [it[1] if it[0] == "axis" else "..." for it in out_items])
    return RunCase(
        cid=f"gen-{dtype + '-' if dtype in FP8 else ''}einsum{n_ops}#{idx:03d}",
        category="generated",
        desc=f'{dtype}{"->" + acc if acc else ""} "{pattern}" {shapes}{accs}',
        source=source,
        inputs=list(zip(pnames, files)),
        outs=[Out(rdtype, quantize(ref, rdtype), rdtype in INTS, K)],
        dims=sorted(set(dims_arg)),
    )


# -- chains and templates ------------------------------------------------------


def softmax_ref(x, dtype):
    m = quantize(x.max(axis=-1, keepdims=True), dtype)
    e = quantize(np.exp(quantize(x - m, dtype)), dtype)
    z = quantize(e.sum(axis=-1, keepdims=True), dtype)
    return quantize(e / z, dtype)


def gen_template_case(rng, idx: int) -> RunCase:
    kind = idx % 6
    dtype = str(rng.choice(["f32", "f64", "f16", "bf16"]))
    if kind == 0:  # softmax over the last axis, broadcasting by name
        b, s, t = (int(x) for x in rng.integers(1, 5, size=3))
        f, v = make_input(rng, (b, s, t), dtype)
        src = emit_function("f", [("x", tstr(dtype, ["b", "s", "t"]))], [tstr(dtype, ["b", "s", "t"])], [
            'm = reduce(x, "b s t -> b s", "max")',
            "e = exp(x - m)",
            'z = reduce(e, "b s t -> b s", "sum")',
            "return e / z",
        ])
        return RunCase(f"gen-chain#{idx:03d}", "generated", f"{dtype} softmax {(b, s, t)}", src,
                       inputs=[("x", f)], outs=[Out(dtype, softmax_ref(v, dtype), False, t)])
    if kind == 1:  # layer norm
        b, d = int(rng.integers(1, 5)), int(rng.integers(2, 9))
        f, v = make_input(rng, (b, d), dtype)
        fg, g = make_input(rng, (d,), dtype, "pos")
        src = emit_function("f", [("x", tstr(dtype, ["b", "d"])), ("g", tstr(dtype, ["d"]))], [tstr(dtype, ["b", "d"])], [
            'mu = reduce(x, "b d -> b", "mean")',
            "xc = x - mu",
            'var = reduce(xc * xc, "b d -> b 1", "mean")',
            "return xc * rsqrt(var + 1e-5) * g",
        ])
        q = lambda a: quantize(a, dtype)  # noqa: E731
        mu = q(v.mean(axis=1, keepdims=True))
        xc = q(v - mu)
        var = q(q(xc * xc).mean(axis=1, keepdims=True))
        eps = q(np.array(1e-5))
        r = q(q(xc * q(1.0 / np.sqrt(q(var + eps)))) * g)
        return RunCase(f"gen-chain#{idx:03d}", "generated", f"{dtype} layernorm {(b, d)}", src,
                       inputs=[("x", f), ("g", fg)], outs=[Out(dtype, r, False, d)])
    if kind == 2:  # attention scores with heads split, bf16/f16 inputs with acc
        b, s, t, h, d = (int(x) for x in rng.integers(1, 4, size=5))
        lowp = str(rng.choice(["bf16", "f16"]))
        fq, q_ = make_input(rng, (b, s, h * d), lowp)
        fk, k_ = make_input(rng, (b, t, h * d), lowp)
        src = emit_function("f", [("q", tstr(lowp, ["batch", "seq", "(heads d)"])),
                                  ("k", tstr(lowp, ["batch", "seq2", "(heads d)"]))],
                            [tstr("f32", ["batch", "heads", "seq", "seq2"])], [
            f'qh = rearrange(q, "b s (h d) -> b h s d", h={h})',
            f'kh = rearrange(k, "b t (h d) -> b h t d", h={h})',
            'return einsum(qh, kh, "b h s d, b h t d -> b h s t", acc=f32)',
        ])
        ref = np.einsum("bhsd,bhtd->bhst", q_.reshape(b, s, h, d).transpose(0, 2, 1, 3),
                        k_.reshape(b, t, h, d).transpose(0, 2, 1, 3))
        return RunCase(f"gen-chain#{idx:03d}", "generated", f"{lowp} attention {(b, s, t, h, d)}", src,
                       inputs=[("q", fq), ("k", fk)], outs=[Out("f32", quantize(ref, "f32"), False, d)],
                       dims=[("d", d)] if rng.random() < 0.5 else [])
    if kind == 3:  # mlp with relu and a mean-squared loss
        B, D, K = (int(x) for x in rng.integers(1, 6, size=3))
        fx, x = make_input(rng, (B, D), dtype)
        fw1, w1 = make_input(rng, (D, D), dtype)
        fw2, w2 = make_input(rng, (D, K), dtype)
        src = emit_function("f", [("x", tstr(dtype, ["B", "D"])), ("w1", tstr(dtype, ["D", "D"])), ("w2", tstr(dtype, ["D", "K"]))],
                            [tstr(dtype, [""][:0]), tstr(dtype, ["B", "K"])], [
            'h1 = relu(einsum(x, w1, "b i, i j -> b j"))',
            'h2 = einsum(h1, w2, "b j, j k -> b k")',
            'loss = reduce(h2 ** 2, "b k -> ", "mean")',
            "return loss, h2",
        ])
        q = lambda a: quantize(a, dtype)  # noqa: E731
        h1 = q(np.maximum(q(x @ w1), 0))
        h2 = q(h1 @ w2)
        loss = q(q(h2 * h2).mean())
        return RunCase(f"gen-chain#{idx:03d}", "generated", f"{dtype} mlp {(B, D, K)}", src,
                       inputs=[("x", fx), ("w1", fw1), ("w2", fw2)],
                       outs=[Out(dtype, loss, False, D * B * K), Out(dtype, h2, False, D * D)])
    if kind == 4:  # pooling then a per-channel max, several results
        c, h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        red = str(rng.choice(["sum", "mean", "max", "min", "prod"]))
        f, v = make_input(rng, (c, 2 * h, 3 * w), dtype, "near1" if red == "prod" else "any")
        src = emit_function("f", [("img", tstr(dtype, ["c", "height", "width"]))],
                            [tstr(dtype, ["c", "height/2", "width/3"]), tstr(dtype, ["c"]), tstr(dtype, ["width", "c", "height"])], [
            f'p = reduce(img, "c (h h2) (w w2) -> c h w", "{red}", h2=2, w2=3)',
            'mx = reduce(p, "c h w -> c", "max")',
            'return p, mx, rearrange(img, "c h w -> w c h")',
        ])
        p = quantize(einops_call("reduce", v, "c (h h2) (w w2) -> c h w", red, h2=2, w2=3), dtype)
        mx = p.reshape(c, -1).max(axis=1)
        exact = red in ("max", "min")
        return RunCase(f"gen-chain#{idx:03d}", "generated", f"{dtype} pool {red} {(c, 2 * h, 3 * w)}", src,
                       inputs=[("img", f)],
                       outs=[Out(dtype, p, exact, 6), Out(dtype, mx, exact, 6), Out(dtype, v.transpose(2, 0, 1), True)])
    # kind 5: pack and unpack
    b, h, w, c = (int(x) for x in rng.integers(1, 4, size=4))
    dtype = str(rng.choice(DTYPES))
    fi, img = make_input(rng, (b, h, w, c), dtype)
    fc, cls = make_input(rng, (b, c), dtype)
    src = emit_function("f", [("img", tstr(dtype, ["b", "h", "w", "c"])), ("cls", tstr(dtype, ["b", "c"]))],
                        [tstr(dtype, ["b", "h*w+1", "c"]), tstr(dtype, ["b", "h", "w", "c"]), tstr(dtype, ["b", "c"])], [
        'p, ps = pack([img, cls], "b * c")',
        'img2, cls2 = unpack(p * 2, ps, "b * c")',
        "return p, img2, cls2",
    ])
    packed, _ = einops.pack([img, cls], "b * c")
    return RunCase(f"gen-pack#{idx:03d}", "generated", f"{dtype} pack/unpack {(b, h, w, c)}", src,
                   inputs=[("img", fi), ("cls", fc)],
                   outs=[Out(dtype, packed, True), Out(dtype, quantize(img * 2, dtype), True),
                         Out(dtype, quantize(cls * 2, dtype), True)])


def gen_pack_case(rng, idx: int) -> RunCase:
    """pack / unpack with random names before and after '*', 1-3 parts."""
    dtype = str(rng.choice(DTYPES))
    before = ["b", "g"][: int(rng.integers(0, 3))]
    after = ["c", "e"][: int(rng.integers(0, 3))]
    size = {n: int(rng.integers(1, 4)) for n in before + after}
    pattern = " ".join(before + ["*"] + after)
    parts, params, files, vals = [], [], [], []
    for k in range(int(rng.integers(1, 4))):
        star = [f"p{k}{j}" for j in range(int(rng.integers(0, 3)))]
        for n in star:
            size[n] = int(rng.integers(1, 4))
        dims = before + star + after
        f, v = make_input(rng, [size[n] for n in dims], dtype)
        params.append((f"x{k}", tstr(dtype, dims)))
        files.append((f"x{k}", f))
        vals.append(v)
        parts.append(star)
    packed, _ = einops.pack(vals, pattern)
    star_total = "+".join("*".join(st) if st else "1" for st in parts)
    rtypes = [tstr(dtype, before + [star_total] + after)]
    outs = [Out(dtype, packed, True)]
    names = ", ".join(f"u{k}" for k in range(len(parts)))
    lines = [f'p, ps = pack([{", ".join(n for n, _ in params)}], "{pattern}")']
    if rng.random() < 0.6:  # unpack something computed from the packed tensor
        lines.append(f'{names} = unpack(-p, ps, "{pattern}")')
        for k, st in enumerate(parts):
            rtypes.append(tstr(dtype, before + st + after))
            outs.append(Out(dtype, -vals[k], True))
        lines.append(f"return p, {names}")
    else:
        lines.append("return p")
    return RunCase(f"gen-pack2#{idx:03d}", "generated", f"{dtype} pack {pattern} parts {parts}",
                   emit_function("f", params, rtypes, lines), inputs=files, outs=outs)


def gen_slice_case(rng, idx: int) -> RunCase:
    """slice on a named axis (static, dim-valued and `d - 1` bounds, the
    leading axis) and cat (RoPE's rotate-half), over every dtype; the last
    case takes a bound past its axis (k > s): an entry check, exit 2."""
    dtype = DTYPES[idx % len(DTYPES)]
    b, s, h = int(rng.integers(1, 4)), int(rng.integers(3, 7)), int(rng.integers(1, 4))
    f, x = make_input(rng, (b, s, 2 * h), dtype)
    params = [("x", tstr(dtype, ["b", "s", "2*h"]))]
    if idx == 6:
        k = s + int(rng.integers(1, 3))
        fy, _ = make_input(rng, (k,), dtype)
        src = emit_function("f", params + [("y", tstr(dtype, ["k"]))], [tstr(dtype, ["b", "k", "2*h"])],
                            ['return slice(x, "s", 0, k)'])
        return RunCase(f"gen-slice#{idx:03d}", "generated", f"{dtype} slice past the axis (k={k} > s={s})",
                       src, inputs=[("x", f), ("y", fy)], expect_rc=2, stderr_has="k <= s", n_out=1)
    lo = int(rng.integers(0, 2))
    rtypes = [tstr(dtype, ["b", "2", "2*h"]), tstr(dtype, ["b", "s", "2*h-1"]),
              tstr(dtype, ["b", "s", "2*h"]), tstr(dtype, ["1", "s", "h"]),
              tstr(dtype, ["b", f"s-{lo}", "2*h"])]
    pattern = "b s *" if idx % 2 else "... *"  # cat's `...`: the leading dims
    lines = [f'rotated = cat([-slice(x, "2*h", h, 2*h), slice(x, "2*h", 0, h)], "{pattern}")',
             'return slice(x, "s", 1, 3), slice(x, "2*h", 0, 2*h - 1), rotated, '
             f'slice(slice(x, "b", b - 1, b), "2*h", h, 2*h), slice(x, "s", {lo}, s)']
    refs = [x[:, 1:3], x[:, :, : 2 * h - 1], np.concatenate([-x[:, :, h:], x[:, :, :h]], axis=2),
            x[b - 1 : b, :, h:], x[:, lo:]]
    return RunCase(f"gen-slice#{idx:03d}", "generated", f"{dtype} slice and cat {(b, s, 2 * h)}",
                   emit_function("f", params, rtypes, lines), inputs=[("x", f)],
                   outs=[Out(dtype, r, True) for r in refs])


def gen_wide_int_case(rng, idx: int) -> RunCase:
    """Integers far beyond 32 bits (i64) or near the i32 limits through data
    movement, max/min and overflow-free arithmetic: nothing may be truncated."""
    dtype = "i64" if idx % 3 else "i32"
    n, m = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    lim = 2**61 if dtype == "i64" else 2**29
    npd = np.int64 if dtype == "i64" else np.int32
    x = rng.integers(-lim, lim, size=(n, m), dtype=np.int64).astype(npd)
    y = rng.integers(-lim, lim, size=(m,), dtype=np.int64).astype(npd)
    d = rng.choice(np.array([-7, -3, -2, 2, 5, 1000003]), size=(m,)).astype(npd)
    X, Y, D = x.astype(np.int64), y.astype(np.int64), d.astype(np.int64)
    T = tstr(dtype, ["n", "m"])
    src = emit_function("f", [("x", T), ("y", tstr(dtype, ["m"])), ("d", tstr(dtype, ["m"]))],
                        [T, tstr(dtype, ["m", "n"]), tstr(dtype, ["m"]), T], [
        "s = x + y",
        'return s, rearrange(-x, "n m -> m n"), reduce(relu(x) - y, "n m -> m", "max"), x / d',
    ])
    quot = np.sign(X) * np.sign(D) * (np.abs(X) // np.abs(D))
    outs = [Out(dtype, X + Y, True), Out(dtype, (-X).T, True), Out(dtype, (np.maximum(X, 0) - Y).max(axis=0), True),
            Out(dtype, quot, True)]
    return RunCase(f"gen-wide-int#{idx:03d}", "generated", f"{dtype} wide integers {(n, m)}", src,
                   inputs=[("x", x), ("y", y), ("d", d)], outs=outs)


def ein_int_div(x: np.ndarray, y: np.ndarray, dtype: str) -> np.ndarray:
    """ein's integer `/` (language.md §6), in exact Python integers: the
    quotient truncated toward zero, x / 0 = 0, and the result wrapped to the
    dtype (so INT_MIN / -1 = INT_MIN)."""
    lo, hi = INT_RANGE[dtype]
    out = []
    for a, b in zip(x.reshape(-1).tolist(), np.broadcast_to(y, x.shape).reshape(-1).tolist()):
        q = 0 if b == 0 else (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1)
        out.append((q - lo) % (hi - lo + 1) + lo)
    return np.array(out, dtype=np.int64).reshape(x.shape)


def ein_int_pow(x: np.ndarray, y: np.ndarray, dtype: str) -> np.ndarray:
    """ein's integer `**`: wrapped to the dtype; a negative exponent gives
    1 / x**|y| in ein's integer division (1, +-1 for x = -1, else 0)."""
    lo, hi = INT_RANGE[dtype]
    out = []
    for a, b in zip(x.reshape(-1).tolist(), y.reshape(-1).tolist()):
        if b < 0:
            r = 1 if a == 1 else (-1) ** (-b) if a == -1 else 0
        else:
            r = pow(a, b, hi - lo + 1)
        out.append((r - lo) % (hi - lo + 1) + lo)
    return np.array(out, dtype=np.int64).reshape(x.shape)


def gen_int_division_case(rng, idx: int) -> RunCase:
    """Integer `/` and `**` on the operands that trap in C: divisors 0 and -1
    next to INT_MIN, a literal 0 divisor, negative exponents of 0, 1, -1.
    The generated code must not trap (SIGFPE) and must give ein's rule."""
    dtype = "i32" if idx % 2 == 0 else "i64"
    lo, hi = INT_RANGE[dtype]
    npd = np.int32 if dtype == "i32" else np.int64
    n, m = int(rng.integers(2, 5)), int(rng.integers(3, 7))
    special = np.array([0, 1, -1, lo, hi, lo + 1, 7, -7, 2], dtype=np.int64)
    x = np.where(rng.random((n, m)) < 0.5, rng.choice(special, (n, m)),
                 rng.integers(-1000, 1000, (n, m))).astype(npd)
    # Rows of INT_MIN over the divisors 0 and -1 make sure both corners occur.
    x[0, :] = lo
    y = rng.choice(np.array([0, -1, 1, 2, -3, lo, hi, 5], dtype=np.int64), (m,)).astype(npd)
    y[0], y[1] = 0, -1
    b = rng.choice(np.array([0, 1, -1, 2, -2, 3], dtype=np.int64), (n, m)).astype(npd)
    e = rng.integers(-3, 4, (n, m)).astype(npd)
    X, Y, B, E = (a.astype(np.int64) for a in (x, y, b, e))
    T = tstr(dtype, ["n", "m"])
    src = emit_function("f", [("x", T), ("y", tstr(dtype, ["m"])), ("b", T), ("e", T)], [T, T, T, T], [
        "return x / y, x / 0 + x / -1, b ** e, (b - x) / (x - x)",
    ])
    zeros = np.zeros_like(X)
    outs = [Out(dtype, ein_int_div(X, Y, dtype), True),
            # 0 + (-x), wrapped to the dtype by a division by 1
            Out(dtype, ein_int_div(ein_int_div(X, zeros, dtype) + ein_int_div(X, -np.ones_like(X), dtype), np.ones_like(X), dtype), True),
            Out(dtype, ein_int_pow(B, E, dtype), True),
            Out(dtype, zeros, True)]
    return RunCase(f"gen-int-division#{idx:03d}", "generated", f"{dtype} division by 0 and INT_MIN / -1, negative powers {(n, m)}", src,
                   inputs=[("x", x), ("y", y), ("b", b), ("e", e)], outs=outs)


def gen_special_case(rng, idx: int) -> RunCase:
    """inf, -inf, NaN, -0.0 and large values through data movement and ops."""
    dtype = str(rng.choice(FLOATS))
    n, m = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    v = rng.uniform(-2, 2, size=(n, m))
    specials = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1e30, -1e30, 7e4])
    mask = rng.random(size=(n, m)) < 0.35
    v = np.where(mask, rng.choice(specials, size=(n, m)), v)
    f, x = make_input(rng, (n, m), "f64")
    if dtype == "f64":
        f = v.copy()
    elif dtype == "f32":
        f = v.astype(np.float32)
    elif dtype == "f16":
        f = v.astype(np.float16)
    else:
        f = v.astype(np.float32)
    x = quantize(np.asarray(f, dtype=np.float64), dtype) if dtype != "bf16" else round_bf16(f).astype(np.float64)
    kind = idx % 6
    T = tstr(dtype, ["n", "m"])
    with np.errstate(all="ignore"):
        if kind == 0:
            src = emit_function("f", [("x", T)], [tstr(dtype, ["m", "n"]), tstr(dtype, ["n", "m", "2"])],
                                ['return rearrange(x, "n m -> m n"), repeat(x, "n m -> n m 2")'])
            outs = [Out(dtype, x.T, True), Out(dtype, np.repeat(x[..., None], 2, axis=2), True)]
        elif kind == 1:
            src = emit_function("f", [("x", T)], [tstr(dtype, ["n"]), tstr(dtype, ["m"])],
                                ['return reduce(x, "n m -> n", "max"), reduce(x, "n m -> m", "min")'])
            outs = [Out(dtype, x.max(axis=1), True), Out(dtype, x.min(axis=0), True)]
        elif kind == 2:
            src = emit_function("f", [("x", T)], [T, T], ["return relu(x), -x"])
            outs = [Out(dtype, np.maximum(x, 0.0), True), Out(dtype, -x, True)]
        elif kind == 3:
            src = emit_function("f", [("x", T)], [T, T], ["return exp(x), tanh(x)"])
            outs = [Out(dtype, quantize(np.exp(x), dtype)), Out(dtype, quantize(np.tanh(x), dtype))]
        elif kind == 4:
            to = str(rng.choice([d for d in FLOATS if d != dtype]))
            src = emit_function("f", [("x", T)], [tstr(to, ["n", "m"])], [f"return astype(x, {to})"])
            outs = [Out(to, quantize(x, to), True)]
        else:
            src = emit_function("f", [("x", T)], [tstr(dtype, ["n"]), T], ['return reduce(x, "n m -> n", "sum"), x * 2 + 1'])
            outs = [Out(dtype, quantize(x.sum(axis=1), dtype), False, m), Out(dtype, quantize(quantize(x * 2, dtype) + 1, dtype))]
    return RunCase(f"gen-special#{idx:03d}", "generated", f"{dtype} special values kind {kind} {(n, m)}", src,
                   inputs=[("x", f)], outs=outs)


def gen_large_case(rng, idx: int) -> RunCase:
    """Larger tensors (vectorized loops, odd sizes). Float inputs are small
    integers, so sums and products of them are exact and compared exactly."""
    kind = idx % 5
    dtype = str(rng.choice(["f32", "f64", "i32", "i64", "f32"]))

    def ints(shape, lo=-3, hi=4):
        v = rng.integers(lo, hi, size=shape)
        return np.asarray(v, dtype={"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[dtype])

    if kind == 0:  # matmul
        a, b, c = (int(x) for x in rng.integers(17, 90, size=3))
        x, y = ints((a, b)), ints((b, c))
        src = emit_function("f", [("x", tstr(dtype, ["a", "b"])), ("y", tstr(dtype, ["b", "c"]))], [tstr(dtype, ["a", "c"])],
                            ['return einsum(x, y, "a b, b c -> a c")'])
        ref, desc = x.astype(np.int64) @ y.astype(np.int64), f"matmul {(a, b, c)}"
        outs = [Out(dtype, ref, True)]
        inputs = [("x", x), ("y", y)]
    elif kind == 1:  # full and partial sums of ~10^5 elements
        shape = tuple(int(x) for x in rng.integers(20, 60, size=3))
        x = ints(shape)
        src = emit_function("f", [("x", tstr(dtype, ["a", "b", "c"]))], [tstr(dtype, []), tstr(dtype, ["c", "a"])],
                            ['return reduce(x, "a b c ->", "sum"), reduce(x, "a b c -> c a", "max")'])
        xi = x.astype(np.int64)
        outs = [Out(dtype, np.array(xi.sum()), True), Out(dtype, xi.max(axis=1).T, True)]
        inputs, desc = [("x", x)], f"sum/max {shape}"
    elif kind == 2:  # transposes and tiling of odd sizes
        shape = tuple(int(x) for x in rng.integers(3, 40, size=4))
        x = ints(shape)
        src = emit_function("f", [("x", tstr(dtype, ["a", "b", "c", "d"]))],
                            [tstr(dtype, ["d", "b*a", "c"]), tstr(dtype, ["a", "3*b", "c", "d"])],
                            ['return rearrange(x, "a b c d -> d (b a) c"), repeat(x, "a b c d -> a (r b) c d", r=3)'])
        xi = x.astype(np.int64)
        outs = [Out(dtype, xi.transpose(3, 1, 0, 2).reshape(shape[3], -1, shape[2]), True),
                Out(dtype, np.tile(xi, (1, 3, 1, 1)), True)]
        inputs, desc = [("x", x)], f"transpose/tile {shape}"
    elif kind == 3:  # broadcasting by name over large rows
        n, m = int(rng.integers(50, 300)), int(rng.integers(50, 300))
        x, y, z = ints((n, m)), ints((m,)), ints((n, 1))
        src = emit_function("f", [("x", tstr(dtype, ["n", "m"])), ("y", tstr(dtype, ["m"])), ("z", tstr(dtype, ["n", "1"]))],
                            [tstr(dtype, ["n", "m"])], ["return (x - y) * z + x * 2"])
        xi, yi, zi = x.astype(np.int64), y.astype(np.int64), z.astype(np.int64)
        outs = [Out(dtype, (xi - yi) * zi + xi * 2, True)]
        inputs, desc = [("x", x), ("y", y), ("z", z)], f"broadcast {(n, m)}"
    else:  # batched contraction with three operands
        b, i, j, k = (int(x) for x in rng.integers(5, 20, size=4))
        x, y, w = ints((b, i, j), -2, 3), ints((b, j, k), -2, 3), ints((k,), -2, 3)
        src = emit_function("f", [("x", tstr(dtype, ["b", "i", "j"])), ("y", tstr(dtype, ["b", "j", "k"])), ("w", tstr(dtype, ["k"]))],
                            [tstr(dtype, ["i", "b"])], ['return einsum(x, y, w, "b i j, b j k, k -> i b")'])
        ref = np.einsum("bij,bjk,k->ib", x.astype(np.int64), y.astype(np.int64), w.astype(np.int64))
        outs = [Out(dtype, ref, True)]
        inputs, desc = [("x", x), ("y", y), ("w", w)], f"batched 3-operand {(b, i, j, k)}"
    return RunCase(f"gen-large#{idx:03d}", "generated", f"{dtype} {desc} (integer-valued, exact)", src,
                   inputs=inputs, outs=outs)


def gen_outer_reduce_case(rng, idx: int) -> RunCase:
    """Reductions over leading axes (ein-tile-reductions): tiles of output
    rows with a partial last tile, the output's zero fill moved into the
    tiles, several reduced axes, 16-bit inputs accumulated in f32. Float
    inputs are small integers: sums are exact, compared exactly."""
    patterns = [
        ("a b c -> b c", "sum", (0,)),
        ("a b c -> b c", "max", (0,)),
        ("a b c d -> c d", "sum", (0, 1)),
        ("a b c d -> b d", "min", (0, 2)),
        ("a b c -> c b", "sum", (0,)),
        ("a b c -> b c", "prod", (0,)),
    ]
    pattern, reduction, axes = patterns[idx % len(patterns)]
    dtype = ["f32", "i32", "f16", "f64", "bf16", "i64"][(idx // len(patterns)) % 6]
    rank = len(pattern.split("->")[0].split())
    shape = [int(rng.integers(2, 5))] * rank
    shape[axes[-1] + 1] = int(rng.integers(9, 70))  # the tiled rows
    shape[-1] = int(rng.integers(3, 40))
    lo, hi = (-1, 2) if reduction == "prod" else (-4, 5)
    v = rng.integers(lo, hi, size=shape)
    np_dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32, "i64": np.int64}.get(dtype, np.float32)
    x = v.astype(np_dtype)
    names = pattern.split("->")[0].split()
    src = emit_function("f", [("x", tstr(dtype, names))], [tstr(dtype, pattern.split("->")[1].split())],
                        [f'return reduce(x, "{pattern}", "{reduction}")'])
    ref = einops.reduce(v.astype(np.int64), pattern, reduction)
    return RunCase(f"gen-outer-reduce#{idx:03d}", "generated", f"{dtype} {reduction} {tuple(shape)} \"{pattern}\"", src,
                   inputs=[("x", x)], outs=[Out(dtype, quantize(ref, dtype), True)])


def gen_blocked_contraction_case(rng, idx: int, dtype: Optional[str] = None) -> RunCase:
    """Contractions past the default blocks of ein-tile-contractions (kc 256
    f32 / 128 f64, nc 1024, mc 128, 6 x 64 register tiles) with ragged edges,
    every operand layout and 16-bit inputs accumulated in f32. Inputs are
    small integers, so the sums are exact before the one final rounding."""
    layouts = [
        ("m k, k n -> m n", ["m", "k"], ["k", "n"], ["m", "n"]),
        ("m k, n k -> m n", ["m", "k"], ["n", "k"], ["m", "n"]),
        ("k m, k n -> n m", ["k", "m"], ["k", "n"], ["n", "m"]),
        ("b m k, b n k -> b m n", ["b", "m", "k"], ["b", "n", "k"], ["b", "m", "n"]),
        ("m k j, k n j -> n m", ["m", "k", "j"], ["k", "n", "j"], ["n", "m"]),
    ]
    pattern, xa, ya, oa = layouts[idx % len(layouts)]
    dtype = dtype or ["f32", "f64", "f16", "bf16", "f32"][(idx // len(layouts)) % 5]
    size = {"b": int(rng.integers(2, 4)), "j": int(rng.integers(2, 4)),
            "m": int(rng.integers(5, 140)), "k": int(rng.integers(257, 600)),
            "n": int(rng.choice([int(rng.integers(65, 200)), int(rng.integers(1025, 1100))]))}
    if "j" in xa:
        size["k"] //= 3
    np_dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16}.get(dtype, np.float32)
    x = rng.integers(-1, 2, size=[size[d] for d in xa]).astype(np_dtype)
    y = rng.integers(-1, 2, size=[size[d] for d in ya]).astype(np_dtype)
    src = emit_function("f", [("x", tstr(dtype, xa)), ("y", tstr(dtype, ya))], [tstr(dtype, oa)],
                        [f'return einsum(x, y, "{pattern}")'])
    ref = np.einsum(pattern.replace(" ", "").replace(",", ",").replace("->", "->"),
                    x.astype(np.int64), y.astype(np.int64))
    desc = f"{dtype} blocked contraction {pattern} {size}"
    return RunCase(f"gen-blocked#{idx:03d}", "generated", desc, src,
                   inputs=[("x", x), ("y", y)], outs=[Out(dtype, quantize(ref, dtype), True)])


def gen_gemm_edge_case(rng, idx: int) -> RunCase:
    """f32 GEMMs at the edges of ein-tile-contractions' register tiles,
    packed panels and in-register transposes: m, n and k from 1, 5, 6, 7,
    17, 33 and 100 (every m and every k in each layout over the 28 cases), A
    as `m k` (packed from k-contiguous rows by vector loads transposed in
    registers: `einc run` passes strides known only at run time) or `k m`, B
    as `k n` or `n k`, a relu epilogue on half of them. Inputs are small
    integers, so the sums are exact."""
    layouts = [
        ("m k, k n -> m n", ["m", "k"], ["k", "n"]),
        ("k m, k n -> m n", ["k", "m"], ["k", "n"]),
        ("m k, n k -> m n", ["m", "k"], ["n", "k"]),
        ("k m, n k -> m n", ["k", "m"], ["n", "k"]),
    ]
    edges = [1, 5, 6, 7, 17, 33, 100]
    pattern, xa, ya = layouts[idx % 4]
    size = {"m": edges[idx % 7], "k": edges[(idx // 4) % 7], "n": edges[(3 * idx + idx // 7) % 7]}
    relu = (idx // 4) % 2 == 1
    x = rng.integers(-2, 3, size=[size[d] for d in xa]).astype(np.float32)
    y = rng.integers(-2, 3, size=[size[d] for d in ya]).astype(np.float32)
    call = f'einsum(x, y, "{pattern}")'
    src = emit_function("f", [("x", tstr("f32", xa)), ("y", tstr("f32", ya))], ['f32["m n"]'],
                        [f"return relu({call})" if relu else f"return {call}"])
    ref = np.einsum(pattern.replace(" ", ""), x.astype(np.int64), y.astype(np.int64))
    if relu:
        ref = np.maximum(ref, 0)
    desc = f"f32 GEMM at tile edges {pattern} {size}" + (" + relu" if relu else "")
    return RunCase(f"gen-gemm-edge#{idx:03d}", "generated", desc, src,
                   inputs=[("x", x), ("y", y)], outs=[Out("f32", quantize(ref, "f32"), True)])


# -- empty tensors -----------------------------------------------------------

EMPTY_NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32,
            "i32": np.int32, "i64": np.int64}


def empty_input(rng, shape, dtype: str):
    """Small integers (every sum and product exact) in `dtype`'s file type,
    and the reference values (float64 / int64)."""
    v = rng.integers(-3, 4, size=tuple(shape))
    ref = v.astype(np.int64 if dtype in INTS else np.float64)
    return v.astype(EMPTY_NP[dtype]), ref


def empty_cases() -> list[RunCase]:
    """Size-0 dims in every op, with numpy / einops as the oracle: data
    movement of empty tensors, repeat with a size-0 new axis (b=0), reductions
    over empty axes (sum 0, prod 1, mean NaN) and over non-empty axes with an
    empty batch axis (max and min too), the outer-axis reduction tiles,
    einsums with an empty contracted axis (all zeros; large enough for the
    tiled contraction kernel) or an empty free or batch axis, several
    operands, pack / unpack with an empty part, elementwise broadcasting,
    astype between all dtypes, sizes 0 from a `dim` declaration, from --dim
    and from the type itself."""
    rng = np.random.default_rng(47_000)
    cases: list[RunCase] = []
    dtypes = ["f32", "f64", "f16", "bf16", "i32", "i64"]

    def add(name, dtype, params, rtypes, lines, outs, dims=(), desc=""):
        files = [(p, f) for p, _, f in params]
        src = emit_function("f", [(p, t) for p, t, _ in params], rtypes, lines)
        cases.append(RunCase(f"gen-empty#{len(cases):03d}", "generated",
                             f"zero-size {dtype} {name}: {desc or ' ; '.join(lines)}", src,
                             inputs=files, outs=outs, dims=list(dims)))

    def names(shape):
        return [f"n{k}" for k in range(len(shape))]

    # rearrange, repeat: data movement of empty tensors, and b=0.
    moves = [
        ("rearrange", "a b c -> c (a b)", (0, 3, 2), {}),
        ("rearrange", "(a b) c -> a b c", (0, 3), {"b": 2}),
        ("rearrange", "a b -> b a", (4, 0), {}),
        ("rearrange", "a b c -> (b c) a", (2, 0, 3), {}),
        ("rearrange", "a ... c -> c ... a", (2, 0, 3, 2), {}),
        ("repeat", "a -> (a b)", (3,), {"b": 0}),
        ("repeat", "a -> a b", (3,), {"b": 0}),
        ("repeat", "a c -> a b c", (0, 2), {"b": 4}),
        ("repeat", "a -> b a", (5,), {"b": 0}),
        ("repeat", "a c -> (b a) c", (3, 0), {"b": 2}),
    ]
    for k, (op, pattern, shape, sizes) in enumerate(moves):
        dtype = dtypes[k % len(dtypes)]
        f, v = empty_input(rng, shape, dtype)
        ref = getattr(einops, op)(v, pattern, **sizes)
        kw = "".join(f", {n}={s}" for n, s in sizes.items())
        add(op, dtype, [("x", tstr(dtype, names(shape)), f)], [tstr(dtype, ["_"] * ref.ndim)],
            [f'return {op}(x, "{pattern}"{kw})'], [Out(dtype, ref, True)], desc=f"{pattern} {shape} {sizes}")

    # reduce: empty reduced axes (identities) and empty kept axes.
    reductions = [
        ("a c -> c", (0, 4), ("sum", "prod", "mean")),
        ("a b c -> a c", (3, 0, 2), ("sum", "prod", "mean")),
        ("a b ->", (0, 0), ("sum", "prod", "mean")),
        ("a b -> b a", (0, 3), ("sum", "max", "min")),  # nothing reduced
        ("a c -> a", (0, 4), ("sum", "prod", "mean", "max", "min")),
        ("a b c -> b", (3, 0, 2), ("sum", "prod", "mean", "max", "min")),
        ("a b c -> b c", (0, 20, 9), ("sum", "prod", "mean")),  # outer-axis tiles
        ("a b c -> b c", (4, 0, 9), ("sum", "max", "min")),
        ("a b c -> c b", (3, 17, 0), ("max", "prod")),
    ]
    k = 0
    for pattern, shape, kinds in reductions:
        for kind in kinds:
            for dtype in ("f32", "bf16", "i64") if kind != "mean" else ("f32", "f16", "f64"):
                f, v = empty_input(rng, shape, dtype)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # numpy's "Mean of empty slice"
                    ref = einops.reduce(v, pattern, kind)
                rt = tstr(dtype, ["_"] * np.ndim(ref))
                add("reduce", dtype, [("x", tstr(dtype, names(shape)), f)], [rt],
                    [f'return reduce(x, "{pattern}", "{kind}")'], [Out(dtype, quantize(ref, dtype), True)],
                    desc=f"{kind} {pattern} {shape}")
                k += 1

    # einsum: empty contracted axis (zeros), empty free or batch axes.
    einsums = [
        ("m k, k n -> m n", [(2, 0), (0, 3)]),
        ("m k, k n -> m n", [(70, 0), (0, 130)]),  # the tiled contraction kernel
        ("m k, k n -> m n", [(0, 300), (300, 1100)]),
        ("m k, k n -> m n", [(40, 300), (300, 0)]),
        ("m k, n k -> m n", [(0, 3), (4, 3)]),
        ("b m k, b k n -> b m n", [(0, 3, 4), (0, 4, 5)]),
        ("b m k, b k n -> b m n", [(2, 3, 0), (2, 0, 5)]),
        ("i j, j k, k l -> i l", [(2, 0), (0, 3), (3, 4)]),
        ("i j, j k, k l -> i l", [(2, 3), (3, 0), (0, 4)]),
        ("i j, j k, k l -> i l", [(0, 3), (3, 2), (2, 4)]),
        ("i j ->", [(0, 3)]),
        ("i j -> j i", [(3, 0)]),
        ("i, i ->", [(0,), (0,)]),
    ]
    for k, (pattern, shapes) in enumerate(einsums):
        dtype = ["f32", "f64", "f16", "bf16", "i32", "i64", "f32"][k % 7]
        ins = [s.strip() for s in pattern.split("->")[0].split(",")]
        params, vals = [], []
        for j, (axes, shape) in enumerate(zip(ins, shapes)):
            f, v = empty_input(rng, shape, dtype)
            params.append((f"x{j}", tstr(dtype, axes.split()), f))
            vals.append(v)
        out_axes = pattern.split("->")[1].split()
        ref = np.einsum(pattern.replace(" ", ""), *vals)
        args = ", ".join(p for p, _, _ in params)
        add("einsum", dtype, params, [tstr(dtype, out_axes)], [f'return einsum({args}, "{pattern}")'],
            [Out(dtype, quantize(ref, dtype), True)], desc=f"{pattern} {shapes}")
    f, v = empty_input(rng, (3, 0), "f16")
    g, w = empty_input(rng, (0, 4), "f16")
    add("einsum acc=f32", "f16", [("x", 'f16["m k"]', f), ("y", 'f16["k n"]', g)], ['f32["m n"]'],
        ['return einsum(x, y, "m k, k n -> m n", acc=f32)'], [Out("f32", v @ w, True)])

    # pack / unpack with an empty part and an empty batch axis.
    for k, (sx, sy) in enumerate([((2, 0), (2, 3)), ((0, 2), (0, 3)), ((2, 0), (2, 0))]):
        dtype = ["i32", "f32", "bf16"][k]
        f, v = empty_input(rng, sx, dtype)
        g, w = empty_input(rng, sy, dtype)
        # (einops.pack itself fails on an empty b: numpy cannot reshape a
        # size-0 array to (0, -1); packing is concatenation along `*`.)
        packed = np.concatenate([v, w], axis=1)
        add("pack", dtype, [("x", tstr(dtype, ["b", "p"]), f), ("y", tstr(dtype, ["b", "q"]), g)],
            [tstr(dtype, ["b", "p+q"]), tstr(dtype, ["b", "p"]), tstr(dtype, ["b", "q"])],
            ['z, ps = pack([x, y], "b *")', 'u, w = unpack(z * 2, ps, "b *")', "return z, u, w"],
            [Out(dtype, packed, True), Out(dtype, v * 2, True), Out(dtype, w * 2, True)], desc=f"{sx} {sy}")

    # elementwise, broadcasting by name and against `#` dims.
    for k, dtype in enumerate(dtypes):
        f, v = empty_input(rng, (0, 3), dtype)
        g, w = empty_input(rng, (3,), dtype)
        add("elementwise", dtype, [("x", tstr(dtype, ["a", "b"]), f), ("y", tstr(dtype, ["b"]), g)],
            [tstr(dtype, ["a", "b"])], ["return x * 2 + y - x"], [Out(dtype, quantize(v * 2 + w - v, dtype), True)])
    f, v = empty_input(rng, (0, 1), "f32")
    g, w = empty_input(rng, (0, 4), "f32")
    add("elementwise #", "f32", [("x", 'f32["n #m"]', f), ("y", 'f32["n m"]', g)], ['f32["n m"]'],
        ["return exp(x) + y"], [Out("f32", np.exp(v) + w)])
    f, v = empty_input(rng, (4, 0), "f64")
    add("elementwise unary", "f64", [("x", 'f64["a b"]', f)], ['f64["a b"]', 'f64["a b"]'],
        ["return tanh(x) + sqrt(x * x), -x"], [Out("f64", v), Out("f64", -v, True)])

    # astype between all dtypes.
    for k, src in enumerate(dtypes):
        dst = dtypes[(k + 1) % len(dtypes)]
        f, v = empty_input(rng, (2, 0, 3), src)
        add("astype", f"{src}->{dst}", [("x", tstr(src, ["a", "b", "c"]), f)], [tstr(dst, ["c", "a", "b"])],
            [f'return rearrange(astype(x, {dst}), "a b c -> c a b")'], [Out(dst, np.zeros((3, 2, 0)), True)])

    # Sizes 0 from the type, from a `dim` declaration, from --dim.
    f, v = empty_input(rng, (0, 3), "f32")
    add("type 0", "f32", [("x", 'f32["0 3"]', f)], ['f32["3 0"]'], ['return rearrange(x, "a b -> b a")'],
        [Out("f32", v.T, True)])
    f, v = empty_input(rng, (3,), "i32")
    src = "dim z = 0\n\n" + emit_function("f", [("x", 'i32["n"]')], ['i32["n z"]'], ['return repeat(x, "n -> n m", m=z)'])
    cases.append(RunCase(f"gen-empty#{len(cases):03d}", "generated", "zero-size i32 dim z = 0: repeat m=z", src,
                         inputs=[("x", f)], outs=[Out("i32", np.zeros((3, 0)), True)]))
    add("--dim", "f32", [("x", 'f32["n"]', empty_input(rng, (3,), "f32")[0])], ['f32["n m"]'],
        ['return repeat(x, "n -> n m", m=m)'], [Out("f32", np.zeros((3, 0)), True)], dims=[("m", 0)])
    f, v = empty_input(rng, (0,), "f32")
    add("split", "f32", [("x", 'f32["h"]', f)], ['f32["h/4 4"]'], ['return rearrange(x, "(a b) -> a b", b=4)'],
        [Out("f32", v.reshape(0, 4), True)])
    return cases


def edge_cases() -> list[RunCase]:
    """Hand-written programs for corners of the lowering, the pipeline and the
    driver."""
    rng = np.random.default_rng(60_000)
    f23, x23 = make_input(rng, (2, 3), "f32")
    f234, x234 = make_input(rng, (2, 3, 4), "f32")
    f3, v3 = make_input(rng, (3,), "f32")
    fi, vi = make_input(rng, (4,), "i32")
    fl, vl = make_input(rng, (4,), "i64")
    fp, vp = make_input(rng, (3,), "f32", "pos")
    fb, vb = make_input(rng, (2, 3), "bf16")
    T = 'f32["a b"]'
    specs = [
        ("return-param-twice", [("x", T)], [T, T], ["return x, x"], [("x", f23)], [Out("f32", x23, True)] * 2, []),
        ("return-param-and-view", [("x", T)], [T, 'f32["a*b"]'], ['return x, rearrange(x, "a b -> (a b)")'],
         [("x", f23)], [Out("f32", x23, True), Out("f32", x23.reshape(-1), True)], []),
        ("return-value-twice", [("x", T)], [T, T], ["y = x * 2", "return y, y"], [("x", f23)], [Out("f32", x23 * 2, True)] * 2, []),
        ("return-view-of-view", [("x", T)], ['f32["b a"]'], ['y = rearrange(x, "a b -> (a b)")', 'return rearrange(y, "(a b) -> b a", a=a)'],
         [("x", f23)], [Out("f32", x23.T, True)], []),
        ("unused-parameter", [("x", 'f32["n"]'), ("y", T)], ['f32["n"]'], ["return x + 1"], [("x", f3), ("y", f23)],
         [Out("f32", quantize(v3 + 1, "f32"))], []),
        ("result-only-name-bound-by---dim", [("x", 'f32["n"]')], ['f32["n m"]'], ['return repeat(x, "n -> n m", m=m)'],
         [("x", f3)], [Out("f32", np.repeat(v3[:, None], 4, axis=1), True)], [("m", 4)]),
        ("int-constant-folded", [("x", 'i32["n"]')], ['i32["n"]', 'i32["n"]'], ["return x * 0 + 3, x - x"], [("x", fi)],
         [Out("i32", np.full(4, 3)), Out("i32", np.zeros(4))], []),
        ("literal-folding-and-precedence", [("x", 'f32["n"]')], ['f32["n"]'], ["return x * (2 ** 3) - -x ** 2 + 2 ** -1"],
         [("x", f3)], [Out("f32", quantize(v3 * 8 + v3 ** 2 + 0.5, "f32"))], []),
        ("int-pow", [("x", 'i64["n"]')], ['i64["n"]'], ["return x ** 3 + x ** 0 - x ** 1"], [("x", fl)],
         [Out("i64", vl ** 3 + 1 - vl)], []),
        ("float-pow-tensor-exponent", [("x", 'f32["n"]'), ("y", 'f32["n"]')], ['f32["n"]'], ["return x ** y + x ** -1"],
         [("x", fp), ("y", f3)], [Out("f32", quantize(vp ** v3 + 1 / vp, "f32"))], []),
        ("int-division-truncates", [("x", 'i32["n"]')], ['i32["n"]'], ["return (x - 7) / 2 + (-x) / 3 + (x + 5) / -2"], [("x", fi)],
         [Out("i32", np.trunc((vi - 7) / 2) + np.trunc(-vi / 3) + np.trunc((vi + 5) / -2))], []),
        ("bf16-literal-rounded", [("x", 'bf16["a b"]')], ['bf16["a b"]'], ["return x * 0.1 + 1e-3"], [("x", fb)],
         [Out("bf16", quantize(quantize(vb * quantize(0.1, "bf16"), "bf16") + quantize(1e-3, "bf16"), "bf16"))], []),
        ("scalar-in-scalar-out", [("x", 'f64[""]'), ("y", 'f64["3"]')], ['f64[""]'], ['return x * reduce(y, "n ->", "prod")'],
         [("x", np.float64(1.5)), ("y", np.array([1.0, 2.0, 3.0]))], [Out("f64", np.array(9.0))], []),
        ("entry-check-holds", [("x", 'f32["hidden"]')], ['f32["hidden/8 8"]'], ['return rearrange(x, "(h d) -> h d", d=8)'],
         [("x", np.arange(16, dtype=np.float32))], [Out("f32", np.arange(16.0).reshape(2, 8), True)], []),
        ("dim-from---dim-and-input", [("x", 'f32["a b"]')], ['f32["b a"]'], ['return rearrange(x, "a b -> b a")'],
         [("x", f23)], [Out("f32", x23.T, True)], [("a", 2), ("b", 3)]),
        ("size-expression-param", [("x", 'f32["n+1 2*n"]')], ['f32["2*n n+1"]'], ['return rearrange(x, "a b -> b a")'],
         [("x", np.arange(12, dtype=np.float32).reshape(3, 4))], [Out("f32", np.arange(12.0).reshape(3, 4).T, True)], []),
        ("broadcast-hash-dim", [("x", 'f32["n #m"]'), ("y", 'f32["n m"]')], ['f32["n m"]'], ["return x + y"],
         [("x", f3.reshape(3, 1)), ("y", np.ones((3, 4), np.float32))], [Out("f32", quantize(np.broadcast_to(v3.reshape(3, 1) + 1, (3, 4)), "f32"))], []),
        ("broadcast-equal-sizes-by-name", [("x", 'f32["b s"]'), ("y", 'f32["s"]'), ("z", 'f32["b"]')], ['f32["b s"]'],
         ["return x + y * 10 + z * 100"], [("x", np.arange(9, dtype=np.float32).reshape(3, 3)), ("y", np.float32([1, 2, 3])),
                                           ("z", np.float32([1, 2, 3]))],
         [Out("f32", np.arange(9.0).reshape(3, 3) + np.array([1, 2, 3]) * 10 + np.array([[1], [2], [3]]) * 100)], []),
        ("einsum-int-to-float-acc", [("x", 'i32["a b"]'), ("y", 'i32["b"]')], ['f64["a"]'], ['return einsum(x, y, "a b, b -> a", acc=f64)'],
         [("x", np.int32([[1, 2, 3], [4, 5, 6]])), ("y", np.int32([1, -1, 2]))], [Out("f64", np.array([5.0, 11.0]), True)], []),
        ("mean-of-bf16-to-f32", [("x", 'bf16["a b"]')], ['f32["a"]'], ['return astype(reduce(x, "a b -> a", "mean"), f32)'],
         [("x", fb)], [Out("f32", quantize(vb.mean(axis=1), "bf16"))], []),
    ]
    specs += [
        ("ellipsis-parameter-rank-from-body", [("x", 'f32["..."]')], ['f32["_ _"]'], ['return rearrange(x, "a b -> b a")'],
         [("x", f23)], [Out("f32", x23.T, True)], []),
        ("ellipsis-parameter-with-names", [("x", 'f32["... c"]')], ['f32["c _"]'], ['return rearrange(x, "a c -> c a")'],
         [("x", f23)], [Out("f32", x23.T, True)], []),
        ("variadic-parameter-rank-from-body", [("x", 'f32["*batch c"]')], ['f32["c _ _"]'],
         ['return rearrange(x, "a b c -> c b a")'],
         [("x", f234)], [Out("f32", x234.transpose(2, 1, 0), True)], []),
        # A variadic's rank and sizes come from the inputs.
        ("variadic-two-parameters", [("x", 'f32["*batch c"]'), ("y", 'f32["*batch c"]')], ['f32["*batch c"]'],
         ["return x - y * 2.0"],
         [("x", f234), ("y", f234)], [Out("f32", x234 - x234 * 2, True)], []),
    ]
    # Anonymous `...` dims broadcast as numpy's: ranks 2 and 1, a size-1 dim.
    f14, x14 = make_input(rng, (1, 4), "f32")
    specs += [
        ("ellipsis-einsum-broadcasts", [("x", 'f32["... c"]'), ("y", 'f32["... c"]')], ['f32["... c"]'],
         ['return einsum(x, y, "... c, ... c -> ... c")'],
         [("x", f234), ("y", f14)], [Out("f32", x234 * x14)], []),
    ]
    # `#m` given size 1 broadcasts against the m of another input, in either
    # parameter order, or is 1 when nothing else binds m.
    x31, v31 = make_input(rng, (3, 1), "f32")
    specs += [
        ("broadcast-hash-dim-second", [("y", 'f32["n m"]'), ("x", 'f32["n #m"]')], ['f32["n m"]'], ["return y * x"],
         [("y", np.full((3, 4), 2, np.float32)), ("x", x31)], [Out("f32", quantize(np.broadcast_to(v31 * 2, (3, 4)), "f32"))], []),
        ("broadcast-hash-dim-full", [("x", 'f32["n #m"]'), ("y", 'f32["n m"]')], ['f32["n m"]'], ["return x - y"],
         [("x", np.arange(12, dtype=np.float32).reshape(3, 4)), ("y", np.ones((3, 4), np.float32))],
         [Out("f32", np.arange(12.0).reshape(3, 4) - 1, True)], []),
        ("broadcast-hash-dim-alone", [("x", 'f32["n #m"]')], ['f32["n #m"]'], ["return x * 2"],
         [("x", x31)], [Out("f32", v31 * 2, True)], []),
        ("broadcast-hash-dim-two-params", [("x", 'f32["#n m"]'), ("y", 'f32["n #m"]')], ['f32["n m"]'], ["return x + y"],
         [("x", np.float32([[1, 2, 3]])), ("y", np.float32([[10], [20]]))],
         [Out("f32", np.array([[11.0, 12, 13], [21, 22, 23]]), True)], []),
    ]
    xfail: dict[str, str] = {}
    cases = []
    for name, params, rtypes, lines, inputs, outs, dims in specs:
        cases.append(RunCase(f"gen-edge-{name}", "generated", name, emit_function("f", params, rtypes, lines),
                             inputs=inputs, outs=outs, dims=dims, xfail=xfail.get(name, "")))
    # Functions named like C library symbols that the lowered code calls
    # (malloc/free for buffers, libm for exp, tanh, pow, ...).
    fd, d = make_input(rng, (3, 2), "f64", "pos")
    ff, f_ = make_input(rng, (3, 2), "f32", "pos")
    named = [
        ("malloc", "f64", "repeat(x * 2, \"n m -> n m k\", k=2)", np.repeat((d * 2)[..., None], 2, axis=2), ["n", "m", "2"], True),
        ("free", "f64", "rearrange(x, \"n m -> m n\") + 1", d.T + 1, ["m", "n"], False),
        ("expf", "f32", "exp(x)", np.exp(f_), ["n", "m"], False),
        ("tanhf", "f32", "tanh(x)", np.tanh(f_), ["n", "m"], False),
        ("pow", "f64", "x ** x", d ** d, ["n", "m"], False),
        ("powf", "f32", "x ** 0.5", f_ ** 0.5, ["n", "m"], False),
        ("logf", "f32", "log(x)", np.log(f_), ["n", "m"], False),
        ("memcpy", "f32", "repeat(x, \"n m -> (2 n) m\")", np.concatenate([f_, f_]), ["2*n", "m"], True),
    ]
    for fname, dt, expr, ref, rdims, exact in named:
        src = f'def {fname}(x: {dt}["n m"]) -> {tstr(dt, rdims)}:\n    return {expr}\n'
        cases.append(RunCase(f"gen-edge-fn-named-{fname}", "generated", f"a function named {fname}", src, fn=fname,
                             inputs=[("x", fd if dt == "f64" else ff)], outs=[Out(dt, quantize(ref, dt), exact)]))
    # A function may not take a built-in's name (f64's libm names exp, tanh
    # and log among them): every call of the name would mean the built-in.
    for fname in ("exp", "tanh", "log"):
        src = f'def {fname}(x: f64["n m"]) -> f64["n m"]:\n    return {fname}(x)\n'
        cases.append(RunCase(f"gen-edge-fn-named-{fname}", "generated", f"a function named {fname} (refused)", src,
                             fn=fname, inputs=[("x", fd)], n_out=1, expect_rc=1,
                             stderr_has=f"function '{fname}' has the name of a built-in operation"))
    # --time calls the compiled function many more times into the same outputs
    fa, a = make_input(rng, (5, 7), "f32")
    fw, w = make_input(rng, (7, 3), "f32")
    cases.append(RunCase("gen-edge-time-flag", "generated", "einc run --time",
                         emit_function("f", [("a", 'f32["n k"]'), ("w", 'f32["k m"]')], ['f32["m n"]', 'f32["n"]'],
                                       ['y = einsum(a, w, "n k, k m -> m n")', 'return y, reduce(y, "m n -> n", "sum")']),
                         inputs=[("a", fa), ("w", fw)], outs=[Out("f32", (a @ w).T, False, 7), Out("f32", (a @ w).sum(axis=1), False, 21)],
                         extra_args=["--time", "--peak-flops", "1e9", "--bandwidth", "1e9"]))
    return cases


def sema_cases() -> list[RunCase]:
    """Front-end corners of issue 27 (items 8, 14, 15), run for real:
    programs that check symbolically and must also check, and compute, with
    the sizes of the inputs bound (a name of size 1 against a literal 1, a
    take/slice axis "7" beside a d/7 that is 7, a grad whose split sizes
    all equal); gradients through splits whose types need (a/b)*b == a;
    and any/all of numbers (truthiness: x != 0, NaN true, -0.0 false)."""
    rng = np.random.default_rng(61_000)
    cases: list[RunCase] = []

    def case(name, params, results, lines, inputs, outs, dims=(), desc=""):
        cases.append(RunCase(f"sema-{name}", "generated", desc or name, emit_function("f", params, results, lines),
                             inputs=inputs, outs=outs, dims=list(dims)))

    # 14: by-name broadcasting after a `1` met a name bound to 1.
    for n, t in ((3, 1), (1, 1), (3, 2)):
        fx, x = make_input(rng, (n,), "f32")
        fy, y = make_input(rng, (n, t), "f32")
        fz, z = make_input(rng, (t,), "f32")
        case(f"broadcast-one-vs-bound-one-n{n}-t{t}", [("x", 'f32["n"]'), ("y", 'f32["n t"]'), ("z", 'f32["t"]')],
             ['f32["n t"]'], ['u = rearrange(x, "i -> i 1") + y', "return u + z"],
             [("x", fx), ("y", fy), ("z", fz)],
             [Out("f32", quantize(quantize(x[:, None] + y, "f32") + z[None, :], "f32"))],
             desc=f"a literal 1 and a name bound to 1, then broadcast by name (n={n}, t={t})")
    # 14: an axis spelled "7" beside the split d/7 that is 7 (d = 49).
    fx, x = make_input(rng, (7, 2, 49), "f32")
    ids = np.int64([6, 0, 3])
    y = x.reshape(7, 2, 7, 7).sum(2)
    split = 'y = reduce(x, "s a (f e) -> s a e", "sum", f=7)'
    case("take-axis-7-beside-d-over-7", [("x", 'f32["7 a d"]'), ("ids", 'i64["k"]')], ['f32["k a d/7"]'],
         [split, 'return take(y, ids, "7")'], [("x", fx), ("ids", ids)],
         [Out("f32", np.take(y, ids, axis=0), False, 7)], desc="take along \"7\" of \"7 a d/7\" (d = 49)")
    case("slice-axis-7-beside-d-over-7", [("x", 'f32["7 a d"]')], ['f32["3 a d/7"]'],
         [split, 'return slice(y, "7", 2, 5)'], [("x", fx)],
         [Out("f32", y[2:5], False, 7)], desc="slice along \"7\" of \"7 a d/7\" (d = 49)")
    fx, x = make_input(rng, (7, 2, 7), "f32")
    case("take-param-axis-7-beside-d-over-7", [("x", 'f32["7 a d/7"]'), ("ids", 'i64["k"]')], ['f32["k a d/7"]'],
         ['return take(x, ids, "7")'], [("x", fx), ("ids", ids)],
         [Out("f32", np.take(x, ids, axis=0), True)], dims=[("d", 49)], desc="take along \"7\" of \"7 a d/7\" at d = 49")
    case("slice-param-axis-7-beside-d-over-7", [("x", 'f32["7 a d/7"]')], ['f32["2 a d/7"]'],
         ['return slice(x, "7", 1, 3)'], [("x", fx)],
         [Out("f32", x[1:3], True)], dims=[("d", 49)], desc="slice along \"7\" of \"7 a d/7\" at d = 49")
    # 14: grad of y * z through a split "(p j) (q u)" with m = b = 4: the
    # backward's broadcast of z must not become ambiguous.
    for m, b in ((4, 4), (4, 6)):
        fy, yv = make_input(rng, (m, b), "f64")
        fz, zv = make_input(rng, (b,), "f64")
        fr, rv = make_input(rng, (m // 2, 2, b // 2, 2), "f64")
        case(f"grad-mul-split-m{m}-b{b}", [("y", 'f64["m b"]'), ("z", 'f64["b"]'), ("r", 'f64["_ 2 _ 2"]')],
             ['f64["m b"]', 'f64["b"]'],
             ['w = rearrange(y * z, "(p j) (q u) -> p j q u", j=2, u=2)', 'l = reduce(w * r, "p j q u ->", "sum")',
              "dy, dz = grad(l, wrt=[y, z])", "return dy, dz"],
             [("y", fy), ("z", fz), ("r", fr)],
             [Out("f64", rv.reshape(m, b) * zv[None, :]), Out("f64", (rv.reshape(m, b) * yv).sum(0), False, m)],
             desc=f"grad of y * z split by (p j) (q u), m={m}, b={b}")
    # 15: gradients through splits: (c/t)*t, 2*((s-1)/2)+1, (e/3)/2.
    fy, yv = make_input(rng, (6, 3), "f32")
    fr, rv = make_input(rng, (2, 9), "f32")
    case("grad-split-by-named-size", [("y", 'f32["c t"]'), ("r", 'f32["_ _"]')], ['f32["c t"]'],
         ['w = rearrange(y, "(x f) p -> x (f p)", f=t)', 'l = reduce(w * r, "a b ->", "sum")', "return grad(l, wrt=[y])"],
         [("y", fy), ("r", fr)], [Out("f32", rv.reshape(6, 3), True)], desc="grad through a split by a named size")
    fy, yv = make_input(rng, (7,), "f32")
    fr, rv = make_input(rng, (3, 2), "f32")
    case("grad-slice-then-split", [("y", 'f32["s"]'), ("r", 'f32["_ 2"]')], ['f32["s"]'],
         ['w = rearrange(slice(y, "s", 1, s), "(h two) -> h two", two=2)', 'l = reduce(w * r, "a b ->", "sum")',
          "return grad(l, wrt=[y])"],
         [("y", fy), ("r", fr)], [Out("f32", np.concatenate([[0.0], rv.reshape(6)]), True)],
         desc="grad through a slice to s-1, then a split")
    fx, xv = make_input(rng, (2, 12), "f32")
    fr, rv = make_input(rng, (2,), "f32")
    case("grad-two-splitting-reduces", [("x", 'f32["p e"]'), ("r", 'f32["_"]')], ['f32["p e"]'],
         ['v = reduce(x, "p (q j) -> j", "sum", q=3)', 'w = reduce(v, "(i r) -> i", "sum", r=2)',
          'l = reduce(w * r, "i ->", "sum")', "return grad(l, wrt=[x])"],
         [("x", fx), ("r", fr)], [Out("f32", np.broadcast_to(np.tile(np.repeat(rv, 2), 3), (2, 12)), True)],
         desc="grad through two splitting reduces")
    # 15: the split-merge round trip of language.md §4.6 on n-1 and 3*d.
    # (n-1 from a slice: a parameter typed "n-1" does not compile
    # size-generic, a lowering defect of its own.)
    fx, xv = make_input(rng, (2, 3, 17), "f32")
    case("split-merge-n-minus-1", [("x", 'f32["b s n"]')], ['f32["b s n-1"]'],
         ['y = rearrange(slice(x, "n", 1, n), "b s (h d) -> b h s d", h=8)',
          'return rearrange(y, "b h s d -> b s (h d)")'],
         [("x", fx)], [Out("f32", xv[:, :, 1:], True)], desc="split-merge round trip of n-1")
    fx, xv = make_input(rng, (2, 3, 24), "f32")
    case("split-merge-3d", [("x", 'f32["b s 3*d"]')], ['f32["b s 3*d"]'],
         ['y = rearrange(x, "b s (h e) -> b h s e", h=8)', 'return rearrange(y, "b h s e -> b s (h e)")'],
         [("x", fx)], [Out("f32", xv, True)], desc="split-merge round trip of 3*d")
    # 8: any/all of numbers: truthiness (x != 0), NaN true, -0.0 false.
    special = np.array([[0.0, -0.0, 0.0, 0.0], [0.0, np.nan, 0.0, -0.0], [1.5, -2.0, 3.0, 0.25],
                        [-0.0, 0.0, 7.0, 0.0], [np.nan, 1.0, -1.0, 2.0]])
    for dt in ("f32", "f64", "i32"):
        if dt == "i32":
            v = np.array([[0, 0, 0, 0], [0, -3, 0, 0], [1, -2, 3, 5], [0, 0, 7, 0], [4, 1, -1, 2]], np.int32)
        else:
            v = special.astype(np.float32 if dt == "f32" else np.float64)
        with np.errstate(invalid="ignore"):
            case(f"any-all-of-{dt}", [("x", f'{dt}["a b"]')],
                 ['bool["a"]', 'bool["a"]', 'bool[""]', 'bool["b"]'],
                 ['return reduce(x, "a b -> a", "any"), reduce(x, "a b -> a", "all"), '
                  'reduce(x, "a b ->", "any"), reduce(x * 2, "a b -> b", "all")'],
                 [("x", v)],
                 [Out("bool", np.any(v, axis=1), True), Out("bool", np.all(v, axis=1), True),
                  Out("bool", np.any(v), True), Out("bool", np.all(v * 2, axis=0), True)],
                 desc=f"any/all of {dt} (NaN true, -0.0 false)")
    # An empty axis: any is False, all is True.
    case("any-all-of-f32-empty-axis", [("x", 'f32["a b"]')], ['bool["a"]', 'bool["a"]'],
         ['return reduce(x, "a b -> a", "any"), reduce(x, "a b -> a", "all")'],
         [("x", np.zeros((3, 0), np.float32))],
         [Out("bool", np.zeros(3, bool), True), Out("bool", np.ones(3, bool), True)],
         desc="any/all of f32 over an empty axis")
    return cases


def merged_output_cases() -> list[RunCase]:
    """Results whose dims merge axes (`b s (h d)`, `(c h) w`): computed through
    a split view of the output (ein-merged-outputs-in-place). Odd sizes, groups
    of two and three axes, with a transpose (tiled), a broadcast, a reduction
    and a contraction, several dtypes, and the same value returned twice.
    Parameters name their dims, so the size-generic run has groups of two or
    three dynamic sizes (the reinterpret_cast view)."""
    rng = np.random.default_rng(61_000)
    cases: list[RunCase] = []

    def add(name, params, rtypes, lines, inputs, outs, dims=()):
        cases.append(RunCase(f"gen-merged-out-{name}", "generated", f"merged output: {name}",
                             emit_function("f", params, rtypes, lines), inputs=inputs, outs=outs, dims=list(dims)))

    for dt in ("f32", "f64", "bf16", "i32"):
        fx, x = make_input(rng, (3, 5, 7, 9), dt)
        add(f"merge-heads-{dt}", [("x", f'{dt}["b h s d"]')], [f'{dt}["b s h*d"]'],
            ['return rearrange(x, "b h s d -> b s (h d)")'], [("x", fx)],
            [Out(dt, einops.rearrange(x, "b h s d -> b s (h d)"), True)])
    for dt in ("f32", "i64", "f16"):
        fx, x = make_input(rng, (13, 6), dt)
        add(f"repeat-rows-{dt}", [("x", f'{dt}["h w"]')], [f'{dt}["4*h w"]'],
            ['return repeat(x, "h w -> (c h) w", c=4)'], [("x", fx)],
            [Out(dt, np.tile(x, (4, 1)), True)])
    fx, x = make_input(rng, (3, 4, 5, 7), "f32")
    add("three-axes-permuted", [("x", 'f32["a b c d"]')], ['f32["d c*a*b"]'],
        ['return rearrange(x, "a b c d -> d (c a b)")'], [("x", fx)],
        [Out("f32", einops.rearrange(x, "a b c d -> d (c a b)"), True)])
    fx, x = make_input(rng, (5, 3, 7), "f64")
    add("three-axes-whole", [("x", 'f64["a b c"]')], ['f64["c*b*a"]'],
        ['return rearrange(x, "a b c -> (c b a)")'], [("x", fx)],
        [Out("f64", einops.rearrange(x, "a b c -> (c b a)"), True)])
    fx, x = make_input(rng, (2, 5, 3), "i32")
    add("repeat-three-axes", [("y", 'i32["a b c"]')], ['i32["a*c*3 b"]'],
        ['return repeat(y, "a b c -> (a c k) b", k=3)'], [("y", fx)],
        [Out("i32", einops.repeat(x, "a b c -> (a c k) b", k=3), True)])
    # The output's contiguous axis is not the input's: tiled by
    # ein-tile-transposes, writing through the view.
    for dt, shape in (("f32", (2, 19, 5, 13)), ("f16", (3, 17, 4, 9)), ("f64", (2, 11, 8, 8))):
        fx, x = make_input(rng, shape, dt)
        add(f"transpose-{dt}", [("x", f'{dt}["b c h w"]')], [f'{dt}["b h*w c"]'],
            ['return rearrange(x, "b c h w -> b (h w) c")'], [("x", fx)],
            [Out(dt, einops.rearrange(x, "b c h w -> b (h w) c"), True)])
    fx, x = make_input(rng, (4, 3, 6), "f32")
    add("mean", [("x", 'f32["a b c"]')], ['f32["b*a"]'], ['return reduce(x, "a b c -> (b a)", "mean")'],
        [("x", fx)], [Out("f32", x.mean(axis=2).T.reshape(-1), False, 6)])
    fp, p = make_input(rng, (2, 3, 5, 4), "f32")
    fv, v = make_input(rng, (2, 3, 4, 7), "f32")
    add("einsum", [("p", 'f32["b h s t"]'), ("v", 'f32["b h t d"]')], ['f32["b s h*d"]'],
        ['return einsum(p, v, "b h s t, b h t d -> b s (h d)")'], [("p", fp), ("v", fv)],
        [Out("f32", np.einsum("bhst,bhtd->bshd", p, v).reshape(2, 5, 21), False, 4)])
    fx, x = make_input(rng, (3, 4, 5), "f32")
    y = einops.rearrange(x, "a b c -> b (c a)")
    add("returned-twice", [("x", 'f32["a b c"]')], ['f32["b c*a"]', 'f32["b c*a"]'],
        ['y = rearrange(x, "a b c -> b (c a)")', "return y, y"], [("x", fx)], [Out("f32", y, True)] * 2)
    add("returned-and-read", [("x", 'f32["a b c"]')], ['f32["b c*a"]', 'f32["b"]'],
        ['y = rearrange(x, "a b c -> b (c a)")', 'return y, reduce(y, "b n -> b", "sum")'], [("x", fx)],
        [Out("f32", y, True), Out("f32", y.sum(axis=1), False, 15)])
    add("unit-dim", [("x", 'f32["a b c"]')], ['f32["b 1 c*a"]'],
        ['return rearrange(x, "a b c -> b 1 (c a)")'], [("x", fx)],
        [Out("f32", einops.rearrange(x, "a b c -> b 1 (c a)"), True)])
    fx, x = make_input(rng, (3, 0, 5), "f32")
    add("empty", [("x", 'f32["a b c"]')], ['f32["b c*a"]'], ['return rearrange(x, "a b c -> b (c a)")'],
        [("x", fx)], [Out("f32", einops.rearrange(x, "a b c -> b (c a)"), True)])
    return cases


def math_functions() -> list[tuple[str, int]]:
    """The named elementwise functions on numbers or floats (name, arity),
    read from the table's rows in include/ein/Shape/Elementwise.def: a function
    added there without a reference in MATH_REFERENCE fails the corpus loudly."""
    with open(os.path.join(ROOT, "include", "ein", "Shape", "Elementwise.def")) as f:
        text = f.read()
    rows = re.findall(r'^EIN_ELEMENTWISE\(\w+,\s*"(\w+)",\s*"([^"]*)",\s*(\d+),\s*(\w+),', text,
                      re.M)
    if not rows:
        raise RuntimeError("no elementwise rows found in include/ein/Shape/Elementwise.def")
    return [(name, int(arity)) for name, symbol, arity, operands in rows
            if not symbol and operands in ("Number", "Float")]


_erf = np.vectorize(math.erf, otypes=[np.float64])
# name -> (source with {a} the chain's value and y a parameter, reference of
# (a, y), input domain): "pos" keeps the chain positive, "exact" makes it a
# multiple of 1/8 that every float dtype holds exactly (floor, ceil, round
# then compare exactly, ties of round included).
MATH_REFERENCE = {
    "abs": ("abs({a})", lambda a, y: np.abs(a), "any"),
    "sign": ("sign({a})", lambda a, y: np.sign(a), "any"),
    "square": ("square({a})", lambda a, y: a * a, "any"),
    "exp": ("exp({a})", lambda a, y: np.exp(a), "any"),
    "log": ("log({a})", lambda a, y: np.log(a), "pos"),
    "sqrt": ("sqrt({a})", lambda a, y: np.sqrt(a), "pos"),
    "rsqrt": ("rsqrt({a})", lambda a, y: 1 / np.sqrt(a), "pos"),
    "tanh": ("tanh({a})", lambda a, y: np.tanh(a), "any"),
    "relu": ("relu({a})", lambda a, y: np.maximum(a, 0.0), "any"),
    "sigmoid": ("sigmoid({a})", lambda a, y: 1 / (1 + np.exp(-a)), "any"),
    "silu": ("silu({a})", lambda a, y: a / (1 + np.exp(-a)), "any"),
    "gelu": ("gelu({a})", lambda a, y: 0.5 * a * (1 + _erf(a / math.sqrt(2))), "any"),
    "gelu_tanh": ('gelu({a}, approximate="tanh")',
                  lambda a, y: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))), "any"),
    "softplus": ("softplus({a})", lambda a, y: np.logaddexp(0.0, a), "any"),
    "sin": ("sin({a})", lambda a, y: np.sin(a), "any"),
    "cos": ("cos({a})", lambda a, y: np.cos(a), "any"),
    "erf": ("erf({a})", lambda a, y: _erf(a), "any"),
    "floor": ("floor({a})", lambda a, y: np.floor(a), "exact"),
    "ceil": ("ceil({a})", lambda a, y: np.ceil(a), "exact"),
    "round": ("round({a})", lambda a, y: np.round(a), "exact"),  # ties to even
    "min": ("min({a}, y)", lambda a, y: np.minimum(a, y), "any"),
    "max": ("max({a}, y)", lambda a, y: np.maximum(a, y), "any"),
    "clip": ("clip({a}, -0.5, 0.5)", lambda a, y: np.minimum(np.maximum(a, -0.5), 0.5), "any"),
}


def lower_cases() -> list[RunCase]:
    """Regressions of the CPU lowering (issue 27).

    Every named math function of the language (math_functions(): the table
    of include/ein/Shape/Elementwise.def) on f64, f32, f16 and bf16, fused and with
    --no-fusion, in two chains: a contraction's epilogue
    `fn(einsum(x, w) + b)` (the kernel applies it to vectors of the result:
    f64 tanh, erf, gelu there did not compile, libm's lanes left
    vector.extract behind) and an elementwise chain `fn(u * 0.5 + v)`. The
    reference rounds to the dtype after each op (the einsum once), as einc
    does; erf is math.erf. Then ein-fuse-rows crashes: an op of another
    element type after a row reduction, reductions over an empty axis (or
    rows of length 0) meeting a wider tensor; and the einsum whose grouped
    axes crashed ein-tile-contractions (a tile's view with a size-1 axis)."""
    rng = np.random.default_rng(62_000)
    cases: list[RunCase] = []
    m, k, n = 5, 3, 11

    def exact_input(shape, dtype, choices):
        """Values drawn from `choices` (exact in every float dtype), as the
        dtype's file (bf16 as f32, which einc rounds exactly)."""
        v = rng.choice(np.asarray(choices, dtype=np.float64), size=shape)
        file_dtype = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32}[dtype]
        return v.astype(file_dtype), v

    frac = [s * (i + f) for i in range(4) for f in (0.25, 0.5, 0.75) for s in (-1, 1)]
    functions = math_functions()
    missing = [name for name, _ in functions if name not in MATH_REFERENCE]
    if missing:
        raise RuntimeError(f"math functions without a reference in run_corpus.py: {missing}")
    for name, _arity in functions:
        source, ref_fn, domain = MATH_REFERENCE[name]
        for dt in FLOATS:
            if domain == "exact":
                (fx, x), (fw, w) = exact_input((m, k), dt, frac), exact_input((k, n), dt, [-1.0, 0.0, 1.0])
                (fb, b), (fu, u), (fv, v) = (exact_input(s, dt, frac) for s in ((n,), (m, n), (n,)))
            else:
                dom = "pos" if domain == "pos" else "any"
                (fx, x), (fw, w), (fb, b), (fu, u), (fv, v) = (
                    make_input(rng, s, dt, dom) for s in ((m, k), (k, n), (n,), (m, n), (n,)))
            fy, y = make_input(rng, (n,), dt)
            with np.errstate(all="ignore"):
                a0 = quantize(quantize(x @ w, dt) + b, dt)
                a1 = quantize(quantize(u * 0.5, dt) + v, dt)
                r0, r1 = quantize(ref_fn(a0, y), dt), quantize(ref_fn(a1, y), dt)
            uses_y = re.search(r"\by\b", source) is not None
            params = [("x", tstr(dt, ["m", "k"])), ("w", tstr(dt, ["k", "n"])), ("b", tstr(dt, ["n"])),
                      ("u", tstr(dt, ["m", "n"])), ("v", tstr(dt, ["n"]))] + ([("y", tstr(dt, ["n"]))] if uses_y else [])
            inputs = [("x", fx), ("w", fw), ("b", fb), ("u", fu), ("v", fv)] + ([("y", fy)] if uses_y else [])
            lines = ["r0 = " + source.format(a='einsum(x, w, "m k, k n -> m n") + b'),
                     "r1 = " + source.format(a="u * 0.5 + v"), "return r0, r1"]
            exact = domain == "exact"
            for fused in (True, False):
                mode = "fused" if fused else "unfused"
                cases.append(RunCase(
                    f"gen-lower-math-{name}-{dt}-{mode}", "generated",
                    f"{name} on {dt} after a contraction and in an elementwise chain ({mode})",
                    emit_function("f", params, [tstr(dt, ["m", "n"])] * 2, lines), inputs=inputs,
                    outs=[Out(dt, r0, exact, k), Out(dt, r1, exact)],
                    extra_args=[] if fused else ["--no-fusion"]))

    def add(name, desc, params, rtypes, lines, inputs, outs):
        cases.append(RunCase(f"gen-lower-{name}", "generated", desc, emit_function("f", params, rtypes, lines),
                             inputs=inputs, outs=outs))

    # ein-fuse-rows: the op after the row reduction changes the element type.
    for dt in ("f32", "f64", "f16", "bf16"):
        fx, x = make_input(rng, (19, 7), dt)
        add(f"fuse-rows-astype-compare-{dt}", f"astype(x < row max, f32) on {dt} (ein-fuse-rows)",
            [("x", tstr(dt, ["a", "b"]))], [tstr("f32", ["a", "b"])],
            ['mx = reduce(x, "i j -> i", "max")', "return astype(x < mx, f32)"], [("x", fx)],
            [Out("f32", (x < x.max(axis=1, keepdims=True)).astype(np.float64), True)])
    for dt in ("bf16", "f16"):
        fx, x = make_input(rng, (19, 7), dt)
        add(f"fuse-rows-minus-max-{dt}", f"x - row max on {dt} (ein-fuse-rows)",
            [("x", tstr(dt, ["a", "b"]))], [tstr(dt, ["a", "b"])],
            ['mx = reduce(x, "i j -> i", "max")', "return x - mx"], [("x", fx)],
            [Out(dt, quantize(x - x.max(axis=1, keepdims=True), dt))])
    # ein-fuse-rows: a reduction over an empty axis meets a wider tensor;
    # rows of length 0.
    for dt, kind, identity in (("f64", "sum", 0.0), ("f32", "prod", 1.0), ("f64", "mean", np.nan)):
        fx, _ = empty_input(rng, (3, 0), dt)
        fz, z = make_input(rng, (3, 5), dt)
        add(f"fuse-rows-empty-axis-{kind}-{dt}", f"{kind} over an empty axis minus a wider tensor (ein-fuse-rows)",
            [("x", tstr(dt, ["c", "n"])), ("z", tstr(dt, ["c", "d"]))], [tstr(dt, ["c", "d"])],
            [f'v1 = reduce(x, "p q -> p", "{kind}")', "return v1 - z"], [("x", fx), ("z", fz)],
            [Out(dt, quantize(identity - z, dt), True)])
    fx, _ = empty_input(rng, (20, 0), "f32")
    add("fuse-rows-empty-rows", "x - row sum with rows of length 0 (ein-fuse-rows)",
        [("x", tstr("f32", ["r", "t"]))], [tstr("f32", ["r", "t"])],
        ['return x - reduce(x, "r t -> r", "sum")'], [("x", fx)], [Out("f32", np.zeros((20, 0)), True)])
    # ein-tile-contractions: grouping a tile's view whose size-1 axis has a
    # stride off the chain (found by the lowering fuzzer).
    shapes = {"x0": (3, 4, 3, 4), "x1": (3, 2, 4, 4), "x2": (4, 2, 3, 2), "x3": (3, 2, 2, 3, 4, 2), "x4": (4, 2, 3, 2)}
    files, values = {}, {}
    for p, shape in shapes.items():
        files[p], values[p] = make_input(rng, shape, "f32")
    pattern = "j b j e, g i h b, h f a cα, g i f a b c, h f a c -> e"
    ref = np.einsum("jbje,gihb,hfaz,gifabc,hfac->e", *(values[p] for p in shapes))
    add("group-axes-unit-stride", "five-operand einsum with a size-1 tile axis (ein-tile-contractions)",
        [(p, tstr("f32", s)) for p, s in shapes.items()], [tstr("f32", [4])],
        [f'return einsum({", ".join(shapes)}, "{pattern}")'], [(p, files[p]) for p in shapes],
        [Out("f32", ref, False, 3 * 4 * 3 * 2 * 4 * 2 * 3 * 2 * 2)])
    return cases


def generated_cases() -> list[RunCase]:
    cases: list[RunCase] = []
    plan = [("rearrange", 70), ("reduce", 70), ("repeat", 45)]
    for op, count in plan:
        for k in range(count):
            rng = np.random.default_rng(10_000 + 1000 * len(op) + k)
            c = gen_pattern_case(rng, op, k)
            if c is not None:
                cases.append(c)
    for k in range(120):
        cases.append(gen_elementwise_case(np.random.default_rng(20_000 + k), k))
    for k in range(40):
        cases.append(gen_elementwise_case(np.random.default_rng(21_000 + k), k, n_results=int(2 + k % 2)))
    idx = 0
    for n_ops, count in ((1, 10), (2, 20), (3, 25), (4, 20), (5, 15)):
        for _ in range(count):
            cases.append(gen_einsum_case(np.random.default_rng(30_000 + idx), idx, n_ops))
            idx += 1
    for k in range(36):
        cases.append(gen_template_case(np.random.default_rng(40_000 + k), k))
    for k in range(20):
        cases.append(gen_pack_case(np.random.default_rng(41_000 + k), k))
    for k in range(24):
        cases.append(gen_special_case(np.random.default_rng(42_000 + k), k))
    for k in range(20):
        cases.append(gen_large_case(np.random.default_rng(43_000 + k), k))
    for k in range(9):
        cases.append(gen_wide_int_case(np.random.default_rng(44_000 + k), k))
    for k in range(8):
        cases.append(gen_int_division_case(np.random.default_rng(44_500 + k), k))
    for k in range(15):
        cases.append(gen_blocked_contraction_case(np.random.default_rng(45_000 + k), k))
    for k in range(28):
        cases.append(gen_gemm_edge_case(np.random.default_rng(45_500 + k), k))
    # bf16 in every layout (the vdpbf16ps kernel where the host has it);
    # 15-19 are the fp8 ones.
    for k in range(40, 45):
        cases.append(gen_blocked_contraction_case(np.random.default_rng(45_000 + k), k))
    for k in range(24):
        cases.append(gen_outer_reduce_case(np.random.default_rng(46_000 + k), k))
    for k in range(54):
        cases.append(gen_model_case(np.random.default_rng(47_000 + k), k))
    for k in range(24):
        cases.append(gen_take_case(np.random.default_rng(48_000 + k), k))
    for k in range(7):
        cases.append(gen_slice_case(np.random.default_rng(48_500 + k), k))
    for k in range(12):
        cases.append(gen_take_grad_case(np.random.default_rng(48_700 + k), k))
    for k in range(9):  # every dtype, both kinds of bad id
        cases.append(gen_take_along_case(np.random.default_rng(48_800 + k), k))
    for k in range(4):
        cases.append(gen_take_along_grad_case(np.random.default_rng(48_900 + k), k))
    for k in range(6):
        cases.append(gen_dropout_case(np.random.default_rng(49_000 + k), k))
    for k in range(2):
        cases.append(gen_dropout_grad_case(np.random.default_rng(49_100 + k), k))
    cases += empty_cases()
    cases += fp8_generated_cases()
    cases += edge_cases()
    cases += merged_output_cases()
    cases += lower_cases()
    cases += sema_cases()
    cases += var_cases()
    cases += kept_one_row_cases()
    cases += i8_cases()
    return cases


def wrap_int(v, dtype: str) -> np.ndarray:
    """Exact integers (int64) wrapped to `dtype`, two's complement."""
    lo, hi = INT_RANGE[dtype]
    return (np.asarray(v, dtype=np.int64) - lo) % (hi - lo + 1) + lo


def i8_extremes(rng, shape) -> np.ndarray:
    """i8 values, half of them at or next to -128 and 127: a sum of their
    products overflows any accumulator narrower than i32."""
    special = np.array([-128, -127, 127, 126], dtype=np.int64)
    v = np.where(rng.random(shape) < 0.5, rng.choice(special, shape),
                 rng.integers(-128, 128, shape))
    return v.astype(np.int8)


def i8_cases() -> list[RunCase]:
    """The i8 dtype: wrapping elementwise arithmetic, reductions (sum with
    acc=i32), astype to and from every kind, and einsum acc=i32 (the int8
    GEMM: exact i32 sums of the widened products, against numpy's int64
    matmul) at the contraction tiles' edges, odd k included."""
    cases: list[RunCase] = []
    rng = np.random.default_rng(49_500)
    x, y = i8_extremes(rng, (5, 7)), i8_extremes(rng, (7,))
    y[0] = 0  # x / 0 is 0
    X, Y = x.astype(np.int64), y.astype(np.int64)
    T, V = tstr("i8", ["n", "m"]), tstr("i8", ["m"])
    src = emit_function("f", [("x", T), ("y", V)], [T] * 5,
                        ["return x + y, x * y, -x, relu(x) - y, x / y"])
    cases.append(RunCase("gen-i8#000", "generated", "i8 elementwise, wrapping", src,
                         inputs=[("x", x), ("y", y)],
                         outs=[Out("i8", wrap_int(X + Y, "i8"), True), Out("i8", wrap_int(X * Y, "i8"), True),
                               Out("i8", wrap_int(-X, "i8"), True),
                               Out("i8", wrap_int(np.maximum(X, 0) - Y, "i8"), True),
                               Out("i8", ein_int_div(X, Y, "i8"), True)]))
    x = i8_extremes(rng, (6, 65))
    X = x.astype(np.int64)
    src = emit_function("f", [("x", tstr("i8", ["n", "k"]))],
                        [tstr("i32", ["n"]), tstr("i8", ["k"]), tstr("i8", ["n"]), tstr("i8", ["n"])],
                        ['return reduce(x, "n k -> n", "sum", acc=i32), reduce(x, "n k -> k", "max"), '
                         'reduce(x, "n k -> n", "min"), reduce(x, "n k -> n", "sum")'])
    cases.append(RunCase("gen-i8#001", "generated", "i8 reductions: sum acc=i32, max, min, wrapping sum", src,
                         inputs=[("x", x)],
                         outs=[Out("i32", X.sum(axis=1), True), Out("i8", X.max(axis=0), True),
                               Out("i8", X.min(axis=1), True), Out("i8", wrap_int(X.sum(axis=1), "i8"), True)]))
    x = np.array([-128, -1, 0, 1, 2, 127, -100, 55], dtype=np.int8)
    f = np.array([-300.0, -128.9, -0.75, 0.5, 3.99, 127.5, 1e9, np.nan], dtype=np.float32)
    w = np.array([-129, 128, 255, 256, -2**31, 2**31 - 1, 7, -7], dtype=np.int32)
    b = np.array([True, False, True, True, False, False, True, False])
    X = x.astype(np.int64)
    N = tstr("i8", ["n"])
    src = emit_function("f", [("x", N), ("f", tstr("f32", ["n"])), ("w", tstr("i32", ["n"])), ("b", tstr("bool", ["n"]))],
                        [tstr("f32", ["n"]), tstr("i32", ["n"]), tstr("i64", ["n"]), tstr("bf16", ["n"]),
                         tstr("f16", ["n"]), N, N, N, tstr("bool", ["n"])],
                        ["return astype(x, f32), astype(x, i32), astype(x, i64), astype(x, bf16), astype(x, f16), "
                         "astype(f, i8), astype(w, i8), astype(b, i8), astype(x, bool)"])
    # float -> i8 truncates toward zero and saturates (NaN gives 0), as to i32.
    sat = np.where(np.isnan(f), 0, np.clip(np.trunc(np.nan_to_num(f.astype(np.float64))), -128, 127))
    cases.append(RunCase("gen-i8#002", "generated", "astype to and from i8", src,
                         inputs=[("x", x), ("f", f), ("w", w), ("b", b)],
                         outs=[Out("f32", X, True), Out("i32", X, True), Out("i64", X, True),
                               Out("bf16", X, True), Out("f16", X, True), Out("i8", sat.astype(np.int64), True),
                               Out("i8", wrap_int(w, "i8"), True), Out("i8", b.astype(np.int64), True),
                               Out("bool", x != 0, True)]))
    # einsum acc=i32: a matmul at the tile edges, a batched one, and
    # transposed operands.
    shapes = [(1, 1, 1), (5, 7, 17), (7, 5, 65), (17, 64, 7), (64, 65, 64), (65, 17, 5), (64, 64, 65), (1, 65, 64)]
    for m, n, k in shapes:
        a, bm = i8_extremes(rng, (m, k)), i8_extremes(rng, (k, n))
        src = emit_function("f", [("a", tstr("i8", ["m", "k"])), ("b", tstr("i8", ["k", "n"]))],
                            [tstr("i32", ["m", "n"])], ['return einsum(a, b, "m k, k n -> m n", acc=i32)'])
        cases.append(RunCase(f"gen-i8#{len(cases):03d}", "generated", f"i8 matmul acc=i32 m={m} n={n} k={k}", src,
                             inputs=[("a", a), ("b", bm)],
                             outs=[Out("i32", a.astype(np.int64) @ bm.astype(np.int64), True)]))
    a, bm = i8_extremes(rng, (3, 17, 33)), i8_extremes(rng, (3, 9, 33))
    src = emit_function("f", [("a", tstr("i8", ["g", "m", "k"])), ("b", tstr("i8", ["g", "n", "k"]))],
                        [tstr("i32", ["g", "n", "m"])], ['return einsum(a, b, "g m k, g n k -> g n m", acc=i32)'])
    cases.append(RunCase(f"gen-i8#{len(cases):03d}", "generated", "i8 batched einsum acc=i32, k contiguous", src,
                         inputs=[("a", a), ("b", bm)],
                         outs=[Out("i32", np.einsum("gmk,gnk->gnm", a.astype(np.int64), bm.astype(np.int64)), True)]))
    a, bm = i8_extremes(rng, (19, 6)), i8_extremes(rng, (23, 19))
    src = emit_function("f", [("a", tstr("i8", ["k", "m"])), ("b", tstr("i8", ["n", "k"]))],
                        [tstr("i32", ["m", "n"])], ['return einsum(a, b, "k m, n k -> m n", acc=i32)'])
    cases.append(RunCase(f"gen-i8#{len(cases):03d}", "generated", "i8 einsum acc=i32, transposed operands", src,
                         inputs=[("a", a), ("b", bm)],
                         outs=[Out("i32", a.astype(np.int64).T @ bm.astype(np.int64).T, True)]))
    return cases


def kept_one_row_cases() -> list[RunCase]:
    """Row reductions written with a kept `1` axis (`"b s d -> b s 1"`, as
    the examples write them), which ein-fuse-rows fuses like the plain form
    since issue 31: LayerNorm (mean and var), RMSNorm, a causal softmax
    masked by an arange-built mask and `where`, and causal attention, at the
    row tile's edges (rows not a multiple of 8 or of 64, a single row, an
    exact multiple), fused and with --no-fusion, against numpy in f64."""
    rng = np.random.default_rng(49_500)
    cases: list[RunCase] = []
    causal_lines = [
        'allowed = rearrange(arange(s), "t -> 1 1 1 t") <= rearrange(arange(s), "s -> 1 1 s 1")',
        "masked = where(allowed, scores, -1e9)",
        'p = exp(masked - reduce(masked, "b h s t -> b h s 1", "max"))',
    ]

    def causal_softmax_ref(sc):
        n = sc.shape[-1]
        masked = np.where(np.tril(np.ones((n, n), dtype=bool)), sc, -1e9)
        e = np.exp(masked - masked.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    for rows in (1, 8, 19):
        fx, x = make_input(rng, (2, rows, 24), "f32")
        fg, g = make_input(rng, (24,), "f32", "pos")
        fb, b = make_input(rng, (24,), "f32")
        mu = x.mean(axis=-1, keepdims=True)
        ln = (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * g + b
        rms = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * g
        fs, sc = make_input(rng, (2, 3, rows, rows), "f32")
        s_ln = ['mu = reduce(x, "b s d -> b s 1", "mean")', 'var = reduce(x, "b s d -> b s 1", "var")',
                "return (x - mu) * rsqrt(var + 0.00001) * g + beta"]
        s_rms = ['ms = reduce(x * x, "b s d -> b s 1", "mean")', "return x * rsqrt(ms + 0.000001) * g"]
        xs = [("x", tstr("f32", ["b", "s", "d"]))]
        for fused in (True, False):
            mode = "fused" if fused else "unfused"
            extra = [] if fused else ["--no-fusion"]
            cases.append(RunCase(
                f"gen-rows-layernorm-kept1-{rows}-{mode}", "generated", f"kept-1 layer norm, {rows} rows ({mode})",
                emit_function("f", xs + [("g", tstr("f32", ["d"])), ("beta", tstr("f32", ["d"]))],
                              [tstr("f32", ["b", "s", "d"])], s_ln),
                inputs=[("x", fx), ("g", fg), ("beta", fb)], outs=[Out("f32", ln, False, 24)], extra_args=extra))
            cases.append(RunCase(
                f"gen-rows-rmsnorm-kept1-{rows}-{mode}", "generated", f"kept-1 RMSNorm, {rows} rows ({mode})",
                emit_function("f", xs + [("g", tstr("f32", ["d"]))], [tstr("f32", ["b", "s", "d"])], s_rms),
                inputs=[("x", fx), ("g", fg)], outs=[Out("f32", rms, False, 24)], extra_args=extra))
            cases.append(RunCase(
                f"gen-rows-causal-softmax-{rows}-{mode}", "generated", f"kept-1 causal softmax, {rows} rows ({mode})",
                emit_function("f", [("scores", tstr("f32", ["b", "h", "s", "s"]))], [tstr("f32", ["b", "h", "s", "s"])],
                              causal_lines + ['return p / reduce(p, "b h s t -> b h s 1", "sum")']),
                inputs=[("scores", fs)], outs=[Out("f32", causal_softmax_ref(sc), False, rows)], extra_args=extra))
    # Causal attention: 64-row tiles of the fused head, whose keys past each
    # tile's last row ein-skip-masked-keys skips (rows 1, 7, 64, 65, 70 and
    # 200: one key, a partial tile, one exact tile, one row past it, a
    # bound below the keys), the mask also written `s >= t` and strict
    # (`t < s`: row 0 allows no key, its softmax uniform over all of them).
    forms = {
        "": causal_lines,
        "-swapped": ['allowed = rearrange(arange(s), "s -> 1 1 s 1") >= rearrange(arange(s), "t -> 1 1 1 t")']
        + causal_lines[1:],
        "-strict": [causal_lines[0].replace("<=", "<")] + causal_lines[1:],
    }
    for rows in (1, 7, 64, 65, 70, 200):
        (fq, q), (fk, k), (fv, v) = (make_input(rng, (1, 2, rows, 8), "f32") for _ in range(3))
        scores = np.einsum("bhse,bhte->bhst", q, k) / np.sqrt(8)
        for form, mask in forms.items():
            if form and rows not in (1, 65, 200):
                continue
            if form == "-strict":
                allowed = np.tril(np.ones((rows, rows), dtype=bool), -1)
                masked = np.where(allowed, scores, -1e9)
                e = np.exp(masked - masked.max(axis=-1, keepdims=True))
                p = e / e.sum(axis=-1, keepdims=True)
            else:
                p = causal_softmax_ref(scores)
            ref = np.einsum("bhst,bhte->bhse", p, v)
            qkv = [(n, tstr("f32", ["b", "h", "s", "e"])) for n in ("q", "k", "v")]
            lines = ['scores = einsum(q, k, "b h s e, b h t e -> b h s t") / sqrt(e)'] + mask + [
                'return einsum(p / reduce(p, "b h s t -> b h s 1", "sum"), v, "b h s t, b h t e -> b h s e")']
            for fused in (True, False) if not form else (True,):
                mode = "fused" if fused else "unfused"
                cases.append(RunCase(
                    f"gen-rows-causal-attention{form}-{rows}-{mode}", "generated",
                    f"kept-1 causal attention{form}, {rows} rows ({mode})",
                    emit_function("f", qkv, [tstr("f32", ["b", "h", "s", "e"])], lines),
                    inputs=[("q", fq), ("k", fk), ("v", fv)], outs=[Out("f32", ref, False, 16)],
                    extra_args=[] if fused else ["--no-fusion"]))
    return cases


def var_cases() -> list[RunCase]:
    """reduce(x, pattern, "var"): the population variance (numpy's np.var,
    ddof=0) over inner, outer and all axes, every float dtype, acc= (the
    accumulation and result dtype), an empty reduced axis (NaN, as np.var),
    and data far from zero, where the one-pass E[x^2] - E[x]^2 would lose
    every digit in f32 and the two-pass lowering must not."""
    rng = np.random.default_rng(49_000)
    cases: list[RunCase] = []
    plans = [
        ("f32", "a b -> a", (5, 7), None, "any"),
        ("f64", "a b c -> a c", (3, 4, 5), None, "any"),
        ("f32", "a b -> b", (33, 6), None, "any"),  # outer axis
        ("f64", "a b ->", (6, 5), None, "any"),
        ("bf16", "a b -> a", (4, 9), "f32", "any"),
        ("f16", "a b -> a", (3, 40), None, "pos"),
        ("bf16", "a b -> b", (20, 3), None, "any"),
        ("f32", "a (b c) -> a c", (2, 12), None, "any"),
        ("f32", "a b -> a", (3, 256), None, "offset"),  # far from zero
        ("f32", "a c -> c", (0, 4), None, "any"),  # empty: NaN
    ]
    for k, (dtype, pattern, shape, acc, domain) in enumerate(plans):
        if domain == "offset":
            v = 1.0e4 + rng.uniform(-1.0, 1.0, size=shape)
            f = v.astype(np.float32)
            vals = f.astype(np.float64)
        else:
            f, vals = make_input(rng, shape, dtype, domain)
        kw = {"c": 3} if "(b c)" in pattern else {}
        rdtype = acc or dtype
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's "Degrees of freedom <= 0"
            ref = einops.reduce(vals, pattern, np.var, **kw)
        n_red = max(1, int(np.prod(shape, dtype=np.int64)) // max(1, int(np.size(ref))))
        kws = "".join(f", {n}={v}" for n, v in kw.items())
        accs = f", acc={acc}" if acc else ""
        src = emit_function("f", [("x", tstr(dtype, [f"n{d}" for d in range(len(shape))]))],
                            [tstr(rdtype, ["_"] * np.ndim(ref))],
                            [f'return reduce(x, "{pattern}", "var"{kws}{accs})'])
        cases.append(RunCase(f"gen-var#{k:03d}", "generated",
                             f'{dtype} var {shape} "{pattern}"{kws}{accs} (np.var)', src,
                             inputs=[("x", f)], outs=[Out(rdtype, quantize(ref, rdtype), False, n_red)]))
    return cases


def gen_take_case(rng, idx: int) -> RunCase:
    """take(table, ids, "v") (docs/language.md §6): every table dtype
    (bool included), i32 and i64 ids of rank 0 to 2, the axis anywhere in a
    table of rank 1 to 3; the reference is np.take. A quarter of the cases
    have an id out of range (too large or negative, i32 and i64 ids): exit
    2 naming the bound."""
    dtypes = DTYPES + ("bool",)
    dtype = dtypes[idx % len(dtypes)]
    id_dtype = "i32" if idx % 2 else "i64"
    rank = int(rng.integers(1, 4))
    axis = int(rng.integers(0, rank))
    v = int(rng.integers(1, 7))
    dims = [f"a{k}" for k in range(rank - 1)]
    dims.insert(axis, "v")
    shape = [v if d == "v" else int(rng.integers(1, 4)) for d in dims]
    id_dims = [f"i{k}" for k in range(int(rng.integers(0, 3)))]
    id_shape = [int(rng.integers(1, 4)) for _ in id_dims]
    content, table = make_input(rng, shape, dtype)
    npd = np.int32 if id_dtype == "i32" else np.int64
    ids = rng.integers(0, v, size=id_shape).astype(npd)
    bad = idx % 8 in (3, 6)
    if bad:
        flat = ids.reshape(-1)
        flat[int(rng.integers(0, flat.size))] = v if (idx // 8) % 2 == 0 else -1
    out_dims = dims[:axis] + id_dims + dims[axis + 1:]
    src = emit_function("f", [("table", tstr(dtype, dims)), ("ids", tstr(id_dtype, id_dims))],
                        [tstr(dtype, out_dims)], ['return take(table, ids, "v")'])
    desc = f"{dtype} table {tuple(shape)} axis {axis}, {id_dtype} ids {tuple(id_shape)}"
    if bad:
        return RunCase(f"gen-take#{idx:03d}", "generated", desc + ", an id out of range", src,
                       inputs=[("table", content), ("ids", ids)], expect_rc=2, n_out=1,
                       stderr_has="out of range [0, v")
    ref = np.take(np.asarray(table), ids.astype(np.int64), axis=axis)
    return RunCase(f"gen-take#{idx:03d}", "generated", desc, src,
                   inputs=[("table", content), ("ids", ids)], outs=[Out(dtype, ref, True)])


def gen_take_grad_case(rng, idx: int) -> RunCase:
    """grad through take (docs/autodiff.md): the table's gradient of
    sum(take(table, ids, "v") * r) is a scatter-add of r at the ids, whose
    reference is np.add.at. f32 and f64 tables (the dtypes every target
    adds), i32 and i64 ids of rank 0 to 2 drawn from a few rows (so they
    repeat), the axis anywhere in a table of rank 1 to 3."""
    dtype = ("f32", "f64")[idx % 2]
    id_dtype = "i32" if (idx // 2) % 2 else "i64"
    rank = int(rng.integers(1, 4))
    axis = int(rng.integers(0, rank))
    v = int(rng.integers(1, 7))
    dims = [f"a{k}" for k in range(rank - 1)]
    dims.insert(axis, "v")
    shape = [v if d == "v" else int(rng.integers(1, 4)) for d in dims]
    id_dims = [f"i{k}" for k in range(int(rng.integers(0, 3)))]
    id_shape = [int(rng.integers(1, 5)) for _ in id_dims]
    content, table = make_input(rng, shape, dtype)
    npd = np.int32 if id_dtype == "i32" else np.int64
    ids = rng.integers(0, v, size=id_shape).astype(npd)
    out_dims = dims[:axis] + id_dims + dims[axis + 1:]
    out_shape = shape[:axis] + id_shape + shape[axis + 1:]
    r_content, r = make_input(rng, out_shape, dtype)
    e = 'take(table, ids, "v") * r'
    loss = f'reduce({e}, "{" ".join(out_dims)} ->", "sum")' if out_dims else e
    src = emit_function("f", [("table", tstr(dtype, dims)), ("ids", tstr(id_dtype, id_dims)),
                              ("r", tstr(dtype, out_dims))],
                        [tstr(dtype, dims)], [f"l = {loss}", "return grad(l, wrt=[table])"])
    ref = np.zeros(shape)
    np.add.at(ref, (slice(None),) * axis + (ids.astype(np.int64),), np.asarray(r, np.float64))
    desc = (f"grad of take: {dtype} table {tuple(shape)} axis {axis}, "
            f"{id_dtype} ids {tuple(id_shape)}")
    return RunCase(f"gen-take-grad#{idx:03d}", "generated", desc, src,
                   inputs=[("table", content), ("ids", ids), ("r", r_content)],
                   outs=[Out(dtype, ref, False, max(1, int(ids.size)))])


def _take_along_plan(rng):
    """An input of rank 1 to 3 with the axis "v" anywhere, and ids of its
    shape without the axis."""
    rank = int(rng.integers(1, 4))
    axis = int(rng.integers(0, rank))
    v = int(rng.integers(1, 7))
    dims = [f"a{k}" for k in range(rank - 1)]
    dims.insert(axis, "v")
    shape = [v if d == "v" else int(rng.integers(1, 4)) for d in dims]
    id_dims = [d for d in dims if d != "v"]
    id_shape = [n for d, n in zip(dims, shape) if d != "v"]
    return axis, v, dims, shape, id_dims, id_shape


def gen_take_along_case(rng, idx: int) -> RunCase:
    """take_along(x, ids, "v") (docs/language.md §6): every input dtype
    (bool included), i32 and i64 ids of x's shape without the axis, the axis
    anywhere in an input of rank 1 to 3; the reference is
    np.take_along_axis. A quarter of the cases have an id out of range (too
    large or negative): exit 2 naming the bound."""
    dtypes = DTYPES + ("bool",)
    dtype = dtypes[idx % len(dtypes)]
    id_dtype = "i32" if idx % 2 else "i64"
    axis, v, dims, shape, id_dims, id_shape = _take_along_plan(rng)
    content, x = make_input(rng, shape, dtype)
    npd = np.int32 if id_dtype == "i32" else np.int64
    ids = rng.integers(0, v, size=id_shape).astype(npd)
    bad = idx % 4 == 3
    if bad:
        flat = ids.reshape(-1)
        flat[int(rng.integers(0, flat.size))] = v if (idx // 4) % 2 == 0 else -1
    src = emit_function("f", [("x", tstr(dtype, dims)), ("ids", tstr(id_dtype, id_dims))],
                        [tstr(dtype, id_dims)], ['return take_along(x, ids, "v")'])
    desc = f"take_along: {dtype} x {tuple(shape)} axis {axis}, {id_dtype} ids {tuple(id_shape)}"
    if bad:
        return RunCase(f"gen-take-along#{idx:03d}", "generated", desc + ", an id out of range", src,
                       inputs=[("x", content), ("ids", ids)], expect_rc=2, n_out=1,
                       stderr_has="out of range [0, v")
    where = np.expand_dims(ids.astype(np.int64), axis)
    ref = np.squeeze(np.take_along_axis(np.asarray(x), where, axis=axis), axis)
    return RunCase(f"gen-take-along#{idx:03d}", "generated", desc, src,
                   inputs=[("x", content), ("ids", ids)], outs=[Out(dtype, ref, True)])


def gen_take_along_grad_case(rng, idx: int) -> RunCase:
    """grad through take_along (docs/autodiff.md): the gradient of
    sum(take_along(x, ids, "v") * r) is zeros with r at the ids along the
    axis, whose reference is np.put_along_axis. f32 and f64 inputs, i32 and
    i64 ids, the axis anywhere in an input of rank 1 to 3."""
    dtype = ("f32", "f64")[idx % 2]
    id_dtype = "i32" if (idx // 2) % 2 else "i64"
    axis, v, dims, shape, id_dims, id_shape = _take_along_plan(rng)
    content, _ = make_input(rng, shape, dtype)
    npd = np.int32 if id_dtype == "i32" else np.int64
    ids = rng.integers(0, v, size=id_shape).astype(npd)
    r_content, r = make_input(rng, id_shape, dtype)
    e = 'take_along(x, ids, "v") * r'
    loss = f'reduce({e}, "{" ".join(id_dims)} ->", "sum")' if id_dims else e
    src = emit_function("f", [("x", tstr(dtype, dims)), ("ids", tstr(id_dtype, id_dims)),
                              ("r", tstr(dtype, id_dims))],
                        [tstr(dtype, dims)], [f"l = {loss}", "return grad(l, wrt=[x])"])
    ref = np.zeros(shape)
    np.put_along_axis(ref, np.expand_dims(ids.astype(np.int64), axis),
                      np.expand_dims(np.asarray(r, np.float64), axis), axis=axis)
    desc = (f"grad of take_along: {dtype} x {tuple(shape)} axis {axis}, "
            f"{id_dtype} ids {tuple(id_shape)}")
    return RunCase(f"gen-take-along-grad#{idx:03d}", "generated", desc, src,
                   inputs=[("x", content), ("ids", ids), ("r", r_content)],
                   outs=[Out(dtype, ref, True)])


def _dropout_reference():
    """test/einc/Inputs/dropout/philox.py: Philox4x64-10 in numpy, checked
    against Random123's known answers and np.random.Philox once."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "einc", "Inputs", "dropout")
    if path not in sys.path:
        sys.path.insert(0, path)
    import philox
    if not getattr(philox, "checked", False):
        philox.self_check()
        philox.checked = True
    return philox


def gen_dropout_case(rng, idx: int) -> RunCase:
    """dropout(x, p, key) (docs/language.md §6): every float dtype, rank 0
    to 3, p in [0, 0.9], any i64 key; the reference is the Philox mask of
    philox.py and x * (1 / (1 - p)) rounded as the language says (f64 in
    f64, the others in f32, rounded once). Exact: the same bits."""
    philox = _dropout_reference()
    dtype = FLOATS[idx % len(FLOATS)]
    rank = (idx + idx // 4) % 4  # every dtype meets several ranks
    dims = [f"a{k}" for k in range(rank)]
    shape = [int(rng.integers(1, 6)) for _ in dims]
    content, x = make_input(rng, shape, dtype)
    p = float(np.round(rng.uniform(0, 0.9), 3)) if idx % 6 else 0.0
    key = int(rng.integers(-2**63, 2**63 - 1, dtype=np.int64))
    keep = philox.keep_mask(int(np.prod(shape, dtype=np.int64)), p, key).reshape(shape)
    if dtype == "f64":
        y = np.asarray(x, np.float64) * (1.0 / (1.0 - p))
    else:
        y = (np.asarray(x, np.float32) * np.float32(1.0 / (1.0 - p))).astype(np.float64)
    ref = np.where(keep, quantize(y, dtype), 0.0)
    src = emit_function("f", [("x", tstr(dtype, dims)), ("key", 'i64[""]')],
                        [tstr(dtype, dims)], [f"return dropout(x, {p!r}, key)"])
    desc = f"dropout: {dtype} x {tuple(shape)}, p {p}, key {key}"
    return RunCase(f"gen-dropout#{idx:03d}", "generated", desc, src,
                   inputs=[("x", content), ("key", np.array(key, np.int64))],
                   outs=[Out(dtype, ref, True)])


def gen_dropout_grad_case(rng, idx: int) -> RunCase:
    """grad through dropout (docs/autodiff.md): the gradient of
    sum(dropout(x, p, key) * r) is r * mask / (1 - p), the mask from
    philox.py; f32 and f64."""
    philox = _dropout_reference()
    dtype = ("f32", "f64")[idx % 2]
    dims = ["a", "b"][: 1 + idx % 2]
    shape = [int(rng.integers(1, 7)) for _ in dims]
    content, _ = make_input(rng, shape, dtype)
    r_content, r = make_input(rng, shape, dtype)
    p = float(np.round(rng.uniform(0.05, 0.8), 3))
    key = int(rng.integers(0, 2**40))
    keep = philox.keep_mask(int(np.prod(shape)), p, key).reshape(shape)
    ref = np.where(keep, np.asarray(r, np.float64) / (1.0 - p), 0.0)
    loss = f'reduce(dropout(x, {p!r}, key) * r, "{" ".join(dims)} ->", "sum")'
    src = emit_function("f", [("x", tstr(dtype, dims)), ("r", tstr(dtype, dims)),
                              ("key", 'i64[""]')],
                        [tstr(dtype, dims)], [f"l = {loss}", "return grad(l, wrt=[x])"])
    desc = f"grad of dropout: {dtype} x {tuple(shape)}, p {p}"
    return RunCase(f"gen-dropout-grad#{idx:03d}", "generated", desc, src,
                   inputs=[("x", content), ("r", r_content), ("key", np.array(key, np.int64))],
                   outs=[Out(dtype, ref)])


def gen_model_case(rng, idx: int) -> RunCase:
    """The functions of the language for whole models (docs/language.md §6):
    activations, maths, min/max/clip, floor division and modulo,
    comparisons giving bool, where, logic on bool, any/all, bool parameters
    and results, dims used as values, arange and masks built from it, and
    unpack with written packed shapes. References in numpy from the values
    einc sees (f16/bf16 compute in f32 and round once)."""
    kind = idx % 7 if idx < 42 else 7
    n, m = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    dims = ["n", "m"]
    T = lambda d: tstr(d, dims)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    with np.errstate(all="ignore"):
        if kind == 0:  # activations
            dtype = FLOATS[(idx // 7) % 4]
            f, x = make_input(rng, (n, m), dtype)
            x = x * 4  # [-4, 4]: the tails of sigmoid and softplus
            f = f * 4 if dtype != "bf16" or f.dtype != np.uint16 else f
            if dtype == "bf16" and f.dtype == np.uint16:
                f, x = make_input(rng, (n, m), "f32")
                f, x = f * 4, quantize(x * 4, "bf16")
            else:
                x = quantize(np.asarray(f, dtype=np.float64), dtype)
            sig = 1 / (1 + np.exp(-x))
            refs = [sig, x * sig, 0.5 * x * (1 + erf(x / np.sqrt(2))),
                    0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
                    np.logaddexp(0, x)]
            src = emit_function("f", [("x", T(dtype))], [T(dtype)] * 5,
                                ['return sigmoid(x), silu(x), gelu(x), gelu(x, approximate="tanh"), softplus(x)'])
            outs = [Out(dtype, quantize(r, dtype), False, 4) for r in refs]
            return RunCase(f"gen-model#{idx:03d}", "generated", f"{dtype} activations {(n, m)}", src,
                           inputs=[("x", f)], outs=outs)
        if kind == 1:  # maths, exact where rounding is exact
            dtype = FLOATS[(idx // 7) % 4]
            f, x = make_input(rng, (n, m), dtype, "frac")
            refs = [(np.sin(x) + np.cos(x), False), (erf(x), False), (np.abs(x), True),
                    (np.sign(x), True), (np.square(x), dtype in ("f64", "f32")), (np.floor(x), True),
                    (np.ceil(x), True), (np.round(x), True)]
            src = emit_function("f", [("x", T(dtype))], [T(dtype)] * len(refs),
                                ["return sin(x) + cos(x), erf(x), abs(x), sign(x), square(x), floor(x), ceil(x), round(x)"])
            outs = [Out(dtype, quantize(r, dtype), e, 2) for r, e in refs]
            return RunCase(f"gen-model#{idx:03d}", "generated", f"{dtype} maths {(n, m)}", src,
                           inputs=[("x", f)], outs=outs)
        if kind == 2:  # min, max, clip, broadcasting by name
            dtype = DTYPES[(idx // 7) % len(DTYPES)]
            f, x = make_input(rng, (n, m), dtype)
            g, y = make_input(rng, (m,), dtype)
            src = emit_function("f", [("x", T(dtype)), ("y", tstr(dtype, ["m"]))], [T(dtype)] * 3,
                                ["return max(x, y), min(y, x), clip(x, -1, y)"])
            outs = [Out(dtype, np.maximum(x, y), True), Out(dtype, np.minimum(y, x), True),
                    Out(dtype, np.minimum(np.maximum(x, -1), y), True)]
            return RunCase(f"gen-model#{idx:03d}", "generated", f"{dtype} min max clip {(n, m)}", src,
                           inputs=[("x", f), ("y", g)], outs=outs)
        if kind == 3:  # floor division and modulo
            dtype = ("i32", "i64", "f64", "f32")[(idx // 7) % 4]
            if dtype in INTS:
                npd = np.int32 if dtype == "i32" else np.int64
                a = rng.integers(-9, 10, size=(n, m)).astype(npd)
                b = rng.integers(-3, 4, size=(n, m)).astype(npd)  # 0 included: numpy gives 0
                fd, md = np.floor_divide(a, b), np.mod(a, b)
                fd[b == 0] = 0
                md[b == 0] = 0
                outs = [Out(dtype, fd.astype(np.int64), True), Out(dtype, md.astype(np.int64), True)]
            else:
                npd = np.float64 if dtype == "f64" else np.float32
                a = rng.uniform(-5, 5, size=(n, m)).astype(npd)
                b = rng.choice(np.array([-2.5, -1, -0.3, 0.1, 0.7, 2], dtype=npd), size=(n, m))
                outs = [Out(dtype, np.floor_divide(a, b).astype(np.float64), False, 4),
                        Out(dtype, np.mod(a, b).astype(np.float64), False, 4)]
            src = emit_function("f", [("x", T(dtype)), ("y", T(dtype))], [T(dtype)] * 2, ["return x // y, x % y"])
            return RunCase(f"gen-model#{idx:03d}", "generated", f"{dtype} // and % {(n, m)}", src,
                           inputs=[("x", a), ("y", b)], outs=outs)
        if kind == 4:  # comparisons and where
            dtype = DTYPES[(idx // 7) % len(DTYPES)]
            if dtype in INTS:
                f, x = make_input(rng, (n, m), dtype)
                g, y = make_input(rng, (m,), dtype)
            else:  # few distinct values, so that == and != see equal pairs
                x = quantize(rng.integers(-2, 3, size=(n, m)) / 2, dtype)
                y = quantize(rng.integers(-2, 3, size=(m,)) / 2, dtype)
                f, g = x.astype(np.float32), y.astype(np.float32)
                if dtype == "f64":
                    f, g = x, y
                elif dtype == "f16":
                    f, g = x.astype(np.float16), y.astype(np.float16)
            src = emit_function("f", [("x", T(dtype)), ("y", tstr(dtype, ["m"]))],
                                [T("bool")] * 4 + [T(dtype)],
                                ["return x < y, x >= y, x == y, x != y, where(x > y, x, y * 2)"])
            outs = [Out("bool", x < y), Out("bool", x >= y), Out("bool", x == y), Out("bool", x != y),
                    Out(dtype, np.where(x > y, x, y * 2), True)]
            return RunCase(f"gen-model#{idx:03d}", "generated", f"{dtype} comparisons and where {(n, m)}", src,
                           inputs=[("x", f), ("y", g)], outs=outs)
        if kind == 5:  # bool parameters, logic, any/all, astype to and from bool
            dtype = DTYPES[(idx // 7) % len(DTYPES)]
            a = rng.random((n, m)) < 0.5
            b = rng.random((n, m)) < 0.5
            f, x = make_input(rng, (n, m), dtype, "frac" if dtype in FLOATS else "any")
            src = emit_function("f", [("a", T("bool")), ("b", T("bool")), ("x", T(dtype))],
                                [T("bool"), T("bool"), tstr("bool", ["n"]), tstr("bool", ["m"]), T(dtype), T("bool")],
                                ['return a & b, a | ~b, reduce(a, "n m -> n", "any"), reduce(b, "n m -> m", "all"), '
                                 'astype(a, ' + dtype + ') * x, astype(x, bool)'])
            outs = [Out("bool", a & b), Out("bool", a | ~b), Out("bool", a.any(axis=1)), Out("bool", b.all(axis=0)),
                    Out(dtype, quantize(a.astype(np.float64) * x, dtype), True), Out("bool", x != 0)]
            return RunCase(f"gen-model#{idx:03d}", "generated", f"bool logic, any/all, astype with {dtype} {(n, m)}", src,
                           inputs=[("a", a), ("b", b), ("x", f)], outs=outs)
        if kind == 7:  # arange, a causal mask from it, unpack with written shapes
            dtype = ("f64", "f32", "f16", "bf16", "i32", "i64")[(idx - 42) % 6]
            f, x = make_input(rng, (n, 2 * m), dtype)
            src = emit_function("f", [("x", tstr(dtype, ["n", "2*m"]))],
                                [tstr(dtype, ["n"]), 'i64["m+1"]', T("bool"), T(dtype), tstr(dtype, ["n", "m-1"]),
                                 T(dtype)],
                                ['allowed = rearrange(arange(m), "m -> 1 m") <= rearrange(arange(n), "n -> n 1")',
                                 'a, b, c = unpack(x, [[m], [1], [m - 1]], "n *")',
                                 f'return arange(n, dtype={dtype}), arange(m + 1), allowed, where(allowed, a, b), c, '
                                 'a * where(allowed, 1, 2)'])
            allowed = np.arange(m)[None, :] <= np.arange(n)[:, None]
            a, b, c = x[:, :m], x[:, m:m + 1], x[:, m + 1:]
            outs = [Out(dtype, np.arange(n, dtype=np.float64), True), Out("i64", np.arange(m + 1), True),
                    Out("bool", allowed), Out(dtype, np.where(allowed, a, b), True), Out(dtype, c, True),
                    Out(dtype, quantize(a * np.where(allowed, 1, 2), dtype), True)]
            return RunCase(f"gen-model#{idx:03d}", "generated", f"{dtype} arange, mask, written unpack, where of numbers {(n, m)}", src,
                           inputs=[("x", f)], outs=outs)
        # kind 6: dims as values
        dtype = FLOATS[(idx // 7) % 4]
        f, x = make_input(rng, (n, m), dtype)
        src = emit_function("f", [("x", T(dtype))], [tstr(dtype, []), T(dtype), T(dtype), 'i64[""]'],
                            ["scale = 1.0 / sqrt(m)",
                             'return reduce(x, "n m ->", "sum") / (n * m), x * scale, x * (n + 1) - m // 2, n * m'])
        mean = quantize(quantize(x.sum(), dtype) / quantize(n * m, dtype), dtype)
        scale = quantize(1.0 / np.sqrt(quantize(m, dtype)), dtype) if dtype != "f64" else 1.0 / np.sqrt(m)
        outs = [Out(dtype, mean, False, n * m), Out(dtype, quantize(x * scale, dtype), False, 2),
                Out(dtype, quantize(quantize(x * (n + 1), dtype) - (m // 2), dtype), False, 2),
                Out("i64", np.array(n * m, dtype=np.int64), True)]
        return RunCase(f"gen-model#{idx:03d}", "generated", f"{dtype} dims as values {(n, m)}", src,
                       inputs=[("x", f)], outs=outs)


def fp8_generated_cases() -> list[RunCase]:
    """The generators again on f8e4m3 / f8e5m2 operands (inputs as f32 files
    that einc rounds, or raw bit patterns): data movement exact, reductions
    and einsums accumulated in f32 (or acc=) and rounded once, elementwise
    trees rounded after every op, blocked contractions exact; then corners:
    every bit pattern through a copy, overflow (NaN for e4m3fn, which has no
    infinity; inf for e5m2), and fp8 operands with an f32 result."""
    cases: list[RunCase] = []
    for k in range(48):
        op = ("rearrange", "reduce", "repeat")[(k // 2) % 3]
        c = gen_pattern_case(np.random.default_rng(50_000 + k), op, k, FP8[k % 2])
        if c is not None:
            cases.append(c)
    for k in range(30):
        cases.append(gen_elementwise_case(np.random.default_rng(51_000 + k), k,
                                          2 if k % 5 == 4 else 1, [FP8[k % 2]]))
    for k in range(24):
        cases.append(gen_einsum_case(np.random.default_rng(52_000 + k), k, 1 + k % 4, FP8[(k // 4) % 2]))
    for k in range(6):
        cases.append(gen_blocked_contraction_case(np.random.default_rng(53_000 + k), 15 + k, FP8[k % 2]))

    rng = np.random.default_rng(54_000)
    bits = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for dt in FP8:
        top = 448.0 if dt == "f8e4m3" else 57344.0
        big = np.array([top, -top, top / 2, 1.5, -0.0, 2.0**-9 if dt == "f8e4m3" else 2.0**-16], dtype=np.float32)
        a = round_fp8(rng.uniform(-2, 2, (37, 70)), dt)
        b = round_fp8(rng.uniform(-2, 2, (70, 45)), dt)
        specs = [
            ("bits-rearranged", [("x", f'{dt}["a b"]')], [f'{dt}["b a"]'],
             ['return rearrange(x, "a b -> b a")'], [("x", bits)],
             [Out(dt, decode_fp8(bits, dt).T, True)]),
            ("overflow-doubled", [("x", f'{dt}["n"]')], [f'{dt}["n"]'], ["return x * 2"],
             [("x", big)], [Out(dt, round_fp8(round_fp8(big, dt) * 2, dt), True)]),
            ("halved-past-subnormals", [("x", f'{dt}["n"]')], [f'{dt}["n"]'], ["return x / 4"],
             [("x", big)], [Out(dt, round_fp8(round_fp8(big, dt) / 4, dt), True)]),
            ("matmul-f32-result", [("x", f'{dt}["m k"]'), ("y", f'{dt}["k n"]')], ['f32["m n"]'],
             ['return einsum(x, y, "m k, k n -> m n", acc=f32)'],
             [("x", encode_fp8(a, dt)), ("y", b.astype(np.float32))], [Out("f32", a @ b, False, 70)]),
            ("max-with-nan", [("x", f'{dt}["a b"]')], [f'{dt}["a"]'],
             ['return reduce(x, "a b -> a", "max")'],
             [("x", np.array([[1.0, np.nan, 2.0], [0.5, -1.0, 0.25]], dtype=np.float32))],
             [Out(dt, np.array([np.nan, 0.5]), True)]),
        ]
        for name, params, results, body, inputs, outs in specs:
            cases.append(RunCase(f"fp8-{dt}-{name}", "generated", f"{dt}: {name}",
                                 emit_function("f", params, results, body), inputs=inputs, outs=outs))
    return cases


# ---- examples/*.ein ------------------------------------------------------------


def example_cases() -> list[RunCase]:
    ex = os.path.join(ROOT, "examples")
    cases: list[RunCase] = []

    def read(name):
        with open(os.path.join(ex, name)) as f:
            return f.read()

    rng = np.random.default_rng(50_000)
    # attention.scores: bf16 inputs, f32 result
    for heads, d in ((2, 3), (8, 1)):
        fq, q = make_input(rng, (2, 3, heads * d), "bf16")
        fk, k = make_input(rng, (2, 4, heads * d), "bf16")
        ref = np.einsum("bshd,bthd->bhst", q.reshape(2, 3, heads, d), k.reshape(2, 4, heads, d))
        cases.append(RunCase(f"example-attention-h{heads}", "examples", "examples/attention.ein scores", read("attention.ein"),
                             fn="scores", inputs=[("q", fq), ("k", fk)], outs=[Out("f32", quantize(ref, "f32"), False, d)],
                             dims=[("heads", heads)] if heads != 8 else []))
    # chain
    fx, x = make_input(rng, (5, 2), "f32")
    fy, y = make_input(rng, (2, 6), "f32")
    fz, z = make_input(rng, (6, 3), "f32")
    cases.append(RunCase("example-chain", "examples", "examples/chain.ein", read("chain.ein"), fn="chain",
                         inputs=[("x", fx), ("y", fy), ("z", fz)], outs=[Out("f32", x @ y @ z, False, 12)],
                         dims=[("a", 5), ("b", 2), ("c", 6), ("d", 3)]))
    # linear
    fx, x = make_input(rng, (4, 6), "f32")
    fw, w = make_input(rng, (6, 3), "f32")
    cases.append(RunCase("example-linear", "examples", "examples/linear.ein", read("linear.ein"), fn="linear",
                         inputs=[("x", fx), ("w", fw)], outs=[Out("f32", x @ w, False, 6)],
                         dims=[("B", 4), ("D", 6), ("K", 3)]))
    # mlp
    fx, x = make_input(rng, (4, 5), "f32")
    f1, w1 = make_input(rng, (5, 5), "f32")
    f2, w2 = make_input(rng, (5, 3), "f32")
    h2 = np.maximum(x @ w1, 0) @ w2
    cases.append(RunCase("example-mlp", "examples", "examples/mlp.ein", read("mlp.ein"), fn="mlp",
                         inputs=[("x", fx), ("w1", f1), ("w2", f2)], outs=[Out("f32", np.array((h2 ** 2).mean()), False, 100)],
                         dims=[("B", 4), ("D", 5), ("K", 3)]))
    # gated_mlp: functions calling functions, silu, a dim as a value
    fx, x = make_input(rng, (2, 3, 8), "f32")
    fg, g = make_input(rng, (8,), "f32", "pos")
    fa, wa = make_input(rng, (8, 6), "f32")
    fb, wb = make_input(rng, (8, 6), "f32")
    fc, wc = make_input(rng, (6, 8), "f32")
    h = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * g
    a = h @ wa
    ref = x + ((a / (1 + np.exp(-a))) * (h @ wb)) @ wc
    cases.append(RunCase("example-gated-mlp", "examples", "examples/gated_mlp.ein", read("gated_mlp.ein"),
                         fn="gated_mlp", inputs=[("x", fx), ("g", fg), ("w_gate", fa), ("w_up", fb), ("w_down", fc)],
                         outs=[Out("f32", ref, False, 48)]))
    # transformer: a pre-norm block (RMSNorm, packed QKV, rotary embeddings,
    # causal attention, gated MLP) of functions imported and called
    def transformer_block(x, g_attn, w_qkv, w_out, g_mlp, w_gate, w_up, w_down, heads):
        def rmsnorm(x, g):
            return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * g
        b, s, m = x.shape
        half = w_qkv.shape[1] // (6 * heads)
        qkv = (rmsnorm(x, g_attn) @ w_qkv).reshape(b, s, 3, heads, 2 * half)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # b h s e
        angle = np.arange(s)[:, None] * 10000.0 ** (-np.arange(half) / half)[None, :]
        def rotary(t):
            t1, t2 = t[..., :half], t[..., half:]
            return np.concatenate([t1 * np.cos(angle) - t2 * np.sin(angle),
                                   t2 * np.cos(angle) + t1 * np.sin(angle)], axis=-1)
        scores = np.einsum("bhse,bhte->bhst", rotary(q), rotary(k)) / np.sqrt(2 * half)
        scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -1e9)
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        o = np.einsum("bhst,bhte->bshe", p, v).reshape(b, s, -1)
        h = x + o @ w_out
        a = rmsnorm(h, g_mlp) @ w_gate
        return h + ((a / (1 + np.exp(-a))) * (rmsnorm(h, g_mlp) @ w_up)) @ w_down
    for b, s, m, half, f, heads in ((2, 5, 16, 2, 24, 4), (1, 7, 12, 3, 20, 2)):
        fx, x = make_input(rng, (b, s, m), "f32")
        fg1, g1 = make_input(rng, (m,), "f32", "pos")
        fq, wq = make_input(rng, (m, 3 * heads * 2 * half), "f32")
        fo, wo = make_input(rng, (heads * 2 * half, m), "f32")
        fg2, g2 = make_input(rng, (m,), "f32", "pos")
        fa, wa = make_input(rng, (m, f), "f32")
        fb, wb = make_input(rng, (m, f), "f32")
        fc, wc = make_input(rng, (f, m), "f32")
        ref = transformer_block(x, g1, wq, wo, g2, wa, wb, wc, heads)
        cases.append(RunCase(f"example-transformer-h{heads}", "examples", "examples/transformer.ein block",
                             read("transformer.ein"), fn="block",
                             inputs=[("x", fx), ("g_attn", fg1), ("w_qkv", fq), ("w_out", fo), ("g_mlp", fg2),
                                     ("w_gate", fa), ("w_up", fb), ("w_down", fc)],
                             outs=[Out("f32", ref, False, 4 * m)], dims=[("heads", heads)] if heads != 4 else [],
                             files=[("gated_mlp.ein", read("gated_mlp.ein"))]))
    # embedding: take, a log-softmax, take_along picking the targets, dims as values
    vocab, dd = 11, 6
    fids = rng.integers(0, vocab, size=(2, 5)).astype(np.int64)
    ftg = rng.integers(0, vocab, size=(2, 5)).astype(np.int64)
    ft, table = make_input(rng, (vocab, dd), "f32")
    fw, w_out = make_input(rng, (dd, vocab), "f32")
    logits = table[fids] @ w_out
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    loss = -np.take_along_axis(logp, ftg[..., None], axis=-1).mean()
    cases.append(RunCase("example-embedding", "examples", "examples/embedding.ein", read("embedding.ein"),
                         fn="cross_entropy", inputs=[("ids", fids), ("targets", ftg), ("table", ft), ("w_out", fw)],
                         outs=[Out("f32", np.array(loss), False, 2 * 5 * vocab)]))
    # multihead: the file's own sizes, then other sizes
    for dims in ({}, {"batch": 1, "seq": 4, "heads": 3, "hidden1": 2, "hidden2": 5}):
        sz = {"batch": 2, "seq": 3, "heads": 2, "hidden1": 4, "hidden2": 2}
        sz.update(dims)
        fx, x = make_input(rng, (sz["batch"], sz["seq"], sz["heads"] * sz["hidden1"]), "f32")
        fw, w = make_input(rng, (sz["hidden1"], sz["hidden2"]), "f32")
        xh = x.reshape(sz["batch"], sz["seq"], sz["heads"], sz["hidden1"])
        ref = np.einsum("bshi,io->bsho", xh, w).reshape(sz["batch"], sz["seq"], -1)
        cases.append(RunCase(f"example-multihead{'-dims' if dims else ''}", "examples", "examples/multihead.ein",
                             read("multihead.ein"), fn="multihead", inputs=[("x", fx), ("w", fw)],
                             outs=[Out("f32", ref, False, sz["hidden1"])], dims=list(dims.items())))
    # pooling
    for fn, blk, (h, w) in (("pool2x2", 2, (4, 6)), ("pool20x20", 20, (40, 60))):
        fi, img = make_input(rng, (3, h, w), "f32")
        ref = img.reshape(3, h // blk, blk, w // blk, blk).mean(axis=(2, 4))
        cases.append(RunCase(f"example-{fn}", "examples", "examples/pooling.ein", read("pooling.ein"), fn=fn,
                             inputs=[("image", fi)], outs=[Out("f32", ref, False, blk * blk)],
                             dims=[("c", 3), ("height", h), ("width", w)]))
    # repeat
    fg, gray = make_input(rng, (3, 5), "f32")
    cases.append(RunCase("example-channels", "examples", "examples/repeat.ein", read("repeat.ein"), fn="channels",
                         inputs=[("gray", fg)], outs=[Out("f32", np.broadcast_to(gray, (2, 3, 5)).copy(), True)],
                         dims=[("c", 2), ("h", 3), ("w", 5)]))
    cases.append(RunCase("example-tiled", "examples", "examples/repeat.ein", read("repeat.ein"), fn="tiled",
                         inputs=[("gray", fg)], outs=[Out("f32", np.concatenate([gray] * 2, axis=0), True)],
                         dims=[("c", 2), ("h", 3), ("w", 5)]))
    # softmax
    for heads in (8, 2):
        fs, s = make_input(rng, (2, heads, 3, 5), "f32")
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        ref = e / e.sum(axis=-1, keepdims=True)
        cases.append(RunCase(f"example-softmax-h{heads}", "examples", "examples/softmax.ein", read("softmax.ein"),
                             fn="softmax", inputs=[("scores", fs)], outs=[Out("f32", ref, False, 5)],
                             dims=[("heads", heads)] if heads != 8 else []))
    return cases


# ---- negative cases ------------------------------------------------------------------------


def npy_bytes(arr) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def negative_cases() -> list[RunCase]:
    f32 = lambda *s: np.zeros(s, np.float32) + 0.5  # noqa: E731
    two = "def f(x: f32[\"a b\"], y: f32[\"b c\"]) -> f32[\"a c\"]:\n    return einsum(x, y, \"a b, b c -> a c\")\n"
    split = 'def f(x: f32["hidden"]) -> f32["hidden/8 8"]:\n    return rearrange(x, "(h d) -> h d", d=8)\n'
    declared = 'dim a = 4\n\ndef f(x: f32["a b"]) -> f32["b a"]:\n    return rearrange(x, "a b -> b a")\n'
    multi = 'def f(x: f32["n"]) -> (f32["n"], f32[""]):\n    return x * 2, reduce(x, "n ->", "sum")\n'
    i32src = 'def f(x: i32["n"]) -> i32["n"]:\n    return x + 1\n'
    good = [("x", f32(2, 3)), ("y", f32(3, 4))]
    specs = [
        # (name, source, inputs, extra fields, stderr substring)
        ("wrong-rank", two, [("x", f32(2, 3, 1)), ("y", f32(3, 4))], {}, "expected 2 dims"),
        ("wrong-rank-scalar", two, [("x", np.float32(1.0)), ("y", f32(3, 4))], {}, "expected 2 dims"),
        # Size 0 is an empty axis (gen-empty cases); a size that solves to a
        # negative one is not.
        ("negative-size-from-input", 'def f(x: f32["n+1"]) -> f32["n+1"]:\n    return x\n', [("x", f32(0))], {},
         "size 0 gives no non-negative integer n"),
        # max / min have no identity: numpy raises "zero-size array to
        # reduction operation maximum which has no identity".
        ("max-over-empty-axis", 'def f(x: f32["a c"]) -> f32["c"]:\n    return reduce(x, "a c -> c", "max")\n',
         [("x", f32(0, 3))], {}, "entry check a >= 1 fails with a = 0 from parameter 'x' dim 0 (a): "
         "reduce(..., \"a c -> c\", \"max\") at line 2: max over 'a' needs at least one element"),
        ("min-over-empty-axes", 'def f(x: i32["a b c"]) -> i32["b"]:\n    return reduce(x, "a b c -> b", "min")\n',
         [("x", np.zeros((2, 3, 0), np.int32))], {}, "min over 'a', 'c' needs at least one element"),
        ("max-over-empty-axis-in-chain", 'def f(x: f32["r t"]) -> f32["r t"]:\n    e = exp(x - reduce(x, "r t -> r", "max"))\n'
         '    return e / reduce(e, "r t -> r", "sum")\n', [("x", f32(3, 0))], {}, "entry check t >= 1 fails"),
        ("split-by-empty-axis", 'def f(x: f32["n"], y: f32["m"]) -> f32["_ m"]:\n    return rearrange(x, "(a b) -> a b", b=m)\n',
         [("x", f32(0)), ("y", f32(0))], {}, "n % m == 0 fails with m = 0"),
        # An empty input with a huge dim: its reduction is 2**40 zeros, as
        # an intermediate (refused before compiling) or as the result.
        ("empty-input-huge-intermediate", 'def f(x: f32["a b"]) -> f32[""]:\n    return reduce(exp(reduce(x, "a b -> b", "sum")), "b ->", "sum")\n',
         [("x", np.zeros((0, 2**40), np.float32))], {}, "more than this machine's memory"),
        ("empty-input-huge-result", 'def f(x: f32["a b"]) -> f32["b"]:\n    return reduce(x, "a b -> b", "sum")\n',
         [("x", np.zeros((0, 2**40), np.float32))], {}, "more than this machine's memory"),
        ("split-self-by-empty-axis", 'def f(x: f32["n"]) -> f32["1 n"]:\n    return rearrange(x, "(a b) -> a b", b=n)\n',
         [("x", f32(0))], {}, "division by a size of 0"),
        ("dim-disagrees-with-input", two, [("x", f32(2, 3)), ("y", f32(4, 4))], {}, "expected 3, got 4"),
        ("dim-disagrees-with---dim", two, good, {"dims": [("a", 5)]}, "expected 5, got 2"),
        ("dim-disagrees-with-declaration", declared, [("x", f32(2, 3))], {}, "expected 4, got 2"),
        ("entry-check-fails", split, [("x", f32(12))], {}, "hidden % 8 == 0"),
        ("missing---in", two, [("x", f32(2, 3))], {}, "missing --in y"),
        ("unknown-parameter", two, good + [("z", f32(2))], {}, "has no parameter 'z'"),
        ("in-given-twice", two, good, {"in_args": [("x", "in_x.npy"), ("x", "in_x.npy"), ("y", "in_y.npy")]}, "given twice"),
        ("input-file-missing", two, good, {"in_args": [("x", "nope.npy"), ("y", "in_y.npy")]}, "cannot open"),
        ("malformed-npy-garbage", two, [("x", b"this is not a numpy file at all\n"), ("y", f32(3, 4))], {}, "not a .npy file"),
        ("malformed-npy-truncated", two, [("x", npy_bytes(f32(2, 3))[:-5]), ("y", f32(3, 4))], {}, "truncated"),
        ("malformed-npy-trailing", two, [("x", npy_bytes(f32(2, 3)) + b"xx"), ("y", f32(3, 4))], {}, "trailing"),
        ("malformed-npy-header", two, [("x", npy_bytes(f32(2, 3)).replace(b"'shape'", b"'shapf'")), ("y", f32(3, 4))], {}, "einc: error:"),
        ("malformed-npy-empty", two, [("x", b""), ("y", f32(3, 4))], {}, "empty file"),
        ("npy-big-endian", two, [("x", f32(2, 3).astype(">f4")), ("y", f32(3, 4))], {}, "einc: error:"),
        ("npy-inexact-f64-for-f32", two, [("x", np.full((2, 3), 0.1)), ("y", f32(3, 4))], {}, "exactly"),
        ("npy-i64-out-of-range-for-i32", i32src, [("x", np.array([2**40], np.int64))], {}, "einc: error:"),
        ("npy-float-for-int", i32src, [("x", f32(3))], {}, "einc: error:"),
        ("wrong---out-count-none", two, good, {"n_out": 0}, "returns 1 value(s)"),
        ("wrong---out-count-two", two, good, {"n_out": 2}, "returns 1 value(s)"),
        ("wrong---out-count-multi", multi, [("x", f32(3))], {"n_out": 1}, "returns 2 value(s)"),
        ("same---out-twice", multi, [("x", f32(3))], {"same_out": True}, "twice"),
        ("variadic-rank-differs", 'def f(x: f32["*batch c"], y: f32["*batch c"]) -> f32["*batch c"]:\n    return x + y\n',
         [("x", f32(2, 3)), ("y", f32(4, 2, 3))], {}, "variadic *batch has rank 2 here"),
        ("hash-dim-one-in-einsum", 'def f(x: f32["n #m"], y: f32["n m"]) -> f32["n"]:\n    return einsum(x, y, "n m, n m -> n")\n',
         [("x", f32(3, 1)), ("y", f32(3, 4))], {}, "#m has size 1 in the input"),
    ]
    cases: list[RunCase] = []
    for name, src, inputs, extra, needle in specs:
        for pre in (False, True):
            n_out = extra.get("n_out")
            cases.append(RunCase(
                cid=f"negative-{name}{'-existing' if pre else ''}",
                category="negative",
                desc=name + (" (outputs exist)" if pre else ""),
                source=src,
                inputs=inputs,
                outs=[],
                dims=extra.get("dims", []),
                expect_rc=2,
                stderr_has=needle,
                in_args=extra.get("in_args"),
                n_out=n_out if n_out is not None else (2 if src is multi else 1),
                same_out=extra.get("same_out", False),
                preexisting=pre,
                xfail=extra.get("xfail", ""),
            ))
    return cases


def all_run_cases() -> tuple[list[RunCase], str]:
    opt, origin = opt_einsum_cases()
    return einops_cases() + opt + generated_cases() + example_cases() + negative_cases(), origin


# --------------------------------------------------------------------------
# Running and comparing
# --------------------------------------------------------------------------

SENTINEL = b"sentinel: einc must not replace this file\n"


def compare(got: np.ndarray, out: Out) -> Optional[str]:
    want_file = FILE_DTYPE[out.dtype]
    if got.dtype != want_file:
        return f"file dtype {got.dtype}, expected {np.dtype(want_file)}"
    ref = np.asarray(out.ref)
    if got.shape != ref.shape:
        return f"shape {got.shape}, expected {ref.shape}"
    if out.dtype in INT_RANGE or out.dtype == "bool":
        if not np.array_equal(got.astype(np.int64), ref.astype(np.int64)):
            bad = np.argwhere(got.astype(np.int64) != ref.astype(np.int64))
            at = tuple(bad[0])
            return f"{len(bad)} of {ref.size} elements differ; at {at}: got {got[at]}, expected {ref[at]}"
        return None
    with np.errstate(invalid="ignore"):  # signalling NaNs widen with a warning
        g = got.astype(np.float64)
        r = ref.astype(np.float64)
    nonfinite = ~np.isfinite(r) | ~np.isfinite(g)
    if nonfinite.any():
        same = (np.isnan(g) & np.isnan(r)) | (g == r)
        if not same[nonfinite].all():
            at = tuple(np.argwhere(nonfinite & ~same)[0])
            return f"non-finite mismatch at {at}: got {g[at]}, expected {r[at]}"
    gf, rf = np.where(nonfinite, 0.0, g), np.where(nonfinite, 0.0, r)
    if out.exact:
        if not np.array_equal(gf, rf):
            bad = np.argwhere(gf != rf)
            at = tuple(bad[0])
            return f"{len(bad)} of {r.size} elements differ (exact comparison); at {at}: got {g[at]!r}, expected {r[at]!r}"
        return None
    m = float(np.max(np.abs(rf))) if rf.size else 0.0
    k = max(1, out.K) if out.dtype in ("f32", "f64") else 1
    tol = RTOL[out.dtype] * k * (np.abs(rf) + m)
    err = np.abs(gf - rf)
    if (err > tol).any():
        bad = np.argwhere(err > tol)
        at = tuple(bad[0])
        worst = tuple(np.unravel_index(np.argmax(err - tol), err.shape)) if err.ndim else ()
        return (f"{len(bad)} of {r.size} elements beyond tolerance (rtol {RTOL[out.dtype]} x {k}); "
                f"at {at}: got {g[at]!r}, expected {r[at]!r}; worst at {worst}: got {g[worst]!r}, expected {r[worst]!r}")
    return None


def safe_name(cid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", cid)


@dataclass
class Result:
    ok: bool
    what: str = ""
    stderr: str = ""


# Arguments appended to every `einc run` (--einc-arg), e.g. tiny contraction
# tiles so that small cases cross every block edge.
EINC_EXTRA_ARGS = []
# --save-cuda: the directory under which each case's CUDA program is kept.
SAVE_CUDA_DIR = None

# The numpy dtype of a result's raw storage, as a CUDA program writes it.
RAW_DTYPE = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16,
             "f8e4m3": np.uint8, "f8e5m2": np.uint8, "i32": np.int32, "i64": np.int64,
             "bool": np.uint8}


def widen_raw(raw: np.ndarray, dtype: str) -> np.ndarray:
    """A result's storage as einc run writes it to .npy (bf16, fp8 as f32)."""
    if dtype == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    if dtype in FP8:
        return decode_fp8(raw, dtype).astype(np.float32)
    if dtype == "bool":
        return raw.astype(np.bool_)
    return raw


def replay_case(case: RunCase, root: str, prefix: list) -> Optional[Result]:
    """Runs the CUDA program `--save-cuda` kept for `case` (built beside it as
    `prog`, e.g. by nvcc on a GPU machine) and compares its results; None when
    the case has none (negative cases, or not built)."""
    d = os.path.join(root, safe_name(case.cid))
    prog = os.path.join(d, "prog")
    if case.expect_rc != 0 or not os.path.exists(prog):
        return None
    with open(os.path.join(d, "source.ein")) as f:
        if f.read() != case.source:
            return Result(False, "stale: the prepared program is of another case with this id "
                                 "(prepare again with the same corpus)")
    with open(os.path.join(d, "args.txt")) as f:
        args = [line.rstrip("\n") for line in f]
    try:
        proc = subprocess.run(prefix + [prog] + args, cwd=d, capture_output=True, text=True,
                              timeout=EINC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Result(False, f"timeout after {EINC_TIMEOUT_S}s")
    if proc.returncode != 0:
        return Result(False, f"exit {proc.returncode}", (proc.stderr or "")[:400])
    problems = []
    for k, out in enumerate(case.outs):
        shape = np.asarray(out.ref).shape
        raw = np.fromfile(os.path.join(d, f"out{k}.bin"), dtype=RAW_DTYPE[out.dtype])
        if raw.size != int(np.prod(shape)):
            problems.append(f"result {k}: {raw.size} elements, expected {int(np.prod(shape))}")
            continue
        why = compare(widen_raw(raw, out.dtype).reshape(shape), out)
        if why:
            problems.append(f"result {k} ({out.dtype}): {why}")
    return Result(not problems, "; ".join(problems))


def run_case(einc: str, case: RunCase, workdir: str) -> Result:
    d = os.path.join(workdir, safe_name(case.cid))
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "f.ein")
    with open(src, "w") as f:
        f.write(case.source)
    for name, text in case.files:
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    for name, data in case.inputs:
        path = os.path.join(d, f"in_{name}.npy")
        if isinstance(data, (bytes, bytearray)):
            with open(path, "wb") as f:
                f.write(data)
        else:
            np.save(path, np.asarray(data))
    in_args = case.in_args if case.in_args is not None else [(n, f"in_{n}.npy") for n, _ in case.inputs]
    outdir = os.path.join(d, "out")
    shutil.rmtree(outdir, ignore_errors=True)  # a --keep directory may be reused
    os.makedirs(outdir)
    n_out = case.n_out if case.n_out is not None else len(case.outs)
    outs = [os.path.join(outdir, f"r{k}.npy") for k in range(n_out)]
    if case.same_out and outs:
        outs = [outs[0]] * max(2, n_out)
    if case.preexisting:
        for o in outs:
            with open(o, "wb") as f:
                f.write(SENTINEL)
    before = sorted(os.listdir(outdir))
    cmd = [einc, "run", src, "--fn", case.fn]
    for name, fname in in_args:
        cmd += ["--in", f"{name}={os.path.join(d, fname)}"]
    for o in outs:
        cmd += ["--out", o]
    for name, value in case.dims:
        cmd += ["--dim", f"{name}={value}"]
    cmd += case.extra_args + EINC_EXTRA_ARGS
    with open(os.path.join(d, "cmd.sh"), "w") as f:
        f.write(" ".join(f"'{c}'" for c in cmd) + "\n")
    env = None
    if SAVE_CUDA_DIR and case.expect_rc == 0:
        saved = os.path.join(SAVE_CUDA_DIR, safe_name(case.cid))
        env = dict(os.environ, EINC_CUDA_SAVE=saved)
        os.makedirs(saved, exist_ok=True)
        # The replay checks that it regenerated the same case (another
        # opt_einsum version numbers its equations differently).
        with open(os.path.join(saved, "source.ein"), "w") as f:
            f.write(case.source)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=EINC_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return Result(False, f"timeout after {EINC_TIMEOUT_S}s")
    except OSError as exc:
        return Result(False, f"could not run einc: {exc}")
    stderr = proc.stderr or ""
    head = " | ".join(l for l in stderr.splitlines()[:4] if l.strip())
    if proc.returncode != case.expect_rc:
        return Result(False, f"exit {proc.returncode}, expected {case.expect_rc}", head)
    if case.expect_rc != 0:
        problems = []
        if case.stderr_has and case.stderr_has not in stderr:
            problems.append(f"stderr lacks {case.stderr_has!r}")
        if case.expect_rc == 2 and not stderr.startswith("einc: error: "):
            problems.append("stderr does not start with 'einc: error: '")
        after = sorted(os.listdir(outdir))
        if after != before:
            problems.append(f"output directory changed: {before} -> {after}")
        for o in set(outs):
            if case.preexisting:
                with open(o, "rb") as f:
                    if f.read() != SENTINEL:
                        problems.append(f"{os.path.basename(o)} was overwritten")
            elif os.path.exists(o):
                problems.append(f"{os.path.basename(o)} was created")
        return Result(not problems, "; ".join(problems), head)
    problems = []
    for k, (path, out) in enumerate(zip(outs, case.outs)):
        try:
            got = np.load(path)
        except Exception as exc:
            problems.append(f"result {k}: cannot load {path}: {exc}")
            continue
        why = compare(got, out)
        if why:
            problems.append(f"result {k} ({out.dtype}): {why}")
    return Result(not problems, "; ".join(problems), head)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--einc", help="path to the einc binary (not needed with --replay-cuda)")
    ap.add_argument("--filter", metavar="SUBSTR", help="only cases whose id or description contains SUBSTR")
    ap.add_argument("--keep", metavar="DIR", help="write each case's files under DIR and keep them")
    ap.add_argument("--verbose", action="store_true", help="print every case")
    ap.add_argument("--jobs", type=int, default=2, help="parallel einc runs (default 2)")
    ap.add_argument("--einc-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for every `einc run` (repeatable), e.g. --einc-arg=--tiles=mr=3")
    ap.add_argument("--sample", type=int, default=1, metavar="N",
                    help="only every N-th case (after --filter), starting at --offset")
    ap.add_argument("--offset", default="0", metavar="K|rotate",
                    help="the first case of the --sample (0 <= K < N); `rotate`: "
                         "the number of commits of the checkout modulo N, so that "
                         "successive commits run successive N-ths and N commits "
                         "cover every case (printed, to rerun a failure with K)")
    ap.add_argument("--save-cuda", metavar="DIR",
                    help="with --einc-arg=--target=cuda-emulated: keep each case's CUDA program, "
                         "inputs and arguments under DIR/<case id>/ (EINC_CUDA_SAVE)")
    ap.add_argument("--replay-cuda", metavar="DIR",
                    help="run the programs --save-cuda kept (built as DIR/<case id>/prog) "
                         "instead of einc, and compare their results")
    ap.add_argument("--replay-prefix", default="", metavar="CMD",
                    help="a command (split on spaces) to run each replayed program under")
    args = ap.parse_args()
    EINC_EXTRA_ARGS.extend(args.einc_arg)
    global SAVE_CUDA_DIR
    if not args.einc and not args.replay_cuda:
        ap.error("--einc is required")
    if args.save_cuda:
        SAVE_CUDA_DIR = os.path.abspath(args.save_cuda)
        os.makedirs(SAVE_CUDA_DIR, exist_ok=True)
    if args.replay_cuda:
        return replay_main(args)
    if args.save_cuda and not any("cuda-emulated" in a for a in args.einc_arg):
        ap.error("--save-cuda needs --einc-arg=--target=cuda-emulated")

    if not (os.path.isfile(args.einc) and os.access(args.einc, os.X_OK)):
        found = shutil.which(args.einc)
        if not found:
            print(f"error: einc not found or not executable: {args.einc}", file=sys.stderr)
            return 2
        args.einc = found

    np.seterr(all="ignore")
    cases, origin = all_run_cases()
    ids = [c.cid for c in cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        print(f"error: duplicate case ids: {dupes[:5]}", file=sys.stderr)
        return 2
    if args.filter:
        cases = [c for c in cases if args.filter in c.cid or args.filter in c.desc]
    offset = sample_offset(args)
    if args.sample > 1:
        cases = cases[offset:: args.sample]
        print(f"sample: 1 case in {args.sample}, from #{offset} "
              f"(--sample {args.sample} --offset {offset})")

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir, tmp = args.keep, None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="run_corpus_")
        workdir = tmp.name

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda c: run_case(args.einc, c, workdir), cases))

    failures = xfails = 0
    counts: dict[str, int] = {}
    for case, res in zip(cases, results):
        counts[case.category] = counts.get(case.category, 0) + 1
        if case.xfail:
            # A known bug outside the lowering: failing is expected; passing
            # (XPASS) is a failure, so that the mark gets removed.
            if res.ok:
                failures += 1
                print(f"XPASS {case.cid} [{case.desc}]: passes; remove its xfail mark ({case.xfail})")
            else:
                xfails += 1
                if args.verbose:
                    print(f"XFAIL {case.cid} [{case.desc}]: {case.xfail}; {res.what}; einc stderr: {res.stderr[:300]}")
            continue
        if res.ok and not args.verbose:
            continue
        if not res.ok:
            failures += 1
        tag = "ok  " if res.ok else "FAIL"
        line = f"{tag} {case.cid} [{case.desc}]"
        if res.what:
            line += f": {res.what}"
        if res.stderr and not res.ok:
            line += f"; einc stderr: {res.stderr[:400]}"
        print(line)
    if tmp is not None:
        tmp.cleanup()

    order = ["einops", "opt_einsum", "generated", "examples", "negative"]
    print("categories: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in order) + f" (opt_einsum from {origin})")
    if xfails:
        print(f"expected failures (known bugs outside the lowering, see --verbose): {xfails}")
    n = len(cases)
    print(f"run corpus: {n} cases, {failures} failures")
    print(f"{n - failures - xfails} passed, {failures} failed")
    status = 1 if failures else 0
    if not args.filter and args.sample == 1 and n < MIN_CASES:
        print(f"error: only {n} cases (need {MIN_CASES})", file=sys.stderr)
        status = 1
    return status


def sample_offset(args) -> int:
    """The first case of --sample: --offset K, or with `rotate` the commit
    count of the checkout holding this file modulo the sample (0 outside a
    git checkout), so that CI's sample moves with every commit."""
    if args.sample <= 1:
        return 0
    if args.offset == "rotate":
        try:
            count = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)),
                                    "rev-list", "--count", "HEAD"],
                                   capture_output=True, text=True, timeout=30).stdout.strip()
            return int(count) % args.sample if count.isdigit() else 0
        except (OSError, subprocess.TimeoutExpired):
            return 0
    if not args.offset.isdigit() or int(args.offset) >= args.sample:
        raise SystemExit(f"error: --offset expects `rotate` or an integer in [0, {args.sample})")
    return int(args.offset)


def replay_main(args) -> int:
    np.seterr(all="ignore")
    cases, _ = all_run_cases()
    if args.filter:
        cases = [c for c in cases if args.filter in c.cid or args.filter in c.desc]
    if args.sample > 1:
        cases = cases[sample_offset(args):: args.sample]
    prefix = args.replay_prefix.split()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda c: replay_case(c, args.replay_cuda, prefix), cases))
    ran = failures = 0
    for case, res in zip(cases, results):
        if res is None:
            continue
        ran += 1
        if not res.ok and not case.xfail:
            failures += 1
            print(f"FAIL {case.cid} [{case.desc}]: {res.what}; {res.stderr[:300]}")
    print(f"replayed CUDA programs: {ran} of {len(cases)} cases, {failures} failures")
    print(f"{ran - failures} passed, {failures} failed")
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
