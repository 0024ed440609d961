#!/usr/bin/env bash
# `hlb run APP --mpi --hierarchy node` (docs/mpi-executor.md, "Hierarchical mode"): 4 ranks
# as 2 nodes of 2 (HLB_MPI_NODE_SIZE=2) verify matmul and blackscholes like the flat mode, every
# item in some node's shares; a node whose only PU fails every block gives its shares back and
# the other node does them (the run still verifies); bad values are refused on every rank.
set -euo pipefail
hlb=$1
MPIRUN=(timeout 120 mpirun --oversubscribe --allow-run-as-root)
export HLB_MODELS=off
fail=0
check() { # JSON on stdin; $1 ranks, $2 nodes, $3 items, $4 failed node or -1
  python3 -c "
import json, sys
d = json.load(sys.stdin)
np, nn, items, failed = $1, $2, $3, $4
assert d['verified'] is True, d
assert sorted(p['rank'] for p in d['pus']) == list(range(np)), d['pus']
assert sum(p['items'] for p in d['pus']) == items, [p['items'] for p in d['pus']]
nodes = d['nodes']
assert len(nodes) == nn, nodes
assert sorted(r for n in nodes for r in n['ranks']) == list(range(np)), nodes
assert sum(n['items'] for n in nodes) == items, nodes
for i, n in enumerate(nodes):
    assert n['leader'] == min(n['ranks']), n
    # a node's items are its ranks' PUs' items
    mine = sum(p['items'] for p in d['pus'] if p['rank'] in n['ranks'])
    assert mine == n['items'], (i, mine, n)
    assert n['failed'] == (i == failed), n
    if i != failed: assert n['shares'] >= 2 and n['items'] > 0, n
print('ok:', [(n['ranks'], n['items'], n['planned'], n['shares'], n['failed']) for n in nodes])
" || fail=1
}
for app in "matmul --size 512" "blackscholes --size 200000"; do
  echo "== $app: 4 ranks as 2 nodes"
  # shellcheck disable=SC2086
  HLB_MPI_NODE_SIZE=2 "${MPIRUN[@]}" -np 4 "$hlb" run $app --mpi --hierarchy node --pus cpu:1 \
    --json | check 4 2 "$(echo "$app" | awk '{print $3}')" -1
done
# 3 ranks as nodes {0, 1} and {2}; rank 2's PU fails every block from its first: node 1's PUs
# are all retired, its shares go back to rank 0 and node 0 does them.
echo "== a node whose PUs all fail"
out=$(HLB_MPI_NODE_SIZE=2 "${MPIRUN[@]}" -np 3 "$hlb" run blackscholes --size 100000 --mpi \
  --hierarchy node --pus cpu:1 --inject "cpu:1@2:1:0" --json)
echo "$out" | check 3 2 100000 1
# Bad values: every rank exits non-zero, no hang.
set +e
err=$(HLB_MPI_NODE_SIZE=1.5 "${MPIRUN[@]}" -np 2 "$hlb" run matmul --size 64 --mpi \
  --hierarchy node --pus cpu:1 2>&1 >/dev/null)
rc1=$?
"${MPIRUN[@]}" -np 2 "$hlb" run matmul --size 64 --mpi --hierarchy tree --pus cpu:1 \
  > /dev/null 2>&1
rc2=$?
err3=$("${MPIRUN[@]}" -np 2 "$hlb" run matmul --size 64 --mpi --hierarchy node \
  --links /nonexistent.json --pus cpu:1 2>&1 >/dev/null)
rc3=$?
set -e
[ $rc1 -ne 0 ] && echo "$err" | grep -q "HLB_MPI_NODE_SIZE" ||
  { echo "FAIL: HLB_MPI_NODE_SIZE=1.5 accepted or not named: $err"; fail=1; }
[ $rc2 -eq 2 ] || { echo "FAIL: --hierarchy tree gave status $rc2, not 2"; fail=1; }
[ $rc3 -ne 0 ] && echo "$err3" | grep -q "/nonexistent.json" ||
  { echo "FAIL: a missing --links file accepted or not named: $err3"; fail=1; }
echo "refused: $(echo "$err" | head -1)"
echo "refused: $(echo "$err3" | head -1)"
exit $fail
