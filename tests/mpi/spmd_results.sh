#!/usr/bin/env bash
# SPMD examples give the same answer on any number of ranks, with or without redistributions.
# Jacobi's checksum is bit-for-bit that of the single-process run (a row's update depends only
# on x, so a lost, duplicated or misplaced row would change it); CG converges to x = 1.
# Usage: spmd_results.sh DIR_WITH_hlb_jacobi_AND_hlb_cg
set -euo pipefail
bin=$1
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['$1'])"; }

ref=$("${MPIRUN[@]}" -np 1 "$bin/hlb_jacobi" --rows 240 --iters 150 --policy none | field checksum)
echo "single-process checksum $ref"
fail=0
for np in 2 3 4; do
  for policy in none flex model ccp diffusive hlb; do
    # Rank np-1 is slowed 2x from iteration 30 on, and the policies are made eager so that rows
    # really move several times during the run.
    case $policy in
      flex) params="k=1,th2=0" ;;
      hlb) params="persist=1,threshold=0" ;;
      model | ccp) params="gain=0" ;;
      diffusive) params="imbalance=0,window=1" ;;
      *) params="" ;;
    esac
    out=$("${MPIRUN[@]}" -np $np "$bin/hlb_jacobi" --rows 240 --iters 150 --interval 10 \
      --policy $policy --params "$params" --inject-rank $((np - 1)) --inject-from 30 --inject-frac 2)
    sum=$(echo "$out" | field checksum)
    moves=$(echo "$out" | field redistributions)
    echo "jacobi np=$np policy=$policy checksum=$sum redistributions=$moves"
    if [ "$sum" != "$ref" ]; then echo "FAIL: checksum differs from the single-process run"; fail=1; fi
    if [ "$policy" = flex ] && [ "$moves" -lt 1 ]; then echo "FAIL: no redistribution happened"; fail=1; fi
  done
  out=$("${MPIRUN[@]}" -np $np "$bin/hlb_cg" --rows 24 --iters 400 --interval 10 --policy flex \
    --params "k=1,th2=0" --inject-rank 0 --inject-from 20 --inject-frac 2)
  err=$(echo "$out" | field error)
  moves=$(echo "$out" | field redistributions)
  rows=$(echo "$out" | field rows)
  echo "cg np=$np error=$err redistributions=$moves rows=$rows"
  [ "$rows" = 576 ] || { echo "FAIL: CG on a 24x24 grid reported $rows rows, not 576"; fail=1; }
  python3 -c "import sys; sys.exit(0 if float('$err') < 1e-6 else 1)" || { echo "FAIL: CG error $err"; fail=1; }
  if [ "$moves" -lt 1 ]; then echo "FAIL: CG saw no redistribution"; fail=1; fi
done
# A run started from a given split (--counts, e.g. a previous run's final_counts) computes the
# same; counts that do not sum to the rows stop every rank with the reason.
out=$("${MPIRUN[@]}" -np 2 "$bin/hlb_jacobi" --rows 240 --iters 150 --interval 10 --counts 200,40 \
  --policy hlb --params "persist=1,threshold=0" --inject-rank 0 --inject-from 30 --inject-frac 2)
echo "jacobi np=2 --counts 200,40: checksum=$(echo "$out" | field checksum)"
[ "$(echo "$out" | field checksum)" = "$ref" ] || { echo "FAIL: --counts changed the result"; fail=1; }
if err=$("${MPIRUN[@]}" -np 2 "$bin/hlb_jacobi" --rows 240 --iters 5 --counts 200,41 2>&1); then
  echo "FAIL: --counts 200,41 for 240 rows was accepted"; fail=1
elif ! grep -q "initial_counts sum to 241 rows, not 240" <<<"$err"; then
  echo "FAIL: --counts 200,41: unexpected message: $err"; fail=1
fi
# CG reads a Matrix Market file (symmetric, lower triangle stored): a 12x12 grid Laplacian
# written here, solved on 1 and 3 ranks with rows moving.
mtx=$(mktemp --suffix .mtx)
trap 'rm -f "$mtx"' EXIT
python3 - "$mtx" <<'PY'
import sys
g = 12; n = g * g; entries = []
for i in range(n):
    entries.append((i, i, 4.0))
    if i % g: entries.append((i, i - 1, -1.0))
    if i >= g: entries.append((i, i - g, -1.0))
with open(sys.argv[1], "w") as f:
    f.write("%%MatrixMarket matrix coordinate real symmetric\n% grid Laplacian\n")
    f.write(f"{n} {n} {len(entries)}\n")
    for i, j, v in entries:
        f.write(f"{i + 1} {j + 1} {v}\n")
PY
for np in 1 3; do
  out=$("${MPIRUN[@]}" -np $np "$bin/hlb_cg" --mtx "$mtx" --iters 300 --interval 10 --policy ccp \
    --params "gain=0" --inject-rank 0 --inject-from 20 --inject-frac 2)
  err=$(echo "$out" | field error)
  echo "cg --mtx np=$np error=$err redistributions=$(echo "$out" | field redistributions)"
  python3 -c "import sys; sys.exit(0 if float('$err') < 1e-6 else 1)" || { echo "FAIL: CG on the file: error $err"; fail=1; }
done
# A malformed file is refused with its name and line.
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n' > "$mtx"
if "${MPIRUN[@]}" -np 1 "$bin/hlb_cg" --mtx "$mtx" --iters 5 2>"$mtx.err"; then
  echo "FAIL: an entry outside the matrix was accepted"; fail=1
fi
grep -q "$mtx:3" "$mtx.err" || { echo "FAIL: no line number in: $(cat "$mtx.err")"; fail=1; }
rm -f "$mtx.err"
exit $fail
