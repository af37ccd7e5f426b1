# Checks take's gradient (a scatter-add into the table) against central
# finite differences of a numpy forward and against np.add.at, in f64.
#
#   grad_take.py EINC TMPDIR [EXTRA EINC ARGS...]
#
# Each case is a .ein function f(table, ids..., r...) -> (loss, dtable) whose
# loss weights some takes of the table by random r. The ids repeat (several
# tokens hit one row: their gradients must add up). The script runs
# `einc run` once per case (with the EXTRA arguments, e.g.
# --target=cuda-emulated or --size-generic) and compares the loss with numpy,
# the gradient with central differences of the numpy loss and, where the
# loss is linear in the takes, with np.add.at of r at the ids. Prints
# `ok NAME` or `FAIL NAME: why` per case, then `N failure(s)`; exits 1 on any
# failure.
import os
import subprocess
import sys

import numpy as np

EPS = 1e-6
# Central differences in f64: the loss is at most quadratic-smooth in the
# table here, so truncation (~EPS^2) and rounding (~1e-16 / EPS) stay far
# below these bounds for values of magnitude ~1.
GRAD_RTOL = 1e-6
GRAD_ATOL = 1e-6
# np.add.at and the compiled scatter-add add the same terms, maybe in
# another order.
EXACT_RTOL = 1e-12
LOSS_RTOL = 1e-9

# Ids with repeats: rows 1 and 3 are hit three and twice, row 2 never.
IDS_1D = np.array([1, 3, 1, 0, 3, 1, 4], dtype=np.int64)
IDS_2D = np.array([[4, 0, 4], [2, 4, 0]], dtype=np.int64)


def take(table, ids, axis):
    return np.take(table, ids, axis=axis)


def add_at(shape, ids, r, axis):
    """The oracle of the scatter-add: np.add.at of r at the ids along axis."""
    out = np.zeros(shape)
    index = (slice(None),) * axis + (ids,)
    np.add.at(out, index, r)
    return out


def second_order_loss(t, v):
    """sum(q * d/dt sum(tanh(take(t, ids)) * r)): the first gradient by
    np.add.at, differentiated again by finite differences."""
    e = take(t, v["ids"], 0)
    g = np.zeros_like(t)
    np.add.at(g, v["ids"], (1 - np.tanh(e) ** 2) * v["r"])
    return float(np.sum(g * v["q"]))


class Case:
    def __init__(self, name, table, params, body, forward, add_at_oracle=None,
                 axis=0):
        self.name = name
        self.axis = axis              # the table's axis the ids index
        self.table = table            # (type shape, numpy shape)
        self.params = params          # [(name, dtype, type shape, value or None)]
        self.body = body              # .ein lines computing l from table, ...
        self.forward = forward        # numpy: (table, inputs dict) -> loss
        self.add_at = add_at_oracle   # numpy: (table, inputs) -> gradient


def linear(name, table_shape, np_table, ids_dtype, ids_shape, ids, axis_name,
           axis, out_shape, out_pattern):
    """loss = sum(take(table, ids, axis) * r): the gradient is exactly
    np.add.at(zeros, ids, r) along the axis."""
    body = (f'    e = take(table, ids, "{axis_name}")\n'
            f'    l = reduce(e * r, "{out_pattern} ->", "sum")\n')
    return Case(
        name, (table_shape, np_table),
        [("ids", ids_dtype, ids_shape, ids), ("r", "f64", out_shape, None)],
        body,
        lambda t, v: float(np.sum(take(t, v["ids"], axis) * v["r"])),
        lambda t, v: add_at(t.shape, v["ids"], v["r"], axis), axis)


CASES = [
    # An embedding lookup: rows gathered several times sum their gradients.
    linear("embedding_repeated_ids", "vocab d", (5, 3), "i64", "n", IDS_1D,
           "vocab", 0, "n d", "n d"),
    # The axis in the middle, i32 ids.
    linear("middle_axis_i32", "a v b", (2, 5, 3), "i32", "n",
           IDS_1D.astype(np.int32), "v", 1, "a n b", "a n b"),
    # 2-D ids: the table's axis replaced by two dims.
    linear("ids_2d", "v d", (5, 4), "i64", "s t", IDS_2D, "v", 0, "s t d",
           "s t d"),
    # 2-D i32 ids along a middle axis.
    linear("ids_2d_middle_axis_i32", "a v b", (2, 5, 3), "i32", "s t",
           IDS_2D.astype(np.int32), "v", 1, "a s t b", "a s t b"),
    # The last axis.
    linear("last_axis", "d v", (3, 5), "i64", "n", IDS_1D, "v", 1, "d n",
           "d n"),
    # Two takes of one table (their scatter-adds accumulate) through a
    # nonlinearity: only finite differences.
    Case("two_takes_tanh", ("vocab d", (5, 3)),
         [("ids", "i64", "n", IDS_1D), ("jds", "i32", "s t", IDS_2D.astype(np.int32)),
          ("r", "f64", "n d", None), ("q", "f64", "s t d", None)],
         '    e = tanh(take(table, ids, "vocab"))\n'
         '    h = take(table, jds, "vocab")\n'
         '    l = reduce(e * r, "n d ->", "sum") + reduce(h * h * q, "s t d ->", "sum")\n',
         lambda t, v: float(np.sum(np.tanh(take(t, v["ids"], 0)) * v["r"])
                            + np.sum(take(t, v["jds"], 0) ** 2 * v["q"]))),
    # A second-order gradient: the loss weights the first gradient (a
    # scatter-add of a dy that depends on the table), whose own gradient is
    # a take of the scatter-add's dy at the same ids.
    Case("second_order", ("vocab d", (5, 3)),
         [("ids", "i64", "n", IDS_1D), ("r", "f64", "n d", None),
          ("q", "f64", "vocab d", None)],
         '    e = tanh(take(table, ids, "vocab"))\n'
         '    g1 = grad(reduce(e * r, "n d ->", "sum"), wrt=[table])\n'
         '    l = reduce(g1 * q, "vocab d ->", "sum")\n',
         second_order_loss),
]


def source(case):
    params = [f'table: f64["{case.table[0]}"]']
    params += [f'{n}: {dt}["{s}"]' for n, dt, s, _ in case.params]
    return (f"def f({', '.join(params)}) -> (f64[\"\"], "
            f"f64[\"{case.table[0]}\"]):\n"
            f"{case.body}"
            f"    g = grad(l, wrt=[table])\n"
            f"    return l, g\n")


def finite_differences(case, table, inputs):
    g = np.zeros_like(table)
    for idx in np.ndindex(*table.shape):
        plus, minus = table.copy(), table.copy()
        plus[idx] += EPS
        minus[idx] -= EPS
        g[idx] = (case.forward(plus, inputs) - case.forward(minus, inputs)) / (2 * EPS)
    return g


def run(case, einc, tmp, extra, seed):
    try:
        return run_checked(case, einc, tmp, extra, seed)
    except Exception as e:  # a bug of this script: report it as a failure
        return f"FAIL {case.name}: harness error {type(e).__name__}: {e}"


def run_checked(case, einc, tmp, extra, seed):
    rng = np.random.default_rng(seed)
    table = rng.normal(size=case.table[1])
    inputs = {}
    for name, dtype, _, value in case.params:
        if value is not None:
            inputs[name] = value
    # The weightings have the shape of what they weight.
    for name, dtype, _, value in case.params:
        if value is None:
            shape = np.shape(np.asarray(case_shape(case, name, table, inputs)))
            inputs[name] = rng.normal(size=shape)
    d = os.path.join(tmp, case.name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "case.ein")
    with open(path, "w") as f:
        f.write(source(case))
    args = [einc, "run", path, "--fn", "f", *extra]
    for name, value in [("table", table)] + list(inputs.items()):
        p = os.path.join(d, f"in-{name}.npy")
        np.save(p, value)
        args += ["--in", f"{name}={p}"]
    outs = [os.path.join(d, f"out-{i}.npy") for i in range(2)]
    for p in outs:
        if os.path.exists(p):
            os.remove(p)
        args += ["--out", p]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
        first = next((i for i, l in enumerate(lines) if "error:" in l), 0)
        return f"FAIL {case.name}: einc exit {proc.returncode}: " + " | ".join(lines[first:])
    got_loss, got = np.load(outs[0]), np.load(outs[1])
    problems = []
    expected_loss = case.forward(table, inputs)
    if got_loss.shape != () or not np.isclose(float(got_loss), expected_loss,
                                              rtol=LOSS_RTOL, atol=0):
        problems.append(f"loss {got_loss!r}, numpy {expected_loss!r}")
    if got.shape != table.shape or got.dtype != np.float64:
        problems.append(f"gradient {got.dtype}{list(got.shape)}, "
                        f"expected float64{list(table.shape)}")
    else:
        fd = finite_differences(case, table, inputs)
        scale = max(1.0, float(np.max(np.abs(fd))))
        err = np.abs(got - fd)
        if not np.all(err <= GRAD_ATOL * scale + GRAD_RTOL * np.abs(fd)):
            problems.append(f"gradient vs finite differences: max error "
                            f"{float(np.max(err)):.3g}")
        if case.add_at:
            exact = case.add_at(table, inputs)
            if not np.allclose(got, exact, rtol=EXACT_RTOL, atol=EXACT_RTOL):
                problems.append(f"gradient vs np.add.at: max error "
                                f"{float(np.max(np.abs(got - exact))):.3g}")
        # A row never gathered gets exactly zero.
        untouched = case_untouched_rows(case, inputs)
        if untouched is not None and np.any(got[untouched] != 0):
            problems.append("a row no id names has a non-zero gradient")
    if problems:
        return f"FAIL {case.name}: " + "; ".join(problems)
    return f"ok {case.name}"


def case_shape(case, name, table, inputs):
    """What the weighting `name` multiplies, computed by numpy."""
    if case.name == "two_takes_tanh":
        return take(table, inputs["ids" if name == "r" else "jds"], 0)
    if case.name == "second_order" and name == "q":
        return table
    return take(table, inputs["ids"], case.axis)



def case_untouched_rows(case, inputs):
    """An index of the table's rows that no id names (row 2 of IDS_1D, rows
    1 and 3 of IDS_2D), along the take's axis."""
    axis = case.axis
    ids = np.concatenate([np.ravel(inputs[n]) for n, _, _, v in case.params
                          if v is not None])
    size = case.table[1][axis]
    rows = [i for i in range(size) if i not in set(ids.tolist())]
    if not rows:
        return None
    return (slice(None),) * axis + (rows,)


def main():
    if len(sys.argv) < 3:
        print("usage: grad_take.py EINC TMPDIR [EXTRA EINC ARGS...]", file=sys.stderr)
        return 2
    einc, tmp, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(tmp, exist_ok=True)
    failures = 0
    for i, case in enumerate(CASES):
        line = run(case, einc, tmp, extra, 2000 + i)
        print(line)
        failures += line.startswith("FAIL")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
