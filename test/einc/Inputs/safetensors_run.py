# `einc run` with safetensors inputs and outputs, checked against the
# `safetensors` package (the format's reference implementation) and numpy:
#   safetensors_run.py EINC TMPDIR
# Prints one line per case ("ok NAME" or "FAIL NAME: why") and exits 1 if any
# case failed.
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import save_file as np_save
from safetensors.torch import load_file, save_file

EINC, TMP = sys.argv[1], sys.argv[2]
failures = []


def check(name, ok, why=""):
    print(f"ok {name}" if ok else f"FAIL {name}: {why}")
    if not ok:
        failures.append(name)


def path(name):
    return os.path.join(TMP, name)


def einc(source, fn, *args):
    src = path(fn + ".ein")
    with open(src, "w") as f:
        f.write(source)
    return subprocess.run([EINC, "run", src, "--fn", fn, *args],
                          capture_output=True, text=True)


STEP = '''def step(w: f32["d k"], x: bf16["n d"], b: i64["k"]) -> (f32["n k"], bf16["n k"]):
    y = einsum(astype(x, f32), w, "n d, d k -> n k") + astype(b, f32)
    return y, astype(y, bf16)
'''

# 1. A state file in, a state file out, by tensor name; bf16 stays bf16.
torch.manual_seed(0)
state = {"w": torch.randn(3, 4), "x": torch.randn(2, 3).to(torch.bfloat16),
         "b": torch.arange(4)}
save_file(state, path("state.safetensors"), metadata={"step": "7"})
run = einc(STEP, "step", "--in", path("state.safetensors"),
           "--out", path("next.safetensors"),
           "--out", "ybf=" + path("next.safetensors"))
if run.returncode != 0:
    check("state-in-state-out", False, run.stderr)
else:
    got = load_file(path("next.safetensors"))
    y = state["x"].float() @ state["w"] + state["b"].float()
    check("state-in-state-out",
          sorted(got) == ["y", "ybf"] and got["ybf"].dtype == torch.bfloat16
          and torch.allclose(got["y"], y, rtol=1e-5, atol=1e-5)
          and torch.equal(got["ybf"], y.to(torch.bfloat16)),
          f"got {got}")
    # The writer pads the header to 8 bytes, as the reference does.
    raw = open(path("next.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    check("header-aligned", (8 + n) % 8 == 0, f"header of {n} bytes")

# The same files on the CUDA back end (emulated on the CPU): the reading and
# writing are the target's too, and bf16 stays bf16.
run = einc(STEP, "step", "--target=cuda-emulated",
           "--in", path("state.safetensors"),
           "--out", path("next-cuda.safetensors"),
           "--out", "ybf=" + path("next-cuda.safetensors"))
if run.returncode != 0:
    check("state-in-state-out-cuda-emulated", False, run.stderr)
else:
    got = load_file(path("next-cuda.safetensors"))
    y = state["x"].float() @ state["w"] + state["b"].float()
    check("state-in-state-out-cuda-emulated",
          sorted(got) == ["y", "ybf"] and got["ybf"].dtype == torch.bfloat16
          and torch.allclose(got["y"], y, rtol=1e-5, atol=1e-5)
          and torch.allclose(got["ybf"].float(), y, rtol=1e-2, atol=1e-2),
          f"got {got}")

# 2. Every ein dtype through a file and back, bit for bit: the package
# writes, einc copies, the package reads.
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16,
          "bf16": torch.bfloat16, "f8e4m3": torch.float8_e4m3fn,
          "f8e5m2": torch.float8_e5m2, "i64": torch.int64, "i32": torch.int32,
          "bool": torch.bool}
for name, dtype in DTYPES.items():
    src = f'def copy_{name}(x: {name}["a b"]) -> {name}["a b"]:\n    return rearrange(x, "a b -> a b")\n'
    values = torch.tensor([[0.5, -1.25, 3.0], [0.0, 2.0, -0.75]])
    x = values.to(dtype) if dtype != torch.bool else values > 0
    save_file({"x": x}, path(f"{name}.safetensors"))
    run = einc(src, f"copy_{name}", "--in", "x=" + path(f"{name}.safetensors"),
               "--out", "y=" + path(f"{name}-out.safetensors"))
    if run.returncode != 0:
        check(f"dtype-{name}", False, run.stderr)
        continue
    y = load_file(path(f"{name}-out.safetensors"))["y"]
    check(f"dtype-{name}", y.dtype == dtype and torch.equal(
        y.view(torch.uint8), x.contiguous().view(torch.uint8)),
        f"{y} against {x}")

# 3. Names that do not fit: refused with exit 2, no output written.
np_save({"w": np.ones((3, 4), np.float32), "x": np.ones((2, 3), np.float32),
         "b": np.ones(4, np.int64), "extra": np.ones(1, np.uint8)},
        path("extra.safetensors"))
np_save({"w": np.ones((3, 4), np.float32)}, path("w-only.safetensors"))
REFUSED = [
    ("extra-tensor", ["--in", path("extra.safetensors")],
     "'extra' names no parameter of function 'step' (its parameters: w, x, b)"),
    ("given-twice", ["--in", path("state.safetensors"),
                     "--in", "w=" + path("w-only.safetensors")],
     "parameter 'w' is given twice"),
    ("missing", ["--in", path("w-only.safetensors")],
     "missing --in x=FILE.npy (or a .safetensors or .npz file holding a "
     "tensor 'x')"),
    ("no-such-tensor", ["--in", "x=" + path("w-only.safetensors"),
                        "--in", "w=" + path("w-only.safetensors"),
                        "--in", "b=" + path("state.safetensors")],
     "w-only.safetensors: has no tensor 'x'"),
]
for name, args, message in REFUSED:
    out = path(f"{name}.safetensors")
    run = einc(STEP, "step", *args, "--out", "y=" + out, "--out", "z=" + out)
    check(name, run.returncode == 2 and message in run.stderr
          and not os.path.exists(out), f"exit {run.returncode}: {run.stderr}")

OUT_REFUSED = [
    ("unnamed-result", [path("u.safetensors"), path("u.safetensors")],
     "result 2 of 'step' is not a named value: give its tensor's name with "
     "--out NAME="),
    ("same-name", ["y=" + path("u.safetensors"), "y=" + path("u.safetensors")],
     "results 1 and 2 are both named 'y'"),
    # All outputs or none: the second file cannot be made, so the first is
    # not written either.
    ("all-or-none", ["y=" + path("u.safetensors"),
                     "z=" + path("no-dir/v.safetensors")], "no-dir"),
]
for name, outs, message in OUT_REFUSED:
    args = ["--in", path("state.safetensors")]
    for o in outs:
        args += ["--out", o]
    run = einc(STEP, "step", *args)
    check(name, run.returncode != 0 and message in run.stderr
          and not os.path.exists(path("u.safetensors")),
          f"exit {run.returncode}: {run.stderr}")

# 4. Hostile and malformed files: a clear message, exit 2, nothing written.
ONE = '''def one(x: f32["n"]) -> f32["n"]:
    return x * 2
'''


def file_bytes(header, data=b"", size=None):
    h = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(h) if size is None else size) + h + data


def tensor(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


good = json.dumps({"x": tensor()})
HOSTILE = [
    ("empty", b"", "empty file, not a safetensors file"),
    ("short", b"\x01\x02\x03", "too short for a safetensors header size"),
    ("huge-header", file_bytes("{}", size=1 << 40),
     "over the format's limit of 100000000 bytes"),
    ("header-past-end", file_bytes("{}", size=4096),
     "the header size 4096 runs past the end of the file"),
    ("not-json", file_bytes("[1, 2]"), "does not start with '{'"),
    ("bad-utf8", file_bytes(b'{"x\xff": 1}'), "the header is not UTF-8"),
    ("duplicate-key", file_bytes(
        '{"x": %s, "x": %s}' % (json.dumps(tensor()), json.dumps(tensor())),
        b"\0" * 8), "the key 'x' appears twice"),
    ("unknown-field", file_bytes(json.dumps(
        {"x": dict(tensor(), strides=[1])}), b"\0" * 8),
     "tensor 'x' has the unknown field 'strides'"),
    ("missing-field", file_bytes(json.dumps(
        {"x": {"dtype": "F32", "shape": [2]}}), b"\0" * 8),
     "tensor 'x' has no data_offsets"),
    ("negative-dim", file_bytes(
        '{"x": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}',
        b"\0" * 8), "must be a non-negative integer"),
    ("float-offset", file_bytes(
        '{"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8.0]}}',
        b"\0" * 8), "must be an integer"),
    ("size-mismatch", file_bytes(json.dumps({"x": tensor(offsets=(0, 12))}),
                                 b"\0" * 12),
     "data_offsets [0, 12] hold 12 bytes, but F32 (2,) takes 8"),
    ("gap", file_bytes(json.dumps({"x": tensor(offsets=(4, 12))}), b"\0" * 12),
     "tensor 'x' starts at byte 4 of the data"),
    ("overlap", file_bytes(json.dumps({"x": tensor(), "y": tensor()}),
                           b"\0" * 8), "must tile the data"),
    ("end-before-begin", file_bytes(json.dumps(
        {"x": tensor(shape=(0,), offsets=(8, 0))}), b"\0" * 8),
     "end before they begin"),
    ("trailing-data", file_bytes(good, b"\0" * 9),
     "the header's tensors take 8 bytes of data, but the file holds 9"),
    ("truncated-data", file_bytes(good, b"\0" * 5),
     "the header's tensors take 8 bytes of data, but the file holds 5"),
    ("unknown-dtype", file_bytes(json.dumps({"x": tensor(dtype="F128")}),
                                 b"\0" * 8),
     "tensor 'x' has the unknown dtype 'F128'"),
    ("uint-dtype", file_bytes(json.dumps({"x": tensor(dtype="U32")}),
                              b"\0" * 8),
     "tensor 'x' is U32, which ein has no type for"),
    ("overflowing-shape", file_bytes(json.dumps(
        {"x": tensor(shape=(1 << 40, 1 << 40))}), b"\0" * 8),
     "the size of shape (1099511627776, 1099511627776) overflows"),
    ("huge-data", file_bytes(json.dumps(
        {"x": tensor(shape=(1 << 60,), offsets=(0, 1 << 62))})),
     "the header's tensors take 4611686018427387904 bytes of data"),
]
for name, data, message in HOSTILE:
    with open(path(name + ".safetensors"), "wb") as f:
        f.write(data)
    out = path(name + "-out.npy")
    run = einc(ONE, "one", "--in", "x=" + path(name + ".safetensors"),
               "--out", out)
    check("hostile-" + name, run.returncode == 2 and message in run.stderr
          and "parameter 'x':" in run.stderr and not os.path.exists(out),
          f"exit {run.returncode}: {run.stderr}")

# The package accepts what the hostile cases' good twin holds.
with open(path("good.safetensors"), "wb") as f:
    f.write(file_bytes(good, struct.pack("<2f", 1.5, -2.0)))
run = einc(ONE, "one", "--in", "x=" + path("good.safetensors"),
           "--out", path("good-out.npy"))
check("good-twin", run.returncode == 0 and np.array_equal(
    np.load(path("good-out.npy")), np.array([3.0, -4.0], np.float32)),
    run.stderr)

sys.exit(1 if failures else 0)
