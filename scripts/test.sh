#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs all tests: lit suites
# (parser, diagnostics, dialect, passes, examples, einops agreement, the
# execution corpora) and the GoogleTest unit tests; then the fuzz targets
# (scripts/fuzz.sh), each replaying its regressions and seed corpus and
# fuzzing for EIN_CI_FUZZ_SECONDS (default 20 s; 0 replays only, "off"
# skips), each target counted as one test. CI fuzzes four targets; the
# lowering target, whose sanitized build of the MLIR pipeline alone took
# about four minutes, is replayed by a lit test instead
# (test/fuzz/replay-lowering.test) and fuzzed with --full. Ends with the 10
# slowest tests and "N passed, M failed".
#
#   scripts/test.sh          CI's run (within 35 minutes on 2 cores; its
#                            build is ~12 of them with a cold ccache, 1-2
#                            with a warm one, CMakeLists.txt): every
#                            execution-corpus case runs fused; the other
#                            variants (size-generic, no fusion, small tiles,
#                            the emulated CUDA target) run a rotating sample that
#                            moves with every commit (test/lit.cfg.py,
#                            %rotate), and the fuzz seed moves with it.
#   scripts/test.sh --full   everything: every corpus case in every variant,
#                            the long differential-testing sample, 120 s of
#                            fuzzing per target, all five targets. Run it
#                            before resolving an issue that touches lowering
#                            or a back end (about an hour on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
for arg in "$@"; do
  case "$arg" in
    --full) full=1 ;;
    *) echo "test.sh: unknown argument '$arg' (expected --full)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
cmake -S . -B build -G Ninja >/dev/null
PY=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' build/CMakeCache.txt)
bash scripts/setup.sh "${PY:-python3}"
cmake --build build
# The commit count picks the rotating samples' offset and the fuzz seed:
# deterministic for a commit, different for the next.
commits=$(git rev-list --count HEAD 2>/dev/null || echo 0)
set +e
lit_params=()
[ "$full" = 1 ] && lit_params=(--param ein_full=1)
"${PY:-python3}" /usr/lib/llvm-19/build/utils/lit/lit.py -sv --time-tests \
  "${lit_params[@]}" build/test | tee build/lit.log
status=${PIPESTATUS[0]}
# The Python package's tests (test/python, pytest; docs/python.md) over the
# build tree's package, counted with lit's.
pytest_start=$(date +%s)
PYTHONPATH=build/python EIN_TEST_FULL=$full EIN_TEST_ROTATE=$commits \
  "${PY:-python3}" -m pytest -q -p no:cacheprovider test/python 2>&1 |
  tee build/pytest.log
[ "${PIPESTATUS[0]}" -ne 0 ] && status=1
pytest_time=$(( $(date +%s) - pytest_start ))
default_fuzz=20
fuzz_targets=(frontend pattern report npy)
if [ "$full" = 1 ]; then
  default_fuzz=120
  fuzz_targets=() # all of them
fi
fuzz_seconds=${EIN_CI_FUZZ_SECONDS:-$default_fuzz}
fuzz_start=$(date +%s)
if [ "$fuzz_seconds" != off ]; then
  EIN_FUZZ_SEED=${EIN_FUZZ_SEED:-$(( commits + 1 ))} bash scripts/fuzz.sh "$fuzz_seconds" "${fuzz_targets[@]}" 2>&1 |
    tee build/fuzz.log
  fuzz_status=${PIPESTATUS[0]}
  [ "$fuzz_status" -ne 0 ] && status=1
fi
fuzz_time=$(( $(date +%s) - fuzz_start ))
set -e
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' build/lit.log | tail -1)
failed=$({ grep -E '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *:' build/lit.log || true; } |
         awk -F: '{ s += $2 } END { print s + 0 }')
# pytest's summary line: "N passed, M failed, K errors in T s" (a run that
# stopped before it, e.g. on an import error, counts as one failure).
pytest_ok=$(tail -1 build/pytest.log | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || true)
pytest_failed=$({ tail -1 build/pytest.log | grep -oE '[0-9]+ (failed|error|errors)' || true; } |
                awk '{ s += $1 } END { print s + 0 }')
if [ -z "$pytest_ok" ] && [ "$pytest_failed" -eq 0 ]; then pytest_failed=1; fi
passed=$(( ${passed:-0} + ${pytest_ok:-0} ))
failed=$(( ${failed:-0} + pytest_failed ))
if [ "$fuzz_seconds" != off ]; then
  fuzz_ok=$(grep -cE '^  [a-z]+: .*(no finding|OK)$' build/fuzz.log || true)
  fuzz_failed=$(grep -cE '^  [a-z]+: FAILED' build/fuzz.log || true)
  # A build or usage failure of fuzz.sh prints no per-target line.
  [ "$fuzz_status" -ne 0 ] && [ "$fuzz_failed" -eq 0 ] && fuzz_failed=1
  passed=$(( ${passed:-0} + fuzz_ok ))
  failed=$(( ${failed:-0} + fuzz_failed ))
fi
# The 10 slowest tests of this run (lit's timings, and the fuzz step as
# one), so that growth is visible.
echo "10 slowest tests:"
{
  sed -n '/^Slowest Tests:/,/^Tests Times:/p' build/lit.log |
    sed -n 's/^ *\([0-9.]*\)s: ein :: \(.*\)$/\1 \2/p'
  echo "$pytest_time pytest test/python"
  [ "$fuzz_seconds" != off ] && echo "$fuzz_time scripts/fuzz.sh (build, replay and ${fuzz_seconds} s per target)"
} | sort -rn | head -10 | awk '{ printf "  %8.1f s  %s\n", $1, $2 }'
echo "${passed:-0} passed, ${failed:-0} failed"
exit "$status"
