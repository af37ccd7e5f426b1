"""Compiled .ein modules from Python: ein.load, ein.load_source, ein.report.

A module's functions are attributes (``mod.attention``) and items
(``mod["attention"]``). Each takes numpy arrays or torch tensors, viewed without
copies with their strides as they are (CUDA tensors, and any DLPack producer's
CUDA memory, run on the CUDA target), and returns arrays of the first input's
framework over ein's results. A function compiles on its first call
(size-generic: other sizes reuse it) and comes from the Engine's cache after.
Errors are ein's diagnostics, as einc prints them: ``ein.CompileError`` for a
program ein refuses, ``ein.ShapeError`` for inputs or sizes that do not fit.
"""

import json as _json
import math as _math
import os as _os
import re as _re

from . import _ein

__all__ = ["Module", "Function", "Report", "TrainReport", "CompileError", "ShapeError",
           "load", "load_source", "report", "train_report"]

CompileError = _ein.CompileError
ShapeError = _ein.ShapeError


def _sizes(sizes):
    """Keyword sizes as ein's (name, int) pairs, refused by name when not
    integers (a bool is not a size)."""
    out = []
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ShapeError(f"error: size {name}={value!r} is not an integer")
        out.append((name, value))
    return out


def _dtype_in(lib, name):
    """The numpy or torch dtype of ein's dtype `name` ("f32" is float32,
    "bf16" bfloat16), or None when `lib` lacks it."""
    special = {"bool": "bool", "bf16": "bfloat16", "f8e4m3": "float8_e4m3fn",
               "f8e5m2": "float8_e5m2"}
    return getattr(lib, special.get(name) or {"f": "float", "i": "int"}[name[0]] + name[1:],
                   None)


def _requires_grad(x):
    return getattr(x, "requires_grad", False) is True


class Report:
    """The cost report of one function at given sizes, as `einc report`
    computes it: ``str(r)`` is the table, ``r.flops`` and ``r.bytes`` the
    totals (floats: counts may pass 2**63), ``r.json`` the parsed
    ``einc report --json`` (exact counts and their formulas)."""

    def __init__(self, native):
        self.text = native["text"]
        self.flops = native["flops"]
        self.bytes = native["bytes"]
        self.json = _json.loads(native["json"])

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<ein.Report flops={self.flops:g} bytes={self.bytes:g}>"


class TrainReport:
    """The training account of a step, as `einc report --train` computes it.

    FLOPs: ``forward_flops``, ``backward_flops``, ``recompute_flops``,
    ``optimizer_flops``, ``total_flops``. Bytes: ``parameter_bytes``,
    ``gradient_bytes``, ``optimizer_state_bytes``, ``activation_bytes``,
    ``peak_bytes``. The ideal (roofline) seconds per phase on the device and
    its ``peak_flops``; ``mfu(seconds)`` of a measured step and
    ``mfu_bound``. NaN where a size is not bound. ``str(r)`` is einc's text,
    ``r.json`` the parsed ``--json`` (``{"report": ..., "train": ...}``).
    """

    _FIELDS = ("forward_flops", "backward_flops", "recompute_flops", "optimizer_flops",
               "total_flops", "parameter_bytes", "gradient_bytes", "optimizer_state_bytes",
               "activation_bytes", "peak_bytes", "forward_seconds", "backward_seconds",
               "optimizer_seconds", "peak_flops")

    def __init__(self, native):
        self.text = native["text"]
        self.json = _json.loads(native["json"])
        for name in self._FIELDS:
            setattr(self, name, native[name])

    @property
    def step_seconds(self):
        """The ideal step time: forward, backward and optimizer."""
        return self.forward_seconds + self.backward_seconds + self.optimizer_seconds

    def mfu(self, seconds):
        """The model FLOPs utilisation of a step that took `seconds`:
        total_flops / seconds / peak_flops."""
        if not seconds > 0:
            raise ValueError(f"mfu: seconds must be > 0, got {seconds!r}")
        return self.total_flops / seconds / self.peak_flops

    @property
    def mfu_bound(self):
        """The MFU at the ideal step time: what a measured step can reach."""
        step = self.step_seconds
        return self.total_flops / step / self.peak_flops if step > 0 else _math.nan

    def __str__(self):
        return self.text

    def __repr__(self):
        return (f"<ein.TrainReport total_flops={self.total_flops:g} "
                f"peak_bytes={self.peak_bytes:g}>")


class Function:
    """One function of a module: call it on arrays or tensors."""

    def __init__(self, module, name):
        self._module = module
        self.__name__ = name
        self._signature = None

    @property
    def module(self):
        return self._module

    @property
    def signature(self):
        """Its parameters and results: {"params": [{"name", "dtype",
        "shape"}], "results": [... with "gradient_of" (the index of the
        parameter it is the gradient of, or -1) and "is_loss"]}."""
        if self._signature is None:
            self._signature = self._module._native.signature(self.__name__)
        return self._signature

    def __call__(self, *args):
        try:
            results = self._module._native.call(self.__name__, args)
        except (CompileError, ShapeError):
            raise
        except _ein.Error as e:
            numbers = self._numbers(args)
            if numbers is None:
                self._refuse(args, str(e))  # a module's wording for the inputs' refusals
                raise
            results = self._module._native.call(self.__name__, numbers)
        return results[0] if len(results) == 1 else results

    def _numbers(self, args):
        """`args` with each Python number for a rank-0 parameter made a 0-d
        array of the parameter's dtype, in the framework of the first array
        among them (numpy when none is torch); None when there is none."""
        params = self.signature["params"]
        spots = [i for i, x in enumerate(args)
                 if isinstance(x, (bool, int, float)) and i < len(params)
                 and params[i]["shape"] == ""]
        if not spots:
            return None
        first = next((x for x in args if hasattr(x, "shape")), None)
        torch_first = type(first).__module__.startswith("torch")
        if torch_first:
            import torch as lib
            # On the first tensor's device: a call's inputs share one.
            make = lambda v, dtype: lib.tensor(v, dtype=dtype, device=first.device)  # noqa: E731
        else:
            import numpy as lib
            make = lib.array
        out = list(args)
        for i in spots:
            dtype = _dtype_in(lib, params[i]["dtype"])
            if dtype is None:
                return None  # numpy has no bf16 or fp8: refused as it is
            if params[i]["dtype"][0] in "ib" and isinstance(args[i], float):
                raise ShapeError(f"error: {self._where(i)} is {args[i]!r}, the parameter is "
                                 f"{params[i]['dtype']}: pass an integer") from None
            out[i] = make(args[i], dtype=dtype)
        return tuple(out)

    def _refuse(self, args, message):
        """Raises, for an input the call refused, what to do about it here
        (one that requires grad while autograd records), or the refusal's
        `message` with the input named by its parameter."""
        for i, x in enumerate(args):
            if _requires_grad(x):
                raise _ein.Error(
                    f"{self._where(i)} requires grad: a compiled function does not record "
                    f"gradients; wrap a function with grad() with ein.autograd(mod, "
                    f"\"{self.__name__}\"), call it under torch.no_grad(), or pass "
                    f"x.detach()") from None
        lead = _re.match(r"input (\d+)(?= |'s |: )", message)
        if lead and int(lead[1]) < len(args):
            raise _ein.Error(self._where(int(lead[1])) + message[lead.end():]) from None

    def _where(self, i):
        """Input `i` named by its parameter, for messages."""
        params = self.signature["params"]
        name = params[i]["name"] if i < len(params) else str(i)
        return f"input {i} ('{name}') of '{self.__name__}'"

    def report(self, /, **sizes):
        """The cost report at `sizes` (as `einc report --fn F --dim ...`)."""
        return self._module.report(self.__name__, **sizes)

    def train_report(self, **kwargs):
        """The training account (Module.train_report)."""
        return self._module.train_report(self.__name__, **kwargs)

    def __repr__(self):
        sig = self.signature

        def value(v):
            return f'{v["dtype"]}["{v["shape"]}"]'
        params = ", ".join(f'{p["name"]}: {value(p)}' for p in sig["params"])
        results = ", ".join(value(r) for r in sig["results"])
        if len(sig["results"]) != 1:
            results = f"({results})"
        return f"<ein function {self.__name__}({params}) -> {results}>"


class Module:
    """A checked .ein module (ein.load, ein.load_source)."""

    def __init__(self, native, path, source=None, dims=()):
        self._native = native
        self.path = path
        self._source = source  # the text, when not read from `path`
        self._file = _os.path.abspath(path)
        self._dims = list(dims)
        self._functions = {}
        self._gradients = {}

    def _gradient(self, function, wrt):
        """The Function `(loss, gradients of wrt..., other results...)` of
        `function`, written as .ein beside its source: a function calling it
        and grad(its first result, wrt=wrt), checked and compiled as any."""
        key = (function, tuple(wrt))
        if key in self._gradients:
            return self._gradients[key]
        sig = self[function].signature
        params = {p["name"]: p for p in sig["params"]}
        where = f"ein.autograd('{function}', wrt={list(wrt)})"
        for name in wrt:
            if name not in params:
                raise ShapeError(f"error: {where}: '{name}' is not a parameter of '{function}' "
                                 f"(its parameters: {', '.join(params)})")
            if not params[name]["dtype"].startswith(("f", "bf")):
                raise ShapeError(f"error: {where}: '{name}' is {params[name]['dtype']}: only "
                                 f"float tensors have gradients")
        if len(set(wrt)) != len(wrt) or not wrt:
            raise ShapeError(f"error: {where}: name each parameter once, at least one")
        results = sig["results"]
        loss = results[0] if results else None
        if loss is None or loss["shape"] != "" or not loss["dtype"].startswith(("f", "bf")):
            raise ShapeError(f"error: {where}: the first result of '{function}' must be the "
                             f"loss, a scalar float")

        def typed(v):
            return f'{v["dtype"]}["{v["shape"]}"]'
        name = f"{function}_grad_{'_'.join(wrt)}"
        while name in self.functions:
            name += "_"
        outs = [f"out{i}_" for i in range(len(results))]
        grads = [f"d{i}_" for i in range(len(wrt))]
        types = [typed(loss)] + [typed(params[w]) for w in wrt] + [typed(r) for r in results[1:]]
        text = (f"\n\n# ein.autograd: the gradient of {function} (python/ein/_autograd.py)\n"
                f"def {name}({', '.join(f'{p}: {typed(v)}' for p, v in params.items())})"
                f" -> ({', '.join(types)}):\n"
                f"    {', '.join(outs)} = {function}({', '.join(params)})\n"
                f"    {', '.join(grads)} = grad({outs[0]}, wrt="
                f"{wrt[0] if len(wrt) == 1 else '[' + ', '.join(wrt) + ']'})\n"
                f"    return {', '.join([outs[0]] + grads + outs[1:])}\n")
        if self._source is None:  # read as ein read it (the path made absolute at load)
            with open(self._file, encoding="utf-8") as f:
                self._source = f.read()
        derived = Module(_ein.Module.from_source(self._source + text, self.path, self._dims),
                         self.path, self._source + text, self._dims)
        self._gradients[key] = derived[name]
        return derived[name]

    @property
    def functions(self):
        """The function names, in source order."""
        return list(self._native.functions())

    def __getitem__(self, name):
        if name not in self._functions:
            self._native.signature(name)  # ein's "no function" error, with its suggestion
            self._functions[name] = Function(self, name)
        return self._functions[name]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except ShapeError as err:
            raise AttributeError(str(err)) from None
        except CompileError as err:
            raise AttributeError(str(err)) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.functions))

    def __iter__(self):
        return iter(self.functions)

    def report(self, function, /, **sizes):
        """The cost report of `function` with `sizes` bound (as `einc report
        --fn F --dim NAME=N`): a Report."""
        return Report(self._native.report(function, _sizes(sizes)))

    def train_report(self, function, /, *, params=(), optimizer="sgd", param_dtype=None,
                     act_dtype=None, tokens=None, device=None, **sizes):
        """The training account of `function` with `sizes` bound, as `einc
        report --train`: a step with grad(), or a loss function whose
        parameters `params` names (its first result is the loss). The
        options are einc's flags: optimizer (sgd, momentum, adagrad, rmsprop,
        adam, adamw), param_dtype, act_dtype ("bf16"...), tokens (N of the
        6·N·P rule: a count or a formula, "b*s"), device (a100, h100, h200)."""
        if isinstance(params, str):
            params = [p for p in params.split(",") if p]
        return TrainReport(self._native.train_report(
            function, _sizes(sizes), list(params), optimizer, param_dtype or "",
            act_dtype or "", "" if tokens is None else str(tokens), device or ""))

    def __repr__(self):
        return f"<ein module {self.path!r}: {', '.join(self.functions)}>"


def load(path, **dims):
    """Loads and checks the .ein file at `path`, `dims` bound as `einc
    --dim NAME=N`; raises CompileError with the file's diagnostics."""
    path = _os.fspath(path)
    dims = _sizes(dims)
    return Module(_ein.Module.load(path, dims), path, dims=dims)


def load_source(text, path="<source>", **dims):
    """Checks .ein source `text` as if read from `path` (named in
    diagnostics)."""
    dims = _sizes(dims)
    return Module(_ein.Module.from_source(text, path, dims), path, text, dims)


def _function(module, function):
    if isinstance(module, Function):
        if function is not None:
            raise TypeError("ein.report(mod.f, ...) takes no function name")
        return module.module, module.__name__
    if not isinstance(module, Module) or not isinstance(function, str):
        raise TypeError("ein.report(module, 'function', **sizes) or ein.report(module.function)")
    return module, function


def report(module, function=None, /, **sizes):
    """The cost report of a function with `sizes` bound, as `einc report`:
    ``ein.report(mod, "f", b=8)`` or ``ein.report(mod.f, b=8)``."""
    module, function = _function(module, function)
    return module.report(function, **sizes)


def train_report(module, function=None, /, **kwargs):
    """The training account, as `einc report --train` (Module.train_report):
    ``ein.train_report(mod, "step", b=8)`` or ``ein.train_report(mod.step)``."""
    module, function = _function(module, function)
    return module.train_report(function, **kwargs)
