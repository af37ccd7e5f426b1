# test/einc/train-dp.test's comparison: the losses of two --log files step
# for step within 1e-4 relative (the training tests' tolerance: f32 sums in
# another order), the validation losses when both have them, and
# optionally the weights of two checkpoints, read by the
# safetensors package. With --exact (first argument): bit for bit, for two
# runs that must do the same arithmetic (ZeRO against DDP on as many ranks).
# With `--rel R` (first): within R relative, each loss, and each tensor's
# largest difference against its largest magnitude (tensor-parallel
# training's 1e-6, train-tp.test).
import json
import sys

import numpy as np

exact = sys.argv[1] == "--exact"
if exact:
    del sys.argv[1]
rel = None
if sys.argv[1] == "--rel":
    rel = float(sys.argv[2])
    del sys.argv[1:3]
rtol = 0 if exact else rel or 1e-4


def losses(path, key="loss"):
    return {
        r["step"]: r[key]
        for r in map(json.loads, open(path))
        if key in r
    }


a, b = losses(sys.argv[1]), losses(sys.argv[2])
steps = sorted(set(a) & set(b))
assert steps and len(steps) == len(b), (sorted(a), sorted(b))
for s in steps:
    assert abs(a[s] - b[s]) <= rtol * abs(a[s]), (s, a[s], b[s])
print(f"{len(steps)} steps agree{' exactly' if exact else ''} (max rel {max(abs(a[s]-b[s])/abs(a[s]) for s in steps):.1e})")
# The validation losses, when both runs evaluated.
va, vb = losses(sys.argv[1], "val_loss"), losses(sys.argv[2], "val_loss")
if va and vb:
    assert sorted(vb) == sorted(set(va) & set(vb)), (sorted(va), sorted(vb))
    for s in vb:
        assert abs(va[s] - vb[s]) <= rtol * abs(va[s]), (s, va[s], vb[s])
    print(f"{len(vb)} validation losses agree")
if len(sys.argv) > 4:
    from safetensors.numpy import load_file
    x, y = load_file(sys.argv[3]), load_file(sys.argv[4])
    assert sorted(x) == sorted(y), (sorted(x), sorted(y))
    for k in x:
        if exact:
            assert np.array_equal(x[k], y[k]), k
        elif rel is not None:
            worst = np.abs(x[k] - y[k]).max() / max(np.abs(x[k]).max(), 1e-30)
            assert worst <= rel, (k, worst)
        else:
            assert np.allclose(x[k], y[k], rtol=1e-4, atol=1e-6), k
    print(f"{len(x)} tensors agree{' exactly' if exact else ''}")
