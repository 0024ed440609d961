#!/usr/bin/env bash
# bench/mpi/bench_spmd.sh runs end to end on tiny problems: every policy (a POLICY:PARAMS one
# and a fixed split included) gets a row per setting for both apps, the load is really
# started, and even repetitions run the policies in reverse order. Timings are not checked.
# Usage: bench_spmd_smoke.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
JACOBI_ROWS=200 JACOBI_ITERS=60 CG_GRID=30 CG_ITERS=60 INTERVAL=10 REPS=2 LOAD_AFTER=0 \
  FIXED=0.33 "$src/bench/mpi/bench_spmd.sh" "$build" none hlb:refine=1 \
  > "$out/table" 2> "$out/runs"
cat "$out/table"
python3 - "$out/table" "$out/runs" <<'PY'
import json, sys
table = open(sys.argv[1]).read().splitlines()
runs = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
fail = []
for app in ("jacobi", "cg"):
    start = next(i for i, l in enumerate(table) if l.startswith(app + ":"))
    rows = {tuple(l.split()[:2]) for l in table[start + 2:start + 7]}
    want = {("no", "none"), ("no", "hlb:refine=1"), ("yes", "none"), ("yes", "hlb:refine=1"),
            ("yes", "fixed0.33")}
    if rows != want:
        fail.append(f"{app}: table rows {sorted(rows)}, expected {sorted(want)}")
    mine = [r for r in runs if r["app"] == app]
    order = {(r["rep"], r["load_epoch"] > 0): [] for r in mine}
    for r in mine:
        order[(r["rep"], r["load_epoch"] > 0)].append(r["policy"])
    for loaded in (False, True):
        if order[(2, loaded)] != order[(1, loaded)][::-1]:
            fail.append(f"{app}: repetition 2 ran {order[(2, loaded)]}, "
                        f"not the reverse of {order[(1, loaded)]}")
    fixed = [r for r in mine if r["policy"] == "fixed0.33"]
    if any(r["final_counts"] != [134, 66] for r in fixed if app == "jacobi"):
        fail.append(f"jacobi: fixed0.33 ended on {[r['final_counts'] for r in fixed]}")
print("\n".join(fail) or "bench_spmd.sh smoke: ok")
sys.exit(1 if fail else 0)
PY
