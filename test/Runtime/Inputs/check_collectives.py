# The numpy oracle of test/Runtime/mpi-collectives.test: reads every rank's
# inputs and outputs written by EinCommCheck and checks each collective
# against numpy's sum/max/min/concatenate over the ranks' inputs.
import sys

import numpy as np

d, n = sys.argv[1], int(sys.argv[2])


def load(name, dtype):
    return [np.fromfile(f"{d}/{name}.{r}", dtype=dtype) for r in range(n)]


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


checked = 0
for op, fn in (("sum", np.sum), ("max", np.max), ("min", np.min)):
    ins = np.stack(load(f"allreduce_{op}.in", np.float32))
    want = fn(ins.astype(np.float64), axis=0)
    for out in load(f"allreduce_{op}.out", np.float32):
        # A sum's order is MPI's: within f32 rounding of the exact sum.
        tol = 1e-6 * np.abs(ins).sum(axis=0) if op == "sum" else 0
        assert np.all(np.abs(out - want) <= tol), (op, np.abs(out - want).max())
        checked += 1

ins = np.stack([bf16_to_f32(x) for x in load("allreduce_bf16.in", np.uint16)])
want = ins.astype(np.float64).sum(axis=0)
for out in load("allreduce_bf16.out", np.uint16):
    got = bf16_to_f32(out)
    # One rounding to bf16 (8 bits of mantissa): half an ulp, 2^-8 relative.
    assert np.all(np.abs(got - want) <= 2.0**-8 * np.abs(want) + 1e-30), "bf16"
    checked += 1

ins = np.stack(load("allreduce_f64.in", np.float64))
for out in load("allreduce_f64.out", np.float64):
    assert np.allclose(out, ins.sum(axis=0), rtol=1e-14, atol=1e-15), "f64"
    checked += 1

ins = load("allgather.in", np.float32)
for out in load("allgather.out", np.float32):
    assert np.array_equal(out, np.concatenate(ins)), "all-gather"
    checked += 1

ins = np.stack(load("reducescatter.in", np.float32))
total = ins.astype(np.float64).sum(axis=0)
for r, out in enumerate(load("reducescatter.out", np.float32)):
    block = slice(5 * r, 5 * r + 5)
    assert np.allclose(out, total[block], rtol=1e-6, atol=1e-5), "reduce-scatter"
    checked += 1

ins = [x.reshape(n, 3) for x in load("alltoall.in", np.int32)]
for r, out in enumerate(load("alltoall.out", np.int32)):
    assert np.array_equal(out.reshape(n, 3), np.stack([x[r] for x in ins])), \
        "all-to-all"
    checked += 1

root = load("broadcast.in", np.float64)[n - 1]
for out in load("broadcast.out", np.float64):
    assert np.array_equal(out, root), "broadcast"
    checked += 1

for r, out in enumerate(load("split.out", np.int64)):
    members = [q for q in range(n) if q % 2 == r % 2]
    assert list(out) == [sum(members), members.index(r), len(members)], \
        ("split", r, out)
    checked += 1

print(f"{checked} outputs of {n} ranks agree with numpy")
