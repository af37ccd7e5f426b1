# Runs the functions of take_along/model.ein with einc on the target given
# and compares each output with numpy (np.take_along_axis); then checks that
# ids out of range (too large, negative, an empty axis) exit 2 with the
# op's error and write no output. Prints one line per case.
import sys

import numpy as np
from einc_case import run_case, run_refused

einc, source, tmp, target = sys.argv[1:5]
extra = [f"--target={target}", *sys.argv[5:]]
rng = np.random.default_rng(29)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ids(high, *shape, dtype=np.int64):
    return rng.integers(0, high, shape).astype(dtype)


def along(x, i, axis):
    """The oracle: np.take_along_axis with the axis kept as 1, dropped."""
    i = np.expand_dims(np.asarray(i, np.int64), axis)
    return np.squeeze(np.take_along_axis(np.asarray(x), i, axis=axis), axis)


def log_softmax(x):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


CASES = [
    ("pick", [("logp", arr(3, 5, 7)), ("targets", ids(7, 3, 5))],
     lambda x, i: along(x, i, 2)),
    ("pick", [("logp", arr(1, 1, 1)), ("targets", ids(1, 1, 1))],
     lambda x, i: along(x, i, 2)),
    # No positions: nothing read, nothing counted.
    ("pick", [("logp", arr(0, 4, 3)), ("targets", ids(3, 0, 4))],
     lambda x, i: along(x, i, 2)),
    ("pick", [("logp", arr(0, 2, 0)), ("targets", ids(1, 0, 2))],
     lambda x, i: np.zeros((0, 2), np.float32)),
    ("first_axis", [("x", arr(6, 4)), ("ids", ids(6, 4, dtype=np.int32))],
     lambda x, i: along(x, i, 0)),
    ("middle", [("x", arr(3, 8, 2)), ("ids", ids(8, 3, 2))],
     lambda x, i: along(x, i, 1)),
    ("one", [("x", arr(5)), ("i", np.array(4, np.int64))],
     lambda x, i: along(x, i, 0)),
    ("mask", [("m", rng.random((6, 4)) < 0.5),
              ("ids", ids(4, 6, dtype=np.int32))],
     lambda m, i: along(m, i, 1)),
    ("counts", [("m", rng.integers(-9, 9, (5, 3)).astype(np.int32)),
                ("ids", ids(3, 5))],
     lambda m, i: along(m, i, 1)),
    ("shifted", [("x", arr(4, 6)), ("ids", ids(6, 4))],
     lambda x, i: along(x, i, 1)),
    ("cross_entropy", [("logits", arr(2, 5, 9)), ("targets", ids(9, 2, 5))],
     lambda x, t: -along(log_softmax(x.astype(np.float64)), t, 2).mean()),
    ("both", [("table", arr(7, 3)), ("ids", ids(7, 4)),
              ("scores", arr(4, 7)), ("targets", ids(7, 4))],
     lambda t, i, s, g: np.take(t, i, axis=0).sum(axis=1) + along(s, g, 1)),
    # Elementwise ops around the take_along (fused on CUDA): ids computed.
    ("around", [("x", arr(5, 6)), ("ids", ids(6, 5) + 1)],
     lambda x, i: np.exp(along(x * 0.5, i - 1, 1)) + 1),
]

failures = 0
for i, (fn, inputs, oracle) in enumerate(CASES):
    failures += not run_case(einc, source, fn, inputs, oracle, tmp,
                             f"{target}-{i}", f"{fn} on {target}", extra)

# Ids out of range: exit 2, the op's location and bound, no output.
targets = ids(97, 2, 3)
targets[1, 2] = 200  # the case: target 200 with vocab 97
BAD = [
    ("target 200, vocab 97", "cross_entropy",
     [("logits", arr(2, 3, 97)), ("targets", targets)]),
    ("negative", "pick", [("logp", arr(2, 2, 5)),
                          ("targets", np.array([[0, 1], [-1, 2]], np.int64))]),
    ("huge i32", "first_axis",
     [("x", arr(5, 2)), ("ids", np.array([1, 2**31 - 1], np.int32))]),
    ("empty axis", "pick", [("logp", arr(1, 2, 0)),
                            ("targets", np.array([[0, 0]], np.int64))]),
    # A take and a take_along: the take_along's bad ids are named.
    ("beside a take", "both",
     [("table", arr(5, 2)), ("ids", np.array([1, 4], np.int64)),
      ("scores", arr(2, 5)), ("targets", np.array([3, 5], np.int64))]),
    ("computed", "around", [("x", arr(3, 4)),
                            ("ids", np.array([4, 0, 2], np.int64))]),
]
for k, (what, fn, inputs) in enumerate(BAD):
    rc, written, err = run_refused(einc, source, fn, inputs, tmp,
                                   f"{target}-bad{k}", extra)
    first = err.splitlines()[0] if err else ""
    print(f"{what}: exit {rc}, output written: "
          f"{written}: {first.replace(source, 'model.ein')}")
    failures += rc != 2 or written
print(f"{failures} failure(s)")
