#!/usr/bin/env python3
"""ein's differential tester: random well-typed programs, every variant, an independent reference.

Each program is generated as a small SSA program (a list of statements over
typed values) over every operation of the language -- einsum (with `acc=` and
diagonals), reduce (sum mean var max min prod, any/all on bool), rearrange
(permutations, merges, splits, unit axes, `...`), repeat, pack/unpack, cat,
slice, take, arange, elementwise arithmetic, comparisons, logic, where, clip
and every math function, astype between all dtypes, and grad -- in the
dtypes f64 f32 f16 bf16 i32 i64 (and bool), with sizes bound from the inputs
or declared with `dim`. It is rendered as a `.ein` file and run with
`einc run` in every variant:

  fused          `einc run` as it is (fusion on)
  size-generic   `--size-generic`
  no-fusion      `--no-fusion`
  small-tiles    `--tiles=mr=3,nr-vectors=2,mc=7,nc=19,kc=5,vector-bits=128,work-items=3`
  cuda-emulated  `--target=cuda-emulated` (2-3 s a program: every --cuda-every'th)

The reference is an interpreter of the same SSA program written here, apart
from the compiler: numpy (einops for the pattern operations, which einops
defines) computing in float64 / int64 and rounding to the value's dtype after
every operation, and, for programs with `grad`, torch in float64 with
torch.autograd.grad. Inputs, result files and the comparison (tolerances,
exact comparison for integers and data movement) are those of
test/run/run_corpus.py, imported from it.

A failure is minimised (delta debugging: drop results, cut statements into
parameters of the same type, bypass statements, shrink the sizes) and
printed as a ready-to-paste regression case: a `.ein` file whose comment
header holds the program's description as JSON. Put it under
test/difftest/Inputs/ with an `# xfail: REASON` line while the bug is open;
`--regressions DIR` runs every such file (a marked case that passes is an
XPASS, a failure, so that its mark gets removed).

Failures that match a defect already filed are counted as known (with the
item number of issue 27) and do not fail the run.

Usage:
    difftest.py --einc build/bin/einc                      # the CI sample (seed 1)
    difftest.py --einc build/bin/einc --count 500 --seed 7 # more programs
    difftest.py --einc build/bin/einc --full               # 2000 programs, all variants
    difftest.py --einc build/bin/einc --regressions test/difftest/Inputs
    difftest.py --show 12 --seed 7                         # print program 12 and its reference

Options: --variants fused,no-fusion (a subset), --cuda-every N (0: never),
--jobs N (parallel einc runs), --keep DIR (keep each run's files),
--no-minimise, --save DIR (write each minimised finding there), --verbose.

Output: one line per failure (program, variant, what differed, the head of
einc's stderr), each new finding minimised, then
    difftest: N programs, R runs, F new failures, K known
and the exit status is 1 when F > 0.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import re
import sys
import tempfile
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Optional

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "run"))

import numpy as np  # noqa: E402
import einops  # noqa: E402

import run_corpus as rc  # noqa: E402  (inputs, rounding, comparison, running einc)

try:
    import torch  # noqa: E402

    torch.set_default_dtype(torch.float64)
except ImportError:  # pragma: no cover - then grad programs are not generated
    torch = None

FLOATS = ("f64", "f32", "f16", "bf16")
INTS = ("i32", "i64")
NUMBERS = FLOATS + INTS
ALL_DTYPES = NUMBERS + ("bool",)
BASE_NAMES = ("a", "b", "c", "d", "e")

VARIANTS = {
    "fused": [],
    "size-generic": ["--size-generic"],
    "no-fusion": ["--no-fusion"],
    "small-tiles": ["--tiles=mr=3,nr-vectors=2,mc=7,nc=19,kc=5,vector-bits=128,work-items=3"],
    "cuda-emulated": ["--target=cuda-emulated"],
}


# Warnings (dead values are common in random programs) would fill the head
# of einc's stderr that run_corpus keeps, where the error is looked for.
QUIET = ["-Wno-unused-value", "-Wno-unused-dim", "-Wno-lone-axis"]


class Invalid(Exception):
    """The program has no reference answer (an integer overflow, a max over
    an empty axis, a slice beyond its axis at these sizes): not a test."""


# --------------------------------------------------------------------------
# Sizes: dims are ein size expressions over the base names
# --------------------------------------------------------------------------

# Two fixed assignments of large primes: two dims are the same size
# expression exactly when they agree on both (polynomial identity).
PROBES = [
    {"a": 1000003, "b": 1000033, "c": 1000037, "d": 1000039, "e": 1000081},
    {"a": 7919, "b": 104729, "c": 1299709, "d": 15485863, "e": 179424673},
]


def dim_value(expr: str, sizes: dict) -> int:
    return int(eval(expr, {"__builtins__": {}}, dict(sizes)))


def sig(expr: str) -> tuple:
    return tuple(dim_value(expr, p) for p in PROBES)


def atom(expr: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_]\w*|\d+", expr))


def par(expr: str) -> str:
    return expr if atom(expr) or re.fullmatch(r"[\w*]+", expr) else f"({expr})"


def prod_expr(exprs) -> str:
    exprs = [e for e in exprs if e != "1"]
    if not exprs:
        return "1"
    return "*".join(par(e) for e in exprs)


def plain(expr: str) -> bool:
    return expr in BASE_NAMES


def same_dims(d1, d2) -> bool:
    return len(d1) == len(d2) and all(sig(x) == sig(y) for x, y in zip(d1, d2))


def bcast(d1, d2):
    """The broadcast shape of two operands under ein's by-name rules, in the
    subset this generator uses, or None."""
    d1, d2 = list(d1), list(d2)
    if not d1:
        return d2
    if not d2:
        return d1
    if len(d1) == len(d2):
        out = []
        for x, y in zip(d1, d2):
            if sig(x) == sig(y) or y == "1":
                out.append(x)
            elif x == "1":
                out.append(y)
            else:
                return None
        return out
    small, large = (d1, d2) if len(d1) < len(d2) else (d2, d1)
    pos = -1
    for x in small:
        if x == "1":
            continue
        hits = [i for i, y in enumerate(large) if sig(y) == sig(x)]
        if len(hits) != 1 or hits[0] <= pos:
            return None
        pos = hits[0]
    return large


def align(v, dims, out_dims, xp):
    """v (of `dims`) reshaped so that numpy/torch broadcasting gives ein's
    by-name broadcasting to `out_dims`."""
    dims, out_dims = list(dims), list(out_dims)
    if len(dims) == len(out_dims) or not dims:
        return v
    keep = [i for i, d in enumerate(dims) if d != "1"]
    shape_in = [v.shape[i] for i in keep]
    v = v.reshape(tuple(shape_in))
    target = [1] * len(out_dims)
    for i, k in enumerate(keep):
        j = [n for n, y in enumerate(out_dims) if sig(y) == sig(dims[k])][0]
        target[j] = shape_in[i]
    return v.reshape(tuple(target))


# --------------------------------------------------------------------------
# The program
# --------------------------------------------------------------------------


@dataclass
class Param:
    name: str
    dtype: str
    dims: list
    domain: str = "any"  # any, frac, pos, wide, ids:<dim expr>


@dataclass
class Stmt:
    op: str
    ins: list  # operand names (values, or a pack's packed shapes)
    outs: list
    out_types: list  # [dtype, dims] per out; dtype "ps" for packed shapes
    attrs: dict = field(default_factory=dict)


@dataclass
class Program:
    seed: int
    sizes: dict
    fixed: bool  # sizes declared with `dim` (known at compile time)
    params: list
    stmts: list
    rets: list
    anon_results: list  # per result: its dims written as `_`
    note: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> "Program":
        d = json.loads(text)
        d["params"] = [Param(**p) for p in d["params"]]
        d["stmts"] = [Stmt(**s) for s in d["stmts"]]
        return Program(**d)

    def types(self) -> dict:
        t = {p.name: (p.dtype, list(p.dims)) for p in self.params}
        for s in self.stmts:
            for o, ty in zip(s.outs, s.out_types):
                t[o] = (ty[0], list(ty[1]))
        return t

    def used_base_names(self) -> list:
        names = set()
        for p in self.params:
            for d in p.dims:
                names |= set(re.findall(r"[A-Za-z_]\w*", d))
        return [n for n in BASE_NAMES if n in names]


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------


def lit_text(v) -> str:
    return repr(float(v)) if isinstance(v, float) else str(int(v))


def arg_text(a) -> str:
    if "v" in a:
        return a["v"]
    if "size" in a:
        return a["size"]
    return lit_text(a["lit"])


BINOPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "pow": "**",
          "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&", "or": "|"}


def size_src(expr: str) -> str:
    """A size expression as source text (spaces around + and -)."""
    return re.sub(r"([+-])", r" \1 ", expr)


def kwargs_text(kw: dict) -> str:
    return "".join(f", {k}={size_src(v)}" for k, v in kw.items())


def stmt_text(s: Stmt) -> str:
    a = s.attrs
    if s.op == "ew":
        fn, args = a["fn"], a["args"]
        t = [arg_text(x) for x in args]
        if fn in BINOPS:
            rhs = f"{t[0]} {BINOPS[fn]} {t[1]}"
            if fn == "pow" and t[0].startswith("-"):
                rhs = f"({t[0]}) ** {t[1]}"
        elif fn == "neg":
            rhs = f"-{t[0]}"
        elif fn == "not":
            rhs = f"~{t[0]}"
        elif fn == "gelu_tanh":
            rhs = f'gelu({t[0]}, approximate="tanh")'
        else:
            rhs = f"{fn}({', '.join(t)})"
    elif s.op == "astype":
        rhs = f"astype({s.ins[0]}, {a['dtype']})"
    elif s.op == "reduce":
        acc = f", acc={a['acc']}" if a.get("acc") else ""
        rhs = f'reduce({s.ins[0]}, "{a["pattern"]}", "{a["red"]}"{acc}{kwargs_text(a.get("kw", {}))})'
    elif s.op in ("rearrange", "repeat"):
        rhs = f'{s.op}({s.ins[0]}, "{a["pattern"]}"{kwargs_text(a.get("kw", {}))})'
    elif s.op == "einsum":
        acc = f", acc={a['acc']}" if a.get("acc") else ""
        rhs = f'einsum({", ".join(s.ins)}, "{a["pattern"]}"{acc})'
    elif s.op == "pack":
        rhs = f'pack([{", ".join(s.ins)}], "{a["pattern"]}")'
    elif s.op == "unpack":
        rhs = f'unpack({s.ins[0]}, {s.ins[1]}, "{a["pattern"]}")'
    elif s.op == "cat":
        rhs = f'cat([{", ".join(s.ins)}], "{a["pattern"]}")'
    elif s.op == "slice":
        rhs = f'slice({s.ins[0]}, "{a["axis"]}", {size_src(a["start"])}, {size_src(a["stop"])})'
    elif s.op == "take":
        rhs = f'take({s.ins[0]}, {s.ins[1]}, "{a["axis"]}")'
    elif s.op == "arange":
        rhs = f'arange({size_src(a["n"])}, dtype={a["dtype"]})'
    elif s.op == "grad":
        rhs = f'grad({s.ins[0]}, wrt=[{", ".join(s.ins[1:])}])'
    else:
        raise AssertionError(s.op)
    return f"    {', '.join(s.outs)} = {rhs}"


def type_text(dtype, dims, anon=False) -> str:
    return f'{dtype}["' + " ".join("_" if anon else d for d in dims) + '"]'


def render(p: Program) -> str:
    types = p.types()
    lines = []
    if p.fixed:
        for n in p.used_base_names():
            lines.append(f"dim {n} = {p.sizes[n]}")
        lines.append("")
    params = ", ".join(f"{q.name}: {type_text(q.dtype, q.dims)}" for q in p.params)
    rts = [type_text(types[r][0], types[r][1], anon) for r, anon in zip(p.rets, p.anon_results)]
    rt = rts[0] if len(rts) == 1 else "(" + ", ".join(rts) + ")"
    lines.append(f"def f({params}) -> {rt}:")
    for s in p.stmts:
        lines.append(stmt_text(s))
    lines.append(f"    return {', '.join(p.rets)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# The reference interpreter (numpy; torch for grad)
# --------------------------------------------------------------------------


def np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x) if np.size(x) else np.asarray(x, np.float64)


class NP:
    """Float math in numpy float64."""

    name = "numpy"

    @staticmethod
    def fn(name, args):
        x = args[0]
        y = args[1] if len(args) > 1 else None
        with np.errstate(all="ignore"):
            return {
                "add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y,
                "pow": lambda: np.power(x, y), "floordiv": lambda: np.floor_divide(x, y),
                "mod": lambda: np.remainder(x, y), "neg": lambda: -x, "min": lambda: np.minimum(x, y),
                "max": lambda: np.maximum(x, y), "clip": lambda: np.minimum(np.maximum(x, y), args[2]),
                "abs": lambda: np.abs(x), "sign": lambda: np.sign(x), "square": lambda: x * x,
                "exp": lambda: np.exp(x), "log": lambda: np.log(x), "sqrt": lambda: np.sqrt(x),
                "rsqrt": lambda: 1.0 / np.sqrt(x), "tanh": lambda: np.tanh(x),
                "relu": lambda: np.maximum(x, 0.0), "sigmoid": lambda: 1.0 / (1.0 + np.exp(-x)),
                "silu": lambda: x / (1.0 + np.exp(-x)),
                "gelu": lambda: 0.5 * x * (1.0 + np_erf(x / math.sqrt(2.0))),
                "gelu_tanh": lambda: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
                "softplus": lambda: np.logaddexp(0.0, x), "sin": lambda: np.sin(x), "cos": lambda: np.cos(x),
                "erf": lambda: np_erf(x), "floor": lambda: np.floor(x), "ceil": lambda: np.ceil(x),
                "round": lambda: np.round(x),
            }[name]()


class TORCH:
    """Float math in torch float64, differentiable."""

    name = "torch"

    @staticmethod
    def fn(name, args):
        x = args[0]
        y = args[1] if len(args) > 1 else None
        T = torch
        k = math.sqrt(2.0 / math.pi)
        return {
            "add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y,
            "pow": lambda: T.pow(x, y), "floordiv": lambda: T.floor_divide(x.detach(), y.detach()),
            "mod": lambda: T.remainder(x, y), "neg": lambda: -x, "min": lambda: T.minimum(x, y),
            "max": lambda: T.maximum(x, y), "clip": lambda: T.clamp(x, float(y), float(args[2])),
            "abs": lambda: T.abs(x), "sign": lambda: T.sign(x.detach()), "square": lambda: x * x,
            "exp": lambda: T.exp(x), "log": lambda: T.log(x), "sqrt": lambda: T.sqrt(x),
            "rsqrt": lambda: T.rsqrt(x), "tanh": lambda: T.tanh(x), "relu": lambda: T.relu(x),
            "sigmoid": lambda: T.sigmoid(x), "silu": lambda: T.nn.functional.silu(x),
            "gelu": lambda: T.nn.functional.gelu(x),
            "gelu_tanh": lambda: 0.5 * x * (1.0 + T.tanh(k * (x + 0.044715 * x ** 3))),
            "softplus": lambda: T.logaddexp(T.zeros_like(x), x), "sin": lambda: T.sin(x),
            "cos": lambda: T.cos(x), "erf": lambda: T.erf(x), "floor": lambda: T.floor(x.detach()),
            "ceil": lambda: T.ceil(x.detach()), "round": lambda: T.round(x.detach()),
        }[name]()


CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
       "eq": np.equal, "ne": np.not_equal}
# Operations whose result is exact (compared bit for bit) when their inputs are.
EXACT_FNS = {"neg", "abs", "relu", "min", "max", "clip", "sign", "floor", "ceil", "round", "lt", "le",
             "gt", "ge", "eq", "ne", "and", "or", "not", "where"}
# Discontinuous functions: their float operands must be exact, or a rounding
# difference of one ulp flips the answer.
DISCONTINUOUS = {"floor", "ceil", "round", "sign", "floordiv", "mod", "lt", "le", "gt", "ge", "eq", "ne"}
SMOOTH_MATH = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "softplus",
               "sin", "cos", "erf", "square", "relu", "abs", "neg"]


def is_t(v) -> bool:
    return torch is not None and isinstance(v, torch.Tensor)


def to_np(v):
    return v.detach().numpy() if is_t(v) else np.asarray(v)


@dataclass
class RVal:
    v: object  # np.ndarray (float64 / int64 / bool) or torch tensor (float64)
    dtype: str
    exact: bool
    K: int
    tol: float = 0.0  # the largest relative rounding error on its path (rtol of the narrowest float)


class Reference:
    def __init__(self, prog: Program, inputs: dict, grad_mode: bool):
        self.p = prog
        self.sizes = prog.sizes
        self.grad_mode = grad_mode
        self.env: dict = {}
        for q in prog.params:
            v = inputs[q.name]
            if grad_mode and q.dtype in FLOATS:
                v = torch.tensor(np.asarray(v, np.float64), requires_grad=True)
            self.env[q.name] = RVal(v, q.dtype, True, 1)

    def fl(self, v):
        """A float value for the active math backend."""
        if self.grad_mode:
            return v if is_t(v) else torch.tensor(np.asarray(v, np.float64))
        return np.asarray(to_np(v), np.float64)

    def finish(self, v, dtype):
        """Rounded to dtype (numpy mode; torch values stay float64)."""
        if is_t(v):
            if dtype == "f32":  # rounded to f32 forward, and its gradient backward, as ein computes
                return v.to(torch.float32).to(torch.float64)
            if dtype in FLOATS:
                return v
            v = to_np(v)
        if dtype in INTS:
            v = np.asarray(v)
            if v.dtype.kind == "f":
                raise Invalid("integer result from float math")
            if v.size and np.abs(v.astype(np.float64)).max() > 2.0 ** 52:
                raise Invalid("integer values too large")
        try:
            return rc.quantize(v, dtype)
        except OverflowError as exc:
            raise Invalid(str(exc))

    def run(self):
        types = self.p.types()
        wrt = {n for s in self.p.stmts if s.op == "grad" for n in s.ins[1:]}
        for s in self.p.stmts:
            outs = self.step(s, types)
            in_tol = max([self.env[n].tol for n in s.ins if n in self.env and types[n][0] != "ps"], default=0.0)
            if s.op == "grad":  # a gradient goes through every float op of the function
                in_tol = max([rc.RTOL[t[0]] for t in types.values() if t[0] in FLOATS], default=0.0)
            for o, r in zip(s.outs, outs):
                if r.dtype in FLOATS and not r.exact:
                    r.tol = max(in_tol, rc.RTOL[r.dtype])
                if is_t(r.v):  # a value of its own: grad(wrt=[o]) is not its operand's
                    r.v = r.v.clone()
                    if o in wrt and not r.v.requires_grad:  # e.g. floor(x): a variable all the same
                        r.v = r.v.detach().requires_grad_(True)
                self.env[o] = r
        return [self.env[r] for r in self.p.rets]

    def step(self, s: Stmt, types):
        a = s.attrs
        env = self.env
        ins = [env[n] for n in s.ins if types[n][0] != "ps"]
        dt_out = s.out_types[0][0]
        exact_in = all(r.exact for r in ins)
        K_in = max([r.K for r in ins], default=1)
        if s.op == "ew":
            return [self.elementwise(s, types)]
        if s.op == "astype":
            x = ins[0]
            src, dst = x.dtype, a["dtype"]
            if dst in FLOATS:
                if src in FLOATS:
                    v = x.v
                else:
                    v = self.fl(to_np(x.v).astype(np.float64))
                return [RVal(self.finish(v, dst), dst, x.exact, x.K)]
            xv = to_np(x.v)
            if dst == "bool":
                return [RVal(xv != 0, dst, x.exact, 1)]
            if src in FLOATS:
                lo, hi = rc.INT_RANGE[dst]
                with np.errstate(invalid="ignore"):
                    t = np.trunc(np.nan_to_num(xv, nan=0.0, posinf=hi, neginf=lo))
                v = np.clip(t, lo, hi).astype(np.int64)
            else:
                v = xv.astype(np.int64)
                if dst == "i32":
                    v = v.astype(np.int32).astype(np.int64)
            return [RVal(self.finish(v, dst), dst, True, 1)]
        if s.op == "reduce":
            x = ins[0]
            red = a["red"]
            kw = {k: dim_value(e, self.sizes) for k, e in a.get("kw", {}).items()}
            xv = x.v if (self.grad_mode and is_t(x.v)) else to_np(x.v)
            n_in = int(np.prod(xv.shape)) if len(xv.shape) else 1
            if red in ("max", "min") and n_in == 0:
                raise Invalid("max/min over an empty axis")
            if red in ("any", "all"):
                out = einops.reduce(xv, a["pattern"], red, **kw)
                return [RVal(np.asarray(out, np.bool_), "bool", exact_in, 1)]
            if not is_t(xv):
                xv = xv.astype(np.float64) if x.dtype in FLOATS else xv.astype(np.int64)
            if red == "var":
                # einops has no "var": its callable form, population variance
                # (numpy's ddof=0, torch's correction=0) over the reduced axes.
                red = ((lambda t, axes: t.var(dim=axes, correction=0)) if is_t(xv)
                       else (lambda t, axes: np.var(t, axis=axes)))
            with np.errstate(all="ignore"):
                out = einops.reduce(xv, a["pattern"], red, **kw)
            n_out = int(np.prod(out.shape)) if len(out.shape) else 1
            K = n_in // n_out if n_out else 1
            exact = exact_in and (red in ("max", "min") or dt_out in INTS)
            if dt_out in INTS and red == "prod" and np.size(out) and np.abs(to_np(out)).max() > 2 ** 31:
                raise Invalid("integer product overflows")
            return [RVal(self.finish(out, dt_out), dt_out, exact, K_in + max(1, K))]
        if s.op in ("rearrange", "repeat"):
            x = ins[0]
            kw = {k: dim_value(e, self.sizes) for k, e in a.get("kw", {}).items()}
            f = einops.rearrange if s.op == "rearrange" else einops.repeat
            out = f(x.v if is_t(x.v) else np.asarray(x.v), a["pattern"], **kw)
            return [RVal(out, x.dtype, x.exact, x.K)]
        if s.op == "einsum":
            eq = a["np"]
            if any(is_t(r.v) for r in ins) and all(r.dtype in FLOATS for r in ins):
                out = torch.einsum(eq, *[self.fl(r.v) for r in ins])
            else:
                kind = np.float64 if ins[0].dtype in FLOATS else np.int64
                out = np.einsum(eq, *[to_np(r.v).astype(kind) for r in ins])
            K = int(a.get("K_expr") and dim_value(a["K_expr"], self.sizes) or 1)
            exact = dt_out in INTS
            return [RVal(self.finish(out, dt_out), dt_out, exact, K_in + max(1, K))]
        if s.op == "pack":
            vals = [r.v for r in ins]
            if any(is_t(v) for v in vals):
                vals = [self.fl(v) for v in vals]
            packed, ps = pack_ref(vals, a["pattern"])
            return [RVal(packed, ins[0].dtype, exact_in, K_in), RVal(ps, "ps", True, 1)]
        if s.op == "unpack":
            x = ins[0]
            ps = env[s.ins[1]].v
            parts = unpack_ref(x.v, ps, a["pattern"])
            return [RVal(v, x.dtype, x.exact, x.K) for v in parts]
        if s.op == "cat":
            k = a["k"]
            vals = [r.v for r in ins]
            if any(is_t(v) for v in vals):
                out = torch.cat([self.fl(v) for v in vals], dim=k)
            else:
                out = np.concatenate([np.asarray(v) for v in vals], axis=k)
            return [RVal(out, ins[0].dtype, exact_in, K_in)]
        if s.op == "slice":
            x = ins[0]
            k = a["k"]
            n = x.v.shape[k]
            start, stop = dim_value(a["start"], self.sizes), dim_value(a["stop"], self.sizes)
            if not (0 <= start <= stop <= n):
                raise Invalid("slice out of range")
            idx = [slice(None)] * len(x.v.shape)
            idx[k] = slice(start, stop)
            return [RVal(x.v[tuple(idx)], x.dtype, x.exact, x.K)]
        if s.op == "take":
            t, ids = ins
            k = a["k"]
            iv = to_np(ids.v).astype(np.int64)
            if is_t(t.v):
                flat = torch.index_select(t.v, k, torch.tensor(iv.reshape(-1)))
                shape = tuple(t.v.shape[:k]) + iv.shape + tuple(t.v.shape[k + 1:])
                out = flat.reshape(shape)
            else:
                out = np.take(np.asarray(t.v), iv, axis=k)
            return [RVal(out, t.dtype, t.exact, t.K)]
        if s.op == "arange":
            n = dim_value(a["n"], self.sizes)
            out = np.arange(n).astype(np.int64 if a["dtype"] in INTS else np.float64)
            return [RVal(self.finish(out, a["dtype"]), a["dtype"], True, 1)]
        if s.op == "grad":
            loss = env[s.ins[0]]
            wrt = [env[n] for n in s.ins[1:]]
            live_wrt = [w.v for w in wrt if is_t(w.v) and w.v.requires_grad]
            if is_t(loss.v) and loss.v.requires_grad and live_wrt:
                got = iter(torch.autograd.grad(loss.v, live_wrt, allow_unused=True, retain_graph=True))
            else:
                got = iter([None] * len(live_wrt))
            grads = [next(got) if is_t(w.v) and w.v.requires_grad else None for w in wrt]
            out = []
            for w, g in zip(wrt, grads):
                g = torch.zeros(tuple(w.v.shape)) if g is None else g.detach()
                out.append(RVal(g, w.dtype, False, loss.K + 2))
            return out
        raise AssertionError(s.op)

    def elementwise(self, s: Stmt, types):
        a = s.attrs
        fn = a["fn"]
        dtype, out_dims = s.out_types[0]
        args, dims, exact, K = [], [], True, 1
        op_dtype = None
        for x in a["args"]:
            if "v" in x:
                r = self.env[x["v"]]
                args.append(r)
                dims.append(types[x["v"]][1])
                exact &= r.exact
                K = max(K, r.K)
                if fn != "where" or len(args) > 1:
                    op_dtype = r.dtype
            else:
                args.append(x)
                dims.append([])
        if op_dtype is None:
            op_dtype = dtype

        def value(arg, d, as_float):
            if isinstance(arg, RVal):
                v = arg.v
            elif "size" in arg:
                v = dim_value(arg["size"], self.sizes)
                v = rc.quantize(np.asarray(float(v) if as_float else v), op_dtype)
            else:
                v = rc.quantize(np.asarray(arg["lit"]), op_dtype) if op_dtype != "bool" else np.asarray(arg["lit"])
            if as_float:
                v = self.fl(v)
            else:
                v = to_np(v)
            return align(v, d, out_dims, None) if d else v

        exact_out = exact and (fn in EXACT_FNS or op_dtype in INTS or dtype in INTS or dtype == "bool")
        if fn == "where":
            c = to_np(value(args[0], dims[0], False))
            floaty = op_dtype in FLOATS
            x, y = value(args[1], dims[1], floaty), value(args[2], dims[2], floaty)
            if floaty and self.grad_mode:
                out = torch.where(torch.tensor(np.asarray(c, np.bool_)), x, y)
            else:
                out = np.where(c, to_np(x), to_np(y))
            return RVal(self.finish(out, dtype), dtype, exact_out, K)
        if fn in ("and", "or", "not"):
            vs = [to_np(value(x, d, False)) for x, d in zip(args, dims)]
            out = {"and": lambda: vs[0] & vs[1], "or": lambda: vs[0] | vs[1], "not": lambda: ~vs[0]}[fn]()
            return RVal(np.asarray(out), "bool", exact_out, 1)
        if fn in CMP:
            floaty = op_dtype in FLOATS
            vs = [to_np(value(x, d, False)) for x, d in zip(args, dims)]
            if not floaty and op_dtype != "bool":
                vs = [np.asarray(v, np.int64) for v in vs]
            return RVal(np.asarray(CMP[fn](vs[0], vs[1])), "bool", exact_out, 1)
        if op_dtype in INTS:
            vs = [np.asarray(to_np(value(x, d, False)), np.int64) for x, d in zip(args, dims)]
            vs = [np.array(v) for v in np.broadcast_arrays(*vs)]
            with np.errstate(all="ignore"):
                if fn == "div":
                    out = rc.ein_int_div(vs[0], vs[1], op_dtype)
                elif fn == "pow":
                    out = rc.ein_int_pow(vs[0], vs[1], op_dtype)
                elif fn in ("floordiv", "mod"):
                    x, y = np.broadcast_arrays(vs[0], vs[1])
                    safe = np.where(y == 0, 1, y)
                    out = np.floor_divide(x, safe) if fn == "floordiv" else np.remainder(x, safe)
                    out = np.where(y == 0, 0, out)
                elif fn == "relu":
                    out = np.maximum(vs[0], 0)
                elif fn == "clip":
                    out = np.minimum(np.maximum(vs[0], vs[1]), vs[2])
                elif fn == "square":
                    out = vs[0] * vs[0]
                elif fn in ("abs", "sign", "neg"):
                    out = {"abs": np.abs, "sign": np.sign, "neg": np.negative}[fn](vs[0])
                else:
                    out = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                           "min": np.minimum, "max": np.maximum}[fn](vs[0], vs[1])
            return RVal(self.finish(out, dtype), dtype, True, 1)
        vs = [value(x, d, True) for x, d in zip(args, dims)]
        backend = TORCH if self.grad_mode else NP
        out = backend.fn(fn, vs)
        return RVal(self.finish(out, dtype), dtype, exact_out, K + (0 if exact_out else 1))


def pack_ref(vals, pattern):
    """einops.pack, also for empty tensors (einops reshapes with -1)."""
    names = pattern.split()
    nb = names.index("*")
    na = len(names) - nb - 1
    flat, ps = [], []
    for v in vals:
        shape = tuple(v.shape)
        rest = shape[nb:len(shape) - na]
        ps.append(rest)
        flat.append(v.reshape(shape[:nb] + (int(np.prod(rest, dtype=np.int64)),) + shape[len(shape) - na:]))
    if is_t(flat[0]):
        return torch.cat(flat, dim=nb), ps
    return np.concatenate(flat, axis=nb), ps


def unpack_ref(x, ps, pattern):
    names = pattern.split()
    nb = names.index("*")
    shape = tuple(x.shape)
    out, start = [], 0
    for rest in ps:
        n = int(np.prod(rest, dtype=np.int64))
        idx = [slice(None)] * len(shape)
        idx[nb] = slice(start, start + n)
        out.append(x[tuple(idx)].reshape(shape[:nb] + tuple(rest) + shape[nb + 1:]))
        start += n
    return out


def make_inputs(p: Program) -> dict:
    """Per parameter: (file content, the values einc sees), seeded by the
    program's seed and the parameter's name (so cutting a statement into a
    parameter leaves the others' values alone)."""
    out = {}
    for q in p.params:
        rng = np.random.default_rng([p.seed, zlib.crc32(q.name.encode())])
        shape = [dim_value(d, p.sizes) for d in q.dims]
        if q.domain.startswith("ids:"):
            n = dim_value(q.domain[4:], p.sizes)
            if n <= 0 and int(np.prod(shape)) > 0:
                raise Invalid("ids into an empty axis")
            v = rng.integers(0, max(n, 1), size=shape)
            arr = v.astype(np.int32 if q.dtype == "i32" else np.int64)
            out[q.name] = (arr, arr.astype(np.int64))
        else:
            out[q.name] = rc.make_input(rng, shape, q.dtype, q.domain)
    return out


def is_grad(p: Program) -> bool:
    return any(s.op == "grad" for s in p.stmts)


def reference(p: Program):
    """(inputs, [Out per result]) or raises Invalid."""
    inputs = make_inputs(p)
    vals = {k: v[1] for k, v in inputs.items()}
    grad_mode = is_grad(p)
    if grad_mode and torch is None:
        raise Invalid("grad needs torch")
    res = Reference(p, vals, grad_mode).run()
    outs = []
    for r in res:
        v = to_np(r.v)
        if r.dtype in FLOATS:
            v = rc.quantize(np.asarray(v, np.float64), r.dtype)
        elif r.dtype in INTS:
            v = rc.quantize(v, r.dtype)
        else:
            v = np.asarray(v, np.bool_)
        K = max(1, r.K)
        if r.dtype in ("f32", "f64") and r.tol > rc.RTOL[r.dtype]:  # computed through a narrower dtype
            K = int(math.ceil(K * r.tol / rc.RTOL[r.dtype]))
        outs.append(rc.Out(r.dtype, v, r.exact, K))
    return inputs, outs


# --------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------


class Gen:
    def __init__(self, seed: int, index: int):
        self.rng = np.random.default_rng([seed, index])
        r = self.rng
        self.seed = seed * 100003 + index
        self.n_names = int(r.integers(2, 5))
        names = list(BASE_NAMES[: self.n_names])
        self.fixed = r.random() < 0.25
        lo = 2 if self.fixed else 1
        self.sizes = {n: int(r.choice([lo, 2, 3, 3, 4, 5]) if r.random() > 0.03 else 0) for n in names}
        if self.fixed:
            self.sizes = {n: max(2, s) for n, s in self.sizes.items()}
        self.grad = torch is not None and r.random() < 0.2
        if self.grad:
            self.dtype = str(r.choice(["f64", "f32"]))
        else:
            self.dtype = str(r.choice(["f64", "f32", "f32", "f16", "bf16", "i32", "i64"]))
        self.params: list[Param] = []
        self.stmts: list[Stmt] = []
        self.types: dict = {}
        self.exact: dict = {}
        self.n_vals = 0
        self.ps: list = []  # (ps name, packed dims, pattern, part dims)
        self.diag_params: set = set()  # "n n" parameters: only diagonal einsums read them
        self.focus = None  # a value the next op prefers as its operand

    # -- helpers --
    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def fresh(self, prefix="v"):
        self.n_vals += 1
        return f"{prefix}{self.n_vals}"

    def param(self, dtype, dims, domain=None):
        name = f"x{len(self.params)}"
        if domain is None:
            if dtype in FLOATS:
                domain = "frac" if self.rng.random() < 0.25 else "any"
            else:
                domain = "any"
        self.params.append(Param(name, dtype, list(dims), domain))
        self.types[name] = (dtype, list(dims))
        self.exact[name] = True
        return name

    def bound(self):
        """The base names some parameter's type binds (the only ones a
        keyword size or a size value may name)."""
        return [n for n in self.sizes if any(n in q.dims for q in self.params)]

    def rand_dims(self, rank, avoid=()):
        avail = [n for n in self.sizes if n not in avoid]
        self.rng.shuffle(avail)
        return avail[: min(rank, len(avail))]

    def add(self, op, ins, out_types, attrs, exact):
        outs = [self.fresh("ps" if t[0] == "ps" else "v") for t in out_types]
        self.stmts.append(Stmt(op, list(ins), outs, [[t[0], list(t[1])] for t in out_types], attrs))
        for o, t in zip(outs, out_types):
            self.types[o] = (t[0], list(t[1]))
            self.exact[o] = exact
        return outs

    def values(self, pred=lambda n, t: True):
        return [n for n, t in self.types.items() if t[0] != "ps" and n not in self.diag_params and pred(n, t)]

    def choose(self, pred, recent=True):
        f, self.focus = self.focus, None
        if f and f in self.types and self.types[f][0] != "ps" and f not in self.diag_params and \
                pred(f, self.types[f]):
            return f  # the epilogue of a contraction or reduction, as the fusion passes meet them
        vs = self.values(pred)
        if not vs:
            return None
        if recent and self.rng.random() < 0.6:
            return vs[-1 - int(self.rng.integers(min(3, len(vs))))]
        return self.pick(vs)

    def axis_names(self, dims):
        """Pattern axis names for dims: base names as themselves, others u1..."""
        out, k = [], 0
        for d in dims:
            if plain(d):
                out.append(d)
            elif d == "1":
                out.append("1")
            else:
                k += 1
                out.append(f"u{k}")
        return out

    def ew(self, fn, args, dtype, dims, exact):
        return self.add("ew", [x["v"] for x in args if "v" in x], [(dtype, dims)], {"fn": fn, "args": args},
                        exact)[0]

    def literal(self, dtype, nonzero=False):
        if dtype in INTS:
            return int(self.pick([1, 2, 3, -2] if nonzero else [0, 1, 2, 3, -2]))
        return float(self.pick([0.5, 2.0, -1.5, 3.0, 0.25, -0.75]))

    # -- ops --
    def op_unary(self):
        floaty = self.rng.random() < 0.8
        fn = self.pick(SMOOTH_MATH + ["floor", "ceil", "round", "sign", "clip"])
        need_float = fn not in ("relu", "abs", "neg", "square", "sign", "clip")
        discont = fn in DISCONTINUOUS
        x = self.choose(lambda n, t: (t[0] in FLOATS if (need_float or floaty) else t[0] in NUMBERS)
                        and (not discont or self.exact[n]))
        if x is None:
            return False
        dt, dims = self.types[x]
        if self.grad and dt not in FLOATS and fn in SMOOTH_MATH:
            return False
        if fn in ("log", "sqrt", "rsqrt"):
            t1 = self.ew("abs", [{"v": x}], dt, dims, self.exact[x])
            x = self.ew("add", [{"v": t1}, {"lit": 0.5}], dt, dims, False)
        elif fn in ("exp", "softplus") and not self.exact[x]:
            x = self.ew("clip", [{"v": x}, {"lit": -4.0}, {"lit": 4.0}], dt, dims, False)
        if fn == "clip":
            lo = self.literal(dt)
            args = [{"v": x}, {"lit": lo}, {"lit": lo + (2 if dt in INTS else 1.25)}]
        else:
            args = [{"v": x}]
        self.ew(fn, args, dt, dims, self.exact[x] and (fn in EXACT_FNS or dt in INTS))
        return True

    def partner(self, x, same_exact=False, allow_fresh=True):
        """A second operand for x: (arg, result dims) broadcasting by name."""
        dt, dims = self.types[x]
        r = self.rng.random()
        if r < 0.2:
            return {"lit": self.literal(dt)}, dims
        if r < 0.27 and dt != "bool" and self.bound() and not self.grad:
            return {"size": self.pick(self.bound())}, dims
        cands = self.values(lambda n, t: t[0] == dt and bcast(dims, t[1]) is not None
                            and (not same_exact or self.exact[n]))
        if cands and (self.rng.random() < 0.6 or not allow_fresh):
            y = self.pick(cands)
            return {"v": y}, bcast(dims, self.types[y][1])
        if not allow_fresh or not all(plain(d) or d == "1" for d in dims):
            return {"v": x}, dims
        keep = [d for d in dims if self.rng.random() < 0.6]
        if self.rng.random() < 0.2 and keep:  # a unit dim, equal rank
            pdims = [d if d in keep else "1" for d in dims]
        else:
            pdims = keep
        domain = "frac" if same_exact and dt in FLOATS else None
        return {"v": self.param(dt, pdims, domain)}, bcast(dims, pdims)

    def op_binary(self):
        fn = self.pick(["add", "sub", "mul", "div", "pow", "floordiv", "mod", "min", "max",
                        "add", "mul", "sub", "lt", "le", "gt", "ge", "eq", "ne"])
        discont = fn in DISCONTINUOUS
        x = self.choose(lambda n, t: t[0] in NUMBERS and (not discont or self.exact[n]))
        if x is None:
            return False
        dt, dims = self.types[x]
        if self.grad and fn in ("floordiv",) and dt in FLOATS:
            return False
        if fn == "pow":
            if dt in INTS:
                y, out = {"lit": int(self.pick([0, 1, 2, 3]))}, dims
            else:
                t1 = self.ew("abs", [{"v": x}], dt, dims, self.exact[x])
                x = self.ew("add", [{"v": t1}, {"lit": 0.5}], dt, dims, False)
                if self.rng.random() < 0.5:
                    y, out = {"lit": float(self.pick([2.0, 3.0, 0.5, -1.0, 1.5]))}, dims
                else:
                    y, out = self.partner(x)
                    if "size" in y:
                        y = {"lit": 2.0}
        else:
            y, out = self.partner(x, same_exact=discont)
            if fn in ("div", "floordiv", "mod") and dt in FLOATS:
                if "lit" in y and y["lit"] == 0:
                    y = {"lit": 2.0}
                if "v" in y:
                    ydt, ydims = self.types[y["v"]]
                    t1 = self.ew("abs", [y], ydt, ydims, self.exact[y["v"]])
                    y = {"v": self.ew("add", [{"v": t1}, {"lit": 0.5}], ydt, ydims, self.exact[y["v"]]
                                      and discont)}
                    if discont:  # abs(y) + 0.5 on an exact y is exact in the reference too
                        self.exact[y["v"]] = self.exact[x]
        if out is None:
            return False
        args = [{"v": x}, y]
        if self.rng.random() < 0.3 and (fn not in ("div", "floordiv", "mod", "pow") or dt in INTS):
            args = args[::-1]
        if fn == "pow" and "v" not in args[0]:
            args = args[::-1]
        rdt = "bool" if fn in CMP else dt
        exact = all(self.exact.get(a.get("v"), True) for a in args) and (fn in EXACT_FNS or dt in INTS)
        if fn in ("floordiv", "mod") and dt in FLOATS:
            exact = False
        self.ew(fn, args, rdt, out, exact)
        return True

    def row_epilogue(self, red: Stmt):
        """x - m, x / m, x < m ... after m = reduce(x, "... -> ... 1"): the
        row-reduction pattern ein-fuse-rows fuses."""
        x, m = red.ins[0], red.outs[0]
        dt, dims = self.types[x]
        mdt, mdims = self.types[m]
        if mdt != dt or dt == "bool" or bcast(dims, mdims) != dims:
            return
        fns = ["sub", "add", "mul", "max"] + (["lt", "ge", "eq"] if self.exact[x] and self.exact[m] else [])
        fn = self.pick(fns)
        rdt = "bool" if fn in CMP else dt
        v = self.ew(fn, [{"v": x}, {"v": m}], rdt, dims, self.exact[x] and self.exact[m] and
                    (fn in EXACT_FNS or dt in INTS))
        if dt in FLOATS and fn == "sub" and self.rng.random() < 0.5:
            self.ew("exp", [{"v": v}], dt, dims, False)
        elif rdt == "bool" and self.rng.random() < 0.6:
            self.add("astype", [v], [(self.pick(["f32", "f64", "i32"]), dims)], {"dtype": "f32"}, True)
            st = self.stmts[-1]
            st.attrs["dtype"] = st.out_types[0][0]

    def op_logic(self):
        bools = self.values(lambda n, t: t[0] == "bool")
        if not bools:
            return False
        x = self.pick(bools)
        dims = self.types[x][1]
        r = self.rng.random()
        if r < 0.3:
            self.ew("not", [{"v": x}], "bool", dims, True)
            return True
        if r < 0.6:
            cands = [b for b in bools if bcast(dims, self.types[b][1]) is not None]
            y = self.pick(cands)
            self.ew(self.pick(["and", "or", "eq", "ne"]), [{"v": x}, {"v": y}], "bool",
                    bcast(dims, self.types[y][1]), True)
            return True
        # where(c, a, b): a broadcasts c; b is a value or a literal.
        a = self.choose(lambda n, t: t[0] in NUMBERS and bcast(t[1], dims) == t[1])
        if a is None:
            return False
        dt, adims = self.types[a]
        if self.rng.random() < 0.5:
            b = {"lit": self.literal(dt)}
        else:
            bb = self.choose(lambda n, t: t[0] == dt and bcast(adims, t[1]) == adims, recent=False)
            b = {"v": bb} if bb else {"lit": self.literal(dt)}
        args = [{"v": x}, {"v": a}, b]
        exact = self.exact[a] and self.exact.get(b.get("v"), True)
        self.ew("where", args, dt, adims, exact)
        return True

    def op_compare(self):
        x = self.choose(lambda n, t: t[0] in NUMBERS and self.exact[n])
        if x is None:
            return False
        dt, dims = self.types[x]
        y, out = self.partner(x, same_exact=True)
        if out is None:
            return False
        self.ew(self.pick(list(CMP)), [{"v": x}, y], "bool", out, True)
        return True

    def op_astype(self):
        x = self.choose(lambda n, t: True)
        src, dims = self.types[x]
        if self.grad:
            choices = [d for d in ("f32", "f64") if d != src] if src in FLOATS else ["f32", "f64"]
        else:
            choices = [d for d in ALL_DTYPES if d != src]
        if src in FLOATS and not self.exact[x]:
            choices = [d for d in choices if d in FLOATS]
        if not choices:
            return False
        dst = self.pick(choices)
        self.add("astype", [x], [(dst, dims)], {"dtype": dst}, self.exact[x])
        return True

    def op_reduce(self):
        x = self.choose(lambda n, t: len(t[1]) >= 1)
        if x is None:
            return False
        dt, dims = self.types[x]
        if dt == "bool":
            red = self.pick(["any", "all"])
        else:
            reds = ["sum", "max", "min", "sum"] + (["mean", "var"] if dt in FLOATS else []) + \
                   ([] if self.grad else ["prod"])
            red = self.pick(reds)
        axes = self.axis_names(dims)
        n = len(dims)
        red_mask = [self.rng.random() < 0.5 for _ in range(n)]
        if not any(red_mask):
            red_mask[int(self.rng.integers(n))] = True
        keepdims = self.rng.random() < 0.35
        out_axes, out_dims = [], []
        for ax, d, r in zip(axes, dims, red_mask):
            if r:
                if keepdims:
                    out_axes.append("1")
                    out_dims.append("1")
            else:
                out_axes.append(ax)
                out_dims.append(d)
        if not keepdims and self.rng.random() < 0.3 and len(out_axes) > 1:
            perm = list(self.rng.permutation(len(out_axes)))
            out_axes = [out_axes[i] for i in perm]
            out_dims = [out_dims[i] for i in perm]
        acc = None
        if red in ("sum", "max", "min", "prod", "mean", "var") and self.rng.random() < 0.3:
            if dt in ("f16", "bf16"):
                acc = "f32"
            elif dt == "i32" and red != "mean":
                acc = "i64"
            elif dt == "f32" and self.rng.random() < 0.3:
                acc = "f64"
        pattern = f"{' '.join(axes)} -> {' '.join(out_axes)}"
        if self.rng.random() < 0.3 and not red_mask[0] and out_axes and out_axes[0] == axes[0]:
            pattern = f"... {' '.join(axes[1:])} -> ... {' '.join(out_axes[1:])}"
        attrs = {"pattern": pattern, "red": red}
        if acc:
            attrs["acc"] = acc
        rdt = "bool" if dt == "bool" else (acc or dt)
        exact = self.exact[x] and (red in ("max", "min", "any", "all") or rdt in INTS)
        self.add("reduce", [x], [(rdt, out_dims)], attrs, exact)
        return True

    def op_rearrange(self):
        x = self.choose(lambda n, t: len(t[1]) >= 1)
        if x is None:
            return False
        dt, dims = self.types[x]
        axes = self.axis_names(dims)
        items = list(zip(axes, dims))
        kw = {}
        in_side = []
        expanded = []
        for ax, d in items:
            m = re.fullmatch(r"([a-e])\*([a-e])", d)
            if m and self.rng.random() < 0.6:  # split a merged dim
                p, q = m.group(1), m.group(2)
                in_side.append(f"({p}{p} {q}{q})")
                kw[f"{p}{p}"] = p
                expanded += [(f"{p}{p}", p), (f"{q}{q}", q)]
            elif d == "1" and self.rng.random() < 0.5:
                in_side.append("1")  # dropped
            else:
                in_side.append(ax)
                expanded.append((ax, d))
        order = list(self.rng.permutation(len(expanded))) if self.rng.random() < 0.7 else list(range(len(expanded)))
        outs = [expanded[i] for i in order]
        out_side, out_dims = [], []
        i = 0
        while i < len(outs):
            if i + 1 < len(outs) and self.rng.random() < 0.3 and outs[i][1] != "1" and outs[i + 1][1] != "1":
                out_side.append(f"({outs[i][0]} {outs[i + 1][0]})")
                out_dims.append(prod_expr([outs[i][1], outs[i + 1][1]]))
                i += 2
            else:
                out_side.append(outs[i][0])
                out_dims.append(outs[i][1])
                i += 1
            if self.rng.random() < 0.1:
                out_side.append("1")
                out_dims.append("1")
        if len({sig(d) for d in out_dims if d != "1"}) != len([d for d in out_dims if d != "1"]):
            return False
        pattern = f"{' '.join(in_side)} -> {' '.join(out_side)}"
        self.add("rearrange", [x], [(dt, out_dims)], {"pattern": pattern, "kw": kw}, self.exact[x])
        return True

    def op_repeat(self):
        x = self.choose(lambda n, t: True)
        dt, dims = self.types[x]
        new = [n for n in self.bound() if all(sig(n) != sig(d) for d in dims)]
        axes = self.axis_names(dims)
        if new and self.rng.random() < 0.7:
            nm = self.pick(new)
            pos = int(self.rng.integers(len(dims) + 1))
            out_axes = axes[:pos] + [nm] + axes[pos:]
            out_dims = dims[:pos] + [nm] + dims[pos:]
            kw = {nm: nm}
        elif dims:
            k = int(self.rng.integers(len(dims)))
            if dims[k] == "1":
                return False
            out_axes = axes[:k] + [f"({axes[k]} 2)"] + axes[k + 1:]
            out_dims = dims[:k] + [prod_expr(["2", dims[k]])] + dims[k + 1:]
            kw = {}
            if any(sig(out_dims[k]) == sig(d) for j, d in enumerate(out_dims) if j != k):
                return False
        else:
            return False
        pattern = f"{' '.join(axes)} -> {' '.join(out_axes)}"
        self.add("repeat", [x], [(dt, out_dims)], {"pattern": pattern, "kw": kw}, self.exact[x])
        return True

    def op_einsum(self):
        x = self.choose(lambda n, t: t[0] in NUMBERS)
        if x is None:
            return False
        dt, dims = self.types[x]
        ops = [x]
        n_ops = int(self.pick([1, 2, 2, 2, 3]))
        for _ in range(n_ops - 1):
            if self.rng.random() < 0.4:
                cands = self.values(lambda n, t: t[0] == dt and n not in ops)
                if cands:
                    ops.append(self.pick(cands))
                    continue
            share = [d for d in dims if plain(d) and self.rng.random() < 0.7]
            extra = self.rand_dims(int(self.rng.integers(0, 2)), avoid=[d for d in dims])
            pd = share + extra
            self.rng.shuffle(pd)
            ops.append(self.param(dt, pd))
        # one axis name per distinct dim
        names: dict = {}
        letters = iter("ijklmnopqrstuvwxyzABCDEFGH")
        pats, all_axes = [], []
        for o in ops:
            side = []
            for d in self.types[o][1]:
                key = sig(d)
                if key not in names:
                    names[key] = (next(letters), d)
                    all_axes.append(key)
                side.append(names[key][0])
            pats.append(side)
        out_keys = [k for k in all_axes if self.rng.random() < 0.5]
        self.rng.shuffle(out_keys)
        summed = [names[k][1] for k in all_axes if k not in out_keys]
        acc = None
        if self.rng.random() < 0.3:
            acc = {"bf16": "f32", "f16": "f32", "i32": "i64", "f32": "f64"}.get(dt)
        lhs = ", ".join(" ".join(s) for s in pats)
        out_side = [names[k][0] for k in out_keys]
        pattern = f"{lhs} -> {' '.join(out_side)}"
        eq = ",".join("".join(s) for s in pats) + "->" + "".join(out_side)
        attrs = {"pattern": pattern, "np": eq, "K_expr": prod_expr(summed)}
        if acc:
            attrs["acc"] = acc
        rdt = acc or dt
        self.add("einsum", ops, [(rdt, [names[k][1] for k in out_keys])], attrs, rdt in INTS)
        return True

    def op_diag(self):
        if self.grad:
            return False
        n = self.pick(list(self.sizes))
        dt = self.pick(list(NUMBERS))
        p = self.param(dt, [n, n])
        self.diag_params.add(p)
        out = [n] if self.rng.random() < 0.6 else []
        pattern = "i i -> " + ("i" if out else "")
        eq = "ii->" + ("i" if out else "")
        self.add("einsum", [p], [(dt, out)], {"pattern": pattern, "np": eq,
                                              "K_expr": "1" if out else n}, dt in INTS)
        return True

    def op_pack(self, cat=False):
        x = self.choose(lambda n, t: len(t[1]) >= 1 and (not cat or True))
        if x is None:
            return False
        dt, dims = self.types[x]
        if cat:
            k = int(self.rng.integers(len(dims)))
            lead = list(range(k))
            cands = self.values(lambda n, t: t[0] == dt and len(t[1]) == len(dims) and all(
                sig(t[1][j]) == sig(dims[j]) for j in range(len(dims)) if j != k))
            if cands and self.rng.random() < 0.6:
                y = self.pick(cands)
            else:
                if not all(plain(d) or d == "1" for j, d in enumerate(dims) if j != k):
                    return False
                nd = self.pick(list(self.sizes))
                pd = list(dims)
                pd[k] = nd
                if len({sig(d) for d in pd if d != "1"}) != len([d for d in pd if d != "1"]):
                    pd[k] = dims[k] if plain(dims[k]) else nd
                if not all(plain(d) or d == "1" for d in pd) or \
                        len({sig(d) for d in pd if d != "1"}) != len([d for d in pd if d != "1"]):
                    return False
                y = self.param(dt, pd)
            ins = [x, y] if self.rng.random() < 0.7 else [x, y, x]
            axes = self.axis_names(dims)
            if any(a == "1" for j, a in enumerate(axes) if j != k):
                return False
            side = [a if j != k else "*" for j, a in enumerate(axes)]
            if k == len(dims) - 1 and self.rng.random() < 0.5:
                pattern = "... *"
            else:
                pattern = " ".join(side)
            joined = "+".join(par(self.types[i][1][k]) for i in ins)
            out_dims = list(dims)
            out_dims[k] = joined
            if len({sig(d) for d in out_dims if d != "1"}) != len([d for d in out_dims if d != "1"]):
                return False
            exact = all(self.exact[i] for i in ins)
            self.add("cat", ins, [(dt, out_dims)], {"pattern": pattern, "k": k}, exact)
            return True
        nlead = int(self.rng.integers(0, len(dims)))
        lead = dims[:nlead]
        if any(not plain(d) for d in lead):
            return False
        cands = self.values(lambda n, t: t[0] == dt and n != x and len(t[1]) >= nlead and all(
            sig(t[1][j]) == sig(lead[j]) for j in range(nlead)))
        if cands and self.rng.random() < 0.5:
            y = self.pick(cands)
        else:
            rest = self.rand_dims(int(self.rng.integers(0, 3)), avoid=lead)
            y = self.param(dt, lead + rest)
        ins = [x, y]
        parts = [self.types[i][1][nlead:] for i in ins]
        joined = "+".join(par(prod_expr(pp)) if pp else "1" for pp in parts)
        out_dims = lead + [joined]
        if len({sig(d) for d in out_dims}) != len(out_dims):
            return False
        pattern = " ".join(lead + ["*"])
        exact = all(self.exact[i] for i in ins)
        p, ps = self.add("pack", ins, [(dt, out_dims), ("ps", [])], {"pattern": pattern}, exact)
        self.ps.append((ps, out_dims, pattern, [lead + pp for pp in parts]))
        return True

    def op_unpack(self):
        if not self.ps:
            return False
        ps, pdims, pattern, parts = self.pick(self.ps)
        x = self.choose(lambda n, t: t[0] != "bool" and same_dims(t[1], pdims), recent=False)
        if x is None:
            return False
        dt = self.types[x][0]
        self.add("unpack", [x, ps], [(dt, d) for d in parts], {"pattern": pattern}, self.exact[x])
        return True

    def op_slice(self):
        x = self.choose(lambda n, t: any(d != "1" and dim_value(d, self.sizes) >= 2 for d in t[1]))
        if x is None:
            return False
        dt, dims = self.types[x]
        ks = [k for k, d in enumerate(dims) if d != "1" and dim_value(d, self.sizes) >= 2]
        k = self.pick(ks)
        D = dims[k]
        start = self.pick(["0", "1", "1"])
        stop = self.pick([D, f"{par(D)}-1"])
        if start == "0" and stop == D:
            start = "1"
        if start == "1" and stop != D:
            new = f"{par(D)}-2"
        else:
            new = f"{par(D)}-1"
        out_dims = list(dims)
        out_dims[k] = new
        if len({sig(d) for d in out_dims if d != "1"}) != len([d for d in out_dims if d != "1"]):
            return False
        self.add("slice", [x], [(dt, out_dims)], {"axis": D, "start": start, "stop": stop, "k": k},
                 self.exact[x])
        return True

    def op_take(self):
        x = self.choose(lambda n, t: any(d != "1" for d in t[1]))
        if x is None:
            return False
        dt, dims = self.types[x]
        k = self.pick([k for k, d in enumerate(dims) if d != "1"])
        rest = [d for j, d in enumerate(dims) if j != k]
        idims = self.rand_dims(int(self.rng.integers(0, 3)), avoid=[d for d in rest if plain(d)])
        idims = [d for d in idims if all(sig(d) != sig(r) for r in rest)]
        ids = self.param(self.pick(["i32", "i64"]), idims, f"ids:{dims[k]}")
        out_dims = dims[:k] + idims + dims[k + 1:]
        self.add("take", [x, ids], [(dt, out_dims)], {"axis": dims[k], "k": k}, self.exact[x])
        return True

    def op_arange(self):
        if not self.bound():
            return False
        n = self.pick(self.bound())
        dt = self.pick(["i64", "i32", "f32", "f64"]) if not self.grad else "i64"
        self.add("arange", [], [(dt, [n])], {"n": n, "dtype": dt}, True)
        return True

    OPS = [("unary", 14), ("binary", 16), ("reduce", 10), ("rearrange", 8), ("repeat", 5), ("einsum", 10),
           ("astype", 5), ("compare", 5), ("logic", 5), ("pack", 3), ("cat", 4), ("unpack", 3),
           ("slice", 5), ("take", 4), ("arange", 1), ("diag", 2)]

    def generate(self) -> Program:
        r = self.rng
        for _ in range(int(r.integers(1, 3))):
            self.param(self.dtype, self.rand_dims(int(r.integers(1, 4))))
        n_stmts = int(r.integers(2, 11))
        names = [o for o, _ in self.OPS]
        weights = np.array([w for _, w in self.OPS], dtype=float)
        tries = 0
        while len(self.stmts) < n_stmts and tries < 60:
            tries += 1
            op = names[int(r.choice(len(names), p=weights / weights.sum()))]
            fn = getattr(self, "op_" + ("pack" if op == "cat" else op))
            ok = fn(cat=True) if op == "cat" else fn()
            if not ok:
                continue
            last = self.stmts[-1]
            if last.op in ("einsum", "reduce") and r.random() < 0.5:
                self.focus = last.outs[0]
                if last.op == "reduce" and "1" in last.out_types[0][1] and r.random() < 0.6:
                    self.row_epilogue(last)
        vals = [n for n, t in self.types.items() if t[0] not in ("ps",)
                and n not in self.diag_params]
        outs = [s.outs for s in self.stmts]
        produced = [o for os_ in outs for o in os_ if self.types[o][0] != "ps"]
        if self.grad:
            return self.finish_grad(produced)
        rets = []
        if produced:
            rets.append(produced[-1])
        for _ in range(int(r.integers(0, 3))):
            c = self.pick(produced or vals)
            if c not in rets:
                rets.append(c)
        if not rets:
            rets = [vals[0]]
        return self.program(rets)

    def finish_grad(self, produced) -> Program:
        floats = [n for n in produced if self.types[n][0] in FLOATS]
        y = floats[-1] if floats else self.params[0].name
        dt, dims = self.types[y]
        if dt not in FLOATS:
            y = self.params[0].name
            dt, dims = self.types[y]
        t = self.ew("sin", [{"v": y}], dt, dims, False)
        axes = self.axis_names(dims)
        loss = self.add("reduce", [t], [(dt, [])], {"pattern": f"{' '.join(axes)} -> ",
                                                    "red": self.pick(["sum", "mean"])}, False)[0]
        cands = [q.name for q in self.params if q.dtype in FLOATS
                 and q.name not in self.diag_params]
        cands += [n for n in produced if self.types[n][0] in FLOATS and self.rng.random() < 0.2]
        self.rng.shuffle(cands)
        wrt = cands[: int(self.rng.integers(1, 4))]
        gtypes = [self.types[w] for w in wrt]
        grads = self.add("grad", [loss] + wrt, gtypes, {}, False)
        rets = [loss] + grads
        if self.rng.random() < 0.3 and y not in rets:
            rets.append(y)
        return self.program(rets)

    def program(self, rets) -> Program:
        anon = [bool(self.rng.random() < 0.3) for _ in rets]
        return Program(self.seed, dict(self.sizes), self.fixed, self.params, self.stmts, rets, anon)


def generate(seed: int, index: int, tries: int = 20) -> Optional[Program]:
    """Program `index` of the stream `seed`: the first one (of up to `tries`
    drawn from it) that has a reference answer."""
    for t in range(tries):
        p = Gen(seed, index * 1000 + t).generate()
        p.note = f"seed {seed} program {index}"
        try:
            reference(p)
        except Invalid:
            continue
        except Exception as exc:  # a reference limitation: say so, draw another
            print(f"note: seed {seed} program {index}.{t}: the reference failed: {exc!r}", file=sys.stderr)
            continue
        return p
    return None


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


@dataclass
class Outcome:
    ok: bool
    kind: str = ""  # "mismatch" or "exit N"
    what: str = ""
    stderr: str = ""


def run_variant(einc: str, p: Program, variant: str, workdir: str, tag: str) -> Outcome:
    try:
        inputs, outs = reference(p)
    except Invalid as exc:
        return Outcome(False, "invalid", str(exc))
    case = rc.RunCase(cid=f"{tag}-{variant}", category="difftest", desc=p.note, source=render(p),
                      inputs=[(q.name, inputs[q.name][0]) for q in p.params], outs=outs,
                      extra_args=QUIET + list(VARIANTS[variant]))
    res = rc.run_case(einc, case, workdir)
    if res.ok:
        return Outcome(True)
    m = re.match(r"exit (-?\d+), expected", res.what)
    kind = f"exit {m.group(1)}" if m else ("timeout" if res.what.startswith("timeout") else "mismatch")
    return Outcome(False, kind, res.what, res.stderr)


def error_key(o: Outcome) -> str:
    """What the minimiser keeps: the kind of failure and, for an error exit,
    the start of einc's first error (without file, line or names), so that
    a shrink that fails for another reason is not taken."""
    if not o.kind.startswith("exit"):
        return o.kind
    for line in o.stderr.split(" | "):
        m = re.search(r"error: (.*)", line)
        if m and not m.group(1).startswith("cannot compile"):
            return o.kind + ": " + re.sub(r"'[^']*'", "'_'", m.group(1))[:48]
    return o.kind


# Defects already filed that random programs meet: a failure that matches
# one is counted as known, not as a new finding. None is open now (issue
# 27's items 1 and 12-15, and the grad of a max/min reduce with acc= found
# here, are fixed): a failure like theirs is a regression. Add a matcher
# here, naming the issue, only while a bug is filed and open.
def known_defect(p: Program, variant: str, o: Outcome, unfused_ok: bool = False) -> Optional[str]:
    del p, variant, o, unfused_ok
    return None


# --------------------------------------------------------------------------
# Minimising
# --------------------------------------------------------------------------


def live(p: Program) -> Program:
    """Drops statements and parameters no result needs."""
    need = set(p.rets)
    keep = []
    for s in reversed(p.stmts):
        if any(o in need for o in s.outs):
            keep.append(s)
            need |= set(s.ins)
    keep.reverse()
    # a grad keeps its wrt's; unpack's pack stays through ins
    q = copy.deepcopy(p)
    q.stmts = [copy.deepcopy(s) for s in keep]
    q.params = [x for x in p.params if x.name in need]
    return q


def substitute(p: Program, old: str, new: str) -> Program:
    q = copy.deepcopy(p)
    for s in q.stmts:
        s.ins = [new if n == old else n for n in s.ins]
        if s.op == "ew":
            for a in s.attrs["args"]:
                if a.get("v") == old:
                    a["v"] = new
    q.rets = [new if n == old else n for n in q.rets]
    return q


def candidates(p: Program):
    """Smaller programs, roughly largest cut first."""
    types = p.types()
    if len(p.rets) > 1:
        for i in range(len(p.rets)):
            if is_grad(p) and i == 0:
                continue
            q = copy.deepcopy(p)
            del q.rets[i]
            del q.anon_results[i]
            yield live(q)
    for idx in range(len(p.stmts) - 1, -1, -1):
        s = p.stmts[idx]
        if s.op in ("grad",):
            if len(s.ins) > 2:
                for j in range(1, len(s.ins)):
                    q = copy.deepcopy(p)
                    g = q.stmts[idx]
                    gout = g.outs[j - 1]
                    del g.ins[j]
                    del g.outs[j - 1]
                    del g.out_types[j - 1]
                    if gout in q.rets:
                        k = q.rets.index(gout)
                        del q.rets[k]
                        del q.anon_results[k]
                    yield live(q)
            continue
        # bypass: a result replaced by an operand of the same type
        for o in s.outs:
            if types[o][0] == "ps":
                continue
            for i in s.ins:
                if i in types and types[i][0] == types[o][0] and same_dims(types[i][1], types[o][1]) \
                        and list(types[i][1]) == list(types[o][1]):
                    yield live(substitute(p, o, i))
        # cut: a result becomes a parameter of its type
        if all(t[0] != "ps" and all(plain(d) or d == "1" for d in t[1]) for t in s.out_types) \
                and not any(types[o][0] == "ps" for o in s.outs):
            q = copy.deepcopy(p)
            del q.stmts[idx]
            for o, t in zip(s.outs, s.out_types):
                q.params.append(Param(o, t[0], list(t[1]), "any"))
            if any(st.op == "grad" and o in st.ins for st in q.stmts for o in s.outs) and \
                    not any(t[0] in FLOATS for t in s.out_types):
                continue
            yield live(q)
    for n in list(p.sizes):
        for v in sorted({1, 2, p.sizes[n] - 1, 0}):
            if 0 <= v < p.sizes[n] and (v >= 2 or not p.fixed):
                q = copy.deepcopy(p)
                q.sizes[n] = v
                yield q
    if p.fixed:
        q = copy.deepcopy(p)
        q.fixed = False
        yield q


def minimise(einc: str, p: Program, variant: str, kind: str, workdir: str, budget: int = 150) -> Program:
    tries = 0

    def still(q: Program) -> bool:
        nonlocal tries
        tries += 1
        try:
            reference(q)
        except Invalid:
            return False
        except Exception:  # a shrink the reference cannot evaluate
            return False
        o = run_variant(einc, q, variant, workdir, f"min{tries}")
        return not o.ok and error_key(o) == kind

    if still(live(p)):
        p = live(p)
    progress = True
    while progress and tries < budget:
        progress = False
        for q in candidates(p):
            if tries >= budget:
                break
            if render(q) == render(p) and q.sizes == p.sizes:
                continue
            if still(q):
                p = q
                progress = True
                break
    # sizes dict: only the names used
    used = set(p.used_base_names())
    p.sizes = {k: v for k, v in p.sizes.items() if k in used or any(
        re.search(rf"\b{k}\b", json.dumps(s.attrs)) for s in p.stmts)}
    return p


def regression_text(p: Program, variant: str, o: Outcome, reason: str = "") -> str:
    what = o.what.replace("\n", " ")[:300]
    lines = [
        "# difftest regression (test/difftest/difftest.py --regressions): found by " + p.note,
        f"# variants: {variant}",
        f"# xfail: {reason or 'TODO: the bug this shows'}",
        f"# was: {o.kind}: {what}",
    ]
    head = " | ".join(o.stderr.splitlines()[:2])[:300] if o.stderr else ""
    if head:
        lines.append(f"# einc: {head}")
    lines.append("# difftest-case: " + p.to_json())
    return "\n".join(lines) + "\n" + render(p)


def parse_regression(path: str):
    with open(path) as f:
        text = f.read()
    meta = {}
    for line in text.splitlines():
        m = re.match(r"# (variants|xfail|difftest-case): (.*)$", line)
        if m:
            meta[m.group(1)] = m.group(2).strip()
    if "difftest-case" not in meta:
        raise ValueError(f"{path}: no '# difftest-case:' line")
    p = Program.from_json(meta["difftest-case"])
    body = text[text.index("# difftest-case:"):].split("\n", 1)[1]
    if body != render(p):
        raise ValueError(f"{path}: the program text differs from its difftest-case description "
                         "(edit the JSON, not the program)")
    variants = [v.strip() for v in meta.get("variants", "fused").split(",") if v.strip()]
    return p, variants, meta.get("xfail", "")


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--einc", help="path to the einc binary")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=None, help="programs to generate (default 45; --full 2000)")
    ap.add_argument("--first", type=int, default=0, help="index of the first program")
    ap.add_argument("--full", action="store_true", help="2000 programs, cuda-emulated every 4th")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ", ".join(VARIANTS))
    ap.add_argument("--cuda-every", type=int, default=None, help="run cuda-emulated on every N-th program "
                    "(default 8; 0: never)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--save", metavar="DIR", help="write each minimised finding as DIR/NAME.ein")
    ap.add_argument("--regressions", metavar="DIR", help="also run the regression cases DIR/*.ein")
    ap.add_argument("--only-regressions", action="store_true", help="run only --regressions")
    ap.add_argument("--show", type=int, metavar="INDEX", help="print program INDEX of --seed and its reference")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    np.seterr(all="ignore")
    warnings.simplefilter("ignore")  # numpy's "Mean of empty slice": the reference wants its NaN

    if args.show is not None:
        p = generate(args.seed, args.show)
        if p is None:
            print("no valid program")
            return 1
        print(render(p))
        inputs, outs = reference(p)
        for q in p.params:
            print(f"# {q.name} = {inputs[q.name][1].tolist()}")
        for k, o in enumerate(outs):
            print(f"# result {k} ({o.dtype}, exact={o.exact}, K={o.K}) = {np.asarray(o.ref).tolist()}")
        return 0
    if not args.einc:
        ap.error("--einc is required")
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}; expected some of {', '.join(VARIANTS)}")
    count = args.count if args.count is not None else (2000 if args.full else 45)
    cuda_every = args.cuda_every if args.cuda_every is not None else (4 if args.full else 8)

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir, tmp = args.keep, None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="difftest_")
        workdir = tmp.name

    jobs = []  # (program tag, program, variant)
    programs = []
    if not args.only_regressions:
        for i in range(args.first, args.first + count):
            p = generate(args.seed, i)
            if p is None:
                continue
            programs.append((i, p))
            for v in variants:
                if v == "cuda-emulated" and (cuda_every <= 0 or i % cuda_every != 0):
                    continue
                jobs.append((f"s{args.seed}p{i}", p, v, ""))
    regressions = []
    if args.regressions:
        for name in sorted(os.listdir(args.regressions)):
            if not name.endswith(".ein"):
                continue
            path = os.path.join(args.regressions, name)
            p, vs, xfail = parse_regression(path)
            regressions.append(name)
            for v in vs:
                jobs.append((f"reg-{name[:-4]}", p, v, xfail or "-"))

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda j: run_variant(args.einc, j[1], j[2], workdir, j[0]), jobs))

    new, known, xfails, runs = [], 0, 0, len(jobs)
    outcome = {(j[0], j[2]): o for j, o in zip(jobs, results)}
    for (tag, p, v, xfail), o in zip(jobs, results):
        if xfail:  # a regression case
            if xfail == "-":
                if not o.ok:
                    new.append((tag, p, v, o))
                    print(f"FAIL {tag} [{v}]: {o.kind}: {o.what[:300]}; einc stderr: {o.stderr[:300]}")
                elif args.verbose:
                    print(f"ok   {tag} [{v}]")
            elif o.ok:
                new.append((tag, p, v, o))
                print(f"XPASS {tag} [{v}]: passes; remove its xfail mark ({xfail})")
            else:
                xfails += 1
                if args.verbose:
                    print(f"XFAIL {tag} [{v}]: {xfail}; {o.kind}: {o.what[:200]}")
            continue
        if o.ok:
            if args.verbose:
                print(f"ok   {tag} [{v}]")
            continue
        unfused_ok = False
        if o.kind.startswith("exit -") and v != "no-fusion":  # a crash: does it need fusion?
            u = outcome.get((tag, "no-fusion")) or run_variant(args.einc, p, "no-fusion", workdir, tag + "-u")
            unfused_ok = u.ok
        item = known_defect(p, v, o, unfused_ok)
        if item:
            known += 1
            print(f"KNOWN {tag} [{v}]: {item}; {o.kind}: {o.what[:200]}")
            continue
        new.append((tag, p, v, o))
        print(f"FAIL {tag} [{v}] ({p.note}): {o.kind}: {o.what[:300]}; einc stderr: {o.stderr[:300]}")

    if not args.no_minimise:
        seen = set()
        for tag, p, v, o in new:
            if tag.startswith("reg-") or (tag, o.kind) in seen:
                continue
            seen.add((tag, o.kind))
            m = minimise(args.einc, p, v, error_key(o), workdir)
            mo = run_variant(args.einc, m, v, workdir, "final")
            text = regression_text(m, v, mo if not mo.ok else o)
            print(f"--- minimised {tag} [{v}] ({o.kind}) ---")
            print(text, end="")
            print("---")
            if args.save:
                os.makedirs(args.save, exist_ok=True)
                with open(os.path.join(args.save, f"{tag}-{v}.ein"), "w") as f:
                    f.write(text)
    if tmp is not None:
        tmp.cleanup()
    extra = f", {len(regressions)} regression cases ({xfails} expected failures)" if args.regressions else ""
    print(f"difftest: {len(programs)} programs, {runs} runs{extra}, {len(new)} new failures, {known} known")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
