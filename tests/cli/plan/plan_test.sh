#!/usr/bin/env bash
# Usage: plan_test.sh CASE HLB CLUSTER.json. One case per ctest entry; exit 77 = skipped.
set -u
case_name=$1 hlb=$2 example=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# run EXPECTED_RC ARGS...: runs hlb, keeps stdout/stderr in $tmp/out, $tmp/err.
run() {
  local want=$1; shift
  "$hlb" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "hlb $* exited $rc, expected $want; stderr: $(cat "$tmp/err")"
}

need_jq() { command -v jq >/dev/null || { echo "jq not installed: skipped"; exit 77; }; }

# The error must be exactly one line on stderr holding every given fragment.
one_line_with() {
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "expected one line on stderr, got: $(cat "$tmp/err")"
  for frag in "$@"; do
    grep -qF -- "$frag" "$tmp/err" || fail "stderr lacks '$frag': $(cat "$tmp/err")"
  done
}

# bad NAME SED-EXPR FRAGMENT...: a malformed copy of the example must exit 2 naming the problem.
bad() {
  local name=$1 expr=$2; shift 2
  sed -e "$expr" "$example" >"$tmp/$name.json"
  cmp -s "$example" "$tmp/$name.json" && fail "sed expression '$expr' changed nothing"
  run 2 plan "$tmp/$name.json" --items 10
  one_line_with "$tmp/$name.json" "$@"
}

case $case_name in
good)
  run 0 plan "$example" --items 256
  grep -q '^makespan [0-9.e+]* s$' "$tmp/out" || fail "no makespan line: $(cat "$tmp/out")"
  grep -q 'solver exact (optimal)' "$tmp/out" || fail "no solver line"
  for pu in apl09-gpu apl09-cpu apl10-gpu apl11-gpu0 apl11-gpu1 apl11-cpu apl12-phi1; do
    grep -q "pu $pu " "$tmp/out" || fail "PU $pu missing from the output"
  done
  # Per-PU items add up to the total.
  sum=$(awk '$1 == "pu" {s += $3} END {print s}' "$tmp/out")
  [ "$sum" -eq 256 ] || fail "PU items sum to $sum, not 256"
  run 0 plan "$example" --items=1e3 --solver=glpk --time-limit 30
  grep -q 'solver glpk' "$tmp/out" || fail "glpk not reported"
  ;;
json)
  need_jq
  run 0 plan "$example" --items 300 --json
  jq -e '(.makespan_s > 0) and (.solver == "exact") and (.optimal == true) and
         (.solve_s >= 0) and (.nodes | length == 4) and
         ([.nodes[].items] | add == 300) and
         (all(.nodes[]; .items == ([.pus[].items] | add))) and
         (.nodes[2].name == "apl11") and (.nodes[2].pus[1].name == "apl11-gpu1")' \
    "$tmp/out" >/dev/null || fail "--json output wrong: $(cat "$tmp/out")"
  ;;
solvers_agree)
  need_jq
  for d in 1 7 64 300 1000; do
    run 0 plan "$example" --items $d --json --solver exact
    e=$(jq .makespan_s "$tmp/out")
    run 0 plan "$example" --items $d --json --solver glpk
    g=$(jq .makespan_s "$tmp/out")
    jq -e '.optimal' "$tmp/out" >/dev/null || fail "glpk did not prove D=$d optimal"
    awk -v e="$e" -v g="$g" 'BEGIN { d = e - g; if (d < 0) d = -d; exit !(d <= 1e-9 * e) }' ||
      fail "D=$d: exact $e, glpk $g"
  done
  ;;
malformed)
  bad bw 's/"bandwidth_Bps": 98929407/"bandwidth_Bps": -3/' \
    'nodes[0].link.bandwidth_Bps' 'must be > 0, got -3'
  bad unknown 's/"latency_s": 2.414e-5/"latency": 2.414e-5/' 'nodes[1].link.latency' 'unknown member'
  bad dup 's/"name": "apl10-cpu"/"name": "apl10-gpu"/' 'nodes[1].pus[1].name' 'already the name'
  bad decreasing 's/"time": {"linear": 4.74994}/"time": {"const": 5, "linear": -1}/' \
    'nodes[3].pus[0].time' 'decreases'
  bad cap 's/"kind": "cpu",/"kind": "cpu", "max_items": 0,/' 'nodes[0].pus[1].max_items' '>= 1'
  bad syntax 's/"nodes": \[/"nodes": [[/' 'not valid JSON'
  bad noitem 's/"item": {[^}]*},//' 'item: required member is missing'
  run 2 plan "$tmp/does-not-exist.json" --items 3
  one_line_with "does-not-exist.json" "cannot open"
  # Caps that cannot hold the items: a failed run (1), with both numbers.
  sed -e 's/"partition_s"//; s/"link": {"latency_s": 4.929e-5/"max_items": 2, &/' \
      -e 's/"link": {"latency_s": 2.414e-5/"max_items": 2, &/' \
      -e 's/"link": {"latency_s": 3.422e-5/"max_items": 2, &/' \
      -e 's/"link": {"latency_s": 5.6e-7/"max_items": 2, &/' "$example" >"$tmp/capped.json"
  run 1 plan "$tmp/capped.json" --items 9
  one_line_with "9 items asked" "hold at most 8"
  run 0 plan "$tmp/capped.json" --items 8
  ;;
usage)
  run 2 plan "$example"
  one_line_with "missing --items"
  run 2 plan --items 5
  one_line_with "missing CLUSTER.json"
  run 2 plan "$example" --items 5 --solver lp_solve
  one_line_with "--solver" "lp_solve"
  run 2 plan "$example" --items -4
  one_line_with "--items"
  run 2 plan "$example" --items 5 --time-limit abc
  one_line_with "--time-limit"
  run 2 plan "$example" --items 5 --frobnicate
  one_line_with "unknown option '--frobnicate'"
  run 2 plan "$example" "$example" --items 5
  one_line_with "unexpected argument"
  # --items 0 means the same in plan, sim and partition: bad input.
  run 2 plan "$example" --items 0
  one_line_with "--items" "'0'"
  run 0 plan --help
  grep -q -- '--solver S' "$tmp/out" || fail "help lacks --solver"
  grep -q -- 'exact' "$tmp/out" || fail "help lacks the solvers"
  ;;
*)
  fail "unknown case $case_name"
  ;;
esac
echo "ok: $case_name"
