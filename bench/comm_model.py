"""The communication model against MPI on this machine (issue 30: "modelled
communication time within 25% of the time measured on MPI ranks").

Runs `mpirun -n N einc calibrate` (each rank times all-reduce from 8 B to
64 MiB through ein's MPI communicator, fits the latency alpha and the bus
bandwidth B, then times all-reduce, all-gather, reduce-scatter and all-to-all
at 64 KiB, 1 MiB and 16 MiB and models each with collectiveSeconds on that
fit) --repeat times per rank count, in a temporary XDG_CACHE_HOME, and
prints per collective and size the median measured and modelled times and
their ratio, with the fits and the measured bus bandwidth
(nccl-tests' busbw = busFactor * S / t) of each row. The machine, cores, ISA and OpenMPI version head
the output.

    python3 bench/comm_model.py --einc build/bin/einc [--ranks 2,4]
        [--repeat 3] [--markdown]
"""
import argparse
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
parser.add_argument("--markdown", action="store_true")
args = parser.parse_args()

cores = os.cpu_count() or 1
ranks_list = ([int(r) for r in args.ranks.split(",")] if args.ranks else
              ([2, 4] if cores >= 4 else [2]))

ROW = re.compile(r"^\s+(all-reduce|all-gather|reduce-scatter|all-to-all)\s+"
                 r"(\d+ (?:B|KiB|MiB))\s+([\d.]+) us\s+([\d.]+) us\s+"
                 r"([\d.]+)$")
FIT = re.compile(r"fit: latency ([\d.]+) us .* bus bandwidth ([\d.e+]+) GB/s")


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


def run(n):
    """One `mpirun -n n einc calibrate`: its fit and its rows."""
    with tempfile.TemporaryDirectory() as cache:
        cmd = ["mpirun", "-n", str(n), "--oversubscribe"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += [args.einc, "calibrate"]
        p = subprocess.run(cmd, capture_output=True, text=True,
                           env=dict(os.environ, XDG_CACHE_HOME=cache))
    if p.returncode != 0:
        sys.exit(f"comm_model.py: {' '.join(cmd)} failed:\n{p.stdout}"
                 f"{p.stderr}")
    fit = FIT.search(p.stdout)
    rows = {}
    for line in p.stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows[(m.group(1), m.group(2))] = (float(m.group(3)),
                                              float(m.group(4)))
    if not fit or len(rows) != 12:
        sys.exit(f"comm_model.py: cannot read einc calibrate's output:\n"
                 f"{p.stdout}")
    return (float(fit.group(1)), float(fit.group(2))), rows


print(f"machine: {machine()}")
results = []
for n in ranks_list:
    runs = [run(n) for _ in range(args.repeat)]
    fits = [f for f, _ in runs]
    note = (" (oversubscribed: more ranks than cores)" if n > cores else "")
    print(f"{n} ranks{note}: fits over {args.repeat} runs: " + "; ".join(
        f"alpha {a:.1f} us, B {b:.3g} GB/s" for a, b in fits))
    for key in runs[0][1]:
        measured = statistics.median(r[key][0] for _, r in runs)
        modelled = statistics.median(r[key][1] for _, r in runs)
        ratios = [r[key][1] / r[key][0] for _, r in runs]
        results.append((n, key[0], key[1], measured, modelled,
                        statistics.median(ratios), min(ratios), max(ratios)))



def bus_factor(kind, n):
    """nccl-tests' PERFORMANCE.md, written out here as the oracle."""
    return 2 * (n - 1) / n if kind == "all-reduce" else (n - 1) / n


def size_bytes(size):
    number, unit = size.split()
    return int(number) * {"B": 1, "KiB": 1024, "MiB": 1024 * 1024}[unit]


head = ["ranks", "collective", "size", "measured us", "measured busbw GB/s",
        "modelled us", "model/measured", "range", "within 25%"]
lines = []
for n, kind, size, meas, mod, ratio, lo, hi in results:
    busbw = bus_factor(kind, n) * size_bytes(size) / (meas * 1e-6) / 1e9
    lines.append([str(n), kind, size, f"{meas:.1f}", f"{busbw:.2f}",
                  f"{mod:.1f}", f"{ratio:.2f}", f"{lo:.2f}-{hi:.2f}",
                  "yes" if 0.75 <= ratio <= 1.25 else "no"])
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
within = sum(1 for r in results if 0.75 <= r[5] <= 1.25)
print(f"{within} of {len(results)} within 25% of the measured time")
