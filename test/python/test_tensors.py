"""Tensors in and out of ein's einops functions: no copies, the strides as
they are, results kept alive, every dtype both sides have, refusals by name.

The oracle is einops on the same arrays (values), and numpy's and torch's
own pointers (np.shares_memory, data_ptr) for what was copied.
"""
import gc
import weakref

import einops
import numpy as np
import pytest

import ein

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_numpy_view_shares_memory():
    x = randn(2, 5, 12)
    y = ein.rearrange(x, "b s (h d) -> b h s d", h=3)
    assert np.shares_memory(x, y)
    np.testing.assert_array_equal(y, einops.rearrange(x, "b s (h d) -> b h s d", h=3))
    y[0, 0, 0, 0] = 42.0  # a view writes through, as numpy's own views do
    assert x[0, 0, 0] == 42.0


def test_torch_view_data_ptr():
    x = torch.from_numpy(randn(2, 5, 12))
    y = ein.rearrange(x, "b s (h d) -> b h s d", h=3)
    assert isinstance(y, torch.Tensor)
    assert y.data_ptr() == x.data_ptr()
    assert y.stride() == einops.rearrange(x, "b s (h d) -> b h s d", h=3).stride()


def test_torch_view_of_an_offset_slice():
    # A slice starts inside its storage: the view keeps that offset.
    base = torch.from_numpy(randn(3, 4, 12))
    x = base[1:, :, 2:8]
    y = ein.rearrange(x, "b s (h d) -> b h s d", h=2)
    want = einops.rearrange(x, "b s (h d) -> b h s d", h=2)
    assert y.data_ptr() == x.data_ptr()
    assert y.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert (y.stride(), y.storage_offset()) == (want.stride(), want.storage_offset())
    assert torch.equal(y, want)


def test_kernel_receives_the_input_pointers():
    # A transposed numpy view and a torch tensor go to the einsum kernel as
    # they are: the pointers ein's views hold are the inputs' own.
    a = randn(33, 17).T
    b = torch.from_numpy(randn(33, 9))
    out = ein.einsum(a, b.numpy(), "m k, k n -> m n")
    assert ein._ein._last_input_pointers() == [a.ctypes.data, b.data_ptr()]
    np.testing.assert_allclose(out, a @ b.numpy(), rtol=1e-5, atol=1e-5)
    tb = ein.einsum(b, torch.from_numpy(randn(9, 4)), "k n, n m -> k m")
    assert isinstance(tb, torch.Tensor)
    assert ein._ein._last_input_pointers()[0] == b.data_ptr()


def test_copy_result_is_new_memory():
    x = randn(2, 3, 4)
    y = ein.rearrange(x, "a b c -> (c a) b")  # no strides express it
    assert not np.shares_memory(x, y)
    np.testing.assert_array_equal(y, einops.rearrange(x, "a b c -> (c a) b"))


@pytest.mark.parametrize("make", [np.ascontiguousarray, torch.from_numpy])
def test_view_keeps_its_input_alive(make):
    x = make(randn(4, 6))
    want = np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x).T.copy()
    alive = weakref.ref(x)
    y = ein.rearrange(x, "a b -> b a")
    del x
    gc.collect()
    assert alive() is not None  # the result holds its input
    np.testing.assert_array_equal(y.numpy() if isinstance(y, torch.Tensor) else y, want)
    del y
    gc.collect()
    assert alive() is None  # and lets it go with itself


def test_result_outlives_ein_call():
    # A result over ein's own memory (a kernel's output) stays valid alone.
    y = ein.reduce(randn(3, 8), "a b -> b", "sum")
    z = y.copy()
    gc.collect()
    np.testing.assert_array_equal(y, z)


NUMPY_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.bool_]
TORCH_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
                torch.int32, torch.int8, torch.bool]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_dtypes(dtype):
    x = (rng.standard_normal((3, 4, 2)) * 4).astype(dtype)
    for pattern in ["a b c -> c a b", "a b c -> (c a) b"]:
        got = ein.rearrange(x, pattern)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, einops.rearrange(x, pattern))
    got = ein.repeat(x, "a b c -> a b c r", r=2)
    np.testing.assert_array_equal(got, einops.repeat(x, "a b c -> a b c r", r=2))
    how = "any" if dtype == np.bool_ else "max"
    np.testing.assert_array_equal(ein.reduce(x, "a b c -> c a", how),
                                  einops.reduce(x, "a b c -> c a", how))


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_torch_dtypes(dtype):
    x = (torch.randn(3, 4, 2, generator=torch.Generator().manual_seed(1)) * 4).to(dtype)
    for pattern in ["a b c -> c a b", "a b c -> (c a) b"]:
        got = ein.rearrange(x, pattern)
        assert got.dtype == x.dtype
        assert torch.equal(got, einops.rearrange(x, pattern))
    assert torch.equal(ein.repeat(x, "a b c -> a b c r", r=2),
                       einops.repeat(x, "a b c -> a b c r", r=2))
    how = "any" if dtype == torch.bool else "max"
    assert torch.equal(ein.reduce(x, "a b c -> c a", how), einops.reduce(x, "a b c -> c a", how))


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_torch_fp8(dtype):
    x = torch.randn(3, 4).to(getattr(torch, dtype))
    got = ein.rearrange(x, "a b -> b a")
    assert got.dtype == x.dtype
    assert torch.equal(got.float(), x.float().T)


@pytest.mark.parametrize("bad", [
    lambda: np.zeros((2, 3), np.uint8), lambda: np.zeros((2, 3), np.int16),
    lambda: np.zeros((2, 3), np.complex64), lambda: torch.zeros(2, 3, dtype=torch.uint8),
    lambda: torch.zeros(2, 3, dtype=torch.complex64)], ids=["u8", "i16", "c64", "torch-u8", "torch-c64"])
def test_dtype_ein_lacks_is_refused_by_name(bad):
    x = bad()
    with pytest.raises(ein.EinopsError, match=f"input 0 has dtype {x.dtype}, which ein lacks"):
        ein.rearrange(x, "a b -> b a")


def test_non_array_is_refused():
    with pytest.raises(ein.EinopsError, match="input 0 is a str, not an array"):
        ein.rearrange("ab", "a -> a")


def test_meta_tensor_is_refused():
    with pytest.raises(ein.EinopsError, match="input 0 is on meta: ein takes CPU and CUDA tensors"):
        ein.rearrange(torch.zeros(2, 3, device="meta"), "a b -> b a")


def test_sparse_tensor_is_refused():
    with pytest.raises(ein.EinopsError, match="input 0 has layout torch.sparse_coo"):
        ein.rearrange(torch.zeros(2, 3).to_sparse(), "a b -> b a")


def test_requires_grad_is_refused_unless_no_grad():
    w = torch.zeros(2, 3, requires_grad=True)
    with pytest.raises(ein.EinopsError, match="input 0 requires grad"):
        ein.rearrange(w, "a b -> b a")
    with torch.no_grad():
        assert ein.rearrange(w, "a b -> b a").shape == (3, 2)
    assert ein.rearrange(w.detach(), "a b -> b a").shape == (3, 2)


def test_negative_strides_are_copied():
    # ein's tensors have strides >= 0: numpy's x[::-1] is the one input that
    # is copied (docs/python.md); the result is still right.
    x = randn(4, 5)[::-1, ::2]
    got = ein.rearrange(x, "a b -> b a")
    np.testing.assert_array_equal(got, einops.rearrange(x, "a b -> b a"))
    assert ein._ein._last_input_pointers() != [x.ctypes.data]
    np.testing.assert_allclose(ein.reduce(x, "a b -> a", "sum"), x.sum(axis=1), rtol=1e-6)


def test_zero_strides_and_read_only_views():
    row = randn(3)
    b = np.broadcast_to(row, (4, 3))  # stride 0, read-only
    got = ein.rearrange(b, "a b -> b a")
    assert got.strides == (4, 0)  # a view, no copy
    assert not got.flags.writeable  # as numpy's view of a read-only array
    np.testing.assert_array_equal(got, b.T)
    np.testing.assert_array_equal(ein.reduce(b, "a b -> b", "sum"), b.sum(axis=0))


def test_list_of_arrays_is_stacked_as_einops_does():
    xs = [randn(3, 4) for _ in range(5)]
    for lib_xs in (xs, [torch.from_numpy(x) for x in xs]):
        got = ein.rearrange(lib_xs, "n h w -> h (n w)")
        want = einops.rearrange(lib_xs, "n h w -> h (n w)")
        assert type(got) is type(want)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_allclose(ein.reduce(xs, "n h w -> h w", "mean"),
                               einops.reduce(xs, "n h w -> h w", "mean"), rtol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_pack_unpack(backend):
    wrap = torch.from_numpy if backend == "torch" else (lambda a: a)
    img, cls = wrap(randn(2, 3, 4, 5)), wrap(randn(2, 5))
    packed, ps = ein.pack([img, cls], "b * c")
    want, want_ps = einops.pack([img, cls], "b * c")
    assert ps == want_ps
    assert type(packed) is type(want)
    np.testing.assert_array_equal(np.asarray(packed), np.asarray(want))
    parts = ein.unpack(packed, ps, "b * c")
    for got, orig in zip(parts, [img, cls]):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(orig))
        if backend == "numpy":
            assert np.shares_memory(got, packed)  # views of the packed tensor
        else:
            assert packed.data_ptr() <= got.data_ptr() < packed.data_ptr() + packed.nbytes


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_einsum_underscore_is_a_name(backend):
    # einops' einsum takes `_` as an axis name; ein's API once made each `_`
    # a new anonymous axis and died with an internal error.
    x = randn(2, 3)
    x = torch.from_numpy(x) if backend == "torch" else x
    got = ein.einsum(x, "_ b -> b _")
    np.testing.assert_array_equal(np.asarray(got), np.asarray(einops.einsum(x, "_ b -> b _")))


def test_threads():
    # The GIL is released while ein runs: calls from several threads at once
    # each get their own right answer.
    from concurrent.futures import ThreadPoolExecutor

    def work(seed):
        r = np.random.default_rng(seed)
        a = r.standard_normal((8, 16)).astype(np.float32)
        b = r.standard_normal((16, 4)).astype(np.float32)
        for _ in range(20):
            np.testing.assert_allclose(ein.einsum(a, b, "m k, k n -> m n"), a @ b,
                                       rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(ein.rearrange(a, "m (k j) -> j m k", j=2),
                                          einops.rearrange(a, "m (k j) -> j m k", j=2))
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))
