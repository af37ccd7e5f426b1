"""ein.load: compiled .ein functions called on numpy arrays and torch tensors.

Oracles: numpy and torch computing the same thing; `einc report --json` for
the cost report (and a matmul's 2mnk counted by hand); the inputs' own data
pointers for zero-copy; ein's diagnostics for the errors.
"""
import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import ein

torch = pytest.importorskip("torch")

INPUTS = pathlib.Path(__file__).resolve().parent / "Inputs"
LINEAR = INPUTS / "linear.ein"


@pytest.fixture(scope="module")
def mod():
    return ein.load(LINEAR)


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def einc():
    """The einc beside the package's build (build/bin), or on PATH."""
    package = pathlib.Path(ein.__file__).parent          # build/python/ein
    source = pathlib.Path(__file__).resolve().parents[2]  # the repository
    for candidate in (package.parents[1] / "bin" / "einc", source / "build" / "bin" / "einc"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("einc")
    if not found:
        pytest.skip("einc is not built beside the package")
    return found


# --- calls -----------------------------------------------------------------

def test_functions_are_attributes_and_items(mod):
    assert mod.functions == ["matmul", "two", "scale64", "loss", "step"]
    assert mod.matmul is mod["matmul"]
    assert "matmul" in dir(mod)
    assert repr(mod.matmul) == '<ein function matmul(a: f32["m k"], b: f32["k n"]) -> f32["m n"]>'


def test_numpy_matches_numpy(mod):
    a, b = rand(5, 7, seed=1), rand(7, 3, seed=2)
    c = mod.matmul(a, b)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (5, 3)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    # Two results come back as a tuple.
    c2, s = mod.two(a, b)
    np.testing.assert_allclose(c2, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, (a @ b).sum(0), rtol=1e-5, atol=1e-5)
    # f64 and a 0-d input.
    x = rand(4, dtype=np.float64)
    np.testing.assert_array_equal(mod.scale64(x, np.float64(2.5) * np.ones(())), x * 2.5)


def test_python_numbers_for_scalar_parameters(mod):
    # A number for a rank-0 parameter is a 0-d array of its dtype, in the
    # framework of the other inputs.
    x = rand(4, dtype=np.float64)
    np.testing.assert_array_equal(mod.scale64(x, 2.5), x * 2.5)
    xt = torch.from_numpy(x)
    y = mod.scale64(xt, 3)
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, xt * 3)
    with pytest.raises(ein.Error, match="input 0"):
        mod.scale64(1.0, 2.0)  # x is not a scalar parameter
    m = ein.load_source('def f(x: f32["n"], k: i64[""]) -> f32["n"]:\n'
                        '    return x * astype(k, f32)\n')
    np.testing.assert_array_equal(m.f(np.ones(3, np.float32), 4), np.full(3, 4.0, np.float32))
    with pytest.raises(ein.ShapeError, match="is 4.5, the parameter is i64: pass an integer"):
        m.f(np.ones(3, np.float32), 4.5)


def test_torch_matches_torch(mod):
    a, b = torch.randn(6, 4), torch.randn(4, 9)
    c = mod.matmul(a, b)
    assert isinstance(c, torch.Tensor) and c.dtype == torch.float32 and c.shape == (6, 9)
    torch.testing.assert_close(c, a @ b)


def test_strided_inputs_as_they_are(mod):
    # A transposed torch view and a numpy slice with steps: no copy, right answers.
    a = torch.randn(7, 5).t()          # 5x7, strides (1, 5)
    b = rand(14, 6, seed=3)[::2]       # 7x6, row stride 2 rows
    assert not a.is_contiguous() and not b.flags.c_contiguous
    c = mod.matmul(a.numpy(), b)
    np.testing.assert_allclose(c, a.numpy() @ b, rtol=1e-5, atol=1e-5)
    ct = mod.matmul(a, torch.from_numpy(b))
    torch.testing.assert_close(ct, a @ torch.from_numpy(b))


def test_inputs_reach_ein_without_copies(mod):
    a = torch.randn(8, 4).t()
    b = rand(16, 3, seed=4)[::2]
    mod.matmul(a, torch.from_numpy(b))
    assert ein._ein._last_input_pointers() == [a.data_ptr(), b.ctypes.data]
    an = a.numpy()
    mod.matmul(an, b)
    assert ein._ein._last_input_pointers() == [an.ctypes.data, b.ctypes.data]


def test_results_are_ein_memory_not_copies(mod):
    # Each result is a fresh array over ein's own buffer: writable, owned by
    # a capsule, and the torch result shares it (no copy on the way out).
    a, b = rand(3, 4), rand(4, 2)
    c = mod.matmul(a, b)
    assert c.flags.writeable and c.base is not None
    d = mod.matmul(a, b)
    assert not np.shares_memory(c, d)
    t = mod.matmul(torch.from_numpy(a), torch.from_numpy(b))
    assert t.untyped_storage().data_ptr() == t.data_ptr()


def test_compiles_once_size_generic(mod):
    # One compilation (or disk-cache load) serves every size: the first
    # call's; the Engine's cache serves the rest.
    m = ein.load_source(LINEAR.read_text(), path="again.ein")

    def made():
        stats = ein._ein.cache_stats()
        return stats["compiled"] + stats["loaded"]
    before = made()
    for n in (3, 4, 11, 3):
        c = m.matmul(rand(n, 5), rand(5, 2))
        assert c.shape == (n, 2)
    assert made() - before == 1


# --- errors ----------------------------------------------------------------

def test_compile_error_is_the_diagnostic():
    with pytest.raises(ein.CompileError) as err:
        ein.load(INPUTS / "bad.ein")
    text = str(err.value)
    assert "bad.ein:3:" in text and "appears only on the left side" in text
    assert 'return rearrange(x, "a b -> a c")' in text and "^" in text
    assert isinstance(err.value, ein.Error)


def test_load_source_names_its_path():
    with pytest.raises(ein.CompileError, match=r"mine\.ein:2:26: error: axis .a. appears only"):
        ein.load_source('def f(x: f32["a"]) -> f32["a"]:\n    return rearrange(x, "a -> b")\n',
                        path="mine.ein")


def test_wrong_inputs_raise_eins_message(mod):
    with pytest.raises(ein.ShapeError) as err:
        mod.matmul(rand(2, 3))
    assert "matmul" in str(err.value)
    with pytest.raises(ein.ShapeError) as err:
        mod.matmul(rand(2, 3), rand(4, 5))
    assert "k" in str(err.value)
    assert isinstance(err.value, ValueError)
    with pytest.raises(ein.ShapeError, match="is f64, the parameter is f32"):
        mod.matmul(rand(2, 3, dtype=np.float64), rand(3, 5, dtype=np.float64))


def test_unknown_function(mod):
    with pytest.raises(AttributeError, match="matmul"):
        mod.matmull
    with pytest.raises(ein.Error, match="matmul"):
        mod["matmull"]


def test_tracked_tensor_is_refused_by_name(mod):
    w = torch.randn(4, 2, requires_grad=True)
    with pytest.raises(ein.Error, match=r"requires grad.*ein\.autograd"):
        mod.matmul(torch.randn(3, 4), w)
    with torch.no_grad():
        torch.testing.assert_close(mod.matmul(torch.ones(3, 4), w), torch.ones(3, 4) @ w)


def test_bad_sizes():
    with pytest.raises(ein.ShapeError, match="not an integer"):
        ein.load(LINEAR, m=2.5)
    with pytest.raises(ein.ShapeError, match=">= 0"):
        ein.load(LINEAR, m=-1)


# --- the cost report -------------------------------------------------------

def test_report_counts_a_matmul_by_hand(mod):
    r = ein.report(mod, "matmul", m=64, k=32, n=16)
    assert r.flops == 2 * 64 * 32 * 16
    assert r.bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert "einsum" in str(r)
    fn = r.json["functions"][0]
    assert fn["name"] == "matmul" and fn["total_flops"] == r.flops
    assert mod.matmul.report(m=2, k=3, n=4).flops == 48
    assert ein.report(mod.matmul, m=2, k=3, n=4).flops == 48
    # A dim may be called `function` or `module`: sizes are keywords only.
    m2 = ein.load_source('def f(x: f32["function module"]) -> f32["module"]:\n'
                         '    return reduce(x, "a b -> b", "sum")\n')
    assert ein.report(m2, "f", function=3, module=5).flops == 10


def test_report_equals_eincs_json(mod):
    sizes = dict(b=8, d=16, k=4)
    r = mod.report("step", **sizes)
    out = subprocess.run(
        [einc(), "report", str(LINEAR), "--fn", "step", "--json"]
        + [f"--dim={k}={v}" for k, v in sizes.items()],
        check=True, capture_output=True, text=True).stdout
    theirs = json.loads(out)["functions"][0]
    ours = r.json["functions"][0]
    assert ours["total_flops"] == theirs["total_flops"] == r.flops
    assert ours["total_bytes"] == theirs["total_bytes"] == r.bytes
    assert [o["flops"] for o in ours["ops"]] == [o["flops"] for o in theirs["ops"]]


def test_report_errors(mod):
    with pytest.raises(ein.Error, match="matmul"):
        mod.report("matmull")
    with pytest.raises(ein.ShapeError, match=">= 0"):
        mod.report("matmul", m=-2)


# --- the training account --------------------------------------------------

def test_train_report_by_hand_and_against_einc(mod):
    sizes = dict(b=8, d=16, k=4)
    t = mod.train_report("step", optimizer="adamw", **sizes)
    params = 16 * 4
    assert t.parameter_bytes == t.gradient_bytes == 4 * params
    assert t.optimizer_state_bytes == 2 * 4 * params      # adamw: 2 states
    assert t.optimizer_flops == 14 * params               # docs/autodiff.md's table
    assert t.total_flops == (t.forward_flops + t.backward_flops
                             + t.recompute_flops + t.optimizer_flops)
    # The forward's matmul 2·b·d·k and its weight gradient as much again.
    assert t.forward_flops >= 2 * 8 * 16 * 4 and t.backward_flops >= 2 * 8 * 16 * 4
    assert t.mfu(1e-6) == pytest.approx(t.total_flops / 1e-6 / t.peak_flops)
    assert 0 < t.mfu_bound <= 1
    assert "optimizer states" in str(t)
    out = subprocess.run(
        [einc(), "report", str(LINEAR), "--fn", "step", "--train", "--optimizer",
         "adamw", "--json"] + [f"--dim={k}={v}" for k, v in sizes.items()],
        check=True, capture_output=True, text=True).stdout
    theirs = json.loads(out)["train"]
    assert t.json["train"]["total"] == theirs["total"]
    assert t.json["train"]["memory"] == theirs["memory"]
    assert theirs["total"]["value"] == t.total_flops
    assert theirs["peak_bytes"] == t.peak_bytes


def test_train_report_of_a_loss_by_params(mod):
    step = mod.train_report("step", b=8, d=16, k=4)
    loss = mod.train_report("loss", params="w", b=8, d=16, k=4, device="a100",
                            act_dtype="bf16")
    assert loss.total_flops == step.total_flops
    assert loss.json["train"]["device"] == "a100" and loss.peak_flops != step.peak_flops
    out = subprocess.run(
        [einc(), "report", str(LINEAR), "--fn", "loss", "--train", "--params", "w",
         "--device", "a100", "--act-dtype", "bf16", "--json",
         "--dim=b=8", "--dim=d=16", "--dim=k=4"],
        check=True, capture_output=True, text=True).stdout
    theirs = json.loads(out)["train"]
    assert loss.json["train"]["memory"] == theirs["memory"]
    assert theirs["peak_bytes"] == loss.peak_bytes
    assert theirs["peak_flops"] == loss.peak_flops
    with pytest.raises(ein.ShapeError, match="'loss' has no grad"):
        mod.train_report("loss")
    with pytest.raises(ein.ShapeError, match="'z' is not a parameter"):
        mod.train_report("loss", params=["z"])
    with pytest.raises(ein.ShapeError, match="optimizer"):
        mod.train_report("step", optimizer="lion")
    with pytest.raises(ein.ShapeError, match="unknown dtype"):
        mod.train_report("step", act_dtype="f12")
    unbound = mod.train_report("step")
    assert unbound.total_flops != unbound.total_flops  # NaN: sizes not bound


def test_a_later_llvm_library_loads_after_a_call():
    # The JIT's runtime libraries are loaded RTLD_LOCAL (Execution/JIT.cpp):
    # made global, their libLLVM crashed triton's import, which torch makes
    # later (torch.optim, torch.compile). In a child: a crash is its exit code.
    pytest.importorskip("triton")
    code = ("import numpy as np, ein\n"
            f"m = ein.load({str(LINEAR)!r})\n"
            "m.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))\n"
            "import triton._C.libtriton\n")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(ein.__file__).parents[1]))
    done = subprocess.run([__import__("sys").executable, "-c", code], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_calls_from_threads(mod):
    # The GIL is released while ein binds, compiles and runs: threads call
    # one module at once, each with its own sizes, and get numpy's answers.
    from concurrent.futures import ThreadPoolExecutor
    m = ein.load(LINEAR)

    def one(n):
        a, b = rand(n, 6, seed=n), rand(6, n + 1, seed=n + 100)
        for _ in range(20):
            c = m.matmul(a, b)
        return np.abs(c - a @ b).max()
    with ThreadPoolExecutor(4) as pool:
        errors = list(pool.map(one, range(1, 13)))
    assert max(errors) < 1e-4
