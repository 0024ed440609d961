#!/bin/sh
# `hlb profile-links` under mpirun writes a cluster file that loads (test_profile_check) and
# that `hlb plan` and `hlb sim` accept; bad usage exits 2 before MPI starts.
#   profile_links.sh HLB TEST_PROFILE_CHECK NP [opencl]
set -eu
hlb=$1 check=$2 np=$3 cl=${4:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pus=cpu:1 names="" max=262144
# PoCL's copies of small buffers cost about the same whatever their size: measure larger ones.
if [ -n "$cl" ]; then pus=cpu:1,opencl:0 max=4194304; fi
r=0
while [ "$r" -lt "$np" ]; do
  names="$names r$r-cpu:1"
  if [ -n "$cl" ]; then names="$names r$r-opencl:0"; fi
  r=$((r + 1))
done
mpirun --oversubscribe --allow-run-as-root -np "$np" "$hlb" profile-links -o "$dir/c.json" \
  --pus "$pus" --max-bytes "$max" --sizes 4 --reps 3 --kernel-items 16384
# shellcheck disable=SC2086
"$check" "$dir/c.json" "$np" $names
"$hlb" plan "$dir/c.json" --items 100000 > "$dir/plan.txt"
grep -q "rank0" "$dir/plan.txt"
"$hlb" sim "$dir/c.json" --items 100000 --policy hlb > "$dir/sim.txt"
grep -q "hlb" "$dir/sim.txt"
# Usage errors: exit 2 with one line naming the problem, no MPI needed.
set +e
"$hlb" profile-links --pus cpu:1 2> "$dir/err.txt"; st=$?
set -e
[ "$st" -eq 2 ] && grep -q "missing -o" "$dir/err.txt"
set +e
"$hlb" profile-links -o "$dir/x.json" --reps 0 2> "$dir/err.txt"; st=$?
set -e
[ "$st" -eq 2 ] && grep -q -- "--reps" "$dir/err.txt"
echo "profile-links np=$np ${cl:-cpu}: ok"
