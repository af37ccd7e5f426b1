#!/usr/bin/env bash
# The CUDA back end on a GPU, in one command (docs/cuda.md, "On a GPU").
#
#   scripts/gpu-check.sh --prepare [EVERY]
#       On the CPU machine, after the build (needs build/bin/einc): runs every
#       EVERY-th case of the execution corpus (default 3) through
#       `einc run --target=cuda-emulated` (checked against numpy there) and
#       keeps each case's CUDA program and inputs, and writes the benchmark's
#       programs, all under build-gpu/ (carry it to the GPU machine).
#   scripts/gpu-check.sh [corpus|bench]
#       On the GPU machine (nvcc, PyTorch; no einc): compiles the kept programs
#       with nvcc, runs them, compares their results with numpy references
#       regenerated from the corpus's seeds, then times the benchmark against
#       PyTorch and prints its table. `corpus` or `bench` runs one half.
#
# Exit 0 when every program compiled and matched; 2 without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build-gpu
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
JOBS=${JOBS:-$(nproc)}

if [[ "${1:-}" == "--prepare" ]]; then
  every=${2:-3}
  einc=build/bin/einc
  [[ -x $einc ]] || { echo "gpu-check: build einc first (build/bin/einc)" >&2; exit 2; }
  rm -rf "$OUT"
  mkdir -p "$OUT/corpus" "$OUT/bench"
  python3 test/run/run_corpus.py --einc "$einc" --einc-arg=--target=cuda-emulated \
    --sample "$every" --save-cuda "$OUT/corpus" --jobs "$JOBS"
  # The runtime is the same in every program: kept once (the carry limit).
  python3 - "$OUT/corpus" <<'PY'
import os, sys
root = sys.argv[1]
marker = "\n// ---- the module\n"
runtime = None
for case in sorted(os.listdir(root)):
    path = os.path.join(root, case, "prog.cu")
    if not os.path.exists(path):
        continue
    text = open(path).read()
    head, sep, module = text.partition(marker)
    if not sep:
        continue
    if runtime is None:
        runtime = head
        open(os.path.join(root, "runtime.cuh"), "w").write(head)
    if head == runtime:
        open(path, "w").write('#include "../runtime.cuh"\n' + sep + module)
    # What the emulated run left: its binary, logs and results.
    for name in os.listdir(os.path.join(root, case)):
        if name in ("prog", "log.txt", "run.txt") or name.startswith("out"):
            os.unlink(os.path.join(root, case, name))
PY
  python3 bench/cuda_bench.py prepare --einc "$einc" "$OUT/bench"
  du -sh "$OUT"
  exit 0
fi

[[ -d $OUT/corpus ]] || { echo "gpu-check: no $OUT/: run scripts/gpu-check.sh --prepare on a machine with einc first" >&2; exit 2; }
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: skipped: no CUDA device" >&2
  exit 2
fi
nvidia-smi -L
what=${1:-all}
status=0
if [[ $what == all || $what == corpus ]]; then
  start=$(date +%s)
  ls -d "$OUT"/corpus/*/ | xargs -P "$JOBS" -I{} sh -c \
    "cd {} && [ -f prog.cu ] && ($NVCC -std=c++17 -O2 --fmad=false -arch=native -x cu prog.cu -o prog -lcublasLt > nvcc.log 2>&1 || echo 'nvcc failed:' {})" || true
  echo "nvcc: $(ls "$OUT"/corpus/*/prog 2>/dev/null | wc -l) programs built in $(( $(date +%s) - start )) s"
  python3 test/run/run_corpus.py --replay-cuda "$OUT/corpus" --jobs "$JOBS" || status=1
fi
if [[ $what == all || $what == bench ]]; then
  python3 bench/cuda_bench.py run "$OUT/bench" --nvcc "$NVCC" || status=1
fi
exit $status
