#!/bin/sh
# Usage: partition_test.sh CASE HLB_BINARY. Exit 0 pass, 1 fail, 77 skip.
set -u
case_name=$1
hlb=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/good.json" <<'JSON'
{"items": 1000000,
 "pus": [
  {"name": "gpu0", "time": {"const": 0.002, "linear": 1e-7}},
  {"name": "gpu1", "time": {"const": 0.003, "linear": 1.5e-7, "quadratic": 1e-14}},
  {"name": "cpu0", "time": {"linear": 2e-6, "xlogx": 1e-8}, "min_block": 1000},
  {"name": "cpu1", "time": {"linear": 3e-6, "cubic": 1e-20}, "max_block": 20000, "ready_s": 0.01}
 ]}
JSON

# expect_malformed NAME 'JSON TEXT' 'substring of the message'
expect_malformed() {
  printf '%s\n' "$2" > "$tmp/$1.json"
  "$hlb" partition "$tmp/$1.json" --items 100 > "$tmp/out" 2> "$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "$1: exit $rc, expected 2 ($(cat "$tmp/err"))"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "$1: expected one line on stderr: $(cat "$tmp/err")"
  grep -qF -- "$3" "$tmp/err" || fail "$1: message '$(cat "$tmp/err")' lacks '$3'"
  [ -s "$tmp/out" ] && fail "$1: printed a result"
  return 0
}

expect_usage() {
  "$hlb" partition "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "'$*': exit $rc, expected 2"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "'$*': expected one line on stderr"
  return 0
}

case $case_name in
good)
  "$hlb" partition "$tmp/good.json" > "$tmp/out" || fail "exit $?"
  for n in gpu0 gpu1 cpu0 cpu1; do grep -q "^$n " "$tmp/out" || fail "no row for $n"; done
  grep -q '^makespan_s ' "$tmp/out" || fail "no makespan line"
  sum=$(awk '$1 ~ /^(gpu|cpu)/ {s += $2} END {print s}' "$tmp/out")
  [ "$sum" = 1000000 ] || fail "items sum to $sum, not 1000000"
  # --items overrides the file; granularity 1000 makes every block a multiple except one.
  "$hlb" partition "$tmp/good.json" --items 5000 --granularity 1000 > "$tmp/out" || fail "exit $?"
  awk '$1 ~ /^(gpu|cpu)/ {s += $2} END {exit s != 5000}' "$tmp/out" || fail "--items ignored"
  ;;
json)
  command -v python3 > /dev/null || exit 77
  "$hlb" partition "$tmp/good.json" --json --granularity 64 --items 999999 > "$tmp/out" ||
    fail "exit $?"
  python3 - "$tmp/out" <<'PY' || fail "json check"
import json, sys
d = json.load(open(sys.argv[1]))
pus = d["pus"]
assert [p["name"] for p in pus] == ["gpu0", "gpu1", "cpu0", "cpu1"], pus
assert all(isinstance(p["items"], int) for p in pus)
assert sum(p["items"] for p in pus) == 999999
# granularity 64: every block a multiple of 64 except one that also holds 999999 % 64
assert sum(1 for p in pus if p["items"] % 64 != 0) == 1
assert abs(max(p["finish_s"] for p in pus if p["items"] > 0) - d["makespan_s"]) <= 1e-15
assert pus[3]["items"] <= 20000 and (pus[2]["items"] == 0 or pus[2]["items"] >= 1000)
PY
  ;;
malformed)
  expect_malformed syntax '{"pus": [' 'not valid JSON'
  expect_malformed toplevel '[1, 2]' 'top level must be an object'
  expect_malformed nopus '{"items": 5}' 'pus: required member is missing'
  expect_malformed pusnotarray '{"pus": {}}' 'pus: must be an array'
  expect_malformed emptypus '{"pus": []}' 'at least one PU'
  expect_malformed unknowntop '{"pus": [], "itemz": 3}' 'itemz: unknown member'
  expect_malformed punotobject '{"pus": [3]}' 'pus[0]: must be an object'
  expect_malformed noname '{"pus": [{"time": {"linear": 1}}]}' 'pus[0].name: required'
  expect_malformed emptyname '{"pus": [{"name": "", "time": {"linear": 1}}]}' 'pus[0].name'
  expect_malformed notime '{"pus": [{"name": "a"}]}' 'pus[0].time: required'
  expect_malformed badterm '{"pus": [{"name": "a", "time": {"quartic": 1}}]}' \
    'pus[0].time.quartic: unknown member'
  expect_malformed badcoef '{"pus": [{"name": "a", "time": {"linear": "fast"}}]}' \
    'pus[0].time.linear: must be a number'
  expect_malformed unknownpu '{"pus": [{"name": "a", "time": {"linear": 1}, "speed": 2}]}' \
    'pus[0].speed: unknown member'
  expect_malformed decreasing \
    '{"pus": [{"name": "a", "time": {"linear": 1}}, {"name": "slow", "time": {"const": 5, "linear": -0.01}}]}' \
    "pus[1].time ('slow')"
  expect_malformed decreasing2 \
    '{"pus": [{"name": "a", "time": {"const": 10, "linear": 1, "quadratic": -0.5, "cubic": 0.02}}]}' \
    'decreases at x ='
  expect_malformed negative '{"pus": [{"name": "a", "time": {"const": -5, "linear": 1}}]}' \
    'time of 1 item is negative'
  expect_malformed dupname \
    '{"pus": [{"name": "a", "time": {"linear": 1}}, {"name": "a", "time": {"linear": 2}}]}' \
    "'a' is already the name of pus[0]"
  expect_malformed minmax \
    '{"pus": [{"name": "a", "time": {"linear": 1}, "min_block": 10, "max_block": 5}]}' \
    'min_block 10 is larger than max_block 5'
  expect_malformed negmin '{"pus": [{"name": "a", "time": {"linear": 1}, "min_block": -1}]}' \
    'pus[0].min_block: must be an integer'
  expect_malformed fracitems '{"items": 2.5, "pus": [{"name": "a", "time": {"linear": 1}}]}' \
    'items: must be an integer'
  expect_malformed zeroitems '{"items": 0, "pus": [{"name": "a", "time": {"linear": 1}}]}' \
    'items: must be >= 1'
  expect_malformed badready '{"pus": [{"name": "a", "time": {"linear": 1}, "ready_s": -1}]}' \
    'pus[0].ready_s: must be in'
  # A missing file and a file without items (and no --items) are input errors too.
  "$hlb" partition "$tmp/absent.json" --items 3 2> "$tmp/err" > /dev/null
  [ $? -eq 2 ] && grep -q 'cannot open' "$tmp/err" || fail "missing file"
  printf '{"pus": [{"name": "a", "time": {"linear": 1}}]}' > "$tmp/noitems.json"
  "$hlb" partition "$tmp/noitems.json" 2> "$tmp/err" > /dev/null
  [ $? -eq 2 ] && grep -q 'missing --items' "$tmp/err" || fail "no items"
  ;;
usage)
  expect_usage
  expect_usage "$tmp/good.json" --bogus
  expect_usage "$tmp/good.json" --items abc
  expect_usage "$tmp/good.json" --items 0
  expect_usage "$tmp/good.json" --granularity 0
  expect_usage "$tmp/good.json" --granularity
  expect_usage "$tmp/good.json" "$tmp/good.json"
  "$hlb" partition --help | grep -q '^usage: hlb partition' || fail "--help"
  ;;
infeasible)
  printf '{"pus": [{"name": "a", "time": {"linear": 1}, "max_block": 3}]}' > "$tmp/inf.json"
  "$hlb" partition "$tmp/inf.json" --items 4 > /dev/null 2> "$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "infeasible: exit $rc, expected 1"
  grep -q '4 items cannot be placed' "$tmp/err" || fail "infeasible message: $(cat "$tmp/err")"
  ;;
*)
  fail "unknown case $case_name"
  ;;
esac
exit 0
