#!/bin/sh
# policies_test.sh HLB CASE: one case of the `hlb policies` CLI tests.
set -u
HLB=$1
CASE=$2
PY=${PYTHON3:-python3}
fail() { echo "FAIL ($CASE): $*" >&2; exit 1; }

case $CASE in
list)
  out=$("$HLB" policies) || fail "exit status $?"
  # Every block policy of the JSON list appears in the text list, the default is marked,
  # and parameters are shown as name=default [lo, hi].
  names=$("$HLB" policies --json | "$PY" -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["policies"]))') ||
    fail "--json did not parse"
  [ -n "$names" ] || fail "no policies registered"
  for n in $names static proportional greedy guided acosta hdss; do
    echo "$out" | grep -q "^  $n " || fail "'$n' missing from the list"
  done
  echo "$out" | grep -q "(default)" || fail "default not marked"
  echo "$out" | grep -q "chunk=0  \[0, 1e+15\]" || fail "greedy's chunk parameter not shown"
  ;;
json)
  "$HLB" policies --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
names = [p["name"] for p in d["policies"]]
assert d["default"] in names, d["default"]
assert sum(p["default"] for p in d["policies"]) == 1
for p in d["policies"] + d["repartition"]:
    assert p["description"], p
    for q in p["params"]:
        assert q["min"] <= q["default"] <= q["max"], (p["name"], q)
        assert q["doc"], (p["name"], q)
hdss = next(p for p in d["policies"] if p["name"] == "hdss")
assert {q["name"] for q in hdss["params"]} >= {"rounds", "factor"}, hdss
' || fail "bad JSON content"
  ;;
one)
  out=$("$HLB" policies acosta) || fail "exit status $?"
  echo "$out" | grep -q "^  acosta " || fail "acosta not shown"
  echo "$out" | grep -q "threshold=0.1" || fail "acosta threshold not shown"
  echo "$out" | grep -q "^  greedy " && fail "greedy shown when asking for acosta"
  n=$("$HLB" policies acosta --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["policies"]))')
  [ "$n" = 1 ] || fail "--json with NAME lists $n policies"
  ;;
usage)
  err=$(mktemp) || fail "mktemp"
  "$HLB" policies no-such-policy 2>"$err"
  [ $? -eq 2 ] || fail "unknown policy: exit status not 2"
  grep -q "unknown policy 'no-such-policy'" "$err" || fail "error does not name the policy"
  "$HLB" policies --bogus 2>"$err"
  [ $? -eq 2 ] || fail "unknown option: exit status not 2"
  grep -q "'--bogus'" "$err" || fail "error does not name the option"
  "$HLB" policies --help | grep -q "usage: hlb policies" || fail "--help"
  rm -f "$err"
  ;;
*)
  fail "unknown case"
  ;;
esac
exit 0
