# Checks the gradient rule of every differentiable op against central finite
# differences of a numpy forward (the oracle), in f64.
#
#   grad_fd.py EINC TMPDIR [--sample N [--offset K|rotate]] [EXTRA EINC ARGS...]
#
# Each case is a small .ein function body that uses one op (or one op family)
# to compute one or more outputs `o...`. The script writes
#
#   def f(INPUTS..., r0: f64["..."], ...) -> (f64[""], GRADS...):
#       BODY
#       l = reduce(o0 * r0, "... ->", "sum") + ...
#       g0, g1 = grad(l, wrt=[...])
#       return l, g0, g1
#
# with random weightings r, runs `einc run` once per case (with the EXTRA
# arguments, e.g. --target=cuda-emulated or --size-generic), and compares the
# loss with the numpy forward and each gradient with central differences of
# the numpy loss. Prints `ok NAME` or `FAIL NAME: why` per case, then
# `N failure(s)`; exits 1 on any failure.
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from math import erf as _erf

import numpy as np

EPS = 1e-6
# Central differences in f64 with EPS = 1e-6: truncation ~EPS^2 * f''' and
# rounding ~1e-16 * |sum of terms| / EPS, both far below these bounds for
# inputs of magnitude ~1 and a dozen to a hundred terms.
GRAD_RTOL = 1e-6
GRAD_ATOL = 1e-6
LOSS_RTOL = 1e-9


# --- numpy helpers (the oracle's functions) ---------------------------------

erf = np.vectorize(_erf, otypes=[np.float64])


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


# --- input generators ---------------------------------------------------------

def normal(shape):
    return lambda rng: rng.normal(size=shape)


def positive(shape, lo=0.5, hi=2.0):
    return lambda rng: rng.uniform(lo, hi, size=shape)


def away(shape, gap=0.2):
    """Normal values at least `gap` from 0 (kinks of relu, abs, sign...)."""
    def gen(rng):
        v = rng.normal(size=shape)
        return np.where(np.abs(v) < gap, np.sign(v + 1e-12) * (gap + np.abs(v)), v)
    return gen


def away_from_integers(shape, lo, hi, gap=0.15):
    """Uniform values in [lo, hi) at least `gap`/2 from every integer and
    half-integer (floor, ceil and round are constant there)."""
    def gen(rng):
        v = rng.uniform(lo, hi, size=shape)
        frac = v * 2 - np.floor(v * 2)
        return np.where(frac < gap, v + gap / 2, np.where(frac > 1 - gap, v - gap / 2, v))
    return gen


def distinct(shape, gap=0.1):
    """Values whose pairwise gaps are at least `gap` (no ties in max/min)."""
    def gen(rng):
        n = int(np.prod(shape))
        v = (np.arange(n) * gap * 3 + rng.uniform(0, gap, size=n)) - n * gap * 1.5
        return rng.permutation(v).reshape(shape)
    return gen


def uniform(shape, lo, hi):
    return lambda rng: rng.uniform(lo, hi, size=shape)


def away_from_bounds(shape, bound=0.5, gap=0.1):
    """Uniform values in (-1.2, 1.2) at least `gap` from -bound and bound."""
    def gen(rng):
        v = rng.uniform(-1.2, 1.2, size=shape)
        return np.where(np.abs(np.abs(v) - bound) < gap, v * 1.5, v)
    return gen


class Case:
    def __init__(self, name, params, body, outs, oracle, wrt, helpers="",
                 fd_oracle=None, loss_rtol=LOSS_RTOL, grad_rtol=GRAD_RTOL,
                 grad_atol=GRAD_ATOL):
        self.name = name
        self.params = params        # [(name, type shape, generator)]
        self.body = body            # .ein lines computing the outputs
        self.outs = outs            # [(name, type shape)]
        self.oracle = oracle        # numpy: *inputs -> output or [outputs]
        self.fd_oracle = fd_oracle or oracle
        self.wrt = wrt
        self.helpers = helpers      # functions the body calls
        self.loss_rtol = loss_rtol
        self.grad_rtol = grad_rtol
        self.grad_atol = grad_atol


def unary(name, expr, fn, gen, **kw):
    return Case(name, [("x", "a b", gen((3, 4)))], f"o = {expr}",
                [("o", "a b")], fn, ["x"], **kw)


def binary(name, expr, fn, gen_x, gen_y, shape_y="a b", np_shape_y=(3, 4), **kw):
    return Case(name, [("x", "a b", gen_x((3, 4))), ("y", shape_y, gen_y(np_shape_y))],
                f"o = {expr}", [("o", "a b")], fn, ["x", "y"], **kw)


NAMED_DIMS = "dim seq = 4\ndim d = 4\ndim window = seq + 1\n"


def named(name, expr, fn, gen_x=normal, gen_w=normal):
    """o = EXPR of x ["b seq d"], w ["seq d"] and t, r's last `seq` columns
    as ["b window-1 1"]; gradients with respect to x, w and r."""
    return Case(name, [("x", "b seq d", gen_x((2, 4, 4))), ("w", "seq d", gen_w((4, 4))),
                       ("r", "b window", normal((2, 5)))],
                "t = rearrange(slice(r, 'window', 1, window), 'b s -> b s 1')\n"
                f"    o = {expr}", [("o", "b seq d")], fn, ["x", "w", "r"],
                helpers=NAMED_DIMS)


def repeat_h2(x):
    return np.repeat(x, 2, axis=1)


def unpack_oracle(z, w):
    return [z[:, :4] * w[:, :4], z[:, 4:] * w[:, 4:]]


CASES = [
    # einsum
    Case("einsum_matmul", [("x", "a b", normal((3, 4))), ("w", "b c", normal((4, 2)))],
         "o = einsum(x, w, 'a b, b c -> a c')", [("o", "a c")],
         lambda x, w: x @ w, ["x", "w"]),
    Case("einsum_batched_3_operands",
         [("x", "n a b", normal((2, 3, 4))), ("y", "n b c", normal((2, 4, 2))),
          ("z", "n c d", normal((2, 2, 3)))],
         "o = einsum(x, y, z, 'n a b, n b c, n c d -> n a d')", [("o", "n a d")],
         lambda x, y, z: np.einsum("nab,nbc,ncd->nad", x, y, z), ["x", "y", "z"]),
    Case("einsum_lone_axes",
         [("x", "a b", normal((3, 4))), ("y", "c", normal((5,)))],
         "o = einsum(x, y, 'a b, c -> a')", [("o", "a")],
         lambda x, y: x.sum(1) * y.sum(), ["x", "y"]),
    Case("einsum_lone_axes_wrt_x_only",
         [("x", "a b", normal((3, 4))), ("y", "c", normal((5,)))],
         "o = einsum(x, y, 'a b, c -> a')", [("o", "a")],
         lambda x, y: x.sum(1) * y.sum(), ["x"]),
    Case("einsum_composed_axis",
         [("x", "b (h d)", normal((3, 6))), ("w", "h d", normal((2, 3)))],
         "o = einsum(w, x, 'h d, b (h d) -> b')", [("o", "b")],
         lambda x, w: x @ w.reshape(-1), ["x", "w"]),
    Case("einsum_composed_output",
         [("x", "b h", normal((3, 2))), ("w", "h d", normal((2, 4)))],
         "o = einsum(x, w, 'b h, h d -> b (h d)')", [("o", "b (h d)")],
         lambda x, w: (x[:, :, None] * w[None]).reshape(3, -1), ["x", "w"]),
    Case("einsum_diagonal", [("x", "n n", normal((4, 4)))],
         "o = einsum(x, 'i i -> i')", [("o", "n")], lambda x: np.diag(x).copy(), ["x"]),
    # A diagonal summed away: the gradient is the identity (times the
    # weighting), not all ones (issue 27, item 13).
    Case("einsum_trace", [("x", "n n", normal((4, 4)))],
         "o = einsum(x, 'i i -> ')", [("o", "")], lambda x: np.trace(x), ["x"]),
    Case("einsum_diagonal_of_last_two", [("x", "a n n", normal((3, 4, 4)))],
         "o = einsum(x, 'i j j -> i')", [("o", "a")], lambda x: np.einsum("ijj->i", x), ["x"]),
    Case("einsum_diagonal_with_other_operand",
         [("x", "n n", normal((4, 4))), ("w", "n c", normal((4, 3)))],
         "o = einsum(x, w, 'i i, i c -> c')", [("o", "c")], lambda x, w: np.einsum("ii,ic->c", x, w), ["x", "w"]),
    Case("einsum_ellipsis",
         [("x", "a b c", normal((2, 3, 4))), ("w", "c d", normal((4, 2)))],
         "o = einsum(x, w, '... c, c d -> ... d')", [("o", "a b d")],
         lambda x, w: x @ w, ["x", "w"]),
    # '...' in the other patterns
    Case("reduce_ellipsis_keepdim", [("x", "a b d", normal((2, 3, 4)))],
         "o = reduce(x, '... d -> ... 1', 'sum')", [("o", "a b 1")],
         lambda x: x.sum(2, keepdims=True), ["x"]),
    Case("rearrange_ellipsis", [("x", "a b d", normal((2, 3, 4)))],
         "o = rearrange(x, '... b d -> ... d b')", [("o", "a d b")],
         lambda x: x.transpose(0, 2, 1), ["x"]),
    Case("repeat_ellipsis", [("x", "a b", normal((2, 3)))],
         "o = repeat(x, '... b -> ... b c', c=2)", [("o", "a b 2")],
         lambda x: np.repeat(x[..., None], 2, axis=2), ["x"]),
    # rearrange, repeat
    Case("rearrange_split_merge_permute", [("x", "a (b 2) d", normal((2, 6, 3)))],
         "o = rearrange(x, 'a (p q) d -> d (a p) q', q=2)", [("o", "d (a b) 2")],
         lambda x: x.reshape(2, 3, 2, 3).transpose(3, 0, 1, 2).reshape(3, 6, 2), ["x"]),
    Case("repeat_new_axis", [("x", "a b", normal((3, 4)))],
         "o = repeat(x, 'a b -> a c b', c=3)", [("o", "a 3 b")],
         lambda x: np.repeat(x[:, None, :], 3, axis=1), ["x"]),
    Case("repeat_h2", [("x", "a b", normal((3, 4)))],
         "o = repeat(x, 'a b -> a (b 2)')", [("o", "a (b 2)")], repeat_h2, ["x"]),
    # reduce
    Case("reduce_sum_one_axis", [("x", "a b c", normal((2, 3, 4)))],
         "o = reduce(x, 'a b c -> a c', 'sum')", [("o", "a c")],
         lambda x: x.sum(1), ["x"]),
    Case("reduce_sum_two_axes", [("x", "a b c", normal((2, 3, 4)))],
         "o = reduce(x, 'a b c -> b', 'sum')", [("o", "b")],
         lambda x: x.sum((0, 2)), ["x"]),
    Case("reduce_mean_one_axis", [("x", "a b c", normal((2, 3, 4)))],
         "o = reduce(x, 'a b c -> a c', 'mean')", [("o", "a c")],
         lambda x: x.mean(1), ["x"]),
    Case("reduce_mean_two_axes", [("x", "a b c", normal((2, 3, 4)))],
         "o = reduce(x, 'a b c -> b', 'mean')", [("o", "b")],
         lambda x: x.mean((0, 2)), ["x"]),
    Case("reduce_max_one_axis", [("x", "a b c", distinct((2, 3, 4)))],
         "o = reduce(x, 'a b c -> a c', 'max')", [("o", "a c")],
         lambda x: x.max(1), ["x"]),
    Case("reduce_max_two_axes", [("x", "a b c", distinct((2, 3, 4)))],
         "o = reduce(x, 'a b c -> b', 'max')", [("o", "b")],
         lambda x: x.max((0, 2)), ["x"]),
    Case("reduce_min_one_axis", [("x", "a b c", distinct((2, 3, 4)))],
         "o = reduce(x, 'a b c -> a c', 'min')", [("o", "a c")],
         lambda x: x.min(1), ["x"]),
    Case("reduce_min_two_axes", [("x", "a b c", distinct((2, 3, 4)))],
         "o = reduce(x, 'a b c -> b', 'min')", [("o", "b")],
         lambda x: x.min((0, 2)), ["x"]),
    Case("reduce_max_keepdim", [("x", "a b", distinct((3, 4)))],
         "o = reduce(x, 'a b -> a 1', 'max')", [("o", "a 1")],
         lambda x: x.max(1, keepdims=True), ["x"]),
    Case("reduce_max_all", [("x", "a b", distinct((3, 4)))],
         "o = reduce(x, 'a b ->', 'max')", [("o", "")],
         lambda x: x.max(), ["x"]),
    # var: population variance (np.var, ddof=0); d var/dx = 2 (x - mean) / N.
    Case("reduce_var_one_axis", [("x", "a b c", normal((2, 3, 4)))],
         "o = reduce(x, 'a b c -> a c', 'var')", [("o", "a c")],
         lambda x: x.var(1), ["x"]),
    Case("reduce_var_two_axes", [("x", "a b c", normal((2, 3, 4)))],
         "o = reduce(x, 'a b c -> b', 'var')", [("o", "b")],
         lambda x: x.var((0, 2)), ["x"]),
    Case("reduce_mean_pool_h2", [("x", "a (b 2)", normal((3, 8)))],
         "o = reduce(x, 'a (b two) -> a b', 'mean', two=2)", [("o", "a b")],
         lambda x: x.reshape(3, 4, 2).mean(2), ["x"]),
    # elementwise, one operand
    unary("neg", "-x", lambda x: -x, normal),
    unary("exp", "exp(x)", np.exp, normal),
    unary("log", "log(x)", np.log, positive),
    unary("sqrt", "sqrt(x)", np.sqrt, positive),
    unary("rsqrt", "rsqrt(x)", lambda x: 1 / np.sqrt(x), positive),
    unary("tanh", "tanh(x)", np.tanh, normal),
    unary("relu", "relu(x)", lambda x: np.maximum(x, 0), away),
    unary("sigmoid", "sigmoid(x)", sigmoid, normal),
    unary("silu", "silu(x)", lambda x: x * sigmoid(x), normal),
    unary("gelu", "gelu(x)", gelu, normal),
    unary("gelu_tanh", "gelu(x, approximate='tanh')", gelu_tanh, normal),
    unary("softplus", "softplus(x)", lambda x: np.logaddexp(0, x), normal),
    unary("sin", "sin(x)", np.sin, normal),
    unary("cos", "cos(x)", np.cos, normal),
    unary("erf", "erf(x)", erf, normal),
    unary("abs", "abs(x)", np.abs, away),
    unary("square", "square(x)", np.square, normal),
    unary("sign", "sign(x)", np.sign, away),
    unary("floor", "floor(x)", np.floor, lambda s: away_from_integers(s, -3, 3)),
    unary("ceil", "ceil(x)", np.ceil, lambda s: away_from_integers(s, -3, 3)),
    unary("round", "round(x)", np.round, lambda s: away_from_integers(s, -3, 3)),
    unary("pow_const_exponent", "x ** 3", lambda x: x ** 3, normal),
    unary("pow_const_base", "2.0 ** x", lambda x: 2.0 ** x, normal),
    unary("scalar_arith", "3.0 - 2.0 * x / 4.0 + 1.0 / x", lambda x: 3.0 - 2.0 * x / 4.0 + 1.0 / x, positive),
    unary("clip_const", "clip(x, -0.5, 0.5)", lambda x: np.clip(x, -0.5, 0.5), away_from_bounds),
    # elementwise, two and three operands
    binary("add", "x + y", lambda x, y: x + y, normal, normal),
    binary("sub", "x - y", lambda x, y: x - y, normal, normal),
    binary("mul", "x * y", lambda x, y: x * y, normal, normal),
    binary("div", "x / y", lambda x, y: x / y, normal, positive),
    binary("pow", "x ** y", lambda x, y: x ** y, positive, normal),
    binary("mod", "x % y", lambda x, y: np.mod(x, y),
           lambda s: lambda rng: rng.uniform(-3, 3, size=s), lambda s: positive(s, 0.7, 1.3),
           ),
    binary("floordiv", "x // y", lambda x, y: np.floor_divide(x, y),
           lambda s: lambda rng: rng.uniform(-3, 3, size=s), lambda s: positive(s, 0.7, 1.3)),
    binary("min", "min(x, y)", np.minimum, normal, normal),
    binary("max", "max(x, y)", np.maximum, normal, normal),
    Case("clip", [("x", "a b", uniform((3, 4), -2.0, 2.0)), ("lo", "a b", uniform((3, 4), -1.5, -0.3)),
                  ("hi", "a b", uniform((3, 4), 0.3, 1.5))],
         "o = clip(x, lo, hi)", [("o", "a b")],
         lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), ["x", "lo", "hi"]),
    # broadcasting
    binary("broadcast_bias", "x + y", lambda x, y: x + y, normal, normal, "b", (4,)),
    binary("broadcast_mul_bias", "x * y", lambda x, y: x * y, normal, normal, "b", (4,)),
    binary("broadcast_size1", "x * y", lambda x, y: x * y, normal, normal, "a 1", (3, 1)),
    binary("broadcast_scalar_tensor", "x - y", lambda x, y: x - y, normal, normal, "", ()),
    # where
    Case("where", [("c", "a b", normal((3, 4))), ("x", "a b", normal((3, 4))),
                   ("y", "a b", normal((3, 4)))],
         "o = where(c > 0, x, y)", [("o", "a b")],
         lambda c, x, y: np.where(c > 0, x, y), ["x", "y"]),
    Case("where_scalar_branch", [("c", "a b", normal((3, 4))), ("x", "a b", normal((3, 4)))],
         "o = where(c > 0, x, -3.0)", [("o", "a b")],
         lambda c, x: np.where(c > 0, x, -3.0), ["x"]),
    Case("where_condition_input", [("c", "a b", away((3, 4))), ("x", "a b", normal((3, 4))),
                                   ("y", "a b", normal((3, 4)))],
         "o = where(c > 0, x, y)", [("o", "a b")],
         lambda c, x, y: np.where(c > 0, x, y), ["c", "x"]),
    # astype: the f32 round trip; the differences are taken of the f64
    # identity (the gradient of a cast is a cast of the gradient)
    Case("astype_f64_f32_f64", [("x", "a b", normal((3, 4)))],
         "o = astype(astype(x, f32), f64)", [("o", "a b")],
         lambda x: x.astype(np.float32).astype(np.float64), ["x"],
         fd_oracle=lambda x: x, loss_rtol=1e-6, grad_rtol=1e-6),
    # pack, unpack, cat, slice
    Case("pack", [("x", "a b c", normal((2, 3, 2))), ("y", "a d", normal((2, 3)))],
         "o, ps = pack([x, y], 'a *')", [("o", "a b*c+d")],
         lambda x, y: np.concatenate([x.reshape(2, -1), y], 1), ["x", "y"]),
    Case("unpack", [("z", "a 7", normal((3, 7))), ("w", "a 7", normal((3, 7)))],
         "u, v = unpack(z * w, [[4], [3]], 'a *')", [("u", "a 4"), ("v", "a 3")],
         unpack_oracle, ["z", "w"]),
    Case("pack_unpack_roundtrip", [("x", "a b", normal((2, 3))), ("y", "a c d", normal((2, 2, 2)))],
         "p, ps = pack([x, y], 'a *')\n    u, v = unpack(p * p, ps, 'a *')",
         [("u", "a b"), ("v", "a c d")],
         lambda x, y: [x * x, y * y], ["x", "y"]),
    Case("cat", [("x", "a b", normal((3, 2))), ("y", "a c", normal((3, 4)))],
         "o = cat([x, y], 'a *')", [("o", "a b+c")],
         lambda x, y: np.concatenate([x, y], 1), ["x", "y"]),
    Case("cat_ellipsis", [("x", "a b c", normal((2, 3, 2))), ("y", "a b c", normal((2, 3, 2)))],
         "o = cat([-y, x], '... *')", [("o", "a b 2*c")],
         lambda x, y: np.concatenate([-y, x], 2), ["x", "y"]),
    Case("slice_inner", [("x", "a b", normal((3, 5)))],
         "o = slice(x, 'b', 1, 4)", [("o", "a 3")],
         lambda x: x[:, 1:4], ["x"]),
    Case("slice_leading", [("x", "a b", normal((5, 3)))],
         "o = slice(x, 'a', 2, 4)", [("o", "2 b")],
         lambda x: x[2:4], ["x"]),
    # graph structure
    Case("value_used_twice", [("x", "a b", normal((3, 4)))],
         "o = x * x + x", [("o", "a b")], lambda x: x * x + x, ["x"]),
    Case("wrt_without_path", [("x", "a b", normal((3, 4))), ("z", "a b", normal((3, 4)))],
         "o = exp(x)", [("o", "a b")], lambda x, z: np.exp(x), ["x", "z"]),
    Case("reassigned_name", [("x", "a b", normal((3, 4)))],
         "o = x * 2.0\n    o = sin(o) * x", [("o", "a b")],
         lambda x: np.sin(x * 2.0) * x, ["x"]),
    Case("function_call",
         [("x", "a b", normal((3, 4))), ("w", "b c", normal((4, 2)))],
         "o = layer(x, w)", [("o", "a c")],
         lambda x, w: np.tanh(x @ w) * (x @ w), ["x", "w"],
         helpers="def layer(u: f64[\"m i\"], v: f64[\"i k\"]) -> f64[\"m k\"]:\n"
                 "    h = einsum(u, v, 'm i, i k -> m k')\n"
                 "    return tanh(h) * h\n"),
    Case("function_call_two_results",
         [("x", "a b", normal((3, 4))), ("y", "b", normal((4,)))],
         "u, v = two(x, y)", [("u", "a b"), ("v", "a")],
         lambda x, y: [x * y, (x * x).sum(1)], ["y", "x"],
         helpers="def two(p: f64[\"m n\"], q: f64[\"n\"]) -> (f64[\"m n\"], f64[\"m\"]):\n"
                 "    return p * q, reduce(p * p, 'm n -> m', 'sum')\n"),
    Case("shared_bias_twice",
         [("x", "a b", normal((3, 4))), ("bias", "b", normal((4,)))],
         "o = tanh(x + bias) * bias", [("o", "a b")],
         lambda x, bias: np.tanh(x + bias) * bias, ["bias", "x"]),
    # A LayerNorm written with kept-1 reductions (row-fused, forward and
    # backward, since issue 31).
    Case("layer_norm_kept_one", [("x", "a b", normal((3, 5))), ("g", "b", normal((5,)))],
         "mu = reduce(x, 'a b -> a 1', 'mean')\n    var = reduce(x, 'a b -> a 1', 'var')\n"
         "    o = (x - mu) * rsqrt(var + 0.00001) * g", [("o", "a b")],
         lambda x, g: (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g,
         ["x", "g"]),
    Case("dim_as_value", [("x", "a b", normal((3, 4)))],
         "o = reduce(x * x, 'a b -> a 1', 'sum') / b", [("o", "a 1")],
         lambda x: (x * x).sum(1, keepdims=True) / 4, ["x"]),
    # Broadcasting matches dims by name; here the gradient of `x OP w`
    # reaches it with its `seq` written `window - 1` (t's, from the slice),
    # and seq == d: matching w's dims against those names found `window - 1`
    # and `d` both of size 4 (examples/gpt.ein's `take(...) + wpe` when
    # d_model == seq).
    named("broadcast_add_dims_written_otherwise", "t * (x + w)",
          lambda x, w, r: r[:, 1:, None] * (x + w)),
    named("broadcast_mul_dims_written_otherwise", "t * (x * w)",
          lambda x, w, r: r[:, 1:, None] * (x * w)),
    named("broadcast_sub_div_dims_written_otherwise", "t * (x / w - w)",
          lambda x, w, r: r[:, 1:, None] * (x / w - w), gen_w=positive),
    named("broadcast_where_dims_written_otherwise", "t * where(w > 0.0, x, w)",
          lambda x, w, r: r[:, 1:, None] * np.where(w > 0, x, w), gen_w=away),
    # (einsum's rule reads the pattern's axes, not the gradient's names.)
    named("broadcast_einsum_ellipsis_dims_written_otherwise",
          "t * einsum(x, w, '... s d, s d -> ... s d')",
          lambda x, w, r: r[:, 1:, None] * (x * w)),
]




def rank(shape):
    """The number of dims of a type's shape string (a `(h d)` is one)."""
    return len(re.sub(r"\([^)]*\)", "X", shape).split())


def out_pattern(shape):
    return " ".join(f"q{i}" for i in range(rank(shape)))


def source(case):
    params = [f"{n}: f64[\"{s}\"]" for n, s, _ in case.params]
    params += [f"r{i}: f64[\"{s}\"]" for i, (_, s) in enumerate(case.outs)]
    types = {n: s for n, s, _ in case.params}
    results = ["f64[\"\"]"] + [f"f64[\"{types[w]}\"]" for w in case.wrt]
    terms = []
    for i, (o, s) in enumerate(case.outs):
        terms.append(f"reduce({o} * r{i}, '{out_pattern(s)} ->', 'sum')" if s.strip()
                     else f"{o} * r{i}")
    grads = [f"g_{w}" for w in case.wrt]
    return (case.helpers + "\n"
            f"def f({', '.join(params)}) -> ({', '.join(results)}):\n"
            f"    {case.body}\n"
            f"    l = {' + '.join(terms)}\n"
            f"    {', '.join(grads)} = grad(l, wrt=[{', '.join(case.wrt)}])\n"
            f"    return l, {', '.join(grads)}\n")


def loss(oracle, inputs, rs):
    outs = oracle(*inputs.values())
    if not isinstance(outs, list):
        outs = [outs]
    return sum(float(np.sum(np.asarray(o, np.float64) * r)) for o, r in zip(outs, rs))


def finite_differences(case, inputs, rs, name):
    x = inputs[name]
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        plus = dict(inputs)
        minus = dict(inputs)
        plus[name] = x.copy()
        minus[name] = x.copy()
        plus[name][idx] += EPS
        minus[name][idx] -= EPS
        g[idx] = (loss(case.fd_oracle, plus, rs) - loss(case.fd_oracle, minus, rs)) / (2 * EPS)
    return g


def run(case, einc, tmp, extra, seed, variant=None):
    try:
        return run_checked(case, einc, tmp, extra, seed, variant)
    except Exception as e:  # a bug of this script: report it as a failure
        return f"FAIL {case.name}: harness error {type(e).__name__}: {e}"


def case_inputs(case, seed):
    """The case's inputs and loss weightings, the same for every run of it."""
    rng = np.random.default_rng(seed)
    inputs = {n: np.asarray(gen(rng), np.float64) for n, _, gen in case.params}
    outs = case.oracle(*inputs.values())
    if not isinstance(outs, list):
        outs = [outs]
    rs = [rng.normal(size=np.shape(o)) for o in outs]
    return inputs, rs


def run_checked(case, einc, tmp, extra, seed, variant=None):
    """`variant` (grad_mesh.py): (tag, source prefix, refusals): the case
    named NAME@tag with the prefix before its source; an exit 1 or 2 whose
    error names one of the refusals is `refused`, not a failure."""
    inputs, rs = case_inputs(case, seed)
    tag, prefix, refusals = variant or ("", "", ())
    label = f"{case.name}@{tag}" if tag else case.name
    d = os.path.join(tmp, label)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "case.ein")
    with open(path, "w") as f:
        f.write(prefix + source(case))
    args = [einc, "run", path, "--fn", "f", *extra]
    for name, value in list(inputs.items()) + [(f"r{i}", r) for i, r in enumerate(rs)]:
        p = os.path.join(d, f"in-{name}.npy")
        np.save(p, value)
        args += ["--in", f"{name}={p}"]
    out_paths = [os.path.join(d, f"out-{i}.npy") for i in range(1 + len(case.wrt))]
    for p in out_paths:
        if os.path.exists(p):
            os.remove(p)
        args += ["--out", p]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
        # From the first error on (warnings before it are noise here).
        first = next((i for i, l in enumerate(lines) if "error:" in l), 0)
        msg = " | ".join(lines[first:])
        if (proc.returncode in (1, 2) and "error:" in msg
                and any(r in msg for r in refusals)):
            return f"refused {label}: {msg}"
        return f"FAIL {label}: einc exit {proc.returncode}: {msg}"
    got = [np.load(p) for p in out_paths]
    problems = []
    expected_loss = loss(case.oracle, inputs, rs)
    got_loss = float(got[0])
    if got[0].shape != () or not np.isclose(got_loss, expected_loss, rtol=case.loss_rtol,
                                            atol=case.loss_rtol):
        problems.append(f"loss {got_loss!r} (shape {got[0].shape}), numpy {expected_loss!r}")
    for w, g in zip(case.wrt, got[1:]):
        fd = finite_differences(case, inputs, rs, w)
        if g.shape != fd.shape:
            problems.append(f"d/d{w}: shape {g.shape}, expected {fd.shape}")
            continue
        if g.dtype != np.float64:
            problems.append(f"d/d{w}: dtype {g.dtype}, expected float64")
        scale = max(1.0, float(np.max(np.abs(fd), initial=0.0)))
        err = np.abs(g - fd)
        bound = case.grad_atol * scale + case.grad_rtol * np.abs(fd)
        if not np.all(err <= bound) or not np.all(np.isfinite(g)):
            i = np.unravel_index(np.argmax(np.where(np.isfinite(err), err - bound, np.inf)), g.shape)
            problems.append(f"d/d{w}: max error {np.max(err):.3g} (bound {case.grad_atol * scale:.3g}); "
                            f"at {tuple(int(k) for k in i)} einc {g[i]!r}, finite differences {fd[i]!r}")
    if problems:
        return f"FAIL {label}: " + "; ".join(problems)
    return f"ok {label}"


def sampled(cases, extra):
    """`--sample N [--offset K|rotate]` among the extra arguments: 1 case in
    N from the offset (run_corpus.py's rule: `rotate` moves with every
    commit); the other extra arguments are einc's."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run"))
    import argparse
    import run_corpus as rc
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--sample", type=int, default=1)
    ap.add_argument("--offset", default="0")
    args, rest = ap.parse_known_args(extra)
    return cases[rc.sample_offset(args)::max(1, args.sample)], rest


def main():
    if len(sys.argv) < 3:
        print("usage: grad_fd.py EINC TMPDIR [--sample N [--offset K|rotate]] "
              "[EXTRA EINC ARGS...]", file=sys.stderr)
        return 2
    einc, tmp, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    only = os.environ.get("GRAD_FD_ONLY")
    cases = [(i, c) for i, c in enumerate(CASES) if not only or c.name in only.split(",")]
    cases, extra = sampled(cases, extra)
    os.makedirs(tmp, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        lines = list(pool.map(lambda ic: run(ic[1], einc, tmp, extra, 1000 + ic[0]), cases))
    failures = 0
    for line in lines:
        print(line)
        failures += line.startswith("FAIL")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
