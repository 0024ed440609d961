#!/usr/bin/env bash
# Runs that start from stored models against runs that train from nothing, side by side.
#
#   bench/models/bench_models.sh [BUILD_DIR]        (default build)
#
# For each case (an app, its size and PU set, an emulated throttle), one warm-up run stores
# the models in a scratch directory; then REPS rounds, each running the case once with
# `--models off` (trains from its own blocks, as every run did before) and once with
# `--models read` (starts from the stored samples, writes nothing, so every stored run starts
# from the same file), in an order alternating by round. Reported: the median makespan
# (`hlb run --json`, first grant to last block) of each and their ratio, and the median wall
# time of the whole command. Never fails on time: it prints a table.
#
# Environment: REPS (default 5), CASES (default below: "APP SIZE PUS THROTTLE;...").
set -euo pipefail
build=${1:-build}
hlb="$build/tools/hlb/hlb"
[ -x "$hlb" ] || { echo "bench_models: $hlb not found (build first)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench_models: needs jq" >&2; exit 2; }
reps=${REPS:-5}
cases=${CASES:-"matmul 2048 all cpu=4;matmul 1536 all -;blackscholes 4000000 all -;kmeans 2000000 all -;mandelbrot 2048 all -;spmv 1000000 all -"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export HLB_MODEL_DIR=$dir

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
one() { # MODE APP SIZE PUS THROTTLE -> "makespan wall"
  local t=() start end out
  [ "$5" = - ] || t=(--throttle "$5")
  start=$(date +%s.%N)
  out=$("$hlb" run "$2" --size "$3" --pus "$4" "${t[@]}" --models "$1" --json)
  end=$(date +%s.%N)
  [ "$(echo "$out" | jq -r .verified)" = true ] || { echo "bench_models: $2 not verified" >&2; exit 1; }
  echo "$(echo "$out" | jq .makespan_s) $(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')"
}

printf '%-34s %10s %10s %8s %10s %10s %8s\n' case off_s stored_s ratio off_wall stored_wall ratio
IFS=';' read -ra list <<<"$cases"
for c in "${list[@]}"; do
  read -r app size pus throttle <<<"$c"
  one on "$app" "$size" "$pus" "$throttle" >/dev/null # store the models
  : >"$dir/off" && : >"$dir/read"
  for r in $(seq 1 "$reps"); do
    if [ $((r % 2)) -eq 1 ]; then order="off read"; else order="read off"; fi
    for m in $order; do one "$m" "$app" "$size" "$pus" "$throttle" >>"$dir/$m"; done
  done
  off=$(cut -d' ' -f1 "$dir/off" | median); st=$(cut -d' ' -f1 "$dir/read" | median)
  offw=$(cut -d' ' -f2 "$dir/off" | median); stw=$(cut -d' ' -f2 "$dir/read" | median)
  label="$app $size $pus"
  [ "$throttle" = - ] || label="$label $throttle"
  awk -v l="$label" -v o="$off" -v s="$st" -v ow="$offw" -v sw="$stw" \
    'BEGIN {printf "%-34s %10.4f %10.4f %8.2f %10.3f %10.3f %8.2f\n", l, o, s, s / o, ow, sw, sw / ow}'
done
