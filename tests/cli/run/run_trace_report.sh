# --trace writes a Chrome trace that `hlb report` turns into a self-contained HTML page;
# throttling is reported as emulated.
. "$(dirname "$0")/lib.sh"
expect_rc 0 "$HLB" run matmul --size 96 --pus cpu:1,cpu:2 --throttle cpu:2=3 --trace "$D/t.json"
has 'EMULATED' "$D/out"
has '"traceEvents"' "$D/t.json"
has '"cat":"block"' "$D/t.json"
has 'throttled x3, emulated' "$D/t.json"
expect_rc 0 "$HLB" report "$D/t.json" -o "$D/r.html"
has 'Chart.js v' "$D/r.html"
has 'Blocks per PU over time' "$D/r.html"
has 'Block size over time' "$D/r.html"
has 'Idle time at the tail' "$D/r.html"
# Self-contained: no external scripts, styles or images.
if grep -Eq '(src|href)=' "$D/r.html"; then fail "report refers to external assets"; fi
echo '{"traceEvents": 3}' >"$D/bad.json"
expect_rc 2 "$HLB" report "$D/bad.json" -o "$D/x.html"
has 'traceEvents' "$D/err"
expect_rc 2 "$HLB" report "$D/missing.json" -o "$D/x.html"
echo ok
