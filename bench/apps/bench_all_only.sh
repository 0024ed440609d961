#!/usr/bin/env bash
# A user who only ever runs `--pus all`: does hlb find the best PU set by itself, run after run?
#
#   bench/apps/bench_all_only.sh [BUILD_DIR]        (default build)
#
# For each app, each PU set (`all`, `cpu`, `opencl:0` by default) gets its own fresh model directory, so
# `all` never sees a stored run of the other sets (bench_apps.sh shares one directory between
# them, which a user running only `all` would not have). RUNS rounds, each running every set
# once in turn (policy hlb, models on, the app's default size). Printed per app and set: each
# round's makespan (`hlb run --json`), the median of rounds 2..RUNS (what the stored models
# settle to) and, for `all`, that median over the best other set's. Never fails on time.
#
# Environment: RUNS (default 5), APPS (default "spmv mandelbrot blackscholes kmeans matmul"),
# PUSETS (default "all cpu opencl:0"; with a GPU, e.g. "all cpu cuda:0").
set -euo pipefail
build=${1:-build}
hlb="$build/tools/hlb/hlb"
[ -x "$hlb" ] || { echo "bench_all_only: $hlb not found (build first)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench_all_only: needs jq" >&2; exit 2; }
runs=${RUNS:-5}
apps=${APPS:-"spmv mandelbrot blackscholes kmeans matmul"}
sets=${PUSETS:-"all cpu opencl:0"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

printf '%-12s %-9s %s %10s %8s\n' app pus "$(for r in $(seq 1 "$runs"); do printf '%9s ' "run$r"; done)" \
  "med2..$runs" "all/best"
for app in $apps; do
  for s in $sets; do mkdir -p "$work/$app/${s//:/_}"; : >"$work/$app/${s//:/_}.t"; done
  for r in $(seq 1 "$runs"); do
    for s in $sets; do
      out=$(HLB_MODEL_DIR="$work/$app/${s//:/_}" "$hlb" run "$app" --pus "$s" --models on --json)
      [ "$(echo "$out" | jq -r .verified)" = true ] || { echo "bench_all_only: $app on $s not verified" >&2; exit 1; }
      echo "$out" | jq .makespan_s >>"$work/$app/${s//:/_}.t"
    done
  done
  best=""
  for s in $sets; do
    med=$(tail -n +2 "$work/$app/${s//:/_}.t" | median)
    echo "$med" >"$work/$app/${s//:/_}.med"
    if [ "$s" != all ]; then
      best=$(awk -v a="${best:-inf}" -v b="$med" 'BEGIN {print (a == "inf" || b < a) ? b : a}')
    fi
  done
  for s in $sets; do
    med=$(cat "$work/$app/${s//:/_}.med")
    ratio=""
    [ "$s" = all ] && ratio=$(awk -v a="$med" -v b="$best" 'BEGIN {printf "%.3f", a / b}')
    printf '%-12s %-9s %s %10.4f %8s\n' "$app" "$s" \
      "$(while read -r t; do printf '%9.4f ' "$t"; done <"$work/$app/${s//:/_}.t")" "$med" "$ratio"
  done
done
