#!/usr/bin/env bash
# hlb report on synthetic executor traces of 10^3, 10^4 and 10^5 blocks (4 PUs, predictions,
# a few failed blocks): seconds `hlb report` takes, the page's size, and the time the page's
# script takes to draw every chart in headless Chromium (the page records it in
# <body data-draw-ms>), side by side with the 10^3 row as the reference. Never fails on time.
# usage: bench_report.sh HLB [BLOCKS...]   (default 1000 10000 100000)
set -euo pipefail
HLB=$1
shift
if [ $# -gt 0 ]; then SIZES=("$@"); else SIZES=(1000 10000 100000); fi
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "no headless Chromium (scripts/install-deps.sh installs it)"; exit 77; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

synth() { # BLOCKS FILE: 4 PUs of speeds 1:2:4:8, blocks shrinking towards the end, 1 in 500 failed
  python3 - "$1" "$2" <<'PY'
import json, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
random.seed(1)
speed = [1.0, 2.0, 4.0, 8.0]
ev = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "hlb run: policy hlb, %d items, makespan 0 s" % (n * 100)}}]
ev += [{"ph": "M", "pid": 1, "tid": p, "name": "thread_name", "args": {"name": "pu%d (cpu)" % p}} for p in range(4)]
t = [0.0] * 4
begin = 0
for k in range(n):
    p = min(range(4), key=lambda q: t[q])
    count = max(1, int(200 * (1 - k / n)) + 1)
    pred = 1e-4 * count / speed[p]
    dur = pred * random.lognormvariate(0, 0.2)
    tr = 0.05 * dur
    cat = "failed" if k % 500 == 499 else "block"
    ev.append({"ph": "X", "cat": cat, "name": "[%d,+%d)" % (begin, count), "pid": 1, "tid": p,
               "ts": t[p] * 1e6, "dur": dur * 1e6,
               "args": {"begin": begin, "count": count, "predicted_s": pred if k > 8 else -1,
                        "compute_s": dur - tr, "transfer_s": tr}})
    t[p] += dur + 2e-6
    if cat == "block":
        begin += count
json.dump({"traceEvents": ev}, open(out, "w"))
PY
}

printf '%8s %10s %10s %9s %10s %9s %10s %9s\n' blocks trace_MB report_s ratio page_MB ratio draw_ms ratio
base=""
for n in "${SIZES[@]}"; do
  synth "$n" "$D/t.json"
  t0=$(date +%s.%N)
  "$HLB" report "$D/t.json" -o "$D/r.html"
  t1=$(date +%s.%N)
  prof=$(mktemp -d)
  draw=$("$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$prof" --dump-dom "file://$D/r.html" 2>/dev/null |
    grep -o 'data-draw-ms="[0-9.]*"' | head -1 | tr -dc '0-9.')
  rm -rf "$prof"
  page=$(stat -c %s "$D/r.html")
  trace=$(stat -c %s "$D/t.json")
  awk -v n="$n" -v t0="$t0" -v t1="$t1" -v page="$page" -v trace="$trace" -v draw="${draw:-0}" \
    -v b="${base:-}" 'BEGIN {
      rs = t1 - t0
      if (b == "") { br = rs; bp = page; bd = draw } else { split(b, x, " "); br = x[1]; bp = x[2]; bd = x[3] }
      printf "%8d %10.2f %10.3f %9.1f %10.2f %9.1f %10.0f %9.1f\n", n, trace / 1048576, rs, rs / br,
             page / 1048576, page / bp, draw, (bd > 0 ? draw / bd : 0)
      if (b == "") printf "%s %s %s\n", rs, page, draw > "/dev/stderr" }' 2>"$D/base"
  [ -n "${base:-}" ] || base=$(cat "$D/base")
done
