#!/usr/bin/env bash
# Rank 0's CPU cost per granted block, at 2..64 ranks with one PU each, then at 10^3 and 10^4
# PUs behind 8 ranks (each rank offering many one-core cpu PUs: 10^4 processes do not fit one
# machine). Prints a markdown table (docs/mpi-executor.md, "Rank 0's cost per grant").
# Usage: bench_grants.sh BUILD_DIR [ITEMS]
# Oversubscribed on a small machine: the figures are rank 0's CPU time, not wall time.
set -euo pipefail
build=${1:?usage: bench_grants.sh BUILD_DIR [ITEMS]}
items=${2:-30000}
bin=$build/bench/mpi/bench_grants
[ -x "$bin" ] || { echo "bench_grants.sh: no $bin (build the benchmarks first)" >&2; exit 2; }
run() { mpirun --oversubscribe --allow-run-as-root "$@"; }
run -np 2 "$bin" --items "$items" --header
for np in 4 8 16 32 64; do
  run -np "$np" "$bin" --items "$items"
done
for per in 128 1250; do
  run -np 9 "$bin" --items "$items" --pus-per-rank "$per"
done
