"""ein for Python: einops' functions compiled by ein, on numpy arrays and
torch tensors without copies (docs/python.md)."""

from ._errors import EinopsError
from ._einops import einsum, pack, rearrange, reduce, repeat, unpack
from ._module import (CompileError, Function, Module, Report, ShapeError, TrainReport, load,
                      load_source, report, train_report)
from ._autograd import autograd
from ._ein import Error

__all__ = ["EinopsError", "rearrange", "reduce", "repeat", "einsum", "pack", "unpack",
           "Error", "CompileError", "ShapeError", "load", "load_source", "Module", "Function",
           "report", "train_report", "Report", "TrainReport", "autograd"]
