"""Compiled .ein functions with grad() under torch.autograd (ein.autograd).

ein writes a training step's backward in the .ein source itself: a function
calls grad(loss, wrt=[...]) and returns the loss beside the gradients, so one
call computes both (docs/autodiff.md). ``ein.autograd(mod, "step")`` wraps such
a function as a torch.autograd.Function: its forward calls the compiled step
once and saves the gradients it returned; its backward scales them by the
incoming gradient of the loss. It returns the loss (and any result that is
neither the loss nor a gradient of a parameter, as outputs with no gradient).
``ein.autograd(mod, "loss", wrt=[...])`` does the same for a loss function
without grad(), whose gradient ein writes as .ein (Module._gradient).
"""

from . import _ein
from ._module import Function, Module

__all__ = ["autograd"]


class _Plan:
    """Which result is the loss, which are the gradients of which inputs, and
    which are returned as they are: read once from the function's
    signature."""

    def __init__(self, fn, wrt=None):
        sig = fn.signature
        results = sig["results"]
        self.params = [p["name"] for p in sig["params"]]
        self.where = f"ein.autograd('{fn.__name__}')"
        if wrt is not None:
            # Module._gradient's function: (loss, gradients in wrt order,
            # the loss function's other results), by position.
            self.loss = 0
            self.grad_of = {self.params.index(w): 1 + i for i, w in enumerate(wrt)}
            self.extras = list(range(1 + len(wrt), len(results)))
            return
        losses = [i for i, r in enumerate(results) if r["is_loss"]]
        where = self.where
        if not losses:
            raise _ein.Error(
                f"{where}: '{fn.__name__}' returns no loss that a grad() in it differentiates; "
                f"ein.autograd wraps a function that calls grad(loss, wrt=[...]) and returns "
                f"the loss beside the gradients (docs/autodiff.md)")
        if len(losses) > 1:
            raise _ein.Error(
                f"{where}: '{fn.__name__}' returns {len(losses)} losses that grad() "
                f"differentiates; ein.autograd needs exactly one")
        self.loss = losses[0]
        self.grad_of = {}  # input index -> result index
        for i, r in enumerate(results):
            if r["gradient_of"] >= 0 and r["gradient_of"] not in self.grad_of:
                self.grad_of[r["gradient_of"]] = i
        if not self.grad_of:
            raise _ein.Error(
                f"{where}: the function returns no gradient of its parameters; return "
                f"the results of grad(loss, wrt=[...]) as they are beside the loss")
        self.extras = [i for i in range(len(results))
                       if i != self.loss and i not in self.grad_of.values()]


def _function_class():
    import torch

    class EinFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, plan, *inputs):
            missing = [plan.params[i] for i, x in enumerate(inputs)
                       if ctx.needs_input_grad[2 + i] and i not in plan.grad_of]
            if missing:
                raise _ein.Error(
                    f"{plan.where}: input(s) {', '.join(repr(m) for m in missing)} require "
                    f"grad, but the function returns no gradient of them; add them to "
                    f"grad(..., wrt=[...]) and return their gradients, or detach them")
            results = fn(*inputs)
            if not isinstance(results, tuple):
                results = (results,)
            grads = [results[plan.grad_of[i]] if i in plan.grad_of else None
                     for i in range(len(inputs))]
            ctx.save_for_backward(*[g for g in grads if g is not None])
            ctx.has_grad = [g is not None for g in grads]
            extras = [results[i] for i in plan.extras]
            ctx.mark_non_differentiable(*extras)
            return (results[plan.loss], *extras) if extras else results[plan.loss]

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_loss, *_):
            # once_differentiable: a second derivative through these saved
            # gradients would be wrong, so torch refuses it by name.
            saved = iter(ctx.saved_tensors)
            out = []
            for i, has in enumerate(ctx.has_grad):
                g = next(saved) if has else None
                out.append(g * grad_loss if g is not None and ctx.needs_input_grad[2 + i]
                           else None)
            return (None, None, *out)

    return EinFunction


_EIN_FUNCTION = None


def autograd(module, function=None, *, wrt=None, forward=None):
    """Wraps a compiled function with grad() as a torch.autograd.Function.

    ``step = ein.autograd(mod, "step")`` (or ``ein.autograd(mod.step)``),
    where ``step`` returns the loss grad() differentiates and, for some of
    its parameters, grad()'s results as they are (in any order). Calling
    ``step(x, w, y)`` on torch tensors returns the loss with a grad_fn;
    ``loss.backward()`` fills ``w.grad`` from the gradients the forward call
    computed. An input that requires grad without a gradient among the
    results is refused by name. Results that are neither the loss nor such
    gradients are returned after the loss, with no gradient.

    ``forward="loss"`` names a function of the same parameters returning
    only the loss (and the same extra results): called instead when no input
    requires grad (torch.no_grad(), evaluation), it skips the backward.

    ``ein.autograd(mod, "loss", wrt=["w1", "w2"])`` wraps a function without
    grad() whose first result is a scalar loss: ein writes its gradient as
    .ein beside the module's source (a function calling it and grad(loss,
    wrt=...)), checks and compiles it as any, and the loss function itself
    serves calls that need no gradient.
    """
    global _EIN_FUNCTION
    if isinstance(module, Function):
        fn, module = module, module.module
        if function is not None:
            raise TypeError("ein.autograd(mod.f) takes no function name; "
                            "use ein.autograd(mod, 'f')")
    elif isinstance(module, Module) and isinstance(function, str):
        fn = module[function]
    else:
        raise TypeError("ein.autograd(module, 'function') or ein.autograd(module.function)")
    if wrt is not None:
        if isinstance(wrt, str):
            wrt = [w for w in wrt.replace(",", " ").split() if w]
        if forward is None:
            forward = fn.__name__
        wrt = list(wrt)
        fn = module._gradient(fn.__name__, wrt)
    plan = _Plan(fn, wrt)
    plain = module[forward] if forward is not None else None
    if _EIN_FUNCTION is None:
        _EIN_FUNCTION = _function_class()
    apply = _EIN_FUNCTION.apply

    def call(*inputs):
        import torch
        if len(inputs) != len(plan.params):
            raise _ein.ShapeError(
                f"error: '{fn.__name__}' takes {len(plan.params)} input(s) "
                f"({', '.join(plan.params)}), got {len(inputs)}")
        tracked = torch.is_grad_enabled() and any(
            getattr(x, "requires_grad", False) for x in inputs)
        if not tracked:
            if plain is not None:
                return plain(*inputs)
            results = fn(*[x.detach() if getattr(x, "requires_grad", False) else x
                           for x in inputs])
            if not isinstance(results, tuple):
                results = (results,)
            extras = [results[i] for i in plan.extras]
            return (results[plan.loss], *extras) if extras else results[plan.loss]
        return apply(fn, plan, *inputs)

    call.__name__ = fn.__name__
    call.__doc__ = f"ein.autograd of {fn!r}"
    call.function = fn
    return call
