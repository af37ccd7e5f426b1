#!/usr/bin/env python3
"""Sample .npy files for ein's runtime (include/ein/Runtime/Npy.h).

  npy_roundtrip.py write DIR     write one file per supported (or rejected)
                                 variant into DIR, plus DIR/manifest.json
  npy_roundtrip.py verify FILE.. check files written by ein (writeNpy / einc
                                 run): np.load accepts them and np.save of the
                                 loaded array reproduces them byte for byte

manifest.json lists, per file: "want" (the element type to request from
readNpy, or null for the natural type) and either "error" (a substring of the
expected error message) or "type", "shape" and "hex" (the tensor readNpy must
return: its storage type, shape and C-order little-endian bytes; readNpy keeps
a Fortran-ordered file's bytes with Fortran strides, so compare its
HostTensor::toCOrder()).

Only numpy is needed; ml_dtypes is used, when installed, to cross-check the
bf16 / fp8 rounding expectations.
"""

import json
import os
import struct
import sys

import numpy as np

MAGIC = b"\x93NUMPY"


def raw_npy(major, header, data, pad=True):
    """A .npy file written by hand: any version, any header text."""
    h = header.encode("utf-8" if major == 3 else "latin1")
    pre = 10 if major == 1 else 12
    if pad:
        h += b" " * ((-(pre + len(h) + 1)) % 64) + b"\n"
    fmt = "<H" if major == 1 else "<I"
    return MAGIC + bytes([major, 0]) + struct.pack(fmt, len(h)) + h + data


def header(descr, shape, fortran=False):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %r, }" % (
        descr, fortran, tuple(shape))


def npy_bytes(arr):
    import io
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def f32_to_bf16_bits(a):
    """Round to nearest even, NaN -> quiet NaN (ml_dtypes' bfloat16)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(a, np.float32))
    out = np.where(nan, (u >> 16) | 0x40, rounded)
    return out.astype(np.uint16)


def write(outdir):
    os.makedirs(outdir, exist_ok=True)
    manifest = {}

    def ok(name, data, arr, want=None, type_=None):
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
        arr = np.array(arr, order="C", copy=True)  # keeps 0-d arrays 0-d
        manifest[name] = {
            "want": want,
            "type": type_ or natural(arr.dtype),
            "shape": list(arr.shape),
            "hex": arr.astype(arr.dtype.newbyteorder("<")).tobytes().hex(),
        }

    def bad(name, data, error, want=None):
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
        manifest[name] = {"want": want, "error": error}

    a = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    # numpy's own writer, every natural type.
    ok("v1_f32.npy", npy_bytes(a), a)
    ok("v1_f64.npy", npy_bytes(a.astype("<f8")), a.astype("<f8"))
    ok("v1_f16.npy", npy_bytes(a.astype("<f2")), a.astype("<f2"))
    ok("v1_i64.npy", npy_bytes(np.array([-3, 0, 2**40], "<i8")),
       np.array([-3, 0, 2**40], "<i8"))
    ok("v1_i32.npy", npy_bytes(np.array([[-1], [7]], "<i4")),
       np.array([[-1], [7]], "<i4"))
    b = np.array([True, False, True])
    ok("v1_bool.npy", npy_bytes(b), b)
    # Header versions: numpy writes 2.0 / 3.0 when asked.
    import io
    for ver in [(2, 0), (3, 0)]:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a, version=ver)
        ok("v%d_f32.npy" % ver[0], buf.getvalue(), a)
    ok("v3_utf8_spacing.npy",
       raw_npy(3, "{ 'descr':'<f4' ,'shape':(2,3,),'fortran_order':False }",
               a.tobytes()), a)
    # Fortran order, 0-d, zero-size.
    t = np.arange(24, dtype="<i4").reshape(2, 3, 4)
    ok("fortran_3d.npy", npy_bytes(np.asfortranarray(t)), t)
    ok("fortran_2d_f32.npy", npy_bytes(np.asfortranarray(a)), a)
    s = np.array(2.5, "<f8")
    ok("scalar_0d.npy", npy_bytes(s), s)
    z = np.zeros((2, 0, 3), "<f4")
    ok("zero_size.npy", npy_bytes(z), z)
    ok("zero_size_fortran.npy", npy_bytes(np.asfortranarray(np.zeros((0, 4), "<f2"))),
       np.zeros((0, 4), "<f2"))
    # Requested conversions.
    vals = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 464.0, 465.0, -61440.0,
                     np.inf, np.nan], "<f4")
    ok("f32_as_f64.npy", npy_bytes(vals), vals.astype("<f8"), want="f64")
    ok("f32_as_bf16.npy", npy_bytes(vals), f32_to_bf16_bits(vals),
       want="bf16", type_="bf16")
    ok("f32_as_f16.npy", npy_bytes(vals), vals.astype("<f2").view("<u2"),
       want="f16", type_="f16")
    try:
        import ml_dtypes
        assert (vals.astype(ml_dtypes.bfloat16).view("<u2") ==
                f32_to_bf16_bits(vals)).all()
        for name, dt in [("f8e4m3", ml_dtypes.float8_e4m3fn),
                         ("f8e5m2", ml_dtypes.float8_e5m2)]:
            ok("f32_as_%s.npy" % name, npy_bytes(vals),
               vals.astype(dt).view("u1"), want=name, type_=name)
    except ImportError:
        pass
    raw16 = np.array([0x3F80, 0x7FC1, 0xFF80], "<u2")
    ok("u2_as_bf16.npy", npy_bytes(raw16), raw16, want="bf16", type_="bf16")
    raw8 = np.array([0x38, 0x7F, 0x80], "u1")
    ok("u1_as_f8e4m3.npy", npy_bytes(raw8), raw8, want="f8e4m3", type_="f8e4m3")
    ok("u1_as_f8e5m2.npy", npy_bytes(raw8), raw8, want="f8e5m2", type_="f8e5m2")
    ok("f64_exact_as_f32.npy", npy_bytes(a.astype("<f8")), a, want="f32")
    ok("i32_as_i64.npy", npy_bytes(t), t.astype("<i8"), want="i64")

    # Rejected.
    bad("big_endian.npy", npy_bytes(a.astype(">f4")), "big-endian")
    bad("complex.npy", npy_bytes(np.zeros(2, "<c8")), "unsupported dtype '<c8'")
    bad("unicode.npy", npy_bytes(np.array(["abc"], "<U3")),
        "unsupported dtype '<U3'")
    bad("object.npy", raw_npy(1, header("|O", (1,)), b"\0" * 8),
        "unsupported dtype '|O'")
    bad("structured.npy", npy_bytes(np.zeros(2, [("x", "<f4"), ("y", "<i4")])),
        "structured dtypes")
    bad("u2_no_want.npy", npy_bytes(raw16), "no element type was requested")
    bad("f64_inexact_as_f32.npy", npy_bytes(np.array([0.1])),
        "not representable in f32", want="f32")
    full = npy_bytes(a)
    bad("truncated_data.npy", full[:-3], "truncated")
    bad("truncated_header.npy", full[:40], "truncated")
    bad("trailing_bytes.npy", full + b"\0\0\0\0", "trailing bytes")
    bad("bad_magic.npy", b"\x93NUMPZ" + full[6:], "bad magic")
    bad("bad_version.npy", full[:6] + b"\x04\x00" + full[8:],
        "unsupported .npy format version 4.0")
    bad("overflow_shape.npy",
        raw_npy(1, header("<f4", (2**32, 2**32)), b""), "too large")
    bad("negative_dim.npy", raw_npy(1, header("<f4", (-1,)), b""),
        "negative dim")
    bad("missing_shape.npy",
        raw_npy(1, "{'descr': '<f4', 'fortran_order': False}", b""),
        "no 'shape' key")
    bad("empty.npy", b"", "empty file")

    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print("wrote %d files to %s" % (len(manifest), outdir))


def natural(dtype):
    return {"f8": "f64", "f4": "f32", "f2": "f16", "i8": "i64", "i4": "i32",
            "b1": "bool"}[dtype.str[1:]]


def verify(paths):
    failed = 0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - report anything numpy raises
            print("FAIL %s: np.load: %s" % (path, e))
            failed += 1
            continue
        again = npy_bytes(arr)
        if again != data:
            print("FAIL %s: differs from np.save of the loaded %s%s" %
                  (path, arr.dtype, arr.shape))
            failed += 1
        else:
            print("ok %s: %s%s" % (path, arr.dtype, list(arr.shape)))
    return 1 if failed else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "write":
        write(argv[2])
        return 0
    if len(argv) >= 3 and argv[1] == "verify":
        return verify(argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
