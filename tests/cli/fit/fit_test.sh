#!/bin/sh
# Tests of `hlb fit` on CSV files written here. Usage: fit_test.sh HLB CASE WORKDIR
set -u
HLB=$1
CASE=$2
DIR=$3
PY=${PYTHON3:-python3}
rm -rf "$DIR" && mkdir -p "$DIR" || exit 1
cd "$DIR" || exit 1

fail() {
  echo "FAIL ($CASE): $*" >&2
  exit 1
}

# Run hlb fit, keeping stdout, stderr and the exit status.
run() {
  "$HLB" fit "$@" >out.txt 2>err.txt
  echo $? >rc.txt
}

expect_rc() {
  [ "$(cat rc.txt)" = "$1" ] || fail "exit status $(cat rc.txt), expected $1; stderr: $(cat err.txt)"
}

# A known curve: compute 0.5 u + 2 u^3 (u = items / 2000) with 0.5 % deterministic noise and a
# transfer line 1e-3 + 1e-6 x for gpu0; 0.01 + 3e-3 x for cpu0 without transfer times.
write_known() {
  "$PY" - <<'PYEOF'
import random
random.seed(7)
with open("known.csv", "w") as f:
    f.write("pu,items,compute_s,transfer_s\n")
    for i in range(60):
        x = 100 * (1 + i % 20)
        u = x / 2000
        g = (0.5 * u + 2.0 * u ** 3) * (1 + 0.005 * random.gauss(0, 1))
        c = (0.01 + 3e-3 * x) * (1 + 0.005 * random.gauss(0, 1))
        f.write(f"gpu0,{x},{g!r},{1e-3 + 1e-6 * x!r}\n")
        f.write(f"cpu0,{x},{c!r},0\n")
PYEOF
}

case $CASE in
recover)
  write_known
  run known.csv --predict 500,1500,2000 --json
  expect_rc 0
  "$PY" - <<'PYEOF' || fail "predictions off: $(cat out.txt)"
import json
d = json.load(open("out.txt"))
truth = {
    "gpu0": lambda x: 0.5 * x / 2000 + 2 * (x / 2000) ** 3 + 1e-3 + 1e-6 * x,
    "cpu0": lambda x: 0.01 + 3e-3 * x,
}
names = [p["name"] for p in d["pus"]]
assert names == ["gpu0", "cpu0"], names
for p in d["pus"]:
    assert p["scale"] == 2000, p
    assert p["samples"] == 60, p
    assert p["r2"] > 0.99, p
    assert len(p["predict"]) == 3
    for q in p["predict"]:
        t = truth[p["name"]](q["items"])
        assert abs(q["seconds"] - t) <= 0.01 * t, (p["name"], q, t)
g = d["pus"][0]["transfer"]
assert abs(g["per_item"] - 1e-6) < 1e-9 and abs(g["fixed"] - 1e-3) < 1e-6, g
c = d["pus"][1]["transfer"]
assert c["per_item"] == 0 and c["fixed"] == 0, c
PYEOF
  # The text form names every PU and the chosen terms.
  run known.csv --predict 1000
  expect_rc 0
  grep -q "^pu gpu0: 60 samples, scale 2000 items, r2 " out.txt || fail "text: $(cat out.txt)"
  grep -q "terms (u = items / 2000):" out.txt || fail "no terms line: $(cat out.txt)"
  grep -q "predict: 1000 items:" out.txt || fail "no prediction: $(cat out.txt)"
  ;;
bad_rows)
  write_known
  cat >>known.csv <<'CSV'
cpu0,100,nan,0
cpu0,100,inf,0
cpu0,100,-1,0
cpu0,100,0,0
cpu0,100,0.3,-0.5
cpu0,0,0.3,0
cpu0,-4,0.3,0
gpu0,100,NaN,0
CSV
  run known.csv --json
  expect_rc 0
  "$PY" - <<'PYEOF' || fail "rejected counts: $(cat out.txt)"
import json
d = {p["name"]: p for p in json.load(open("out.txt"))["pus"]}
assert d["cpu0"]["rejected"] == {"nan": 1, "inf": 1, "nonpositive": 3, "zero_items": 2}, d["cpu0"]
assert d["gpu0"]["rejected"] == {"nan": 1, "inf": 0, "nonpositive": 0, "zero_items": 0}, d["gpu0"]
assert d["cpu0"]["samples"] == 60 and "terms" in d["cpu0"]
PYEOF
  run known.csv
  grep -q "rejected: nan=1 inf=1 nonpositive=3 zero_items=2" out.txt || fail "text: $(cat out.txt)"
  ;;
malformed)
  printf 'pu,items,compute_s\ncpu0,10,1.0\ncpu0,20,abc\n' >m1.csv
  run m1.csv
  expect_rc 2
  grep -q "m1.csv:3: column 'compute_s': expected a number, got 'abc'" err.txt || fail "$(cat err.txt)"
  printf 'pu,items,compute_s,transfer_s\ncpu0,10,1.0,0\ncpu0,,1.0,0\n' >m2.csv
  run m2.csv
  expect_rc 2
  grep -q "m2.csv:3: column 'items': expected a number, got ''" err.txt || fail "$(cat err.txt)"
  printf 'pu,items,compute_s\ncpu0,10,1.0\n\ncpu0,10,1.0,7\n' >m3.csv
  run m3.csv
  expect_rc 2
  grep -q "m3.csv:4: expected 3 columns, got 4" err.txt || fail "$(cat err.txt)"
  printf 'pu,size,compute_s\ncpu0,10,1.0\n' >m4.csv
  run m4.csv
  expect_rc 2
  grep -q "m4.csv:1: expected the header" err.txt || fail "$(cat err.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "more than one error line: $(cat err.txt)"
  ;;
json)
  write_known
  echo "cpu9,10,1.0,0" >>known.csv
  run known.csv --json --predict 10
  expect_rc 0
  "$PY" -c 'import json,sys; json.load(sys.stdin)' <out.txt || fail "not JSON: $(cat out.txt)"
  "$PY" - <<'PYEOF' || fail "JSON shape: $(cat out.txt)"
import json
d = json.load(open("out.txt"))
for p in d["pus"][:2]:
    assert set(p) >= {"name", "scale", "terms", "r2", "samples", "rejected", "transfer", "predict"}
    assert set(p["transfer"]) == {"per_item", "fixed"}
    assert all(k in ("const", "u", "u2", "u3", "exp", "log", "uexp", "ulog") for k in p["terms"])
    assert p["predict"][0]["items"] == 10 and p["predict"][0]["seconds"] > 0
bad = d["pus"][2]
assert bad["name"] == "cpu9" and "distinct" in bad["error"] and "terms" not in bad, bad
PYEOF
  ;;
too_few)
  printf 'pu,items,compute_s\ncpu0,10,1.0\ncpu0,10,1.1\ngpu0,5,0.2\n' >few.csv
  run few.csv
  expect_rc 1
  grep -q "^pu cpu0: 2 samples.*cannot fit: .*2 distinct sizes" out.txt || fail "$(cat out.txt)"
  grep -q "no PU could be fitted" err.txt || fail "$(cat err.txt)"
  printf 'pu,items,compute_s\ncpu0,10,1.0\ncpu0,20,2.0\ngpu0,5,0.2\n' >some.csv
  run some.csv
  expect_rc 0
  grep -q "^pu gpu0: 1 samples.*cannot fit" out.txt || fail "$(cat out.txt)"
  ;;
usage)
  run
  expect_rc 2
  printf 'pu,items,compute_s\n' >h.csv
  run h.csv --predict 0
  expect_rc 2
  run h.csv --predict 10,x
  expect_rc 2
  run h.csv --bogus
  expect_rc 2
  run missing.csv
  expect_rc 2
  run h.csv
  expect_rc 1
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "ok ($CASE)"
