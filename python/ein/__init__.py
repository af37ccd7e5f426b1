"""ein for Python: einops' functions compiled by ein, on numpy arrays and
torch tensors without copies (docs/python.md)."""

from ._errors import EinopsError
from ._einops import einsum, pack, rearrange, reduce, repeat, unpack

__all__ = ["EinopsError", "rearrange", "reduce", "repeat", "einsum", "pack", "unpack"]
