#!/bin/sh
# hlb sim from the command line: usage errors exit 2 with one line, --json and --trace parse,
# the same seed gives the same bytes, a failure event is survived exactly once.
# usage: sim_cli.sh HLB_BINARY PRESETS_DIR
set -u
HLB=$1
PRESETS=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# A JSON checker: python3 or jq; without either the JSON checks cannot run (skip).
if command -v python3 >/dev/null 2>&1; then
  json_ok() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)" "$1" "$2"; }
elif command -v jq >/dev/null 2>&1; then
  json_ok() { jq -e . "$1" >/dev/null; }
else
  echo "neither python3 nor jq: skipping"
  exit 77
fi

# expect_usage NAME ARGS...: exit status 2 and exactly one line on stderr naming the problem.
expect_usage() {
  name=$1
  shift
  "$HLB" sim "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit $rc, expected 2"
  [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "$name: expected one line on stderr, got: $(cat "$TMP/err")"
  grep -q "hlb sim:" "$TMP/err" || fail "$name: stderr does not start with 'hlb sim:'"
}

cat >"$TMP/cl.json" <<'JSON'
{"item": {"in_bytes": 1000, "out_bytes": 100}, "noise_sigma": 0.1,
 "nodes": [{"name": "n0", "link": {"latency_s": 1e-4, "bandwidth_Bps": 1e8},
            "pus": [{"name": "cpu0", "kind": "cpu", "time": {"const": 1e-3, "linear": 1e-4}},
                    {"name": "gpu0", "kind": "gpu", "time": {"const": 4e-3, "linear": 1e-5},
                     "link": {"latency_s": 1e-5, "bandwidth_Bps": 6e9}}]},
           {"name": "n1", "link": {"latency_s": 1e-4, "bandwidth_Bps": 1e8},
            "pus": [{"name": "cpu1", "kind": "cpu", "time": {"const": 1e-3, "linear": 3e-4}}]}],
 "events": [{"at_s": 0.05, "pu": "gpu0", "slowdown": 3},
            {"at_s": 0.2, "pu": "cpu1", "fail": true}]}
JSON
sed 's/"bandwidth_Bps": 6e9/"bandwidth_Bps": -3/' "$TMP/cl.json" >"$TMP/bad.json"
printf '{"nodes": [' >"$TMP/broken.json"

expect_usage "missing file" "$TMP/none.json" --items 10
expect_usage "bad bandwidth" "$TMP/bad.json" --items 10
grep -q "bandwidth_Bps" "$TMP/err" || fail "bad bandwidth: message does not name the field: $(cat "$TMP/err")"
expect_usage "syntax error" "$TMP/broken.json" --items 10
expect_usage "unknown policy" "$TMP/cl.json" --items 10 --policy no-such-policy
grep -q "no-such-policy" "$TMP/err" || fail "unknown policy: message does not name it"
expect_usage "no items" "$TMP/cl.json"
expect_usage "bad items" "$TMP/cl.json" --items 1.5
expect_usage "unknown option" "$TMP/cl.json" --items 10 --frobnicate
expect_usage "bad param" "$TMP/cl.json" --items 10 --policy greedy --params nope=1

# Every policy completes exactly once despite the failure; --json parses and has the fields.
"$HLB" sim "$TMP/cl.json" --items 20000 --policy all --json >"$TMP/all.json" || fail "--policy all --json exited $?"
json_ok "$TMP/all.json" "d['lower_bound_s'] > 0 and len(d['policies']) >= 3 and all(p['exactly_once'] and p['ratio'] >= 1 and p['blocks'] > 0 and set(p['idle_pct']) == {'cpu', 'gpu'} and sum(p['items_per_pu'].values()) == 20000 and 'solver_s' not in p for p in d['policies'])" ||
  fail "--json output: $(head -c 600 "$TMP/all.json")"

# Same seed, same bytes (text and JSON); another seed differs.
"$HLB" sim "$TMP/cl.json" --items 20000 --policy all --reps 2 >"$TMP/a.txt" || fail "run a exited $?"
"$HLB" sim "$TMP/cl.json" --items 20000 --policy all --reps 2 >"$TMP/b.txt" || fail "run b exited $?"
cmp -s "$TMP/a.txt" "$TMP/b.txt" || fail "same seed, different text output"
"$HLB" sim "$TMP/cl.json" --items 20000 --policy all --json >"$TMP/all2.json"
cmp -s "$TMP/all.json" "$TMP/all2.json" || fail "same seed, different JSON output"
"$HLB" sim "$TMP/cl.json" --items 20000 --policy all --reps 2 --seed 5 >"$TMP/c.txt"
cmp -s "$TMP/a.txt" "$TMP/c.txt" && fail "another seed gave the same output"

# --timing adds the solver time.
"$HLB" sim "$TMP/cl.json" --items 2000 --policy greedy --json --timing >"$TMP/t.json"
json_ok "$TMP/t.json" "d['policies'][0]['solver_s'] >= 0" || fail "--timing: no solver_s"

# --trace: Chrome trace JSON with traceEvents, one compute slice per completed block.
"$HLB" sim "$TMP/cl.json" --items 5000 --policy greedy --json --trace "$TMP/trace.json" >"$TMP/g.json" ||
  fail "--trace exited $?"
json_ok "$TMP/trace.json" "isinstance(d['traceEvents'], list) and any(e.get('ph') == 'X' and 'items' in e.get('args', {}) for e in d['traceEvents'])" ||
  fail "trace: $(head -c 400 "$TMP/trace.json")"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$TMP/trace.json" "$TMP/g.json" <<'PY' || fail "trace: compute slices do not match blocks"
import json, sys
t = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
done = [e for e in t['traceEvents'] if e.get('ph') == 'X' and e['name'] == 'compute' and e['args']['lost'] == 'no']
sys.exit(0 if len(done) == g['policies'][0]['blocks'] else 1)
PY
fi
"$HLB" sim "$TMP/cl.json" --items 100 --policy greedy --trace "$TMP/no/such/dir/t.json" >/dev/null 2>"$TMP/err"
[ $? -ne 0 ] || fail "unwritable trace path accepted"

# A preset runs from the command line.
"$HLB" sim "$PRESETS/plbhec-4machines-matmul.json" --items 65536 --policy greedy >/dev/null ||
  fail "preset plbhec-4machines-matmul.json"

[ "$fails" -eq 0 ] || exit 1
echo "all hlb sim CLI checks passed"
