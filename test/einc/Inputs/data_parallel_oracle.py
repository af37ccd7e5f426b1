# The per-device memory of `einc report --train --ranks N` (its JSON) against
# the ZeRO paper's formulas (Rajbhandari et al. 2020, §5), worked here by hand,
# and the collectives' bytes against nccl-tests' volumes; prints one line per
# check and "N failure(s)".
#
# examples/mlp.ein: w1 is D x D, w2 is D x K, D = 2^15, K = 2^13, so
# Psi = D*D + D*K = 1342177280 parameters (every N below divides it: no
# padding). Its saved activations are x, h1 (f32, B x D each) and h2 (f32,
# B x K): 8*B*D + 4*B*K bytes over the batch B = 2^14, split over the ranks.
import json
import subprocess
import sys

einc, mlp = sys.argv[1], sys.argv[2]
D, K, B = 2**15, 2**13, 2**14
PSI = D * D + D * K
assert PSI == 1342177280
failures = 0


def check(ok, what):
    global failures
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'} {what}")


def report(*flags):
    out = subprocess.run([einc, "report", mlp, "--train", "--params", "w1,w2", *flags],
                         check=True, capture_output=True, text=True).stdout
    return out


def strategies(*flags):
    dp = json.loads(report("--json", *flags))["train"]["data_parallel"]
    return dp, {s["name"]: s for s in dp["strategies"]}


for n in [1, 2, 4, 8, 64]:
    activations = (8 * B * D + 4 * B * K) // n
    # Mixed-precision Adam: bf16 parameters and gradients, f32 master, m, v.
    paper = {"DDP": 16 * PSI, "ZeRO-1": 4 * PSI + 12 * PSI // n,
             "ZeRO-2": 2 * PSI + 14 * PSI // n, "ZeRO-3": 16 * PSI // n}
    dp, rows = strategies("--optimizer", "adam", "--param-dtype", "bf16", "--ranks", str(n))
    for name, bytes_ in paper.items():
        m = rows[name]["memory"]
        check(m["total"] == bytes_ + activations and m["activations"] == activations
              and m["padding_all_ranks"] == 0,
              f"bf16 adam N={n} {name}: {m['total']} == paper {bytes_} + activations {activations}")
    check(dp["batch_per_rank"] == B // n, f"N={n}: {dp['batch_per_rank']} rows per rank")
    # bf16 gradients, S = 2*Psi bytes: DDP all-reduces 2(n-1)/n*S per rank,
    # ZeRO-1/2 reduce-scatter and all-gather as much, ZeRO-3 1.5x that.
    s = 2 * PSI
    for name, factor in [("DDP", 2), ("ZeRO-1", 2), ("ZeRO-2", 2), ("ZeRO-3", 3)]:
        sent = rows[name]["bytes_per_rank"]
        want = factor * (n - 1) / n * s
        check(abs(sent - want) <= 0.5, f"N={n} {name}: {sent:.0f} bytes sent per rank == {want:.0f}")

# f32 parameters under SGD: no master, no state: 4*Psi parameters and as
# many gradients, whatever the stage shards.
n = 4
dp, rows = strategies("--optimizer", "sgd", "--ranks", str(n))
activations = (8 * B * D + 4 * B * K) // n
sgd = {"DDP": 8 * PSI, "ZeRO-1": 8 * PSI, "ZeRO-2": 4 * PSI + 4 * PSI // n, "ZeRO-3": 8 * PSI // n}
for name, bytes_ in sgd.items():
    m = rows[name]["memory"]
    check(m["total"] == bytes_ + activations and m["optimizer_states"] == 0,
          f"f32 sgd N={n} {name}: {m['total']} == {bytes_} + activations {activations}")

# Without --ranks the report is the one-device report, byte for byte: the
# text is a prefix of the --ranks one, and the JSON lacks only
# "data_parallel".
plain, ranked = report(), report("--ranks", "4")
check(ranked.startswith(plain) and "data parallel" not in plain,
      "the one-device text is unchanged by --ranks")
pj, rj = json.loads(report("--json")), json.loads(report("--json", "--ranks", "4"))
del rj["train"]["data_parallel"]
check(pj == rj, "the one-device JSON is unchanged by --ranks")
print(f"{failures} failure(s)")
