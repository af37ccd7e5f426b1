"""einops' own test patterns through ein.rearrange & co., on numpy and torch.

The cases are test/einops/einops_agreement.py's table (einops' tests and
docs, and variations; imported, not copied). The oracle is einops itself on
the same arrays: where einops returns a result, ein's must be of the same
framework, shape and dtype and equal (exactly for data movement, to float
rounding for sums); where einops raises, ein must raise ein.EinopsError,
which `except einops.EinopsError` catches.
"""
import warnings

import einops
import einops_agreement as corpus
import numpy as np
import pytest

import ein

torch = pytest.importorskip("torch")

CASES = corpus.all_cases()
BACKENDS = ["numpy", "torch"]


def arrays(case, backend, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape in case.shapes:
        if case.reduction in corpus.LOGICAL:
            a = rng.random(shape) < 0.5
        else:
            a = rng.standard_normal(shape).astype(np.float32)
        out.append(torch.from_numpy(a) if backend == "torch" else a)
    return out


def call(lib, case, xs):
    sizes = dict(case.sizes)
    if case.op == "rearrange":
        return lib.rearrange(xs[0], case.pattern, **sizes)
    if case.op == "reduce":
        return lib.reduce(xs[0], case.pattern, case.reduction, **sizes)
    if case.op == "repeat":
        return lib.repeat(xs[0], case.pattern, **sizes)
    return lib.einsum(*xs, case.pattern)


def as_numpy(x):
    return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", range(len(CASES)), ids=lambda i: f"einops{i:03d}")
def test_case(index, backend):
    case = CASES[index]
    xs = arrays(case, backend, index)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = call(einops, case, xs)
    except Exception:  # einops rejects: so must ein, with an EinopsError
        with pytest.raises(einops.EinopsError) as raised:
            call(ein, case, xs)
        assert isinstance(raised.value, ein.EinopsError)
        assert "Error while processing" in str(raised.value)
        return
    got = call(ein, case, xs)
    assert type(got) is type(want) or (backend == "numpy" and np.isscalar(want))
    got, want = as_numpy(got), as_numpy(want)
    assert got.shape == want.shape, case.describe()
    assert got.dtype == want.dtype, case.describe()
    if case.op in ("rearrange", "repeat") or got.dtype == np.bool_:
        np.testing.assert_array_equal(got, want, err_msg=case.describe())
    else:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=case.describe())
