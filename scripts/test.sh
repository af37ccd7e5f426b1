#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs all tests: lit suites
# (parser, diagnostics, dialect, passes, examples, einops agreement) and the
# GoogleTest unit tests. Ends with "N passed, M failed".
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
set -e
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' build/lit.log | tail -1)
failed=$({ grep -E '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *:' build/lit.log || true; } |
         awk -F: '{ s += $2 } END { print s + 0 }')
echo "${passed:-0} passed, ${failed:-0} failed"
exit "$status"
