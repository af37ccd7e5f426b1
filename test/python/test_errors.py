"""ein.EinopsError: einops' exception (and a ValueError), einops' wording
around ein's own diagnostic, and refusals by name of what ein lacks."""
import einops
import numpy as np
import pytest

import ein

x = np.zeros((2, 3, 4), np.float32)


def test_error_is_einops_error_runtime_and_value_error():
    assert issubclass(ein.EinopsError, einops.EinopsError)
    assert issubclass(ein.EinopsError, RuntimeError)
    assert issubclass(ein.EinopsError, ValueError)


def test_message_has_einops_frame_and_ein_caret():
    with pytest.raises(einops.EinopsError) as raised:
        ein.rearrange(x, "a b -> b a", q=2)
    lines = str(raised.value).splitlines()
    assert lines[0] == ' Error while processing rearrange-reduction pattern "a b -> b a".'
    assert lines[1] == " Input tensor shape: (2, 3, 4). Additional info: {'q': 2}."
    assert lines[2].startswith(" error: ")
    # ein's caret under the culprit, in a line that shows the call.
    call = next(i for i, l in enumerate(lines) if 'rearrange(x, "a b -> b a"' in l)
    assert lines[call + 1].strip() == "^"


def test_einops_value_errors_are_einops_errors_too():
    # einops lets numpy raise ValueError for an einsum whose operands
    # disagree on an axis; ein raises its EinopsError, which is a ValueError.
    a, b = np.zeros((2, 3)), np.zeros((4, 5))
    with pytest.raises(ValueError):
        einops.einsum(a, b, "i j, j k -> i k")
    with pytest.raises(ValueError) as raised:
        ein.einsum(a, b, "i j, j k -> i k")
    assert isinstance(raised.value, ein.EinopsError)
    assert 'Error while processing einsum pattern "i j, j k -> i k"' in str(raised.value)
    assert "Input tensor shapes: (2, 3), (4, 5)." in str(raised.value)


def test_callable_reduction_is_refused_by_name():
    with pytest.raises(ein.EinopsError, match="not a callable"):
        ein.reduce(x, "a b c -> a", np.sum)


def test_unknown_reduction():
    with pytest.raises(einops.EinopsError):
        einops.reduce(x, "a b c -> a", "median")
    with pytest.raises(ein.EinopsError, match="unknown reduction 'median'"):
        ein.reduce(x, "a b c -> a", "median")


def test_rearrange_and_repeat_by_reduce():
    np.testing.assert_array_equal(ein.reduce(x, "a b c -> c b a", "rearrange"),
                                  einops.reduce(x, "a b c -> c b a", "rearrange"))
    np.testing.assert_array_equal(ein.reduce(x, "a b c -> a b c r", "repeat", r=2),
                                  einops.reduce(x, "a b c -> a b c r", "repeat", r=2))


def test_non_integer_axis_length():
    with pytest.raises(ein.EinopsError, match="axis length d=1.5 is not an integer"):
        ein.rearrange(x, "a b (c d) -> a b c d", d=1.5)
    # numpy integers are integers.
    assert ein.rearrange(x, "a b (c d) -> a b c d", d=np.int64(2)).shape == (2, 3, 2, 2)


def test_einsum_arguments():
    with pytest.raises(ValueError, match="at minimum two arguments"):
        ein.einsum("i -> i")
    with pytest.raises(ValueError, match="must be a string"):
        ein.einsum(x, x)


def test_pack_and_unpack_errors():
    with pytest.raises(ein.EinopsError, match=r'Error during pack\(\.\.\., "a \*"\)'):
        ein.pack([np.zeros((2, 3)), np.zeros((3, 3))], "a *")
    with pytest.raises(einops.EinopsError):
        einops.unpack(np.zeros((2, 3)), [(2,), (2,)], "a *")
    with pytest.raises(ein.EinopsError, match=r'Error during unpack\(\.\.\., "a \*"\)'):
        ein.unpack(np.zeros((2, 3)), [(2,), (2,)], "a *")
