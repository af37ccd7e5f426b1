"""ein.EinopsError: what ein's einops functions raise, caught as einops' own."""

try:  # `except einops.EinopsError` catches ein's errors when einops is installed
    from einops import EinopsError as _EinopsBase
except ImportError:  # pragma: no cover - einops is optional
    _EinopsBase = RuntimeError


class EinopsError(_EinopsBase, ValueError):
    """A pattern, axis length or input ein refuses.

    A subclass of einops.EinopsError (a RuntimeError) when einops is
    importable, else of RuntimeError; also a ValueError, which is what einops
    lets numpy and torch raise for some of the same mistakes (an einsum whose
    operands disagree on an axis). The message starts as einops' does and
    ends with ein's own diagnostic, the pattern with a caret under the culprit.
    """
