#!/usr/bin/env bash
# scripts/lsan-tracer-retry.sh: a tracer crash is run once more; a second one, a leak report, a
# failed test and a skip (77) come back as they are.
#   lsan_tracer_retry.sh RETRY_SCRIPT SCRATCH_DIR
set -u
retry=$1
dir=$2
rm -rf "$dir" && mkdir -p "$dir"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# A fake test binary: its behaviour per run is read from $dir/plan, one word a line.
cat >"$dir/fake" <<'FAKE'
#!/usr/bin/env bash
dir=$(dirname "$0")
n=$(($(cat "$dir/runs" 2>/dev/null || echo 0) + 1))
echo "$n" >"$dir/runs"
case $(sed -n "${n}p" "$dir/plan") in
  ok) echo "[  PASSED  ] 1 test(s)."; exit 0 ;;
  tracer) echo "[  PASSED  ] 1 test(s)."
    echo "Tracer caught signal 11: addr=0xc50 pc=0x1 sp=0x2" >&2
    echo "==1==LeakSanitizer has encountered a fatal error." >&2; exit 134 ;;
  leak) echo "==1==ERROR: LeakSanitizer: detected memory leaks" >&2; exit 23 ;;
  fail) echo "[  FAILED  ] 1 test(s)."; exit 1 ;;
  skip) exit 77 ;;
esac
FAKE
chmod +x "$dir/fake"

# expect PLAN EXPECTED_RC EXPECTED_RUNS
expect() {
  printf '%s\n' $1 >"$dir/plan"
  rm -f "$dir/runs"
  "$retry" "$dir/fake" >/dev/null 2>&1
  local rc=$? runs
  runs=$(cat "$dir/runs")
  [ "$rc" -eq "$2" ] || fail "plan '$1': exit $rc, expected $2"
  [ "$runs" -eq "$3" ] || fail "plan '$1': $runs runs, expected $3"
}
expect "ok" 0 1
expect "tracer ok" 0 2
expect "tracer tracer" 134 2
expect "leak ok" 23 1
expect "fail ok" 1 1
expect "skip ok" 77 1
expect "tracer fail" 1 2
[ "$fails" -eq 0 ] && echo "lsan-tracer-retry: 7 cases as expected"
exit $((fails > 0))
