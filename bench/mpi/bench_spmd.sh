#!/usr/bin/env bash
# SPMD rebalancing under a competing process (issue 5; FLEX-MPI paper 002 section 4.2).
#
# Jacobi and CG on 2 ranks, each bound to its own core. LOAD_AFTER seconds into each run a busy
# loop is started on rank 1's core and left running to the end. Every policy runs twice: with
# that load and without it. Printed per run: time, time saved against `none` in the same
# setting, redistributions (all / after the load appeared), and how many iterations after the
# load appeared the first redistribution came.
#
#   bench/mpi/bench_spmd.sh BUILD_DIR [POLICIES...]
# Environment: JACOBI_ROWS (4000) JACOBI_ITERS (3000) CG_GRID (700) CG_ITERS (3000)
#              LOAD_AFTER (5) INTERVAL (100)
set -euo pipefail
build=${1:?usage: bench_spmd.sh BUILD_DIR [POLICIES...]}
shift
policies=("$@")
[ ${#policies[@]} -gt 0 ] || policies=(none flex hlb model ccp diffusive)
bin="$build/examples/mpi"
JACOBI_ROWS=${JACOBI_ROWS:-4000} JACOBI_ITERS=${JACOBI_ITERS:-3000}
CG_GRID=${CG_GRID:-700} CG_ITERS=${CG_ITERS:-3000}
LOAD_AFTER=${LOAD_AFTER:-5} INTERVAL=${INTERVAL:-100}
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to core --map-by core -np 2)
loaded_core=1
out=$(mktemp -d)
trap 'rm -rf "$out"; kill $(jobs -p) 2>/dev/null || true' EXIT

run_one() { # app load policy -> JSON line plus "load_epoch"
  local app=$1 load=$2 policy=$3 args
  if [ "$app" = jacobi ]; then args=(--rows "$JACOBI_ROWS" --iters "$JACOBI_ITERS");
  else args=(--rows "$CG_GRID" --iters "$CG_ITERS"); fi
  "${MPIRUN[@]}" "$bin/hlb_$app" "${args[@]}" --interval "$INTERVAL" --policy "$policy" \
    > "$out/run.json" &
  local app_pid=$! load_pid="" load_epoch=0
  if [ "$load" = yes ]; then
    sleep "$LOAD_AFTER"
    taskset -c $loaded_core bash -c 'while :; do :; done' &
    load_pid=$!
    load_epoch=$(date +%s.%N)
  fi
  wait $app_pid || true  # a CG run that has not converged yet exits 1; its error is reported
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null && wait "$load_pid" 2>/dev/null || true
  python3 - "$out/run.json" "$load_epoch" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["load_epoch"] = float(sys.argv[2])
print(json.dumps(d))
PY
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "date: $(date -u +%Y-%m-%d)"
for app in jacobi cg; do
  : > "$out/$app.jsonl"
  for load in no yes; do
    for p in "${policies[@]}"; do
      run_one "$app" "$load" "$p" | tee -a "$out/$app.jsonl" >&2
    done
  done
  python3 - "$out/$app.jsonl" "$app" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
app = sys.argv[2]
base = {r["load_epoch"] > 0: r["time_s"] for r in rows if r["policy"] == "none"}
print(f"\n{app}: {rows[0]['rows']} rows, {rows[0]['iterations']} iterations, 2 ranks")
print(f"{'load':5} {'policy':10} {'time_s':>8} {'saved':>7} {'redist':>6} {'after load':>10} {'iters to 1st':>12} {'final split':>14}")
for r in rows:
    loaded = r["load_epoch"] > 0
    saved = 100.0 * (1 - r["time_s"] / base[loaded]) if loaded in base else float("nan")
    after, first = "-", "-"
    if loaded:
        t_load = r["load_epoch"] - r["start_epoch"]
        late = [(it, t) for it, t in r["redistributions_at"] if t >= t_load]
        after = str(len(late))
        if late:
            per_iter = r["time_s"] / r["iterations"]
            # iterations between the load appearing and the first redistribution
            first = str(max(0, int(late[0][0] - t_load / per_iter)))
    print(f"{'yes' if loaded else 'no':5} {r['policy']:10} {r['time_s']:8.2f} {saved:6.1f}% "
          f"{r['redistributions']:6d} {after:>10} {first:>12} {str(r['final_counts']):>14}")
PY
done
