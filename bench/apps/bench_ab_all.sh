#!/usr/bin/env bash
# Two builds side by side for a user who only runs `--pus all`: first runs and the runs after.
#
#   bench/apps/bench_ab_all.sh BASE_BUILD NEW_BUILD [APP] [ROUNDS]   (default spmv, 8)
#
# Each round gives each build a fresh model directory and runs `hlb run APP --pus all --models on`
# four times in it (the builds one after the other, so both meet the same machine), then one
# static run of `--pus cpu` and one of `--pus opencl:0` with models off, for reference. Printed:
# per build the median makespan of the first runs (what a new model directory costs) and of runs
# 2-4 (what the stored decisions settle to), the PUs each round's fourth run did its items on
# (counted over the rounds: "opencl:0 6, cpu 2"), and the two references' medians. Never fails on time;
# exits 1 when a run does not verify. SIZE (environment, optional): the app's --size.
set -euo pipefail
base=${1:?usage: bench_ab_all.sh BASE_BUILD NEW_BUILD [APP] [ROUNDS]}
new=${2:?usage: bench_ab_all.sh BASE_BUILD NEW_BUILD [APP] [ROUNDS]}
app=${3:-spmv}
rounds=${4:-8}
command -v jq >/dev/null || { echo "bench_ab_all: needs jq" >&2; exit 2; }
for b in "$base" "$new"; do
  [ -x "$b/tools/hlb/hlb" ] || { echo "bench_ab_all: $b/tools/hlb/hlb not found" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run LABEL BUILD DIR ARGS...: one run, its makespan appended to $work/LABEL and the PUs that did
# items ("cpu", "opencl:0", "cpu+opencl:0") to $work/LABEL.pus.
run() {
  local label=$1 build=$2 dir=$3
  shift 3
  local out
  out=$(HLB_MODEL_DIR="$dir" "$build/tools/hlb/hlb" run "$app" ${SIZE:+--size "$SIZE"} "$@" --json)
  [ "$(echo "$out" | jq -r .verified)" = true ] || { echo "bench_ab_all: $label not verified" >&2; exit 1; }
  echo "$out" | jq .makespan_s >>"$work/$label"
  echo "$out" | jq -r '[.pus[] | select(.items > 0) | .name] | join("+")' >>"$work/$label.pus"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

for r in $(seq 1 "$rounds"); do
  for side in base new; do
    build=$base
    [ "$side" = new ] && build=$new
    dir=$(mktemp -d -p "$work")
    run "$side.first" "$build" "$dir" --pus all --models on
    for k in 2 3; do run "$side.later" "$build" "$dir" --pus all --models on; done
    run "$side.later" "$build" "$dir" --pus all --models on
    tail -n 1 "$work/$side.later.pus" >>"$work/$side.settled"
  done
  run ref.cpu "$new" "$work" --pus cpu --policy static --models off
  run ref.opencl "$new" "$work" --pus opencl:0 --policy static --models off
done

printf '%s%s, %s rounds: median makespan [s]\n' "$app" "${SIZE:+ at size $SIZE}" "$rounds"
printf '%-8s %10s %10s   %s\n' build first "runs 2-4" "fourth runs on"
for side in base new; do
  settled=$(sort "$work/$side.settled" | uniq -c | sort -rn | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')
  printf '%-8s %10.4f %10.4f   %s\n' "$side" "$(median <"$work/$side.first")" "$(median <"$work/$side.later")" "$settled"
done
printf 'static on cpu %.4f, on opencl:0 %.4f\n' "$(median <"$work/ref.cpu")" "$(median <"$work/ref.opencl")"
