#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs all tests: lit suites
# (parser, diagnostics, dialect, passes, examples, einops agreement) and the
# GoogleTest unit tests; then the fuzz targets (scripts/fuzz.sh), each replaying
# its regressions and seed corpus and fuzzing for EIN_CI_FUZZ_SECONDS (60 s;
# 0 replays only, "off" skips) with a fixed seed (EIN_FUZZ_SEED, default 1),
# each target counted as one test. Ends with
# "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja >/dev/null
PY=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' build/CMakeCache.txt)
bash scripts/setup.sh "${PY:-python3}"
cmake --build build
set +e
"${PY:-python3}" /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/test | tee build/lit.log
status=${PIPESTATUS[0]}
fuzz_seconds=${EIN_CI_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" != off ]; then
  EIN_FUZZ_SEED=${EIN_FUZZ_SEED:-1} bash scripts/fuzz.sh "$fuzz_seconds" 2>&1 | tee build/fuzz.log
  fuzz_status=${PIPESTATUS[0]}
  [ "$fuzz_status" -ne 0 ] && status=1
fi
set -e
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' build/lit.log | tail -1)
failed=$({ grep -E '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *:' build/lit.log || true; } |
         awk -F: '{ s += $2 } END { print s + 0 }')
if [ "$fuzz_seconds" != off ]; then
  fuzz_ok=$(grep -cE '^  [a-z]+: .*(no finding|OK)$' build/fuzz.log || true)
  fuzz_failed=$(grep -cE '^  [a-z]+: FAILED' build/fuzz.log || true)
  # A build or usage failure of fuzz.sh prints no per-target line.
  [ "$fuzz_status" -ne 0 ] && [ "$fuzz_failed" -eq 0 ] && fuzz_failed=1
  passed=$(( ${passed:-0} + fuzz_ok ))
  failed=$(( ${failed:-0} + fuzz_failed ))
fi
echo "${passed:-0} passed, ${failed:-0} failed"
exit "$status"
