#!/bin/sh
# The SPMD examples draw a progress line on a terminal (rank 0's stderr) and nothing at all
# when stderr is a pipe or a file.
set -u
dir=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
run="mpirun --oversubscribe --allow-run-as-root -np 2 $dir/hlb_jacobi --rows 300 --iters 200 --interval 20"
tty_out=$(script -qec "$run" /dev/null </dev/null 2>&1) || fail "jacobi under a terminal failed"
echo "$tty_out" | grep -q 'hlb_jacobi: iteration [0-9]*/200' || { echo "$tty_out" >&2; fail "no progress on a terminal"; }
err=$($run 2>&1 >/dev/null </dev/null) || fail "jacobi failed"
[ -z "$err" ] || { echo "$err" >&2; fail "progress or noise on stderr without a terminal"; }
echo ok
