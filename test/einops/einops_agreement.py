#!/usr/bin/env python3
"""Cross-check `einc check` against einops itself.

Every case below is one einops call (rearrange / reduce / repeat / einsum) on
concrete input shapes.  The ground truth is obtained by running einops on
numpy arrays: either the call succeeds (and we learn the output shape) or it
raises (any exception).  Each case is then turned into a one-function `.ein`
program whose declared return type is einops' output shape, and `einc check`
must

  * exit 0 for every case einops accepts,
  * exit 1 for every case einops rejects,
  * exit 1 for a "negative control" of every accepted case: the same program
    with a deliberately wrong declared return shape (proves einc inferred the
    shape instead of accepting anything).

Any other exit code (crash, timeout, 2+) is reported as "einc crashed".

The cases come from einops' own tests (test_ops.py, test_einsum.py,
test_parsing.py), its documentation (README, 1-einops-basics,
2-einops-for-deep-learning, 3-einmix-layer) and systematic variations.

Usage:
    einops_agreement.py --einc PATH [--keep DIR] [--filter SUBSTR] [--verbose]

Output: one line per disagreement, then
    einops agreement: N cases (A accepted, R rejected by einops), D disagreements
    P passed, D failed
where P + D is the number of checks (cases plus negative controls).  Exits
non-zero when D > 0, or (unfiltered runs only) when the table has fewer than
250 cases or fewer than 80 einops-rejected ones.

Deliberately EXCLUDED categories (ein differs from einops on purpose, or the
behaviour is an accident of einops' implementation rather than its design):
  * einsum with compositions `(a b)`, single-axis groups `(a)`, unit axes `()`
    and anonymous axes `2`: einops raises NotImplementedError (or, for `(a)`,
    silently accepts), while ein intentionally extends einsum with these.
  * einsum where one operand has size 1 for an axis and another has n > 1, and
    einsum where `...` covers different shapes/ranks in different operands:
    numpy broadcasts these, ein is deliberately stricter.  (A self-check below
    refuses accepted einsum cases with such broadcasting.)
  * einsum with `...` on the right only: numpy accepts it as empty.
  * einsum with more than 52 distinct axes (einops' "Too many axes" limit).
  * callable reductions (not part of ein). "any"/"all" are checked on bool
    tensors (`bool["..."]`, numpy bool arrays for einops).
  * list-of-tensor inputs, non-ASCII axis names
    (einops accepts e.g. `ß` and the literal `…`), numbers with leading zeros
    (`01` is an anonymous axis of length 1 for einops), tabs in patterns.
Note that einops ACCEPTS Python keywords (`for`) and `axis` as axis names (it
only warns), and accepts `_` as an axis name in einsum; those cases are kept
because einops is the reference.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

try:
    import numpy as np
    import einops
except ImportError as err:  # pragma: no cover - environment problem
    print(f"error: einops_agreement.py needs numpy and einops: {err}", file=sys.stderr)
    sys.exit(2)

MIN_CASES = 250
MIN_REJECTED = 80
EINC_TIMEOUT_S = 60

# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Case:
    op: str  # "rearrange" | "reduce" | "repeat" | "einsum"
    shapes: tuple[Shape, ...]  # one per operand
    pattern: str
    reduction: Optional[str] = None  # only for reduce
    sizes: tuple[tuple[str, int], ...] = ()  # keyword axis sizes
    origin: str = ""  # where the case comes from

    def describe(self) -> str:
        shapes = ", ".join("(" + ",".join(map(str, s)) + ")" for s in self.shapes)
        text = f'{self.op} [{shapes}] "{self.pattern}"'
        if self.reduction is not None:
            text += f' "{self.reduction}"'
        if self.sizes:
            text += " " + " ".join(f"{k}={v}" for k, v in self.sizes)
        return f"{text} <{self.origin}>"


def R(shape: Shape, pattern: str, /, **sizes: int) -> Case:
    return Case("rearrange", (tuple(shape),), pattern, None, tuple(sizes.items()))


def RED(shape: Shape, pattern: str, reduction: str, /, **sizes: int) -> Case:
    return Case("reduce", (tuple(shape),), pattern, reduction, tuple(sizes.items()))


def REP(shape: Shape, pattern: str, /, **sizes: int) -> Case:
    return Case("repeat", (tuple(shape),), pattern, None, tuple(sizes.items()))


def EIN(shapes: list[Shape], pattern: str) -> Case:
    return Case("einsum", tuple(tuple(s) for s in shapes), pattern)


def section(origin: str, cases: list[Case]) -> list[Case]:
    return [dataclasses.replace(c, origin=origin) for c in cases]


REDUCTIONS = ("sum", "mean", "max", "min", "prod")
LOGICAL = ("any", "all")  # on bool tensors


def _einops_tests() -> list[Case]:
    """einops/tests/test_ops.py, test_parsing.py, test_einsum.py."""
    cases: list[Case] = []
    x5 = (2, 3, 4, 5, 6)

    identity_patterns = [
        "...->...",
        "a b c d e-> a b c d e",
        "a b c d e ...-> ... a b c d e",
        "a b c d e ...-> a ... b c d e",
        "... a b c d e -> ... a b c d e",
        "a ... e-> a ... e",
        "a ... -> a ... ",
        "a ... c d e -> a (...) c d e",
    ]
    equivalent_rearrange = [
        ("a b c d e -> (a b) c d e", "a b ... -> (a b) ... "),
        ("a b c d e -> a b (c d) e", "... c d e -> ... (c d) e"),
        ("a b c d e -> a b c d e", "... -> ... "),
        ("a b c d e -> (a b c d e)", "... ->  (...)"),
        ("a b c d e -> b (c d e) a", "a b ... -> b (...) a"),
        ("a b c d e -> b (a c d) e", "a b ... e -> b (a ...) e"),
    ]
    equivalent_reduction = [
        ("a b c d e -> ", " ... ->  "),
        ("a b c d e -> (e a)", "a ... e -> (e a)"),
        ("a b c d e -> d (a e)", " a b c d e ... -> d (a e) "),
        ("a b c d e -> (a b)", " ... c d e  -> (...) "),
    ]
    cases += section("test_ops identity", [R(x5, p) for p in identity_patterns])
    cases += section(
        "test_ops equivalent_rearrange", [R(x5, p) for pair in equivalent_rearrange for p in pair]
    )
    cases += section(
        "test_ops equivalent_reduction",
        [
            RED(x5, p, REDUCTIONS[i % len(REDUCTIONS)])
            for i, p in enumerate(p for pair in equivalent_reduction for p in pair)
        ],
    )
    cases += section(
        "test_ops collapsed_ellipsis",
        [
            R((1, 1, 1, 1, 1), "a b c d ... ->  a b c ... d"),
            R((1, 1, 1, 1, 1), "a b c d (...) ->  a b c ... d"),  # rejected
            R((1, 1, 1, 1, 1), "... ->  (...)"),
            R((1, 1, 1, 1, 1), "(...) -> (...)"),  # rejected
        ],
    )

    s6 = (1, 2, 3, 5, 7, 11)
    sizes6 = dict(zip("abcdef", s6))
    cases += section(
        "test_ops consistency",
        [
            R(s6, "a b c d e f -> a b c d e f"),
            R(s6, "b a c d e f -> a b d e f c"),
            R(s6, "a b c d e f -> f e d c b a"),
            R(s6, "a b c d e f -> (f e) d (c b a)"),
            R(s6, "a b c d e f -> (f e d c b a)"),
            R(s6, "a b c d e f -> a (b) (c d e) f"),
            R(s6, "a aa aa1 a1a1 aaaa a11 -> a aa aa1 a1a1 aaaa a11"),
            R(s6, "f e d c b a -> a b c d e f"),
            R(s6, "a b c d e f -> (f d) c (e b) a"),
            R((55, 3, 14, 1), "(f d) c (e b) a -> a b c d e f", b=2, d=5),
            R(s6, "a b c d e f -> (f d) c (e b) a", **sizes6),
            R((55, 3, 14, 1), "(f d) c (e b) a -> a b c d e f", **sizes6),
            R((2, 3, 4), "a b c -> b c a"),
        ],
    )
    cases += section(
        "test_ops permutations",
        [
            R((2,), "i0 -> i0"),
            R((2, 2, 2, 2), "i0 i1 i2 i3 -> i2 i0 i3 i1"),
            R((2,) * 9, "i0 i1 i2 i3 i4 i5 i6 i7 i8 -> i8 i3 i5 i0 i7 i1 i6 i2 i4"),
            R((2,) * 6, "i5 i4 i3 i2 i1 i0 -> i1 i3 i5 i0 i2 i4"),
            RED((2, 3, 2), "x0 x1 x2 -> x2 x0", "max"),
            RED((2, 3, 2, 3), "x0 x1 x2 x3 -> x1", "prod"),
            RED((3, 2, 3, 2, 3), "x0 x1 x2 x3 x4->x4 x2 x0 x1 x3", "mean"),
            RED((), "->", "sum"),
        ],
    )
    red_cases = [
        ("a b c d e -> ", {}),
        ("a ... -> ", {}),
        ("(a1 a2) ... (e1 e2) -> ", dict(a1=1, e2=2)),
        ("a b c d e -> (e c) a", {}),
        ("a ... c d e -> (e c) a", {}),
        ("a b c d e ... -> (e c) a", {}),
        ("a b c d e -> (e c a)", {}),
        ("(a a2) ... -> (a2 a) ...", dict(a2=1)),
        ("(a a2) ... (e e2) -> ", dict(a2=1, e2=1)),
    ]
    cases += section(
        "test_ops reduction_imperatives",
        [RED(x5, p, REDUCTIONS[(i + 1) % len(REDUCTIONS)], **kw) for i, (p, kw) in enumerate(red_cases)],
    )
    cases += section(
        "test_ops gradients",
        [
            RED((2, 3, 4), "a b c -> c a", "sum"),
            RED((4, 2), "c a -> a c", "mean"),
            RED((2, 4), "a (c1 c2) -> a", "max", c1=2),
            RED((2,), "... -> ", "prod"),
        ],
    )
    x235 = (2, 3, 5)
    repeat_cases = [
        ("a b c -> c a b", dict()),
        ("a b c -> (c copy a b)", dict(copy=2, a=2, b=3, c=5)),
        ("a b c -> (a copy) b c ", dict(copy=1)),
        ("a b c -> (c a) (copy1 b copy2)", dict(a=2, copy1=1, copy2=2)),
        ("a ...  -> a ... copy", dict(copy=4)),
        ("... c -> ... (copy1 c copy2)", dict(copy1=1, copy2=2)),
        ("...  -> ... ", dict()),
        (" ...  -> copy1 ... copy2 ", dict(copy1=2, copy2=3)),
        ("a b c  -> copy1 a copy2 b c () ", dict(copy1=2, copy2=1)),
        ("a b c -> copy a b c ", dict(copy=1)),
    ]
    cases += section("test_ops repeat", [REP(x235, p, **kw) for p, kw in repeat_cases])
    # reverse reductions of the repeat cases (check_reversion)
    cases += section(
        "test_ops repeat reversion",
        [
            RED((5, 2, 3), "c a b -> a b c", "min"),
            RED((60,), "(c copy a b) -> a b c", "max", copy=2, a=2, b=3, c=5),
            RED((10, 6), "(c a) (copy1 b copy2) -> a b c", "min", a=2, copy1=1, copy2=2),
            RED((2, 3, 5, 4), "a ... copy -> a ...", "max", copy=4),
            RED((2, 2, 1, 3, 5, 1), "copy1 a copy2 b c () -> a b c", "min", copy1=2, copy2=1),
        ],
    )
    x1246 = (1, 2, 4, 6)
    anon_cases = [
        ("a b c d -> c a d b", dict()),
        ("a b c d -> (c 2 d a b)", dict(a=1, c=4, d=6)),
        ("1 b c d -> (d copy 1) 3 b c ", dict(copy=3)),
        ("1 ...  -> 3 ... ", dict()),
        ("() ... d -> 1 (copy1 d copy2) ... ", dict(copy1=2, copy2=3)),
        ("1 b c d -> (1 1) (1 b) 2 c 3 d (1 1)", dict()),
    ]
    cases += section("test_ops repeat_anonymous", [REP(x1246, p, **kw) for p, kw in anon_cases])
    cases += section(
        "test_ops repeat_anonymous reversion",
        [
            RED((96,), "(c 2 d a b) -> a b c d", "max", a=1, c=4, d=6),
            RED((18, 3, 2, 4), "(d copy 1) 3 b c -> 1 b c d", "min", copy=3),
            RED((1, 2, 2, 4, 3, 6, 1), "(1 1) (1 b) 2 c 3 d (1 1) -> 1 b c d", "max"),
        ],
    )
    cases += section(
        "test_ops misc",
        [
            R((2, 3, 5, 7), "b ... -> ... b"),
            R((2, 3, 4, 5, 6), "... -> (...)"),
            RED((2, 3, 4, 5, 6), "a ... e -> (...)", "min"),
            REP((2, 3, 4, 5, 6), "...  -> b (...)", b=3),
            RED((2, 2, 2, 2, 2, 2), "a b c d e f -> a b 1 d e f", "max"),
            RED((2, 2, 2, 2, 2, 2), "a b ... -> 1 1 ...", "min"),
            R((4, 5, 6, 3), "(a a2) b c ... -> b (c a2) (a ...)", a2=2),
            RED((5, 12, 6), "b ca2 A -> b A", "sum", ca2=12),
        ],
    )

    # test_parsing.py: expressions, placed on both sides of a rearrange.
    cases += section(
        "test_parsing expressions",
        [
            R((2, 3, 4, 5), "... a b c d -> ... a b c d"),
            R((2, 3, 4, 5, 6), "... a b c d ... -> a b c d"),  # two ellipses
            R((2, 3, 4, 5, 6), "... a b c (d ...) -> a b c d"),
            R((2, 3, 4, 5, 6), "(... a) b c (d ...) -> a b c d"),
            R((2, 3, 4, 5, 6), "a b c d ... -> (a) b c (d ...)"),
            R((2, 3, 4, 5), "(a) b c d -> a b c d"),
            R((2, 3, 4, 5), "(a)) b c d -> a b c d"),
            R((2, 3, 4, 5), "(a b c (d -> a b c d"),
            R((2, 3, 4, 5), "a b c d -> (a) (()) b c d"),
            R((2, 3, 4, 5), "a b c d -> (a) ((b c) d)"),
            R((2, 3, 4, 5), "a b c d -> (a b c (d"),
            R((2, 3, 4, 5), "a b c d -> a) b c (d"),
            R((2,), "1a -> 1a"),
            R((2,), "_pre -> _pre"),
            R((2,), "...pre -> ...pre"),
            R((2,), "pre... -> pre..."),
            R((2, 3, 4, 5), "camelCase under_scored cApiTaLs ... -> ... cApiTaLs under_scored camelCase"),
            R((1, 2, 3, 1, 2, 3), "a b h dx h1 zz -> zz h1 dx h b a"),
            R((3, 2, 1, 2, 3, 1), "i9123 somelongname Alex camelCase u_n_d_e_r_score unreasonablyLongAxisName"
              " -> (unreasonablyLongAxisName u_n_d_e_r_score) camelCase (Alex somelongname i9123)"),
            R((2, 3), "2b c -> c 2b"),
            R((2, 3), "12 c -> c 12"),
            R((2, 3), "_startWithUnderscore c -> c _startWithUnderscore"),
            R((2, 3), "endWithUnderscore_ c -> c endWithUnderscore_"),
            R((2, 3), "_ c -> c _"),
            R((2, 3, 4, 5), "a1  b1   c1    d1 -> d1 c1 b1 a1"),
            R((1, 1, 1, 1), "() () () () -> "),
            R((1, 1, 1, 1), "1 1 1 () -> () 1 1 1"),
            REP((), " -> 5 (3 4)"),
            R((3, 4), "5 (3 4) -> 5 3 4"),
            REP((2, 3, 4, 5), "name1 ... a1 name2 -> name1 ... a1 12 (name2 14)"),
            REP((2, 3, 4, 5), "5 1 (1 4) 1 -> 5 4"),
            RED((5, 4), "5 1 (1 4) 1 -> ", "sum"),
            RED((5, 1, 4, 1), "5 1 (1 4) 1 -> ", "sum"),
        ],
    )

    # test_einsum.py functional cases and errors.
    cases += section(
        "test_einsum functional",
        [
            EIN([(2, 3, 4, 5), (2, 5)], "b c h w, b w -> b h"),
            EIN([(2, 3, 40, 5), (2, 5), (2, 3)], "b c h w, b w, b c -> b h"),
            EIN([(32, 5, 2, 3, 4), (4, 5, 6)], "... one two three, three four five -> ... two five"),
            EIN([(2, 3, 4, 32, 5), (4, 5, 6)], "one two three ..., three four five -> two five ..."),
            EIN([(32, 5, 2, 3, 4), (32, 5, 4, 5, 6)], "... one two three, ... three four five -> ... two five"),
            EIN([(5, 4)], "first_tensor second_tensor -> first_tensor"),
            EIN([(5, 5)], "i i -> "),
            EIN([(2, 3), (4, 5)], " one  two  ,  three four->two  four  "),
            EIN([(5, 10, 5)], "i middle i -> middle"),
            EIN([(5, 3, 2, 1, 4, 5)], "i ... i -> ..."),
            EIN([(5, 3, 2, 1, 4, 5)], "i ... i -> i ..."),
            EIN([(5, 5, 5)], "one one one -> one"),
            EIN([(1, 2, 3)], "i j k -> j i k"),
            EIN([(5, 4, 3, 2, 1)], "... -> ..."),
            EIN([(3, 2), (3, 2), (3, 2)], "..., ..., ... -> ..."),
            EIN([(10,)], "index ->"),
            EIN([(5, 1)], "i 2j -> i"),  # rejected: invalid identifier
            EIN([(5, 3, 2)], "i j k"),  # rejected: no arrow
            EIN([(5, 1)], "i j -> k"),  # rejected: unknown output axis
        ],
    )
    cases += section(
        "test_einsum layers",
        [
            EIN([(2, 12, 3, 4), (12, 13)], "b c_in h w, c_in c_out -> w c_out h b"),
            EIN([(2, 12, 3, 4), (12, 13), (13,)], "b c_in h w, c_in c_out, c_out -> w c_out h b"),
            EIN([(2, 12, 3, 4), (12, 3, 4, 5)], "b c_in h w, c_in h w c_out -> b c_out"),
            EIN([(2, 3, 4, 5), (4, 5, 6)], "b t head c_in, head c_in c_out -> b t head c_out"),
        ],
    )
    return cases


def _einops_docs() -> list[Case]:
    """README and docs notebooks (image batch shrunk where divisibility allows)."""
    ims = (6, 96, 96, 3)
    im = (96, 96, 3)
    basics = [
        R(im, "h w c -> w h c"),
        R(ims, "b h w c -> (b h) w c"),
        R(ims, "b h w c -> h (b w) c"),
        R(ims, "b h w c -> b h w c"),
        R(ims, "b h w c -> (b h w c)"),
        R(ims, "(b1 b2) h w c -> b1 b2 h w c ", b1=2),
        R(ims, "(b1 b2) h w c -> (b1 h) (b2 w) c ", b1=2),
        R(ims, "(b1 b2) h w c -> (b2 h) (b1 w) c ", b1=2),
        R(ims, "b h (w w2) c -> (h w2) (b w) c", w2=2),
        R(ims, "b h w c -> h (w b) c"),
        R(ims, "b h w c -> b 1 h w 1 c"),
        R((6, 1, 96, 96, 1, 3), "b 1 h w 1 c -> b h w c"),
        R(ims, "b h w c -> w (b h) c"),
        R(ims, "(b1 b2) (h1 h2) (w1 w2) c -> (h1 b1 h2) (w1 b2 w2) c", h1=3, w1=3, b2=3),
        R(ims, "b (h1 h2) (w1 w2) c -> (h1 w2) (b w1 h2) c", h2=8, w2=8),
        R(ims, "b (h1 h2 h3) (w1 w2 w3) c -> (h1 w2 h3) (b w1 h2 w3) c", h2=2, w2=2, w3=2, h3=2),
        R(ims, "b (h1 h2) (w1 w2) c -> (h1 w2) (b w1 h2) c", h2=7, w2=8),  # 96 % 7 != 0
        R(ims, "(b1 b2) h w c -> (b1 h) (b2 w) c ", b1=4),  # 6 % 4 != 0
        R(ims, "h w c -> w h c"),  # rank mismatch: 4-d input
        RED(ims, "b h w c -> h w c", "mean"),
        RED(ims, "b h w c -> h w", "min"),
        RED(ims, "b (h h2) (w w2) c -> h (b w) c", "mean", h2=2, w2=2),
        RED(ims, "b (h 2) (w 2) c -> h (b w) c", "max"),
        RED(ims, "(b1 b2) h w c -> (b2 h) (b1 w)", "mean", b1=2),
        RED(ims, "b h w c -> b () () c", "max"),
        RED(ims, "b (h 2) (w 2) c -> (c h) (b w)", "max"),
        RED(ims, "b (h h2) (w w2) c -> (h w2) (b w c)", "mean", h2=3, w2=3),
        RED(ims, "b (h 5) (w 5) c -> h (b w) c", "max"),  # 96 % 5 != 0
        RED(ims, "b h w c -> b c h2", "max"),  # h2 not on the left
        REP(im, "h w c -> h new_axis w c", new_axis=5),
        REP(im, "h w c -> h 5 w c"),
        REP(im, "h w c -> h (repeat w) c", repeat=3),
        REP(im, "h w c -> (2 h) (2 w) c"),
        REP(im, "h w c -> h (w repeat) c", repeat=3),
        RED((96, 288, 3), "h (w repeat) c -> h w c", "mean", repeat=3),
        REP(im, "h w c -> h new_axis w c"),  # size of new_axis missing
    ]
    x = (10, 32, 12, 16)
    deep_learning = [
        R(x, "b c h w -> b h w c"),
        R(x, "b c h w -> b (c h w)"),
        R(x, "b c (h h1) (w w1) -> b (h1 w1 c) h w", h1=2, w1=2),
        R((10, 128, 6, 8), "b (h1 w1 c) h w -> b c (h h1) (w w1)", h1=2, w1=2),
        RED(x, "b c h w -> b c", "mean"),
        RED(x, "b c (h h1) (w w1) -> b c h w", "max", h1=2, w1=2),
        RED(x, "b c (h1 h2) (w1 w2) -> b c h1 w1", "max", h2=2, w2=2),
        RED(x, "b c h w -> b c () ()", "mean"),
        RED(x, "b c h w -> b c 1 1", "max"),
        RED(x, "b c h w -> 1 c 1 1", "mean"),
        RED(x, "b c h w -> b", "sum"),
        R(x, "b (g1 g2 c) h w-> b (g2 g1 c) h w", g1=4, g2=4),
        R(x, "b (g c) h w-> b (c g) h w", g=4),
        R(x, "b (split c) h w -> split b c h w", split=2),
        R(x, "b (split c) h w -> split b c h w", split=5),  # 32 % 5 != 0
        R((20, 2, 8), "t b c -> (b t) c"),
        R((2, 20, 48), "b t (head k) -> b head t k", head=4),
        R((10, 21, 12, 16), "b (anchor prediction) h w -> prediction b anchor h w", anchor=3),
        R(x, "b (c h2 w2) h w -> b c (h h2) (w w2)", h2=2, w2=2),
        R(x, "b c h w -> b (c h w) 1 1"),
        RED((8, 10), "(t b) c -> b c", "max", t=4),
        REP((2, 3), "b c -> b c h w", h=4, w=5),
        REP((2, 3), "b c -> b c h w", h=4),  # w has no size
        EIN([(2, 4, 20, 12), (2, 4, 20, 12)], "b h t k, b h s k -> b h t s"),
        EIN([(2, 4, 20, 20), (2, 4, 20, 12)], "b h t s, b h s k -> b h t k"),
    ]
    readme = [
        R((20, 2, 8), "t b c -> b c t"),
        RED((2, 3, 8, 10), "b c (h h2) (w w2) -> b h w c", "mean", h2=2, w2=2),
        REP((4, 5), "h w -> h w c", c=3),
        R((2, 3, 4, 5), "b c h w -> b (c h w)"),
        R((6, 4, 5, 3), "(b1 b2) h w c -> (b1 h) (b2 w) c", b1=2),
        EIN([(128, 16, 16), (16, 16, 30)], "batch h w, h w channel -> batch channel"),
        EIN([(10, 20), (50, 30, 20)], "out_dim in_dim, ... in_dim -> ... out_dim"),
        EIN([(10, 10)], "i i ->"),
        EIN([(20, 20, 20), (20, 20, 20), (20, 20, 20)], "a b c, c b d, a g k -> a b k"),
    ]
    einmix = [
        # EinMix layers written out as einsum with their weights.
        EIN([(2, 10, 32), (32, 64)], "b t c, c c_out -> b t c_out"),
        EIN([(2, 10, 32), (10, 10)], "b t c, t t_out -> b t_out c"),
        EIN([(2, 10, 32), (4, 8, 8)], "b t c, head c_in c_out -> b t head c_out"),
        EIN([(2, 10, 4, 8), (4, 8, 6)], "b t head c, head c c_out -> b t head c_out"),
        EIN([(2, 10, 4, 8), (4, 6, 6)], "b t head c, head c c_out -> b t head c_out"),  # c: 8 vs 6
        RED((2, 10, 32), "b t (head c) -> b t head", "mean", head=4),
    ]
    return (
        section("docs 1-einops-basics", basics)
        + section("docs 2-einops-for-deep-learning", deep_learning)
        + section("README", readme)
        + section("docs 3-einmix-layer", einmix)
    )


def _valid_variations() -> list[Case]:
    """Systematic variations einops accepts (verdicts are still computed by einops)."""
    s4 = (2, 3, 4, 5)
    ellipsis = [
        R(s4, "... d -> d ..."),
        R(s4, "a ... -> ... a"),
        R(s4, "a ... d -> d ... a"),
        R(s4, "a b ... -> b a ..."),
        R(s4, "a b c d ... -> d c b a ..."),  # empty ellipsis
        R(s4, "... a b c d -> a b c d ..."),  # empty ellipsis
        R((3,), "a ... -> (a ...)"),  # empty ellipsis inside parentheses
        R((), "... -> (...)"),
        R((), "... -> ..."),
        R(s4, "a ... -> (...) a"),
        R(s4, "a ... -> (... a)"),
        R(s4, "a ... d -> (a ... d)"),
        R(s4, "... -> (...) ()"),
        R(s4, "a ... -> a 1 ..."),
        R((6, 3, 4), "(a a2) ... -> a a2 ...", a2=2),
        RED(s4, "a ... -> a", "sum"),
        RED(s4, "... d -> d", "max"),
        RED(s4, "a ... d -> ... ", "mean"),
        RED(s4, "a ... d -> a d", "prod"),
        RED(s4, "a ... -> a (...)", "min"),
        RED(s4, "... -> ...", "sum"),
        RED(s4, "a b ... -> ... 1", "max"),
        REP(s4, "... -> r ...", r=2),
        REP(s4, "... -> ... r", r=2),
        REP(s4, "a ... -> a r ...", r=2),
        REP(s4, "a ... -> a (r ...)", r=2),
        REP(s4, "a ... -> (... r) a", r=2),
        REP((3,), "a ... -> a ... 2"),
    ]
    composition = [
        R((6, 4), "(a b) c -> a b c", a=2),
        R((6, 4), "(a b) c -> a b c", b=3),
        R((6, 4), "(a b) c -> a b c", a=2, b=3),
        R((6, 4), "(a b) c -> c (b a)", a=3),
        R((2, 3, 4), "a b c -> (a b c)"),
        R((2, 3, 4), "a b c -> (c a) b"),
        R((2, 3, 4), "a b c -> a (b c) ()"),
        R((24,), "(a b c) -> a b c", a=2, b=3),
        R((24,), "(a b c) -> c b a", a=2, c=4),
        R((2, 3), "(a)(b) -> b a"),
        R((6, 3), "(a b)c -> a b c", a=2),
        R((6, 3), "(a 1 b) c -> a b c", a=2),
        R((2, 3), "a b -> (a 1) (1 b)"),
        R((2, 3), "a b -> (a) (b)"),
        R((2, 3), "a b -> a () b"),
        R((2, 1, 3), "a () b -> a b"),
        R((2, 1, 3), "a 1 b -> b a"),
        R((1, 1), "() () -> "),
        R((), " -> 1 1"),
        R((), " -> () ()"),
        R((2, 3), "a b -> b a", a=2, b=3),
        R((4, 6), "(a b) (c d) -> (a c) (b d)", a=2, c=3),
        RED((4, 6), "(a b) (c d) -> (b d)", "sum", a=2, c=3),
        RED((6, 4), "(h 2) w -> h w", "max"),
        RED((6, 4), "(2 h) w -> h w", "min"),
        RED((3, 2), "h 2 -> h", "sum"),
        RED((6, 8), "(h 2) (w 2) -> h w", "mean"),
        RED((6, 8), "(h h2) (w w2) -> h w", "mean", h2=3, w2=4),
        RED((2, 3), "a b -> (b a)", "max"),
    ]
    multi_letter = [
        R((2, 3, 4), "batch seq hidden -> seq batch hidden"),
        R((2, 3, 4), "batch seq hidden -> (batch seq) hidden"),
        R((2, 12), "batch (heads dim) -> batch heads dim", heads=3),
        R((2, 3), "x1 x2 -> x2 x1"),
        R((2, 3), "A B -> B A"),
        R((2, 3), "aB Ab -> Ab aB"),
        R((2, 3), "a_b c_d -> c_d a_b"),
        R((2, 3), "for b -> b for"),  # keywords: einops only warns
        R((2, 3), "axis b -> b axis"),  # 'axis': einops only warns
        RED((2, 3, 4), "batch seq hidden -> batch hidden", "mean"),
        REP((2, 3), "rows cols -> rows cols channels", channels=3),
        REP((2, 3), "rows cols -> (copies rows) cols", copies=2),
        EIN([(2, 3), (3, 4)], "rows inner, inner cols -> rows cols"),
        EIN([(2, 3)], "_ b -> b _"),  # '_' is an axis name in einops.einsum
    ]
    reductions = [
        RED((2, 3, 4), "a b c -> a", r) for r in REDUCTIONS
    ] + [
        RED((2, 3, 4), "a b c -> c b a", r) for r in REDUCTIONS
    ] + [
        RED((2, 3, 4), "a b c -> ", r) for r in REDUCTIONS
    ] + [
        RED((2, 3), "b c -> b c 1", "sum"),
        RED((2, 3), "b c -> b c ()", "mean"),
        RED((2, 3), "b c -> b 1", "max"),
        RED((2, 3), "b c -> () c", "min"),
        RED((2, 3), "b c -> 1 1", "prod"),
        RED((2, 3), "b c -> 1 b 1 c 1", "sum"),
        RED((2, 3), "b c -> (b 1) (1 c)", "sum"),
        RED((2, 3), "b c -> (b c)", "sum"),
        RED((2, 3, 4), "b c d -> (d b)", "max"),
        RED((2, 3, 4), "b c d -> d", "sum", b=2),
        RED((6, 4), "(b c) d -> d", "sum", b=2),
        RED((), " -> ", "max"),
        RED((1,), "() -> ", "sum"),
        RED((1,), "1 -> ", "sum"),
    ]
    repeats = [
        REP((2, 3), "h w -> h w 3"),
        REP((2, 3), "h w -> 3 h w"),
        REP((2, 3), "h w -> (2 h) w"),
        REP((2, 3), "h w -> h (w 2)"),
        REP((2, 3), "h w -> (2 h 3) (w 4)"),
        REP((2, 3), "h w -> h w c", c=4),
        REP((2, 3), "h w -> c h w", c=4),
        REP((2, 3), "h w -> (c h) w", c=4),
        REP((2, 3), "h w -> h (w c)", c=4),
        REP((2, 3), "h w -> h w c d", c=2, d=3),
        REP((2, 3), "h w -> (c h d) w", c=2, d=3),
        REP((2, 3), "h w -> w h"),
        REP((2, 3), "h w -> h w 1"),
        REP((2, 3), "h w -> h w ()"),
        REP((2, 3), "h w -> h w c", c=1),
        REP((2, 3), "h w -> h w c", h=2, c=4),
        REP((6, 3), "(h h2) w -> h (h2 w) c", h2=2, c=2),
        REP((), " -> c", c=5),
        REP((), " -> 7"),
        REP((), " -> (2 3)"),
        REP((3,), "a -> a a2 a3", a2=2, a3=2),
        REP((2, 1), "h () -> h c", c=3),
        REP((2, 1), "h 1 -> h 5"),
    ]
    einsum = [
        # one operand
        EIN([(2, 3)], "a b -> b a"),
        EIN([(2, 3)], "a b -> a"),
        EIN([(2, 3)], "a b -> "),
        EIN([(2, 3)], "a b -> a b"),
        EIN([(3, 3)], "a a -> a"),
        EIN([(3, 3)], "a a ->"),
        EIN([(3, 2, 3)], "a b a -> b"),
        EIN([(3, 2, 3)], "a b a -> a b"),
        EIN([(3, 3, 3)], "a a a -> "),
        EIN([(2, 3, 4)], "i j k -> k"),
        EIN([(2, 3, 4)], "i j k -> k i j"),
        EIN([(2, 3, 4)], "... i -> ..."),
        EIN([(2, 3, 4)], "i ... -> ... i"),
        EIN([(2, 3, 4)], "... -> ..."),
        EIN([(2, 3)], "... a b -> a b"),  # empty ellipsis
        EIN([()], "->"),
        EIN([()], "... -> ..."),
        EIN([(4, 2, 4, 3)], "i ... i k -> k ..."),
        # two operands
        EIN([(2, 3), (3, 4)], "i j, j k -> i k"),
        EIN([(2, 3), (3, 4)], "i j, j k -> k i"),
        EIN([(2,), (3,)], "i, j -> i j"),
        EIN([(3,), (3,)], "i, i -> "),
        EIN([(3,), (3,)], "i, i -> i"),
        EIN([(2, 3), (2, 3)], "i j, i j -> i j"),
        EIN([(2, 3), (2, 3)], "i j, i j -> "),
        EIN([(5, 2, 3), (5, 3, 4)], "b i j, b j k -> b i k"),
        EIN([(2, 3), (3,)], "a b, b -> a"),
        EIN([(2, 3), (3, 2)], "i j, j i -> "),
        EIN([(3, 3), (3,)], "i i, i -> i"),
        EIN([(2, 3), (4,)], "a b, c -> a b c"),
        EIN([(), (3,)], ", i -> i"),
        EIN([(3,), ()], "i, -> i"),
        EIN([(), ()], ", -> "),
        EIN([(4, 5, 2, 3), (4, 5, 3, 2)], "... i j, ... j k -> ... i k"),
        EIN([(3,), (3, 4)], "... a, a b -> ... b"),  # empty ellipsis
        EIN([(2, 3, 4), (4, 5)], "b t c, c d -> b t d"),
        EIN([(2, 3, 4), (2, 3, 4)], "b i d, b j d -> b i j"),
        # three and four operands
        EIN([(2, 3), (3, 4), (4, 5)], "a b, b c, c d -> a d"),
        EIN([(3,), (3,), (3,)], "i, i, i -> i"),
        EIN([(2, 3), (2, 4), (2, 5)], "b i, b j, b k -> b i j k"),
        EIN([(2, 3, 4), (2, 3, 4), (2, 3, 4)], "... a, ... a, ... a -> ..."),
        EIN([(2, 3), (3, 3), (3, 2)], "i j, j j, j i -> i"),
        EIN([(2, 3), (3, 4), (4, 5), (5, 6)], "a b, b c, c d, d e -> a e"),
        EIN([(2,), (3,), (4,), (5,)], "i, j, k, l -> i j k l"),
        EIN([(3,), (3,), (3,), (3,)], "a, a, a, a ->"),
        EIN([(2, 3), (3, 4), (4, 2), (2, 2)], "i j, j k, k l, l i -> "),
    ]
    other = [
        R((2, 3), "a b->b a"),
        R((2, 3), "  a   b  ->  b   a  "),
        R((2, 3), "a b -> b a"),
        R((2,), "a -> a"),
        R((), " -> "),
        R((), "->"),
        R((2, 3, 4, 5, 6, 7), "a b c d e f -> f e d c b a"),
        R((2, 3), "a b -> (b a)"),
    ]
    return (
        section("variation ellipsis", ellipsis)
        + section("variation composition", composition)
        + section("variation multi-letter", multi_letter)
        + section("variation reductions", reductions)
        + section("variation repeat", repeats)
        + section("variation einsum", einsum)
        + section("variation misc", other)
    )


def _invalid_variations() -> list[Case]:
    """Systematic variations einops rejects (verdicts are still computed by einops)."""
    s3 = (2, 3, 4)
    syntax = [
        R(s3, "(a b c -> a b c"),
        R(s3, "a b c) -> a b c"),
        R(s3, "a b c -> (a b c"),
        R(s3, "a b c -> a b c)"),
        R(s3, "a b c -> (a (b c))"),
        R(s3, "((a) b c) -> a b c"),
        R(s3, "a b c -> )a b c("),
        R(s3, "... a ... -> a"),
        R(s3, "a ... -> ... a ..."),
        R(s3, "a b c -> a b c ..."),  # ellipsis only on the right
        R(s3, "a b c -> ... a b c"),
        RED(s3, "a b c -> a ...", "sum"),
        REP(s3, "a b c -> a b c ..."),
        R(s3, "(a ...) -> a ..."),  # ellipsis in parentheses on the left
        RED(s3, "(a ...) c -> a c", "sum"),
        REP(s3, "(... a) -> a ..."),
        R(s3, ".. b c -> b c"),
        R(s3, ". b c -> b c"),
        R(s3, ".... b c -> b c"),
        R(s3, "a b c -> a b c ."),
        R(s3, "a a c -> a c"),  # duplicate axis
        R(s3, "a b c -> a b c a"),
        R(s3, "a b c -> (a a) b c"),
        RED(s3, "a b b -> a", "sum"),
        RED(s3, "a b c -> a a", "sum"),
        REP(s3, "a b c -> a b c c"),
        REP(s3, "a b c -> a b c d d", d=2),
        R((2, 3), "a-b c -> c a-b"),
        R((2, 3), "a,b -> b,a"),
        R((2, 3), "a.b c -> c a.b"),
        R((2, 3), "a+b c -> c a+b"),
        R((2, 3), "a* b -> b a*"),
        R((2, 3), "a b -> b a;"),
        R((2, 3), "a b -> b a#"),
        R((2, 3), "a b -> b [a]"),
        R((2, 3), "_a b -> b _a"),
        R((2, 3), "a_ b -> b a_"),
        R((2, 3), "__ b -> b __"),
        R((2, 3), "1x b -> b 1x"),
        R((2, 3), "a b"),  # no arrow
        R((2, 3), ""),
        R((2, 3), "a b => b a"),
        R((2, 3), "a b - > b a"),
        R((2, 3), "a b --> b a"),
        R((2, 3), "a b -> b a -> a b"),
        R((2, 3), "a b <- b a"),
        RED((2, 3), "a b", "sum"),
        REP((2, 3), "a b"),
    ]
    semantic = [
        R((2, 3), "a b -> a"),  # axis on one side only
        R((2, 3), "a b -> a b c"),
        R((2, 3), "a b -> a b c", c=1),
        R((2, 3), "a b -> a (b c)", c=2),
        R((2, 3), "a ... -> a"),  # ellipsis disappears in rearrange
        R((2, 3), "a b -> a b 2"),  # non-unitary anonymous axis in rearrange
        R((2, 3), "a 3 -> a"),
        R((6, 3), "(a 2) b -> a b"),
        R((6, 3), "(a 2) b -> a 2 b"),
        R((2, 3), "1 b -> b"),  # 2 != 1
        R((2, 3), "() b -> b"),
        R((2, 3), "a b -> a b 0"),
        RED((2, 3), "a b -> a b", "avg"),  # unknown reduction
        RED((2, 3), "a b -> a", "Sum"),
        RED((2, 3), "a b -> a", "logsumexp"),
        RED((2, 3), "a b -> a", ""),
        RED((2, 3), "a b -> a", "rearrange"),
        RED((2, 3), "a b -> a c", "sum"),  # output axis missing from input
        RED((2, 3), "a b -> a b c", "sum", c=2),
        RED((2, 3), "a b -> a b 2", "sum"),
        RED((2, 3), "2 b -> 2 b", "sum"),  # anonymous axes are distinct
        RED((3, 4), "h 2 -> h", "sum"),  # 4 != 2
        RED((2, 3), "a b -> b", "sum", c=2),  # kwarg not in pattern
        REP((2, 3), "h w -> h w c"),  # new axis without size
        REP((2, 3), "h w -> (h c) w"),
        REP((2, 3), "h w -> h"),  # axis disappears in repeat
        REP((2, 3), "h w -> h w", c=2),  # kwarg not in pattern
        REP((2, 3), "2 w -> 2 w"),  # anonymous axes are distinct
        REP((4, 3), "(2 h) w -> h w"),
        REP((2, 3), "h w -> h w 0"),
        REP((2, 3), "h w -> h w c", c=-1),
        REP((2, 3), "h w -> h w c", h=5, c=2),  # kwarg contradicts actual size
        R((2, 3), "a b -> b a", c=2),  # kwarg for an axis not in the pattern
        R((2, 3), "a b -> b a", a=3),  # kwarg contradicts actual size
        R((2, 3), "a b -> b a", _a=2),  # invalid kwarg name
        R((6, 4), "(a b) c -> a b c", a=4),  # does not divide
        R((6, 4), "(a b) c -> a b c", a=2, b=2),  # product mismatch
        R((6, 4), "(a b) c -> a b c"),  # two unknown sizes
        R((24,), "(a b c) -> a b c", a=2),
        RED((6, 4), "(a b) c -> a", "sum"),
        RED((6, 4), "(a b) c -> a", "sum", a=5),
        RED((6, 4), "(a b) c -> a", "sum", c=5),
        RED((2, 3, 4), "b c d -> d", "sum", b=3),  # kwarg contradicts actual size
        REP((6, 3), "(h h2) w -> h h2 w c", h2=4, c=2),  # does not divide
        REP((6, 3), "(h h2) w -> h h2 w c", c=2),  # two unknown sizes
        R((2, 3), "a b c -> a b c"),  # rank mismatch
        R((2, 3, 4, 5), "a b c -> a b c"),
        R((2,), "a b ... -> a b ..."),  # too few dims for the ellipsis
        R((2, 3), " -> "),
        R((), "a -> a"),
        RED((2,), "a b -> a", "sum"),
        RED((2, 3, 4), "a b -> a", "max"),
        REP((2,), "a b -> a b c", c=2),
        REP((2, 3, 4), "a b -> a b c", c=2),
    ]
    einsum = [
        EIN([(2, 3)], "a b -> a z"),  # output axis absent from inputs
        EIN([(2, 3), (3, 4)], "i j, j k -> i z"),
        EIN([(2, 3), (4, 5)], "i j, j k -> i k"),  # same axis, different sizes
        EIN([(2, 3), (3, 4), (5, 6)], "a b, b c, c d -> a d"),
        EIN([(2, 3)], "a a -> a"),  # diagonal with different sizes
        EIN([(2, 3, 2)], "a b b -> a b"),
        EIN([(2, 3)], "i j -> i i"),  # duplicate on the output
        EIN([(2, 3), (3, 4)], "i j, j k -> i k i"),
        EIN([(2, 3), (3, 4)], "i j -> i"),  # operand count mismatch
        EIN([(2, 3)], "i j, j k -> i k"),
        EIN([(2,), (2,), (2,)], "i, i -> i"),
        EIN([(2,), (2,)], "i, i, i -> i"),
        EIN([(2, 3), (3, 4)], "i j, j k"),  # missing arrow
        EIN([(2, 3)], "i j"),
        EIN([(2, 3)], "i j -> j -> i"),
        EIN([(2, 3)], "i j => j i"),
        EIN([(2, 3, 4), (3,)], "i j k, k -> i"),  # rank mismatch
        EIN([(2, 3)], "i j k -> i"),
        EIN([(2, 3)], "i -> i"),
        EIN([(2, 3), (3,)], "a b, -> a b"),
        EIN([(2, 3)], "... a ... -> a"),  # two ellipses
        EIN([(2, 3, 4)], "... a -> a"),  # non-empty ellipsis dropped (numpy)
        EIN([(2, 3), (4, 3)], "... a, ... a -> ... a"),  # ellipsis shapes differ
        EIN([(2, 3)], "_a b -> b"),  # invalid identifiers
        EIN([(2, 3)], "a_ b -> b"),
        EIN([(2, 3)], "a-b c -> c"),
        EIN([(2, 3)], "a.b c -> c"),
        EIN([(2, 3)], "a b; -> a"),
        EIN([(2, 3)], "a b -> a;"),
        EIN([(2, 3)], "(a b -> a"),  # unbalanced parentheses
        EIN([(2, 3)], "a b) -> a"),
        EIN([(2, 3)], ".. a b -> a"),
        EIN([(2, 3), (3, 4)], "i j,, j k -> i k"),
    ]
    return (
        section("invalid syntax", syntax)
        + section("invalid semantics", semantic)
        + section("invalid einsum", einsum)
    )


def _zero_size() -> list[Case]:
    """Size-0 dims: empty tensors, b=0, and what einops refuses on them (a
    split by 0: "integer modulo by zero"; max/min over an empty axis: numpy's
    "zero-size array to reduction operation ... which has no identity"; an
    anonymous axis 0)."""
    cases = [
        REP((3,), "a -> (a b)", b=0),
        REP((3,), "a -> a b", b=0),
        REP((0, 2), "a c -> a b c", b=4),
        REP((3,), "a -> a 0"),
        R((0, 3), "(a b) c -> a b c", b=2),
        R((0, 3), "(a b) c -> a b c", b=0),
        R((4, 3), "(a b) c -> a b c", b=0),
        R((3, 0), "a b -> (a b)"),
        R((2, 0, 3), "a b c -> c b a"),
        R((0, 4), "a (b c) -> a b c", b=2),
        RED((3, 0), "a c -> c", "max"),
        RED((0, 0), "a b -> a", "max"),
        RED((0, 3), "a b -> b a", "min"),
        RED((2, 0, 3), "a b c -> b", "min"),
        RED((2, 0, 3), "a b c -> a c", "max"),
        EIN([(2, 0), (0, 3)], "a b, b c -> a c"),
        EIN([(0, 3), (3, 4)], "a b, b c -> a c"),
        EIN([(0, 3)], "a b -> "),
    ]
    for kind in REDUCTIONS + LOGICAL:
        cases.append(RED((0, 3), "a c -> c", kind))
    return section("zero-size", cases)


def _logical() -> list[Case]:
    """reduce with "any" and "all" (einops' logical reductions) on bool."""
    cases = []
    for r in LOGICAL:
        cases += [
            RED((2, 3, 4), "a b c -> a", r),
            RED((2, 3, 4), "a b c -> c b a", r),
            RED((2, 3, 4), "a b c -> ", r),
            RED((2, 6), "a (b c) -> a c", r, b=2),
            RED((2, 3, 4), "a ... -> a", r),
            RED((2, 3), "a b -> a 1", r),
            RED((2, 3), "a b -> a c", r),  # rejected: c is new
            RED((2, 6), "a (b c) -> a", r, b=4),  # rejected: 6 % 4
        ]
    return section("logical", cases)


def all_cases() -> list[Case]:
    return (_einops_tests() + _einops_docs() + _valid_variations() + _invalid_variations()
            + _zero_size() + _logical())


# --------------------------------------------------------------------------
# Ground truth from einops
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Truth:
    accepted: bool
    shape: Optional[Shape]  # output shape when accepted
    reason: str  # exception text when rejected


def einops_truth(case: Case) -> Truth:
    np_dtype = np.bool_ if case.reduction in LOGICAL else np.float32
    arrays = [np.zeros(shape, dtype=np_dtype) for shape in case.shapes]
    sizes = dict(case.sizes)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if case.op == "rearrange":
                out = einops.rearrange(arrays[0], case.pattern, **sizes)
            elif case.op == "reduce":
                out = einops.reduce(arrays[0], case.pattern, case.reduction, **sizes)
            elif case.op == "repeat":
                out = einops.repeat(arrays[0], case.pattern, **sizes)
            elif case.op == "einsum":
                out = einops.einsum(*arrays, case.pattern)
            else:
                raise AssertionError(f"unknown op {case.op}")
    except Exception as exc:  # einops rejects: any exception counts
        lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
        first = lines[-1] if lines else ""  # EinopsError puts the cause last
        return Truth(False, None, f"{type(exc).__name__}: {first}")
    return Truth(True, tuple(int(d) for d in np.shape(out)), "")


def einsum_broadcasts(case: Case) -> bool:
    """True when an einsum case relies on numpy broadcasting (excluded category).

    Only meaningful for cases einops accepted (so the pattern parses).
    """
    lhs = case.pattern.split("->")[0].split(",")
    label_sizes: dict[str, set[int]] = {}
    ellipsis_shapes: set[Shape] = set()
    for spec, shape in zip(lhs, case.shapes):
        tokens = spec.replace("...", " ... ").split()
        if "..." in tokens:
            pos = tokens.index("...")
            n_ell = len(shape) - (len(tokens) - 1)
            ellipsis_shapes.add(shape[pos : pos + n_ell])
            dims = list(shape[:pos]) + list(shape[pos + n_ell :])
            tokens.remove("...")
        else:
            dims = list(shape)
        for tok, dim in zip(tokens, dims):
            label_sizes.setdefault(tok, set()).add(dim)
    return len(ellipsis_shapes) > 1 or any(len(s) > 1 for s in label_sizes.values())


# --------------------------------------------------------------------------
# .ein generation
# --------------------------------------------------------------------------


def ein_type(shape: Shape, dtype: str = "f32") -> str:
    return dtype + '["' + " ".join(map(str, shape)) + '"]'


def ein_program(case: Case, ret: Shape) -> str:
    for text in [case.pattern, case.reduction or ""]:
        assert '"' not in text and "\\" not in text and "\n" not in text, f"unquotable: {text!r}"
    names = ["x"] if len(case.shapes) == 1 else [f"x{i}" for i in range(len(case.shapes))]
    dtype = "bool" if case.reduction in LOGICAL else "f32"
    params = ", ".join(f"{n}: {ein_type(s, dtype)}" for n, s in zip(names, case.shapes))
    kwargs = "".join(f", {k}={v}" for k, v in case.sizes)
    if case.op == "einsum":
        call = f'einsum({", ".join(names)}, "{case.pattern}")'
    elif case.op == "reduce":
        call = f'reduce(x, "{case.pattern}", "{case.reduction}"{kwargs})'
    else:
        call = f'{case.op}(x, "{case.pattern}"{kwargs})'
    return f"def f({params}) -> {ein_type(ret, dtype)}:\n    return {call}\n"


def wrong_shape(shape: Shape, index: int) -> Shape:
    """A deliberately wrong return shape for the negative control of case `index`."""
    if not shape:
        return (1,) if index % 2 == 0 else (2,)
    kind = index % 3
    if kind == 0:  # bump one dimension
        pos = index % len(shape)
        return shape[:pos] + (shape[pos] + 1,) + shape[pos + 1 :]
    if kind == 1:  # extra trailing dimension of size 1
        return shape + (1,)
    return shape[:-1]  # drop the last dimension


# --------------------------------------------------------------------------
# Running einc
# --------------------------------------------------------------------------


@dataclass
class EincResult:
    verdict: str  # "accepted" | "rejected" | "crashed"
    detail: str  # first stderr line, or crash description


def run_einc(einc: str, path: str) -> EincResult:
    try:
        proc = subprocess.run(
            [einc, "check", path], capture_output=True, text=True, timeout=EINC_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return EincResult("crashed", f"timeout after {EINC_TIMEOUT_S}s")
    except OSError as exc:
        return EincResult("crashed", f"could not run einc: {exc}")
    lines = [l for l in (proc.stderr or "").splitlines() if l.strip()]
    first = lines[0] if lines else ""
    if proc.returncode == 0:
        return EincResult("accepted", first)
    if proc.returncode == 1:
        return EincResult("rejected", first)
    return EincResult("crashed", f"exit code {proc.returncode}: {first}")


@dataclass
class Check:
    label: str  # e.g. "#012" or "#012 control"
    case: Case
    path: str
    expect: str  # "accepted" | "rejected"
    why: str  # einops verdict in words
    result: Optional[EincResult] = None

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.verdict == self.expect


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--einc", required=True, help="path to the einc binary")
    ap.add_argument("--keep", metavar="DIR", help="write the generated .ein files to DIR and keep them")
    ap.add_argument("--filter", metavar="SUBSTR", help="only run cases whose description contains SUBSTR")
    ap.add_argument("--verbose", action="store_true", help="print every check")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel einc runs")
    args = ap.parse_args()

    if not (os.path.isfile(args.einc) and os.access(args.einc, os.X_OK)):
        found = shutil.which(args.einc)
        if not found:
            print(f"error: einc not found or not executable: {args.einc}", file=sys.stderr)
            return 2
        args.einc = found

    cases = all_cases()
    indexed = list(enumerate(cases))
    if args.filter:
        indexed = [(i, c) for i, c in indexed if args.filter in c.describe()]

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir = args.keep
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="einops_agreement_")
        workdir = tmp.name

    checks: list[Check] = []
    n_accepted = n_rejected = 0
    table_errors: list[str] = []
    for i, case in indexed:
        truth = einops_truth(case)
        label = f"#{i:03d}"
        if truth.accepted:
            n_accepted += 1
            if case.op == "einsum" and einsum_broadcasts(case):
                table_errors.append(f"{label} {case.describe()}: relies on numpy einsum broadcasting")
            path = os.path.join(workdir, f"case_{i:03d}.ein")
            with open(path, "w") as f:
                f.write(ein_program(case, truth.shape))
            checks.append(Check(label, case, path, "accepted", f"accepted {truth.shape}"))
            wrong = wrong_shape(truth.shape, i)
            cpath = os.path.join(workdir, f"case_{i:03d}_wrong.ein")
            with open(cpath, "w") as f:
                f.write(ein_program(case, wrong))
            checks.append(
                Check(
                    f"{label} control (declared {ein_type(wrong)})",
                    case,
                    cpath,
                    "rejected",
                    f"output is {truth.shape}, declared return type is wrong",
                )
            )
        else:
            n_rejected += 1
            path = os.path.join(workdir, f"case_{i:03d}.ein")
            with open(path, "w") as f:
                f.write(ein_program(case, case.shapes[0]))
            checks.append(Check(label, case, path, "rejected", f"rejected ({truth.reason})"))

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda c: run_einc(args.einc, c.path), checks))
    for check, result in zip(checks, results):
        check.result = result

    failed = [c for c in checks if not c.ok]
    crashed = [c for c in failed if c.result.verdict == "crashed"]
    for check in checks:
        if check.ok and not args.verbose:
            continue
        tag = "ok      " if check.ok else ("CRASH   " if check.result.verdict == "crashed" else "DISAGREE")
        detail = f": {check.result.detail}" if check.result.detail else ""
        print(
            f"{tag} {check.label} {check.case.describe()}: einops {check.why}; "
            f"einc {check.result.verdict}{detail}"
        )
    for err in table_errors:
        print(f"TABLE ERROR {err}")
    if crashed:
        print(f"*** einc crashed on {len(crashed)} check(s) ***")

    n_cases = len(indexed)
    n_fail = len(failed) + len(table_errors)
    print(
        f"einops agreement: {n_cases} cases ({n_accepted} accepted, {n_rejected} rejected by einops), "
        f"{n_fail} disagreements"
    )
    print(f"{len(checks) - len(failed)} passed, {n_fail} failed")

    if tmp is not None:
        tmp.cleanup()

    status = 0
    if n_fail:
        status = 1
    if not args.filter and (n_cases < MIN_CASES or n_rejected < MIN_REJECTED):
        print(
            f"error: case table too small: {n_cases} cases (need {MIN_CASES}), "
            f"{n_rejected} rejected (need {MIN_REJECTED})",
            file=sys.stderr,
        )
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
