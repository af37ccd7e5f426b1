"""einops' own test patterns through ein.rearrange & co., on numpy and torch.

The cases are test/einops/einops_agreement.py's table (einops' tests and
docs, and variations; imported, not copied). The oracle is einops itself on
the same arrays: where einops returns a result, ein's must be of the same
framework, shape and dtype and equal (exactly for data movement, to float
rounding for sums); where einops raises, ein must raise ein.EinopsError,
which `except einops.EinopsError` catches.
"""
import os
import warnings

import einops
import einops_agreement as corpus
import numpy as np
import pytest

import ein

torch = pytest.importorskip("torch")

CASES = corpus.all_cases()
BACKENDS = ["numpy", "torch"]
# Every case compiles its own kernel on a cold disk cache (about 0.2 s each):
# scripts/test.sh runs every case with --full (EIN_TEST_FULL=1) and else a
# quarter of them that moves with the commit count (EIN_TEST_ROTATE), as
# lit's rotating samples do; the einops-rejected cases (no kernel) always.
FULL = os.environ.get("EIN_TEST_FULL") == "1"
ROTATE = int(os.environ.get("EIN_TEST_ROTATE", "0"))
SAMPLE = [i for i in range(len(CASES)) if FULL or i % 4 == ROTATE % 4
          or not corpus.einops_truth(CASES[i]).accepted]


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


def einops_result(case, xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(einops, case, xs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", SAMPLE, ids=lambda i: f"einops{i:03d}")
def test_case(index, backend):
    case = CASES[index]
    xs = arrays(case, backend, index)
    # einops on numpy decides what is an error: einops on torch accepts a few
    # of them by accident of torch's functions (repeat with c=-1, which
    # torch's expand reads as "keep"; einsum "... a -> a", which torch.einsum
    # sums), and ein refuses those on both.
    try:
        einops_result(case, arrays(case, "numpy", index))
    except Exception:  # einops rejects: so must ein, with an EinopsError
        with pytest.raises(einops.EinopsError) as raised:
            call(ein, case, xs)
        assert isinstance(raised.value, ein.EinopsError)
        assert "Error while processing" in str(raised.value)
        return
    want = einops_result(case, xs)
    got = call(ein, case, xs)
    assert type(got) is type(want) or (backend == "numpy" and np.isscalar(want))
    got, want = as_numpy(got), as_numpy(want)
    assert got.shape == want.shape, case.describe()
    assert got.dtype == want.dtype, case.describe()
    if case.op in ("rearrange", "repeat") or got.dtype == np.bool_:
        np.testing.assert_array_equal(got, want, err_msg=case.describe())
    else:
        # f32 sums in another order: errors scale with the result's magnitude
        # (a 20x20x20 einsum's cancellations leave 1e-6 of its largest value).
        scale = float(np.abs(want).max()) if want.size else 0.0
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * max(1.0, scale),
                                   err_msg=case.describe())
