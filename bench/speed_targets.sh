#!/usr/bin/env bash
# Runs the benchmarks behind issue 31's CPU speed targets one after another,
# in one run, into one markdown report (each table's peers are timed beside
# einc in the same process, as every bench here does).
#
#   bash bench/speed_targets.sh [BUILD_DIR] > targets.md
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BUILD="${1:-$HERE/../build}"
EINC="$BUILD/bin/einc"
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
isa=SSE
case "$flags" in *" avx2"*) isa=AVX2 ;; esac
case "$flags" in *" avx512f"*) isa=AVX-512 ;; esac
extra=""
for f in avx512_bf16 avx512_vnni amx_bf16 avx512_fp16; do
  case "$flags" in *" $f"*) extra="$extra $f" ;; esac
done
echo "# Speed targets, one run"
echo
echo "Host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
  "$(nproc) cores, $isa ($extra ); $(date -u '+%Y-%m-%d %H:%M UTC');" \
  "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "## GEMMs, norms, attention, last-axis sums (run_bench.py)"
python3 "$HERE/run_bench.py" --einc "$EINC" --markdown --only \
"matmul 2048^3,matmul 1000x1001x999,matmul 64x64x64,bf16 matmul,int8 matmul,\
reduce sum last axis (16,reduce mean last axis (16,layer norm,causal attention"
echo
echo "## Max and min over the last axis (math_bench.py)"
python3 "$HERE/math_bench.py" --einc "$EINC" --only "over last axis (16384"
echo
echo "## The GPT-2 block training step (train_bench.py)"
python3 "$HERE/train_bench.py" --einc "$EINC" --d-model 512 --seq 256 \
  --heads 8 --steps 12 --warmup-steps 3 --markdown \
  --peak-flops "${EIN_PEAK_FLOPS:-332e9}"
echo
echo "## C++ API per-call overhead (cpp_api_overhead.py)"
python3 "$HERE/cpp_api_overhead.py" --bench "$BUILD/bin/EinAPIBench" --markdown
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
