# Runs the functions of slice/model.ein with einc on the target given and
# compares each output with numpy; then a bound past its axis (k > seq),
# which must exit 2 without writing the output. Prints one line per case.
import sys

import numpy as np
from einc_case import run_case, run_refused

einc, source, tmp, target = sys.argv[1:5]
extra = [f"--target={target}"] + sys.argv[5:]
rng = np.random.default_rng(7)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def rotate_half(x):
    half = x.shape[1] // 2
    return np.concatenate([-x[:, half:], x[:, :half]], axis=1)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin


CASES = [
    ("head", [("x", arr(6, 3))], lambda x: x[1:4]),
    ("head", [("x", arr(4, 2))], lambda x: x[1:4]),
    ("first_k", [("x", arr(5, 3)), ("y", arr(2))], lambda x, y: x[:2]),
    ("first_k", [("x", arr(5, 3)), ("y", arr(5))], lambda x, y: x[:5]),
    ("first_k", [("x", arr(5, 3)), ("y", arr(0))], lambda x, y: x[:0]),
    ("drop_last", [("x", arr(2, 5, 3))], lambda x: x[:, :-1]),
    ("drop_last", [("x", arr(2, 1, 3))], lambda x: x[:, :0]),
    ("rotate_half", [("x", arr(3, 8))], rotate_half),
    ("cat3", [("x", arr(2, 1)), ("y", arr(2, 3)), ("z", arr(2, 2))],
     lambda x, y, z: np.concatenate([x, y, z], axis=1)),
    ("lead", [("x", arr(5, 4))], lambda x: x[2:] * 2),
    ("variadic", [("x", arr(2, 3, 4, 5))], lambda x: x[..., 1:3]),
    ("variadic", [("x", arr(4, 3))], lambda x: x[..., 1:3]),
    ("upper_half", [("x", arr(4, 7))], lambda x: x[:, 3:]),
    ("drop_first_column", [("x", arr(3, 5))], lambda x: x[:, 1:]),
    ("rope", [("x", arr(2, 3, 5, 8)), ("cos", arr(5, 8)), ("sin", arr(5, 8))],
     rope),
]

failures = 0
for i, (fn, inputs, oracle) in enumerate(CASES):
    failures += not run_case(einc, source, fn, inputs, oracle, tmp,
                             f"{target}-{i}", f"{fn} on {target}", extra)

# k = 7 > seq = 5: the entry check refuses it (exit 2), nothing is written.
bad = [("x", arr(5, 3)), ("y", arr(7))]
rc, written, err = run_refused(einc, source, "first_k", bad, tmp,
                               f"{target}-bad", extra)
if rc != 2 or written or "k <= seq" not in err:
    failures += 1
    print(f"FAIL k > seq on {target}: exit {rc}, output "
          f"{'written' if written else 'absent'}: {err.strip()}")
else:
    print(f"ok k > seq on {target}: exit 2, no output")
print(f"{failures} failure(s)")
