"""The communication model against MPI on this machine (issue 30: "modelled
communication time within 25% of the time measured on MPI ranks").

Per rank count, --repeat times, in a fresh temporary XDG_CACHE_HOME:
  1. `mpirun -n N einc calibrate` measures the host fabric: each collective
     (all-reduce, all-gather, reduce-scatter, all-to-all, broadcast) from
     64 B to 64 MiB by factors of 2, and between two sizes where the time
     bends (refineSweep), stored as each one's latency and busbw by size in
     calibration.json;
  2. a separate job, `mpirun -n N einc calibrate --check SIZES`, times the
     collectives again at sizes it did *not* measure (default 48 KiB,
     384 KiB, 3 MiB, 24 MiB) and prints each one's time and the stored
     model's (collectiveSeconds: latency + busFactor * S / busbw(S), the
     time past the latency linear in S between two measured sizes).
The modelled times are also recomputed here from calibration.json, with
nccl-tests' bus factors and the interpolation written out again, and must
agree with einc's. The table gives per collective and size the median
measured and modelled times over the runs, the measured busbw
(busFactor * S / t) and the range of the ratio; beside it, on the same
runs, the ratio of the model before calibrate refined (the factor-2 grid's
sizes alone), for comparison. The machine, cores,
ISA, OpenMPI version and load head the output.

    python3 bench/comm_model.py --einc build/bin/einc [--ranks 2,4]
        [--repeat 3] [--sizes 48KiB,384KiB,3MiB,24MiB] [--markdown]
"""
import argparse
import bisect
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--einc", default=os.path.join(ROOT, "build", "bin",
                                                   "einc"))
parser.add_argument("--ranks", default=None,
                    help="comma-separated rank counts (default: 2, and 4 "
                    "when the host has 4 cores or more)")
parser.add_argument("--repeat", type=int, default=3)
parser.add_argument("--sizes", default="48KiB,384KiB,3MiB,24MiB",
                    help="the checked sizes; none of them may be in "
                    "calibrate's grid (64 B to 64 MiB by factors of 2)")
parser.add_argument("--markdown", action="store_true")
args = parser.parse_args()

cores = os.cpu_count() or 1
ranks_list = ([int(r) for r in args.ranks.split(",")] if args.ranks else
              ([2, 4] if cores >= 4 else [2]))
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 * 1024}
GRID = [64 * 2 ** i for i in range(21)]
# The model before calibrate refined between grid sizes (refineSweep): the
# factor-2 grid alone, for the comparison column.
OLD_GRID = GRID


def size_bytes(size):
    m = re.fullmatch(r"(\d+) ?(B|KiB|MiB)", size)
    if not m:
        sys.exit(f"comm_model.py: '{size}' is not a size such as 48KiB")
    return int(m.group(1)) * UNITS[m.group(2)]


for s in args.sizes.split(","):
    if size_bytes(s) in GRID:
        sys.exit(f"comm_model.py: {s} is in calibrate's grid; the check "
                 "must predict, not replay")

ROW = re.compile(r"^\s+(all-reduce|all-gather|reduce-scatter|all-to-all|"
                 r"broadcast)\s+(\d+ (?:B|KiB|MiB))\s+([\d.]+) us\s+"
                 r"([\d.]+) us\s+([\d.]+)$")


def machine():
    model, flags = "unknown CPU", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].split()
    isa = "AVX-512" if "avx512f" in flags else (
        "AVX2" if "avx2" in flags else "SSE")
    try:
        version = subprocess.run(["mpirun", "--version"], capture_output=True,
                                 text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        sys.exit("comm_model.py: mpirun not found (install openmpi-bin)")
    return f"{model}, {cores} cores, {isa}; {version}"


def bus_factor(kind, n):
    """nccl-tests' PERFORMANCE.md, written out here as the oracle."""
    if kind == "all-reduce":
        return 2 * (n - 1) / n
    return 1.0 if kind == "broadcast" else (n - 1) / n


def model_seconds(table, kind, nbytes, n, old=False):
    """latency + busFactor * S / busbw(S): between the stored sizes around
    S the time past the latency linear in S (S / busbw(S) interpolated
    linearly), the nearest one's busbw outside them. With `old`, the model
    before: only the sizes of the factor-2 grid, not those refined."""
    entry = table[kind]
    points = [(s, b) for s, b in entry["busbw"] if not old or s in OLD_GRID]
    sizes = [s for s, _ in points]
    bws = [b for _, b in points]
    if nbytes <= sizes[0]:
        bw = bws[0]
    elif nbytes >= sizes[-1]:
        bw = bws[-1]
    else:
        hi = bisect.bisect_left(sizes, nbytes)
        s0, s1, b0, b1 = sizes[hi - 1], sizes[hi], bws[hi - 1], bws[hi]
        w = (nbytes - s0) / (s1 - s0)
        bw = nbytes / (s0 / b0 + w * (s1 / b1 - s0 / b0))
    return entry["latency_s"] + bus_factor(kind, n) * nbytes / bw


def mpirun(n, extra, cache):
    cmd = ["mpirun", "-n", str(n), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [args.einc, "calibrate"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, XDG_CACHE_HOME=cache))
    if p.returncode != 0:
        sys.exit(f"comm_model.py: {' '.join(cmd)} failed:\n{p.stdout}"
                 f"{p.stderr}")
    return p.stdout


def run(n):
    """Calibrate, then check in a separate job: the stored fit and the
    check's rows {(kind, size): (measured us, modelled us, the old model's
    us)}."""
    with tempfile.TemporaryDirectory() as cache:
        mpirun(n, [], cache)
        with open(os.path.join(cache, "ein", "calibration.json")) as f:
            stored = json.load(f)
        out = mpirun(n, ["--check", args.sizes], cache)
    table = stored["host_fabric_collectives"]
    for kind, entry in table.items():
        for s in args.sizes.split(","):
            if any(b == size_bytes(s) for b, _ in entry["busbw"]):
                sys.exit(f"comm_model.py: calibrate measured {kind} at {s}; "
                         "the check must predict, not replay")
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        kind, size = m.group(1), m.group(2)
        measured, modelled = float(m.group(3)), float(m.group(4))
        ours = model_seconds(table, kind, size_bytes(size), n) * 1e6
        # einc prints 0.1 us; the two must agree to that and to 0.1%.
        if abs(ours - modelled) > max(0.051, 1e-3 * ours):
            sys.exit(f"comm_model.py: einc models {kind} {size} as "
                     f"{modelled} us, the table gives {ours:.2f} us")
        old = model_seconds(table, kind, size_bytes(size), n, old=True) * 1e6
        rows[(kind, size)] = (measured, modelled, old)
    expected = 5 * len(args.sizes.split(","))
    if len(rows) != expected:
        sys.exit(f"comm_model.py: cannot read einc calibrate --check's "
                 f"output ({len(rows)} of {expected} rows):\n{out}")
    return stored, rows


print(f"machine: {machine()}")
print("load average before: " + " ".join(
    f"{x:.2f}" for x in os.getloadavg()))
results = []
for n in ranks_list:
    runs = [run(n) for _ in range(args.repeat)]
    note = (" (oversubscribed: more ranks than cores)" if n > cores else "")
    print(f"{n} ranks{note}: per run, all-reduce's alpha and B, and each "
          "kind's latency:")
    for stored, _ in runs:
        lat = ", ".join(f"{k} {v['latency_s'] * 1e6:.1f} us"
                        for k, v in stored["host_fabric_collectives"].items())
        print(f"  alpha {stored['host_fabric_latency_s'] * 1e6:.1f} us, "
              f"B {stored['host_fabric_bus_bandwidth'] / 1e9:.3g} GB/s; {lat}")
    for key in runs[0][1]:
        measured = statistics.median(r[key][0] for _, r in runs)
        modelled = statistics.median(r[key][1] for _, r in runs)
        ratios = [r[key][1] / r[key][0] for _, r in runs]
        old = [r[key][2] / r[key][0] for _, r in runs]
        results.append((n, key[0], key[1], measured, modelled,
                        statistics.median(ratios), min(ratios), max(ratios),
                        sum(1 for r in ratios if 0.75 <= r <= 1.25),
                        len(ratios), statistics.median(old),
                        sum(1 for r in old if 0.75 <= r <= 1.25)))
print("load average after: " + " ".join(
    f"{x:.2f}" for x in os.getloadavg()))

head = ["ranks", "collective", "size", "measured us", "measured busbw GB/s",
        "modelled us", "model/measured", "range", "within 25%",
        "before: model/measured"]
lines = []
for n, kind, size, meas, mod, ratio, lo, hi, _, _, old, _ in results:
    busbw = bus_factor(kind, n) * size_bytes(size) / (meas * 1e-6) / 1e9
    lines.append([str(n), kind, size, f"{meas:.1f}", f"{busbw:.2f}",
                  f"{mod:.1f}", f"{ratio:.2f}", f"{lo:.2f}-{hi:.2f}",
                  "yes" if 0.75 <= ratio <= 1.25 else "no", f"{old:.2f}"])
if args.markdown:
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for line in lines:
        print("| " + " | ".join(line) + " |")
else:
    widths = [max(len(h), *(len(line[i]) for line in lines))
              for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))
for n in ranks_list:
    mine = [r for r in results if r[0] == n]
    within = sum(1 for r in mine if 0.75 <= r[5] <= 1.25)
    single = sum(r[8] for r in mine)
    print(f"{n} ranks: {within} of {len(mine)} rows within 25% of the "
          f"measured time (median ratio over the runs); single runs: "
          f"{single} of {sum(r[9] for r in mine)}")
    within = sum(1 for r in mine if 0.75 <= r[10] <= 1.25)
    single = sum(r[11] for r in mine)
    print(f"{n} ranks, the model before on the same runs: {within} of "
          f"{len(mine)} rows; single runs: {single} of "
          f"{sum(r[9] for r in mine)}")
