# grad(..., recompute=True) against PyTorch autograd: the same gradients as
# saving every activation, on the target given. Usage: recompute.py EINC
# SOURCE TMPDIR [EXTRA EINC ARGS...]
import os
import subprocess
import sys

import numpy as np

try:
    import torch
except ImportError as err:
    print(f"FAIL: PyTorch is the oracle of this test and is missing ({err})")
    sys.exit(1)

einc, source, tmp, *extra = sys.argv[1:]
os.makedirs(tmp, exist_ok=True)
rng = np.random.default_rng(7)
inputs = {"x": rng.standard_normal((3, 4)), "w1": rng.standard_normal((4, 5)),
          "w2": rng.standard_normal((5, 2))}
args = []
for name, value in inputs.items():
    np.save(f"{tmp}/{name}.npy", value)
    args += ["--in", f"{name}={tmp}/{name}.npy"]

x, w1, w2 = (torch.tensor(inputs[n], requires_grad=n != "x")
             for n in ("x", "w1", "w2"))
z = x @ w1
loss = torch.sigmoid((torch.nn.functional.silu(z) * torch.tanh(z)) @ w2).sum()
loss.backward()
expected = [loss.detach().numpy(), w1.grad.numpy(), w2.grad.numpy()]

failures = 0
for fn in ("saved", "recomputed"):
    outs = [f"{tmp}/{fn}-{i}.npy" for i in range(3)]
    run = subprocess.run([einc, "run", source, "--fn", fn, *args, *extra] +
                         [a for o in outs for a in ("--out", o)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL {fn}: {run.stderr.strip()}")
        failures += 1
        continue
    errors = [float(np.abs(np.load(o) - e).max()) for o, e in zip(outs, expected)]
    if max(errors) > 1e-12:
        print(f"FAIL {fn}: max errors {errors}")
        failures += 1
    else:
        print(f"ok {fn}")
print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
