#!/usr/bin/env python3
"""Builds the CUDA sources the C++ API cached (emulated) with nvcc, as the
API builds them for a GPU (lib/Target/CUDA/Build.cpp's shared-library
command line, for sm_90): the device support library and the kernels'
shims must compile under nvcc too, not only under the emulation.

A cache entry NAME.key holds the library's whole source, then a line
"cuda-library" and the build's stamp (lib/Target/CUDA/SharedLibrary.cpp).

Usage: nvcc_cached_sources.py --cache DIR --nvcc PATH --out DIR --match TEXT...
Builds each cached source containing one of the TEXTs; prints
"built N: ok" or the compiler's errors, and exits 1 on a failure.
"""
import argparse
import glob
import os
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cache", required=True)
    p.add_argument("--nvcc", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--match", nargs="+", required=True)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sources = []
    for key in sorted(glob.glob(os.path.join(args.cache, "*.key"))):
        text = open(key, encoding="utf-8", errors="replace").read()
        at = text.rfind("\ncuda-library\n")
        if at < 0:
            continue
        source = text[:at]
        if any(m in source for m in args.match):
            sources.append((os.path.basename(key)[:-4], source))
    failed = 0
    for name, source in sources:
        cu = os.path.join(args.out, name + ".cu")
        with open(cu, "w") as f:
            f.write(source)
        so = os.path.join(args.out, name + ".so")
        cmd = [args.nvcc, "-std=c++17", "-O3", "--fmad=false", "-arch=sm_90",
               "-Xcompiler", "-fPIC", "-shared", "-cudart", "shared",
               "-x", "cu", cu, "-o", so, "-lcublasLt"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            failed += 1
            print(f"{name}: nvcc failed ({run.returncode}):\n{run.stderr[-3000:]}")
            continue
        syms = subprocess.run(["nm", "-D", "--defined-only", so],
                              capture_output=True, text=True).stdout
        exported = sorted(l.split()[-1] for l in syms.splitlines()
                          if l.split()[-1].startswith("ein_api_"))
        print(f"{name}: {' '.join(exported)}")
    print(f"built {len(sources)}: {'ok' if not failed else f'{failed} failed'}")
    return 1 if failed or not sources else 0


if __name__ == "__main__":
    sys.exit(main())
