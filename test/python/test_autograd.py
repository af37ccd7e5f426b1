"""ein.autograd: .ein functions with grad() as torch.autograd Functions.

Oracles: torch's own autograd of the same computation written in torch, and
torch.autograd.gradcheck (finite differences) in f64.
"""
import pathlib

import numpy as np
import pytest

import ein

torch = pytest.importorskip("torch")

INPUTS = pathlib.Path(__file__).resolve().parent / "Inputs"


@pytest.fixture(scope="module")
def mlp():
    return ein.load(INPUTS / "mlp64.ein")


def torch_loss(x, w1, w2, y):
    return ((torch.tanh(x @ w1) @ w2 - y) ** 2).mean()


def inputs(seed=0, b=5, d=4, h=6, k=3, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=dtype) for s in ((b, d), (d, h), (h, k), (b, k))]


def test_gradients_agree_with_torch_autograd(mlp):
    step = ein.autograd(mlp, "step")
    x, w1, w2, y = inputs()
    w1.requires_grad_(); w2.requires_grad_()
    loss = step(x, w1, w2, y)
    assert loss.grad_fn is not None and loss.shape == ()
    (loss * 3).backward()              # the incoming gradient scales them
    w1r, w2r = w1.detach().clone().requires_grad_(), w2.detach().clone().requires_grad_()
    ref = torch_loss(x, w1r, w2r, y)
    (ref * 3).backward()
    torch.testing.assert_close(loss.detach(), ref.detach())
    torch.testing.assert_close(w1.grad, w1r.grad)
    torch.testing.assert_close(w2.grad, w2r.grad)


def test_gradcheck_f64(mlp):
    step = ein.autograd(mlp.step_all)
    x, w1, w2, y = inputs(seed=1, b=3, d=2, h=4, k=2)
    for t in (x, w1, w2):
        t.requires_grad_()
    # The loss alone (p, the extra result, has no gradient).
    assert torch.autograd.gradcheck(lambda *a: step(*a, y)[0], (x, w1, w2))


def test_extra_results_have_no_gradient(mlp):
    step = ein.autograd(mlp, "step_all")
    x, w1, w2, y = inputs(seed=2)
    w1.requires_grad_()
    loss, p = step(x, w1, w2, y)
    assert not p.requires_grad
    torch.testing.assert_close(p, torch.tanh(x @ w1.detach()) @ w2)
    loss.backward()
    w1r = w1.detach().clone().requires_grad_()
    torch_loss(x, w1r, w2, y).backward()
    torch.testing.assert_close(w1.grad, w1r.grad)


def test_an_input_without_a_gradient_is_refused(mlp):
    step = ein.autograd(mlp, "step")
    x, w1, w2, y = inputs()
    x.requires_grad_()
    with pytest.raises(ein.Error, match=r"'x' require grad.*no gradient"):
        step(x, w1, w2, y)


def test_a_function_without_grad_is_refused(mlp):
    with pytest.raises(ein.Error, match="'loss' returns no loss that a grad"):
        ein.autograd(mlp, "loss")


def test_no_grad_calls_the_forward_only(mlp):
    step = ein.autograd(mlp, "step", forward="loss")
    x, w1, w2, y = inputs(seed=3)
    w1.requires_grad_()
    with torch.no_grad():
        loss = step(x, w1, w2, y)
    assert loss.grad_fn is None
    torch.testing.assert_close(loss, torch_loss(x, w1.detach(), w2, y))


def test_training_loop_learns(mlp):
    # A few SGD steps through the compiled step reduce the loss as torch's do.
    step = ein.autograd(mlp, "step")
    x, w1, w2, y = inputs(seed=4)
    params = [w1.clone().requires_grad_(), w2.clone().requires_grad_()]
    ref = [w1.clone().requires_grad_(), w2.clone().requires_grad_()]
    opt, opt_ref = torch.optim.SGD(params, lr=0.1), torch.optim.SGD(ref, lr=0.1)
    for _ in range(5):
        opt.zero_grad(); opt_ref.zero_grad()
        step(x, *params, y).backward()
        torch_loss(x, *ref, y).backward()
        opt.step(); opt_ref.step()
    for p, r in zip(params, ref):
        torch.testing.assert_close(p, r)


def test_attention_head_f32_against_torch():
    mod = ein.load(INPUTS / "attention.ein")
    head = ein.autograd(mod, "head_grads")
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(*s, generator=g) for s in ((6, 4), (7, 4), (7, 4)))
    ours = [t.clone().requires_grad_() for t in (q, k, v)]
    ref = [t.clone().requires_grad_() for t in (q, k, v)]
    loss = head(*ours)
    loss.backward()
    qr, kr, vr = ref
    o = torch.softmax(qr @ kr.T / 4.0, dim=-1) @ vr
    r = (o * o).sum()
    r.backward()
    torch.testing.assert_close(loss.detach(), r.detach(), rtol=1e-5, atol=1e-5)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def test_a_loss_without_grad_is_differentiated_by_ein(mlp):
    # ein writes loss's gradient as .ein (grad(loss, wrt=...)) and compiles it.
    f = ein.autograd(mlp, "loss", wrt=["x", "w1", "w2"])
    x, w1, w2, y = inputs(seed=6, b=3, d=2, h=4, k=2)
    for t in (x, w1, w2):
        t.requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: f(*a, y), (x, w1, w2))
    loss = f(x, w1, w2, y)
    loss.backward()
    ref = [t.detach().clone().requires_grad_() for t in (x, w1, w2)]
    torch_loss(*ref, y).backward()
    for a, b in zip((x, w1, w2), ref):
        torch.testing.assert_close(a.grad, b.grad)
    # The same gradient function serves a second wrapper (one compilation).
    assert ein.autograd(mlp, "loss", wrt="x w1 w2").function is f.function


def test_attention_head_without_grad_against_torch():
    mod = ein.load(INPUTS / "attention.ein")
    head = ein.autograd(mod, "head", wrt=["q", "k", "v"])
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(*s, generator=g).requires_grad_() for s in ((5, 4), (6, 4), (6, 4)))
    head(q, k, v).backward()
    qr, kr, vr = (t.detach().clone().requires_grad_() for t in (q, k, v))
    o = torch.softmax(qr @ kr.T / 4.0, dim=-1) @ vr
    (o * o).sum().backward()
    for a, b in zip((q, k, v), (qr, kr, vr)):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def test_wrt_errors_are_named(mlp):
    with pytest.raises(ein.ShapeError, match="'z' is not a parameter of 'loss'"):
        ein.autograd(mlp, "loss", wrt=["z"])
    with pytest.raises(ein.ShapeError, match="first result of 'step_all' must be the loss|"
                                             "once"):
        ein.autograd(mlp, "step_all", wrt=["w1", "w1"])
    mod = ein.load_source('def f(x: f32["n"], i: i64["n"]) -> f32["n"]:\n    return x\n')
    with pytest.raises(ein.ShapeError, match="'i' is i64: only float tensors"):
        ein.autograd(mod, "f", wrt=["i"])
    with pytest.raises(ein.ShapeError, match="must be the loss, a scalar float"):
        ein.autograd(mod, "f", wrt=["x"])


def test_parameters_sharing_one_gradient_value():
    # grad() returns one value for both parameters of w1 + w2 (named d_w1
    # only): with wrt=, each gets it by position.
    mod = ein.load_source('def f(w1: f32["n"], w2: f32["n"]) -> f32[""]:\n'
                          '    return reduce(w1 + w2, "n ->", "sum")\n')
    f = ein.autograd(mod, "f", wrt=["w1", "w2"])
    assert [r["gradient_of"] for r in f.function.signature["results"]] == [-1, 0, 0]
    a, b = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    f(a, b).backward()
    torch.testing.assert_close(a.grad, torch.ones(3))
    torch.testing.assert_close(b.grad, torch.ones(3))


def test_second_derivatives_are_refused(mlp):
    # The backward scales saved gradients: differentiating it again would
    # be silently wrong, so torch refuses it (once_differentiable).
    step = ein.autograd(mlp, "step")
    x, w1, w2, y = inputs(seed=8)
    w1.requires_grad_()
    (g,) = torch.autograd.grad(step(x, w1, w2, y), w1, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|does not require grad"):
        g.sum().backward()
