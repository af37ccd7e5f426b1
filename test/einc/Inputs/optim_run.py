# Runs each optimizer of ein's library (share/ein/optim.ein, through the
# entry points of optim/steps.ein) for 10 steps with `einc run` and compares
# the parameter and the optimizer's state after every step with
# torch.optim's, stepping a torch.nn.Parameter whose .grad is set to the same
# gradients. The hyper-parameters go in as f64, as torch.optim's Python
# floats are. Usage: optim_run.py EINC SOURCE TMP. Prints one line per
# optimizer and dtype, `ok ...` or `FAIL ...`, then `N failure(s)`.
import os
import subprocess
import sys

import numpy as np

try:
    import torch
except ImportError:
    print(f"FAIL: torch is not installed for {sys.executable} (the oracle of "
          "this test; scripts/setup.sh installs it)")
    sys.exit(1)

STEPS = 10

# name: (torch class, torch options, ein hyper-parameters in order, state
# names of torch.optim in the order of the ein function's state tensors).
# beta2 and alpha are 0.999, torch's default beta2, whose f32 rounding makes
# 1 - beta2 1.3e-5 off when computed in f32.
OPTIMIZERS = {
    "sgd": (torch.optim.SGD, dict(lr=0.1), [0.1], []),
    "momentum": (torch.optim.SGD, dict(lr=0.05, momentum=0.9),
                 [0.05, 0.9], ["momentum_buffer"]),
    "adagrad": (torch.optim.Adagrad, dict(lr=0.1, eps=1e-10),
                [0.1, 1e-10], ["sum"]),
    "rmsprop": (torch.optim.RMSprop, dict(lr=0.01, alpha=0.999, eps=1e-6),
                [0.01, 0.999, 1e-6], ["square_avg"]),
    "adam": (torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.999), eps=1e-6),
             [0.01, 0.8, 0.999, 1e-6], ["exp_avg", "exp_avg_sq"]),
    "adamw": (torch.optim.AdamW,
              dict(lr=0.01, betas=(0.85, 0.999), eps=1e-7, weight_decay=0.3),
              [0.01, 0.85, 0.999, 1e-7, 0.3], ["exp_avg", "exp_avg_sq"]),
}
# The step number t is the last hyper-parameter of these.
COUNTS_STEPS = {"adam", "adamw"}
# dtype: (shape, suffix of the ein function, rtol). An element may differ
# from torch's by rtol relative to the largest magnitude of its tensor (an
# element near zero, such as a first moment after cancellation, carries the
# rounding of its neighbours' size). f32 at 1e-6 is some 16 ulps: rounding
# 1 - beta2 from f32(beta2) instead of from the double is 1.3e-5 off.
DTYPES = {
    np.float32: ((7, 5), "", 1e-6),
    np.float64: ((3, 4, 2), "_f64", 1e-12),
}


def ein_step(einc, source, fn, arrays, n_out, tmp, tag):
    """Runs `einc run` of `fn` on `arrays` ([(param, array)]); its results,
    or the error text."""
    args = [einc, "run", source, "--fn", fn]
    for name, value in arrays:
        path = os.path.join(tmp, f"{tag}-{name}.npy")
        np.save(path, value)
        args += ["--in", f"{name}={path}"]
    outs = [os.path.join(tmp, f"{tag}-out{i}.npy") for i in range(n_out)]
    for out in outs:
        if os.path.exists(out):
            os.remove(out)
        args += ["--out", out]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        return f"exit {run.returncode}: {run.stderr.strip()}"
    return [np.load(out) for out in outs]


def check(einc, source, tmp, name, dtype):
    cls, options, hyper, state_names = OPTIMIZERS[name]
    shape, suffix, rtol = DTYPES[dtype]
    label = f"{name} {np.dtype(dtype).name} {shape}"
    rng = np.random.default_rng(len(name) * 10 + len(suffix))
    w = rng.standard_normal(shape).astype(dtype)
    grads = [rng.standard_normal(shape).astype(dtype) for _ in range(STEPS)]

    param = torch.nn.Parameter(torch.from_numpy(w.copy()))
    opt = cls([param], foreach=False, **options)
    state = [np.zeros(shape, dtype) for _ in state_names]
    state_params = {"momentum": ["buf"], "adagrad": ["state_sum"],
                    "rmsprop": ["sq"], "adam": ["m", "v"],
                    "adamw": ["m", "v"]}.get(name, [])
    hyper_params = {"sgd": ["lr"], "momentum": ["lr", "mu"],
                    "adagrad": ["lr", "eps"],
                    "rmsprop": ["lr", "alpha", "eps"],
                    "adam": ["lr", "beta1", "beta2", "eps"],
                    "adamw": ["lr", "beta1", "beta2", "eps",
                              "weight_decay"]}[name]
    for t in range(1, STEPS + 1):
        g = grads[t - 1]
        param.grad = torch.from_numpy(g.copy())
        opt.step()
        scalars = [np.array(h, np.float64) for h in hyper]
        if name in COUNTS_STEPS:
            scalars.append(np.array(t, np.float64))
            names = hyper_params + ["step"]
        else:
            names = hyper_params
        inputs = ([("w", w), ("g", g)] + list(zip(state_params, state)) +
                  list(zip(names, scalars)))
        got = ein_step(einc, source, f"{name}_step{suffix}", inputs,
                       1 + len(state), tmp, f"{name}{suffix}")
        if isinstance(got, str):
            print(f"FAIL {label} step {t}: {got}")
            return False
        expected = [param.detach().numpy()] + [
            opt.state[param][s].numpy() for s in state_names]
        for what, a, b in zip(["w"] + state_names, got, expected):
            if a.dtype != dtype or a.shape != shape:
                print(f"FAIL {label} step {t}: {what} is {a.dtype} {a.shape}")
                return False
            err = np.max(np.abs(a.astype(np.float64) - b))
            scale = np.max(np.abs(b.astype(np.float64)))
            if not err <= rtol * scale:
                print(f"FAIL {label} step {t}: {what} differs from "
                      f"torch.optim by up to {err / scale:.3g} relative")
                return False
        w, state = got[0], got[1:]
    print(f"ok {label} {STEPS} steps")
    return True


def main():
    einc, source, tmp = sys.argv[1:4]
    torch.set_num_threads(1)
    failures = 0
    for dtype in DTYPES:
        for name in OPTIMIZERS:
            failures += not check(einc, source, tmp, name, dtype)
    print(f"{failures} failure(s)")


if __name__ == "__main__":
    main()
