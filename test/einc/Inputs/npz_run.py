# `einc run` with .npz inputs and outputs, checked against numpy (np.savez and
# np.savez_compressed write the inputs, np.load reads the outputs, numpy
# computes the expected values) and Python's zipfile (hostile archives):
#   npz_run.py EINC TMPDIR
# Prints one line per case ("ok NAME" or "FAIL NAME: why") and exits 1 if any
# case failed.
import io
import os
import struct
import subprocess
import sys
import warnings
import zipfile
import zlib

import numpy as np

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


def bf16(a):
    """f32 -> bf16 -> f32, rounded to nearest even (numpy has no bf16)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


STEP = '''def step(w: f32["d k"], x: bf16["n d"], b: i64["k"]) -> (f32["n k"], bf16["n k"]):
    y = einsum(astype(x, f32), w, "n d, d k -> n k") + astype(b, f32)
    return y, astype(y, bf16)
'''

# 1. A state archive in, a state archive out, by array name: np.savez
# (stored members) and np.savez_compressed (deflated), on the CPU and on the
# CUDA back end emulated on the CPU. bf16 results are written as f32.
rng = np.random.default_rng(0)
state = {"w": rng.standard_normal((3, 4)).astype(np.float32),
         "x": rng.standard_normal((2, 3)).astype(np.float32),
         "b": np.arange(4, dtype=np.int64)}
np.savez(path("state.npz"), **state)
np.savez_compressed(path("state-z.npz"), **state)
y = bf16(state["x"]) @ state["w"] + state["b"].astype(np.float32)
for name, archive, target in [
        ("state-in-state-out", "state.npz", []),
        ("state-in-state-out-compressed", "state-z.npz", []),
        ("state-in-state-out-cuda-emulated", "state-z.npz",
         ["--target=cuda-emulated"])]:
    out = path(name + ".npz")
    run = einc(STEP, "step", *target, "--in", path(archive), "--out", out,
               "--out", "ybf=" + out)
    if run.returncode != 0:
        check(name, False, run.stderr)
        continue
    with np.load(out) as got:
        ok = (sorted(got.files) == ["y", "ybf"]
              and got["y"].dtype == np.float32 and got["ybf"].dtype == np.float32
              and np.allclose(got["y"], y, rtol=1e-5, atol=1e-5)
              and np.allclose(got["ybf"], y, rtol=1e-2, atol=1e-2))
        if not target:
            ok = ok and np.array_equal(got["ybf"], bf16(got["y"]))
        check(name, ok, f"got {dict(got)}")
    # Python's zipfile finds every member intact (CRC-32 included).
    with zipfile.ZipFile(out) as z:
        check(name + "-zip", z.testzip() is None
              and [i.compress_type for i in z.infolist()] == [0, 0],
              "zipfile finds a bad member")

# One array of an archive by --in PARAM=FILE.npz, beside .npy inputs; a
# member in Fortran order.
np.save(path("w.npy"), state["w"])
np.savez_compressed(path("xf.npz"), x=np.asfortranarray(state["x"]),
                    other=np.zeros(2))
run = einc(STEP, "step", "--in", "w=" + path("w.npy"),
           "--in", "x=" + path("xf.npz"), "--in", "b=" + path("state.npz"),
           "--out", path("param.npy"), "--out", "z=" + path("param.npz"))
check("param-form", run.returncode == 0
      and np.allclose(np.load(path("param.npy")), y, rtol=1e-5, atol=1e-5)
      and np.allclose(np.load(path("param.npz"))["z"], y, rtol=1e-2, atol=1e-2),
      run.stderr)

# Python's zipfile writing ZIP64 records everywhere (the central
# directory's extra fields and the ZIP64 end record), as it does for
# archives over 2 GiB or 65535 members.
limits = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 16, 1
try:
    np.savez(path("zip64.npz"), **state)
finally:
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limits
raw = open(path("zip64.npz"), "rb").read()
run = einc(STEP, "step", "--in", path("zip64.npz"), "--out", path("z64.npz"),
           "--out", "ybf=" + path("z64.npz"))
check("zip64", b"PK\x06\x06" in raw and run.returncode == 0
      and np.allclose(np.load(path("z64.npz"))["y"], y, rtol=1e-5, atol=1e-5),
      run.stderr)

# 2. Every numpy dtype einc reads, through an archive and back: the values
# of numpy's arrays, bit for bit.
for name, dtype in [("f64", np.float64), ("f32", np.float32),
                    ("f16", np.float16), ("i64", np.int64), ("i32", np.int32),
                    ("bool", np.bool_)]:
    src = f'def copy_{name}(x: {name}["a b"]) -> {name}["a b"]:\n    return rearrange(x, "a b -> a b")\n'
    values = np.array([[0.5, -1.25, 3.0], [0.0, 2.0, -0.75]])
    x = (values > 0) if dtype == np.bool_ else values.astype(dtype)
    np.savez_compressed(path(f"{name}.npz"), x=x)
    run = einc(src, f"copy_{name}", "--in", path(f"{name}.npz"),
               "--out", "y=" + path(f"{name}-out.npz"))
    if run.returncode != 0:
        check(f"dtype-{name}", False, run.stderr)
        continue
    got = np.load(path(f"{name}-out.npz"))["y"]
    check(f"dtype-{name}", got.dtype == x.dtype and np.array_equal(got, x),
          f"{got} against {x}")

# 3. Names that do not fit: refused with exit 2, no output written.
np.savez(path("extra.npz"), extra=np.ones(1), **state)
np.savez(path("w-only.npz"), w=state["w"])
REFUSED = [
    ("extra-array", ["--in", path("extra.npz")],
     "'extra' names no parameter of function 'step' (its parameters: w, x, b)"),
    ("given-twice", ["--in", path("state.npz"), "--in", "w=" + path("w-only.npz")],
     "parameter 'w' is given twice"),
    ("missing", ["--in", path("w-only.npz")],
     "missing --in x=FILE.npy (or a .safetensors or .npz file holding a "
     "tensor 'x')"),
    ("no-such-array", ["--in", "x=" + path("w-only.npz"),
                       "--in", "w=" + path("w-only.npz"),
                       "--in", "b=" + path("state.npz")],
     "w-only.npz: has no array 'x' (no member 'x.npy')"),
]
for name, args, message in REFUSED:
    out = path(f"{name}.npz")
    run = einc(STEP, "step", *args, "--out", "y=" + out, "--out", "z=" + out)
    check(name, run.returncode == 2 and message in run.stderr
          and not os.path.exists(out), f"exit {run.returncode}: {run.stderr}")

OUT_REFUSED = [
    ("unnamed-result", [path("u.npz"), path("u.npz")],
     "result 2 of 'step' is not a named value: give its tensor's name with "
     "--out NAME="),
    ("same-name", ["y=" + path("u.npz"), "y=" + path("u.npz")],
     "results 1 and 2 are both named 'y'"),
    # All outputs or none: the second file cannot be made, so the first is
    # not written either.
    ("all-or-none", ["y=" + path("u.npz"), "z=" + path("no-dir/v.npz")],
     "no-dir"),
]
for name, outs, message in OUT_REFUSED:
    args = ["--in", path("state.npz")]
    for o in outs:
        args += ["--out", o]
    run = einc(STEP, "step", *args)
    check(name, run.returncode != 0 and message in run.stderr
          and not os.path.exists(path("u.npz")),
          f"exit {run.returncode}: {run.stderr}")

# 4. Hostile and malformed archives: a clear message naming the file (and
# the member), exit 2, nothing written.
ONE = '''def one(x: f32["n"]) -> f32["n"]:
    return x * 2
'''
x2 = np.array([1.5, -2.0], np.float32)


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


def savez(method=zipfile.ZIP_STORED, members=None):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of duplicate names
        with zipfile.ZipFile(f, "w", method) as z:
            for name, data in members or [("x.npy", npy_bytes(x2))]:
                z.writestr(name, data)
    return bytearray(f.getvalue())


def end_record(b):
    return b.rindex(b"PK\x05\x06")


def central(b, k=0):
    at = b.index(b"PK\x01\x02")
    for _ in range(k):
        at = b.index(b"PK\x01\x02", at + 4)
    return at


def patch(b, at, fmt, *values):
    struct.pack_into(fmt, b, at, *values)
    return b


def encrypted():
    b = savez()
    patch(b, 6, "<H", 1)  # the local header's flags
    return patch(b, central(b) + 8, "<H", 1)


def crc_flipped():
    b = savez()
    b[30 + len("x.npy") + 130] ^= 0x40  # a data byte of the stored member
    return b


def bad_deflate():
    b = savez(zipfile.ZIP_DEFLATED)
    b[30 + len("x.npy")] = 0x07  # BFINAL, and the reserved block type 3
    return b


def truncated_deflate():
    # A deflate stream cut short, its sizes and CRC-32 consistent with it.
    data = npy_bytes(x2)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = (c.compress(data) + c.flush())[:-4]
    b = savez(zipfile.ZIP_DEFLATED)
    old = struct.unpack_from("<I", b, 18)[0]
    new = b[:30 + 5] + stream + b[30 + 5 + old:]
    new = bytearray(new)
    patch(new, 18, "<I", len(stream))
    cd = central(new)
    patch(new, cd + 20, "<I", len(stream))
    patch(new, end_record(new) + 16, "<I", cd)
    return new


def bomb():
    b = savez(zipfile.ZIP_DEFLATED)
    size = struct.unpack_from("<I", b, 18)[0]
    return patch(b, central(b) + 24, "<I", size * 1033 + 1032)


def huge_member():
    b = savez()
    patch(b, central(b) + 20, "<II", 1 << 31, 1 << 31)
    return b


HOSTILE = [
    ("empty", bytearray(), "empty file, not an .npz archive"),
    ("short", bytearray(b"PK\x03\x04"), "too short for a ZIP archive"),
    ("not-zip", bytearray(npy_bytes(x2)), "no ZIP end record at its end"),
    ("cut-end", savez()[:-1], "no ZIP end record at its end"),
    ("bzip2", savez(zipfile.ZIP_BZIP2), "member 'x.npy': it uses compression "
     "method 12 (only stored, 0, and deflated, 8"),
    ("encrypted", encrypted(), "member 'x.npy': it is encrypted"),
    ("duplicate", savez(members=[("x.npy", npy_bytes(x2))] * 2),
     "member 'x.npy': the archive holds two members of this name"),
    ("not-npy", savez(members=[("x.npy", npy_bytes(x2)), ("notes.txt", b"hi")]),
     "member 'notes.txt': not an .npy member"),
    ("crc", crc_flipped(), "member 'x.npy': CRC-32 mismatch"),
    ("bad-deflate", bad_deflate(),
     "member 'x.npy': its deflated data is corrupt (zlib: invalid block type)"),
    ("truncated-deflate", truncated_deflate(),
     "member 'x.npy': its deflated data ends early"),
    ("cd-past-end", patch(savez(), end_record(savez()) + 16, "<I", 1 << 20),
     "bytes at offset 1048576) does not end where the end record begins"),
    ("local-past-cd", patch(savez(), central(savez()) + 42, "<I", 1000),
     "member 'x.npy': its local header offset 1000 is not before the central "
     "directory"),
    ("data-into-cd", huge_member(),
     "member 'x.npy': its data (2147483648 bytes after its local header at "
     "0) runs into the central directory"),
    ("bomb", bomb(), "is more than deflate can unpack from its"),
    ("multi-disk", patch(savez(), end_record(savez()) + 4, "<H", 1),
     "a multi-disk ZIP archive (not supported)"),
    ("zip64-without-locator", patch(savez(), end_record(savez()) + 10, "<H",
                                    0xFFFF),
     "the ZIP end record's counts call for ZIP64, but it has no ZIP64 "
     "locator"),
    ("bad-npy", savez(members=[("x.npy", b"\x93NUMPY\x01\x00garbage")]),
     "member 'x.npy': "),
    ("wrong-dtype", savez(members=[("x.npy", npy_bytes(np.array(["a"])))]),
     "member 'x.npy': "),
]
for name, data, message in HOSTILE:
    with open(path(name + ".npz"), "wb") as f:
        f.write(bytes(data))
    out = path(name + "-out.npy")
    run = einc(ONE, "one", "--in", "x=" + path(name + ".npz"), "--out", out)
    if os.environ.get("NPZ_SHOW"):
        print(run.stderr.strip())
    check("hostile-" + name, run.returncode == 2 and message in run.stderr
          and f"parameter 'x': {path(name + '.npz')}" in run.stderr
          and "Traceback" not in run.stderr and not os.path.exists(out),
          f"exit {run.returncode}: {run.stderr}")

# The hostile cases' good twins: what zipfile writes, stored and deflated.
for name, method in [("stored", zipfile.ZIP_STORED),
                     ("deflated", zipfile.ZIP_DEFLATED)]:
    with open(path(f"good-{name}.npz"), "wb") as f:
        f.write(bytes(savez(method)))
    run = einc(ONE, "one", "--in", "x=" + path(f"good-{name}.npz"),
               "--out", path(f"good-{name}.npy"))
    check(f"good-twin-{name}", run.returncode == 0 and np.array_equal(
        np.load(path(f"good-{name}.npy")), x2 * 2), run.stderr)

sys.exit(1 if failures else 0)
