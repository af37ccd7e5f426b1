# The memory checks of test/einc/train-zero.test and train-dp.test: the
# bytes rank 0 logs it holds between steps (held_*_bytes) against the ZeRO
# paper's formulas, computed here from the checkpoint's own tensors: Ψ
# elements per parameter of p bytes; ZeRO-2/3 pad each sharded part to
# ceil(Ψ/N) elements per rank; ZeRO-1 gives each parameter's states to one
# owner, the largest parameter first to the least loaded rank (PyTorch's
# ZeroRedundancyOptimizer), so rank 0 holds its parameters' states.
#   usage: train_zero_held.py LOG CHECKPOINT STAGE RANKS
import json
import sys

from safetensors.numpy import load_file

log, checkpoint, stage, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tensors = load_file(checkpoint)
params = [t for name, t in tensors.items() if not name.startswith("optimizer.")]
states = len(tensors) // len(params) - 1  # optimizer states per parameter
whole = sum(t.size * t.itemsize for t in params)
shard = sum(-(-t.size // ranks) * t.itemsize for t in params)
if stage == 1:
    load = [0] * ranks
    owned = 0  # rank 0's bytes
    for t in sorted(params, key=lambda t: -t.size):  # no ties in the tests
        r = load.index(min(load))
        load[r] += t.size
        owned += t.size * t.itemsize if r == 0 else 0
want = {
    "held_parameter_bytes": shard if stage >= 3 else whole,
    "held_gradient_bytes": shard if stage >= 2 else whole,
    "held_state_bytes": states * (shard if stage >= 2 else owned if stage == 1 else whole),
}
rows = [r for r in map(json.loads, open(log)) if "loss" in r]
assert rows, log
for r in rows:
    got = {k: r[k] for k in want}
    assert got == want, (r["step"], got, want)
print(f"ZeRO-{stage} on {ranks} ranks holds, over {len(rows)} steps: "
      f"parameters {want['held_parameter_bytes']} B, gradients "
      f"{want['held_gradient_bytes']} B, optimizer states "
      f"{want['held_state_bytes']} B, as the formulas")
