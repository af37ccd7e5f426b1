"""einops' functions, compiled by ein: drop-ins for einops.rearrange & co.

Each function hands its arguments to ein._ein (lib/Bindings/Python/Ops.cpp),
which views the inputs without copying, runs ein's C++ API and returns an
array of the first input's framework over ein's result. Errors come back as
ein._ein.Error and are raised again here as ein.EinopsError with einops'
wording around ein's diagnostic.
"""

import re

from . import _ein
from ._errors import EinopsError

__all__ = ["rearrange", "reduce", "repeat", "einsum", "pack", "unpack"]

# A name or `...` in a pattern (what a reduction can reduce).
_AXIS = re.compile(r"[^\W\d]|\.\.\.")


def _shape(x):
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else type(x).__name__


def _error(err, head, tensors, axes_lengths=None):
    """ein's diagnostic `err` in einops' frame: what was being processed, the
    input shapes (and keyword lengths), then ein's message and caret."""
    shapes = ", ".join(str(_shape(t)) for t in tensors)
    plural = "s" if len(tensors) > 1 else ""
    info = "" if axes_lengths is None else f" Additional info: {axes_lengths}."
    return EinopsError(f" {head}\n Input tensor shape{plural}: {shapes}.{info}\n {err}")


def _stacked(tensor, what):
    """einops' list of tensors: stacked along a new first axis (a copy, as
    einops makes one), by the list's own framework."""
    if not tensor:
        raise TypeError(f"{what} can't be applied to an empty list")
    first = tensor[0]
    if type(first).__module__.startswith("torch"):
        import torch
        return torch.stack(tensor)
    import numpy
    return numpy.stack(tensor)


def _scalar(result, tensor, pattern=None):
    """numpy's reductions over one axis or more give a numpy scalar where they
    leave no axes, and so does einops on numpy; a reduce whose input side
    has no axis to reduce (`() ->`, `1 ->`) gives the 0-d array."""
    if result.ndim == 0 and tensor.ndim > 0 and type(result).__module__ == "numpy":
        if pattern is None or _AXIS.search(pattern.split("->")[0]):
            return result[()]
    return result


def rearrange(tensor, pattern, **axes_lengths):
    """einops.rearrange: a view of `tensor` when strides can express the
    result (splits, permutations, merges of adjacent axes), else a copy."""
    if isinstance(tensor, list):
        tensor = _stacked(tensor, "Rearrange/Reduce/Repeat")
    try:
        return _ein.rearrange(tensor, pattern, axes_lengths)
    except _ein.Error as err:
        raise _error(err, f'Error while processing rearrange-reduction pattern "{pattern}".',
                     [tensor], axes_lengths) from None


def reduce(tensor, pattern, reduction, **axes_lengths):
    """einops.reduce with reduction 'sum', 'mean', 'max', 'min', 'prod',
    'any' or 'all' (a callable is refused by name); 'rearrange' and 'repeat'
    as einops forwards them."""
    if reduction == "rearrange":
        return rearrange(tensor, pattern, **axes_lengths)
    if reduction == "repeat":
        return repeat(tensor, pattern, **axes_lengths)
    if isinstance(tensor, list):
        tensor = _stacked(tensor, "Rearrange/Reduce/Repeat")
    try:
        return _scalar(_ein.reduce(tensor, pattern, reduction, axes_lengths), tensor, pattern)
    except _ein.Error as err:
        raise _error(err, f'Error while processing {reduction}-reduction pattern "{pattern}".',
                     [tensor], axes_lengths) from None


def repeat(tensor, pattern, **axes_lengths):
    """einops.repeat: always a new tensor."""
    if isinstance(tensor, list):
        tensor = _stacked(tensor, "Rearrange/Reduce/Repeat")
    try:
        return _ein.repeat(tensor, pattern, axes_lengths)
    except _ein.Error as err:
        raise _error(err, f'Error while processing repeat-reduction pattern "{pattern}".',
                     [tensor], axes_lengths) from None


def einsum(*tensors_and_pattern):
    """einops.einsum(x, y, ..., pattern): the pattern last, as einops orders it."""
    if len(tensors_and_pattern) <= 1:
        raise ValueError("`einops.einsum` takes at minimum two arguments: the tensors "
                         "(at least one), followed by the pattern.")
    *tensors, pattern = tensors_and_pattern
    if not isinstance(pattern, str):
        raise ValueError("The last argument passed to `einops.einsum` must be a string,"
                         " representing the einsum pattern.")
    try:
        return _scalar(_ein.einsum(tensors, pattern), tensors[0])
    except _ein.Error as err:
        raise _error(err, f'Error while processing einsum pattern "{pattern}".',
                     tensors) from None


def pack(tensors, pattern):
    """einops.pack: (packed, packed_shapes), the inputs joined along `*`."""
    try:
        return _ein.pack(tensors, pattern)
    except _ein.Error as err:
        raise _error(err, f'Error during pack(..., "{pattern}").', list(tensors)) from None


def unpack(tensor, packed_shapes, pattern):
    """einops.unpack: views of `tensor`, one per packed shape."""
    try:
        return _ein.unpack(tensor, packed_shapes, pattern)
    except _ein.Error as err:
        raise _error(err, f'Error during unpack(..., "{pattern}") into {packed_shapes}.',
                     [tensor]) from None
