# Runs the functions of take/model.ein with einc on the target given and
# compares each output with numpy (np.take); then checks that ids out of
# range (too large, negative) exit 2 with the take's error and write no
# output. Prints one line per case.
import sys

import numpy as np
from einc_case import run_case, run_refused

einc, source, tmp, target = sys.argv[1:5]
extra = [f"--target={target}", *sys.argv[5:]]
rng = np.random.default_rng(7)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ids(high, *shape, dtype=np.int64):
    return rng.integers(0, high, shape).astype(dtype)


def embed_twice(table, i, other):
    return (np.take(table, i, axis=0).sum(axis=0) +
            np.take(table, other, axis=0).max(axis=0))


CASES = [
    ("embed", [("table", arr(11, 4)), ("ids", ids(11, 3, 5))],
     lambda t, i: np.take(t, i, axis=0)),
    ("embed", [("table", arr(1, 3)), ("ids", ids(1, 2, 2))],
     lambda t, i: np.take(t, i, axis=0)),
    ("embed", [("table", arr(6, 3)), ("ids", ids(6, 0, 4))],
     lambda t, i: np.take(t, i, axis=0)),
    ("embed", [("table", arr(0, 3)), ("ids", ids(1, 0, 2))],
     lambda t, i: np.take(t, i, axis=0)),
    ("middle", [("x", arr(3, 7, 2)), ("ids", ids(7, 9, dtype=np.int32))],
     lambda x, i: np.take(x, i, axis=1)),
    ("last_axis", [("x", arr(4, 6)), ("ids", ids(6, 2, 3))],
     lambda x, i: np.take(x, i, axis=1)),
    ("one_id", [("x", arr(5, 3)), ("i", np.array(3, np.int64))],
     lambda x, i: np.take(x, i, axis=0)),
    ("mask_rows", [("m", rng.random((5, 4)) < 0.5),
                   ("ids", ids(5, 7, dtype=np.int32))],
     lambda m, i: np.take(m, i, axis=0)),
    ("count_rows", [("m", rng.integers(-9, 9, (4, 3)).astype(np.int32)),
                    ("ids", ids(4, 6))],
     lambda m, i: np.take(m, i, axis=0)),
    ("shifted", [("x", arr(6)), ("ids", ids(6, 8))],
     lambda x, i: np.take(x, i, axis=0)),
    ("embed_twice", [("table", arr(9, 5)), ("ids", ids(9, 4)),
                     ("other", ids(9, 3))], embed_twice),
    # Elementwise ops around the take (fused on CUDA): ids computed.
    ("around", [("table", arr(6, 3)), ("ids", ids(6, 7) + 1)],
     lambda t, i: np.exp(np.take(t * 0.5, i - 1, axis=0)) + 1),
]

failures = 0
for i, (fn, inputs, oracle) in enumerate(CASES):
    failures += not run_case(einc, source, fn, inputs, oracle, tmp,
                             f"{target}-{i}", f"{fn} on {target}", extra)

# Ids out of range: exit 2, the take's location and bound, no output.
BAD = [
    ("too large", "embed", [("table", arr(5, 3)),
                            ("ids", np.array([[0, 5], [1, 2]], np.int64))]),
    ("negative", "embed", [("table", arr(5, 3)),
                           ("ids", np.array([[0, 1], [-1, 2]], np.int64))]),
    ("huge i32", "middle", [("x", arr(2, 5, 3)),
                            ("ids", np.array([1, 2**31 - 1], np.int32))]),
    ("empty axis", "embed", [("table", arr(0, 3)),
                             ("ids", np.array([[0]], np.int64))]),
    ("callee", "embed_twice", [("table", arr(5, 2)),
                               ("ids", np.array([1, 7], np.int64)),
                               ("other", np.array([0], np.int64))]),
    # The second of two takes, two of its ids out of range: that take, its
    # first bad id and its position are named, not both takes.
    ("second take", "embed_twice", [("table", arr(5, 2)),
                                    ("ids", np.array([1, 4], np.int64)),
                                    ("other", np.array([0, 9, -3],
                                                       np.int64))]),
    # Computed ids (ids - 1): the id the take saw.
    ("computed", "around", [("table", arr(5, 2)),
                            ("ids", np.array([3, 0, 2], np.int64))]),
]
for k, (what, fn, inputs) in enumerate(BAD):
    rc, written, err = run_refused(einc, source, fn, inputs, tmp,
                                   f"{target}-bad{k}", extra)
    first = err.splitlines()[0] if err else ""
    print(f"{what}: exit {rc}, output written: "
          f"{written}: {first.replace(source, 'model.ein')}")
    failures += rc != 2 or written
print(f"{failures} failure(s)")
