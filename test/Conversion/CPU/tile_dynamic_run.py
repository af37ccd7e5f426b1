#!/usr/bin/env python3
"""Runs contractions and reductions with sizes and strides known only at run
time through ein-tile-contractions / ein-tile-reductions and the rest of
einc's CPU pipeline, and checks every result against numpy.

The functions under test take `memref<?x..xT, strided<[?, ..], offset: ?>>`
operands (some results `memref<?x?xf32>`), as einc will emit them once
compiled code is size-generic. `main` builds each operand as a view of a
1-D buffer filled with small integers (`memref.reinterpret_cast` with the
case's offset, sizes and strides: contiguous, transposed, a slice with step
2, stride 0), calls the function, and prints every output buffer whole, so
elements outside the output view are checked too. numpy builds the same
views with `as_strided` and computes the expected buffers with einsum; all
values are integers well inside f16/f32 precision, so results must match
exactly.

The module is lowered with `ein-opt [--ein-tile-contractions=OPTS]
--ein-lower-buffers-to-llvm` and run by mlir-cpu-runner, once per tile
configuration: the host's defaults, AVX-512-sized tiles, and tiny blocks
that cross every block edge. Before running, the script checks that the
tiling passes took every function under test (no linalg.generic left).

Output: `PASS config case` or `FAIL config case: ...` per call, then
`tile-dynamic: N checks, F failures`; exits non-zero on a failure.

Usage: tile_dynamic_run.py --lib-dir LLVM_LIB_DIR [--ein-opt ein-opt]
           [--runner mlir-cpu-runner] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

CONFIGS = [
    ("default", ""),
    ("avx512-tiles", "vector-bits=512 work-items=3"),
    ("tiny-blocks", "mr=3 nr-vectors=1 mc=5 nc=8 kc=7 vector-bits=128 work-items=5"),
]

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16}


def dyn_type(rank, elt):
    return (f"memref<{'?x' * rank}{elt}, strided<[{', '.join(['?'] * rank)}], "
            f"offset: ?>>")


# Functions under test: name -> (loops, iterator types, operands as (elt,
# rank, map results, identity layout?), body kind, fill of the output).
# The last operand is the output.
FUNCTIONS = {
    "mm": ("m k n", "prp", [("f32", "m k"), ("f32", "k n"), ("f32", "m n")], "mac", True),
    "mm_acc": ("m k n", "prp", [("f32", "m k"), ("f32", "k n"), ("f32", "m n")], "mac", False),
    "mm_nk": ("m k n", "prp", [("f32", "m k"), ("f32", "n k"), ("f32", "m n")], "mac", True),
    "mm_alloc": ("m k n", "prp", [("f32", "m k"), ("f32", "k n"), ("f32", "m n", "identity")], "mac", True),
    "bmm": ("b m k n", "pprp", [("f32", "b m k"), ("f32", "b k n"), ("f32", "b m n")], "mac", True),
    "scores": ("b s t d", "pppr", [("f32", "b s d"), ("f32", "b t d"), ("f32", "b s t")], "mac", True),
    "two_sums": ("m k j n", "prrp", [("f32", "m k j"), ("f32", "k j n"), ("f32", "m n")], "mac", True),
    "heads": ("b s h d e", "ppprp", [("f32", "b s h d"), ("f32", "d e"), ("f32", "b s h e")], "mac", True),
    "heads_id": ("b s h d e", "ppprp", [("f32", "b s h d", "identity"), ("f32", "d e"), ("f32", "b s h e", "identity")], "mac", True),
    "swapped": ("k m n", "rpp", [("f32", "k m"), ("f32", "k n"), ("f32", "n m")], "mac", True),
    "mm_f16": ("m k n", "prp", [("f16", "m k"), ("f16", "k n"), ("f32", "m n")], "mac", True),
    "mm_f64": ("m k n", "prp", [("f64", "m k"), ("f64", "k n"), ("f64", "m n")], "mac", False),
    "sum_first": ("b a c", "prp", [("f32", "a b c"), ("f32", "b c")], "sum", True),
    "max_first": ("c a b d", "prrp", [("f32", "a b c d"), ("f32", "c d")], "max", False),
}


def contiguous(shape, offset=0, pad=0):
    strides, s = [], 1
    for d in reversed(shape):
        strides.insert(0, s)
        s *= d
    return (offset + s + pad, offset, list(shape), strides)


def transposed(shape):
    """A 2-D view whose first axis is contiguous (strides [1, rows])."""
    rows, cols = shape
    return (rows * cols, 0, [rows, cols], [1, rows])


def step2(shape, offset=3):
    """A 2-D slice of a wider buffer, every other column (strides [2c+1, 2])."""
    rows, cols = shape
    row = 2 * cols + 1
    return (offset + rows * row, offset, [rows, cols], [row, 2])


def strided(sizes, strides, offset=0):
    span = sum((n - 1) * s for n, s in zip(sizes, strides)) if all(sizes) else 0
    return (offset + span + 1, offset, list(sizes), list(strides))


M, K, N = 37, 53, 29
CASES = [
    # name, function, operand views (output last)
    ("odd sizes, contiguous", "mm", [contiguous([M, K]), contiguous([K, N]), contiguous([M, N])]),
    ("B transposed view", "mm", [contiguous([M, K]), transposed([K, N]), contiguous([M, N])]),
    ("A transposed view", "mm", [transposed([M, K]), contiguous([K, N]), contiguous([M, N])]),
    ("C every other column", "mm", [contiguous([M, K]), contiguous([K, N]), step2([M, N])]),
    ("C transposed view", "mm", [contiguous([M, K]), contiguous([K, N]), transposed([M, N])]),
    ("B broadcast over k (stride 0)", "mm", [contiguous([M, K]), strided([K, N], [0, 1]), contiguous([M, N])]),
    ("A broadcast over k (stride 0)", "mm", [strided([M, K], [1, 0]), contiguous([K, N]), contiguous([M, N])]),
    ("offsets, padded rows", "mm", [strided([M, K], [K + 5, 1], 7), strided([K, N], [N + 3, 1], 2), strided([M, N], [N + 4, 1], 5)]),
    ("everything transposed and sliced", "mm", [transposed([M, K]), transposed([K, N]), step2([M, N])]),
    ("k = 0: zero fill kept", "mm", [contiguous([M, 0]), contiguous([0, N]), contiguous([M, N])]),
    ("m = 0", "mm", [contiguous([0, K]), contiguous([K, N]), contiguous([0, N], pad=3)]),
    ("one row, one column", "mm", [contiguous([1, K]), contiguous([K, 1]), contiguous([1, 1])]),
    ("large k and n (past the default blocks)", "mm", [contiguous([13, 300]), transposed([300, 1100]), contiguous([13, 1100])]),
    ("accumulate, contiguous", "mm_acc", [contiguous([M, K]), contiguous([K, N]), contiguous([M, N])]),
    ("accumulate, C every other column", "mm_acc", [contiguous([M, K]), transposed([K, N]), step2([M, N])]),
    ("B map (n, k), contiguous", "mm_nk", [contiguous([M, K]), contiguous([N, K]), contiguous([M, N])]),
    ("B map (n, k), transposed view", "mm_nk", [contiguous([M, K]), transposed([N, K]), contiguous([M, N])]),
    ("identity-layout C", "mm_alloc", [transposed([M, K]), contiguous([K, N]), contiguous([M, N])]),
    ("batched", "bmm", [contiguous([3, M, K]), contiguous([3, K, N]), contiguous([3, M, N])]),
    ("batched, batch-broadcast B", "bmm", [contiguous([3, 7, 11]), strided([3, 11, 19], [0, 19, 1]), contiguous([3, 7, 19])]),
    ("scores", "scores", [contiguous([2, 19, 13]), contiguous([2, 23, 13]), contiguous([2, 19, 23])]),
    ("scores, K transposed", "scores", [contiguous([2, 19, 13]), strided([2, 23, 13], [299, 1, 23]), contiguous([2, 19, 23])]),
    ("two summed axes", "two_sums", [contiguous([M, 11, 3]), contiguous([11, 3, N]), contiguous([M, N])]),
    # Axis grouping (b s h -> one m; k j -> one k): taken where the strides
    # make the run contiguous, the operands as they are otherwise.
    ("grouped heads, contiguous", "heads", [contiguous([2, 3, 5, 7]), contiguous([7, 9]), contiguous([2, 3, 5, 9])]),
    ("grouped heads, x heads padded", "heads", [strided([2, 3, 5, 7], [144, 48, 8, 1], 1), contiguous([7, 9]), contiguous([2, 3, 5, 9])]),
    ("grouped heads, x stride 0 over b and s", "heads", [strided([2, 3, 5, 7], [0, 0, 7, 1]), contiguous([7, 9]), contiguous([2, 3, 5, 9])]),
    ("grouped heads, y padded rows", "heads", [contiguous([2, 3, 5, 7]), strided([7, 9], [1, 7]), strided([2, 3, 5, 9], [150, 50, 10, 1], 2)]),
    ("grouped heads, size-1 axes", "heads", [contiguous([1, 3, 1, 7]), contiguous([7, 9]), contiguous([1, 3, 1, 9])]),
    ("grouped heads, identity layouts", "heads_id", [contiguous([2, 3, 5, 7]), contiguous([7, 9]), contiguous([2, 3, 5, 9])]),
    ("two summed axes, B's not contiguous", "two_sums", [contiguous([M, 11, 3]), strided([11, 3, N], [4 * N, N, 1]), contiguous([M, N])]),
    ("operands swap roles", "swapped", [contiguous([K, M]), contiguous([K, N]), contiguous([N, M])]),
    ("f16 operands", "mm_f16", [contiguous([M, K]), transposed([K, N]), contiguous([M, N])]),
    ("f64, accumulate", "mm_f64", [transposed([M, K]), contiguous([K, N]), step2([M, N])]),
    ("sum over the first axis", "sum_first", [contiguous([5, 37, 29]), contiguous([37, 29])]),
    ("sum over the first axis, strided", "sum_first", [strided([5, 37, 29], [1, 5 * 29, 5]), step2([37, 29])]),
    ("sum over an empty axis: the fill in the tile", "sum_first", [contiguous([0, 37, 29]), contiguous([37, 29])]),
    ("sum with no rows", "sum_first", [contiguous([5, 0, 29]), contiguous([0, 29], pad=2)]),
    ("max over leading axes", "max_first", [contiguous([3, 4, 17, 9]), contiguous([17, 9])]),
]


def func_text(name):
    loops, iters, operands, body, fill = FUNCTIONS[name]
    loops = loops.split()
    kinds = {"p": "parallel", "r": "reduction"}
    iterator_types = ", ".join(f'"{kinds[c]}"' for c in iters)
    params, types, maps = [], [], []
    for i, op in enumerate(operands):
        elt, axes = op[0], op[1].split()
        ty = (f"memref<{'?x' * len(axes)}{elt}>" if len(op) > 2
              else dyn_type(len(axes), elt))
        params.append(f"%x{i}: {ty}")
        types.append(ty)
        maps.append(f"affine_map<({', '.join(loops)}) -> ({', '.join(axes)})>")
    out_elt = operands[-1][0]
    ins = ", ".join(f"%x{i}" for i in range(len(operands) - 1))
    in_types = ", ".join(types[:-1])
    args = ", ".join(f"%a{i}: {op[0]}" for i, op in enumerate(operands[:-1]))
    lines = [f"func.func @{name}({', '.join(params)}) {{"]
    if fill:
        zero = "0xFF800000" if body == "max" else "0.0"
        lines.append(f"  %zero = arith.constant {zero} : {out_elt}")
        lines.append(f"  linalg.fill ins(%zero : {out_elt}) outs(%x{len(operands) - 1} : {types[-1]})")
    lines.append(f"  linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                 f"iterator_types = [{iterator_types}]}}")
    lines.append(f"      ins({ins} : {in_types}) outs(%x{len(operands) - 1} : {types[-1]}) {{")
    lines.append(f"  ^bb0({args}, %acc: {out_elt}):")
    if body == "mac":
        vals = []
        for i, op in enumerate(operands[:-1]):
            if op[0] != out_elt:
                lines.append(f"    %e{i} = arith.extf %a{i} : {op[0]} to {out_elt}")
                vals.append(f"%e{i}")
            else:
                vals.append(f"%a{i}")
        lines.append(f"    %p = arith.mulf {vals[0]}, {vals[1]} : {out_elt}")
        lines.append(f"    %s = arith.addf %acc, %p : {out_elt}")
    elif body == "sum":
        lines.append(f"    %s = arith.addf %acc, %a0 : {out_elt}")
    else:
        lines.append(f"    %s = arith.maximumf %acc, %a0 : {out_elt}")
    lines.append(f"    linalg.yield %s : {out_elt}")
    lines.append("  }")
    lines.append("  return")
    lines.append("}")
    return "\n".join(lines)


def fill_values(length, seed, dtype):
    i = np.arange(length, dtype=np.int64)
    return (((i * 7 + seed * 13) % 9) - 4).astype(dtype)


def buffer_text(var, length, seed, elt):
    """MLIR that allocates `var` (memref<LENGTHxELT>) and fills it with
    ((i * 7 + seed * 13) % 9) - 4, the formula of fill_values."""
    return f"""  %{var} = memref.alloc() : memref<{length}x{elt}>
  scf.for %i = %c0 to %c{length} step %c1 {{
    %i64 = arith.index_cast %i : index to i64
    %x0 = arith.muli %i64, %k7 : i64
    %x1 = arith.addi %x0, %k{seed * 13} : i64
    %x2 = arith.remui %x1, %k9 : i64
    %x3 = arith.subi %x2, %k4 : i64
    %x4 = arith.sitofp %x3 : i64 to {elt}
    memref.store %x4, %{var}[%i] : memref<{length}x{elt}>
  }}
"""


def module_text(functions, cases):
    consts = set([0, 1])
    ints = set([7, 9, 4])
    body = []
    for ci, (_, fname, views) in enumerate(cases):
        operands = FUNCTIONS[fname][2]
        args, arg_types = [], []
        for oi, (view, op) in enumerate(zip(views, operands)):
            length, offset, sizes, strides = view
            elt = op[0]
            seed = ci * 5 + oi
            var = f"buf{ci}_{oi}"
            consts.add(length)
            ints.add(seed * 13)
            body.append(buffer_text(var, length, seed, elt))
            rank = len(sizes)
            for v in [offset] + sizes + strides:
                consts.add(v)
            dt = dyn_type(rank, elt)
            body.append(
                f"  %v{ci}_{oi} = memref.reinterpret_cast %{var} to offset: [%c{offset}], "
                f"sizes: [{', '.join(f'%c{s}' for s in sizes)}], "
                f"strides: [{', '.join(f'%c{s}' for s in strides)}] : "
                f"memref<{length}x{elt}> to {dt}\n")
            value = f"%v{ci}_{oi}"
            if len(op) > 2:  # an identity-layout parameter
                ty = f"memref<{'?x' * rank}{elt}>"
                body.append(f"  %w{ci}_{oi} = memref.cast {value} : {dt} to {ty}\n")
                value, dt = f"%w{ci}_{oi}", ty
            args.append(value)
            arg_types.append(dt)
        body.append(f"  call @{fname}({', '.join(args)}) : ({', '.join(arg_types)}) -> ()\n")
        out = len(views) - 1
        length, elt = views[out][0], operands[out][0]
        name = "F64" if elt == "f64" else "F32"
        body.append(f"  %u{ci} = memref.cast %buf{ci}_{out} : memref<{length}x{elt}> to memref<*x{elt}>\n")
        body.append(f"  call @printMemref{name}(%u{ci}) : (memref<*x{elt}>) -> ()\n")
    head = ["func.func private @printMemrefF32(memref<*xf32>)",
            "func.func private @printMemrefF64(memref<*xf64>)"]
    head += [func_text(f) for f in functions]
    main = ["func.func @main() {"]
    main += [f"  %c{c} = arith.constant {c} : index" for c in sorted(consts)]
    main += [f"  %k{c} = arith.constant {c} : i64" for c in sorted(ints)]
    return "\n".join(head) + "\n" + "\n".join(main) + "\n" + "".join(body) + "  return\n}\n"


def expected(ci, fname, views):
    loops, _, operands, body, fill = FUNCTIONS[fname]
    arrays, bases = [], []
    for oi, ((length, offset, sizes, strides), op) in enumerate(zip(views, operands)):
        dtype = DTYPES[op[0]]
        base = fill_values(length, ci * 5 + oi, dtype)
        item = base.itemsize
        view = np.lib.stride_tricks.as_strided(
            base[offset:], shape=sizes, strides=[s * item for s in strides],
            writeable=(oi == len(views) - 1))
        arrays.append(view)
        bases.append(base)
    out_axes = operands[-1][1].replace(" ", "")
    in_axes = [op[1].replace(" ", "") for op in operands[:-1]]
    out = arrays[-1]
    ins = [a.astype(np.float64) for a in arrays[:-1]]
    if body == "mac":
        value = np.einsum(f"{in_axes[0]},{in_axes[1]}->{out_axes}", *ins)
        start = 0.0 if fill else out.astype(np.float64)
        out[...] = (start + value).astype(out.dtype)
    else:
        reduced = tuple(i for i, a in enumerate(in_axes[0]) if a not in out_axes)
        kept = "".join(a for a in in_axes[0] if a in out_axes)
        src = np.einsum(f"{in_axes[0]}->{kept}{''.join(in_axes[0][i] for i in reduced)}", ins[0])
        axes = tuple(range(len(kept), src.ndim))
        if body == "sum":
            value = src.sum(axis=axes) if src.size else np.zeros(src.shape[:len(kept)])
            start = 0.0 if fill else out.astype(np.float64)
            res = start + value
        else:
            value = src.max(axis=axes, initial=-np.inf)
            start = -np.inf if fill else out.astype(np.float64)
            res = np.maximum(start, value)
        res = np.einsum(f"{kept}->{out_axes}", res)
        out[...] = res.astype(out.dtype)
    return bases[-1]


def parse_prints(text):
    """The data of every printMemref in order, flattened."""
    out = []
    for m in re.finditer(r"data = \n(.*?)(?=\nUnranked Memref|\Z)", text, re.S):
        nums = re.findall(r"-?(?:inf|nan|[0-9.]+(?:e[-+]?[0-9]+)?)", m.group(1))
        out.append(np.array([float(x) for x in nums]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib-dir", required=True)
    ap.add_argument("--ein-opt", default="ein-opt")
    ap.add_argument("--runner", default="mlir-cpu-runner")
    ap.add_argument("--keep")
    args = ap.parse_args()
    libs = ",".join(os.path.join(args.lib_dir, x) for x in
                    ["libmlir_c_runner_utils.so", "libmlir_runner_utils.so", "libomp.so"])
    text = module_text(list(FUNCTIONS), CASES)
    checks = failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        src = os.path.join(work, "tile-dynamic.mlir")
        with open(src, "w") as f:
            f.write(text)
        for config, options in CONFIGS:
            tiling = [f"--ein-tile-contractions={options}"] if options else ["--ein-tile-contractions"]
            # The tiling must take every function under test.
            tiled = subprocess.run([args.ein_opt, src] + tiling + ["--ein-tile-reductions"],
                                   capture_output=True, text=True)
            checks += 1
            left = re.findall(r"func\.func @(\w+)\((?:(?!func\.func).)*?linalg\.generic",
                              tiled.stdout, re.S)
            if tiled.returncode != 0 or left:
                failures += 1
                print(f"FAIL {config} tiling: {tiled.stderr.strip() or 'left ' + ', '.join(left)}")
                continue
            print(f"PASS {config} tiling")
            low = os.path.join(work, f"tile-dynamic-{config}.llvm.mlir")
            lower = subprocess.run([args.ein_opt, src] + (tiling if options else []) +
                                   ["--ein-lower-buffers-to-llvm", "-o", low],
                                   capture_output=True, text=True)
            run = None
            if lower.returncode == 0:
                run = subprocess.run([args.runner, low, "-e", "main", "-entry-point-result=void",
                                      "-O3", f"-shared-libs={libs}"],
                                     capture_output=True, text=True)
            if lower.returncode != 0 or run.returncode != 0:
                failures += 1
                err = lower.stderr if lower.returncode != 0 else run.stderr
                print(f"FAIL {config} compile/run: {err.strip()[:2000]}")
                continue
            got = parse_prints(run.stdout)
            for ci, (name, fname, views) in enumerate(CASES):
                checks += 1
                want = expected(ci, fname, views).astype(np.float64)
                have = got[ci] if ci < len(got) else None
                if have is None or have.shape != want.shape or not np.array_equal(have, want):
                    failures += 1
                    detail = "missing output" if have is None else (
                        f"shape {have.shape} vs {want.shape}" if have.shape != want.shape else
                        f"{int(np.sum(have != want))} of {want.size} elements differ, first at "
                        f"{int(np.argmax(have != want))}: {have[np.argmax(have != want)]} vs "
                        f"{want[np.argmax(have != want)]}")
                    print(f"FAIL {config} {name} ({fname}): {detail}")
                else:
                    print(f"PASS {config} {name} ({fname})")
    print(f"tile-dynamic: {checks} checks, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
