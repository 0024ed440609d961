#!/usr/bin/env bash
# Run every libFuzzer target of a -DHLB_FUZZ=ON build for a bounded time each, from its seed
# corpus (tests/fuzz/corpus) and its regressions (docs/reliability.md).
#
#   scripts/fuzz.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]     (default: every target)
#
# New inputs go to BUILD_DIR/fuzz-corpus/TARGET (the seeds are never written to); a crash,
# leak, sanitizer report or timeout leaves its input in BUILD_DIR/fuzz-artifacts/ and makes
# the script exit 1, naming it: copy it to tests/fuzz/regressions/TARGET/ once fixed, where
# every test run replays it. Prints each target's coverage and executions.
set -uo pipefail
build=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$build"/tests/fuzz/fuzz_*; do [ -x "$f" ] && targets+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no fuzz_* targets in $build/tests/fuzz (configure with CC=clang -DHLB_FUZZ=ON)" >&2; exit 2; }
mkdir -p "$build/fuzz-artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export HLB_MODELS=off
failed=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  corpus="$build/fuzz-corpus/$t"
  mkdir -p "$corpus"
  seeds=("$src/tests/fuzz/corpus/$t")
  [ -d "$src/tests/fuzz/regressions/$t" ] && seeds+=("$src/tests/fuzz/regressions/$t")
  log="$build/fuzz-artifacts/$t.log"
  "$bin" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$t-" >"$log" 2>&1
  rc=$?
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  if [ $rc -ne 0 ]; then
    failed=1
    echo "fuzz_$t: FAILED (exit $rc), $cov, ${runs:-?} runs; input: $(ls -t "$build"/fuzz-artifacts/"$t"-* 2>/dev/null | head -1); log: $log"
    grep -m3 -E 'ERROR|runtime error|SUMMARY' "$log"
  else
    echo "fuzz_$t: ok, $cov, ${runs:-?} runs in ${seconds} s"
  fi
done
exit $failed
