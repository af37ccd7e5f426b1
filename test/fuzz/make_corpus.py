#!/usr/bin/env python3
"""Writes candidate seed inputs for the fuzz targets (docs/fuzzing.md).

    make_corpus.py OUTDIR

writes OUTDIR/{frontend,report,lowering,pattern,npy}/ with one file per
candidate, named by content hash. The committed corpus under
test/fuzz/corpus/ is the coverage-minimal subset that libFuzzer's merge keeps:

    ein-fuzz-TARGET -merge=1 test/fuzz/corpus/TARGET OUTDIR/TARGET

(for lowering also with -use_counters=0: edges only, fewer files, so that CI
replays its corpus in about a minute).

Sources: examples/, test/einc/*.ein, the programs of test/run/run_corpus.py
(einops, opt_einsum, generated, examples, negative cases; `--dim` bindings
become `#! dim NAME=INT` lines) and of test/einops/einops_agreement.py
(accepted and rejected cases), the patterns in all of them, and .npy files:
every dtype numpy can save (also the ones ein rejects), both orders, format
versions 1.0, 2.0 and 3.0, 0-d, empty and larger shapes, truncations and
the malformed files of the run corpus's negative cases; and .npz archives
(np.savez, np.savez_compressed, zipfile's ZIP64 records, a bzip2 member),
which the npy target reads too.
"""

import glob
import hashlib
import io
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "run"))
sys.path.insert(0, os.path.join(ROOT, "test", "einops"))


def write(outdir: str, target: str, data: bytes) -> None:
    path = os.path.join(outdir, target)
    os.makedirs(path, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(path, name), "wb") as f:
        f.write(data)


def ein_sources() -> list[str]:
    sources = []
    for pattern in ["examples/*.ein", "examples/*/*.ein", "test/einc/*.ein", "test/run/*.ein"]:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                sources.append(f.read())
    return sources


def run_corpus_cases():
    import run_corpus

    np.seterr(all="ignore")
    cases, _ = run_corpus.all_run_cases()
    return run_corpus, cases


def einops_programs() -> list[str]:
    import einops_agreement as ea

    programs = []
    for case in ea.all_cases():
        truth = ea.einops_truth(case)
        ret = truth.shape if truth.accepted else case.shapes[0]
        try:
            programs.append(ea.ein_program(case, ret))
        except AssertionError:
            pass
    return programs


def npy_files(run_corpus, cases) -> list[bytes]:
    files = []

    def save(arr, version=None):
        buf = io.BytesIO()
        np.lib.format.write_array(buf, arr, version=version, allow_pickle=False)
        return buf.getvalue()

    rng = np.random.default_rng(8)
    dtypes = ["<f8", "<f4", "<f2", "<i8", "<i4", "|b1", "<u2", "|u1",
              ">f4", ">i8", "<i2", "|i1", "<u4", "<u8", "<c8", "<c16", "|S3", "<U2"]
    shapes = [(), (0,), (3,), (2, 3), (2, 0, 3), (1, 2, 1, 2)]
    for dt in dtypes:
        for shape in shapes:
            arr = (rng.standard_normal(shape) * 100).astype(dt)
            for order in ["C", "F"]:
                a = np.asfortranarray(arr) if order == "F" else np.ascontiguousarray(arr)
                for version in [(1, 0), (2, 0), (3, 0)]:
                    data = save(a, version)
                    files.append(data)
    # Special values and truncations of a few files.
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], dtype="<f4")
    files.append(save(special))
    files.append(save(special.astype("<f8")))
    files.append(save(np.array([2**31, -2**31 - 1, 2**63 - 1], dtype="<i8")))
    base = save(np.arange(12, dtype="<f4").reshape(3, 4))
    for cut in [0, 6, 8, 10, 20, 64, len(base) - 1]:
        files.append(base[:cut])
    # Inputs of the run corpus, malformed ones included.
    for case in cases:
        for item in case.inputs:
            data = item[1]
            if isinstance(data, np.ndarray):
                data = run_corpus.npy_bytes(data)
            if isinstance(data, (bytes, bytearray)) and len(data) <= 4096:
                files.append(bytes(data))
    return files


def npz_files() -> list[bytes]:
    import zipfile

    def savez(save, **arrays):
        buf = io.BytesIO()
        save(buf, **arrays)
        return buf.getvalue()

    x = np.array([1.5, -2.0], np.float32)
    files = [savez(np.savez, x=x), savez(np.savez_compressed, x=x),
             savez(np.savez, a=np.arange(6, dtype="<i8").reshape(2, 3),
                   b=np.array(True), c=np.zeros((0, 2), "<f2")),
             savez(np.savez_compressed, w=np.asfortranarray(
                 np.arange(6, dtype="<f8").reshape(2, 3)), u=np.array(["s"]))]
    # ZIP64 records everywhere, as zipfile writes them for big archives.
    limits = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 16, 1
    try:
        files.append(savez(np.savez_compressed, x=x, y=x))
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limits
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as z:
        z.writestr("x.npy", savez(lambda f, x: np.save(f, x), x=x))
    files.append(buf.getvalue())
    return files


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    run_corpus, cases = run_corpus_cases()
    programs = ein_sources() + einops_programs()
    for case in cases:
        text = case.source
        if case.dims:
            text += "".join(f"#! dim {n}={v}\n" for n, v in case.dims)
        programs.append(text)
    patterns = set()
    for text in programs:
        data = text.encode("utf-8", errors="surrogateescape")
        for target in ["frontend", "report", "lowering"]:
            write(outdir, target, data)
        patterns.update(re.findall(r'"([^"\n]*)"', text))
    for p in sorted(patterns):
        write(outdir, "pattern", p.encode("utf-8", errors="surrogateescape"))
    for data in npy_files(run_corpus, cases) + npz_files():
        write(outdir, "npy", data)
    for target in sorted(os.listdir(outdir)):
        print(f"{target}: {len(os.listdir(os.path.join(outdir, target)))} candidates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
