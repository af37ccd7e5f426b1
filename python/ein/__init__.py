"""ein for Python: einops' functions compiled by ein, on numpy arrays and
torch tensors without copies, and compiled .ein modules (docs/python.md)."""

from . import _ein
from ._errors import EinopsError

_ein._set_einops_error(EinopsError)

# einops' functions are the extension's own (lib/Bindings/Python/Ops.cpp):
# no Python frame between the caller and ein.
from ._ein import einsum, pack, rearrange, reduce, repeat, unpack  # noqa: E402
from ._ein import Error  # noqa: E402
from ._module import (CompileError, Function, Module, Report, ShapeError,  # noqa: E402
                      TrainReport, load, load_source, report, train_report)
from ._autograd import autograd  # noqa: E402
from ._check import Check, check  # noqa: E402

__all__ = ["EinopsError", "rearrange", "reduce", "repeat", "einsum", "pack", "unpack",
           "Error", "CompileError", "ShapeError", "load", "load_source", "Module", "Function",
           "report", "train_report", "Report", "TrainReport", "autograd",
           "check", "Check"]
