"""ein for Python: einops' functions compiled by ein, on numpy arrays and
torch tensors without copies (docs/python.md)."""

from . import _ein
from ._errors import EinopsError

_ein._set_einops_error(EinopsError)

# einops' functions are the extension's own (lib/Bindings/Python/Ops.cpp):
# no Python frame between the caller and ein.
from ._ein import einsum, pack, rearrange, reduce, repeat, unpack  # noqa: E402

__all__ = ["EinopsError", "rearrange", "reduce", "repeat", "einsum", "pack", "unpack"]
