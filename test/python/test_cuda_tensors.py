"""CUDA tensors in the Python package: module functions and einops drop-ins
on DLPack tensors whose device is CUDA, run on ein's CUDA target.

Without a GPU (CI) the CUDA path runs under EIN_CUDA=emulated, where ein's
"device" memory is host memory: dlpack_cuda.CudaArray presents a numpy
array's memory as a kDLCUDA tensor. Oracles: numpy (and einops) on the same
arrays; the producer's own data pointers for zero-copy. With a GPU, torch
CUDA tensors run end to end in a child process (EIN_CUDA selects the device
once per process). The emulated CUDA build of a function takes the host
compiler seconds: the tests here compile four.
"""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

# The device is chosen on first use, once per process: before any test runs.
if os.environ.setdefault("EIN_CUDA", "emulated") != "emulated":
    pytest.skip("the emulated CUDA tests need EIN_CUDA=emulated", allow_module_level=True)

import einops  # noqa: E402

import ein  # noqa: E402
from dlpack_cuda import KDL_CUDA, CudaArray, dlpack_view, exported, host  # noqa: E402
from test_module import LINEAR, mod, rand  # noqa: E402,F401 (mod: the fixture)


def test_module_function_on_strided_cuda_inputs(mod):
    a = rand(8, 5).T            # (5, 8), strides (1, 5): read as it is
    b = rand(8, 3, seed=1)
    qa, qb = CudaArray(a), CudaArray(b)
    held = exported()
    c = mod.matmul(qa, qb)
    assert exported() == held  # the inputs' DLPack tensors released after the call
    # Zero-copy: ein's views (the kernel's arguments) hold the producer's
    # pointers; the DLPack export asked for the legacy default stream.
    assert ein._ein._last_input_pointers() == [qa.data_ptr, qb.data_ptr]
    assert qa.streams == [1] and qb.streams == [1]
    device, _, got = dlpack_view(c)
    assert device == (KDL_CUDA, 0) and c.__dlpack_device__() == (KDL_CUDA, 0)
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
    # Two results, each on the device.
    c2, n = mod.two(qa, qb)
    np.testing.assert_allclose(host(c2), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(n), (a @ b).sum(axis=0), rtol=1e-5, atol=1e-5)


def test_gradients_stay_on_the_device(mod):
    # step returns the loss and its gradient by w: both CUDA, equal to the
    # gradient numpy computes by hand, 2/(b k) x^T (x w - y).
    x, w, y = rand(6, 4), rand(4, 3, seed=1), rand(6, 3, seed=2)
    loss, dw = mod.step(CudaArray(x), CudaArray(w), CudaArray(y))
    assert loss.__dlpack_device__() == dw.__dlpack_device__() == (KDL_CUDA, 0)
    r = x @ w - y
    np.testing.assert_allclose(host(loss), (r ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(host(dw), 2 / r.size * x.T @ r, rtol=1e-4, atol=1e-6)


def test_einops_functions_on_cuda_inputs():
    qx = CudaArray(rand(2, 3, 4))
    x = qx.array.copy()
    # A view: over the producer's memory, which the result keeps alive (the
    # producer frees it when the DLPack tensor's deleter runs).
    held = exported()
    v = ein.rearrange(qx, "a b c -> c b a")
    _, data, got = dlpack_view(v)
    assert data == qx.data_ptr
    np.testing.assert_array_equal(got, einops.rearrange(x, "a b c -> c b a"))
    del qx
    assert exported() == held + 1
    np.testing.assert_array_equal(host(v), einops.rearrange(x, "a b c -> c b a"))
    del v
    assert exported() == held
    # A copy: ein's device memory, on the device.
    y = ein.rearrange(CudaArray(x), "a b c -> (c a) b")
    assert y.__dlpack_device__() == (KDL_CUDA, 0)
    np.testing.assert_array_equal(host(y), einops.rearrange(x, "a b c -> (c a) b"))


def test_refusals_name_the_input_and_what_to_do(mod):
    a, b = rand(3, 4), rand(4, 2)
    with pytest.raises(ein.ShapeError, match=r"different devices \(input 0 is on cuda, "
                                             r"input 1 on cpu\); move them to one"):
        mod.matmul(CudaArray(a), b)
    with pytest.raises(ein.Error, match=r"input 0 \('a'\) of 'matmul' is on cuda:1: ein runs "
                                        r"on CUDA device 0 only; move it with x\.to\('cuda:0'\)"):
        mod.matmul(CudaArray(a, device_id=1), CudaArray(b))
    with pytest.raises(ein.EinopsError, match=r"input 0 is on cuda:1"):
        ein.rearrange(CudaArray(a, device_id=1), "a b -> b a")


NO_GPU = """
import numpy as np, ein
from dlpack_cuda import CudaArray
mod = ein.load({linear!r})
try:
    mod.matmul(CudaArray(np.ones((3, 4), np.float32)), CudaArray(np.ones((4, 2), np.float32)))
except ein.Error as e:
    print(e)
"""


def child(script, env):
    here = pathlib.Path(__file__).resolve().parent
    env = dict(env, PYTHONPATH=os.pathsep.join([str(here)] + sys.path))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_refused_clearly():
    env = {k: v for k, v in os.environ.items() if k != "EIN_CUDA"}
    out = child(NO_GPU.format(linear=str(LINEAR)), env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "input 0 ('a') of 'matmul' is on cuda:0, but ein cannot use it: no CUDA device: "
        "this machine has no NVIDIA GPU (no /dev/nvidiactl); EIN_CUDA=emulated runs the "
        "CUDA code on the CPU; or pass x.cpu()")


TORCH_GPU = """
import numpy as np, torch, einops, ein
mod = ein.load({linear!r})
a = torch.randn(8, 5, device="cuda").t()
b = torch.randn(8, 3, device="cuda")
try:
    mod.matmul(a, b)
except ein.Error as e:
    if "ein cannot use it" not in str(e):
        raise
    print("SKIP", e)  # a GPU for torch, but none ein can build for (no nvcc)
    raise SystemExit
side = torch.cuda.Stream()
with torch.cuda.stream(side):   # torch's writes on a side stream: ein waits for them
    b2 = b * 2
    c = mod.matmul(a, b2)
    assert ein._ein._last_input_pointers() == [a.data_ptr(), b2.data_ptr()]
    d = c + 1                    # torch reads ein's result on its stream
torch.cuda.synchronize()
assert c.device == a.device
torch.testing.assert_close(d, a @ b2 + 1, rtol=1e-4, atol=1e-4)
v = torch.randn(5, dtype=torch.float64, device="cuda")
torch.testing.assert_close(mod.scale64(v, 2.0), v * 2)  # the number joins v on the GPU
x = torch.randn(2, 3, 4, device="cuda")
torch.testing.assert_close(ein.rearrange(x, "a b c -> (c a) b"),
                           einops.rearrange(x, "a b c -> (c a) b"))
step = ein.autograd(mod, "step")
x, y = torch.randn(6, 4, device="cuda"), torch.randn(6, 3, device="cuda")
w = torch.randn(4, 3, device="cuda", requires_grad=True)
step(x, w, y).backward()
wr = w.detach().clone().requires_grad_()
((x @ wr - y) ** 2).mean().backward()
assert w.grad.device == w.device
torch.testing.assert_close(w.grad, wr.grad, rtol=1e-4, atol=1e-5)
print("ok")
"""


def test_torch_cuda_tensors_on_the_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU for torch")
    env = {k: v for k, v in os.environ.items() if k != "EIN_CUDA"}
    out = child(TORCH_GPU.format(linear=str(LINEAR)), env)
    if out.returncode == 0 and out.stdout.startswith("SKIP"):
        pytest.skip(out.stdout.strip())
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr
