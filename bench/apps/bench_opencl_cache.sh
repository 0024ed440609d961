#!/usr/bin/env bash
# What keeping OpenCL program binaries saves a user (src/exec/backends/opencl_cache.c):
#
#   bench/apps/bench_opencl_cache.sh [BUILD_DIR]        (default build)
#
# For each app, RUNS rounds; each round runs `hlb run APP --pus PUS` twice, in turn: with
# HLB_OPENCL_CACHE=off (every process builds its programs from source, as before the cache)
# and with a cache directory that a first, untimed run filled (a later run's case). Both with
# models off, so that the two differ only in the build. Printed per app: the medians of the
# process's wall time and of the run's makespan (`hlb run --json`), and the ratios cached /
# off. The makespan moves only where a device is opened again inside the run. Never fails on
# time.
#
# Environment: RUNS (default 9), APPS (default "spmv mandelbrot blackscholes kmeans matmul"),
# PUS (default opencl:0).
set -euo pipefail
build=${1:-build}
hlb="$build/tools/hlb/hlb"
[ -x "$hlb" ] || { echo "bench_opencl_cache: $hlb not found (build first)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench_opencl_cache: needs jq" >&2; exit 2; }
runs=${RUNS:-9}
apps=${APPS:-"spmv mandelbrot blackscholes kmeans matmul"}
pus=${PUS:-opencl:0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# One timed run: "wall makespan".
timed() {
  local start end makespan
  start=$(date +%s.%N)
  makespan=$(HLB_OPENCL_CACHE="$1" "$hlb" run "$2" --pus "$pus" --models off --json | jq .makespan_s)
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc) $makespan"
}

printf "%-13s %-10s %9s %9s %11s %11s\n" app pus "wall off" "cached" "makespan off" "cached"
for app in $apps; do
  "$hlb" run "$app" --pus "$pus" --models off --json >/dev/null 2>&1 || true # warm PoCL's own cache
  HLB_OPENCL_CACHE="$work/cache" "$hlb" run "$app" --pus "$pus" --models off >/dev/null
  : >"$work/off" && : >"$work/on"
  for _ in $(seq 1 "$runs"); do
    timed off "$app" >>"$work/off"
    timed "$work/cache" "$app" >>"$work/on"
  done
  wo=$(cut -d' ' -f1 "$work/off" | median) wc=$(cut -d' ' -f1 "$work/on" | median)
  mo=$(cut -d' ' -f2 "$work/off" | median) mc=$(cut -d' ' -f2 "$work/on" | median)
  printf "%-13s %-10s %9.3f %9.3f %11.4f %11.4f   wall %.3f, makespan %.3f\n" "$app" "$pus" \
    "$wo" "$wc" "$mo" "$mc" "$(echo "$wc / $wo" | bc -l)" "$(echo "$mc / $mo" | bc -l)"
done
