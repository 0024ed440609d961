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
# settle to) and, for `all`, that median over the best other set's, with a 90 % interval from
# a paired bootstrap over those rounds (each resample draws whole rounds, so drift of the machine
# that hits both sets in a round cancels), and the PUs that did items in `all`'s last run (what
# it settled on). Never fails on time.
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

# Lines "a b" (one round each: `all`'s time, the best set's): the 5th and 95th percentiles of
# median(a) / median(b) over 2000 resamples of whole rounds (plain awk: mawk has no asort).
paired_interval() {
  awk 'function med(x, n,   i, j, t) {
         for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
         return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
       { a[NR] = $1; b[NR] = $2 }
       END { srand(13); for (r = 1; r <= 2000; r++) {
               for (i = 1; i <= NR; i++) { k = 1 + int(rand() * NR); ra[i] = a[k]; rb[i] = b[k] }
               print med(ra, NR) / med(rb, NR) } }' | sort -g |
    awk '{v[NR] = $1} END {printf "[%.3f, %.3f]", v[int(0.05 * NR) + 1], v[int(0.95 * NR)]}'
}

printf '%-12s %-9s %s %10s %8s %16s  %s\n' app pus "$(for r in $(seq 1 "$runs"); do printf '%9s ' "run$r"; done)" \
  "med2..$runs" "all/best" "90 % interval" "all settled on"
for app in $apps; do
  for s in $sets; do mkdir -p "$work/$app/${s//:/_}"; : >"$work/$app/${s//:/_}.t"; done
  for r in $(seq 1 "$runs"); do
    for s in $sets; do
      out=$(HLB_MODEL_DIR="$work/$app/${s//:/_}" "$hlb" run "$app" --pus "$s" --models on --json)
      [ "$(echo "$out" | jq -r .verified)" = true ] || { echo "bench_all_only: $app on $s not verified" >&2; exit 1; }
      echo "$out" | jq .makespan_s >>"$work/$app/${s//:/_}.t"
      [ "$s" = all ] && echo "$out" | jq -r '[.pus[] | select(.items > 0) | .name] | join("+")' \
        >"$work/$app/settled"
    done
  done
  best="" best_set=""
  for s in $sets; do
    med=$(tail -n +2 "$work/$app/${s//:/_}.t" | median)
    echo "$med" >"$work/$app/${s//:/_}.med"
    if [ "$s" != all ] && { [ -z "$best" ] || awk -v a="$med" -v b="$best" 'BEGIN {exit !(a < b)}'; }; then
      best=$med best_set=$s
    fi
  done
  for s in $sets; do
    med=$(cat "$work/$app/${s//:/_}.med")
    ratio="" interval="" settled=""
    if [ "$s" = all ] && [ -n "$best_set" ]; then
      ratio=$(awk -v a="$med" -v b="$best" 'BEGIN {printf "%.3f", a / b}')
      [ "$runs" -ge 3 ] && interval=$(paste "$work/$app/all.t" "$work/$app/${best_set//:/_}.t" |
        tail -n +2 | paired_interval)
      settled=$(cat "$work/$app/settled")
    fi
    printf '%-12s %-9s %s %10.4f %8s %16s  %s\n' "$app" "$s" \
      "$(while read -r t; do printf '%9.4f ' "$t"; done <"$work/$app/${s//:/_}.t")" "$med" "$ratio" \
      "$interval" "$settled"
  done
done
