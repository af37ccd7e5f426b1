#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-19, ASan + UBSan) in build-fuzz/ and runs
# each for SECONDS on a scratch copy of its committed seed corpus, after
# replaying every committed regression input. Exits non-zero on any finding
# (crash, sanitizer report, broken oracle, timeout, memory blow-up), printing
# the reproducer; prints each target's executions. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   default 60 s, all targets
#   scripts/fuzz.sh 0                       replay regressions and corpus only
#
# Regression inputs live in test/fuzz/regressions/TARGET/; those named
# open-ORACLE--WHAT reproduce a bug that is not fixed yet: they must still
# fail, and fuzzing relaxes ORACLE meanwhile (open-crash--WHAT relaxes
# nothing). When one passes, its fix has landed: drop the open- prefix.
#
# Targets: frontend pattern report npy lowering.
# Environment: EIN_FUZZ_BUILD (default build-fuzz), EIN_FUZZ_WORK (scratch
# directory; default a new temporary one, kept when something was found),
# EIN_FUZZ_TIMEOUT (seconds per input, default 5), EIN_FUZZ_RSS_MB (default
# 2048), EIN_FUZZ_SEED (libFuzzer -seed; default 0, a new one per run),
# EIN_FUZZ_IGNORE (oracles to relax, for long runs past a known bug),
# EIN_FUZZ_JOBS (targets run side by side; default the host's cores, each
# target's output printed whole, in order, when all are done).
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
all_targets=(frontend pattern report npy lowering)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in
    *" $t "*) ;;
    *) echo "fuzz: unknown target '$t' (expected: ${all_targets[*]})" >&2; exit 2 ;;
  esac
done
case "$seconds" in
  ''|*[!0-9]*) echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac

build=${EIN_FUZZ_BUILD:-build-fuzz}
per_input=${EIN_FUZZ_TIMEOUT:-5}
# libFuzzer's random seed: 0 picks a new one each run (long runs); CI fixes
# one (scripts/test.sh) so that its runs are reproducible.
seed=${EIN_FUZZ_SEED:-0}
rss=${EIN_FUZZ_RSS_MB:-2048}

# Configure once (through ccache when it is installed: CMakeLists.txt).
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-19 \
    -DCMAKE_CXX_COMPILER=clang++-19 -DEIN_FUZZ=ON >/dev/null ||
    { echo "fuzz: cmake failed"; exit 1; }
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("ein-fuzz-$t"); done
start=$(date +%s)
cmake --build "$build" --target "${build_targets[@]}" || { echo "fuzz: build failed"; exit 1; }
echo "fuzz: build took $(( $(date +%s) - start )) s"

work=${EIN_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/ein-fuzz.XXXXXX")}
mkdir -p "$work"
# An uninstrumented libMLIR poisons memory it manages itself (false
# use-after-poison reports); real ASan errors are still reported.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allow_user_poisoning=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

max_len_of() {
  case "$1" in
    pattern) echo 256 ;;
    lowering) echo 2048 ;;
    *) echo 4096 ;;
  esac
}

# One target: replay its regressions, then fuzz it. Prints its findings and
# writes its summary line to $work/$t.summary (FAILED marks a finding).
summary_line() { echo "$*" >"$work/$t.summary"; }
fuzz_one() {
  local t=$1
  bin="$build/bin/ein-fuzz-$t"
  log="$work/$t.log"
  artifacts="$work/$t-findings"
  mkdir -p "$artifacts"
  common=(-timeout="$per_input" -rss_limit_mb="$rss" -malloc_limit_mb="$rss"
          -seed="$seed"
          -max_len="$(max_len_of "$t")" -artifact_prefix="$artifacts/"
          -print_final_stats=1)

  # 1. Every committed seed and regression input, once.
  replay=()
  [ -d "test/fuzz/regressions/$t" ] &&
    mapfile -t replay < <(find "test/fuzz/regressions/$t" -type f ! -name '*.md' | sort)
  # While a finding of an oracle is open (open-ORACLE--WHAT), the seeds and fuzzing relax
  # that oracle, so that it looks for other bugs instead of this one.
  relax=${EIN_FUZZ_IGNORE:-}
  for input in "${replay[@]}"; do
    name=$(basename "$input")
    case "$name" in
      open-*--*) oracle=${name#open-}; relax="$relax,${oracle%%--*}" ;;
    esac
  done

  # (Fuzzing starts by running the seed corpus anyway: replay it alone only
  # when there is no time to fuzz.)
  if [ "$seconds" -eq 0 ] &&
     ! EIN_FUZZ_IGNORE="$relax" "$bin" "${common[@]}" -runs=0 "test/fuzz/corpus/$t" \
       >"$log.replay" 2>&1; then
    echo "fuzz $t: FINDING while replaying the seed corpus"; tail -40 "$log.replay"
    summary_line "$t: FAILED on the seed corpus (log $log.replay)"; return
  fi
  # open-* inputs must still fail (replayed without relaxing anything);
  # all others must pass.
  regression_failed=""
  for input in "${replay[@]}"; do
    EIN_FUZZ_IGNORE= "$bin" "${common[@]}" "$input" >"$log.input" 2>&1
    input_status=$?
    case "$(basename "$input")" in
      open-*)
        if [ $input_status -eq 0 ]; then
          regression_failed="$input passes now: rename it without 'open-'"
          break
        fi ;;
      *)
        if [ $input_status -ne 0 ]; then
          regression_failed="$input fails again"
          tail -40 "$log.input"
          break
        fi ;;
    esac
  done
  if [ -n "$regression_failed" ]; then
    echo "fuzz $t: FINDING: regression $regression_failed"
    summary_line "$t: FAILED: regression $regression_failed"; return
  fi
  [ "$seconds" -eq 0 ] && { summary_line "$t: replayed corpus and ${#replay[@]} regressions, OK"; return; }

  # 2. Fuzz for the time given, on a scratch copy of the corpus.
  corpus="$work/$t-corpus"
  rm -rf "$corpus" && cp -r "test/fuzz/corpus/$t" "$corpus"
  EIN_FUZZ_IGNORE="$relax" "$bin" "${common[@]}" -max_total_time="$seconds" \
    -dict="test/fuzz/$t.dict" "$corpus" >"$log" 2>&1
  status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $status -ne 0 ]; then
    repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    kind=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer): [a-zA-Z-]+|runtime error:|ein-fuzz finding: [a-z0-9-]+' "$log" || true)
    echo "fuzz $t: FINDING (${kind:-exit $status}) after ${execs:-?} executions"
    grep -m1 -B2 -A30 -E 'ERROR:|runtime error:|ein-fuzz finding:' "$log" | head -50
    echo "fuzz $t: reproducer: ${repro:-none written}; log: $log"
    summary_line "$t: FAILED (${kind:-exit $status}) after ${execs:-?} executions, reproducer ${repro:-?}"
  else
    summary_line "$t: ${execs:-?} executions in $seconds s, no finding"
  fi
}

# The targets run side by side, as many at a time as the host has cores
# (EIN_FUZZ_JOBS), each with its own output, printed in order once all are
# done: each fuzzes for the time given on a core of its own.
jobs=${EIN_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" >"$work/$t.out" 2>&1 &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
failed=0
summary=()
for t in "${targets[@]}"; do
  cat "$work/$t.out"
  line=$(cat "$work/$t.summary" 2>/dev/null || echo "$t: FAILED (no summary: the run itself died)")
  summary+=("$line")
  case "$line" in *FAILED*) failed=1 ;; esac
done

echo "fuzz summary:"
for line in "${summary[@]}"; do echo "  $line"; done
if [ $failed -ne 0 ]; then
  echo "fuzz: findings kept under $work"
  exit 1
fi
[ -z "${EIN_FUZZ_WORK:-}" ] && rm -rf "$work"
exit 0
