#!/usr/bin/env bash
# SPMD rebalancing under a competing process (issue 5; FLEX-MPI section 4.2).
#
# Jacobi and CG on NP ranks (2 by default; at most one per core), each bound to its own core.
# LOAD_AFTER seconds into each run a busy loop is started on the last rank's core and left
# running to the end. Every policy runs with that load and without it, REPS times, the runs of
# one repetition one after the other (so a drift of the machine's speed hits every policy
# alike), in reverse order on even repetitions (so no policy always runs first or last).
# LOADS="no" or "yes" runs one setting only. Printed per setting and policy, as medians over
# the repetitions: time, time saved against `none`'s median in the same setting (and the range
# of the per-repetition savings, each against `none` of the same repetition), redistributions
# (all / after the load appeared), and how many iterations after the load appeared the first
# redistribution came.
#
# FIXED="0.36 0.30" adds, under load only, runs that never rebalance but start with that share
# of the rows on the loaded rank, the others sharing the rest evenly (`fixedS`: --policy none
# --counts): the best of them bounds what any split could save in the same hour on this
# machine, whose speed drifts from hour to hour (docs/benchmarks.md).
#
# A policy written POLICY:PARAMS (e.g. hlb:refine=1) runs with `--params PARAMS`, so a
# parameter's effect is measured in the same repetitions as the defaults.
#
#   bench/mpi/bench_spmd.sh BUILD_DIR [POLICIES...]
# Environment: JACOBI_ROWS (4000) JACOBI_ITERS (3000) CG_GRID (700) CG_ITERS (3000)
#              LOAD_AFTER (3) INTERVAL (100) REPS (3) APPS ("jacobi cg") FIXED ("")
#              LOADS ("no yes") NP (2)
set -euo pipefail
build=${1:?usage: bench_spmd.sh BUILD_DIR [POLICIES...]}
shift
policies=("$@")
[ ${#policies[@]} -gt 0 ] || policies=(none flex hlb model ccp diffusive)
bin="$build/examples/mpi"
JACOBI_ROWS=${JACOBI_ROWS:-4000} JACOBI_ITERS=${JACOBI_ITERS:-3000}
CG_GRID=${CG_GRID:-700} CG_ITERS=${CG_ITERS:-3000}
LOAD_AFTER=${LOAD_AFTER:-3} INTERVAL=${INTERVAL:-100} REPS=${REPS:-3} APPS=${APPS:-"jacobi cg"}
FIXED=${FIXED:-} LOADS=${LOADS:-"no yes"}
NP=${NP:-2}
if ! [[ $NP =~ ^[0-9]+$ ]] || [ "$NP" -lt 2 ] || [ "$NP" -gt "$(nproc)" ]; then
  echo "bench_spmd.sh: NP=$NP: needs 2 to $(nproc) ranks (one per core on this machine)" >&2
  exit 2
fi
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to core --map-by core -np "$NP")
loaded_core=$((NP - 1)) # --map-by core puts rank r on core r
out=$(mktemp -d)
trap 'rm -rf "$out"; kill $(jobs -p) 2>/dev/null || true' EXIT

fixed_counts() { # share rows -> "C0,C1,...": `share` of the rows on the last rank, the rest even
  python3 -c "
share, rows, n = $1, $2, $NP
last = round(share * rows)
rest = [(rows - last) // (n - 1) + (r < (rows - last) % (n - 1)) for r in range(n - 1)]
print(','.join(map(str, rest + [last])))"
}

run_one() { # app load policy -> JSON line plus "load_epoch"
  local app=$1 load=$2 policy=$3 args rows
  if [ "$app" = jacobi ]; then args=(--rows "$JACOBI_ROWS" --iters "$JACOBI_ITERS"); rows=$JACOBI_ROWS
  else args=(--rows "$CG_GRID" --iters "$CG_ITERS"); rows=$((CG_GRID * CG_GRID)); fi
  if [[ $policy == fixed* ]]; then # the loaded (last) rank starts with the given share, never moves
    args+=(--counts "$(fixed_counts "${policy#fixed}" "$rows")"); policy=none
  fi
  if [[ $policy == *:* ]]; then args+=(--params "${policy#*:}"); policy=${policy%%:*}; fi
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
for app in $APPS; do
  : > "$out/$app.jsonl"
  for rep in $(seq "$REPS"); do
    for load in $LOADS; do
      runs=("${policies[@]}")
      if [ "$load" = yes ]; then for f in $FIXED; do runs+=("fixed$f"); done; fi
      [ $((rep % 2)) -eq 1 ] || mapfile -t runs < <(printf '%s\n' "${runs[@]}" | tac)
      for p in "${runs[@]}"; do
        run_one "$app" "$load" "$p" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d['rep']=$rep; d['policy']='$p'; print(json.dumps(d))" \
          | tee -a "$out/$app.jsonl" >&2
      done
    done
  done
  python3 - "$out/$app.jsonl" "$app" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
app = sys.argv[2]
med = statistics.median
def after_load(r):
    """Redistributions after the load appeared, and iterations from the load to the first."""
    if r["load_epoch"] <= 0:
        return None, None
    t_load = r["load_epoch"] - r["start_epoch"]
    late = [(it, t) for it, t in r["redistributions_at"] if t >= t_load]
    if not late:
        return 0, None
    per_iter = r["time_s"] / r["iterations"]
    return len(late), max(0, int(late[0][0] - t_load / per_iter))
base = {(r["load_epoch"] > 0, r["rep"]): r["time_s"] for r in rows if r["policy"] == "none"}
print(f"\n{app}: {rows[0]['rows']} rows, {rows[0]['iterations']} iterations, "
      f"{rows[0]['ranks']} ranks, medians of {len({r['rep'] for r in rows})} repetitions")
print(f"{'load':5} {'policy':13} {'time_s':>8} {'saved':>7} {'saved range':>15} {'redist':>6} "
      f"{'after load':>10} {'iters to 1st':>12} {'s/move':>7}  final split (median run)")
for loaded in (False, True):
    for p in dict.fromkeys(r["policy"] for r in rows):
        runs = [r for r in rows if r["policy"] == p and (r["load_epoch"] > 0) == loaded]
        if not runs:
            continue
        t = med([r["time_s"] for r in runs])
        none_t = med([v for (l, _), v in base.items() if l == loaded]) if base else float("nan")
        saved = [100.0 * (1 - r["time_s"] / base[(loaded, r["rep"])]) for r in runs
                 if (loaded, r["rep"]) in base]
        late = [after_load(r) for r in runs]
        after = "-" if not loaded else str(int(med([a for a, _ in late])))
        firsts = [f for _, f in late if f is not None]
        first = str(int(med(firsts))) if firsts else "-"
        median_run = sorted(runs, key=lambda r: r["time_s"])[len(runs) // 2]
        per_move = [r["redistribute_s"] / r["redistributions"] for r in runs if r["redistributions"]]
        move_s = f"{med(per_move):7.3f}" if per_move else f"{'-':>7}"
        print(f"{'yes' if loaded else 'no':5} {p:13} {t:8.2f} {100.0 * (1 - t / none_t):6.1f}% "
              f"{min(saved):6.1f}..{max(saved):5.1f}% "
              f"{int(med([r['redistributions'] for r in runs])):6d} {after:>10} {first:>12} {move_s}  "
              f"{median_run['final_counts']}")
PY
done
