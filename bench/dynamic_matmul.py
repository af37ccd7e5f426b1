#!/usr/bin/env python3
"""Size-generic, strided contractions against static ones: an N^3 f32 matmul
through `ein-tile-contractions` on static memrefs (what einc compiles today)
and on `memref<?x?xf32, strided<[?, ?], offset: ?>>` arguments (sizes and
strides known only at run time), each with B row-major and B transposed.

The module is generated here, lowered with `ein-opt
--ein-lower-buffers-to-llvm` (einc's CPU pipeline from the contraction tiling
on) and run by mlir-cpu-runner, which JIT-compiles for the host at -O3 like
`einc run`. One process times every variant, round robin (a warm-up call
each, then `--reps` timed calls each); the table gives the median GFLOP/s
per variant and its ratio to the static row-major one. Inputs hold small
dyadic values, so every product and sum is exact in f32 and all variants
must agree bit for bit; the script checks that they do.

  python3 bench/dynamic_matmul.py --ein-opt build/bin/ein-opt [--n 2048]
      [--reps 7] [--threads T] [--llvm /usr/lib/llvm-19] [--tiles "mr=6 kc=256"]
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

MAC = """  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
"""

# (name, description); module() says which function each calls with which
# operands.
VARIANTS = [
    ("static", "static memref<NxNxf32>, B (k, n) row-major"),
    ("dynamic", "dynamic sizes and strides, B row-major"),
    ("static_bt", "static memref<NxNxf32>, B stored (n, k): map (n, k)"),
    ("dynamic_bt", "dynamic sizes and strides, B a transposed view (strides [1, N])"),
]


def module(n):
    s = f"memref<{n}x{n}xf32>"
    d = "memref<?x?xf32, strided<[?, ?], offset: ?>>"
    t = f"memref<{n}x{n}xf32, strided<[1, {n}]>>"
    ma = "affine_map<(m, k, n) -> (m, k)>"
    mb = "affine_map<(m, k, n) -> (k, n)>"
    mbt = "affine_map<(m, k, n) -> (n, k)>"
    mc = "affine_map<(m, k, n) -> (m, n)>"
    out = ["func.func private @rtclock() -> f64",
           "func.func private @clock() -> i64",
           "func.func private @printF64(f64)",
           "func.func private @printI64(i64)",
           "func.func private @printComma()",
           "func.func private @printNewline()"]

    def fn(name, ty, mapb):
        out.append(f"""func.func @{name}(%a: {ty}, %b: {ty}, %c: {ty}) {{
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : {ty})
  linalg.generic {{indexing_maps = [{ma}, {mapb}, {mc}], iterator_types = ["parallel", "reduction", "parallel"]}}
      ins(%a, %b : {ty}, {ty}) outs(%c : {ty}) {{
{MAC}""")

    fn("mm_static", s, mb)
    fn("mm_static_bt", s, mbt)
    fn("mm_dynamic", d, mb)
    # Inputs: a[i][j] = ((7i + 13j) % 17 - 8) / 8, b[k][n] = ((5k + 3n) % 11
    # - 5) / 4, bt = b transposed in memory. Sums of N products of these are
    # multiples of 1/32 below 2^24 / 32 for N <= 2^14: exact in f32.
    main = [f"""func.func @main() {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  %a = memref.alloc() {{alignment = 64 : i64}} : {s}
  %b = memref.alloc() {{alignment = 64 : i64}} : {s}
  %bt = memref.alloc() {{alignment = 64 : i64}} : {s}
  scf.for %i = %c0 to %cn step %c1 {{
    scf.for %j = %c0 to %cn step %c1 {{
      %i64 = arith.index_cast %i : index to i64
      %j64 = arith.index_cast %j : index to i64
      %c7 = arith.constant 7 : i64
      %c13 = arith.constant 13 : i64
      %c17 = arith.constant 17 : i64
      %c8 = arith.constant 8 : i64
      %c5 = arith.constant 5 : i64
      %c3 = arith.constant 3 : i64
      %c11 = arith.constant 11 : i64
      %f8 = arith.constant 8.0 : f32
      %f4 = arith.constant 4.0 : f32
      %x0 = arith.muli %i64, %c7 : i64
      %x1 = arith.muli %j64, %c13 : i64
      %x2 = arith.addi %x0, %x1 : i64
      %x3 = arith.remui %x2, %c17 : i64
      %x4 = arith.subi %x3, %c8 : i64
      %x5 = arith.sitofp %x4 : i64 to f32
      %x6 = arith.divf %x5, %f8 : f32
      memref.store %x6, %a[%i, %j] : {s}
      %y0 = arith.muli %i64, %c5 : i64
      %y1 = arith.muli %j64, %c3 : i64
      %y2 = arith.addi %y0, %y1 : i64
      %y3 = arith.remui %y2, %c11 : i64
      %y4 = arith.subi %y3, %c5 : i64
      %y5 = arith.sitofp %y4 : i64 to f32
      %y6 = arith.divf %y5, %f4 : f32
      memref.store %y6, %b[%i, %j] : {s}
      memref.store %y6, %bt[%j, %i] : {s}
    }}
  }}
  %btv = memref.transpose %bt (i, j) -> (j, i) : {s} to {t}
  %ad = memref.cast %a : {s} to {d}
  %bd = memref.cast %b : {s} to {d}
  %btd = memref.cast %btv : {t} to {d}
"""]
    calls = {
        # name: (function, its operand type, A, B)
        "static": ("mm_static", s, "%a", "%b"),
        "dynamic": ("mm_dynamic", d, "%ad", "%bd"),
        "static_bt": ("mm_static_bt", s, "%a", "%bt"),
        "dynamic_bt": ("mm_dynamic", d, "%ad", "%btd"),
    }
    # Each variant's own C; a dynamic function gets it as %cd_NAME.
    for name, _ in VARIANTS:
        main.append(f"  %c_{name} = memref.alloc() {{alignment = 64 : i64}} : {s}\n")
        if calls[name][1] != s:
            main.append(f"  %cd_{name} = memref.cast %c_{name} : {s} to {d}\n")
    return out, main, calls


def build(n, reps):
    out, main, calls = module(n)
    body = []
    for rep in range(reps + 1):  # call 0 of each variant is the warm-up
        for i, (name, _) in enumerate(VARIANTS):
            fname, ty, a, b = calls[name]
            c = f"%c_{name}" if ty.startswith(f"memref<{n}") else f"%cd_{name}"
            t = f"{name}_{rep}"
            body.append(f"""  %t0_{t} = call @rtclock() : () -> f64
  %u0_{t} = call @clock() : () -> i64
  call @{fname}({a}, {b}, {c}) : ({ty}, {ty}, {ty}) -> ()
  %u1_{t} = call @clock() : () -> i64
  %t1_{t} = call @rtclock() : () -> f64
  %dt_{t} = arith.subf %t1_{t}, %t0_{t} : f64
  %du_{t} = arith.subi %u1_{t}, %u0_{t} : i64
  %i_{t} = arith.constant {i} : i64
  call @printI64(%i_{t}) : (i64) -> ()
  call @printComma() : () -> ()
  call @printF64(%dt_{t}) : (f64) -> ()
  call @printComma() : () -> ()
  call @printI64(%du_{t}) : (i64) -> ()
  call @printNewline() : () -> ()
""")
    # Agreement: the largest |c_variant - c_static| of each variant.
    s = f"memref<{n}x{n}xf32>"
    for i, (name, _) in enumerate(VARIANTS):
        body.append(f"""  %cmp_{name} = arith.constant 0.0 : f32
  %diff_{name} = scf.for %i = %c0 to %cn step %c1 iter_args(%m0 = %cmp_{name}) -> f32 {{
    %r = scf.for %j = %c0 to %cn step %c1 iter_args(%m1 = %m0) -> f32 {{
      %x = memref.load %c_static[%i, %j] : {s}
      %y = memref.load %c_{name}[%i, %j] : {s}
      %dd = arith.subf %x, %y : f32
      %abs = math.absf %dd : f32
      %mm = arith.maximumf %m1, %abs : f32
      scf.yield %mm : f32
    }}
    scf.yield %r : f32
  }}
  %dx_{name} = arith.extf %diff_{name} : f32 to f64
  %k_{name} = arith.constant {100 + i} : i64
  call @printI64(%k_{name}) : (i64) -> ()
  call @printComma() : () -> ()
  call @printF64(%dx_{name}) : (f64) -> ()
  call @printNewline() : () -> ()
""")
    return "\n".join(out) + "\n" + "".join(main) + "".join(body) + "  return\n}\n"


def host_isa():
    """The CPU's name and its widest x86 vector extension (from cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return platform.processor() or "unknown CPU", "unknown ISA"
    m = re.search(r"model name\s*:\s*(.*)", info)
    flags = re.search(r"flags\s*:\s*(.*)", info)
    flags = set(flags.group(1).split()) if flags else set()
    isa = ("AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags
           else "AVX" if "avx" in flags else "SSE")
    return (m.group(1) if m else "unknown CPU"), isa


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ein-opt", required=True)
    ap.add_argument("--llvm", default="/usr/lib/llvm-19")
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0,
                    help="OpenMP threads (OMP_NUM_THREADS); 0: all")
    ap.add_argument("--tiles", default="",
                    help="ein-tile-contractions options, e.g. 'mr=6 kc=256'")
    args = ap.parse_args()
    lib = os.path.join(args.llvm, "lib")
    env = dict(os.environ)
    # Idle OpenMP threads sleep at once, so process CPU time is work time.
    env["KMP_BLOCKTIME"] = "0"
    threads = args.threads or os.cpu_count()
    env["OMP_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "bench.mlir")
        low = os.path.join(tmp, "bench.llvm.mlir")
        with open(src, "w") as f:
            f.write(build(args.n, args.reps))
        opt = [args.ein_opt, src, "-o", low]
        if args.tiles:
            opt.append(f"--ein-tile-contractions={args.tiles}")
        opt.append("--ein-lower-buffers-to-llvm")
        subprocess.run(opt, check=True)
        libs = ",".join(os.path.join(lib, x) for x in
                        ["libmlir_c_runner_utils.so", "libmlir_runner_utils.so",
                         "libomp.so"])
        proc = subprocess.run(
            [os.path.join(args.llvm, "bin", "mlir-cpu-runner"), low, "-e", "main",
             "-entry-point-result=void", "-O3", f"-shared-libs={libs}"],
            check=True, capture_output=True, text=True, env=env)
    wall = {name: [] for name, _ in VARIANTS}
    cpu = {name: [] for name, _ in VARIANTS}
    diffs = {}
    counts = {name: 0 for name, _ in VARIANTS}
    number = r"([-+0-9.eE]+|nan|inf)"
    for line in proc.stdout.splitlines():
        m = re.match(rf"\s*(\d+),\s*{number}\s*(?:,\s*(\d+))?\s*$", line)
        if not m:
            continue
        i, v = int(m.group(1)), float(m.group(2))
        if i >= 100:
            diffs[VARIANTS[i - 100][0]] = v
            continue
        name = VARIANTS[i][0]
        counts[name] += 1
        if counts[name] > 1:  # the first call is the warm-up
            wall[name].append(v)
            cpu[name].append(int(m.group(3)) / 1e6)  # clock(): microseconds
    flop = 2.0 * args.n ** 3
    name_, isa = host_isa()
    print(f"{args.n}^3 f32 matmul on {name_} ({isa}), {threads} OpenMP "
          f"threads, median of {args.reps} calls per variant (round robin)")
    print("wall: GFLOP/s over elapsed time; cpu: GFLOP/s per core over "
          "process CPU time (less sensitive to other load)")
    print()
    print("| variant | wall GFLOP/s | wall min-max | wall vs static | "
          "cpu GFLOP/s/core | cpu vs static | max abs diff |")
    print("|---|---|---|---|---|---|---|")
    base_w = flop / statistics.median(wall["static"]) / 1e9
    base_c = flop / statistics.median(cpu["static"]) / 1e9
    bad = False
    for name, desc in VARIANTS:
        rates = [flop / t / 1e9 for t in wall[name]]
        w = statistics.median(rates)
        c = flop / statistics.median(cpu[name]) / 1e9
        print(f"| {desc} | {w:.1f} | {min(rates):.1f}-{max(rates):.1f} | "
              f"{w / base_w:.2f}x | {c:.1f} | {c / base_c:.2f}x | "
              f"{diffs.get(name, float('nan')):g} |")
        bad |= diffs.get(name) != 0.0
    if bad:
        print("error: the variants disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
