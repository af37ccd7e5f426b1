#!/usr/bin/env bash
# The CUDA back end on a GPU, in one command (docs/cuda.md, "On a GPU").
#
#   scripts/gpu-check.sh --prepare [EVERY]
#       On the CPU machine, after the build (needs build/bin/einc): runs every
#       EVERY-th case of the execution corpus (default 3) through
#       `einc run --target=cuda-emulated` (checked against numpy there) and
#       keeps each case's CUDA program and inputs, and writes the benchmark's
#       programs, all under build-gpu/ (carry it to the GPU machine).
#   scripts/gpu-check.sh [corpus|bench|nccl]
#       On the GPU machine (nvcc, PyTorch; no einc): compiles the kept programs
#       with nvcc, runs them, compares their results with numpy references
#       regenerated from the corpus's seeds, then times the benchmark against
#       PyTorch and prints its table; then the NCCL communicator
#       (scripts/nccl-check.cu, built by nvcc from its sources: einc needs
#       LLVM, which the GPU machine lacks): 1 rank on the GPU, then 2 ranks
#       on the same GPU (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL >= 2.30; skipped
#       by name before), each collective equal to the host communicator's
#       result, and a rank that never arrives an error, not a hang; then
#       the generated CUDA source of a sharded MLP (prepared here by
#       `einc emit --stage=cuda`) built with nccl-check.cu and run on 1 rank
#       and on 2 ranks of the GPU, its all-reduce on NCCL, against the CPU's
#       unsharded result (`mesh`).
#       `corpus`, `bench`, `nccl` or `mesh` runs one part.
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
  # The NCCL check builds on the GPU machine with fmt's headers (header-only).
  fmt=$(echo '#include <fmt/format.h>' | c++ -x c++ -E -M - 2>/dev/null | tr ' ' '\n' | grep -m1 '/fmt/format.h' || true)
  if [[ -n $fmt ]]; then
    mkdir -p "$OUT/nccl/include" && cp -r "$(dirname "$fmt")" "$OUT/nccl/include/"
  else
    echo "gpu-check: fmt's headers not found: the NCCL check will be skipped" >&2
  fi
  # A sharded MLP's generated source on tp=1 and tp=2, its inputs and the
  # CPU's unsharded result, for the `mesh` part.
  mkdir -p "$OUT/mesh"
  python3 -c "import numpy as np; r = np.random.default_rng(30); [np.save('$OUT/mesh/' + n + '.npy', r.standard_normal(s).astype(np.float32)) for n, s in [('x', (4, 8)), ('w_fc', (8, 16)), ('w_proj', (16, 8))]]"
  $einc run test/run/Inputs/mesh/mlp.ein --fn mlp --mesh tp=1 --ranks 1 --simulate \
    --in x="$OUT/mesh/x.npy" --in w_fc="$OUT/mesh/w_fc.npy" --in w_proj="$OUT/mesh/w_proj.npy" --out "$OUT/mesh/want.npy"
  python3 -c "import numpy as np; [np.load('$OUT/mesh/' + n + '.npy').tofile('$OUT/mesh/' + n + '.bin') for n in ('x', 'w_fc', 'w_proj', 'want')]"
  for n in 1 2; do
    $einc emit --stage=cuda test/run/Inputs/mesh/mlp.ein --fn mlp --mesh tp=$n \
      --dim b=4 --dim d=8 --dim f=16 > "$OUT/mesh/mlp-$n.cu"
  done
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
  # Again, each program called 3 more times (direct, captured into a CUDA
  # Graph, replayed) before it writes its results (docs/cuda.md, "CUDA
  # Graphs"): failures here and not above are the graphs'.
  echo "corpus again through CUDA Graphs (EIN_GRAPH_REPEAT=3):"
  EIN_GRAPH_REPEAT=3 python3 test/run/run_corpus.py --replay-cuda "$OUT/corpus" \
    --jobs "$JOBS" || status=1
fi
if [[ $what == all || $what == bench ]]; then
  python3 bench/cuda_bench.py run "$OUT/bench" --nvcc "$NVCC" || status=1
fi
if [[ $what == all || $what == nccl ]]; then
  if [[ ! -d $OUT/nccl/include/fmt ]]; then
    echo "nccl: skipped: no fmt headers in $OUT/nccl (see --prepare)"
  elif ! $NVCC -std=c++17 -O1 -Xcompiler -fno-exceptions -DFMT_HEADER_ONLY -Iinclude \
      -I"$OUT/nccl/include" scripts/nccl-check.cu lib/Target/CUDA/NCCLCommunicator.cpp \
      lib/Target/CUDA/NCCLEmulation.cpp lib/Runtime/Communicator.cpp \
      lib/Runtime/SimulatedRanks.cpp lib/Runtime/FloatConvert.cpp lib/Support/Error.cpp \
      -o "$OUT/nccl/nccl-check" -ldl -lpthread > "$OUT/nccl/nvcc.log" 2>&1; then
    echo "nccl: nvcc failed:"; tail -20 "$OUT/nccl/nvcc.log"; status=1
  else
    # PyTorch's NCCL when the loader's own search finds none.
    if [[ -z ${EIN_NCCL_LIBRARY:-} ]]; then
      lib=$(python3 -c "import glob, site; print(next(iter(sorted(p for d in site.getsitepackages() for p in glob.glob(d + '/nvidia/**/libnccl.so.2', recursive=True))), ''))" 2>/dev/null || true)
      [[ -n $lib ]] && export EIN_NCCL_LIBRARY=$lib
    fi
    timeout 120 "$OUT/nccl/nccl-check" 1 || status=1
    rc=0; NCCL_MULTI_RANK_GPU_ENABLE=1 timeout 180 "$OUT/nccl/nccl-check" 2 || rc=$?
    [[ $rc == 0 || $rc == 3 ]] || status=1
  fi
fi
if [[ $what == all || $what == mesh ]]; then
  if [[ ! -d $OUT/nccl/include/fmt || ! -f $OUT/mesh/mlp-2.cu ]]; then
    echo "mesh: skipped: no fmt headers or generated sources in $OUT (see --prepare)"
  else
    if [[ -z ${EIN_NCCL_LIBRARY:-} ]]; then
      lib=$(python3 -c "import glob, site; print(next(iter(sorted(p for d in site.getsitepackages() for p in glob.glob(d + '/nvidia/**/libnccl.so.2', recursive=True))), ''))" 2>/dev/null || true)
      [[ -n $lib ]] && export EIN_NCCL_LIBRARY=$lib
    fi
    for n in 1 2; do
      if ! $NVCC -std=c++17 -O1 --fmad=false -arch=native -Xcompiler -fno-exceptions \
          -DFMT_HEADER_ONLY -DEIN_MESH_CHECK -Iinclude -I"$OUT/nccl/include" \
          scripts/nccl-check.cu lib/Runtime/CollectiveCalls.cpp \
          lib/Target/CUDA/NCCLCommunicator.cpp lib/Target/CUDA/NCCLEmulation.cpp \
          lib/Runtime/Communicator.cpp lib/Runtime/SimulatedRanks.cpp \
          lib/Runtime/FloatConvert.cpp lib/Support/Error.cpp -x cu "$OUT/mesh/mlp-$n.cu" \
          -o "$OUT/mesh/mesh-check-$n" -lcublasLt -ldl -lpthread > "$OUT/mesh/nvcc-$n.log" 2>&1; then
        echo "mesh: nvcc failed:"; tail -20 "$OUT/mesh/nvcc-$n.log"; status=1; continue
      fi
      rc=0; NCCL_MULTI_RANK_GPU_ENABLE=1 timeout 180 "$OUT/mesh/mesh-check-$n" mesh $n "$OUT/mesh" || rc=$?
      [[ $rc == 0 || ($rc == 3 && $n == 2) ]] || status=1
    done
  fi
fi
exit $status
